"""`binlake events`: the listing of SHOW BINLOG EVENTS, from files.

Columns Log_name, Pos, Event_type, Server_id, End_log_pos, Info; Info is
what the server's `pack_info()` writes for each event type (MariaDB's
wording, MySQL's for MySQL-only events). The table is streamed: column
widths are fixed from what the files can hold, not measured from the rows.
"""

from __future__ import annotations

import csv
import json
import os

from binlake import core
from binlake.cli.status import ExitStatus
from binlake.collation_names import charset_name, collation_name
from binlake.constants import EVENT_TYPE_STR, STMT_END_F, EventType as E
from binlake.errors import BinlogError
from binlake.read.events import (BinlogCheckpointEvent, Event, FileBlockEvent, FormatDescriptionEvent,
                      GtidEvent, IncidentEvent, IntvarEvent, LoadEvent, MariadbGtidEvent,
                      MariadbGtidListEvent, PreviousGtidsEvent, QueryEvent, RandEvent,
                      RotateEvent, RowsEvent, RowsQueryEvent, StartEventV3, TableMapEvent,
                      TransactionPayloadEvent, UnknownEvent, UserVarEvent, XaPrepareEvent,
                      XidEvent)
from binlake.text.filters import SelectionOptions, Verdict
from binlake.read.gzipped import is_gzip
from binlake.read.reader import EventChecker
from binlake.cli.commands.common import add_input_arguments, reader_options, report
from binlake.cli.commands.selection import (add_selection_arguments, flush_when_waiting,
                                            open_inputs, open_output, progress_bar,
                                            selected_events, selection_options, write_native)

COLUMNS = ("Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info")


def add_arguments(parser) -> None:
    add_input_arguments(parser)
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table",
                        help="an aligned table (default), JSON lines or CSV with a header row")
    parser.add_argument("--limit", type=int, default=None, metavar="N",
                        help="at most N events (like SHOW BINLOG EVENTS ... LIMIT N)")
    add_selection_arguments(parser)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _xid(format_id, gtrid: bytes, bqual: bytes) -> str:
    return f"X'{gtrid.hex()}',X'{bqual.hex()}',{format_id}"


def _user_var(event: UserVarEvent) -> str:
    name = "@" + _quote(event.name)
    if event.is_null:
        return name + "=NULL"
    if event.value_type == 1:
        return name + "=" + "%.14g" % event.value
    if event.value_type in (2, 4):
        return name + "=" + (format(event.value, "f") if event.value_type == 4 else str(event.value))
    cs, coll = charset_name(event.charset), collation_name(event.charset)
    return f"{name}=_{cs or '?'} X'{bytes(event.value).hex().upper()}' COLLATE {coll or '?'}"


def event_info(event: Event) -> str:
    """The Info column of SHOW BINLOG EVENTS for one event."""
    if isinstance(event, (FormatDescriptionEvent, StartEventV3)):
        return f"Server ver: {event.server_version}, Binlog ver: {event.binlog_version}"
    if isinstance(event, QueryEvent):
        prefix = ""
        if event.database and not event.header.flags & 0x8:  # LOG_EVENT_SUPPRESS_USE_F
            prefix = f"use {_quote(event.database)}; "
        info = prefix + event.query
        if event.header.type_code == E.EXECUTE_LOAD_QUERY_EVENT:
            info += f" ;file_id={event.file_id}"
        return info
    if isinstance(event, MariadbGtidEvent):
        gtid = f"{event.domain_id}-{event.header.server_id}-{event.seq_no}"
        if event.flags2 & 64:  # FL_PREPARED_XA
            text = f"XA START {_xid(event.xa_format_id, event.xa_gtrid or b'', event.xa_bqual or b'')} GTID {gtid}"
        elif event.flags2 & 1:  # FL_STANDALONE
            text = f"GTID {gtid}"
        else:
            text = f"BEGIN GTID {gtid}"
        if event.flags2 & 2:  # FL_GROUP_COMMIT_ID
            text += f" cid={event.commit_id}"
        return text
    if isinstance(event, MariadbGtidListEvent):
        return "[" + ",".join(f"{d}-{s}-{n}" for d, s, n in event.gtids) + "]"
    if isinstance(event, BinlogCheckpointEvent):
        return event.binlog_file
    if isinstance(event, RowsQueryEvent):
        return event.query if event.header.type_code == E.ANNOTATE_ROWS_EVENT else "# " + event.query
    if isinstance(event, TableMapEvent):
        return f"table_id: {event.table_id} ({event.database}.{event.table})"
    if isinstance(event, RowsEvent):
        return f"table_id: {event.table_id}" + (" flags: STMT_END_F" if event.flags & STMT_END_F else "")
    if isinstance(event, XidEvent):
        return f"COMMIT /* xid={event.xid} */"
    if isinstance(event, XaPrepareEvent):
        return ("XA COMMIT " if event.one_phase else "XA PREPARE ") + \
            _xid(event.format_id, event.gtrid, event.bqual) + (" ONE PHASE" if event.one_phase else "")
    if isinstance(event, RandEvent):
        return f"rand_seed1={event.seed1},rand_seed2={event.seed2}"
    if isinstance(event, IntvarEvent):
        return f"{event.kind_name}={event.value}"
    if isinstance(event, UserVarEvent):
        return _user_var(event)
    if isinstance(event, RotateEvent):
        return f"{event.next_file};pos={event.position}"
    if isinstance(event, GtidEvent):
        return f"SET @@SESSION.GTID_NEXT= '{event.gtid or 'ANONYMOUS'}'"
    if isinstance(event, PreviousGtidsEvent):
        return event.gtid_set
    if isinstance(event, TransactionPayloadEvent):
        return (f"compression='{event.compression_name}', "
                f"decompressed_size={event.uncompressed_size} bytes")
    if isinstance(event, FileBlockEvent):
        if event.data is not None:
            return f";file_id={event.file_id};block_len={len(event.data)}"
        return f";file_id={event.file_id}"
    if isinstance(event, LoadEvent):
        return f"LOAD DATA INFILE '{event.file_name}' INTO TABLE {_quote(event.table)}"
    if isinstance(event, IncidentEvent):
        return f"#{event.incident} ({'LOST_EVENTS' if event.incident == 1 else 'NONE'})"
    return ""


def _rows(args, files, selection, err, bar, *, names=None, skip: int = 0, limit=None):
    """The listing's rows of `files` (`names`: their Log_name, else from the
    command line), after the first `skip` events, at most `limit` rows."""
    count = 0
    limit = args.limit if limit is None else limit
    # Like SHOW BINLOG EVENTS, a compressed transaction is one row (no inner events).
    for index, event, verdict in selected_events(args, files, selection, err,
                                                 unpack_payloads=False):
        bar.update(event)
        if skip:
            skip -= 1
            continue
        if verdict is Verdict.SKIP:
            continue
        name = names[index] if names is not None else _log_name(args, index, event)
        h = event.header
        yield (name, h.pos, h.type_str, h.server_id, h.log_pos, event_info(event))
        count += 1
        if limit is not None and count >= limit:
            return


def _log_name(args, index: int, event) -> str:
    if args.remote:
        return event.header.file
    return "-" if args.files and args.files[index] == "-" else os.path.basename(args.files[index])


class EventInfoDescriber(EventChecker):
    """The reference decoder of the native listing (`_native.EventListReader`):
    it keeps in `last` the Info of the event it decoded last."""

    last: str = ""

    def __call__(self, *frame):
        event = self.decode(*frame)
        self.last = event_info(event)
        return None if isinstance(event, UnknownEvent) else event


def _native_listing(args, files, selection) -> bool:
    """Whether each file can be listed by the native core: the table or JSON
    lines, no event selection, default reading options, files on disk."""
    return (args.format in ("table", "json") and NATIVE_LISTING and core.native() is not None
            and isinstance(files, list) and not args.remote
            and reader_options(args) == {"force": False, "verify_checksums": True}
            and selection.options == SelectionOptions())


def _list_natively(args, files, selection, err, bar, target, widths) -> None:
    """Each file listed by the native core until it leaves an event to the
    reference, which lists the rest of that file (its rows, its errors)."""
    from binlake.read import reader
    written = 0
    write = _json_writer(target) if args.format == "json" else None
    for index, path in enumerate(files):
        limit = None if args.limit is None else args.limit - written
        if limit is not None and limit <= 0:
            return
        name = _log_name(args, index, None)
        listed = 0
        if os.path.isfile(path) and not is_gzip(path):
            check = EventInfoDescriber(path, schema=False, verify_checksums=True, force=False)
            lines = core.native().EventListReader(
                path, name, args.format, widths or (0,) * 5, EVENT_TYPE_STR, check, True, limit,
                reader.LARGE_EVENT_BYTES)
            write_native(target, lines)
            written += lines.events
            if lines.refused is None:
                continue
            listed = lines.events
        table = None if write is not None else _TableWriter(target, [], [], widths=widths)
        for row in _rows(args, [path], selection, err, bar, names=[name], skip=listed,
                         limit=None if limit is None else limit - listed):
            (write or table.write)(row)
            written += 1


def _json_writer(target):
    return lambda row: target.write(json.dumps(dict(zip(COLUMNS, row)), ensure_ascii=False) + "\n")


#: Offer files to the native listing (tests turn it off to compare the two).
NATIVE_LISTING = True


class _TableWriter:
    """Fixed column widths, so rows stream out as they come."""

    def __init__(self, out, files, names, widths=None):
        self.out = out
        if widths is not None:  # going on with a table already begun
            self.widths = widths
            return
        # a live server's binlog can grow to 4 GB (COM_BINLOG_DUMP's positions)
        size = (max((os.path.getsize(f) for f in files), default=0)
                if isinstance(files, list) else 1 << 32)
        digits = max(len(str(size)), 3)
        self.widths = (max([len(n) for n in names] + [8]), max(digits, 3), 24, 10, max(digits, 11))
        self.write(COLUMNS)

    def write(self, row) -> None:
        cells = [str(v).ljust(w) for v, w in zip(row[:5], self.widths)]
        info = str(row[5]).replace("\\", "\\\\").replace("\n", "\\n")
        self.out.write("  ".join(cells) + "  " + info + "\n")


def run(args, out, err) -> int:
    try:
        selection, _ = selection_options(args)
    except ValueError as exc:
        err.write(f"binlake events: {exc}\n")
        return ExitStatus.USAGE
    try:
        files, cleanup = open_inputs(args, err, selection)
    except ValueError as exc:
        err.write(f"binlake events: {exc}\n")
        return ExitStatus.USAGE
    status = ExitStatus.OK
    bar = progress_bar(files, err)
    try:
        with open_output(args, out) as target:
            flush_when_waiting(files, target)
            native = _native_listing(args, files, selection)
            if args.format == "json":
                write = _json_writer(target)
            elif args.format == "csv":
                writer = csv.writer(target, lineterminator="\n")
                writer.writerow(COLUMNS)
                write = writer.writerow
            else:
                names = [os.path.basename(f) for f in args.files] or ["mysql-bin.000001"]
                table = _TableWriter(target, files, names)
                write = table.write
            try:
                if native:
                    _list_natively(args, files, selection, err, bar, target,
                                   table.widths if args.format == "table" else None)
                else:
                    for row in _rows(args, files, selection, err, bar):
                        write(row)
            except BinlogError as exc:
                target.flush()
                report(exc, err)
                status = ExitStatus.ERROR
    finally:
        bar.close()
        cleanup()
    if selection.error:
        err.write(f"binlake events: {selection.error}\n")
        status = ExitStatus.ERROR
    return status
