"""A table map's column as python-mysql-replication describes it.

Strategy: built from binlake's decoded `Column` (type, packed metadata,
optional metadata), never from bytes: the metadata int is unpacked into
the attributes python-mysql-replication has per type (max_length, fsp,
precision/decimals, bits/bytes, length_size, size of ENUM/SET).
"""

from __future__ import annotations

from binlake.compat.pymysqlreplication.constants import FIELD_TYPE
from binlake.compat.pymysqlreplication.constants.CHARSET import charset_by_id

_BINARY = 63


class Fields:
    """Upstream's Column and Table: their public attributes are their
    `data`, by which they compare and serialize."""

    @property
    def data(self):
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def __eq__(self, other):
        return self.data == other.data

    def __ne__(self, other):
        return not self.__eq__(other)

    def serializable_data(self):
        return self.data


class Column(Fields):
    """Definition of a column (attributes as python-mysql-replication sets them)."""

    def __init__(self, *args, **kwargs):
        if len(args) == 2:
            self.__dict__.update(_base(args[0]))
        else:
            self.__dict__.update(kwargs)

    @classmethod
    def from_binlake(cls, column, dbms: str) -> "Column":
        """From binlake's table-map column (binlake.read.events.table_map.Column)."""
        real = column.real_type
        data = _base(real if real in (FIELD_TYPE.ENUM, FIELD_TYPE.SET) else column.type)
        data.update(_meta(data["type"], column.type, column.meta))
        data["name"] = column.name
        data["unsigned"] = bool(column.unsigned)
        data["is_primary"] = bool(column.primary_key)
        data["visibility"] = bool(column.visible)
        if column.enum_values is not None:
            data["enum_values"] = [""] + [_text(v) for v in column.enum_values]
        if column.set_values is not None:
            data["set_values"] = [_text(v) for v in column.set_values]
        if column.charset is not None:
            charset = charset_by_id(column.charset, dbms)
            data["charset_id"] = column.charset
            if charset is not None:
                data["character_set_name"] = charset.encoding
                data["collation_name"] = charset.collation
        return cls(**data)



def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _base(column_type: int) -> dict:
    return {"type": column_type, "name": None, "unsigned": False, "is_primary": False,
            "charset_id": None, "character_set_name": None, "collation_name": None,
            "enum_values": None, "set_values": None, "visibility": False}


def _meta(pmr_type: int, wire_type: int, meta: int) -> dict:
    """binlake packs 2-byte metadata first byte high: the per-type fields."""
    T = FIELD_TYPE
    if pmr_type == T.VARCHAR:
        return {"max_length": meta}
    if pmr_type in (T.DOUBLE, T.FLOAT):
        return {"size": meta}
    if pmr_type in (T.TIMESTAMP2, T.DATETIME2, T.TIME2):
        return {"fsp": meta}
    if pmr_type in (T.ENUM, T.SET):
        return {"size": meta & 0xFF}
    if pmr_type in (T.VAR_STRING, T.STRING):
        return {"max_length": (((meta >> 4) & 0x300) ^ 0x300) + (meta & 0xFF)}
    if pmr_type in (T.BLOB, T.GEOMETRY, T.JSON):
        return {"length_size": meta}
    if pmr_type == T.NEWDECIMAL:
        return {"precision": meta >> 8, "decimals": meta & 0xFF}
    if pmr_type == T.BIT:
        bits = (meta & 0xFF) * 8 + (meta >> 8)   # (bits mod 8, whole bytes)
        return {"bits": bits, "bytes": (bits + 7) // 8}
    return {}
