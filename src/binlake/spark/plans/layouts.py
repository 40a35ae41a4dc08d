"""Table layouts (column keys, types, primary key) from the table maps, on the driver.

Strategy: the header scan lists the TABLE_MAP events; the database and
table names are peeked from their bodies, identical bodies (the same table
map repeated in every transaction) are decoded once, and the layout of each
table is that of its last table map in commit order. A layout is plain
JSON-ready data, so the pipeline keeps it in its manifest for later runs.

Column keys are the names the file carries (binlog_row_metadata=FULL), else
the names the schema history gives there (binlake.schema.history), else `@1`, ...
"""

from __future__ import annotations

import mmap
from typing import Iterable

from binlake.charsets import BINARY_COLLATION, collation_of
from binlake.constants import ColumnType as T, EventType as E
from binlake.schema.ddl import TEXT_TYPES
from binlake.read.cursor import text
from binlake.read.events import TableMapEvent
from binlake.read.scan import ScanResult, scan
from binlake.read.gzipped import is_gzip
from binlake.spark.plans.conversions import BYTES, LENGTH
from binlake.spark.read.ranges import Split, read_split


def layout_of(table_map: TableMapEvent) -> dict:
    keys = [column.key for column in table_map.columns]
    return {
        "database": table_map.database,
        "table": table_map.table,
        "columns": [{"key": key, "type": int(column.real_type), "meta": column.meta,
                     "unsigned": column.unsigned, "charset": column.charset,
                     "enum_values": column.enum_values, "set_values": column.set_values}
                    for key, column in zip(keys, table_map.columns)],
        "primary_key": [keys[index] for index, _prefix in table_map.primary_key
                        if index < len(keys)],
    }


#: DDL type -> binlog column type, for columns no table map has typed yet.
_DDL_TYPES = {
    "TINYINT": T.MYSQL_TYPE_TINY, "SMALLINT": T.MYSQL_TYPE_SHORT, "MEDIUMINT": T.MYSQL_TYPE_INT24,
    "INT": T.MYSQL_TYPE_LONG, "BIGINT": T.MYSQL_TYPE_LONGLONG, "FLOAT": T.MYSQL_TYPE_FLOAT,
    "DOUBLE": T.MYSQL_TYPE_DOUBLE, "DECIMAL": T.MYSQL_TYPE_NEWDECIMAL, "DATE": T.MYSQL_TYPE_DATE,
    "TIME": T.MYSQL_TYPE_TIME2, "DATETIME": T.MYSQL_TYPE_DATETIME2,
    "TIMESTAMP": T.MYSQL_TYPE_TIMESTAMP2, "YEAR": T.MYSQL_TYPE_YEAR, "BIT": T.MYSQL_TYPE_BIT,
    "ENUM": T.MYSQL_TYPE_ENUM, "SET": T.MYSQL_TYPE_SET, "JSON": T.MYSQL_TYPE_JSON,
    "BINARY": T.MYSQL_TYPE_STRING, "VARBINARY": T.MYSQL_TYPE_VARCHAR,
    "CHAR": T.MYSQL_TYPE_STRING, "VARCHAR": T.MYSQL_TYPE_VARCHAR,
}


def ddl_layout_column(spec) -> dict:
    """A layout column (as `layout_of` makes them) from a column definition."""
    kind = _DDL_TYPES.get(spec.type)
    meta, charset, members = 0, None, None
    if kind is None:
        kind = T.MYSQL_TYPE_BLOB if spec.type.endswith(("TEXT", "BLOB")) else T.MYSQL_TYPE_GEOMETRY
    if kind == T.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = (tuple(int(a) for a in spec.args) + (10, 0))[:2] if spec.args else (10, 0)
        meta = precision << 8 | scale
    elif kind in (T.MYSQL_TYPE_TIME2, T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2):
        meta = spec.fsp
    elif kind == T.MYSQL_TYPE_BIT:
        bits = int(spec.args[0]) if spec.args else 1
        meta = (bits % 8) << 8 | bits // 8
    elif kind in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
        members = [str(a) for a in spec.args]
    if spec.type in TEXT_TYPES:
        charset = collation_of(spec.charset) if spec.charset else None
    elif kind in (T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_BLOB):
        charset = BINARY_COLLATION
    return {"key": spec.name, "type": int(kind), "meta": meta, "unsigned": spec.unsigned,
            "charset": charset, "enum_values": members if kind == T.MYSQL_TYPE_ENUM else None,
            "set_values": members if kind == T.MYSQL_TYPE_SET else None, **ddl_length(spec)}


#: The bytes a TEXT or BLOB type holds at most.
_TEXT_BYTES = {"TINY": 255, "": 65535, "MEDIUM": 16777215, "LONG": 4294967295}


def ddl_length(spec) -> dict:
    """What the DDL says of how much a text column holds, which a table map
    does not say in characters ({LENGTH: characters} of a CHAR or VARCHAR,
    {BYTES: bytes} of a TEXT or BLOB type; {} for others): a type change
    cuts values to it (binlake.spark.plans.conversions)."""
    if spec.type in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return {LENGTH: int(spec.args[0]) if spec.args else 1}
    for size in ("TINY", "MEDIUM", "LONG", ""):
        if spec.type in (size + "TEXT", size + "BLOB"):
            return {BYTES: _TEXT_BYTES[size]}
    return {}


def qualified(database: str, table: str) -> str:
    return f"{database}.{table}"


def find_layouts(splits: Iterable[Split], *, history=None, wanted=None,
                 scans: dict | None = None) -> dict[str, tuple]:
    """{"db.table": ((file_seq, pos), layout)} of the last table map of each
    table in `splits`, completed by the schema history as it was there;
    `wanted(db, table)` filters, `scans` maps a split to a scan already made
    of it."""
    found: dict[str, tuple] = {}
    for split in splits:
        if is_gzip(split.path):  # no offsets to peek at: decode it all
            last = _last_table_maps_decoded(split, wanted)
        else:
            result = (scans or {}).get(split) or scan(split.path, start=split.start, stop=split.end)
            last = _last_table_maps_peeked(split, result, wanted)
        for (database, table), (pos, table_map) in last.items():
            key, order = qualified(database, table), (split.file_seq, pos)
            if key not in found or found[key][0] < order:
                if history is not None:
                    table_map = history.at((split.file, pos), table).annotate(table_map)
                found[key] = (order, layout_of(table_map))
    return found


def _last_table_maps_peeked(split: Split, result: ScanResult, wanted) -> dict:
    """{(db, table): (pos, TableMapEvent)}: names peeked at, and each distinct
    table map body (the server repeats one per transaction) decoded once."""
    if result.framing is None:
        return {}
    last: dict[tuple, tuple] = {}  # (db, table) -> (pos, body) of its last table map
    first_copy: dict[bytes, int] = {}  # body -> where one copy of it is
    for pos, name, body in _table_maps(split.path, result):
        if wanted is None or wanted(*name):
            last[name] = (pos, body)
            first_copy.setdefault(body, pos)
    decoded: dict[bytes, TableMapEvent] = {}
    out = {}
    for name, (pos, body) in last.items():
        if body not in decoded:
            decoded[body] = _read_table_map(split, first_copy[body])
        out[name] = (pos, decoded[body])
    return out


def _last_table_maps_decoded(split: Split, wanted) -> dict:
    last = {}
    for item in read_split(split, schema=False):
        event = item.event
        if isinstance(event, TableMapEvent) and (wanted is None or wanted(event.database, event.table)):
            last[(event.database, event.table)] = (event.header.pos, event)
    return last


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


def _read_table_map(split: Split, pos: int) -> TableMapEvent:
    for item in read_split(Split(split.path, split.file_seq, pos, pos + 1), schema=False):
        if isinstance(item.event, TableMapEvent):
            return item.event
    raise ValueError(f"{split.path}: no table map at {pos}")


def latest_layouts(splits: Iterable[Split], **options) -> dict[str, dict]:
    return {key: layout for key, (_order, layout) in find_layouts(splits, **options).items()}

