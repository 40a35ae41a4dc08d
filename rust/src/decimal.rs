//! Integers as decimal text without `fmt`: every number a sink writes and
//! every GTID goes through here, so the digits are produced in a stack
//! buffer and copied once.

/// The decimal digits of `v`, written at the end of `buf`.
#[inline]
pub fn digits(buf: &mut [u8; 20], mut v: u64) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    &buf[i..]
}

/// `v` in decimal.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(digits(&mut [0; 20], v));
}

/// `v` in decimal, `-` first when negative.
#[inline]
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_display_writes_them() {
        for v in [0, 1, 9, 10, 99, 12345, i64::MAX, i64::MIN, -1, -10] {
            let mut out = Vec::new();
            push_i64(&mut out, v);
            assert_eq!(out, v.to_string().as_bytes());
        }
        let mut out = Vec::new();
        push_u64(&mut out, u64::MAX);
        assert_eq!(out, u64::MAX.to_string().as_bytes());
    }
}
