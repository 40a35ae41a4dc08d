"""Row values as exact text, for the `before`/`after` maps of the changes view.

Strategy: one text function per table-map column, built once and cached on
the table map, so a row costs one call per non-NULL value. The text is
lossless and reads back with a plain cast (binlake.spark.plans.typed does that):

  integers, BIT, YEAR  decimal digits            DECIMAL  plain digits, the column's scale
  DOUBLE               shortest repr (round-trips)  FLOAT  shortest text that round-trips
                                                           through a 4-byte float
  DATE                 YYYY-MM-DD                DATETIME  YYYY-MM-DD HH:MM:SS[.fsp digits]
  TIMESTAMP            as DATETIME, in UTC       TIME      [-]HH:MM:SS[.fsp digits]
  zero/invalid dates   MySQL's text ('0000-00-00')
  ENUM                 member name (index without metadata)
  SET                  members in definition order, comma-separated (bitmask without metadata)
  bytes                base64 (BLOB, BINARY, GEOMETRY, INET6/UUID, text of unknown charset)
  JSON, text           as is                     VECTOR    JSON array

Everything else goes through binlake.text.jsonable and becomes JSON text (a
partial JSON update whose before image lacks the document: its diffs).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from decimal import Decimal

from binlake.constants import ColumnType as T
from binlake.text.jsonable import to_jsonable

_TEXT_CACHE = "binlake.spark.read.exact"
_F32 = struct.Struct("<f")


def value_text(value) -> str | None:
    """Exact text of a decoded value, by its Python type (no column facts)."""
    if value is None:
        return None
    kind = type(value)
    if kind is str or isinstance(value, str):  # MysqlTemporal is a str too
        return str(value)
    if kind is int or kind is bool:
        return str(int(value))
    if kind is Decimal:
        return decimal_text(value)
    if kind is float:
        return repr(value)
    if kind is bytes or isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        return datetime_text(value, 6 if value.microsecond else 0)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return time_text(value, 6 if value.microseconds else 0)
    if isinstance(value, (frozenset, set)):
        return ",".join(sorted(value))
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def decimal_text(value: Decimal) -> str:
    text = str(value)  # plain digits, except tiny values: 1E-9
    return text if "E" not in text else format(value, "f")


def datetime_text(value: dt.datetime, fsp: int) -> str:
    if value.tzinfo is not None and value.utcoffset():
        value = value.astimezone(dt.timezone.utc)
    # isoformat (C) writes a fixed-width date and time; the offset, if any, comes after.
    return value.isoformat(" ", "microseconds")[:20 + fsp if fsp else 19]


def time_text(value: dt.timedelta, fsp: int) -> str:
    """MySQL TIME text: -838:59:59.999999 .. 838:59:59.999999."""
    micro = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micro < 0 else ""
    seconds, frac = divmod(abs(micro), 1_000_000)
    return (f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
            + _fraction(frac, fsp))


def _fraction(micro: int, fsp: int) -> str:
    return "." + f"{micro:06d}"[:fsp] if fsp else ""


def float32_text(value: float) -> str:
    """The shortest decimal text that reads back as the same 4-byte float."""
    for digits in range(6, 10):
        text = f"{value:.{digits}g}"
        try:
            if _F32.unpack(_F32.pack(float(text)))[0] == value:
                return text
        except OverflowError:
            continue
    return repr(value)


_INTEGERS = {T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_INT24, T.MYSQL_TYPE_LONG,
             T.MYSQL_TYPE_LONGLONG, T.MYSQL_TYPE_YEAR, T.MYSQL_TYPE_BIT}
_TEXTS = {T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_STRING,
          T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB,
          T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_JSON, T.MYSQL_TYPE_VARCHAR_COMPRESSED,
          T.MYSQL_TYPE_BLOB_COMPRESSED}


def column_text(column):
    """The text function of one table-map column (hot: one call per value)."""
    kind = column.real_type
    if kind in _INTEGERS:
        return str  # always ints
    if kind in _TEXTS:
        return _text
    if kind == T.MYSQL_TYPE_NEWDECIMAL:
        return decimal_text
    if kind in (T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIMESTAMP2, T.MYSQL_TYPE_TIME2,
                T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_TIME):
        return _temporal(column.meta)  # the plain types: 0, or a MariaDB hires fsp
    if kind == T.MYSQL_TYPE_FLOAT:
        return lambda v: float32_text(v) if type(v) is float else value_text(v)
    if kind == T.MYSQL_TYPE_SET and column.set_values:
        order = {name: i for i, name in enumerate(column.set_values)}

        def set_text(v):
            if isinstance(v, (frozenset, set)):
                return ",".join(sorted(v, key=lambda name: order.get(name, len(order))))
            return value_text(v)
        return set_text
    return value_text


def _text(value) -> str:
    """Character columns: str, or bytes when binary or not valid in the charset."""
    return value if type(value) is str else value_text(value)


def _temporal(fsp: int):
    def text(v):
        if isinstance(v, dt.datetime):
            return datetime_text(v, fsp)
        if isinstance(v, dt.timedelta):
            return time_text(v, fsp)
        return value_text(v)
    return text


def row_texts(table) -> dict:
    """{column key: text function} of a table map, cached on it."""
    return _texts(table)[0]


def column_texts(table) -> tuple:
    """The text functions of every column, in column order (a full row image's order)."""
    return _texts(table)[1]


def _texts(table) -> tuple:
    texts = table.cache.get(_TEXT_CACHE)
    if texts is None:
        functions = tuple(column_text(column) for column in table.columns)
        texts = ({column.key: f for column, f in zip(table.columns, functions)}, functions)
        table.cache[_TEXT_CACHE] = texts
    return texts


def text_row(row: dict | None, texts: dict) -> dict | None:
    if row is None:
        return None
    return {key: (None if value is None else texts.get(key, value_text)(value))
            for key, value in row.items()}


# -- callbacks of the native Arrow builder (rust/src/sink/arrow.rs) --------------------
# It writes every other value's text itself; these keep the few it cannot
# equal to the functions above.

def json_value_text(raw: bytes) -> str:
    """A MySQL binary JSON value's text."""
    from binlake.read.mysql_json import binary_to_text
    return _text(binary_to_text(raw))


def partial_json_text(diff: bytes, has_before: bool, before: str | None) -> str:
    """A partial JSON update's text: applied to the before image's document
    when the image has the column, else the diffs themselves."""
    from binlake.read.mysql_json import parse_diffs
    value = parse_diffs(diff)
    return _text(value.apply(before) if has_before else value)


def codec_text(raw: bytes, codec: str) -> str | None:
    """Text in a charset without a native decoder; None: not valid in it (base64 then)."""
    try:
        return raw.decode(codec)
    except UnicodeDecodeError:
        return None
