"""Column values decoded exactly, from bytes laid out as the server stores them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from binlake.constants import ColumnType as T
from binlake.read.events.table_map import Column
from binlake.read.decimals import decimal_size
from binlake.read.values import MysqlTemporal, column_decoder

from hires_encoding import (DATETIMES, TIMES, TIMESTAMPS, datetime_hires, time_hires,
                            timestamp_hires, truncated)


def decode(column_type, meta, raw: bytes, **column):
    value, end = column_decoder(Column(0, column_type, meta, True, **column))(raw, 0)
    assert end == len(raw)
    return value


def encode_decimal(text: str, precision: int, scale: int) -> bytes:
    """The server's bin2decimal layout, written independently for the test."""
    negative = text.startswith("-")
    digits = text.lstrip("-")
    int_part, _, frac_part = digits.partition(".")
    frac_part = frac_part.ljust(scale, "0")
    intg = precision - scale
    int_part = int_part.rjust(intg, "0")
    sizes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    out = bytearray()
    lead = intg % 9
    if lead:
        out += int(int_part[:lead]).to_bytes(sizes[lead], "big")
    for i in range(lead, intg, 9):
        out += int(int_part[i:i + 9]).to_bytes(4, "big")
    for i in range(0, scale - scale % 9, 9):
        out += int(frac_part[i:i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac_part[scale - scale % 9:]).to_bytes(sizes[scale % 9], "big")
    assert len(out) == decimal_size(precision, scale)
    out[0] ^= 0x80
    if negative:
        out = bytearray(b ^ 0xFF for b in out)
    return bytes(out)


@pytest.mark.parametrize("text,precision,scale", [
    ("1234.50", 10, 2), ("-1234.50", 10, 2), ("0.00", 10, 2), ("-0.01", 5, 2),
    ("99999", 5, 0), ("-99999", 5, 0),
    ("12345678901234567890123456789012345.123456789012345678901234567890", 65, 30),
    ("-12345678901234567890123456789012345.123456789012345678901234567890", 65, 30),
])
def test_decimal_exact(text, precision, scale):
    value = decode(T.MYSQL_TYPE_NEWDECIMAL, precision << 8 | scale,
                   encode_decimal(text, precision, scale))
    assert value == Decimal(text) and str(value) == text


def test_integers_signed_and_unsigned():
    assert decode(T.MYSQL_TYPE_TINY, 0, b"\xff") == -1
    assert decode(T.MYSQL_TYPE_TINY, 0, b"\xff", unsigned=True) == 255
    assert decode(T.MYSQL_TYPE_INT24, 0, b"\x00\x00\x80") == -8388608
    assert decode(T.MYSQL_TYPE_INT24, 0, b"\xff\xff\xff", unsigned=True) == 16777215
    assert decode(T.MYSQL_TYPE_LONGLONG, 0, b"\xff" * 8, unsigned=True) == 2**64 - 1
    assert decode(T.MYSQL_TYPE_LONGLONG, 0, b"\x00" * 7 + b"\x80") == -2**63


def time2(seconds_total: int, micro: int, fsp: int) -> bytes:
    """TIME2 as my_time_packed_to_binary writes it."""
    negative = seconds_total < 0 or (seconds_total == 0 and micro < 0)
    s, m = abs(seconds_total), abs(micro)
    hms = (s // 3600) << 12 | (s // 60 % 60) << 6 | s % 60
    packed = (hms << 24) + m
    if negative:
        packed = -packed
    n = (fsp + 1) // 2
    if n == 3:
        return (packed + 0x800000000000).to_bytes(6, "big")
    intpart, frac = packed >> 24, packed % (1 << 24)
    if n == 0:
        return (intpart + 0x800000).to_bytes(3, "big")
    unit = 10000 if n == 1 else 100
    fracpart = frac // unit
    if intpart < 0 and fracpart:  # the server stores a borrowed second
        fracpart = (1 << (8 * n)) - ((1 << 24) - frac) // unit
    return (intpart + 0x800000).to_bytes(3, "big") + (fracpart % (1 << (8 * n))).to_bytes(n, "big")


@pytest.mark.parametrize("seconds,micro,fsp", [
    (838 * 3600 + 59 * 60 + 59, 0, 0), (-(838 * 3600 + 59 * 60 + 59), 0, 0),
    (-(838 * 3600 + 59 * 60 + 59), 0, 6), (3600, 500000, 6), (0, 0, 3),
])
def test_time2_extremes(seconds, micro, fsp):
    value = decode(T.MYSQL_TYPE_TIME2, fsp, time2(seconds, micro, fsp))
    expected = dt.timedelta(seconds=abs(seconds), microseconds=micro)
    assert value == (-expected if seconds < 0 else expected)


def test_time2_negative_fraction_from_server_bytes():
    # -00:00:01.5 with fsp 1, as MySQL writes it: intpart -1 -> stored -2+1 borrow
    raw = (0x800000 - 2).to_bytes(3, "big") + bytes([0x100 - 50])
    assert decode(T.MYSQL_TYPE_TIME2, 1, raw) == -dt.timedelta(seconds=1, microseconds=500000)


def datetime2(y, mo, d, h, mi, s, micro, fsp) -> bytes:
    ymd = ((y * 13 + mo) << 5) | d
    hms = (h << 12) | (mi << 6) | s
    raw = ((ymd << 17 | hms) + 0x8000000000).to_bytes(5, "big")
    n = (fsp + 1) // 2
    if n:
        raw += (micro // (10000, 100, 1)[n - 1]).to_bytes(n, "big")
    return raw


def test_datetime2_and_zero_dates():
    assert decode(T.MYSQL_TYPE_DATETIME2, 6, datetime2(9999, 12, 31, 23, 59, 59, 999999, 6)) == \
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    zero = decode(T.MYSQL_TYPE_DATETIME2, 3, datetime2(0, 0, 0, 0, 0, 0, 0, 3))
    assert isinstance(zero, MysqlTemporal) and zero == "0000-00-00 00:00:00.000"
    assert decode(T.MYSQL_TYPE_DATE, 0, (0).to_bytes(3, "little")) == "0000-00-00"
    assert decode(T.MYSQL_TYPE_DATE, 0, ((2024 << 9) | (2 << 5) | 29).to_bytes(3, "little")) == \
        dt.date(2024, 2, 29)


def test_timestamp2_is_utc_and_zero_is_text():
    assert decode(T.MYSQL_TYPE_TIMESTAMP2, 0, (0).to_bytes(4, "big")) == "0000-00-00 00:00:00"
    value = decode(T.MYSQL_TYPE_TIMESTAMP2, 2, (86400).to_bytes(4, "big") + bytes([25]))
    assert value == dt.datetime(1970, 1, 2, 0, 0, 0, 250000, tzinfo=dt.timezone.utc)


def test_strings_by_charset_and_real_type():
    latin1_col = dict(charset=8)
    assert decode(T.MYSQL_TYPE_VARCHAR, 10, b"\x03caf", **latin1_col) == "caf"
    assert decode(T.MYSQL_TYPE_VARCHAR, 300, b"\x02\x00\xc3\xa9", charset=45) == "é"
    assert decode(T.MYSQL_TYPE_VARCHAR, 300, b"\x01\x00\xff", charset=45) == b"\xff"  # invalid kept
    assert decode(T.MYSQL_TYPE_BLOB, 2, b"\x02\x00\x00\x01", charset=63) == b"\x00\x01"
    enum_meta = (T.MYSQL_TYPE_ENUM << 8) | 1
    assert decode(T.MYSQL_TYPE_STRING, enum_meta, b"\x02", enum_values=["a", "b"]) == "b"
    set_meta = (T.MYSQL_TYPE_SET << 8) | 1
    assert decode(T.MYSQL_TYPE_STRING, set_meta, b"\x05", set_values=["x", "y", "z"]) == {"x", "z"}
    assert decode(T.MYSQL_TYPE_BIT, (5 << 8) | 1, b"\x01\x02") == 0x0102


# -- MariaDB hires TIME/DATETIME/TIMESTAMP(1-6): the plain types, fsp as meta --------

FSPS = range(1, 7)


@pytest.mark.parametrize("fsp", FSPS)
@pytest.mark.parametrize("seconds,micro", TIMESTAMPS)
def test_hires_timestamp(fsp, seconds, micro):
    value = decode(T.MYSQL_TYPE_TIMESTAMP, fsp, timestamp_hires(seconds, micro, fsp))
    kept = truncated(micro, fsp)
    if seconds == 0 and kept == 0:
        assert isinstance(value, MysqlTemporal) and value == "0000-00-00 00:00:00." + "0" * fsp
    else:
        assert value == dt.datetime.fromtimestamp(seconds, dt.timezone.utc).replace(microsecond=kept)
        assert value.tzinfo is dt.timezone.utc


@pytest.mark.parametrize("fsp", FSPS)
@pytest.mark.parametrize("fields", DATETIMES)
def test_hires_datetime(fsp, fields):
    *ymdhms, micro = fields
    value = decode(T.MYSQL_TYPE_DATETIME, fsp, datetime_hires(*fields, fsp))
    kept = truncated(micro, fsp)
    if ymdhms[1] and ymdhms[2]:
        assert type(value) is dt.datetime and value == dt.datetime(*ymdhms, kept)
    else:  # zero dates and zero months or days stay MySQL's text, with fsp digits
        text = "%04d-%02d-%02d %02d:%02d:%02d" % tuple(ymdhms) + "." + ("%06d" % kept)[:fsp]
        assert isinstance(value, MysqlTemporal) and value == text


@pytest.mark.parametrize("fsp", FSPS)
@pytest.mark.parametrize("negative,h,m,s,micro", TIMES)
def test_hires_time(fsp, negative, h, m, s, micro):
    value = decode(T.MYSQL_TYPE_TIME, fsp, time_hires(negative, h, m, s, micro, fsp))
    magnitude = dt.timedelta(hours=h, minutes=m, seconds=s, microseconds=truncated(micro, fsp))
    assert value == (-magnitude if negative else magnitude)


def test_hires_widths_and_the_server_bytes():
    # TIME(1) -00:00:00.5: 5 tenths below the zero point (838:59:59 + 1s) * 10
    assert decode(T.MYSQL_TYPE_TIME, 1, (30204000 - 5).to_bytes(4, "big")) == \
        -dt.timedelta(microseconds=500000)
    # TIMESTAMP(3) of the tiflow corpus file: 2022-05-16 14:53:10.000 UTC
    assert decode(T.MYSQL_TYPE_TIMESTAMP, 3, bytes.fromhex("628265560000")) == \
        dt.datetime(2022, 5, 16, 14, 53, 10, tzinfo=dt.timezone.utc)
    for fsp, width in zip(FSPS, (6, 6, 7, 7, 7, 8)):
        assert column_decoder(Column(0, T.MYSQL_TYPE_DATETIME, fsp, True))(bytes(9), 0)[1] == width
    for fsp, width in zip(FSPS, (4, 4, 5, 5, 5, 6)):
        assert column_decoder(Column(0, T.MYSQL_TYPE_TIME, fsp, True))(bytes(9), 0)[1] == width
    for fsp, width in zip(FSPS, (5, 5, 6, 6, 7, 7)):
        assert column_decoder(Column(0, T.MYSQL_TYPE_TIMESTAMP, fsp, True))(bytes(9), 0)[1] == width


@pytest.mark.parametrize("column_type", [T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_DATETIME,
                                         T.MYSQL_TYPE_TIMESTAMP])
def test_hires_meta_past_6_is_unsupported_and_0_is_classic(column_type):
    for meta in (7, 0x100, 0xFFFF):
        with pytest.raises(NotImplementedError):
            column_decoder(Column(0, column_type, meta, True))
    classic = {T.MYSQL_TYPE_TIME: 3, T.MYSQL_TYPE_DATETIME: 8, T.MYSQL_TYPE_TIMESTAMP: 4}
    assert column_decoder(Column(0, column_type, 0, True))(bytes(9), 0)[1] == classic[column_type]


def test_hires_text_and_exact_text_as_the_2_types_print_them():
    from binlake.text.rowtext import value_formatter
    from binlake.spark.read.exact import column_text

    def text(column_type, fsp, raw):
        fmt, name = value_formatter(column_type, fsp)
        printed, end = fmt(raw, 0)
        assert end == len(raw)
        value = decode(column_type, fsp, raw)
        return name, printed, column_text(Column(0, column_type, fsp, True))(value)

    assert text(T.MYSQL_TYPE_TIME, 6, time_hires(True, 838, 59, 59, 1, 6)) == \
        ("TIME(6)", "'-838:59:59.000001'", "-838:59:59.000001")
    assert text(T.MYSQL_TYPE_DATETIME, 2, datetime_hires(0, 0, 0, 0, 0, 0, 0, 2)) == \
        ("DATETIME(2)", "'0000-00-00 00:00:00.00'", "0000-00-00 00:00:00.00")
    assert text(T.MYSQL_TYPE_DATETIME, 3, datetime_hires(9999, 12, 31, 23, 59, 59, 999999, 3)) == \
        ("DATETIME(3)", "'9999-12-31 23:59:59.999'", "9999-12-31 23:59:59.999")
    assert text(T.MYSQL_TYPE_TIMESTAMP, 4, timestamp_hires(1652712790, 123400, 4)) == \
        ("TIMESTAMP(4)", "1652712790.1234", "2022-05-16 14:53:10.1234")
    assert text(T.MYSQL_TYPE_TIMESTAMP, 1, timestamp_hires(0, 0, 1)) == \
        ("TIMESTAMP(1)", "0.0", "0000-00-00 00:00:00.0")
    assert value_formatter(T.MYSQL_TYPE_TIME, 7)[0] is None


def test_table_map_with_column_metas():
    from binlake.read.events.table_map import TableMapEvent
    table = TableMapEvent(None, 1, 0, "d", "t", (Column(0, T.MYSQL_TYPE_LONG, 0, False),
                                                 Column(1, T.MYSQL_TYPE_TIMESTAMP, 0, True)))
    table.cache["derived"] = object()
    hires = table.with_column_metas({1: 3})
    assert [c.meta for c in hires.columns] == [0, 3] and [c.meta for c in table.columns] == [0, 0]
    assert hires.cache == {}  # nothing derived from the plain map is reused
    assert table.with_column_metas({1: 0}) is table
    shared: dict = {}
    assert table.with_column_metas({1: 3}, cache=shared).cache is shared
    with pytest.raises(ValueError):
        table.with_column_metas({2: 3})
