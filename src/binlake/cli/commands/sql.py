"""`binlake sql`: executable SQL for every change in the selected range, or
(`--flashback`) the SQL that undoes them, last change first. See text/sqlgen.py."""

from __future__ import annotations

from binlake.cli.status import ExitStatus
from binlake.cli.client_options import add_client_library_arguments
from binlake.errors import BinlogError
from binlake.text.filters import Verdict
from binlake.text.sqlgen import SqlWriter
from binlake.text.mysqlbinlog import TextError
from binlake.cli.commands.common import add_input_arguments, add_schema_arguments, report, seed_history
from binlake.cli.commands.selection import (add_selection_arguments, flush_when_waiting,
                                            open_inputs, open_output, progress_bar,
                                            selected_events, selection_options)


def add_arguments(parser) -> None:
    add_input_arguments(parser)
    add_selection_arguments(parser, database_help="only changes of this database")
    parser.add_argument("-B", "--flashback", action="store_true",
                        help="write the rollback of the selected range instead: DELETE for "
                             "INSERT, INSERT for DELETE, UPDATE back to the old values, in "
                             "reverse order (needs binlog_row_image=FULL)")
    add_schema_arguments(parser)
    parser.add_argument("-l", "--local-load", metavar="DIR",
                        help="directory for LOAD DATA files rebuilt from the binlog")
    add_client_library_arguments(parser)


def run(args, out, err) -> int:
    try:
        selection, text_filters = selection_options(args)
    except ValueError as exc:  # a value mariadb-binlog refuses too: its status, 1
        err.write(f"binlake sql: {exc}\n")
        return ExitStatus.ERROR
    schema, status = seed_history(args, "binlake sql", err)
    if schema is None:
        return status
    try:
        files, cleanup = open_inputs(args, err, selection)
    except ValueError as exc:
        err.write(f"binlake sql: {exc}\n")
        return ExitStatus.USAGE
    status = ExitStatus.OK
    bar = progress_bar(files, err)
    try:
        with open_output(args, out) as target:
            writer = SqlWriter(target, schema=schema, flashback=args.flashback,
                               rewrite_db=text_filters["rewrite_db"],
                               database=text_filters["database"], table=text_filters["table"],
                               local_load=args.local_load)
            if not args.flashback:
                flush_when_waiting(files, target)
            writer.begin()
            try:
                _walk(args, files, selection, writer, bar, err)
            except BinlogError as exc:
                report(exc, err)
                status = ExitStatus.ERROR
            except TextError as exc:
                err.write(f"binlake sql: {exc}\n")
                status = ExitStatus.ERROR
            writer.finish()
    finally:
        bar.close()
        cleanup()
    for warning in writer.warnings + writer.schema.warnings:
        err.write(f"binlake sql: warning: {warning}\n")
    for problem in writer.errors:
        err.write(f"binlake sql: {problem}\n")
    if writer.errors:
        status = ExitStatus.ERROR
    if selection.error:
        err.write(f"binlake sql: {selection.error}\n")
        status = ExitStatus.ERROR
    return status


def _walk(args, files, selection, writer: SqlWriter, bar, err) -> None:
    for _, event, verdict in selected_events(args, files, selection, err, prefix="binlake sql",
                                             schema=writer.schema):
        bar.update(event)
        if verdict is Verdict.SKIP:
            writer.note(event)
            continue
        writer.event(event)
