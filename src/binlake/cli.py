"""The `binlake` command: argument parsing and dispatch, nothing else.

Each subcommand lives in `binlake.commands.<name>` with `add_arguments(parser)`
and `run(args, out, err) -> ExitStatus`. `main(argv)` is callable from tests.
"""

from __future__ import annotations

import argparse
import importlib
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
        command = sub.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv=None, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args, out, err))
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:
        return ExitStatus.OK
