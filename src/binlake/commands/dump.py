"""`binlake dump`: every event, as JSON lines (--format json) or text."""

from __future__ import annotations

import json

from ..cli import ExitStatus
from ..errors import BinlogError
from ..jsonable import event_to_dict
from ..reader import BinlogReader
from .common import add_input_arguments, reader_options, report


def add_arguments(parser) -> None:
    add_input_arguments(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text like mysqlbinlog (default) or one JSON object per event")
    parser.add_argument("--start-position", type=int, default=None)


def run(args, out, err) -> int:
    reader = BinlogReader(args.files, start_position=None, **reader_options(args))
    try:
        for event in reader:
            if args.start_position is not None and event.header.pos < args.start_position:
                continue
            out.write(json.dumps(event_to_dict(event), ensure_ascii=False) + "\n")
    except BinlogError as exc:
        out.flush()
        report(exc, err)
        return ExitStatus.ERROR
    return ExitStatus.OK
