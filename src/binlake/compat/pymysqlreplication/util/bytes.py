"""python-mysql-replication's public byte helpers (`pymysqlreplication.util.bytes`).

These are a utility API its users call on byte strings, not part of reading
the stream (which binlake's reader does). The value formats defer to
binlake's own decoders where it has them (DECIMAL: binlake.read.decimals;
JSON's packed TIME/DATETIME: binlake.read.mysql_json's layout).
"""

import datetime
import struct
import sys

__all__ = ["is_data_short", "decode_count", "decode_uint", "length_encoded_int",
           "decode_variable_length", "parse_decimal_from_bytes", "decode_decimal",
           "decode_time", "decode_datetime", "parse_int16", "parse_uint16", "parse_uint24",
           "parse_int32", "parse_uint32", "parse_int64", "parse_uint64", "parse_double",
           "parse_string", "datetime"]


def is_data_short(data: bytes, expected: int) -> bool:
    return len(data) < expected


def decode_count(data: bytes, is_small: bool) -> int:
    return parse_uint16(data) if is_small else parse_uint32(data)


def decode_uint(data: bytes) -> int:
    return 0 if len(data) < 2 else parse_uint16(data)


def length_encoded_int(data: bytes):
    """(value, is_null, bytes used) of a length-encoded integer."""
    if not data:
        return 0, True, 0
    first = data[0]
    if first == 251:
        return None, True, 1
    sizes = {252: 2, 253: 3, 254: 8}
    if first in sizes:
        n = sizes[first]
        return int.from_bytes(bytes(data[1:1 + n]), "little"), False, n + 1
    return first, False, 1


def decode_variable_length(data: bytes):
    """(value, bytes used) of up to 5 bytes of 7 bits each, low first; (0, 0) if unfinished."""
    value = 0
    for pos in range(min(5, len(data))):
        value |= (data[pos] & 0x7F) << (7 * pos)
        if not data[pos] & 0x80:
            return (0, 0) if value > sys.maxsize - 1 else (value, pos + 1)
    return 0, 0


def parse_decimal_from_bytes(raw_decimal: bytes, precision: int, decimals: int):
    from binlake.read.decimals import decode_decimal as _decode
    return _decode(bytes(raw_decimal), 0, precision, decimals)[0]


def decode_decimal(data: bytes):
    return parse_decimal_from_bytes(data[2:], data[0], data[1])


def _packed(data: bytes) -> int:
    value = parse_int64(data)
    return -value if value < 0 else value


def decode_time(data: bytes):
    """A packed TIME (JSON's form) as a datetime.time."""
    v = _packed(data)
    whole, frac = v >> 24, v % (1 << 24)
    return datetime.time((whole >> 12) % (1 << 10), (whole >> 6) % 64, whole % 64, frac)


def decode_datetime(data):
    """A packed DATETIME (JSON's form); the zero date as its text."""
    v = _packed(data)
    if v == 0:
        return "0000-00-00 00:00:00"
    whole, frac = v >> 24, v % (1 << 24)
    ymd, hms = whole >> 17, whole % (1 << 17)
    year, month = divmod(ymd >> 5, 13)
    return datetime.datetime(year, month, ymd % 32, hms >> 12, (hms >> 6) % 64, hms % 64, frac)


def parse_int16(data: bytes) -> int:
    return struct.unpack("<h", data[:2])[0]


def parse_uint16(data: bytes) -> int:
    return struct.unpack("<H", data[:2])[0]


def parse_uint24(data: bytes) -> int:
    return data[0] | data[1] << 8 | data[2] << 16


def parse_int32(data: bytes) -> int:
    return struct.unpack("<i", data[:4])[0]


def parse_uint32(data: bytes) -> int:
    return struct.unpack("<I", data[:4])[0]


def parse_int64(data: bytes) -> int:
    return struct.unpack("<q", data[:8])[0]


def parse_uint64(data: bytes) -> int:
    return struct.unpack("<Q", data[:8])[0]


def parse_double(data: bytes) -> float:
    return struct.unpack("<d", data[:8])[0]


def parse_string(n: int, length: int, data: bytes) -> bytes:
    return data[n:n + length]
