"""The `binlake` command: argument parsing and dispatch, nothing else.

Each subcommand lives in `binlake.cli.commands.<name>` with `add_arguments(parser)`
and `run(args, out, err) -> ExitStatus`. `main(argv)` is callable from tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import signal
import sys
import threading

from binlake.cli.client_options import ClientArgumentParser, UsageError, add_negations, client_argv
from binlake.cli.status import ExitStatus, os_error_text


COMMANDS = {
    "dump": "Print events: mysqlbinlog-style text (default) or JSON lines",
    "info": "Summarise files: format, server, checksum, times, event counts, clean close",
    "events": "List events like SHOW BINLOG EVENTS (table, JSON or CSV)",
    "sql": "Write executable SQL for every change, or its rollback (--flashback)",
    "schema": "Print the schema history: every table's columns after each DDL statement",
    "pipeline": "Run the Spark pipeline: events, changes and rebuilt tables as Parquet",
    "maintain": "Compact and vacuum the Delta tables of a pipeline's output",
    "status": "Show where a lake's follower stands: lag, rows per table, times, counts",
}


CLIENT_SYNTAX_HELP = (
    "Options take the mysql client programs' syntax: --opt=value or --opt value; booleans "
    "also as --opt=0/1/ON/OFF/TRUE/FALSE, --skip-opt, --disable-opt, --enable-opt; "
    "--loose-opt (ignored when unknown); _ for -; any unambiguous prefix of a long option. "
    "dump and sql read the option files as mysqlbinlog does; first on the line: "
    "--no-defaults, --defaults-file=FILE, --defaults-extra-file=FILE, "
    "--defaults-group-suffix=SUFFIX, --print-defaults, --login-path=NAME and "
    "--no-login-paths (MySQL's ~/.mylogin.cnf).")


def _load(name: str):
    return importlib.import_module(f"binlake.cli.commands.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = ClientArgumentParser(prog="binlake",
                                  description="Read MySQL and MariaDB binary logs.")
    from binlake import __version__, core
    version = f"binlake {__version__} ({core.name()})"
    parser.add_argument("--version", action="version", version=version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        try:
            module = _load(name)
        except ModuleNotFoundError as exc:
            if exc.name != f"binlake.cli.commands.{name}":
                raise
            continue
        # -h is the host, as in the mysql client programs; help is --help or -?
        command = sub.add_parser(name, help=help_text, description=help_text, add_help=False,
                                 epilog=CLIENT_SYNTAX_HELP)
        command.add_argument("-?", "--help", action="help", help="show this help and exit")
        command.add_argument("-V", "--version", action="version", version=version,
                             help="show binlake's version and exit")
        module.add_arguments(command)
        add_negations(command)
        command.set_defaults(run=module.run, command_name=name)
    return parser


#: The subcommands that read the option files' groups of mysqlbinlog and mariadb-binlog.
OPTION_FILE_COMMANDS = ("dump", "sql")


def client_syntax(parser: argparse.ArgumentParser, argv: list, err, out=None):
    """`argv` with the subcommand's options rewritten from the mysql client
    programs' syntax into argparse's (`binlake.cli.client_options`), after the
    options of its option files (`binlake.connection.option_files`), and the files
    read: (argv, OptionFiles). None when --print-defaults said all (on `out`)."""
    from binlake.connection.option_files import OptionFiles
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for index, token in enumerate(argv):
        if token in commands.choices:
            try:
                rewritten = command_argv(token, argv[index + 1:], commands.choices[token], err,
                                         out)
            except UsageError as exc:
                exc.prog = f"binlake {token}"
                raise
            if rewritten is None:
                return None
            return argv[:index + 1] + rewritten[0], rewritten[1]
        if not token.startswith("-"):
            break
    return argv, OptionFiles()


def command_argv(command: str, argv: list, parser, err, out):
    """A subcommand's words after its option files' (see `client_syntax`)."""
    from binlake.connection.option_files import (BINLOG_TOOL_GROUPS, CLIENT_GROUPS, OptionFileError,
                               OptionFiles, as_arguments, split_defaults_options)
    if command not in OPTION_FILE_COMMANDS:
        return client_argv(argv, parser, err), OptionFiles()
    files, print_defaults, argv = split_defaults_options(argv)
    files = dataclasses.replace(files, program_groups=BINLOG_TOOL_GROUPS)
    try:
        from_files = as_arguments(files.options(CLIENT_GROUPS + BINLOG_TOOL_GROUPS))
    except OptionFileError as exc:
        raise UsageError(str(exc), status=ExitStatus.ERROR) from None
    if print_defaults:
        # each argument followed by a blank, as the client programs print them
        (out or sys.stdout).write("binlake would have been started with the following "
                                  f"arguments:\n{''.join(a + ' ' for a in from_files)}\n")
        return None
    from binlake.cli.commands.common import CONNECTION_DESTS
    from_files = client_argv(from_files, parser, err, from_file=True, leave=CONNECTION_DESTS)
    return from_files + client_argv(argv, parser, err), files


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken as Ctrl-C is: what a command has received is written
    (a backup's last events, a dump's text) before it ends."""


def _stop_on_sigterm():
    """SIGTERM raises Terminated in the main thread; returns the handler it
    replaced (None where signals cannot be handled here)."""
    def stop(signum, frame):
        raise Terminated()
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, stop)


def _silence_stdout() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor to replace
        pass


def main(argv=None, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    argv_given = argv
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        syntax = client_syntax(parser, argv, err, out)
        if syntax is None:
            return ExitStatus.OK  # --print-defaults
        argv, option_files = syntax
        args = parser.parse_args(argv)
    except UsageError as exc:  # one line, my_getopt's status
        err.write(f"{exc.prog}: {exc}\n")
        return exc.status
    args.option_files = option_files
    terminated = _stop_on_sigterm() if argv_given is None else None
    try:
        return int(args.run(args, out, err))
    except Terminated:
        return ExitStatus.TERMINATED
    except KeyboardInterrupt:
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:
        if out is sys.stdout:  # nothing more to say to it, not even at exit
            _silence_stdout()
        return ExitStatus.BROKEN_PIPE
    except OSError as exc:  # a full disk, a missing directory: one line, as the C tools say it
        err.write(f"binlake: {os_error_text(exc)}\n")
        return ExitStatus.ERROR
    finally:
        if terminated is not None:
            signal.signal(signal.SIGTERM, terminated)
