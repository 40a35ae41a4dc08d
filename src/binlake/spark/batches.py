"""The `events` and `changes` views of one range, as Arrow record batches.

Strategy: read the range's transactions (binlake.spark.ranges), append each
row to plain Python column lists, and turn every BATCH_ROWS rows into one
`pyarrow.RecordBatch` (Spark takes those 2-3x faster than tuples). A
transaction is emitted whole once its end is read, because its XID and
commit time come last; rows events are kept undecoded until then, so the
memory held is the transaction's own bytes.

The changes view has a native builder (`_native.ChangeBatch`, in
rust/src/sink/arrow.rs): the rows data of each rows event goes to it
undecoded and comes back as Arrow buffers, imported through the Arrow C data
interface with no Python object per value. The Python lists below remain the
reference (BINLAKE_PURE=1, or no native core), which the differential tests
hold equal to it, batch boundaries included.

Rule: the column lists below are the one definition of both schemas; the
Spark DDL is derived from them, and docs/spark.md documents them.
"""

from __future__ import annotations

import fnmatch
from itertools import islice, repeat
from typing import Iterator

import pyarrow as pa

from ..events import LoadEvent, QueryEvent, RowsEvent, RowsQueryEvent, TableMapEvent
from .. import core
from ..events.rows import DELETE, PRE_GA_ROWS_EVENTS, UPDATE, WRITE
from ..jsonable import event_json
from ..rows import LazyRowData, bitmap_bytes, checked_table, native_columns, native_failure, \
    native_layout
from ..scan import read_framing
from .exact import column_texts, row_texts, text_row, value_text
from .ranges import Split, read_split, transactions

BATCH_ROWS = 8192
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

    def append_texts(self, row: dict | None) -> None:
        """A row already in text."""
        if row is None:
            self.nulls.append(True)
        else:
            self.nulls.append(False)
            self.keys.extend(row)
            self.items.extend(row.values())
        self.offsets.append(len(self.keys))

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


def _transactions(split: Split, options: dict):
    """The range's transactions, without one the server is still writing at
    its end: a later read takes that one whole."""
    for txn in transactions(read_split(split, **reader_options(options))):
        if txn.cut_off and _still_written(split.path):
            return
        yield txn


# -- events view --------------------------------------------------------------------

def event_batches(split: Split, options: dict) -> Iterator[pa.RecordBatch]:
    out = _Columns(EVENTS)
    c = out.columns
    file = split.file
    for txn in _transactions(split, options):
        xid = _signed64(txn.xid)
        for item in txn.events:
            event = item.event
            h = event.header
            database, table, query = _event_subject(event)
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


def _event_subject(event) -> tuple:
    """(database, table, query text) of an event, where it has them."""
    if isinstance(event, QueryEvent):
        return event.database or None, None, event.query
    if isinstance(event, RowsQueryEvent):
        return None, None, event.query
    if isinstance(event, TableMapEvent):
        return event.database, event.table, None
    if isinstance(event, RowsEvent):
        table = event.table
        return (table.database, table.table, None) if table else (None, None, None)
    if isinstance(event, LoadEvent):
        return event.database, event.table, None
    return None, None, None


# -- changes view -------------------------------------------------------------------

class TableFilter:
    """`db.table` patterns (fnmatch, comma-separated); empty: every table."""

    def __init__(self, patterns: str | None):
        self.patterns = [p.strip() for p in (patterns or "").split(",") if p.strip()]
        self._seen: dict = {}

    def __call__(self, database: str, table: str) -> bool:
        if not self.patterns:
            return True
        key = (database, table)
        hit = self._seen.get(key)
        if hit is None:
            name = f"{database}.{table}"
            hit = self._seen[key] = any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
        return hit


def load_schema_option(options: dict):
    path = options.get("schema")
    if not path:
        return None
    from ..schema import load_schema
    return load_schema(path)


def change_batches(split: Split, options: dict) -> Iterator[pa.RecordBatch]:
    native = core.native()
    if native is None:
        return _python_change_batches(split, options)
    return _native_change_batches(native, split, options)


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


def _native_change_batches(native, split: Split, options: dict) -> Iterator[pa.RecordBatch]:
    """The same batches as `_python_change_batches`, rows decoded natively."""
    out = native.ChangeBatch()
    out.set_file(split.path, split.file, split.file_seq)
    wanted = TableFilter(options.get("tables"))
    schema = load_schema_option(options)
    for txn in _transactions(split, options):
        out.set_transaction(txn.commit_timestamp, txn.commit_pos, txn.gtid, txn.xid)
        for item, event, table, database, name in _wanted_rows_events(txn, wanted):
            layout = _change_layout(native, checked_table(event), schema)
            h = event.header
            width = event.width
            args = (event.operation, bitmap_bytes(event.columns_present, width),
                    bitmap_bytes(event.columns_present_after, width), event.is_partial,
                    h.type_code in PRE_GA_ROWS_EVENTS, h.pos, item.sub, h.timestamp,
                    h.server_id)
            data = event.rows_data
            if isinstance(data, LazyRowData):
                yield from _lazy_rows(native, out, layout, event, data, args)
                continue
            pos = first = 0
            end = len(data)
            # Blocks of BATCH_ROWS, as the Python path makes them: same batches.
            while pos < end:
                try:
                    n, pos = out.add_rows(layout, args[0], data, pos, first, BATCH_ROWS, *args[1:])
                except native.RowDecodeError as exc:
                    raise native_failure(event, exc) from exc.__cause__
                first += n
                if out.rows >= BATCH_ROWS:
                    yield pa.record_batch(out.finish())
    if out.rows:
        yield pa.record_batch(out.finish())


def _lazy_rows(native, out, layout, event, data: LazyRowData, args: tuple):
    """A huge event's rows, read from its file through a window (as
    rows.iter_rows does): a row cut by the window's end fails to decode and
    is read again from its start with the next window."""
    total = len(data)
    base, window = 0, data.WINDOW
    buf = data.read(0, window)
    pos = first = 0
    while base + pos < total:
        try:
            n, pos = out.add_rows(layout, args[0], buf, pos, first, BATCH_ROWS, *args[1:])
        except native.RowDecodeError as exc:
            offset, index = exc.args[:2]
            first = index
            if base + len(buf) >= total:  # the window already reached the end: bad data
                raise native_failure(event, exc, base) from exc.__cause__
            window = window * 2 if offset == 0 else window  # one row outgrew the window
            base += offset
            buf, pos = data.read(base, window), 0
        else:
            first += n
            if pos >= len(buf) and base + pos < total:  # the window ended on a row's end
                base += pos
                buf, pos = data.read(base, window), 0
        if out.rows >= BATCH_ROWS:
            yield pa.record_batch(out.finish())


def _change_layout(native, table, schema):
    """The native layout of a table map for the changes view, cached on it;
    with `schema`, a table map without column names takes them from it."""
    names = schema.columns(table.database, table.table) \
        if schema is not None and not table.has_names else None
    if not names:
        layout = table.cache.get("arrow")
        if layout is None:
            codecs = [c[4] for c in native_columns(table)]
            layout = table.cache["arrow"] = native.ChangeLayout(native_layout(table, native),
                                                                codecs)
        return layout
    cached = table.cache.get("arrow-renamed")
    if cached is not None and cached[0] is schema:
        return cached[1]
    # schema.rename_rows's rule: `@N` becomes the Nth name, when there is one
    keys = [names[c.index] if c.name is None and c.index < len(names) else c.key
            for c in table.columns]
    columns = native_columns(table, keys)
    rows = native.RowLayout(table.database, table.table, columns)
    layout = native.ChangeLayout(rows, [c[4] for c in columns])
    table.cache["arrow-renamed"] = (schema, layout)
    return layout


def _python_change_batches(split: Split, options: dict) -> Iterator[pa.RecordBatch]:
    out = _Columns(CHANGES)
    c = out.columns
    wanted = TableFilter(options.get("tables"))
    schema = load_schema_option(options)
    for txn in _transactions(split, options):
        for item, event, table, database, name in _wanted_rows_events(txn, wanted):
            rename = schema is not None and table is not None and not table.has_names
            rows = event.iter_rows()
            first = 0
            # Blocks of rows, so that a huge event is never held whole.
            while block := list(islice(rows, BATCH_ROWS)):
                _add_changes(c, split, txn, item, database, name, block, first,
                             schema if rename else None)
                out.rows += len(block)
                first += len(block)
                if out.rows >= BATCH_ROWS:
                    yield out.batch()
    if out.rows:
        yield out.batch()


def _add_changes(c: dict, split: Split, txn, item, database: str, name: str, block: list,
                 first: int, schema) -> None:
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
    if schema is not None:  # names from CREATE TABLE statements
        texted = [(text_row(b, texts), text_row(a, texts)) for b, a in block]
        for b, a in schema.rename_rows(database, name, texted):
            before.append_texts(b)
            after.append_texts(a)
        return
    before.extend_values([b for b, _ in block], texts, in_order)
    after.extend_values([a for _, a in block], texts, in_order)


def _still_written(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096)
    framing = read_framing(head, len(head))
    return framing is not None and framing.in_use
