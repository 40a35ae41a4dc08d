//! Text pieces more than one sink writes the same way (the Python path's
//! `_frac` and base64 of bytes): one writer each, so the views cannot drift.

use base64::Engine;

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
