"""Little-endian reads over an event body, bounded to exactly that body.

Rule: every read checks the bound and raises CorruptEvent naming the file and
the absolute byte offset; nothing reads past the end silently and a decoder
can ask `at_end()` to prove it consumed everything.
"""

from __future__ import annotations

import struct

from binlake.errors import CorruptEvent

_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_I64 = struct.Struct("<q").unpack_from
_F64 = struct.Struct("<d").unpack_from


class Cursor:
    """A read position in `buf[pos:end]`; `base` maps it to the file offset."""

    __slots__ = ("buf", "pos", "end", "base", "file")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None,
                 base: int = 0, file: str = "<bytes>"):
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.base = base
        self.file = file

    # -- bounds -----------------------------------------------------------
    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def offset(self) -> int:
        """Absolute file offset of the read position."""
        return self.base + self.pos

    def error(self, detail: str) -> CorruptEvent:
        return CorruptEvent(self.file, self.offset(), detail)

    def _need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise self.error(f"needs {n} bytes, only {self.end - p} left in the event")
        self.pos = p + n
        return p

    def sub(self, n: int) -> "Cursor":
        """A cursor over the next n bytes; this one moves past them."""
        p = self._need(n)
        return Cursor(self.buf, p, p + n, self.base, self.file)

    def expect_end(self, what: str) -> None:
        if self.pos != self.end:
            raise self.error(f"{self.end - self.pos} unread bytes after {what}")

    # -- fixed-width integers ---------------------------------------------
    # (the bound check is written out in the most used reads: a call less per field)
    def u8(self) -> int:
        p = self.pos
        if p >= self.end:
            self._need(1)
        self.pos = p + 1
        return self.buf[p]

    def u16(self) -> int:
        p = self.pos
        if p + 2 > self.end:
            self._need(2)
        self.pos = p + 2
        return _U16(self.buf, p)[0]

    def u24(self) -> int:
        p = self._need(3)
        b = self.buf
        return b[p] | b[p + 1] << 8 | b[p + 2] << 16

    def u32(self) -> int:
        p = self.pos
        if p + 4 > self.end:
            self._need(4)
        self.pos = p + 4
        return _U32(self.buf, p)[0]

    def u48(self) -> int:
        return int.from_bytes(self.buf[self._need(6):self.pos], "little")

    def u64(self) -> int:
        p = self.pos
        if p + 8 > self.end:
            self._need(8)
        self.pos = p + 8
        return _U64(self.buf, p)[0]

    def i64(self) -> int:
        return _I64(self.buf, self._need(8))[0]

    def fields(self, spec: "Fields") -> tuple:
        """Consecutive fixed-width fields in one bound check; short data fails
        at the field that does not fit, as reading them one by one would."""
        p = self.pos
        if p + spec.size > self.end:
            for size in spec.sizes:
                self._need(size)
        self.pos = p + spec.size
        return spec.unpack(self.buf, p)

    def f64(self) -> float:
        return _F64(self.buf, self._need(8))[0]

    def uint(self, n: int) -> int:
        """An n-byte little-endian unsigned integer."""
        p = self._need(n)
        return int.from_bytes(self.buf[p:p + n], "little")

    def uint_be(self, n: int) -> int:
        p = self._need(n)
        return int.from_bytes(self.buf[p:p + n], "big")

    def packed_int(self) -> int | None:
        """Length-encoded integer (net_field_length): 1, 3, 4 or 9 bytes; 251 is NULL."""
        first = self.u8()
        if first < 251:
            return first
        if first == 251:
            return None
        if first == 252:
            return self.u16()
        if first == 253:
            return self.u24()
        if first == 254:
            return self.u64()
        raise self.error("invalid length-encoded integer prefix 0xff")

    def packed_len(self) -> int:
        n = self.packed_int()
        if n is None:
            raise self.error("unexpected NULL length")
        return n

    # -- byte strings -----------------------------------------------------
    def bytes(self, n: int) -> bytes:
        p = self._need(n)
        return bytes(self.buf[p:p + n])

    def rest(self) -> bytes:
        p, end = self.pos, self.end
        if p > end:
            self._need(end - p)
        self.pos = end
        return bytes(self.buf[p:end])

    def cstring(self) -> bytes:
        """Bytes up to a NUL terminator (consumed, not returned)."""
        buf, p = self.buf, self.pos
        nul = buf.find(b"\0", p, self.end)
        if nul < 0:
            raise self.error("string is not NUL-terminated")
        self.pos = nul + 1
        return bytes(buf[p:nul])

    def lstring1(self) -> bytes:
        """One length byte, then that many bytes."""
        return self.bytes(self.u8())

    def lstring_packed(self) -> bytes:
        return self.bytes(self.packed_len())

    def fixed_string(self, n: int) -> bytes:
        """n bytes, NUL-padded; the padding is dropped."""
        raw = self.bytes(n)
        idx = raw.find(b"\0")
        return raw if idx < 0 else raw[:idx]

    def bitmap(self, nbits: int) -> int:
        """A bitmap of nbits as an int; bit i is column i (LSB first in each byte)."""
        return self.uint((nbits + 7) // 8)


class Fields:
    """A run of fixed-width little-endian fields for `Cursor.fields`: a
    `struct` format, and each field's width on the wire (`sizes`, needed
    where a wire field is split in the format, e.g. a 6-byte table id read
    as "IH")."""

    __slots__ = ("unpack", "size", "sizes")

    def __init__(self, fmt: str, sizes: tuple | None = None):
        compiled = struct.Struct(fmt)
        self.unpack = compiled.unpack_from
        self.size = compiled.size
        self.sizes = sizes or tuple(struct.calcsize("<" + c) for c in fmt.lstrip("<"))
        assert sum(self.sizes) == self.size, fmt


def text(raw: bytes) -> str:
    """Identifiers and statements: UTF-8 when valid, else latin-1 (byte-preserving)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")
