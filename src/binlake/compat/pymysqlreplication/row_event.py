"""Table maps and rows events in python-mysql-replication's shape.

Strategy: binlake decodes the table map and the row images (its native core
when built); this module converts each value, once per column type, into
the Python type python-mysql-replication gives (`_converter`), fills the
columns a row image left out with None, and says why a value is None
(`none_sources`). Rows are converted when `.rows` is first read, as
upstream decodes them then.

Where python-mysql-replication's value is wrong against the server (YEAR
0 as 1900, a zero TIMESTAMP as 1970-01-01, ...), binlake's value (or None
where upstream gives None for what it cannot represent) is given instead:
docs/compat.md lists each case.
"""

from __future__ import annotations

import datetime  # noqa: F401 - upstream's star-import exports it (its suite relies on that)
import decimal  # noqa: F401
import struct  # noqa: F401

import pymysql  # noqa: F401 - exported by star-import, as upstream's suite expects

from binlake.compat.pymysqlreplication.bitmap import BitCount, BitGet  # noqa: F401
from binlake.compat.pymysqlreplication.column import Column
from binlake.compat.pymysqlreplication.constants import BINLOG, FIELD_TYPE, NONE_SOURCE
from binlake.compat.pymysqlreplication.event import BinLogEvent
from binlake.compat.pymysqlreplication.json_binary import pmr_json
from binlake.compat.pymysqlreplication.table import Table

_COLUMN_NAME_CACHE: dict = {}


def _temporal_none(source):
    """DATE/DATETIME: binlake gives a zero or invalid date as its text; upstream None."""
    def convert(value):
        if isinstance(value, str):
            return None, source
        return value, None
    return convert


def _timestamp(value):
    # upstream: naive UTC (utcfromtimestamp); binlake: aware UTC
    if isinstance(value, str):
        return None, NONE_SOURCE.OUT_OF_DATETIME_RANGE   # the zero timestamp
    return value.replace(tzinfo=None), None


def _set(value):
    if not value:
        return None, NONE_SOURCE.EMPTY_SET
    return set(value), None


def _json(value):
    return pmr_json(value), None


def _bits(bits: int):
    def convert(value):
        if isinstance(value, (bytes, bytearray)):
            value = int.from_bytes(value, "big")
        return format(value, f"0{bits}b"), None
    return convert


def _strict_text(column):
    """A character column binlake could not decode gives bytes: upstream
    raises (or drops the bytes with ignore_decode_errors)."""
    def convert(value, ignore_errors=False):
        if isinstance(value, (bytes, bytearray)) and column.character_set_name \
                and column.charset_id not in (63, None):
            return value.decode(column.character_set_name if column.character_set_name != "utf8"
                                else "utf-8", "ignore" if ignore_errors else "strict"), None
        return value, None
    return convert


def _converter(column: Column):
    T = FIELD_TYPE
    t = column.type
    if t in (T.DATE, T.NEWDATE):
        return _temporal_none(NONE_SOURCE.OUT_OF_DATE_RANGE)
    if t == T.DATETIME:
        return _temporal_none(NONE_SOURCE.OUT_OF_DATETIME_RANGE)
    if t == T.DATETIME2:
        return _temporal_none(NONE_SOURCE.OUT_OF_DATETIME2_RANGE)
    if t in (T.TIMESTAMP, T.TIMESTAMP2):
        return _timestamp
    if t == T.SET:
        return _set
    if t == T.JSON:
        return _json
    if t == T.BIT:
        return _bits(column.bits)
    if t in (T.VARCHAR, T.STRING, T.VAR_STRING, T.BLOB) and column.charset_id not in (63, None):
        return _strict_text(column)
    return None


class RowsEvent(BinLogEvent):
    """Base of the rows events: `schema`, `table`, `primary_key`, `columns`, `rows`."""

    def _fill(self, event, ctx):
        self.table_id = event.table_id
        self.flags = event.flags
        self.number_of_columns = event.width
        width = (event.width + 7) // 8
        self.columns_present_bitmap = event.columns_present.to_bytes(width, "little")
        if event.columns_present_after is not None:
            self.columns_present_bitmap2 = event.columns_present_after.to_bytes(width, "little")
        info = event.extra_info
        if "partition_id" in info:
            self.extra_data_type = 1
            self.partition_id = info["partition_id"]
            if "source_partition_id" in info:
                self.source_partition_id = info["source_partition_id"]
        elif "ndb_format" in info:
            self.extra_data_type = 0
            self.nbd_info_format, self.nbd_info = info["ndb_format"], info["ndb_data"]
        table = ctx.table_map.get(event.table_id)
        self._table = table
        self.__rows = None
        if table is not None:
            self.schema, self.table = table.schema, table.table
            self.primary_key = table.data["primary_key"]
            self.columns = table.columns

    @staticmethod
    def _is_null(null_bitmap, position):
        bit = null_bitmap[int(position / 8)]
        if isinstance(bit, str):
            bit = ord(bit)
        return bit & (1 << (position % 8))

    @property
    def rows(self):
        if self.__rows is None:
            self.__rows = self._fetch_rows()
        return self.__rows

    def _fetch_rows(self) -> list:
        table = self._table
        if table is None:
            return []
        plan = _plan(table)
        ignore = self._ignore_decode_errors
        return [self._row(plan, before, after, ignore) for before, after in self._binlake.rows()]

    def _dump(self):
        print(f"Table: {self.schema}.{self.table}")
        print(f"Affected columns: {self.number_of_columns}")
        print(f"Changed rows: {len(self.rows)}")
        print(f"Column Name Information Flag: {self._table.column_name_flag}")

    def _dump_values(self, values: dict, sources: dict, label: str = "") -> None:
        for key, value in values.items():
            suffix = f" ({sources[key]})" if key in sources else ""
            print(f"* {label}{key} : {value}{suffix}")


def _plan(table: Table) -> list:
    """[(upstream name, binlake key, converter, accepts ignore_errors)] per column, cached."""
    plan = table.__dict__.get("_plan")
    if plan is None:
        plan = []
        for i, column in enumerate(table.columns):
            name = column.name or f"UNKNOWN_COL{i}"
            key = column.name if column.name else f"@{i + 1}"
            convert = _converter(column)
            plan.append((name, key, convert, convert is not None
                         and convert.__name__ == "convert" and column.charset_id is not None
                         and column.type in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING,
                                             FIELD_TYPE.VAR_STRING, FIELD_TYPE.BLOB)))
        table.__dict__["_plan"] = plan
    return plan


def _values(plan: list, image: dict | None, ignore: bool) -> tuple[dict, dict]:
    """(values, none_sources) of one row image, every column named."""
    values, sources = {}, {}
    if image is None:
        return values, sources
    missing = _MISSING
    for name, key, convert, text in plan:
        value = image.get(key, missing)
        if value is missing:
            values[name] = None
            sources[name] = NONE_SOURCE.COLS_BITMAP
            continue
        if value is None:
            values[name] = None
            sources[name] = NONE_SOURCE.NULL
            continue
        if convert is not None:
            value, source = convert(value, ignore) if text else convert(value)
            if source is not None:
                sources[name] = source
        values[name] = value
    return values, sources


_MISSING = object()


class WriteRowsEvent(RowsEvent):
    """Rows inserted: each row is {"values": {...}, "none_sources": {...}}."""

    def _row(self, plan, before, after, ignore):
        values, sources = _values(plan, after, ignore)
        return {"values": values, "none_sources": sources}

    def _dump(self):
        super()._dump()
        print("Values:")
        for row in self.rows:
            print("--")
            self._dump_values(row["values"], row["none_sources"])


class DeleteRowsEvent(RowsEvent):
    """Rows deleted: each row is {"values": {...}, "none_sources": {...}}."""

    def _row(self, plan, before, after, ignore):
        values, sources = _values(plan, before, ignore)
        return {"values": values, "none_sources": sources}

    _dump = WriteRowsEvent._dump


class UpdateRowsEvent(RowsEvent):
    """Rows changed: {"before_values", "after_values"} and their none sources."""

    def _row(self, plan, before, after, ignore):
        before_values, before_sources = _values(plan, before, ignore)
        after_values, after_sources = _values(plan, after, ignore)
        return {"before_values": before_values, "before_none_sources": before_sources,
                "after_values": after_values, "after_none_sources": after_sources}

    def _dump(self):
        super()._dump()
        print("Affected columns: ")
        for row in self.rows:
            print("--")
            for key in row["before_values"]:
                print(f"*{key}:{row['before_values'][key]}=>{row['after_values'][key]}")


class PartialUpdateRowsEvent(UpdateRowsEvent):
    """MySQL's partial JSON updates (binlake applies no diff: the after image as sent)."""


class OptionalMetaData:
    """A table map's optional metadata, as upstream lists it (from binlake's columns)."""

    def __init__(self):
        self.unsigned_column_list = []
        self.default_charset_collation = None
        self.charset_collation = {}
        self.column_charset = []
        self.column_name_list = []
        self.set_str_value_list = []
        self.set_enum_str_value_list = []
        self.geometry_type_list = []
        self.simple_primary_key_list = []
        self.primary_keys_with_prefix = {}
        self.enum_and_set_default_charset = None
        self.enum_and_set_charset_collation = {}
        self.enum_and_set_default_column_charset_list = []
        self.charset_collation_list = []
        self.enum_and_set_collation_list = []
        self.visibility_list = []

    def dump(self):
        print("=== Optional Metadata ===")
        for key, value in self.__dict__.items():
            print(f"{key}: {value}")


def _optional_metadata(columns: list) -> OptionalMetaData:
    meta = OptionalMetaData()
    meta.unsigned_column_list = [c.unsigned for c in columns]
    meta.column_name_list = [c.name for c in columns if c.name]
    meta.set_str_value_list = [c.set_values for c in columns if c.set_values is not None]
    meta.set_enum_str_value_list = [c.enum_values[1:] for c in columns
                                    if c.enum_values is not None]
    meta.simple_primary_key_list = [i for i, c in enumerate(columns) if c.is_primary]
    meta.charset_collation_list = [c.charset_id for c in columns if c.charset_id is not None]
    meta.visibility_list = [c.visibility for c in columns]
    return meta


class TableMapEvent(BinLogEvent):
    """A table's id, names and columns, before its rows events."""

    def _fill(self, event, ctx):
        self.table_id = event.table_id
        self.flags = event.flags
        self.schema = event.database
        self.table = event.table
        self.schema_length = len(self.schema.encode())
        self.table_length = len(self.table.encode())
        self.column_count = len(event.columns)
        self.columns = [Column.from_binlake(c, ctx.dbms) for c in event.columns]
        nulls = sum(1 << c.index for c in event.columns if c.nullable)
        self.null_bitmask = nulls.to_bytes((self.column_count + 7) // 8, "little")
        named = bool(self.columns) and all(c.name for c in self.columns)
        self.optional_metadata = _optional_metadata(self.columns)
        self.table_obj = Table(self.table_id, self.schema, self.table, self.columns,
                               column_name_flag=named)

    def get_table(self):
        return self.table_obj

    def _dump(self):
        print(f"Table id: {self.table_id}")
        print(f"Schema: {self.schema}")
        print(f"Table: {self.table}")
        print(f"Columns: {self.column_count}")
        self.optional_metadata.dump()


class RowImageType:
    WriteAI, UpdateBI, UpdateAI, DeleteBI = 0, 1, 2, 3


def fetch_column_names(ctl_connection, schema, table, use_column_name_cache=False,
                       enable_logging=False):
    """Column names from INFORMATION_SCHEMA (upstream's opt-in for MySQL 5.7)."""
    if not use_column_name_cache:
        return []
    key = f"{schema}.{table}"
    if _COLUMN_NAME_CACHE.get(key):
        return _COLUMN_NAME_CACHE[key]
    try:
        cursor = ctl_connection.cursor()
        cursor.execute("SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = %s"
                       " AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (schema, table))
        rows = cursor.fetchall()
        cursor.close()
    except Exception:  # noqa: BLE001 - upstream never fails on it
        return []
    names = [r["COLUMN_NAME"] if isinstance(r, dict) else r[0] for r in rows]
    if names:
        _COLUMN_NAME_CACHE[key] = names
    return names


_ = BINLOG
