"""Row images of a rows event, decoded against its table map.

Strategy: a `RowPlan` is built once per (table map, columns-present bitmap)
and cached on the table map: the keys and value decoders of the present
columns, in order, and the size of the null bitmap. Decoding an image is
then: read the null bitmap as one int, and one decoder call per non-null
column. A partial JSON update (PARTIAL_UPDATE_ROWS_EVENT) swaps the decoder
of the flagged JSON columns for the diff reader, and the diffs are applied
to the before image's value.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Protocol

from binlake import core
from binlake.charsets import codec_for
from binlake.constants import PARTIAL_JSON_UPDATES, ColumnType, EventType as E
from binlake.errors import CorruptEvent, UnsupportedFeature
from binlake.read.mysql_json import PartialJson, parse_diffs
from binlake.read.values import column_decoder



class RowsEvent(Protocol):
    """What this module reads of a rows event (binlake.read.events.rows,
    which calls this module, never the reverse)."""
    header: object
    table: object                  #: the TableMapEvent in force, or None
    table_id: int
    width: int
    columns_present: int
    columns_present_after: int | None
    rows_data: bytes
    rows_offset: int

    @property
    def operation(self) -> str: ...

    @property
    def is_partial(self) -> bool: ...

WRITE, UPDATE, DELETE = "insert", "update", "delete"  #: the operation of a rows event
PRE_GA_ROWS_EVENTS = {E.PRE_GA_WRITE_ROWS_EVENT, E.PRE_GA_UPDATE_ROWS_EVENT, E.PRE_GA_DELETE_ROWS_EVENT}


@dataclass(frozen=True, slots=True)
class RowPlan:
    keys: tuple
    decoders: tuple
    null_bytes: int
    json_slots: tuple  #: positions in `keys` of JSON columns (for partial updates)
    null_shift: int = 0
    #: table-map indexes of the present columns, in image order (keys may repeat)
    indexes: tuple = ()


def _plan(table, bitmap: int, pre_ga: bool = False) -> RowPlan:
    cache = table.cache
    plan = cache.get((bitmap, pre_ga))
    if plan is None:
        keys, decoders, json_slots, present = [], [], [], []
        for column in table.columns:
            if bitmap >> column.index & 1:
                if column.type == ColumnType.MYSQL_TYPE_JSON:
                    json_slots.append(len(keys))
                keys.append(column.key)
                decoders.append(_decoder(column))
                present.append(column)
        if pre_ga:
            # 5.1.0-5.1.15 copied the table record's null bytes, whose bit 0 is
            # the record's delete mark. Those table maps carry no nullability,
            # so every column is taken as nullable: true for the tables of
            # that era's test suites, the only writers of these events.
            plan = RowPlan(tuple(keys), tuple(decoders), (len(keys) + 8) // 8,
                           tuple(json_slots), 1, tuple(c.index for c in present))
        else:
            null_bytes = (len(keys) + 7) // 8
            plan = RowPlan(tuple(keys), tuple(decoders), null_bytes, tuple(json_slots),
                           0, tuple(c.index for c in present))
        cache[(bitmap, pre_ga)] = plan
    return plan


def _decoder(column):
    try:
        return column_decoder(column)
    except NotImplementedError as exc:
        def unsupported(buf, pos, _reason=str(exc)):
            if pos > len(buf):
                # a value before this one already ran past the end: that is the
                # first fault, as the native core (bounds-checked reads) says
                raise IndexError("row image runs past the end of the event")
            raise NotImplementedError(_reason)
        return unsupported


def _image(buf: bytes, pos: int, plan: RowPlan, partial_slots=()) -> tuple[dict, int]:
    nb = plan.null_bytes
    nulls = int.from_bytes(buf[pos:pos + nb], "little") >> plan.null_shift
    pos += nb
    row = {}
    for i, (key, decode) in enumerate(zip(plan.keys, plan.decoders)):
        if nulls >> i & 1:
            row[key] = None
        elif i in partial_slots:
            length = int.from_bytes(buf[pos:pos + 4], "little")
            row[key] = parse_diffs(bytes(buf[pos + 4:pos + 4 + length]))
            pos += 4 + length
        else:
            row[key], pos = decode(buf, pos)
    return row, pos


def _packed_len(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    width = {252: 2, 253: 3, 254: 8}.get(first)
    if width is None:
        raise ValueError(f"bad packed integer prefix {first}")
    return int.from_bytes(buf[pos + 1:pos + 1 + width], "little"), pos + 1 + width


class LazyRowData:
    """The row images of a huge rows event, left in the file and read through
    a window as they are decoded, so a 1 GB event is never held whole."""

    WINDOW = 8 << 20

    def __init__(self, path: str, start: int, end: int):
        self.path, self.start, self.end = path, start, end

    def __len__(self) -> int:
        return self.end - self.start

    def read(self, offset: int, size: int) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(self.start + offset)
            return f.read(min(size, len(self) - offset))


class RowWindows:
    """The windows a huge event's row data is read through, one after another.

    Iterating gives (base, buf, last): the window's offset in the row data,
    its bytes, and whether it reaches the data's end. After each window the
    reader calls `advance(stop)` with the offset in `buf` of the first row it
    did not take whole (a row cut by the window's end): the next window starts
    there, twice as large if not even one row fitted. A failure in the `last`
    window is the reader's to raise: no larger window would help."""

    def __init__(self, data: LazyRowData):
        self.data = data
        self.total = len(data)
        self.base = 0
        self.size = data.WINDOW

    def __iter__(self):
        while self.base < self.total:
            buf = self.data.read(self.base, self.size)
            yield self.base, buf, self.base + len(buf) >= self.total

    def advance(self, stop: int) -> None:
        if stop == 0:  # one row outgrew the window
            self.size *= 2
        self.base += stop


def checked_table(event: RowsEvent):
    """The event's table map, which must exist and be as wide as the event."""
    table = event.table
    header = event.header
    if table is None:
        raise CorruptEvent(header.file, header.pos,
                           f"rows event for table id {event.table_id} without a table map "
                           "before it (start reading at an earlier position)")
    if len(table.columns) < event.width:
        raise CorruptEvent(header.file, header.pos,
                           f"rows event has {event.width} columns, its table map "
                           f"{table.qualified_name} has {len(table.columns)}")
    return table


def _pair_decoder(event: RowsEvent):
    """(buf, pos) -> ((before, after), pos) for this event's operation and layout."""
    table = checked_table(event)
    header = event.header
    operation = event.operation
    first = _plan(table, event.columns_present, header.type_code in PRE_GA_ROWS_EVENTS)
    after_plan = (_plan(table, event.columns_present_after)
                  if event.columns_present_after is not None else first)
    def image(b, p):
        return _image(b, p, first)

    def after_image(b, p):
        return _image(b, p, after_plan)
    if operation == WRITE:
        def pair(buf, pos):
            after, pos = image(buf, pos)
            return (None, after), pos
    elif operation == DELETE:
        def pair(buf, pos):
            before, pos = image(buf, pos)
            return (before, None), pos
    elif not event.is_partial:
        def pair(buf, pos):
            before, pos = image(buf, pos)
            after, pos = after_image(buf, pos)
            return (before, after), pos
    else:
        def pair(buf, pos):
            before, pos = _image(buf, pos, first)
            slots = ()
            options, pos = _packed_len(buf, pos)
            if options & PARTIAL_JSON_UPDATES:
                slots, pos = _partial_slots(table, after_plan, buf, pos)
            after, pos = _image(buf, pos, after_plan, slots)
            if slots:
                _apply_partial(before, after)
            return (before, after), pos
    return pair


def _failure(event: RowsEvent, offset: int, index: int, exc: Exception):
    name = event.table.qualified_name
    if isinstance(exc, NotImplementedError):
        return UnsupportedFeature(event.header.file, event.rows_offset + offset, f"{name}: {exc}")
    detail = exc.detail if isinstance(exc, CorruptEvent) else exc
    return CorruptEvent(event.header.file, event.rows_offset + offset,
                        f"row {index} of {name}: {detail}")


def native_columns(table, keys=None) -> list:
    """The column facts `RowLayout` takes; `keys` replace the columns' keys."""
    keys = keys or [c.key for c in table.columns]
    return [(c.type, c.meta, c.nullable, c.unsigned,
             None if c.type == ColumnType.MYSQL_TYPE_GEOMETRY else codec_for(c.charset),
             key, c.enum_values, c.set_values) for c, key in zip(table.columns, keys)]


def native_layout(table, native, keys: tuple | None = None):
    """The native core's layout of a table map, built once per equal map
    (and per `keys`, the names its rows are keyed by instead of the columns'
    own: binlake.compat's)."""
    cached = "native" if keys is None else ("native", keys)
    layout = table.cache.get(cached)
    if layout is None:
        layout = table.cache[cached] = native.RowLayout(
            table.database, table.table, native_columns(table, list(keys) if keys else None))
    return layout


def bitmap_bytes(bits: int | None, width: int) -> bytes | None:
    # as wide as the bits set, should a bitmap ever exceed its width: the pure
    # plan reads every bit of the int, and so must the native one
    if bits is None:
        return None
    return bits.to_bytes(max(width + 7, bits.bit_length() + 7) // 8, "little")


def native_rows(native, event: RowsEvent, data: bytes, keys: tuple | None = None) -> list:
    """The rows of `data` (the event's rows, or a window of them) decoded by
    the native core, each image a dict keyed by the columns' keys (or by
    `keys`, see native_layout)."""
    # The call's arguments but the data depend only on the table map and the
    # event's type and bitmaps: made once per table and shape, kept with the
    # table's other derived data (a small transaction's one rows event would
    # otherwise spend as long preparing the call as decoding its row).
    table = event.table
    code = event.header.type_code
    shape = ("native rows", keys, code, event.columns_present, event.columns_present_after,
             event.width)
    call = table.cache.get(shape) if table is not None else None
    if call is None:
        table = checked_table(event)
        call = table.cache[shape] = (
            native_layout(table, native, keys).decode_rows, event.operation,
            bitmap_bytes(event.columns_present, event.width),
            bitmap_bytes(event.columns_present_after, event.width), event.is_partial,
            code in PRE_GA_ROWS_EVENTS)
    decode, operation, before, after, partial, pre_ga = call
    try:
        return decode(operation, data, before, after, partial, pre_ga)
    except native.RowDecodeError as exc:
        raise native_failure(event, exc) from exc.__cause__


def native_failure(event: RowsEvent, exc: Exception, base: int = 0, first_index: int = 0):
    """The binlake error of a native RowDecodeError(offset, index, unsupported,
    reason), as the reference raises it; `base`: where the decoded buffer
    starts in the rows data, `first_index`: the index of its first row."""
    offset, index, unsupported, detail = exc.args
    name = event.table.qualified_name
    cls = UnsupportedFeature if unsupported else CorruptEvent
    text = f"{name}: {detail}" if unsupported else f"row {first_index + index} of {name}: {detail}"
    return cls(event.header.file, event.rows_offset + base + offset, text)


def _native_iter_window(native, event: RowsEvent):
    """A huge event's rows through a window: each window decoded natively;
    a row cut by the window's end is decoded again from the next window."""
    layout = native_layout(checked_table(event), native)
    before = bitmap_bytes(event.columns_present, event.width)
    after = bitmap_bytes(event.columns_present_after, event.width)
    windows = RowWindows(event.rows_data)
    index = 0
    for base, buf, last in windows:
        rows, stop, error = layout.decode_window(event.operation, buf, before, after,
                                                 event.is_partial)
        yield from rows
        if error is not None and last:
            raise native_failure(event, error, base, index) from error.__cause__
        index += len(rows)
        windows.advance(stop)


def decode_rows(event: RowsEvent) -> list:
    data = event.rows_data
    if data.__class__ is LazyRowData:
        return list(iter_rows(event))
    native = core.native()
    if native is not None:
        return native_rows(native, event, data)
    pair = _pair_decoder(event)
    buf = event.rows_data
    end = len(buf)
    pos = start = 0
    rows = []
    try:
        while pos < end:
            start = pos
            row, pos = pair(buf, pos)
            if pos == start:  # images of no columns: decoding on would never end
                raise ValueError(f"row images of no columns cannot hold the {end - start} "
                                 "bytes left")
            rows.append(row)
        if pos > end:
            rows.pop()  # the last row is the one that ran past the end: its index is reported
            raise IndexError("row image runs past the end of the event")
    except (IndexError, struct.error, ValueError, NotImplementedError, CorruptEvent) as exc:
        # CorruptEvent: a malformed JSON diff, located inside the diff alone
        raise _failure(event, start, len(rows), exc) from None
    return rows


def iter_rows(event: RowsEvent):
    """The (before, after) pairs one by one; huge events are read through a window."""
    data = event.rows_data
    if data.__class__ is not LazyRowData:
        # held rows are decoded whole (a bad row: none of them come out), so
        # a plain iterator over them: no generator frame per event
        native = core.native()
        return iter(decode_rows(event) if native is None else native_rows(native, event, data))
    return _iter_window_rows(event)


def _iter_window_rows(event: RowsEvent):
    data = event.rows_data
    native = core.native()
    if native is not None and event.header.type_code not in PRE_GA_ROWS_EVENTS:
        yield from _native_iter_window(native, event)
        return
    pair = _pair_decoder(event)
    windows = RowWindows(data)
    index = 0
    for base, buf, last in windows:
        pos = 0
        while True:
            try:
                if pos >= len(buf) and not last:
                    break  # the window ended on a row's end: read on from there
                row, end = pair(buf, pos)
                if end == pos:  # images of no columns: decoding on would never end
                    raise ValueError(f"row images of no columns cannot hold the "
                                     f"{windows.total - base - pos} bytes left")
                cut = end > len(buf)  # every decoder advances by what it read
            except (IndexError, struct.error, ValueError, CorruptEvent) as exc:
                cut, error = True, exc
            else:
                error = None
            if cut:
                if last:
                    raise _failure(event, base + pos, index,
                                   error or IndexError("row image runs past the end of the event"))
                break  # refill from this row's start
            yield row
            index += 1
            pos = end
            if last and pos >= len(buf):
                return
        windows.advance(pos)


def row_start(event: RowsEvent, index: int) -> int:
    """Where row `index` starts in the event's rows data, found by walking the
    rows before it again: for reports on a row that decoded but cannot be
    used (rows before it are known to decode)."""
    pair = _pair_decoder(event)
    data = event.rows_data
    if data.__class__ is not LazyRowData:
        pos = 0
        for _ in range(index):
            _, pos = pair(data, pos)
        return pos
    windows = RowWindows(data)
    for base, buf, _ in windows:
        pos = 0
        while index:
            try:
                _, end = pair(buf, pos)
            except (IndexError, struct.error, ValueError, CorruptEvent):
                break  # cut by the window's end: read on from this row
            if end > len(buf):
                break
            pos, index = end, index - 1
        if not index:
            return base + pos
        windows.advance(pos)
    return len(data)


def _partial_slots(table, plan: RowPlan, buf: bytes, pos: int):
    """The partial-JSON bitmap has one bit per JSON column of the table."""
    json_columns = [c for c in table.columns if c.type == ColumnType.MYSQL_TYPE_JSON]
    nbytes = (len(json_columns) + 7) // 8
    bits = int.from_bytes(buf[pos:pos + nbytes], "little")
    # by table-map index, not key: two columns may share a key (corrupt names)
    flagged = {c.index for i, c in enumerate(json_columns) if bits >> i & 1}
    slots = frozenset(i for i, index in enumerate(plan.indexes) if index in flagged)
    return slots, pos + nbytes


def _apply_partial(before: dict, after: dict) -> None:
    """The JSON diffs of the after image applied to the before image's documents.
    Diffs that do not fit their document (corrupt data) raise ValueError, which
    both cores report as a CorruptEvent at the row."""
    for key, value in after.items():
        if isinstance(value, PartialJson) and key in before:
            document = before[key]
            if document is not None and not isinstance(document, str):
                raise ValueError(f"partial JSON update of {key}, whose before value is "
                                 f"{type(document).__name__}, not JSON")
            try:
                after[key] = value.apply(document)
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                raise ValueError(f"partial JSON update of {key} does not apply to its "
                                 f"before value: {exc!r}") from None
