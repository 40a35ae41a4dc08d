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
from itertools import chain, repeat
from operator import is_, itemgetter

import pymysql  # noqa: F401 - exported by star-import, as upstream's suite expects

from binlake import core
from binlake.compat.pymysqlreplication.bitmap import BitCount, BitGet  # noqa: F401
from binlake.compat.pymysqlreplication.column import Column
from binlake.compat.pymysqlreplication.constants import BINLOG, FIELD_TYPE, NONE_SOURCE
from binlake.compat.pymysqlreplication.event import BinLogEvent
from binlake.compat.pymysqlreplication.json_binary import pmr_json
from binlake.compat.pymysqlreplication.table import Table
from binlake.read.rows import LazyRowData, native_rows

_COLUMN_NAME_CACHE: dict = {}


def _temporal_none(source):
    """DATE/DATETIME: binlake gives a zero or invalid date as its text; upstream None."""
    def convert(value):
        if isinstance(value, str):
            return None, source
        return value, None
    convert.converts = (str,)   # binlake's MysqlTemporal text is a str
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
    convert.converts = (bytes, bytearray)
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


_BEFORE, _AFTER = itemgetter(0), itemgetter(1)


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
        images = _native_images(self._binlake, plan)
        if images is None:   # binlake's own rows (no native core, a huge event)
            keyed = [(before, after) for before, after in self._binlake.rows()]
            return [self._row(plan, before, after, ignore, False) for before, after in keyed]
        if not plan.whole(self._binlake):   # columns left out of the images
            return [self._row(plan, before, after, ignore, True) for before, after in images]
        return self._rows_whole(plan, images, ignore)

    def _dump(self):
        print(f"Table: {self.schema}.{self.table}")
        print(f"Affected columns: {self.number_of_columns}")
        print(f"Changed rows: {len(self.rows)}")
        print(f"Column Name Information Flag: {self._table.column_name_flag}")

    def _dump_values(self, values: dict, sources: dict, label: str = "") -> None:
        for key, value in values.items():
            suffix = f" ({sources[key]})" if key in sources else ""
            print(f"* {label}{key} : {value}{suffix}")


class _Plan:
    """How a table's rows become upstream's: per column (upstream name,
    binlake key, converter, whether it takes ignore_errors, the value
    classes it converts or None for every value), made once per table map.

    Rows are decoded by binlake's native core straight into dicts keyed by
    upstream's names (a `RowLayout` of the table map with those keys, kept
    with binlake's other per-map data): an image of every column is then
    already upstream's `values`, and only the columns that need it are
    visited, a whole rows event at a time (`_convert_whole`)."""

    __slots__ = ("columns", "names", "getters", "full", "count")

    def __init__(self, table: Table):
        self.columns = []
        for i, column in enumerate(table.columns):
            name = column.name or f"UNKNOWN_COL{i}"
            key = column.name if column.name else f"@{i + 1}"
            convert = _converter(column)
            text = convert is not None and convert.__name__ == "convert" \
                and column.charset_id is not None and column.type in _TEXT_TYPES
            self.columns.append((name, key, convert, text,
                                 getattr(convert, "converts", None)))
        self.names = tuple(c[0] for c in self.columns)
        self.getters = [itemgetter(name) for name in self.names]
        self.count = len(self.columns)
        self.full = (1 << self.count) - 1

    def whole(self, event) -> bool:
        """Whether every image of `event` holds every column of the table."""
        after = event.columns_present_after
        return event.width == self.count and event.columns_present == self.full \
            and (after is None or after == self.full)


_TEXT_TYPES = (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.VAR_STRING, FIELD_TYPE.BLOB)


def _plan(table: Table) -> _Plan:
    plan = table.__dict__.get("_plan")
    if plan is None:
        plan = table.__dict__["_plan"] = _Plan(table)
    return plan


def _native_images(event, plan: _Plan):
    """[(before, after)] of a binlake rows event, decoded by the native core
    with upstream's names as keys; None where binlake's own `rows()` is the
    way (no native core, a huge event read through a window, no table map)."""
    native = core.native()
    data = event.rows_data
    table = event.table
    if native is None or table is None or data.__class__ is LazyRowData \
            or len(table.columns) != plan.count:
        return None
    return native_rows(native, event, data, plan.names)


def _convert_whole(plan: _Plan, images: list, ignore: bool):
    """Convert in place images that hold every column (keyed by upstream's
    names) into upstream's values; their none sources, one dict per image,
    or None when no image has any. A column is visited value by value only
    where its values need it: a NULL in it, or a value of a class its
    converter changes (`converts`, for isinstance; every value without it)."""
    if not images:
        return None
    nulls = any(map(is_, chain.from_iterable(map(dict.values, images)), repeat(None)))
    sources = None
    for (name, _key, convert, text, converts), getter in zip(plan.columns, plan.getters):
        if convert is None:
            if not nulls or not any(map(is_, map(getter, images), repeat(None))):
                continue
        elif converts is not None:
            kinds = set(map(type, map(getter, images)))
            if _NONE_TYPE not in kinds and not any(issubclass(kind, converts) for kind in kinds):
                continue
        for index, value in enumerate(map(getter, images)):
            if value is None:
                if sources is None:
                    sources = [{} for _ in images]
                sources[index][name] = NONE_SOURCE.NULL
            elif convert is not None and (converts is None or isinstance(value, converts)):
                value, source = convert(value, ignore) if text else convert(value)
                images[index][name] = value
                if source is not None:
                    if sources is None:
                        sources = [{} for _ in images]
                    sources[index][name] = source
    return sources


_NONE_TYPE = type(None)


def _values(plan: _Plan, image: dict | None, ignore: bool, by_name: bool) -> tuple[dict, dict]:
    """(values, none_sources) of one row image, every column named (an image
    keyed by upstream's names with `by_name`, else by binlake's keys)."""
    values, sources = {}, {}
    if image is None:
        return values, sources
    missing = _MISSING
    for name, key, convert, text, _converts in plan.columns:
        value = image.get(name if by_name else key, missing)
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


def _rows_of(images: list, sources) -> list:
    if sources is None:
        return [{"values": values, "none_sources": {}} for values in images]
    return [{"values": values, "none_sources": found} for values, found in zip(images, sources)]


class _OneImageRowsEvent(RowsEvent):
    """Rows of one image each (`_image`: 0 the before image, 1 the after):
    each row is {"values": {...}, "none_sources": {...}}."""

    _image = 1

    def _row(self, plan, before, after, ignore, by_name):
        values, sources = _values(plan, (before, after)[self._image], ignore, by_name)
        return {"values": values, "none_sources": sources}

    def _rows_whole(self, plan, pairs, ignore):
        images = list(map(_AFTER if self._image else _BEFORE, pairs))
        return _rows_of(images, _convert_whole(plan, images, ignore))

    def _dump(self):
        super()._dump()
        print("Values:")
        for row in self.rows:
            print("--")
            self._dump_values(row["values"], row["none_sources"])


class WriteRowsEvent(_OneImageRowsEvent):
    """Rows inserted: each row is {"values": {...}, "none_sources": {...}}."""

    _image = 1


class DeleteRowsEvent(_OneImageRowsEvent):
    """Rows deleted: each row is {"values": {...}, "none_sources": {...}}."""

    _image = 0


class UpdateRowsEvent(RowsEvent):
    """Rows changed: {"before_values", "after_values"} and their none sources."""

    def _row(self, plan, before, after, ignore, by_name):
        before_values, before_sources = _values(plan, before, ignore, by_name)
        after_values, after_sources = _values(plan, after, ignore, by_name)
        return {"before_values": before_values, "before_none_sources": before_sources,
                "after_values": after_values, "after_none_sources": after_sources}

    def _rows_whole(self, plan, pairs, ignore):
        befores, afters = list(map(_BEFORE, pairs)), list(map(_AFTER, pairs))
        before_sources = _convert_whole(plan, befores, ignore)
        after_sources = _convert_whole(plan, afters, ignore)
        return [{"before_values": before, "before_none_sources": before_found or {},
                 "after_values": after, "after_none_sources": after_found or {}}
                for before, after, before_found, after_found
                in zip(befores, afters, before_sources or repeat(None),
                       after_sources or repeat(None))]

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
