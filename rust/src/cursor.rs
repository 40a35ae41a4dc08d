//! Bounded little-endian reads over one event body.
//!
//! Rule: a cursor covers exactly the bytes a decoder may read; reading past
//! its end is a `CorruptEvent` naming the file offset of the short read, never
//! a panic or a silent zero. `base` is the file offset of `buf[0]`.

use crate::error::{Error, Result};

#[derive(Clone)]
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], base: u64) -> Self {
        Cursor { buf, pos: 0, base }
    }

    /// File offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn error(&self, detail: impl Into<String>) -> Error {
        Error::corrupt(self.offset(), detail)
    }

    /// The next `n` bytes, checked against what is left before anything is done with `n`.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "needs {n} bytes, only {} left in the event",
                self.remaining()
            )));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// A cursor over the next `n` bytes; this one moves past them.
    pub fn sub(&mut self, n: usize) -> Result<Cursor<'a>> {
        let base = self.offset();
        Ok(Cursor::new(self.bytes(n)?, base))
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    /// Unsigned little-endian integer of `n` (1-8) bytes.
    pub fn uint(&mut self, n: usize) -> Result<u64> {
        Ok(le_uint(self.bytes(n)?))
    }

    pub fn u16(&mut self) -> Result<u16> {
        Ok(self.uint(2)? as u16)
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(self.uint(4)? as u32)
    }

    pub fn u48(&mut self) -> Result<u64> {
        self.uint(6)
    }

    pub fn u64(&mut self) -> Result<u64> {
        self.uint(8)
    }

    pub fn i64(&mut self) -> Result<i64> {
        Ok(self.uint(8)? as i64)
    }

    /// The next byte without moving (None at the end).
    pub fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    /// One length byte, then that many bytes.
    pub fn lstring1(&mut self) -> Result<&'a [u8]> {
        let n = self.u8()? as usize;
        self.bytes(n)
    }

    /// A packed length, then that many bytes.
    pub fn lstring_packed(&mut self) -> Result<&'a [u8]> {
        let n = self.packed_len()?;
        if n > self.remaining() as u64 {
            return Err(self.error(format!(
                "needs {n} bytes, only {} left in the event",
                self.remaining()
            )));
        }
        self.bytes(n as usize)
    }

    /// Bytes up to a NUL terminator (consumed, not returned).
    pub fn cstring(&mut self) -> Result<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        match memchr::memchr(0, rest) {
            Some(n) => {
                self.pos += n + 1;
                Ok(&rest[..n])
            }
            None => Err(self.error("string is not NUL-terminated")),
        }
    }

    /// MySQL's packed integer (`net_field_length_ll`): < 251 in one byte,
    /// 252/253/254 followed by 2, 3 or 8 bytes. 251 (NULL) is not a length.
    /// Errors name the offset after the prefix byte, as cursor.py's do.
    pub fn packed_len(&mut self) -> Result<u64> {
        let first = self.u8()?;
        match first {
            0..=250 => Ok(first as u64),
            251 => Err(self.error("unexpected NULL length")),
            252 => self.uint(2),
            253 => self.uint(3),
            254 => self.uint(8),
            _ => Err(self.error("invalid length-encoded integer prefix 0xff")),
        }
    }

    /// A packed length that must fit in what is left of the body.
    pub fn packed_size(&mut self) -> Result<usize> {
        let n = self.packed_len()?;
        if n > self.remaining() as u64 {
            return Err(self.error(format!(
                "length {n} runs past the end of the event ({} bytes left)",
                self.remaining()
            )));
        }
        Ok(n as usize)
    }

    /// A bitmap of `bits` bits (bit i = column i), as little-endian bytes.
    pub fn bitmap(&mut self, bits: usize) -> Result<&'a [u8]> {
        self.bytes(bits.div_ceil(8))
    }
}

/// Little-endian unsigned integer of up to 8 bytes.
#[inline]
pub fn le_uint(bytes: &[u8]) -> u64 {
    let mut v = 0u64;
    for (i, b) in bytes.iter().take(8).enumerate() {
        v |= (*b as u64) << (8 * i);
    }
    v
}

/// Big-endian unsigned integer of up to 8 bytes.
#[inline]
pub fn be_uint(bytes: &[u8]) -> u64 {
    let mut v = 0u64;
    for b in bytes.iter().take(8) {
        v = v << 8 | *b as u64;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_read_is_an_error_with_the_offset() {
        let mut c = Cursor::new(&[1, 2, 3], 100);
        assert_eq!(c.u16().unwrap(), 0x0201);
        let e = c.u32().unwrap_err();
        assert_eq!(e.offset, 102);
    }

    #[test]
    fn packed_lengths() {
        let mut c = Cursor::new(&[250, 252, 1, 2, 253, 1, 0, 0, 251], 0);
        assert_eq!(c.packed_len().unwrap(), 250);
        assert_eq!(c.packed_len().unwrap(), 0x0201);
        assert_eq!(c.packed_len().unwrap(), 1);
        assert!(c.packed_len().is_err());
    }
}
