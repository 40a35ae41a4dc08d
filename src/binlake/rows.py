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

from .constants import PARTIAL_JSON_UPDATES, ColumnType
from .errors import CorruptEvent, UnsupportedFeature
from .events.rows import DELETE, PRE_GA_ROWS_EVENTS, UPDATE, WRITE, RowsEvent
from .mysql_json import PartialJson, parse_diffs
from .values import column_decoder
from .rowcode import compile_image


@dataclass(frozen=True, slots=True)
class RowPlan:
    keys: tuple
    decoders: tuple
    null_bytes: int
    json_slots: tuple  #: positions in `keys` of JSON columns (for partial updates)
    null_shift: int = 0
    #: the image decoder compiled for exactly these columns: (buf, pos) -> (row, pos)
    image: object = None


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
                           tuple(json_slots), 1)
        else:
            null_bytes = (len(keys) + 7) // 8
            plan = RowPlan(tuple(keys), tuple(decoders), null_bytes, tuple(json_slots),
                           0, compile_image(present, decoders, null_bytes))
        cache[(bitmap, pre_ga)] = plan
    return plan


def _decoder(column):
    try:
        return column_decoder(column)
    except NotImplementedError as exc:
        def unsupported(buf, pos, _reason=str(exc)):
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
    width = {252: 2, 253: 3, 254: 8}[first]
    return int.from_bytes(buf[pos + 1:pos + 1 + width], "little"), pos + 1 + width


def decode_rows(event: RowsEvent) -> list:
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
    operation = event.operation
    pre_ga = header.type_code in PRE_GA_ROWS_EVENTS
    first = _plan(table, event.columns_present, pre_ga)
    after_plan = (_plan(table, event.columns_present_after)
                  if event.columns_present_after is not None else first)
    buf, end = event.rows_data, len(event.rows_data)
    pos = 0
    rows = []
    partial = event.is_partial
    image = first.image or (lambda b, p: _image(b, p, first))
    after_image = after_plan.image or (lambda b, p: _image(b, p, after_plan))
    try:
        while pos < end:
            start = pos
            if operation == WRITE:
                after, pos = image(buf, pos)
                rows.append((None, after))
            elif operation == DELETE:
                before, pos = image(buf, pos)
                rows.append((before, None))
            elif not partial:
                before, pos = image(buf, pos)
                after, pos = after_image(buf, pos)
                rows.append((before, after))
            else:
                before, pos = _image(buf, pos, first)
                slots = ()
                options, pos = _packed_len(buf, pos)
                if options & PARTIAL_JSON_UPDATES:
                    slots, pos = _partial_slots(table, after_plan, buf, pos)
                after, pos = _image(buf, pos, after_plan, slots)
                if slots:
                    _apply_partial(before, after)
                rows.append((before, after))
            if pos > end:
                raise IndexError("row image runs past the end of the event")
    except (IndexError, struct.error, ValueError) as exc:
        raise CorruptEvent(header.file, event.rows_offset + start,
                           f"row {len(rows)} of {table.qualified_name}: {exc}") from None
    except NotImplementedError as exc:
        raise UnsupportedFeature(header.file, event.rows_offset + start,
                                 f"{table.qualified_name}: {exc}") from None
    return rows


def _partial_slots(table, plan: RowPlan, buf: bytes, pos: int):
    """The partial-JSON bitmap has one bit per JSON column of the table."""
    json_columns = [c for c in table.columns if c.type == ColumnType.MYSQL_TYPE_JSON]
    nbytes = (len(json_columns) + 7) // 8
    bits = int.from_bytes(buf[pos:pos + nbytes], "little")
    flagged = {c.key for i, c in enumerate(json_columns) if bits >> i & 1}
    slots = frozenset(i for i, key in enumerate(plan.keys) if key in flagged)
    return slots, pos + nbytes


def _apply_partial(before: dict, after: dict) -> None:
    for key, value in after.items():
        if isinstance(value, PartialJson) and key in before:
            after[key] = value.apply(before[key])
