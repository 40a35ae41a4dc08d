"""Bit helpers of python-mysql-replication's public API (bitmaps as bytes, bit 0 first)."""


def BitCount(bitmap) -> int:  # noqa: N802 - the upstream name
    """How many bits are set."""
    return sum(bin(b if isinstance(b, int) else ord(b)).count("1") for b in bitmap)


def BitGet(bitmap, position: int) -> int:  # noqa: N802
    """The bit at `position` (non-zero when set)."""
    byte = bitmap[position // 8]
    return (byte if isinstance(byte, int) else ord(byte)) & (1 << (position & 7))
