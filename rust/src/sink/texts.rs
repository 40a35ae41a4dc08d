//! Text pieces more than one sink writes the same way (the Python path's
//! DATETIME text, `_frac` and base64 of bytes): one writer each, so the views cannot drift.

use base64::Engine;

/// `%04d-%02d-%02d %02d:%02d:%02d`, without `fmt` (one per temporal value: hot).
pub fn push_datetime(out: &mut Vec<u8>, y: u32, mo: u32, d: u32, h: u32, mi: u32, s: u32) {
    if y < 10_000 && mo < 100 && d < 100 && h < 100 && mi < 100 && s < 100 {
        // every field fits its width: the common case, written in one go
        let two = |v: u32| [b'0' + (v / 10) as u8, b'0' + (v % 10) as u8];
        let (y_hi, y_lo) = (two(y / 100), two(y % 100));
        let (mo, d, h, mi, s) = (two(mo), two(d), two(h), two(mi), two(s));
        out.extend_from_slice(&[
            y_hi[0], y_hi[1], y_lo[0], y_lo[1], b'-', mo[0], mo[1], b'-', d[0], d[1], b' ', h[0],
            h[1], b':', mi[0], mi[1], b':', s[0], s[1],
        ]);
        return;
    }
    push_padded(out, y as u64, 4);
    for (sep, v) in [(b'-', mo), (b'-', d), (b' ', h), (b':', mi), (b':', s)] {
        out.push(sep);
        push_padded(out, v as u64, 2);
    }
}

/// `v` in decimal, zero-padded to `width` digits (Python's `%0Nd` of a non-negative int).
#[inline]
pub fn push_padded(out: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    while v > 0 {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    let start = buf.len() - width.clamp(1, buf.len()).max(buf.len() - i);
    out.extend_from_slice(&buf[start..]);
}

/// `"." + ("%06d" % micro)[:fsp]`, nothing at fsp 0 (a corrupt negative or
/// oversized fraction prints as Python prints it).
pub fn push_fraction(out: &mut Vec<u8>, micro: i64, fsp: u8) {
    if fsp == 0 {
        return;
    }
    out.push(b'.');
    if (0..1_000_000).contains(&micro) {
        let mut digits = [0u8; 6];
        let mut v = micro as u32;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (v % 10) as u8;
            v /= 10;
        }
        out.extend_from_slice(&digits[..(fsp as usize).min(6)]);
        return;
    }
    let digits = format!("{micro:06}");
    out.extend_from_slice(&digits.as_bytes()[..(fsp as usize).min(digits.len())]);
}

/// `bytes` in standard base64 with padding, appended to `out`.
pub fn push_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    let at = out.len();
    out.resize(at + base64::encoded_len(bytes.len(), true).unwrap_or(0), 0);
    let written = base64::engine::general_purpose::STANDARD
        .encode_slice(bytes, &mut out[at..])
        .unwrap_or(0);
    out.truncate(at + written);
}

/// Whether Python's `date` takes it (year 1-9999, a real day of the month).
pub fn valid_date(year: u32, month: u32, day: u32) -> bool {
    if !(1..=9999).contains(&year) || !(1..=12).contains(&month) || day == 0 {
        return false;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    day <= days[month as usize - 1]
}

/// Whether Python's `datetime` takes these parts (else the reference keeps
/// the value as its text).
pub fn valid_datetime(t: &crate::rowimage::DateTimeParts) -> bool {
    valid_date(t.year, t.month, t.day)
        && t.hour < 24
        && t.minute < 60
        && t.second < 60
        && (0..1_000_000).contains(&t.micro)
}

/// An integer column's value as text: a negative read of an UNSIGNED
/// column is its `bytes`-wide two's complement.
#[inline]
pub fn push_int(out: &mut Vec<u8>, unsigned: bool, value: i64, bytes: u8) {
    if unsigned && value < 0 {
        let mask = if bytes >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * bytes)) - 1
        };
        crate::decimal::push_u64(out, value as u64 & mask);
    } else {
        crate::decimal::push_i64(out, value);
    }
}

/// A TIME as a `timedelta` prints it up to its fraction: minutes and
/// seconds carry over, -0 has no sign; returns the microseconds left.
pub fn push_time(out: &mut Vec<u8>, t: &crate::rowimage::TimeParts) -> u64 {
    let total = ((t.hours as u64 * 60 + t.minutes as u64) * 60 + t.seconds as u64) * 1_000_000
        + t.micro as u64;
    let (seconds, frac) = (total / 1_000_000, total % 1_000_000);
    if t.negative && total != 0 {
        out.push(b'-');
    }
    push_padded(out, seconds / 3600, 2);
    out.push(b':');
    push_padded(out, seconds / 60 % 60, 2);
    out.push(b':');
    push_padded(out, seconds % 60, 2);
    frac
}
