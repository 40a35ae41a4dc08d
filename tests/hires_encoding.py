"""MariaDB's hires TIME/DATETIME/TIMESTAMP(1-6) values as the server stores
them (sql/field.cc `Field_*_hires::store_TIME`), written for the tests
independently of binlake's decoders, plus the edge values the tests use.

`pack_time()` (sql-common/my_time.c) is the value in microseconds,
((((year * 13 + month) * 32 + day) * 24 + hour) * 60 + minute) * 60 + second;
the server keeps it in 10^-fsp seconds (`sec_part_shift`), big-endian.
"""

from __future__ import annotations

SEC_PART_BYTES = {1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3}
DATETIME_HIRES_BYTES = {1: 6, 2: 6, 3: 7, 4: 7, 5: 7, 6: 8}
TIME_HIRES_BYTES = {1: 4, 2: 4, 3: 5, 4: 5, 5: 5, 6: 6}
TIME_MAX = 838 * 3600 + 59 * 60 + 59


def _shift(micro: int, fsp: int) -> int:
    """`sec_part_shift`: microseconds to 10^-fsp seconds (truncating)."""
    return micro // 10 ** (6 - fsp)


def truncated(micro: int, fsp: int) -> int:
    """The microseconds an fsp-digit column keeps of `micro`."""
    return _shift(micro, fsp) * 10 ** (6 - fsp)


def timestamp_hires(seconds: int, micro: int, fsp: int) -> bytes:
    return seconds.to_bytes(4, "big") + _shift(micro, fsp).to_bytes(SEC_PART_BYTES[fsp], "big")


def datetime_hires(y, mo, d, h, mi, s, micro, fsp) -> bytes:
    packed = (((((y * 13 + mo) * 32 + d) * 24 + h) * 60 + mi) * 60 + s) * 1_000_000 + micro
    return _shift(packed, fsp).to_bytes(DATETIME_HIRES_BYTES[fsp], "big")


def time_hires(negative: bool, h, m, s, micro, fsp) -> bytes:
    """A zero point of 838:59:59 + 1s is added so negative times sort first."""
    count = _shift((((h * 60 + m) * 60) + s) * 1_000_000 + micro, fsp)
    zero_point = (TIME_MAX + 1) * 10 ** fsp
    return (zero_point - count if negative else zero_point + count).to_bytes(TIME_HIRES_BYTES[fsp], "big")


#: (seconds since the epoch, microseconds); (0, 0) is the zero timestamp
TIMESTAMPS = [(0, 0), (0, 1), (1, 0), (1, 1), (1, 999_999), (1_652_712_790, 123_000),
              (2_147_483_647, 999_999), (2**32 - 1, 999_999)]
#: (year, month, day, hour, minute, second, microseconds), zero dates included
DATETIMES = [(0, 0, 0, 0, 0, 0, 0), (2020, 0, 0, 0, 0, 0, 0), (2020, 5, 0, 10, 0, 0, 250_000),
             (1000, 1, 1, 0, 0, 0, 1), (9999, 12, 31, 23, 59, 59, 999_999),
             (2024, 2, 29, 12, 34, 56, 500_000), (1970, 1, 1, 0, 0, 0, 999_999)]
#: (negative, hours, minutes, seconds, microseconds)
TIMES = [(False, 0, 0, 0, 0), (False, 0, 0, 0, 1), (True, 0, 0, 0, 1), (True, 0, 0, 0, 500_000),
         (False, 838, 59, 59, 999_999), (True, 838, 59, 59, 999_999), (True, 838, 59, 59, 0),
         (False, 12, 34, 56, 123_456), (True, 12, 34, 56, 654_321), (True, 1, 0, 0, 0),
         (False, 100, 0, 0, 100_000)]
