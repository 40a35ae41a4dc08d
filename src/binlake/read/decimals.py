"""MySQL's binary DECIMAL (strings/decimal.cc), the one column type whose
wire format other formats embed too: row images, JSON opaque values and user
variables in a binlog all store it this way.

Strategy: the layout of a DECIMAL(precision, scale) is fixed, so a decoder
is built once per (precision, scale), combining the digit groups in one
expression, and kept.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Callable

Decode = Callable[[bytes, int], tuple[object, int]]

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return (intg // 9 * 4 + _DIG2BYTES[intg % 9]
            + scale // 9 * 4 + _DIG2BYTES[scale % 9])


def decode_decimal(buf: bytes, pos: int, precision: int, scale: int) -> tuple[Decimal, int]:
    """MySQL binary DECIMAL (strings/decimal.cc `bin2decimal`) at `pos`:
    groups of 9 digits in 4 big-endian bytes, leftover digits in fewer bytes,
    the sign in the top bit, negative numbers stored inverted."""
    return decimal_decoder(precision, scale)(buf, pos)


def decimal_groups(precision: int, scale: int) -> list[tuple[int, int, int]]:
    """(bit shift, mask, decimal weight) of each digit group, read from one
    big-endian int of the whole value: the layout is fixed per column."""
    intg = precision - scale
    widths = ([(_DIG2BYTES[intg % 9], intg % 9)] if intg % 9 else []) + [(4, 9)] * (intg // 9) \
        + [(4, 9)] * (scale // 9) + ([(_DIG2BYTES[scale % 9], scale % 9)] if scale % 9 else [])
    groups, shift, digits_after = [], 0, 0
    for nbytes, ndigits in reversed(widths):
        groups.append((shift, (1 << (8 * nbytes)) - 1, 10 ** digits_after))
        shift += 8 * nbytes
        digits_after += ndigits
    return groups


@functools.lru_cache(maxsize=None)
def decimal_decoder(precision: int, scale: int) -> Decode:
    return _newdecimal(precision << 8 | scale)


def _newdecimal(meta: int) -> Decode:
    precision, scale = meta >> 8, meta & 0xFF
    size = decimal_size(precision, scale)
    sign_bit = 1 << (8 * size - 1)
    all_bits = (1 << (8 * size)) - 1
    # The digit groups combined in one expression, built once per column.
    terms = " + ".join(f"((raw >> {shift}) & {mask}) * {weight}"
                       for shift, mask, weight in decimal_groups(precision, scale)) or "0"
    combine = eval(f"lambda raw: {terms}")  # only integers of our own making go in
    suffix = f"e-{scale}"  # a string keeps every digit; scaleb() would round to 28
    # Amounts repeat (prices, rates): a Decimal is immutable, so equal bytes can
    # share one object. Bounded: the cache is dropped when it grows too big.
    cache: dict = {}

    def decode(buf, pos):
        end = pos + size
        key = buf[pos:end]
        value = cache.get(key)
        if value is not None:
            return value, end
        if len(cache) > 4096:
            cache.clear()
        raw = int.from_bytes(key, "big")
        negative = not raw & sign_bit
        raw ^= sign_bit
        if negative:
            raw ^= all_bits
        unscaled = combine(raw)
        value = cache[key] = Decimal(f"{'-' if negative else ''}{unscaled}{suffix}")
        return value, end
    decode.cache = cache
    return decode
