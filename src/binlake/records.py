"""Change records: the boundary every consumer (CLI, SQL writer, Spark) uses.

Strategy: one `Change` per row image pair, carrying what rows events do not
repeat: the GTID of the transaction the row belongs to (None outside a GTID
transaction). Transactions are cut by `scan.TransactionState`, the one
definition of where they start and end. Values are as `read/values.py` describes.

With the native core, `changes()` and `transactions()` are the native
changes loop (`_native.ChangeValues`, rust/src/python/change_values.rs): the
events a change needs are read in Rust, row images become the dicts of
`RowsEvent.rows()` there, and each Change is made straight into its slots,
so events the caller never sees (GTID, BEGIN, table maps, XID, annotations)
cost no Python object. The walk over `BinlogReader` events below is the
reference (BINLAKE_PURE=1, no native core, `unpack_payloads=False`); the
differential tests hold the two equal, errors and their order included.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
from dataclasses import dataclass, replace
from typing import Iterable, Iterator

from binlake import core
from binlake.charsets import collation_codecs
from binlake.constants import EventType as E
from binlake.read.events import Event, GtidEvent, MariadbGtidEvent, RowsEvent
from binlake.read import reader
from binlake.read.gzipped import GzipBinlog, is_gzip
from binlake.read.reader import BinlogReader, EventChecker, _history
from binlake.read.rows import LazyRowData
from binlake.read.scan import TransactionState, step_details

#: BinlogReader options the native loop takes (others: the reference).
_NATIVE_OPTIONS = frozenset({"verify_checksums", "force", "start_position", "schema"})


@dataclass(frozen=True, slots=True)
class Change:
    file: str
    pos: int            #: offset of the rows event
    next_pos: int
    row_index: int      #: index of this row within the event
    timestamp: int
    server_id: int
    gtid: str | None    #: of the transaction the row belongs to
    database: str
    table: str
    op: str             #: 'insert' | 'update' | 'delete'
    before: dict | None
    after: dict | None


@dataclass(frozen=True, slots=True)
class Transaction:
    """The changes of one transaction (or of one statement outside any)."""

    file: str
    gtid: str | None
    xid: int | None
    end_pos: int        #: where the next one starts: `start_position` to go on after it
    timestamp: int      #: of its last event (its commit)
    complete: bool      #: False: the file ended (or a new one began) before its end
    changes: list


def rows_changes(event: RowsEvent, gtid: str | None) -> Iterator[Change]:
    """The changes of one rows event, in its transaction `gtid`."""
    header = event.header
    table = event.table
    database = table.database if table else ""
    name = table.table if table else ""
    for index, (before, after) in enumerate(event.iter_rows()):
        yield Change(header.file, header.pos, header.next_pos, index, header.timestamp,
                     header.server_id, gtid, database, name, event.operation, before, after)


def changes_from_events(events: Iterable[Event], on_commit=None,
                        start_position: int | None = None) -> Iterator[Change]:
    """The changes of the rows events in `events`, as they come; `on_commit`
    as `changes` calls it (the events of a reader from `start_position`)."""
    for item in _grouped(events, start_position):
        if item.__class__ is not Transaction:
            yield from rows_changes(*item)
        elif on_commit is not None:
            on_commit(item)


def _grouped(events: Iterable[Event], start_position: int | None = None):
    """(rows event, GTID) for each rows event, and a Transaction (its
    changes left empty) where one ends; the reference of the native loop's
    grouping (`ChangesReader.group`). From `start_position`, the format
    description the reader frames the file with belongs to no group."""
    if start_position:  # the description comes first, then the event at the position
        events = itertools.dropwhile(lambda e: e.header.pos < start_position, events)
    state = TransactionState()
    gtid = xid = last = None
    pending = False
    end_pos = last_pos = last_end = 0
    for event in events:
        header = event.header
        code = header.type_code
        if header.pos != last_pos:  # a payload's inner events share its position
            last_pos, end_pos = header.pos, header.next_pos
        details = step_details(event, code)
        if pending and state.starts(code, details.get("query_kind")):
            yield Transaction(last.file, gtid, xid, last_end, last.timestamp, False, [])
            gtid = xid = None
        pending, last, last_end = True, header, end_pos
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            gtid = event.gtid
        elif code == E.XID_EVENT and hasattr(event, "xid"):
            xid = event.xid
        elif isinstance(event, RowsEvent):
            yield event, gtid
        if code != E.TRANSACTION_PAYLOAD_EVENT:  # its inner events follow and say more
            state.step(code, **details)
        if not state.open:
            yield Transaction(header.file, gtid, xid, end_pos, header.timestamp, True, [])
            pending, gtid, xid = False, None, None
    if pending:
        yield Transaction(last.file, gtid, xid, last_end, last.timestamp, False, [])


def changes(paths, on_commit=None, *, on_commit_fields=None,
            **reader_options) -> Iterator[Change]:
    """Every row change in the binlog file(s), in order; column names as the
    binlog or the schema history (`schema`, see BinlogReader) knows them.

    `on_commit(transaction)`: called with each group of events from one
    boundary to the next (a `Transaction`, its `changes` left empty) once
    its changes have all been handed out, before anything more is read:
    where a consumer may checkpoint (`end_pos`). `on_commit_fields(file,
    gtid, xid, end_pos, timestamp, complete)`: the same, with the group's
    fields and no object made (a consumer that only keeps the last one:
    one call per transaction is all a small transaction's cost then); a
    `_native.CommitMark` there is written into with no call at all."""
    native = core.native()
    if native is None or not set(reader_options) <= _NATIVE_OPTIONS:
        if on_commit_fields is not None:
            def on_commit(t: Transaction) -> None:
                on_commit_fields(t.file, t.gtid, t.xid, t.end_pos, t.timestamp, t.complete)
        return changes_from_events(BinlogReader(paths, **reader_options), on_commit,
                                   reader_options.get("start_position"))
    return _native_loop(native, paths, reader_options, per_transaction=False,
                        on_commit=on_commit, on_commit_fields=on_commit_fields)


def transactions(paths, **reader_options) -> Iterator[Transaction]:
    """The transactions of the binlog file(s) that changed rows, in order,
    each with its changes; `end_pos` is where reading can go on after it."""
    return (txn for txn in transaction_groups(paths, **reader_options) if txn.changes)


def transaction_groups(paths, **reader_options) -> Iterator[Transaction]:
    """Every group of events from one boundary to the next: transactions,
    and statements or events outside any (DDL, rotations), with no changes."""
    native = core.native()
    if native is None or not set(reader_options) <= _NATIVE_OPTIONS:
        return _reference_transactions(BinlogReader(paths, **reader_options),
                                       reader_options.get("start_position"))
    return (Transaction(file, gtid, xid, end_pos, timestamp, complete, rows)
            for file, (rows, gtid, xid, end_pos, timestamp, complete)
            in _native_loop(native, paths, reader_options, per_transaction=True))


def _reference_transactions(events: Iterable[Event],
                            start_position: int | None = None) -> Iterator[Transaction]:
    """`transaction_groups` by the reference."""
    rows: list = []
    for item in _grouped(events, start_position):
        if item.__class__ is Transaction:
            yield replace(item, changes=rows)
            rows = []
        else:
            rows.extend(rows_changes(*item))


def _committed(native, file: str, on_commit, on_commit_fields):
    """What the native loop of `file` is told each group's end by: the
    fields to `on_commit_fields` with its file bound, or a Transaction to
    `on_commit`; a native CommitMark as it is (the loop writes into it)."""
    if isinstance(on_commit_fields, native.CommitMark):
        return on_commit_fields
    if on_commit_fields is not None:
        return functools.partial(on_commit_fields, file)
    if on_commit is None:
        return None

    def committed(gtid, xid, end_pos, timestamp, complete):
        on_commit(Transaction(file, gtid, xid, end_pos, timestamp, complete, []))
    return committed


def _native_loop(native, paths, options: dict, per_transaction: bool, on_commit=None,
                 on_commit_fields=None):
    """Each file's changes (per transaction: (file, transaction tuple)) from
    the native loop; files as `BinlogReader` takes them."""
    if isinstance(paths, (str, os.PathLike)) or hasattr(paths, "read"):
        paths = [paths]
    schema = _history(options.get("schema"))
    verify, force = options.get("verify_checksums", True), options.get("force", False)
    start = options.get("start_position") or 4
    codecs = collation_codecs()
    for index, path in enumerate(paths):
        stream = opened = None
        if hasattr(path, "read"):
            stream, path = path, path.name
        elif os.fspath(path) == "-":
            path, stream = "-", sys.stdin.buffer
        else:
            path = os.fspath(path)
            if is_gzip(path):
                stream = opened = GzipBinlog(path)
        committed = _committed(native, path, on_commit, on_commit_fields)
        loop = None
        try:
            check = EventChecker(path, verify_checksums=verify, force=force,
                                 schema=schema if schema is not None else False)
            loop = native.ChangeValues(path, start if index == 0 else 4, stream, verify, force,
                                       check, None, schema is not None, codecs, Change,
                                       per_transaction, reader.LARGE_EVENT_BYTES,
                                       LazyRowData.WINDOW, committed)
            if per_transaction:
                for txn in loop:
                    yield path, txn
            else:
                yield from loop
        finally:
            # The native loop may only be freed by the thread that made it:
            # let go of it here, as the iteration ends or fails in that
            # thread, not whenever the suspended generator is collected.
            loop = None
            if opened is not None:
                opened.close()
