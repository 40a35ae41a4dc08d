"""Events and values as JSON-ready data (for `dump --format json`, Spark strings).

Rule: lossless and unambiguous. Decimal -> its exact text; date/datetime ->
ISO 8601 with the column's digits; TIME -> MySQL's `[-]HHH:MM:SS[.ffffff]`;
bytes -> {"base64": ...}; SET -> list; partial JSON -> its diffs.
"""

from __future__ import annotations

import base64
import json
import datetime as dt
from decimal import Decimal

from binlake.read.events import (Event, LoadEvent, QueryEvent, RowsEvent, RowsQueryEvent, TableMapEvent,
                     UnknownEvent)
from binlake.read.events.table_map import Column
from binlake.read.mysql_json import JsonDiff, JsonOpaque, PartialJson
from binlake.read.reader import EventChecker


def time_text(value: dt.timedelta) -> str:
    """A TIME value as MySQL prints it, e.g. -838:59:59 or 12:00:00.500000."""
    micro = value.days * 86400_000_000 + value.seconds * 1_000_000 + value.microseconds
    sign = "-" if micro < 0 else ""
    micro = abs(micro)
    seconds, frac = divmod(micro, 1_000_000)
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{frac:06d}" if frac else "")


def to_jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return time_text(value)
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, PartialJson):
        return {"json_diff": [to_jsonable(d) for d in value.diffs]}
    if isinstance(value, JsonDiff):
        return {"op": value.operation_name, "path": value.path, "value": to_jsonable(value.value)}
    if isinstance(value, JsonOpaque):
        return value.text
    if isinstance(value, Column):
        return value.key
    if isinstance(value, Event):
        return event_to_dict(value)
    return str(value)


def event_to_dict(event: Event, *, rows: bool = True) -> dict:
    h = event.header
    out = {"file": h.file, "pos": h.pos, "next_pos": h.next_pos, "length": h.length,
           "type": h.type_name, "type_code": h.type_code, "timestamp": h.timestamp,
           "server_id": h.server_id, "log_pos": h.log_pos, "flags": h.flags}
    if h.checksum is not None:
        out["checksum"] = f"0x{h.checksum:08x}"
    for name, value in event.fields().items():
        if isinstance(value, TableMapEvent):
            continue
        out[name] = to_jsonable(value)
    if rows and isinstance(event, RowsEvent):
        out["rows"] = [{"before": to_jsonable(b), "after": to_jsonable(a)}
                       for b, a in event.rows()]
    return out


def event_json(event: Event, *, header: bool = True, rows: bool = True) -> str:
    """`json.dumps(event_to_dict(event))`, made faster: the values are left
    to json's C encoder, which calls `to_jsonable` only for the ones it cannot
    encode itself. With header=False: the checksum and the event's own fields
    (the events view's `info`)."""
    if header:
        h = event.header
        out = {"file": h.file, "pos": h.pos, "next_pos": h.next_pos, "length": h.length,
               "type": h.type_name, "type_code": h.type_code, "timestamp": h.timestamp,
               "server_id": h.server_id, "log_pos": h.log_pos, "flags": h.flags}
        checksum = h.checksum
    else:
        out, checksum = {}, event.header.checksum
    if checksum is not None:
        out["checksum"] = f"0x{checksum:08x}"
    for name, value in event.fields().items():
        if not isinstance(value, TableMapEvent):
            out[name] = value
    if rows and isinstance(event, RowsEvent):
        out["rows"] = [{"before": b, "after": a} for b, a in event.rows()]
    return _ENCODE(out)


def _json_default(value):
    if isinstance(value, dict):  # keys json cannot take (to_jsonable makes them str)
        return {str(k): v for k, v in value.items()}
    return to_jsonable(value)


_ENCODE = json.JSONEncoder(ensure_ascii=False, default=_json_default).encode


def event_subject(event) -> tuple:
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


class EventDescriber(EventChecker):
    """The reference decoder of the native events loops (the events view,
    `dump --format json`): it also keeps, in `last`, what it decoded last
    (database, table, query, info: `event_json` without header or rows),
    the UnknownEvent's when it failed under `force`."""

    last: tuple | None = None

    def __call__(self, *frame):
        event = self.decode(*frame)
        self.last = (*event_subject(event), event_json(event, header=False, rows=False))
        return None if isinstance(event, UnknownEvent) else event
