"""`binlake info`: what is in each file, at a glance."""

from __future__ import annotations

import datetime as dt
import json

from binlake.cli.status import ExitStatus
from binlake.errors import BinlogError
from binlake.read.reader import BinlogReader
from binlake.cli.commands.common import add_input_arguments, reader_options, report


def add_arguments(parser) -> None:
    add_input_arguments(parser, remote=False)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _time(ts):
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _summary(info, error) -> dict:
    alg = info.checksum_alg
    return {
        "file": info.path,
        "binlog_version": info.binlog_version,
        "server_version": info.server_version,
        "header_length": info.header_length,
        "checksum": ("none (server predates checksums)" if alg is None else
                     {0: "OFF", 1: "CRC32"}.get(alg, f"unknown ({alg})")),
        "first_event_time": _time(info.first_timestamp),
        "last_event_time": _time(info.last_timestamp),
        "events": sum(info.counts.values()),
        "event_counts": dict(info.counts),
        "start_event": not info.no_start_event,
        "closed_cleanly": info.closed_cleanly and error is None,
        "in_use": info.in_use,
        "encrypted": info.encrypted,
        "error": str(error) if error else None,
    }


def run(args, out, err) -> int:
    status = ExitStatus.OK
    if not args.files:
        err.write("binlake info: no FILE given\n")
        return ExitStatus.USAGE
    for path in args.files:
        reader = BinlogReader([path], **reader_options(args))
        error = None
        try:
            for _ in reader:
                pass
        except BinlogError as exc:
            error = exc
            status = ExitStatus.ERROR
        summary = _summary(reader.files[-1], error) if reader.files else {"file": path}
        if reader.stats.undecoded:
            summary["undecoded"] = dict(reader.stats.undecoded)
        if args.format == "json":
            out.write(json.dumps(summary) + "\n")
        else:
            out.write(f"{path}\n")
            for key, value in summary.items():
                if key in ("file", "error"):
                    continue
                if key == "event_counts":
                    value = ", ".join(f"{k}×{v}" for k, v in value.items())
                out.write(f"  {key:<18} {value}\n")
        if error:
            report(error, err)
    return status
