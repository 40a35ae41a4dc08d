"""`binlake dump`: every event as mysqlbinlog text (default) or JSON lines.

The text is what `mariadb-binlog` prints for the same options (see text/mysqlbinlog.py
and docs/mysqlbinlog-differences.md); the selection options have the
meanings of mysqlbinlog/mariadb-binlog (see text/filters.py).
"""

from __future__ import annotations

import copy
import os

from binlake import core
from binlake.cli.status import ExitStatus
from binlake.cli.client_options import add_client_library_arguments, client_choice, client_integer
from binlake.constants import EventType, LogEventFlag
from binlake.errors import BinlogError
from binlake.read.events import MariadbGtidEvent, MariadbGtidListEvent
from binlake.text.filters import RowFormatCheck, SelectionOptions, Verdict
from binlake.text.flashback import FlashbackPrinter
from binlake.text.gtid_state import GtidCheck, GtidStateValidator, range_error
from binlake.read.gzipped import is_gzip
from binlake.text.jsonable import event_json
from binlake.text.mysqlbinlog import TextError, TextOptions, TextPrinter
from binlake.cli.commands.common import add_input_arguments, add_schema_arguments, reader_options, report, seed_history
from binlake.cli.commands.selection import (add_selection_arguments, flush_when_waiting,
                                            followed_server, open_inputs, open_output,
                                            progress_bar, selected_events, selection_options,
                                            write_native)


#: MySQL's --server-id-bits range
MIN_SERVER_ID_BITS, MAX_SERVER_ID_BITS = 7, 32


def add_arguments(parser) -> None:
    add_input_arguments(parser)
    parser.add_argument("--raw", action="store_true",
                        help="with -R: write the server's binlogs as they are, each under its "
                             "server name (after the --result-file prefix); run again to resume "
                             "after the last complete event")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text like mysqlbinlog (default) or one JSON object per event")
    add_selection_arguments(parser)
    add_schema_arguments(parser)
    text = parser.add_argument_group("text output (as mysqlbinlog)")
    text.add_argument("--base64-output", default="auto", metavar="{auto,never,decode-rows}",
                      type=client_choice("base64-output", ("auto", "never", "decode-rows")),
                      help="auto: BINLOG '...' statements for row events (default); decode-rows: "
                           "none (with -v, the rows as commented pseudo-SQL); never: none")
    text.add_argument("-v", "--verbose", action="count", default=0,
                      help="rows as ### pseudo-SQL; twice: with column types")
    text.add_argument("-s", "--short-form", action="store_true",
                      help="statements only: no positions, headers, row events or row counts")
    text.add_argument("-H", "--hexdump", action="store_true",
                      help="a hex dump of each event in comments")
    text.add_argument("--skip-annotate-row-events", action="store_true",
                      help="leave out the statements that MariaDB logs before row events")
    text.add_argument("--print-row-count", action="store_true", default=None,
                      help="'# Number of rows' lines (default, but with -s; "
                           "--skip-print-row-count: none)")
    text.add_argument("--print-row-event-positions", action="store_true", default=None,
                      help="'# at N' lines before events (default, but with --flashback; "
                           "--skip-print-row-event-positions: none, as mariadb-binlog)")
    text.add_argument("-B", "--flashback", action="store_true",
                      help="MariaDB's: the text that undoes the range when replayed, as "
                           "mariadb-binlog -B prints it: rows events reversed, transactions "
                           "last first (statements other than BEGIN/COMMIT are left out)")
    text.add_argument("--print-table-metadata", action="store_true",
                      help="after each table map, its columns and primary key as comments "
                           "(what its metadata logs: names, charsets and keys with "
                           "binlog_row_metadata=FULL)")
    text.add_argument("-i", "--idempotent", action="store_true",
                      help="MySQL's: the output replays with RBR_EXEC_MODE=IDEMPOTENT (rows "
                           "already there or missing are not errors)")
    text.add_argument("--require-row-format", action="store_true",
                      help="MySQL's: stop at an event that is not row-based (LOAD DATA, "
                           "Intvar/Rand, temporary tables, statements inside transactions); "
                           "the output replays with REQUIRE_ROW_FORMAT=1")
    text.add_argument("--gtid-strict-mode", action="store_true", default=True,
                      help="MariaDB's (default on): the GTIDs shown must grow in each domain, "
                           "start positions must cover the binlogs' first Gtid list, a start "
                           "must not pass its stop; --skip-gtid-strict-mode: warnings only "
                           "with -vvv")
    text.add_argument("--skip-gtids", action="store_true",
                      help="MySQL's: leave out GTID and Previous-GTIDs events, so the "
                           "transactions replay as new ones")
    text.add_argument("--server-id-bits", type=client_integer("server-id-bits"), default=32,
                      metavar="N", help="MySQL's: only the low N bits (7-32) of server ids "
                                        "count, in headers and --server-id (default 32)")
    text.add_argument("-F", "--force-if-open", action="store_true", default=True,
                      help="print a binlog the server has not closed (default; "
                           "--skip-force-if-open: stop after its format description, as "
                           "mariadb-binlog)")
    text.add_argument("-D", "--disable-log-bin", action="store_true",
                      help="replaying the output does not write the binlog (SQL_LOG_BIN=0)")
    text.add_argument("--set-charset", metavar="CHARSET", help="add SET NAMES CHARSET")
    text.add_argument("--mysql-events", choices=("mysql", "ignorable"), default="mysql",
                      help="events only MySQL writes (GTIDs, Previous-GTIDs, Rows_query): as "
                           "MySQL's mysqlbinlog prints them (default), or as mariadb-binlog does")
    text.add_argument("-l", "--local-load", metavar="DIR",
                      help="directory for the LOAD DATA files rebuilt from the binlog "
                           "(default: the temporary directory)")
    add_client_library_arguments(parser)


def run(args, out, err) -> int:
    try:
        selection, text_filters = selection_options(args)
    except ValueError as exc:  # a value mariadb-binlog refuses too: its status, 1, and form
        err.write(f"ERROR: {exc}\n")
        return ExitStatus.ERROR
    if args.gtid_strict_mode:
        invalid = range_error(selection.options.start_gtids, selection.options.stop_gtids)
        if invalid:
            err.write(f"ERROR: {invalid}\n")
            return ExitStatus.ERROR
    bits = min(max(args.server_id_bits, MIN_SERVER_ID_BITS), MAX_SERVER_ID_BITS)
    if bits != args.server_id_bits:  # as my_getopt adjusts a value out of range
        err.write(f"binlake dump: [Warning] option 'server-id-bits': unsigned value "
                  f"{args.server_id_bits} adjusted to {bits}.\n")
    selection.options.server_id_mask = args.server_id_mask = (1 << bits) - 1
    if args.raw:
        if args.flashback:
            err.write("ERROR: The --raw mode is not allowed with --flashback mode\n")
            return ExitStatus.ERROR
        if not args.remote:
            err.write("binlake dump: --raw reads a live server: it needs -R\n")
            return ExitStatus.ERROR
        from binlake.cli.commands.backup import run_raw
        return run_raw(args, selection, text_filters, err)
    # One schema history across the files: their DDL names the columns.
    schema, status = seed_history(args, "binlake dump", err)
    if schema is None:
        return status
    # Text following a server for ever goes on after a failover (`_across_failovers`).
    following = None
    try:
        if args.remote and args.stop_never and args.format != "json" and not args.flashback:
            following = followed_server(args, err, selection, schema)
            files, cleanup = following.source, following.close
        else:
            files, cleanup = open_inputs(args, err, selection)
    except ValueError as exc:
        err.write(f"binlake dump: {exc}\n")
        return ExitStatus.USAGE
    try:
        with open_output(args, out) as target:
            if args.format == "json":
                flush_when_waiting(files, target)
                return _dump_json(args, files, selection, target, err, schema)
            return _dump_text(args, files, selection, text_filters, target, err, schema,
                              following)
    finally:
        cleanup()


def _dump_text(args, files, selection, text_filters, out, err, schema, following=None) -> int:
    options = TextOptions(base64_output=args.base64_output, verbose=args.verbose,
                          short_form=args.short_form, hexdump=args.hexdump,
                          print_row_count=args.print_row_count,
                          print_event_positions=(not args.flashback
                                                 if args.print_row_event_positions is None
                                                 else args.print_row_event_positions),
                          print_table_metadata=args.print_table_metadata,
                          idempotent=args.idempotent,
                          require_row_format=args.require_row_format,
                          skip_gtids=args.skip_gtids, server_id_mask=args.server_id_mask,
                          skip_annotate_row_events=args.skip_annotate_row_events,
                          disable_log_bin=args.disable_log_bin, set_charset=args.set_charset,
                          local_load=args.local_load,
                          # mariadb-binlog's rendering: MySQL's GTID_NEXT lines would not replay
                          # in reverse
                          mysql_events="ignorable" if args.flashback else args.mysql_events,
                          gtid_filtering=selection.options.gtid_filtering, **text_filters)
    printer = (FlashbackPrinter if args.flashback else TextPrinter)(out, options)
    if not args.flashback:  # (a flashback's text is held until its end anyway)
        flush_when_waiting(files, printer, out)
    printer.begin()
    status = ExitStatus.OK
    start = selection.options.start_position
    bar = progress_bar(files, err)
    #: a file --skip-force-if-open stopped at, or the GTID checks ending the
    #: run: nothing more is printed, not even the closing lines
    stopped_hard = []
    row_format = RowFormatCheck() if args.require_row_format else None
    check = printer.gtid_check = _gtid_check(args, selection.options)
    o = selection.options
    gtid_windows = bool(o.start_gtids or o.stop_gtids or o.do_domain_ids or o.ignore_domain_ids)
    try:
        def on_file(path):
            if stopped_hard or check.failed:
                return
            printer.begin_file(path) if path is not None else printer.end_file()
        # (the generator is not kept in a name: a `break` frees it at once,
        # its file's closing lines written before the output's)
        for index, event, verdict in (
                _events_to_print(args, files, selection, err, printer, on_file, schema, bar)
                if following is None else
                _across_failovers(args, following, selection, err, printer, on_file, bar, out)):
            bar.update(event)
            before_start = index == 0 and start and event.header.pos < start
            if row_format is not None and not before_start \
                    and not printer.inside_payload(event) and not row_format.allows(event):
                printer.flush()  # (events inside a payload are not checked, as by mysqlbinlog)
                err.write(f"ERROR: {row_format.MESSAGE}\n")
                status = ExitStatus.ERROR
                break
            if not before_start and not printer.replaying(event) \
                    and _gtid_check_fails(check, event, verdict, gtid_windows):
                break  # (mariadb-binlog's GTID checks: the offending event is not shown)
            if verdict is Verdict.SHOW and index == 0 and start is not None \
                    and event.header.pos < start and args.base64_output == "decode-rows":
                verdict = Verdict.SKIP  # mysqlbinlog reads that format description silently
            if verdict is Verdict.SKIP:
                printer.note(event)
                continue
            printer.event(event)
            printer.end_payload_if_done(event)
            if not args.force_if_open and _left_open(event):
                stopped_hard.append(event.header.file)
                printer.flush()
                err.write(f"ERROR: Attempting to dump binlog '{event.header.file}', which was "
                          "not closed properly. Most probably, mariadbd is still writing it, or "
                          "it crashed. Rerun with --force-if-open to ignore this problem.\n")
                return ExitStatus.ERROR  # mariadb-binlog's words, and no footer
    except BinlogError as exc:
        printer.flush()
        report(exc, err)
        status = ExitStatus.ERROR
    except TextError as exc:
        printer.flush()
        err.write(f"ERROR: {exc}\n")
        status = ExitStatus.ERROR
    finally:
        printer.flush()
        bar.close()
    if selection.error:
        err.write(f"binlake dump: {selection.error}\n")
        status = ExitStatus.ERROR
    for problem in printer.errors:
        err.write(f"binlake: warning: {problem}\n")
    messages, failing = check.messages()
    unreached = (_unreached_stops(args, files, selection)
                 if status == ExitStatus.OK or check.failed else [])
    printer.flush()
    if check.failed:  # the run ended at a GTID check: no closing lines
        err.write("".join(line + "\n" for line in messages + unreached))
        return ExitStatus.ERROR
    err.write("".join(line + "\n" for line in unreached))
    if args.flashback and status != ExitStatus.OK:
        printer.abandon()  # as mariadb-binlog: the held text is not written after an error
        return status
    printer.end()
    err.write("".join(line + "\n" for line in messages))
    return ExitStatus.ERROR if failing else status


def _unreached_stops(args, files, selection) -> list[str]:
    """mariadb-binlog's warnings for the stop positions the input ended before."""
    last = files[-1] if isinstance(files, list) and files else None
    size = os.path.getsize(last) if last and os.path.isfile(last) else None
    return [f"WARNING: {line}"
            for line in selection.unreached_stops(args.stop_datetime, last, size)]


def _gtid_check(args, o: SelectionOptions) -> GtidCheck:
    """mariadb-binlog's GTID state checks for this command line."""
    numeric_start = o.start_position is not None and o.start_position > 4
    return GtidCheck(GtidStateValidator(o.start_gtids, o.stop_gtids, strict=args.gtid_strict_mode,
                                        verbose=args.verbose, numeric_start=numeric_start))


def _gtid_check_fails(check: GtidCheck, event, verdict: Verdict, gtid_windows: bool) -> bool:
    """Feed the checks a Gtid list, or a GTID whose transaction is shown (any,
    without GTID windows or domain filters: mariadb-binlog's "active" group)."""
    if isinstance(event, MariadbGtidListEvent):
        return check.gtid_list(event.gtids, event.header.timestamp)
    if isinstance(event, MariadbGtidEvent) and (verdict is Verdict.SHOW or not gtid_windows):
        return check.gtid(event.domain_id, event.header.server_id, event.seq_no)
    return False


def _left_open(event) -> bool:
    """A format description whose file the server had not closed."""
    header = event.header
    return (header.type_code == EventType.FORMAT_DESCRIPTION_EVENT
            and bool(header.flags & LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F))


def _events_to_print(args, files, selection, err, printer, on_file, schema, bar):
    """`selected_events` for the Python printer; with no selection, default
    reading options and printing options it supports, each file is first
    offered to the native printer, which prints it whole or leaves it here
    (the progress `bar` told of it once printed)."""
    o = selection.options
    start, stop = o.start_position, o.stop_position
    live = hasattr(files, "on_wait")
    plain = (NATIVE_PRINTER and (isinstance(files, list) or live) and args.force_if_open
             and reader_options(args) == {"force": False, "verify_checksums": True}
             and SelectionOptions(start_position=start, stop_position=stop) == o
             # positions apply to the first and last file: one file keeps that simple
             and (live or len(files) == 1 or (start is None and stop is None)))
    if not plain or not printer.native_ready():
        yield from selected_events(args, files, selection, err, on_file=on_file, schema=schema)
        return
    if live:
        yield from _live_events_to_print(args, files, selection, err, printer, on_file, schema)
        return
    from binlake.read import reader
    for path in files:
        if printer.native_ready() and os.path.isfile(path) \
                and printer.print_file_natively(path, reader.LARGE_EVENT_BYTES, start, stop):
            bar.file_done(path)
            if printer.gtid_check is not None and printer.gtid_check.failed:
                return
            continue
        yield from selected_events(args, [path], selection, err, on_file=on_file, schema=schema)


def _across_failovers(args, stream, selection, err, printer, on_file, bar, out):
    """`_events_to_print` of a followed server (-R --stop-never) that goes
    on after a failover behind its address, as the lake's follower does: by
    the GTID state after the last whole transaction printed
    (`LiveStream.failed_over`). A transaction the old server's stream cut
    off is closed by a ROLLBACK, as mysqlbinlog closes its output, and comes
    again whole from the new server."""
    from binlake.live.source import ServerChanged
    while True:
        try:
            yield from _events_to_print(args, stream.source, selection, err, printer, on_file,
                                        stream.reader_options["schema"], bar)
            return
        except ServerChanged as changed:
            cut = stream.source.commits.cut
            if not stream.failed_over(changed):
                raise
            if cut:
                printer.roll_back_cut()
            if ":" not in stream.resume_token.gtid:    # (MariaDB's checks)
                printer.gtid_check.validator.went_on_from(stream.resume_token.gtid)
            selection.options.start_position = None    # (the new server starts by GTID)
            flush_when_waiting(stream.source, printer, out)


def _live_events_to_print(args, source, selection, err, printer, on_file, schema):
    """A live server's binlogs (-R) printed by the native printer as they
    arrive, one pass each (`print_stream_natively`); at an event it leaves
    to the Python printer, the file is read again from its start (the live
    file keeps what it gave), the events before printed silently for their
    state, and the Python printer prints the rest of it."""
    start, stop = selection.options.start_position, selection.options.stop_position
    for index, live_file in enumerate(source):
        if not printer.native_ready():   # (an Annotate_rows carried over by the Python printer)
            stopped = yield from selected_events(args, [live_file], selection, err,
                                                 on_file=on_file, schema=schema, first_index=index)
        else:
            live_file.keep_all()
            how, pos = printer.print_stream_natively(live_file, start if index == 0 else None, stop)
            selection.read_natively(live_file.name, pos)
            if how != "refused":
                live_file.close()
                if how == "printed":
                    continue
                return                   # the stop position, or the GTID checks ended the run
            live_file.replay_kept()
            printer.take_over(pos)
            stopped = yield from selected_events(args, [live_file], selection, err,
                                                 on_file=on_file, schema=schema, first_index=index)
        if stopped:
            return


#: Offer files to the native printer (tests turn it off to compare the two).
NATIVE_PRINTER = True


def _dump_json(args, files, selection, out, err, schema) -> int:
    """Every event as a JSON line: each plain file (no selection, default
    reading options) by the native core, which stops where it cannot write
    an event as `event_json` does; the reference writes the rest of that
    file (and every file that is not plain), so its output and errors stand."""
    plain = (NATIVE_PRINTER and isinstance(files, list) and core.native() is not None
             and reader_options(args) == {"force": False, "verify_checksums": True}
             and selection.options == SelectionOptions())
    try:
        if not plain:
            _json_events(args, files, selection, out, err, schema)
            return ExitStatus.OK
        for path in files:
            before = copy.deepcopy(schema)
            written = _json_natively(path, out, schema) \
                if os.path.isfile(path) and not is_gzip(path) else 0
            if written is not None:
                # the reference takes over at the first event not written, its
                # schema history as it was when the file began
                schema = before
                _json_events(args, [path], selection, out, err, schema, skip=written)
    except BinlogError as exc:
        out.flush()
        report(exc, err)
        return ExitStatus.ERROR
    return ExitStatus.OK


def _json_natively(path: str, out, schema) -> int | None:
    """`path`'s lines from the native core; None when it wrote them all, else
    how many events it wrote before the one it left to the reference."""
    from binlake.read import reader
    from binlake.charsets import collation_codecs
    from binlake.text.jsonable import EventDescriber
    from binlake.read.rows import LazyRowData
    check = EventDescriber(path, schema=schema, verify_checksums=True, force=False)
    lines = core.native().JsonLinesReader(path, path, check, True, collation_codecs(),
                                          reader.LARGE_EVENT_BYTES, LazyRowData.WINDOW)
    write_native(out, lines)
    return None if lines.refused is None else lines.events


def _json_events(args, files, selection, out, err, schema, skip: int = 0) -> None:
    """The reference's lines, after the first `skip` events."""
    for _, event, verdict in selected_events(args, files, selection, err, schema=schema):
        if skip:
            skip -= 1
        elif verdict is Verdict.SHOW:
            out.write(event_json(event) + "\n")
