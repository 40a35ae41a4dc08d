"""MySQL binary JSON (sql-common/json_binary.cc) and partial-update diffs
(sql/json_diff.cc).

Strategy: `parse_binary` turns the binary document into Python values
(dict/list/str/int/float/bool/None; DECIMAL as Decimal; date/time opaque
values as `JsonOpaque` with MySQL's text); `to_text` prints them the way
MySQL prints a JSON column (`", "` and `": "` separators, keys in stored
order). A partial update is a list of `JsonDiff` that `apply_diffs` applies
to the before image's document.
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass
from decimal import Decimal

from binlake.errors import CorruptEvent
from binlake.read.decimals import decode_decimal

SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY = 0x00, 0x01, 0x02, 0x03
LITERAL, INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE, STRING = range(0x04, 0x0D)
OPAQUE = 0x0F
LITERAL_NULL, LITERAL_TRUE, LITERAL_FALSE = 0, 1, 2

MYSQL_TYPE_DATE, MYSQL_TYPE_TIME, MYSQL_TYPE_DATETIME = 10, 11, 12
MYSQL_TYPE_TIMESTAMP, MYSQL_TYPE_NEWDECIMAL = 7, 246


class JsonError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class JsonOpaque:
    """An opaque JSON scalar: a MySQL type number and its text (dates, times,
    or `base64:typeN:...` for anything else)."""

    field_type: int
    text: str


def _varlen(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(5):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise JsonError("bad variable-length integer")


def _packed_temporal(field_type: int, packed: int) -> str:
    negative = packed < 0
    if negative:
        packed = -packed
    int_part, micro = packed >> 24, packed % (1 << 24)
    frac = f".{micro:06d}" if micro else ""
    if field_type == MYSQL_TYPE_TIME:
        hms = int_part
        text = f"{(hms >> 12) % 1024:02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}{frac}"
        return ("-" if negative else "") + text
    ymd, hms = int_part >> 17, int_part % (1 << 17)
    ym = ymd >> 5
    date = f"{ym // 13:04d}-{ym % 13:02d}-{ymd % 32:02d}"
    if field_type == MYSQL_TYPE_DATE:
        return date
    return f"{date} {hms >> 12:02d}:{(hms >> 6) % 64:02d}:{hms % 64:02d}{frac}"


def _opaque(field_type: int, data: bytes):
    if field_type == MYSQL_TYPE_NEWDECIMAL and len(data) >= 2:
        return decode_decimal(data, 2, data[0], data[1])[0]
    if field_type in (MYSQL_TYPE_DATE, MYSQL_TYPE_TIME, MYSQL_TYPE_DATETIME,
                      MYSQL_TYPE_TIMESTAMP) and len(data) >= 8:
        packed = struct.unpack_from("<q", data)[0]
        return JsonOpaque(field_type, _packed_temporal(field_type, packed))
    return JsonOpaque(field_type, f"base64:type{field_type}:{base64.b64encode(data).decode()}")


def _scalar(kind: int, buf: bytes, pos: int, end: int, budget: list):
    if kind == LITERAL:
        return {LITERAL_NULL: None, LITERAL_TRUE: True, LITERAL_FALSE: False}[buf[pos]]
    if kind == INT16:
        return struct.unpack_from("<h", buf, pos)[0]
    if kind == UINT16:
        return struct.unpack_from("<H", buf, pos)[0]
    if kind == INT32:
        return struct.unpack_from("<i", buf, pos)[0]
    if kind == UINT32:
        return struct.unpack_from("<I", buf, pos)[0]
    if kind == INT64:
        return struct.unpack_from("<q", buf, pos)[0]
    if kind == UINT64:
        return struct.unpack_from("<Q", buf, pos)[0]
    if kind == DOUBLE:
        return struct.unpack_from("<d", buf, pos)[0]
    if kind == STRING:
        n, p = _varlen(buf, pos)
        return buf[p:p + n].decode("utf-8", "surrogateescape")
    if kind == OPAQUE:
        field_type = buf[pos]
        n, p = _varlen(buf, pos + 1)
        return _opaque(field_type, bytes(buf[p:p + n]))
    if kind in (SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY):
        return _container(kind, buf, pos, end, budget)
    raise JsonError(f"unknown JSON value type 0x{kind:02x}")


def _container(kind: int, buf: bytes, base: int, end: int, budget: list):
    large = kind in (LARGE_OBJECT, LARGE_ARRAY)
    unpack = struct.Struct("<I" if large else "<H").unpack_from
    width = 4 if large else 2
    count = unpack(buf, base)[0]
    # Each entry of a document takes bytes of its own; entries that point at
    # one shared value (or back at their container) would make the work grow
    # with the paths through the document, not its size: the entries visited
    # may not outnumber its bytes.
    budget[0] -= count
    if budget[0] < 0:
        raise JsonError("JSON containers refer to more values than the document has bytes")
    size = unpack(buf, base + width)[0]
    if base + size > end:
        raise JsonError("JSON container longer than its value")
    is_object = kind in (SMALL_OBJECT, LARGE_OBJECT)
    pos = base + 2 * width
    keys = []
    if is_object:
        for _ in range(count):
            key_offset = unpack(buf, pos)[0]
            key_len = struct.unpack_from("<H", buf, pos + width)[0]
            keys.append(buf[base + key_offset:base + key_offset + key_len].decode("utf-8", "surrogateescape"))
            pos += width + 2
    values = []
    inline = (LITERAL, INT16, UINT16) + ((INT32, UINT32) if large else ())
    for _ in range(count):
        value_kind = buf[pos]
        if value_kind in inline:
            values.append(_scalar(value_kind, buf, pos + 1, end, budget))
        else:
            offset = unpack(buf, pos + 1)[0]
            values.append(_scalar(value_kind, buf, base + offset, base + size, budget))
        pos += 1 + width
    return dict(zip(keys, values)) if is_object else values


def parse_binary(raw: bytes):
    """A binary JSON document -> Python value. An empty document is JSON null
    (the server writes a zero-length value for an empty JSON column)."""
    if not raw:
        return None
    try:
        return _scalar(raw[0], raw, 1, len(raw), [len(raw)])
    except (IndexError, struct.error, KeyError, RecursionError) as exc:
        # RecursionError: a container whose value offsets lead back into itself
        raise JsonError(f"malformed binary JSON: {exc}") from None


def _dump(value, out: list) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, (int, Decimal)):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(_double_text(value))
    elif isinstance(value, JsonOpaque):
        out.append(json.dumps(value.text))
    elif isinstance(value, dict):
        out.append("{")
        for i, (k, v) in enumerate(value.items()):
            if i:
                out.append(", ")
            out.append(json.dumps(k, ensure_ascii=False))
            out.append(": ")
            _dump(v, out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(", ")
            _dump(v, out)
        out.append("]")
    else:
        raise JsonError(f"cannot print {type(value).__name__} as JSON")


def _double_text(value: float) -> str:
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        mantissa = mantissa[:-2] if mantissa.endswith(".0") else mantissa
        text = f"{mantissa}e{int(exponent)}"
    elif text.endswith(".0"):
        text = text[:-2] + ".0"
    return text


def to_text(value) -> str:
    out: list[str] = []
    _dump(value, out)
    return "".join(out)


def binary_to_text(raw: bytes) -> str:
    return to_text(parse_binary(raw))


# -- partial updates ------------------------------------------------------------

JSON_DIFF_REPLACE, JSON_DIFF_INSERT, JSON_DIFF_REMOVE = 0, 1, 2
_OPERATION_NAMES = {0: "REPLACE", 1: "INSERT", 2: "REMOVE"}


@dataclass(frozen=True, slots=True)
class JsonDiff:
    operation: int
    path: str
    value: object = None  #: the new value (Python), None for REMOVE

    @property
    def operation_name(self) -> str:
        return _OPERATION_NAMES.get(self.operation, str(self.operation))

    def to_sql(self, column: str) -> str:
        """As mysqlbinlog prints it: JSON_REPLACE/JSON_INSERT/JSON_REMOVE."""
        if self.operation == JSON_DIFF_REMOVE:
            return f"JSON_REMOVE({column}, '{self.path}')"
        fn = "JSON_REPLACE" if self.operation == JSON_DIFF_REPLACE else "JSON_INSERT"
        return f"{fn}({column}, '{self.path}', CAST('{to_text(self.value)}' AS JSON))"


@dataclass(frozen=True, slots=True)
class PartialJson:
    """The after image of a JSON column sent as diffs against its before image."""

    diffs: tuple

    def apply(self, before_text: str | None) -> str:
        return to_text(apply_diffs(json.loads(before_text or "null", parse_float=Decimal),
                                   self.diffs))


def _packed_len(buf: bytes, pos: int) -> tuple[int, int]:
    first = buf[pos]
    if first < 251:
        return first, pos + 1
    if first == 252:
        return int.from_bytes(buf[pos + 1:pos + 3], "little"), pos + 3
    if first == 253:
        return int.from_bytes(buf[pos + 1:pos + 4], "little"), pos + 4
    return int.from_bytes(buf[pos + 1:pos + 9], "little"), pos + 9


def parse_diffs(raw: bytes, file: str = "<bytes>", offset: int = 0) -> PartialJson:
    diffs = []
    pos = 0
    try:
        while pos < len(raw):
            operation = raw[pos]
            path_len, pos = _packed_len(raw, pos + 1)
            path = raw[pos:pos + path_len].decode("utf-8")
            pos += path_len
            value = None
            if operation != JSON_DIFF_REMOVE:
                value_len, pos = _packed_len(raw, pos)
                value = parse_binary(raw[pos:pos + value_len])
                pos += value_len
            diffs.append(JsonDiff(operation, path, value))
    except (IndexError, JsonError, UnicodeDecodeError) as exc:
        raise CorruptEvent(file, offset + pos, f"malformed JSON diff: {exc}") from None
    return PartialJson(tuple(diffs))


def _parse_path(path: str) -> list:
    """`$.a[2]."b c"` -> ['a', 2, 'b c']."""
    if not path.startswith("$"):
        raise JsonError(f"bad JSON path {path!r}")
    legs, i, n = [], 1, len(path)
    while i < n:
        ch = path[i]
        if ch == ".":
            i += 1
            if i < n and path[i] == '"':
                j = i + 1
                buf = []
                while path[j] != '"':
                    if path[j] == "\\":
                        j += 1
                    buf.append(path[j])
                    j += 1
                legs.append("".join(buf))
                i = j + 1
            else:
                j = i
                while j < n and path[j] not in ".[":
                    j += 1
                legs.append(path[i:j])
                i = j
        elif ch == "[":
            j = path.index("]", i)
            legs.append(int(path[i + 1:j]))
            i = j + 1
        else:
            raise JsonError(f"bad JSON path {path!r}")
    return legs


def apply_diffs(document, diffs) -> object:
    for diff in diffs:
        legs = _parse_path(diff.path)
        if not legs:
            document = diff.value
            continue
        parent = document
        for leg in legs[:-1]:
            parent = parent[leg]
        last = legs[-1]
        if diff.operation == JSON_DIFF_REMOVE:
            del parent[last]
        elif diff.operation == JSON_DIFF_INSERT and isinstance(parent, list):
            parent.insert(last, diff.value)
        else:
            parent[last] = diff.value
    return document
