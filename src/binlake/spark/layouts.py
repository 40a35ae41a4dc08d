"""Table layouts (column keys, types, primary key) from the table maps, on the driver.

Strategy: the header scan lists the TABLE_MAP events; the database and
table names are peeked from their bodies, identical bodies (the same table
map repeated in every transaction) are decoded once, and the layout of each
table is that of its last table map in commit order. A layout is plain
JSON-ready data, so the pipeline keeps it in its manifest for later runs.

Column keys are the names the file carries (binlog_row_metadata=FULL), else
the names a CREATE TABLE schema gives (binlake.schema), else `@1`, `@2`, ...
"""

from __future__ import annotations

import mmap
from typing import Iterable

from ..constants import EventType as E
from ..cursor import text
from ..events import TableMapEvent
from ..scan import ScanResult, scan
from .ranges import Split, is_gzip, read_split


def layout_of(table_map: TableMapEvent, schema=None) -> dict:
    keys = [column.key for column in table_map.columns]
    primary = [keys[index] for index, _prefix in table_map.primary_key if index < len(keys)]
    if schema is not None and not table_map.has_names:
        names = _schema_names(schema, table_map.database, table_map.table)
        if names and len(names) >= len(keys):
            keys = names[:len(keys)]
            primary = [keys[index] for index, _ in table_map.primary_key if index < len(keys)]
    if not primary and schema is not None:
        primary = list(_schema_primary_key(schema, table_map.database, table_map.table))
    return {
        "database": table_map.database,
        "table": table_map.table,
        "columns": [{"key": key, "type": int(column.real_type), "meta": column.meta,
                     "unsigned": column.unsigned, "charset": column.charset,
                     "enum_values": column.enum_values, "set_values": column.set_values}
                    for key, column in zip(keys, table_map.columns)],
        "primary_key": primary,
    }


def _schema_names(schema, database: str, table: str) -> list[str]:
    try:
        columns = schema.columns(database, table)
    except (KeyError, LookupError):
        return []
    return [getattr(c, "name", c) for c in columns or ()]


def _schema_primary_key(schema, database: str, table: str) -> list[str]:
    try:
        key = schema.primary_key(database, table)
    except (KeyError, LookupError):
        return []
    return [getattr(c, "name", c) for c in key or ()]


def qualified(database: str, table: str) -> str:
    return f"{database}.{table}"


def find_layouts(splits: Iterable[Split], *, schema=None, wanted=None,
                 scans: dict | None = None) -> dict[str, tuple]:
    """{"db.table": ((file_seq, pos), layout)} of the last table map of each
    table in `splits`; `wanted(db, table)` filters, `scans` maps a split to a
    scan already made of it."""
    found: dict[str, tuple] = {}
    for split in splits:
        result = (scans or {}).get(split) or scan(split.path, start=split.start, stop=split.end)
        if result.framing is None:
            continue
        last: dict[tuple, tuple] = {}  # (db, table) -> (body, pos) of the last table map
        bodies: dict[bytes, int] = {}  # body -> position of one copy (to decode it)
        maps = _table_maps_read(split) if is_gzip(split.path) else _table_maps(split.path, result)
        for pos, name, body in maps:
            if wanted is not None and not wanted(*name):
                continue
            last[name] = (body, pos)
            bodies.setdefault(body, pos)
        decoded: dict[bytes, dict] = {}
        for (database, table), (body, pos) in last.items():
            if body not in decoded:
                decoded[body] = _decode_layout(split, bodies[body], schema)
            key = qualified(database, table)
            order = (split.file_seq, pos)
            if key not in found or found[key][0] < order:
                found[key] = (order, decoded[body])
    return found


def _table_maps(path: str, result: ScanResult):
    """(pos, (db, table), body without the table id) of each TABLE_MAP in the scan."""
    framing = result.framing
    width = framing.table_id_width(E.TABLE_MAP_EVENT)
    header = framing.header_length
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        for pos, code in zip(result.positions, result.types):
            if code != E.TABLE_MAP_EVENT:
                continue
            length = int.from_bytes(buf[pos + 9:pos + 13], "little")
            body = pos + header + width  # flags, then db and table names
            db_len = buf[body + 2]
            database = buf[body + 3:body + 3 + db_len]
            at = body + 3 + db_len + 1
            table = buf[at + 1:at + 1 + buf[at]]
            yield pos, (text(database), text(table)), bytes(buf[body:pos + length - framing.checksum_len])


def _table_maps_read(split: Split):
    """The same by decoding: gzipped files cannot be peeked at by offset."""
    for item in read_split(split):
        event = item.event
        if isinstance(event, TableMapEvent):
            yield event.header.pos, (event.database, event.table), event.optional_metadata + repr(
                [event.columns, event.primary_key]).encode()


def _decode_layout(split: Split, pos: int, schema) -> dict:
    for item in read_split(Split(split.path, split.file_seq, pos, pos + 1)):
        if isinstance(item.event, TableMapEvent):
            return layout_of(item.event, schema)
    raise ValueError(f"{split.path}: no table map at {pos}")


def latest_layouts(splits: Iterable[Split], **options) -> dict[str, dict]:
    return {key: layout for key, (_order, layout) in find_layouts(splits, **options).items()}

