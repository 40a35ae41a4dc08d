"""The `binlake` command: argument parsing and dispatch, nothing else.

Each subcommand lives in `binlake.commands.<name>` with `add_arguments(parser)`
and `run(args, out, err) -> ExitStatus`. `main(argv)` is callable from tests.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit codes of `binlake` (documented in the README)."""

    OK = 0
    ERROR = 1          #: bad input: the message names file, offset and reason
    USAGE = 2          #: bad command line (argparse's own code)
    INTERRUPTED = 130


COMMANDS = {
    "dump": "Print events: mysqlbinlog-style text (default) or JSON lines",
    "info": "Summarise files: format, server, checksum, times, event counts, clean close",
    "events": "List events like SHOW BINLOG EVENTS (table, JSON or CSV)",
    "sql": "Write executable SQL for every change, or its rollback (--flashback)",
    "schema": "Print the schema history: every table's columns after each DDL statement",
    "pipeline": "Run the Spark pipeline: events, changes and rebuilt tables as Parquet",
}


def _load(name: str):
    return importlib.import_module(f"binlake.commands.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="binlake", description="Read MySQL and MariaDB binary logs.")
    from . import __version__, core
    parser.add_argument("--version", action="version",
                        version=f"binlake {__version__} ({core.name()})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        try:
            module = _load(name)
        except ModuleNotFoundError as exc:
            if exc.name != f"binlake.commands.{name}":
                raise
            continue
        # -h is the host, as in the mysql client programs; help is --help or -?
        command = sub.add_parser(name, help=help_text, description=help_text, add_help=False)
        command.add_argument("-?", "--help", action="help", help="show this help and exit")
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def client_password_syntax(argv: list) -> list:
    """The mysql client's -p: `-pSECRET` is the password, `-p` alone asks for
    it (an optional value would otherwise swallow the binlog name after it)."""
    result = []
    for index, token in enumerate(argv):
        if token == "--":
            return result + argv[index:]
        if token == "-p":
            result.append("--ask-pass")
        elif token.startswith("-p") and not token.startswith("--"):
            result.append("--password=" + token[2:])
        else:
            result.append(token)
    return result


def os_error_text(exc: OSError) -> str:
    """`reason: file` as the C tools say it (pyarrow's errors carry the
    errno in their text only: "[Errno 28] No space left on device")."""
    reason = exc.strerror or re.sub(r"^\[Errno \d+\] ", "", str(exc))
    return f"{reason}: {exc.filename}" if exc.filename else reason


def main(argv=None, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    argv = client_password_syntax(sys.argv[1:] if argv is None else list(argv))
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args, out, err))
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:
        return ExitStatus.OK
    except OSError as exc:  # a full disk, a missing directory: one line, as the C tools say it
        err.write(f"binlake: {os_error_text(exc)}\n")
        return ExitStatus.ERROR
