"""What the server makes of a column's values when ALTER TABLE changes its type.

Strategy: one rule, on exact text. `server_value` takes the text of a value
as its old column held it (the binlog's exact text, or the text of the
value a Delta table holds: Spark's cast to string, or `text_of` in the
driver) and gives the exact text of what the server converted it to; the
new column's typing (binlake.spark.rules.typed_arrow) does the rest, value
by value (typed_arrow.converted), in the driver or in Spark's tasks alike.

The conversions, as MariaDB 10.11 makes them under a lax sql_mode (a strict
one refuses an ALTER that would lose a value, and then they change
nothing); tests/spark/test_conversions.py holds the server's answers:
  number -> integer, DECIMAL   rounded half away from zero, clipped to the type's range
  DOUBLE, FLOAT -> integer     rounded half to even (rint), clipped
  DOUBLE -> DECIMAL            its shortest text rounded half away from zero, clipped
  number -> DOUBLE, FLOAT -> DOUBLE   the nearest double (FLOAT's value widened)
  text -> integer              the leading integer ('12.7' 12, '-3.5' -3, 'abc' 0), clipped
  text -> DECIMAL, DOUBLE      the leading number, rounded, clipped
  number, text -> CHAR, VARCHAR, TEXT   the text cut to the new length
                               (characters; TEXT types: bytes); CHAR drops trailing spaces
  DATE -> DATETIME             at midnight
  ENUM, SET, text -> ENUM, SET by the members' names (case aside), the new
                               list's order; a name it lacks: '' (ENUM), dropped (SET)
  a CHAR, VARCHAR made shorter cut as above (a MODIFY with a shorter length
                               is a conversion, binlake.spark.plans.history)
Any other change of type (TIMESTAMP to DATETIME: the server used the
ALTER's session time zone, which the binlog does not keep; DOUBLE to text:
its formatting follows the new length) is `unconverted`: the run is
refused in one line before any table is changed (`refusal_of_plan`).
"""

from __future__ import annotations

import datetime as dt
import re
import struct
import sys
from decimal import ROUND_HALF_UP, Context, Decimal

from binlake.charsets import BINARY_COLLATION
from binlake.constants import ColumnType as T
from binlake.spark.plans.refusals import READ_ANEW, forward, named

INTEGER_BITS = {T.MYSQL_TYPE_TINY: 8, T.MYSQL_TYPE_SHORT: 16, T.MYSQL_TYPE_INT24: 24,
                T.MYSQL_TYPE_LONG: 32, T.MYSQL_TYPE_LONGLONG: 64}
BLOBS = {T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB,
         T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_BLOB_COMPRESSED}
STRINGS = {T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_STRING,
           T.MYSQL_TYPE_VARCHAR_COMPRESSED}
#: Layout column keys (binlake.spark.plans.layouts) a DDL gives: a CHAR's or
#: VARCHAR's length in characters, a TEXT type's in bytes.
LENGTH, BYTES = "length", "bytes"

_F32 = struct.Struct("<f")
#: Wide enough for any DECIMAL (65 digits) and any leading number's digits.
_WIDE = Context(prec=200)
_SPACE = "[ \t\n\r\v\f]*"
_LEADING_INTEGER = re.compile(_SPACE + r"([+-]?\d+)")
_LEADING_NUMBER = re.compile(_SPACE + r"([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)")


def family(column: dict, unsaid: str = "binary") -> str:
    """What a column's values are, as a conversion takes them; a text
    column whose character set is not said is `unsaid` (a table map's: its
    values are held as bytes; a DDL's, the old column of a type change:
    text in the table's default character set)."""
    kind = column["type"]
    if kind in INTEGER_BITS:
        return "integer"
    if kind in STRINGS or kind in BLOBS:
        charset = column.get("charset")
        return unsaid if charset is None else "binary" if charset == BINARY_COLLATION else "text"
    return _FAMILIES.get(kind, f"type {int(kind)}")


_FAMILIES = {T.MYSQL_TYPE_NEWDECIMAL: "decimal", T.MYSQL_TYPE_YEAR: "year",
             T.MYSQL_TYPE_FLOAT: "float", T.MYSQL_TYPE_DOUBLE: "double",
             T.MYSQL_TYPE_DATE: "date", T.MYSQL_TYPE_NEWDATE: "date",
             T.MYSQL_TYPE_DATETIME: "datetime", T.MYSQL_TYPE_DATETIME2: "datetime",
             T.MYSQL_TYPE_TIMESTAMP: "timestamp", T.MYSQL_TYPE_TIMESTAMP2: "timestamp",
             T.MYSQL_TYPE_ENUM: "enum", T.MYSQL_TYPE_SET: "set"}
_NUMBERS = ("integer", "decimal", "year")


def server_value(text: str | None, was: dict, column: dict) -> str | None:
    """The exact text of what the server made of a value of text `text`
    (NULL: None) when ALTER TABLE changed its column from the layout column
    `was` to `column`, under a lax sql_mode; `unconverted` says which
    changes this computes."""
    if text is None:
        return None
    return _RULES[family(was, "text"), family(column)](text, was, column)


def unconverted(was: dict, column: dict) -> str | None:
    """Why binlake cannot give a value what the server made of it when its
    column changed from `was` to `column` (None: `server_value` does)."""
    old, new = family(was, "text"), family(column)
    if (old, new) == ("timestamp", "datetime") or (old, new) == ("datetime", "timestamp") \
            or (old, new) == ("date", "timestamp"):
        return (f"a {old.upper()} column made a {new.upper()}: the server converted its "
                "values in the ALTER's session time zone, which the binlog does not keep")
    if (old, new) not in _RULES:
        return f"a {old} column made a {new}: binlake does not convert its values as the server does"
    if new in ("text", "binary") and _length_of(column) is None:
        return f"a {old} column made a {new} of unknown length (no DDL said it)"
    if new in ("enum", "set") and column.get(f"{new}_values") is None:
        return f"a {old} column made an {new.upper()} whose members no DDL said"
    if (old, new) == ("binary", "binary") and not _fits(was, column):
        return "a binary column made shorter: binlake does not cut its values as the server does"
    return None


def fraction_text(text: str, digits: int) -> str:
    """A time's exact text with `digits` fractional digits, as a MODIFY to
    another fractional precision left it (MariaDB truncates; more digits
    are zeros)."""
    whole, _, fraction = text.partition(".")
    return whole if digits == 0 else f"{whole}.{fraction[:digits].ljust(digits, '0')}"


def refusal_of_plan(plan: dict) -> str | None:
    """Why a table's values cannot be carried through the type changes its
    history holds (`unconverted`, the first), or None."""
    columns = plan["layout"]["columns"]
    for stretch in plan["stretches"]:
        for was, column in zip(stretch.get("was") or (), columns):
            reason = was is not None and unconverted(was, column)
            if reason:
                name = column["key"].replace("`", "``")
                table = f"{plan['database']}.{plan['table']}"
                # Read anew, the table's plan starts at its chunk, after the
                # change (binlake.spark.state.starts.starting_anew).
                return named(f"{table}: column `{name}`: {reason}" + forward(READ_ANEW), table)
    return None


def text_of(value) -> str | None:
    """A value as the driver holds it (a Python value of its Arrow column),
    as text `server_value` takes."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, (list, tuple)):  # a SET's members, as the binlog's text joins them
        return ",".join(map(str, value))
    return str(value)


def type_bounds(column: dict) -> tuple[Decimal, Decimal]:
    """The least and greatest values of an integer or DECIMAL column."""
    kind = column["type"]
    if kind in INTEGER_BITS:
        bits = INTEGER_BITS[kind]
        if column["unsigned"]:
            return Decimal(0), Decimal((1 << bits) - 1)
        return Decimal(-(1 << (bits - 1))), Decimal((1 << (bits - 1)) - 1)
    precision, scale = column["meta"] >> 8, column["meta"] & 0xFF
    top = Decimal("9" * precision).scaleb(-scale)
    return (Decimal(0) if column["unsigned"] else -top), top


def midnight(column: dict) -> str:
    """What a DATE's text gains as a DATETIME's: its time, with as many
    fractional digits as the column has ("0000-00-00" too: the server's)."""
    digits = column["meta"] if column["type"] == T.MYSQL_TYPE_DATETIME2 else 0
    return " 00:00:00" + ("." + "0" * digits if digits else "")


def _scale(column: dict) -> int:
    return column["meta"] & 0xFF if column["type"] == T.MYSQL_TYPE_NEWDECIMAL else 0


def _clipped(number: Decimal, column: dict) -> str:
    """`number` clipped to the column's range, then rounded half away from
    zero to its scale (a bound is at that scale: rounding keeps it inside)."""
    low, high = type_bounds(column)
    number = min(max(number, low), high)
    scale = _scale(column)
    return format(number.quantize(Decimal(1).scaleb(-scale), ROUND_HALF_UP, _WIDE), "f")


def _widened(text: str, was: dict) -> float:
    """A FLOAT's or DOUBLE's value as a double (a FLOAT's text is the
    shortest that gives back its 4-byte value)."""
    value = float(text)
    return _F32.unpack(_F32.pack(value))[0] if was["type"] == T.MYSQL_TYPE_FLOAT else value


def _double_text(value: float) -> str:
    """A double's text, clipped to the greatest finite ones (the server's
    strtod of '1e400')."""
    return repr(max(min(value, sys.float_info.max), -sys.float_info.max))


def _leading(pattern: re.Pattern, text: str) -> str:
    """The number a text starts with (after spaces), '0' where none."""
    found = pattern.match(text)
    return found.group(1) if found else "0"


def _number(text: str, was: dict) -> Decimal:
    """An integer's, DECIMAL's or YEAR's text (Spark's text of a DECIMAL
    may be in E notation) at the column's scale."""
    return Decimal(text).quantize(Decimal(1).scaleb(-_scale(was)), context=_WIDE)


def _length_of(column: dict) -> int | None:
    """The most a text column holds (characters; bytes for TEXT types), or
    None where no DDL said it."""
    if column["type"] in STRINGS:
        return column.get(LENGTH)
    # A table map's BLOB meta is its length's size in bytes: TINYTEXT 1 ... LONGTEXT 4.
    return column.get(BYTES) or {1: 255, 2: 65535, 3: 16777215, 4: 4294967295}.get(column["meta"])


def _fits(was: dict, column: dict) -> bool:
    old, new = _length_of(was), _length_of(column)
    return old is not None and new is not None and old <= new \
        and (was["type"] in STRINGS) == (column["type"] in STRINGS)


def _cut(text: str, column: dict) -> str:
    """`text` as a text column of `column`'s length holds it (CHAR: without
    trailing spaces, as the server hands CHAR values out)."""
    most = _length_of(column)
    if column["type"] in STRINGS:
        text = text[:most]
    else:  # TEXT types count bytes: cut at a whole character
        text = text.encode()[:most].decode(errors="ignore")
    return text.rstrip(" ") if column["type"] == T.MYSQL_TYPE_STRING else text


def _member(text: str, column: dict) -> str | None:
    """The ENUM or SET member of `column` a text names: itself, else one
    spelled so but for case (the server compares under the column's
    collation, case-insensitive by default, and keeps the new spelling)."""
    members = column.get("enum_values") or column.get("set_values") or []
    if text in members:
        return text
    return next((m for m in members if m.casefold() == text.casefold()), None)


def _as_enum(text: str, was: dict, column: dict) -> str:
    """An ENUM value by name: a member of the new list, else the error
    value '' (a lax sql_mode; a strict one refused the ALTER)."""
    return _member(text, column) or ""


def _as_set(text: str, was: dict, column: dict) -> str:
    """A SET value by its members' names: those the new list has, in its
    order; the others dropped (a lax sql_mode)."""
    named = {_member(part, column) for part in text.split(",")} if text else set()
    return ",".join(m for m in column["set_values"] if m in named)


def _number_as_text(text: str, was: dict, column: dict) -> str:
    return _cut(format(_number(text, was), "f"), column)


_RULES = {
    **{(old, new): lambda text, was, column: _clipped(_number(text, was), column)
       for old in _NUMBERS for new in ("integer", "decimal")},
    **{(old, "double"): lambda text, was, column: _double_text(float(_number(text, was)))
       for old in _NUMBERS},
    **{(old, "text"): _number_as_text for old in _NUMBERS},
    # rint: half to even (2.5 is 2, 3.5 is 4)
    **{(old, "integer"): lambda text, was, column: _clipped(Decimal(round(_widened(text, was))),
                                                            column)
       for old in ("float", "double")},
    ("double", "decimal"): lambda text, was, column: _clipped(Decimal(repr(float(text))), column),
    ("float", "double"): lambda text, was, column: repr(_widened(text, was)),
    ("text", "integer"): lambda text, was, column: _clipped(
        Decimal(_leading(_LEADING_INTEGER, text)), column),
    ("text", "decimal"): lambda text, was, column: _clipped(
        Decimal(_leading(_LEADING_NUMBER, text)), column),
    ("text", "double"): lambda text, was, column: _double_text(
        float(_leading(_LEADING_NUMBER, text))),
    ("text", "text"): lambda text, was, column: _cut(text, column),
    ("binary", "binary"): lambda text, was, column: text,  # only where it fits (`unconverted`)
    ("date", "datetime"): lambda text, was, column: text[:10] + midnight(column),
    # by the members' names (MariaDB 10.11: ENUM('a','b','c','D') made
    # ENUM('c','a','d'): 'b' '', 'D' 'd'; SET('x','y','z') made SET('z','x'):
    # 'x,y' 'x', 'x,z' 'z,x')
    **{(old, "enum"): _as_enum for old in ("enum", "text")},
    **{(old, "set"): _as_set for old in ("set", "text")},
    **{(old, "text"): lambda text, was, column: _cut(text, column) for old in ("enum", "set")},
}
