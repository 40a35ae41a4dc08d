"""The `events` and `changes` views of one range, as Arrow record batches.

Strategy: read the range's transactions (binlake.spark.read.ranges), append each
row to plain Python column lists, and turn every BATCH_ROWS rows into one
`pyarrow.RecordBatch` (Spark takes those 2-3x faster than tuples). A
transaction is emitted whole once its end is read, because its XID and
commit time come last; rows events are kept undecoded until then, so the
memory held is the transaction's own bytes.

With the native core the changes view is read by a native loop
(`_native.ChangesReader`, rust/src/python/changes.rs): it frames the range,
decodes the events it needs, groups transactions with the same rules as
`transactions()`, and builds the Arrow buffers (rust/src/sink/arrow.rs) on
worker threads, imported through the Arrow C data interface with no Python
object per event or value. Every split is read that way: events it does not
decode itself go through the reference decoders (`EventChecker`), so there
is no case that needs a fallback decided in advance. The Python lists below
remain the reference (BINLAKE_PURE=1, or no native core), which the
differential tests hold equal to it, batch boundaries and errors included.

The events view is read by the same loop with a second consumer
(`_native.EventsReader`, rust/src/python/events_reader.rs), which writes each
event's row and, for the common events, its `info` JSON natively; the
others are described by the reference (`jsonable.EventDescriber`).

Rule: the column lists below are the one definition of both schemas; the
Spark DDL is derived from them, and docs/spark.md documents them.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
from itertools import islice, repeat
from typing import Iterator

import pyarrow as pa

from binlake.charsets import collation_codecs
from binlake.constants import ColumnType as T
from binlake.read.events import RowsEvent
from binlake import core
from binlake.read import reader
from binlake.read.reader import EventChecker
from binlake.errors import CorruptEvent
from binlake.read.rows import DELETE, UPDATE, WRITE
from binlake.text.jsonable import EventDescriber, event_json, event_subject
from binlake.read.rows import LazyRowData, row_start
from binlake.read.scan import read_framing
from binlake.spark.read.exact import column_texts, row_texts, value_text
from binlake.read.gzipped import GzipBinlog, is_gzip
from binlake.spark.read.ranges import FIRST_EVENT, Split, read_split, transactions

BATCH_ROWS = 8192
#: Rows data the native loop hands each worker thread at a time.
NATIVE_JOB_BYTES = 4 << 20
OPS = {WRITE: "c", UPDATE: "u", DELETE: "d"}
TEXT_MAP = pa.map_(pa.string(), pa.string())
UTC_MICROS = pa.timestamp("us", tz="UTC")

EVENT_KEY = pa.struct([("file_seq", pa.int64()), ("pos", pa.int64()), ("sub", pa.int32())])
CHANGE_KEY = pa.struct([("file_seq", pa.int64()), ("pos", pa.int64()), ("sub", pa.int32()),
                        ("row", pa.int32())])

EVENTS = pa.schema([
    ("path", pa.string()), ("file", pa.string()), ("pos", pa.int64()), ("next_pos", pa.int64()),
    ("commit_key", EVENT_KEY), ("timestamp", UTC_MICROS), ("type", pa.string()),
    ("type_code", pa.int32()), ("server_id", pa.int64()), ("length", pa.int64()),
    ("log_pos", pa.int64()), ("flags", pa.int32()), ("gtid", pa.string()), ("xid", pa.int64()),
    ("database", pa.string()), ("table", pa.string()), ("query", pa.string()),
    ("info", pa.string()),
])

CHANGES = pa.schema([
    ("path", pa.string()), ("file", pa.string()), ("pos", pa.int64()), ("row_index", pa.int32()),
    ("commit_key", CHANGE_KEY), ("timestamp", UTC_MICROS), ("commit_timestamp", UTC_MICROS),
    ("commit_pos", pa.int64()), ("gtid", pa.string()), ("xid", pa.int64()),
    ("server_id", pa.int64()), ("database", pa.string()), ("table", pa.string()),
    ("op", pa.string()), ("before", TEXT_MAP), ("after", TEXT_MAP),
])

VIEWS = {"events": EVENTS, "changes": CHANGES}

#: Columns of the views with few distinct values (dictionary-encoded in
#: their files; a dictionary of the other columns' values, as many as the
#: rows, would cost the writer and be dropped by it).
FEW_VALUES = {"file", "type", "gtid", "op", "database", "table", "before.key_value.key",
              "after.key_value.key"}
#: Columns whose values are not what a reader filters on: the row images'
#: values, the statements (no min/max statistics: the writer spent most
#: of its time on them).
UNFILTERED = {"path", "query", "info", "before.key_value.value", "after.key_value.value"}


def parquet_options(schema: pa.Schema) -> dict:
    """pyarrow.parquet's write options for a file of a view with `schema`
    (its columns but the partition ones)."""
    leaves = []
    for field in schema:
        if pa.types.is_struct(field.type):
            leaves += [f"{field.name}.{child.name}" for child in field.type]
        elif pa.types.is_map(field.type):
            leaves += [f"{field.name}.key_value.key", f"{field.name}.key_value.value"]
        else:
            leaves.append(field.name)
    return {"compression": "snappy",
            "use_dictionary": [leaf for leaf in leaves if leaf in FEW_VALUES],
            "write_statistics": [leaf for leaf in leaves if leaf not in UNFILTERED]}

def spark_ddl(schema: pa.Schema) -> str:
    return ", ".join(f"`{f.name}` {_ddl_type(f.type)}" for f in schema)


def _ddl_type(kind: pa.DataType) -> str:
    if pa.types.is_struct(kind):
        return "STRUCT<" + ", ".join(f"`{f.name}`: {_ddl_type(f.type)}" for f in kind) + ">"
    if pa.types.is_map(kind):
        return f"MAP<{_ddl_type(kind.key_type)}, {_ddl_type(kind.item_type)}>"
    return {pa.string(): "STRING", pa.int64(): "BIGINT", pa.int32(): "INT",
            UTC_MICROS: "TIMESTAMP"}[kind]


def _signed64(value: int | None) -> int | None:
    """XIDs are unsigned 64-bit; Spark has no such type (two's complement above 2^63)."""
    if value is None or value < 1 << 63:
        return value
    return value - (1 << 64)


class _MapColumn:
    """A map<string,string> column as Arrow builds it: offsets, keys, items, nulls."""

    def __init__(self):
        self.offsets, self.keys, self.items, self.nulls = [0], [], [], []

    def extend_values(self, rows, texts: dict, in_order: tuple) -> None:
        """Decoded rows, their values turned into text on the way in (the hot
        loop). `in_order` are the text functions of every column: a full
        image has them all, in order."""
        nulls, keys, items, offsets = self.nulls, self.keys, self.items, self.offsets
        width = len(in_order)
        for row in rows:
            if row is None:
                nulls.append(True)
            else:
                nulls.append(False)
                keys.extend(row)
                if len(row) == width:
                    items.extend([v if v is None else f(v) for f, v in zip(in_order, row.values())])
                else:  # an image of some columns (binlog_row_image=MINIMAL/NOBLOB)
                    items.extend([v if v is None else texts.get(k, value_text)(v)
                                  for k, v in row.items()])
            offsets.append(len(keys))

    def array(self) -> pa.Array:
        return pa.MapArray.from_arrays(pa.array(self.offsets, type=pa.int32()),
                                       pa.array(self.keys, type=pa.string()),
                                       pa.array(self.items, type=pa.string()),
                                       type=TEXT_MAP, mask=pa.array(self.nulls, type=pa.bool_()))


class _Columns:
    """Python lists for one schema, turned into record batches.

    A struct field's children are lists of their own (`commit_key.pos`), so
    that a block of rows can be added with one `extend` per column.
    """

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.columns: dict = {}
        self.reset()

    def reset(self) -> None:
        # Fresh lists in the same dict: callers hold on to `columns`.
        for field in self.schema:
            if pa.types.is_struct(field.type):
                for child in field.type:
                    self.columns[f"{field.name}.{child.name}"] = []
            elif pa.types.is_map(field.type):
                self.columns[field.name] = _MapColumn()
            else:
                self.columns[field.name] = []
        self.rows = 0

    def batch(self) -> pa.RecordBatch:
        arrays = []
        for field in self.schema:
            if pa.types.is_struct(field.type):
                children = [pa.array(self.columns[f"{field.name}.{child.name}"], type=child.type)
                            for child in field.type]
                arrays.append(pa.StructArray.from_arrays(children, fields=list(field.type)))
            elif pa.types.is_map(field.type):
                arrays.append(self.columns[field.name].array())
            else:
                arrays.append(pa.array(self.columns[field.name], type=field.type))
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self.reset()
        return batch


def reader_options(options: dict) -> dict:
    return {"force": _flag(options.get("force"), False),
            "verify_checksums": _flag(options.get("verify_checksums"), True)}


def _flag(value, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _transactions(split: Split, options: dict, schema=False, stream=None):
    """The range's transactions, without one the server is still writing at
    its end: a later read takes that one whole."""
    events = read_split(split, stream=stream, **reader_options(options), schema=schema)
    for txn in transactions(events):
        if txn.cut_off and stream is None and _still_written(split.path):
            return
        yield txn


# -- events view --------------------------------------------------------------------

def event_batches(split: Split, options: dict) -> Iterator[pa.RecordBatch]:
    native = core.native()
    if native is None:
        return _python_event_batches(split, options)
    return _native_event_batches(native, split, options)


def _native_event_batches(native, split: Split, options: dict) -> Iterator[pa.RecordBatch]:
    """The same batches as `_python_event_batches`, read by the changes
    loop feeding the events view (`_native.EventsReader`,
    rust/src/python/events_reader.rs, rows in events.rs): `info` is written natively for the events
    every transaction has; the others are decoded and described here
    (`jsonable.EventDescriber`)."""
    opts = reader_options(options)
    return _native_batches(split, lambda stream: native.EventsReader(
        split.path, split.file, split.file_seq, split.start, split.end, stream,
        opts["verify_checksums"], opts["force"], EventDescriber(split.path, schema=False, **opts),
        lambda: _still_written(split.path), BATCH_ROWS, reader.LARGE_EVENT_BYTES))


def _native_batches(split: Split, make, stream=None) -> Iterator[pa.RecordBatch]:
    """The batches of the native reader `make(stream)` over `split`; a gzip
    input is unpacked here and handed to it as a stream; `stream` (a live
    server's binlog) is read as it is."""
    opened = None
    if stream is None and is_gzip(split.path):
        stream = opened = GzipBinlog(split.path)
    try:
        for batch in make(stream):
            yield pa.record_batch(batch)
    finally:
        if opened is not None:
            opened.close()


def _python_event_batches(split: Split, options: dict) -> Iterator[pa.RecordBatch]:
    out = _Columns(EVENTS)
    c = out.columns
    file = split.file
    for txn in _transactions(split, options):
        xid = _signed64(txn.xid)
        for item in txn.events:
            event = item.event
            h = event.header
            database, table, query = event_subject(event)
            c["path"].append(split.path)
            c["file"].append(file)
            c["pos"].append(h.pos)
            c["next_pos"].append(h.next_pos)
            c["commit_key.file_seq"].append(split.file_seq)
            c["commit_key.pos"].append(h.pos)
            c["commit_key.sub"].append(item.sub)
            c["timestamp"].append(h.timestamp * 1_000_000)
            c["type"].append(h.type_name)
            c["type_code"].append(h.type_code)
            c["server_id"].append(h.server_id)
            c["length"].append(h.length)
            c["log_pos"].append(h.log_pos)
            c["flags"].append(h.flags)
            c["gtid"].append(txn.gtid)
            c["xid"].append(xid)
            c["database"].append(database)
            c["table"].append(table)
            c["query"].append(query)
            c["info"].append(event_json(event, header=False, rows=False))
        out.rows += len(txn.events)
        if out.rows >= BATCH_ROWS:
            yield out.batch()
    if out.rows:
        yield out.batch()


# -- changes view -------------------------------------------------------------------

class TableFilter:
    """`db.table` patterns (fnmatch, comma-separated); empty: every table."""

    def __init__(self, patterns: str | None):
        self.patterns = [p.strip() for p in (patterns or "").split(",") if p.strip()]
        self._seen: dict = {}

    @property
    def selective(self) -> bool:
        """Whether some table is not wanted."""
        return bool(self.patterns)

    def __call__(self, database: str, table: str) -> bool:
        if not self.patterns:
            return True
        key = (database, table)
        hit = self._seen.get(key)
        if hit is None:
            name = f"{database}.{table}"
            hit = self._seen[key] = any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
        return hit


class CatchUpFilter(TableFilter):
    """The tables a range of a binlog read again is read for (a lake whose
    --tables now selects tables its changes/ does not hold, binlake.spark.
    pipeline): those `patterns` selects whose changes/ holds the file up to
    the range's start: `holds`, [(TableFilter, end)], says up to where the
    file was read for the tables each earlier selection selected."""

    def __init__(self, patterns: str | None, holds: list, start: int):
        super().__init__(patterns)
        self.holds, self.start = holds, start

    @property
    def selective(self) -> bool:
        return True

    def __call__(self, database: str, table: str) -> bool:
        if not super().__call__(database, table):
            return False
        held = max((end for chosen, end in self.holds if chosen(database, table)),
                   default=FIRST_EVENT)
        return held == self.start


def table_filter(options: dict, split: Split) -> TableFilter:
    """The tables a range's changes are read for: the `tables` option's; in
    a range read again for tables newly selected, `tables_held` (JSON: per
    file name, [[patterns, end], ...]) narrows them (CatchUpFilter)."""
    held = options.get("tables_held")
    if not held:
        return TableFilter(options.get("tables"))
    holds = json.loads(held)[os.path.basename(split.path)]
    return CatchUpFilter(options.get("tables"),
                         [(TableFilter(",".join(chosen)), end) for chosen, end in holds],
                         split.start)


def load_schema_option(options: dict):
    """The `schema` option: a Schema (in-process callers), or a file or
    JSON text `load_schema` reads; None without one."""
    seed = options.get("schema")
    if not seed:
        return None
    from binlake.schema.history import Schema, load_schema
    return seed if isinstance(seed, Schema) else load_schema(seed)


def split_schema(split: Split, options: dict):
    """The schema history a range of the changes view is read with, following
    its DDL: a Schema object passed in is followed as it is (one reader
    across files in order); a saved history is taken as it was at the
    range's start, so a range starting mid-file knows the tables made before."""
    from binlake.schema.history import Schema
    given = options.get("schema")
    if isinstance(given, Schema):
        return given
    seed = (_saved_history(given) if isinstance(given, str) and given.lstrip().startswith("{")
            else load_schema_option(options))
    return seed.at((split.file, split.start)) if seed is not None else Schema()


@functools.lru_cache(maxsize=2)
def _saved_history(text: str):
    """A saved history's JSON text, parsed once for all the ranges a run
    reads in this process (the events and changes views of each): each
    takes a copy `at` its start, and a history's tables are frozen, so
    none changes what the others see (a lake of 1,000 tables parsed its
    history per range: 20 ms each)."""
    from binlake.schema.history import load_schema
    return load_schema(text)


def change_batches(split: Split, options: dict, stream=None) -> Iterator[pa.RecordBatch]:
    """The changes view of `split` (read from `stream` when given: a live
    server's binlog, binlake.live.source)."""
    native = core.native()
    if native is None:
        return _python_change_batches(split, options, stream)
    return _native_change_batches(native, split, options, stream)


def _wanted_rows_events(txn, wanted: "TableFilter"):
    """(item, event, table map, database, table) of a transaction's rows
    events whose table the `tables` option wants."""
    for item in txn.events:
        event = item.event
        if not isinstance(event, RowsEvent):
            continue
        table = event.table
        database, name = (table.database, table.table) if table else ("", "")
        if wanted(database, name):
            yield item, event, table, database, name


def _native_change_batches(native, split: Split, options: dict,
                           stream=None) -> Iterator[pa.RecordBatch]:
    """The same batches as `_python_change_batches`, read by the native loop
    (`_native.ChangesReader`, rust/src/python/changes.rs): framing, the
    events the view needs, transaction grouping and row images all in Rust.
    Python is called back for what stays decided here: the `tables` filter,
    the schema history (table maps completed by `EventChecker`'s reader),
    charsets, JSON texts, and the events the loop does not decode itself
    (checked by the reference decoders, `EventChecker`)."""
    opts = reader_options(options)
    wanted = table_filter(options, split)
    check = EventChecker(split.path, schema=split_schema(split, options), **opts)
    return _native_batches(split, lambda stream: native.ChangesReader(
        split.path, split.file, split.file_seq, split.start, split.end, stream,
        opts["verify_checksums"], opts["force"], check,
        wanted if wanted.selective else None, True,
        collation_codecs(), lambda: stream is None and _still_written(split.path),
        reader.LARGE_EVENT_BYTES, LazyRowData.WINDOW, NATIVE_JOB_BYTES), stream)


def _python_change_batches(split: Split, options: dict, stream=None) -> Iterator[pa.RecordBatch]:
    out = _Columns(CHANGES)
    c = out.columns
    wanted = table_filter(options, split)
    for txn in _transactions(split, options, split_schema(split, options), stream):
        for item, event, table, database, name in _wanted_rows_events(txn, wanted):
            rows = _encodable_rows(event, table)
            first = 0
            # Blocks of rows, so that a huge event is never held whole.
            while block := list(islice(rows, BATCH_ROWS)):
                _add_changes(c, split, txn, item, database, name, block, first)
                out.rows += len(block)
                first += len(block)
                if out.rows >= BATCH_ROWS:
                    yield out.batch()
    if out.rows:
        yield out.batch()


def _encodable_rows(event: RowsEvent, table):
    """The event's rows; a JSON document whose strings are not valid UTF-8
    (the surrogate escapes of `mysql_json`) has no text in the view: its row
    is reported corrupt, where the native builder reports it."""
    rows = event.iter_rows()
    keys = [c.key for c in table.columns if c.real_type == T.MYSQL_TYPE_JSON] if table else ()
    if not keys:
        yield from rows
        return
    for index, pair in enumerate(rows):
        for image in pair:
            for key in keys if image else ():
                value = image.get(key)
                if type(value) is str and not value.isascii():
                    try:
                        value.encode("utf-8")
                    except UnicodeEncodeError as exc:
                        raise CorruptEvent(
                            event.header.file, event.rows_offset + row_start(event, index),
                            f"row {index} of {table.qualified_name}: "
                            f"{type(exc).__name__}: {exc}") from None
        yield pair


def _add_changes(c: dict, split: Split, txn, item, database: str, name: str, block: list,
                 first: int) -> None:
    """One rows event's rows `first`..: the columns they share are added
    with one `extend` each, the row images value by value."""
    event, h = item.event, item.event.header
    n = len(block)
    for column, value in (("path", split.path), ("file", split.file), ("pos", h.pos),
                          ("commit_key.file_seq", split.file_seq), ("commit_key.pos", h.pos),
                          ("commit_key.sub", item.sub), ("timestamp", h.timestamp * 1_000_000),
                          ("commit_timestamp", txn.commit_timestamp * 1_000_000),
                          ("commit_pos", txn.commit_pos), ("gtid", txn.gtid),
                          ("xid", _signed64(txn.xid)), ("server_id", h.server_id),
                          ("database", database), ("table", name),
                          ("op", OPS[event.operation])):
        c[column].extend(repeat(value, n))
    indexes = range(first, first + n)
    c["row_index"].extend(indexes)
    c["commit_key.row"].extend(indexes)
    before, after = c["before"], c["after"]
    table = event.table
    if table is None:  # no table map: the reader has already said so when decoding
        texts, in_order = {}, ()
    else:
        texts, in_order = row_texts(table), column_texts(table)
    before.extend_values([b for b, _ in block], texts, in_order)
    after.extend_values([a for _, a in block], texts, in_order)


def _still_written(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096)
    framing = read_framing(head, len(head))
    return framing is not None and framing.in_use
