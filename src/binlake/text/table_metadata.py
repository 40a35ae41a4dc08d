"""`--print-table-metadata`: a table map's columns and primary key as the
comment lines mysqlbinlog and mariadb-binlog print after it.

Strategy: only what the table map itself logs is printed: its types, their
metadata and null bits, and its optional metadata (binlog_row_metadata
MINIMAL/FULL) read again from the event's raw TLVs with the table map
decoder's own reader, so names and charsets a schema history supplied from
DDL never show here; the types from the map's metadata block, walked as the
peers walk it. Types are named as the peers' get_type_name names them
(lengths in characters: bytes over the charset's longest character; BLOB
by its length bytes; TEXT or BLOB, CHAR or BINARY by the charset), and a
type they cannot name is INVALID_TYPE(n), as theirs.

Rule: each column is what mariadb-binlog's print_columns takes it for, not
what it is: a type it cannot name (VECTOR, MariaDB's compressed VARCHAR
and TEXT/BLOB) takes no metadata bytes, so the columns after it are read
from the wrong ones, and its charset goes to the next column the peer
counts as text (GEOMETRY among them), as the peer prints them.
"""

from __future__ import annotations

from typing import NamedTuple

from binlake.charsets import BINARY_COLLATION, MAX_CHARACTER_BYTES
from binlake.collation_names import COLLATIONS
from binlake.constants import ColumnType as T
from binlake.read.cursor import Cursor
from binlake.read.events.table_map import (_NUMERIC, _ONE_BYTE_META, _TWO_BYTE_META, TableMapEvent,
                                apply_optional_metadata, is_enum_or_set_type)
from binlake.text.rowtext import identifier, pretty_string


_FIXED_NAMES = {
    T.MYSQL_TYPE_LONG: "INT", T.MYSQL_TYPE_TINY: "TINYINT", T.MYSQL_TYPE_SHORT: "SMALLINT",
    T.MYSQL_TYPE_INT24: "MEDIUMINT", T.MYSQL_TYPE_LONGLONG: "BIGINT",
    T.MYSQL_TYPE_FLOAT: "FLOAT", T.MYSQL_TYPE_DOUBLE: "DOUBLE", T.MYSQL_TYPE_NEWDATE: "DATE",
    T.MYSQL_TYPE_DATE: "DATE", T.MYSQL_TYPE_YEAR: "YEAR", T.MYSQL_TYPE_ENUM: "ENUM",
    T.MYSQL_TYPE_SET: "SET",
}
_FRACTIONAL = {T.MYSQL_TYPE_TIMESTAMP2: "TIMESTAMP", T.MYSQL_TYPE_DATETIME2: "DATETIME",
               T.MYSQL_TYPE_TIME2: "TIME"}
_BLOB_NAMES = (None, ("TINYBLOB", "TINYTEXT"), ("BLOB", "TEXT"), ("MEDIUMBLOB", "MEDIUMTEXT"),
               ("LONGBLOB", "LONGTEXT"))
_GEOMETRY_NAMES = ("GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT",
                   "MULTILINESTRING", "MULTIPOLYGON", "GEOMETRYCOLLECTION")
#: Between two columns.
SEPARATOR = ",\n#         "


#: Metadata bytes each type's name takes (get_type_name's steps); types it
#: cannot name take none, so the columns after one are read from the wrong
#: bytes, as the peers read them.
_META_BYTES = {T.MYSQL_TYPE_NEWDECIMAL: 2, T.MYSQL_TYPE_FLOAT: 1, T.MYSQL_TYPE_DOUBLE: 1,
               T.MYSQL_TYPE_BIT: 2, T.MYSQL_TYPE_TIMESTAMP2: 1, T.MYSQL_TYPE_DATETIME2: 1,
               T.MYSQL_TYPE_TIME2: 1, T.MYSQL_TYPE_ENUM: 2, T.MYSQL_TYPE_SET: 2,
               T.MYSQL_TYPE_BLOB: 1, T.MYSQL_TYPE_VARCHAR: 2, T.MYSQL_TYPE_VAR_STRING: 2,
               T.MYSQL_TYPE_STRING: 2, T.MYSQL_TYPE_GEOMETRY: 1}


#: The types mariadb-binlog's is_character_type takes a charset for
#: (log_event_client.cc): GEOMETRY too, no compressed type.
_PEER_CHARACTER = {T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_VARCHAR,
                   T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_GEOMETRY}


class _PeerColumn(NamedTuple):
    """A column as the peer takes it, for `apply_optional_metadata`: `type`
    is the one it resolved walking the metadata block (ENUM and SET found in
    a STRING's first metadata byte)."""

    type: int

    @property
    def real_type(self) -> int:
        return self.type

    @property
    def is_numeric(self) -> bool:
        return self.type in _NUMERIC

    @property
    def is_character(self) -> bool:
        return self.type in _PEER_CHARACTER

    @property
    def is_enum_or_set(self) -> bool:
        return is_enum_or_set_type(self.type)


def _peer_walk(event: TableMapEvent, meta: bytes) -> list[tuple[int, int]]:
    """(type, offset of its metadata) of each column as the peer walks the
    block: a type it cannot name takes no bytes (it has no `_META_BYTES`)."""
    walk, at = [], 0
    for column in event.columns:
        real = column.type
        if real == T.MYSQL_TYPE_STRING and at < len(meta) \
                and meta[at] in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
            real = meta[at]
        walk.append((real, at))
        at += _META_BYTES.get(real, 0)
    return walk


def metadata_bytes(event: TableMapEvent) -> bytes:
    """The table map's per-column metadata block, as the event carries it."""
    out = bytearray()
    for column in event.columns:
        if column.type in _ONE_BYTE_META:
            out.append(column.meta & 0xFF)
        elif column.type in _TWO_BYTE_META:
            out += (column.meta & 0xFFFF).to_bytes(2, "little")
        elif column.type in (T.MYSQL_TYPE_NEWDECIMAL, T.MYSQL_TYPE_BIT, T.MYSQL_TYPE_STRING,
                             T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
            out += bytes([column.meta >> 8 & 0xFF, column.meta & 0xFF])
    return bytes(out)


def type_name(real_type: int, meta: bytes, collation: int | None,
              geometry_type: int) -> str | None:
    """The column type as the peers name it from its metadata bytes `meta`
    (None where they cannot)."""
    charset = COLLATIONS.get(collation) if collation is not None else None
    text = charset is not None and collation != BINARY_COLLATION
    per_char = MAX_CHARACTER_BYTES.get(charset[0], 1) if charset else 1
    first, second = (meta + b"\0\0")[:2]
    if real_type in _FIXED_NAMES:
        return _FIXED_NAMES[real_type]
    if real_type in _FRACTIONAL:
        name = _FRACTIONAL[real_type]
        return f"{name}({first})" if first else name
    if real_type == T.MYSQL_TYPE_NEWDECIMAL:
        return f"DECIMAL({first},{second})"
    if real_type == T.MYSQL_TYPE_BIT:
        return f"BIT({first + second * 8})"
    if real_type == T.MYSQL_TYPE_BLOB:
        if 1 <= first <= 4:
            return _BLOB_NAMES[first][text]
        return f"INVALID_{'TEXT' if text else 'BLOB'}({first})"
    if real_type in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        length = first | second << 8
        return f"VARCHAR({length // per_char})" if text else f"VARBINARY({length})"
    if real_type == T.MYSQL_TYPE_STRING:
        length = (((first & 0x30) ^ 0x30) << 4) | second
        return f"CHAR({length // per_char})" if text else f"BINARY({length})"
    if real_type == T.MYSQL_TYPE_GEOMETRY:
        if geometry_type < len(_GEOMETRY_NAMES):
            return _GEOMETRY_NAMES[geometry_type]
        return f"INVALID_GEOMETRY_TYPE({geometry_type})"
    return None


def table_metadata(event: TableMapEvent) -> str:
    """`# Columns(...)` and, when the map logs one, `# Primary Key(...)`."""
    meta = metadata_bytes(event)
    walk = _peer_walk(event, meta)
    columns = [{"_column": _PeerColumn(real)} for real, _ in walk]
    # (member names as logged: mariadb-binlog prints their bytes, whatever the charset)
    table = apply_optional_metadata(columns, Cursor(event.optional_metadata), lenient=True,
                                    raw_members=True)
    parts = []
    last = len(columns) - 1
    for index, (entry, (real, at), column) in enumerate(zip(columns, walk, event.columns)):
        peer = entry["_column"]
        collation = entry.get("charset") if peer.is_character or peer.is_enum_or_set else None
        out = []
        if entry.get("name") is not None:
            out.append(identifier(entry["name"]) + " ")
        name = type_name(real, meta[at:at + 2], collation, entry.get("geometry_type") or 0)
        if name is None:
            parts.append("".join(out) + f"INVALID_TYPE({real})")
            continue  # as the peers: no separator after it
        out.append(name)
        if real in _NUMERIC and entry.get("unsigned"):
            out.append(" UNSIGNED")
        if not column.nullable:
            out.append(" NOT NULL")
        values = entry.get("enum_values") if real == T.MYSQL_TYPE_ENUM else \
            entry.get("set_values") if real == T.MYSQL_TYPE_SET else None
        if values is not None:
            out.append("(" + ",".join(pretty_string(v) for v in values) + ")")
        charset = COLLATIONS.get(collation) if collation is not None else None
        if charset is not None and (is_enum_or_set_type(real) or collation != BINARY_COLLATION):
            out.append(f" CHARSET {charset[0]} COLLATE {charset[1]}")
        parts.append("".join(out) + (SEPARATOR if index != last else ""))
    lines = "# Columns(" + "".join(parts) + ")\n"
    key = table.get("primary_key") or ()
    if key:
        names = [entry.get("name") for entry in columns if entry.get("name") is not None]
        listed = ", ".join((names[i] if i < len(names) else str(i))
                           + (f"({prefix})" if prefix else "") for i, prefix in key)
        lines += f"# Primary Key({listed})\n"
    return lines
