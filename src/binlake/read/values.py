"""Column values as stored in row images, decoded exactly.

Strategy: for each column of a table map, `column_decoder(column)` builds once
a small function `decode(buf, pos) -> (value, next_pos)` with the column's
metadata (width, precision, fsp, charset, signedness) already bound, so that
decoding a row is one call per present column and no per-row lookups.

Representation (lossless): integers -> int; DECIMAL -> Decimal with the
column's scale; FLOAT/DOUBLE -> float; BIT -> int; YEAR -> int; DATE ->
date; DATETIME -> naive datetime; TIMESTAMP -> UTC datetime; TIME ->
timedelta (MariaDB's hires TIME/DATETIME/TIMESTAMP(n) alike, their n given
as the column's meta); a temporal Python cannot hold (zero dates, year 0) ->
`MysqlTemporal`, MySQL's own text; text -> str in the column's charset,
bytes when binary or unknown (MariaDB's compressed VARCHAR and TEXT/BLOB:
the same, of the uncompressed value); BLOB/GEOMETRY -> bytes; ENUM -> member name
(int index without metadata); SET -> frozenset of names (int bitmask
without metadata); JSON -> JSON text; VECTOR -> list of floats.
"""

from __future__ import annotations

import datetime as dt
import struct
import zlib

from binlake.charsets import codec_for
from binlake.constants import ColumnType as T
from binlake.read.decimals import Decode, decimal_decoder
from binlake.read.mysql_json import binary_to_text

UTC = dt.timezone.utc
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)

_S8 = struct.Struct("<b").unpack_from
_U8 = struct.Struct("<B").unpack_from
_S16 = struct.Struct("<h").unpack_from
_U16 = struct.Struct("<H").unpack_from
_S32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_S64 = struct.Struct("<q").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_F32 = struct.Struct("<f").unpack_from
_F64 = struct.Struct("<d").unpack_from


class MysqlTemporal(str):
    """A DATE/DATETIME/TIMESTAMP value Python's datetime cannot hold
    (zero date, zero month or day, year 0), as MySQL prints it."""

    __slots__ = ()


# -- integers -----------------------------------------------------------------

def _fixed(unpack, size: int) -> Decode:
    def decode(buf, pos):
        return unpack(buf, pos)[0], pos + size
    return decode


def _int24(signed: bool) -> Decode:
    def decode(buf, pos):
        v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
        if signed and v & 0x800000:
            v -= 0x1000000
        return v, pos + 3
    return decode


def integer_decoder(column_type: int, unsigned: bool) -> Decode:
    if column_type == T.MYSQL_TYPE_TINY:
        return _fixed(_U8 if unsigned else _S8, 1)
    if column_type == T.MYSQL_TYPE_SHORT:
        return _fixed(_U16 if unsigned else _S16, 2)
    if column_type == T.MYSQL_TYPE_INT24:
        return _int24(not unsigned)
    if column_type == T.MYSQL_TYPE_LONG:
        return _fixed(_U32 if unsigned else _S32, 4)
    return _fixed(_U64 if unsigned else _S64, 8)


# -- DECIMAL --------------------------------------------------------------------

# -- temporal -----------------------------------------------------------------

def _frac_text(micro: int, fsp: int) -> str:
    return "." + ("%06d" % micro)[:fsp] if fsp else ""


def make_date(year: int, month: int, day: int) -> dt.date | MysqlTemporal:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return MysqlTemporal("%04d-%02d-%02d" % (year, month, day))


def make_datetime(year, month, day, hour, minute, second, micro, fsp):
    try:
        return dt.datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        return MysqlTemporal("%04d-%02d-%02d %02d:%02d:%02d%s" % (
            year, month, day, hour, minute, second, _frac_text(micro, fsp)))


def _date(buf, pos):
    v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
    return make_date(v >> 9, (v >> 5) & 15, v & 31), pos + 3


def _time_old(buf, pos):
    v = buf[pos] | buf[pos + 1] << 8 | buf[pos + 2] << 16
    if v & 0x800000:
        v -= 0x1000000
    sign = -1 if v < 0 else 1
    v = abs(v)
    return sign * dt.timedelta(hours=v // 10000, minutes=v // 100 % 100, seconds=v % 100), pos + 3


def _datetime_old(buf, pos):
    v = _U64(buf, pos)[0]
    d, t = divmod(v, 1000000)
    return make_datetime(d // 10000, d // 100 % 100, d % 100,
                         t // 10000, t // 100 % 100, t % 100, 0, 0), pos + 8


def _timestamp_old(buf, pos):
    seconds = _U32(buf, pos)[0]
    if seconds == 0:
        return MysqlTemporal("0000-00-00 00:00:00"), pos + 4
    return _EPOCH + dt.timedelta(seconds=seconds), pos + 4


def _frac_bytes(fsp: int) -> int:
    return (fsp + 1) // 2


_FRAC_UNIT = (1, 10000, 100, 1)  # microseconds per stored unit, by fraction bytes


def _timestamp2(fsp: int) -> Decode:
    n = _frac_bytes(fsp)
    return _seconds_and_fraction(fsp, n, _FRAC_UNIT[n])


def _seconds_and_fraction(fsp: int, n: int, unit: int) -> Decode:
    """4 big-endian bytes of seconds, then `n` of fraction in `unit` microseconds."""
    size = 4 + n
    zero = MysqlTemporal("0000-00-00 00:00:00" + _frac_text(0, fsp))
    from_ts = dt.datetime.fromtimestamp

    def decode(buf, pos):
        # seconds and fraction are one big-endian number: split it once
        packed = int.from_bytes(buf[pos:pos + size], "big")
        if not packed:
            return zero, pos + size
        seconds, frac = packed >> (8 * n), packed & ((1 << (8 * n)) - 1)
        value = from_ts(seconds, UTC)
        return (value.replace(microsecond=frac * unit) if frac else value), pos + size
    return decode


def _datetime2(fsp: int) -> Decode:
    n = _frac_bytes(fsp)
    size = 5 + n
    unit = _FRAC_UNIT[n]
    frac_bits = 8 * n
    frac_mask = (1 << frac_bits) - 1
    frac_sign = 1 << (frac_bits - 1) if n else 0
    offset = 0x8000000000 << frac_bits
    datetime = dt.datetime

    def decode(buf, pos):
        whole = int.from_bytes(buf[pos:pos + size], "big")
        frac = whole & frac_mask
        packed = (whole - offset) >> frac_bits
        if frac & frac_sign:  # the fraction is signed; only negative dates set it
            frac -= 1 << frac_bits
        if packed < 0:  # not written by any server; keep the bits rather than guess
            return MysqlTemporal("-" + str(-packed)), pos + size
        ymd, hms = packed >> 17, packed & 0x1FFFF
        ym = ymd >> 5
        try:
            return datetime(ym // 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63,
                            hms & 63, frac * unit), pos + size
        except ValueError:
            return make_datetime(ym // 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63,
                                 hms & 63, frac * unit, fsp), pos + size
    return decode


def time2_parts(buf, pos: int, fsp: int) -> tuple[bool, int, int, int, int]:
    """TIME2 (sql-common/my_time.cc `my_time_packed_from_binary`): 3 bytes of
    integer part offset by 0x800000, then 0-3 bytes of fraction; a negative
    time with a fraction borrows one second from the integer part.
    Returns (negative, hours, minutes, seconds, microseconds)."""
    n = _frac_bytes(fsp)
    if n == 3:
        packed = int.from_bytes(buf[pos:pos + 6], "big") - 0x800000000000
    else:
        intpart = int.from_bytes(buf[pos:pos + 3], "big") - 0x800000
        frac = int.from_bytes(buf[pos + 3:pos + 3 + n], "big") if n else 0
        if intpart < 0 and frac:
            intpart += 1
            frac -= 0x100 if n == 1 else 0x10000
        packed = (intpart << 24) + frac * _FRAC_UNIT[n]
    negative = packed < 0
    packed = -packed if negative else packed
    hms, micro = packed >> 24, packed % (1 << 24)
    return negative, (hms >> 12) % 1024, (hms >> 6) % 64, hms % 64, micro


def _time2(fsp: int) -> Decode:
    size = 3 + _frac_bytes(fsp)

    def decode(buf, pos):
        negative, hours, minutes, seconds, micro = time2_parts(buf, pos, fsp)
        delta = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds, microseconds=micro)
        return (-delta if negative else delta), pos + size
    return decode


# MariaDB's own TIME(n)/DATETIME(n)/TIMESTAMP(n), n 1-6 ("hires": 5.3-10.0,
# and later servers with mysql56_temporal_format=OFF; sql/field.cc
# `Field_*_hires`): big-endian counts of 10^-n seconds, logged under the plain
# type codes with no metadata, so n comes from the DDL as the column's meta.
# Widths by n, as the server names them:
_SEC_PART_BYTES = (0, 1, 1, 2, 2, 3, 3)            # `sec_part_bytes`: a TIMESTAMP's fraction
_DATETIME_HIRES_BYTES = (5, 6, 6, 7, 7, 7, 8)      # `datetime_hires_bytes`
_TIME_HIRES_BYTES = (3, 4, 4, 5, 5, 5, 6)          # `time_hires_bytes`
TIME_MAX_VALUE_SECONDS = 838 * 3600 + 59 * 60 + 59  # include/my_time.h


def _timestamp_hires(fsp: int) -> Decode:
    """`Field_timestamp_hires::get_timestamp`: 4 bytes of seconds, then the
    fraction in 10^-fsp seconds."""
    return _seconds_and_fraction(fsp, _SEC_PART_BYTES[fsp], 10 ** (6 - fsp))


def datetime_hires_parts(buf, pos: int, fsp: int) -> tuple[int, int, int, int, int, int, int]:
    """`Field_datetime_hires::get_date`: `pack_time()`,
    ((((year * 13 + month) * 32 + day) * 24 + hour) * 60 + minute) * 60 + second,
    in 10^-fsp seconds, taken apart as `unpack_time` does (no validation).
    Returns (year, month, day, hour, minute, second, microseconds)."""
    packed = int.from_bytes(buf[pos:pos + _DATETIME_HIRES_BYTES[fsp]], "big")
    seconds, frac = divmod(packed, 10 ** fsp)
    days, rem = divmod(seconds, 86400)
    months, day = divmod(days, 32)
    year, month = divmod(months, 13)
    return year, month, day, rem // 3600, rem // 60 % 60, rem % 60, frac * 10 ** (6 - fsp)


def _datetime_hires(fsp: int) -> Decode:
    size = _DATETIME_HIRES_BYTES[fsp]

    def decode(buf, pos):
        return make_datetime(*datetime_hires_parts(buf, pos, fsp), fsp), pos + size
    return decode


def time_hires_parts(buf, pos: int, fsp: int) -> tuple[bool, int, int, int, int]:
    """`Field_time_hires::get_date`: `pack_time()` of the time in 10^-fsp
    seconds plus a zero point of 838:59:59 + 1s, so negative times sort first.
    The hours are `unpack_time`'s: past 9984 (13 * 32 * 24, a value no server
    writes) they wrap, as they do in the server.
    Returns (negative, hours, minutes, seconds, microseconds)."""
    scale = 10 ** fsp
    count = int.from_bytes(buf[pos:pos + _TIME_HIRES_BYTES[fsp]], "big") \
        - (TIME_MAX_VALUE_SECONDS + 1) * scale
    seconds, frac = divmod(abs(count), scale)
    return (count < 0, seconds // 3600 % (13 * 32 * 24), seconds // 60 % 60, seconds % 60,
            frac * 10 ** (6 - fsp))


def _time_hires(fsp: int) -> Decode:
    size = _TIME_HIRES_BYTES[fsp]

    def decode(buf, pos):
        negative, hours, minutes, seconds, micro = time_hires_parts(buf, pos, fsp)
        delta = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds, microseconds=micro)
        return (-delta if negative else delta), pos + size
    return decode


def _year(buf, pos):
    v = buf[pos]
    return (1900 + v if v else 0), pos + 1


# -- strings and blobs --------------------------------------------------------

def _text_or_bytes(codec: str | None):
    if codec is None:
        return None

    def convert(raw: bytes):
        try:
            return raw.decode(codec)
        except UnicodeDecodeError:
            return raw
    return convert


def _length_prefixed(length_bytes: int, convert) -> Decode:
    if length_bytes == 1:
        def decode(buf, pos):
            n = buf[pos]
            raw = bytes(buf[pos + 1:pos + 1 + n])
            return (convert(raw) if convert else raw), pos + 1 + n
        return decode

    def decode(buf, pos):
        n = int.from_bytes(buf[pos:pos + length_bytes], "little")
        start = pos + length_bytes
        raw = bytes(buf[start:start + n])
        return (convert(raw) if convert else raw), start + n
    return decode


# MariaDB's compressed columns (sql/field_comp.cc, 10.3+): the row image holds
# the stored value behind a VARCHAR's or a BLOB's length prefix. Its first
# byte says how it is stored: a method of 0 (high nibble): the value follows
# as is; 8: zlib, bit 3 set for a raw deflate stream (no zlib header and
# checksum, the server's default), the low 3 bits the width of the value's
# length, which follows big-endian, then the stream. An empty value has no
# header byte. The twin of this reader is `rust/src/rowimage.rs` (`uncompress`).
ZLIB_COMPRESSION_METHOD = 8


def uncompress(stored: bytes, limit: int, key: str) -> bytes:
    """The value of a compressed column from its stored bytes, as the server's
    `Field_longstr::uncompress` and `uncompress_zlib` read it: a declared
    length over the column's `limit` and a stream that does not end within
    the declared length are corrupt (ValueError naming column `key`); bytes
    after the stream's end are ignored, as the server ignores them."""
    if not stored:
        return stored
    header = stored[0]
    method = header >> 4
    if method == 0:
        return stored[1:]
    if method != ZLIB_COMPRESSION_METHOD:
        raise ValueError(f"compressed column {key}: unknown compression method {method} "
                         f"(header byte 0x{header:02x})")
    width = header & 0x07
    if len(stored) - 1 < width:
        raise ValueError(f"compressed column {key}: the value ends inside its length")
    declared = int.from_bytes(stored[1:1 + width], "big")
    if declared > limit:
        raise ValueError(f"compressed column {key}: the value declares {declared} bytes, "
                         f"more than the column holds ({limit})")
    inflater = zlib.decompressobj(-zlib.MAX_WBITS if header & 0x08 else zlib.MAX_WBITS)
    try:
        # one byte more than declared tells a stream that runs past it
        value = inflater.decompress(stored[1 + width:], declared + 1)
    except zlib.error:
        value = None
    if value is None or len(value) > declared or not inflater.eof:
        raise ValueError(f"compressed column {key}: the value is not a zlib stream of at "
                         f"most its declared {declared} bytes")
    return value


def _compressed(length_bytes: int, limit: int, key: str, convert) -> Decode:
    def decode(buf, pos):
        n = int.from_bytes(buf[pos:pos + length_bytes], "little")
        start = pos + length_bytes
        end = start + n
        if end > len(buf):  # cut: reported as the image running past the end
            return None, end
        value = uncompress(bytes(buf[start:end]), limit, key)
        return (convert(value) if convert else value), end
    return decode


def _bit(meta: int) -> Decode:
    """Metadata: bits % 8, then whole bytes (Field_bit::do_save_field_metadata)."""
    nbytes = (meta & 0xFF) + (1 if meta >> 8 else 0)

    def decode(buf, pos):
        return int.from_bytes(buf[pos:pos + nbytes], "big"), pos + nbytes
    return decode


def _enum(size: int, names: list[str] | None) -> Decode:
    def decode(buf, pos):
        index = int.from_bytes(buf[pos:pos + size], "little")
        if names is None:
            return index, pos + size
        return (names[index - 1] if 0 < index <= len(names) else ""), pos + size
    return decode


def _set(size: int, names: list[str] | None) -> Decode:
    def decode(buf, pos):
        mask = int.from_bytes(buf[pos:pos + size], "little")
        if names is None:
            return mask, pos + size
        return frozenset(n for i, n in enumerate(names) if mask >> i & 1), pos + size
    return decode


def _json(length_bytes: int) -> Decode:
    """MySQL's binary JSON (MariaDB logs JSON as a LONGTEXT blob instead)."""

    def decode(buf, pos):
        n = int.from_bytes(buf[pos:pos + length_bytes], "little")
        start = pos + length_bytes
        return binary_to_text(bytes(buf[start:start + n])), start + n
    return decode


def _vector(length_bytes: int) -> Decode:
    def decode(buf, pos):
        n = int.from_bytes(buf[pos:pos + length_bytes], "little")
        start = pos + length_bytes
        return list(struct.unpack_from("<%df" % (n // 4), buf, start)), start + n
    return decode


def string_real_type(meta: int) -> tuple[int, int]:
    """STRING metadata hides the real type (CHAR, ENUM, SET) and a 10-bit max
    length in two bytes (Field_string::do_save_field_metadata)."""
    byte0, byte1 = meta >> 8, meta & 0xFF
    if meta == 0:  # table maps before 5.1.18 carry no metadata: a short CHAR
        return T.MYSQL_TYPE_STRING, 0
    if (byte0 & 0x30) != 0x30:
        return byte0 | 0x30, byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
    return byte0, byte1


def _unsupported(t: int, meta: int) -> NotImplementedError:
    name = T(t).name if t in T._value2member_map_ else "?"
    return NotImplementedError(f"column type {t} ({name}) with metadata {meta}")


def column_decoder(column) -> Decode:
    """The decoder of one table-map column (see table_map.Column).

    Metadata no server writes (a DECIMAL of precision 0, fsp 7, a 5-byte
    length prefix...) makes the column unsupported rather than guessed at;
    the native core (`rust/src/layout.rs`, `Kind::of`) draws the same lines."""
    t, meta = column.type, column.meta
    one = meta & 0xFF
    if t in (T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_INT24,
             T.MYSQL_TYPE_LONG, T.MYSQL_TYPE_LONGLONG):
        return integer_decoder(t, column.unsigned)
    if t == T.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = meta >> 8, one
        if not 0 < precision <= 65 or scale > 30 or scale > precision:
            raise _unsupported(t, meta)
        return decimal_decoder(precision, scale)
    if t == T.MYSQL_TYPE_FLOAT:
        return _fixed(_F32, 4)
    if t == T.MYSQL_TYPE_DOUBLE:
        return _fixed(_F64, 8)
    if t == T.MYSQL_TYPE_YEAR:
        return _year
    if t in (T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE):
        return _date
    if t in (T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_TIMESTAMP) and meta:
        # no metadata on the wire: a meta set from the DDL is a MariaDB hires fsp
        if meta > 6:
            raise _unsupported(t, meta)
        return {T.MYSQL_TYPE_TIME: _time_hires, T.MYSQL_TYPE_DATETIME: _datetime_hires,
                T.MYSQL_TYPE_TIMESTAMP: _timestamp_hires}[t](meta)
    if t == T.MYSQL_TYPE_TIME:
        return _time_old
    if t == T.MYSQL_TYPE_DATETIME:
        return _datetime_old
    if t == T.MYSQL_TYPE_TIMESTAMP:
        return _timestamp_old
    if t in (T.MYSQL_TYPE_TIMESTAMP2, T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIME2) and one > 6:
        raise _unsupported(t, meta)
    if t == T.MYSQL_TYPE_TIMESTAMP2:
        return _timestamp2(one)
    if t == T.MYSQL_TYPE_DATETIME2:
        return _datetime2(one)
    if t == T.MYSQL_TYPE_TIME2:
        return _time2(one)
    if t == T.MYSQL_TYPE_BIT:
        if one + (1 if meta >> 8 else 0) > 8 or meta >> 8 > 7:
            raise _unsupported(t, meta)
        return _bit(meta)
    if t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        return _length_prefixed(1 if meta < 256 else 2, _text_or_bytes(codec_for(column.charset)))
    if t in (T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET):
        real, length = string_real_type(meta) if t == T.MYSQL_TYPE_STRING else (t, one)
        if real == T.MYSQL_TYPE_ENUM:
            if length not in (1, 2):
                raise _unsupported(t, meta)
            return _enum(length, column.enum_values)
        if real == T.MYSQL_TYPE_SET:
            if not 1 <= length <= 8:
                raise _unsupported(t, meta)
            return _set(length, column.set_values)
        return _length_prefixed(1 if length < 256 else 2, _text_or_bytes(codec_for(column.charset)))
    if t == T.MYSQL_TYPE_VARCHAR_COMPRESSED:
        # the length counts the header byte: it bounds the value's declared length
        return _compressed(1 if meta < 256 else 2, meta, column.key,
                           _text_or_bytes(codec_for(column.charset)))
    if t in _LENGTH_PREFIXED and one not in (1, 2, 3, 4):
        raise _unsupported(t, meta)
    if t == T.MYSQL_TYPE_BLOB_COMPRESSED:
        return _compressed(one, (1 << 8 * one) - 1, column.key,
                           _text_or_bytes(codec_for(column.charset)))
    if t == T.MYSQL_TYPE_JSON:
        return _json(one)
    if t in (T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
             T.MYSQL_TYPE_LONG_BLOB):
        return _length_prefixed(one, _text_or_bytes(codec_for(column.charset)))
    if t == T.MYSQL_TYPE_GEOMETRY:
        return _length_prefixed(one, None)
    if t == T.MYSQL_TYPE_VECTOR:
        return _vector(one)
    raise _unsupported(t, meta)


_LENGTH_PREFIXED = {T.MYSQL_TYPE_JSON, T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB,
                    T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB, T.MYSQL_TYPE_GEOMETRY,
                    T.MYSQL_TYPE_VECTOR, T.MYSQL_TYPE_BLOB_COMPRESSED}
