//! `binlake dump --format json` natively: the JSON line of an event, and the
//! `rows` of a rows event, byte for byte as `binlake.text.jsonable.event_json`
//! writes them.
//!
//! Strategy: a line is the header's fields, then the event's `info` (the
//! events view's JSON of its fields, `sink::events`), then for a rows event
//! `"rows": [{"before": ..., "after": ...}, ...]`. Each value is written as
//! `json.dumps(..., ensure_ascii=False)` writes the Python value the
//! reference makes of it (`values.py`), through `to_jsonable` where json
//! cannot encode it itself: Decimal as `str(Decimal)`, date and datetime as
//! `isoformat(sep=" ")` (a TIMESTAMP is an aware UTC datetime: `+00:00`),
//! TIME as `time_text`, bytes as `{"base64": ...}`, SET members sorted.
//!
//! Rule: what this writer cannot write exactly as the reference does (a
//! partial JSON update, a value the reference refuses) is `unsupported`:
//! the caller hands the event, and the rest of the file, to the reference.

use std::io::Write as _;

use crate::decimal::push_u64;
use crate::events::event_type_name;
use crate::framing::Frame;
use crate::layout::{Column, Layout};
use crate::rowimage::{
    civil_from_days, DateTimeParts, DecimalValue, Operation, Plan, Role, RowSink, TimeParts,
    ValueError, ValueResult, ValueSink,
};

use super::arrow::{push_cp1252, push_json_float, push_json_vector, TextCodec, TextHelper};
use super::events::{json_bytes, json_string, json_strings, json_text, push_checksum};
use super::texts::{push_datetime, push_int, push_padded, push_time, valid_datetime};

/// What every line of a file starts alike with, made once: `{"file": ...,
/// "pos": ` and, by type code, `, "type": ..., "type_code": N, "timestamp": `.
pub struct LineHead {
    file: Vec<u8>,
    types: Vec<Option<Vec<u8>>>,
}

impl LineHead {
    pub fn new(file: &str) -> Self {
        let mut start = b"{\"file\": ".to_vec();
        json_string(&mut start, file);
        start.extend_from_slice(b", \"pos\": ");
        LineHead {
            file: start,
            types: vec![None; 256],
        }
    }

    fn type_fields(&mut self, code: u8) -> &[u8] {
        self.types[code as usize].get_or_insert_with(|| {
            let mut text = b", \"type\": ".to_vec();
            json_string(&mut text, &event_type_name(code));
            text.extend_from_slice(b", \"type_code\": ");
            push_u64(&mut text, code.into());
            text.extend_from_slice(b", \"timestamp\": ");
            text
        })
    }
}

/// An event's line up to its rows: `{`, the header's fields, then the
/// fields of its `info` object (`{...}`), merged as `event_json` merges them
/// in one dict: a field named as a header field (`flags`, ...) takes that
/// key's place, the others follow. `file`: the JSON string of the path the
/// reader was given. `may_collide` false: `info` is known to have no header
/// field (it is then not scanned).
pub fn push_line_head(
    out: &mut Vec<u8>,
    head: &mut LineHead,
    frame: &Frame,
    info: &[u8],
    may_collide: bool,
) {
    let mut overrides: [Option<&[u8]>; 10] = [None; 10];
    let mut any = false;
    if may_collide {
        for_each_field(info, |key, value| {
            if let Some(i) = header_key(key) {
                overrides[i] = Some(value);
                any = true;
            }
        });
    }
    push_header(out, head, frame, &overrides);
    if !any {
        // nothing taken out: the fields follow as they are
        if info.len() > 2 {
            out.extend_from_slice(b", ");
            out.extend_from_slice(&info[1..info.len() - 1]);
        }
        return;
    }
    for_each_field(info, |key, value| {
        if header_key(key).is_none() {
            out.extend_from_slice(b", ");
            out.extend_from_slice(key);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
        }
    });
}

/// A table map's line up to its end (`table_map_info`'s fields, its `flags`
/// in the header's place), without scanning the shared fields.
pub fn push_table_map_head(
    out: &mut Vec<u8>,
    head: &mut LineHead,
    frame: &Frame,
    table_id: u64,
    flags: u16,
    fields: &[u8],
) {
    let mut flags_text = Vec::with_capacity(5);
    push_u64(&mut flags_text, flags.into());
    let mut overrides: [Option<&[u8]>; 10] = [None; 10];
    overrides[9] = Some(&flags_text);
    push_header(out, head, frame, &overrides);
    if let Some(c) = frame.checksum {
        out.extend_from_slice(b", \"checksum\": ");
        push_checksum(out, c);
    }
    out.extend_from_slice(b", \"table_id\": ");
    push_u64(out, table_id);
    if !fields.is_empty() {
        out.extend_from_slice(b", ");
        out.extend_from_slice(fields);
    }
}

/// `{` and the header's fields, each from `overrides` where given.
fn push_header(
    out: &mut Vec<u8>,
    head: &mut LineHead,
    frame: &Frame,
    overrides: &[Option<&[u8]>; 10],
) {
    let next_pos = frame.pos + u64::from(frame.length);
    if overrides[..9].iter().all(Option::is_none) {
        // the common line: its constant parts copied whole
        out.extend_from_slice(&head.file);
        push_u64(out, frame.pos);
        out.extend_from_slice(b", \"next_pos\": ");
        push_u64(out, next_pos);
        out.extend_from_slice(b", \"length\": ");
        push_u64(out, frame.length.into());
        out.extend_from_slice(head.type_fields(frame.type_code));
        push_u64(out, frame.timestamp.into());
        out.extend_from_slice(b", \"server_id\": ");
        push_u64(out, frame.server_id.into());
        out.extend_from_slice(b", \"log_pos\": ");
        push_u64(out, frame.log_pos.into());
        out.extend_from_slice(b", \"flags\": ");
        match overrides[9] {
            Some(value) => out.extend_from_slice(value),
            None => push_u64(out, frame.flags.into()),
        }
        return;
    }
    let numbers: [u64; 10] = [
        0,
        frame.pos,
        next_pos,
        frame.length.into(),
        0,
        frame.type_code.into(),
        frame.timestamp.into(),
        frame.server_id.into(),
        frame.log_pos.into(),
        frame.flags.into(),
    ];
    for (i, prefix) in HEADER_PREFIXES.iter().enumerate() {
        out.extend_from_slice(prefix.as_bytes());
        match (overrides[i], i) {
            (Some(value), _) => out.extend_from_slice(value),
            // the file's JSON string: the start of the line without its `{"file": ` and `, "pos": `
            (None, 0) => out.extend_from_slice(&head.file[9..head.file.len() - 9]),
            (None, 4) => json_string(out, &event_type_name(frame.type_code)),
            (None, _) => push_u64(out, numbers[i]),
        }
    }
}

/// What precedes each header field's value in a line.
const HEADER_PREFIXES: [&str; 10] = [
    "{\"file\": ",
    ", \"pos\": ",
    ", \"next_pos\": ",
    ", \"length\": ",
    ", \"type\": ",
    ", \"type_code\": ",
    ", \"timestamp\": ",
    ", \"server_id\": ",
    ", \"log_pos\": ",
    ", \"flags\": ",
];

/// `EventHeader`'s fields in `event_json`'s order.
const HEADER_KEYS: [&str; 10] = [
    "file",
    "pos",
    "next_pos",
    "length",
    "type",
    "type_code",
    "timestamp",
    "server_id",
    "log_pos",
    "flags",
];

/// Which header field a key (with its quotes) names.
fn header_key(key: &[u8]) -> Option<usize> {
    let name = key.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    HEADER_KEYS.iter().position(|k| k.as_bytes() == name)
}

/// Each top-level (key, value) of a JSON object written by this crate's
/// writers (`", "` and `": "` separators): the key with its quotes, the
/// value as written. Strings are skipped with memchr: a long query text
/// costs little.
fn for_each_field<'a>(object: &'a [u8], mut each: impl FnMut(&'a [u8], &'a [u8])) {
    let body = match object {
        [b'{', body @ .., b'}'] => body,
        _ => return,
    };
    let mut depth = 0usize;
    let mut start = 0;
    let mut colon = None;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'"' => {
                // to the closing quote: the first one not escaped
                let mut j = i + 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', &body[j.min(body.len())..]) {
                        Some(k) if body[j + k] == b'\\' => j += k + 2,
                        Some(k) => {
                            j += k;
                            break;
                        }
                        None => {
                            j = body.len();
                            break;
                        }
                    }
                }
                i = j;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && colon.is_none() => colon = Some(i),
            b',' if depth == 0 => {
                if let Some(c) = colon.take() {
                    each(&body[start..c], body[c + 1..i].trim_ascii());
                }
                start = i + 2; // ", "
            }
            _ => {}
        }
        i += 1;
    }
    if let Some(c) = colon {
        each(&body[start..c], body[c + 1..].trim_ascii());
    }
}

/// `str(Decimal(f"{sign}{digits}e-{scale}"))`: positional while the
/// adjusted exponent is at least -6, else `dE-n` (General Decimal Arithmetic's
/// to-scientific-string, which Python's Decimal follows).
pub fn push_decimal(out: &mut Vec<u8>, value: &DecimalValue) {
    let digits = value.digits;
    let scale = value.scale as i64;
    let n = digits.len() as i64;
    if value.negative {
        out.push(b'-');
    }
    let adjusted = n - 1 - scale;
    if scale == 0 {
        out.extend_from_slice(digits);
    } else if adjusted >= -6 {
        if n > scale {
            let point = (n - scale) as usize;
            out.extend_from_slice(&digits[..point]);
            out.push(b'.');
            out.extend_from_slice(&digits[point..]);
        } else {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + (scale - n) as usize, b'0');
            out.extend_from_slice(digits);
        }
    } else {
        out.push(digits.first().copied().unwrap_or(b'0'));
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let _ = write!(out, "E-{}", -adjusted);
    }
}

/// `"%04d-%02d-%02d %02d:%02d:%02d"` and `.%06d` when there are microseconds:
/// `datetime.isoformat(sep=" ")`.
fn push_isoformat(out: &mut Vec<u8>, t: &DateTimeParts, micro: u32) {
    push_datetime(out, t.year, t.month, t.day, t.hour, t.minute, t.second);
    if micro != 0 {
        out.push(b'.');
        push_padded(out, micro as u64, 6);
    }
}

/// The reference's text of an invalid temporal value: `"." + ("%06d" % micro)[:fsp]`.
fn push_fsp_fraction(out: &mut Vec<u8>, micro: i64, fsp: u8) {
    super::texts::push_fraction(out, micro, fsp);
}

fn unsupported(what: &str) -> ValueError {
    ValueError {
        unsupported: true,
        detail: format!("{what} is written by the reference"),
    }
}

/// The `rows` list of one rows event, written into `out` row by row.
pub struct JsonRows<'a, H> {
    pub out: &'a mut Vec<u8>,
    pub helper: &'a mut H,
    /// Each column's codec, by index.
    pub codecs: &'a [TextCodec],
    /// Each column's key as `, "key": `, by index (an image's first value
    /// leaves out the `, `).
    pub keys: &'a [Vec<u8>],
    rows: usize,
    first_value: bool,
    had_before: bool,
    had_after: bool,
}

impl<'a, H: TextHelper> JsonRows<'a, H> {
    pub fn new(
        out: &'a mut Vec<u8>,
        helper: &'a mut H,
        codecs: &'a [TextCodec],
        keys: &'a [Vec<u8>],
    ) -> Self {
        out.push(b'[');
        JsonRows {
            out,
            helper,
            codecs,
            keys,
            rows: 0,
            first_value: true,
            had_before: false,
            had_after: false,
        }
    }

    /// A writer that goes on with a list already holding `rows` rows (a
    /// huge event's rows, written a window at a time).
    pub fn continuing(
        out: &'a mut Vec<u8>,
        helper: &'a mut H,
        codecs: &'a [TextCodec],
        keys: &'a [Vec<u8>],
        rows: usize,
    ) -> Self {
        JsonRows {
            out,
            helper,
            codecs,
            keys,
            rows,
            first_value: true,
            had_before: false,
            had_after: false,
        }
    }

    pub fn finish(self) {
        self.out.push(b']');
    }

    /// A value's key (and the separator before it); its JSON follows.
    #[inline]
    fn key(&mut self, col: &Column) -> &mut Vec<u8> {
        let skip = if self.first_value { 2 } else { 0 };
        self.first_value = false;
        match self.keys.get(col.index) {
            Some(key) => self.out.extend_from_slice(&key[skip..]),
            None => {
                self.out.extend_from_slice(&b", "[skip..]);
                json_string(self.out, &col.key());
                self.out.extend_from_slice(b": ");
            }
        }
        self.out
    }

    fn quoted(&mut self, col: &Column, write: impl FnOnce(&mut Vec<u8>)) -> ValueResult {
        let out = self.key(col);
        out.push(b'"');
        write(out);
        out.push(b'"');
        Ok(())
    }

    /// Character data: a string when valid in the column's charset, else bytes.
    fn text(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let codec = self.codecs.get(col.index).unwrap_or(&TextCodec::Binary);
        let text: Option<std::borrow::Cow<[u8]>> = match codec {
            TextCodec::Binary => None,
            TextCodec::Utf8 => simdutf8::basic::from_utf8(bytes)
                .ok()
                .map(|s| s.as_bytes().into()),
            TextCodec::Ascii => bytes.is_ascii().then_some(bytes.into()),
            TextCodec::Cp1252 => {
                let mut decoded = Vec::with_capacity(bytes.len() + 8);
                push_cp1252(&mut decoded, bytes).then_some(decoded.into())
            }
            TextCodec::Other => {
                let mut decoded = Vec::new();
                self.helper
                    .decode(col, bytes, &mut decoded)?
                    .then_some(decoded.into())
            }
        };
        let out = self.key(col);
        match text {
            // valid UTF-8 by construction (checked, ASCII, or made from chars)
            Some(t) => json_text(out, &t),
            None => json_bytes(out, bytes),
        }
        Ok(())
    }
}

impl<H: TextHelper> ValueSink for JsonRows<'_, H> {
    fn null(&mut self, col: &Column) -> ValueResult {
        self.key(col).extend_from_slice(b"null");
        Ok(())
    }

    fn int(&mut self, col: &Column, value: i64, bytes: u8) -> ValueResult {
        push_int(self.key(col), col.unsigned, value, bytes);
        Ok(())
    }

    fn float(&mut self, col: &Column, value: f32) -> ValueResult {
        push_json_float(self.key(col), value as f64);
        Ok(())
    }

    fn double(&mut self, col: &Column, value: f64) -> ValueResult {
        push_json_float(self.key(col), value);
        Ok(())
    }

    fn decimal(&mut self, col: &Column, value: &DecimalValue, _raw: &[u8]) -> ValueResult {
        self.quoted(col, |out| push_decimal(out, value))
    }

    fn year(&mut self, col: &Column, year: u32) -> ValueResult {
        push_u64(self.key(col), year as u64);
        Ok(())
    }

    fn date(&mut self, col: &Column, year: u32, month: u32, day: u32) -> ValueResult {
        // date.isoformat() and the reference's text of an invalid date agree
        self.quoted(col, |out| {
            push_padded(out, year as u64, 4);
            out.push(b'-');
            push_padded(out, month as u64, 2);
            out.push(b'-');
            push_padded(out, day as u64, 2);
        })
    }

    fn datetime(&mut self, col: &Column, t: DateTimeParts, _raw: &[u8]) -> ValueResult {
        let valid = valid_datetime(&t);
        self.quoted(col, |out| {
            if valid {
                push_isoformat(out, &t, t.micro as u32);
            } else {
                push_datetime(out, t.year, t.month, t.day, t.hour, t.minute, t.second);
                push_fsp_fraction(out, t.micro as i64, t.fsp);
            }
        })
    }

    fn datetime_negative(&mut self, col: &Column, packed: i64, _raw: &[u8]) -> ValueResult {
        self.quoted(col, |out| {
            let _ = write!(out, "-{}", -(packed as i128));
        })
    }

    fn timestamp(&mut self, col: &Column, seconds: u32, micro: u32, fsp: u8) -> ValueResult {
        if micro >= 1_000_000 {
            return Err(unsupported("a TIMESTAMP the reference refuses"));
        }
        self.quoted(col, |out| {
            if seconds == 0 && micro == 0 {
                out.extend_from_slice(b"0000-00-00 00:00:00");
                push_fsp_fraction(out, 0, fsp);
                return;
            }
            let secs = seconds as i64;
            let (year, month, day) = civil_from_days(secs.div_euclid(86400));
            let rem = secs.rem_euclid(86400) as u32;
            let t = DateTimeParts {
                year: year as u32,
                month,
                day,
                hour: rem / 3600,
                minute: rem / 60 % 60,
                second: rem % 60,
                micro: micro as i32,
                fsp,
            };
            push_isoformat(out, &t, micro);
            out.extend_from_slice(b"+00:00");
        })
    }

    fn time(&mut self, col: &Column, t: TimeParts, _raw: &[u8]) -> ValueResult {
        // `time_text` of the timedelta: `.%06d` only when there are microseconds
        self.quoted(col, |out| {
            let frac = push_time(out, &t);
            if frac != 0 {
                out.push(b'.');
                push_padded(out, frac, 6);
            }
        })
    }

    fn bit(&mut self, col: &Column, value: u64, _raw: &[u8]) -> ValueResult {
        push_u64(self.key(col), value);
        Ok(())
    }

    fn string(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        self.text(col, bytes)
    }

    fn blob(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        self.text(col, bytes)
    }

    fn geometry(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        json_bytes(self.key(col), bytes);
        Ok(())
    }

    fn json(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        let mut text = Vec::new();
        self.helper.json(col, bytes, &mut text)?;
        let text = std::str::from_utf8(&text).map_err(|_| unsupported("a JSON text"))?;
        json_string(self.key(col), text);
        Ok(())
    }

    fn json_diff(&mut self, _col: &Column, _bytes: &[u8]) -> ValueResult {
        Err(unsupported("a partial JSON update"))
    }

    fn vector(&mut self, col: &Column, bytes: &[u8]) -> ValueResult {
        push_json_vector(self.key(col), bytes);
        Ok(())
    }

    fn enum_index(&mut self, col: &Column, index: u16, _raw: &[u8]) -> ValueResult {
        let out = self.key(col);
        match &col.enum_values {
            None => push_u64(out, index as u64),
            Some(names) => {
                let name = (index as usize)
                    .checked_sub(1)
                    .and_then(|i| names.get(i))
                    .map_or("", String::as_str);
                json_string(out, name);
            }
        }
        Ok(())
    }

    fn set_mask(&mut self, col: &Column, mask: u64, _raw: &[u8]) -> ValueResult {
        let out = self.key(col);
        match &col.set_values {
            None => push_u64(out, mask),
            Some(names) => {
                // a frozenset of names: `to_jsonable` sorts it (duplicates are one member)
                let mut members: Vec<&str> = names
                    .iter()
                    .enumerate()
                    .take(64)
                    .filter(|(i, _)| mask >> i & 1 == 1)
                    .map(|(_, n)| n.as_str())
                    .collect();
                members.sort_unstable();
                members.dedup();
                json_strings(out, &members);
            }
        }
        Ok(())
    }
}

impl<H: TextHelper> RowSink for JsonRows<'_, H> {
    fn start_row(&mut self, _operation: Operation) -> ValueResult {
        if self.rows > 0 {
            self.out.extend_from_slice(b", ");
        }
        self.rows += 1;
        self.out.extend_from_slice(b"{\"before\": ");
        self.had_before = false;
        self.had_after = false;
        Ok(())
    }

    fn start_image(&mut self, role: Role, _plan: &Plan) -> ValueResult {
        if role == Role::After {
            if !self.had_before {
                self.out.extend_from_slice(b"null");
            }
            self.out.extend_from_slice(b", \"after\": ");
            self.had_after = true;
        }
        self.out.push(b'{');
        self.first_value = true;
        Ok(())
    }

    fn end_image(&mut self, role: Role) -> ValueResult {
        self.out.push(b'}');
        if role == Role::Before {
            self.had_before = true;
        }
        Ok(())
    }

    fn end_row(&mut self) -> ValueResult {
        if !self.had_after {
            self.out.extend_from_slice(b", \"after\": null");
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// Each column's key as `, "key": ` (`JsonRows::keys`).
pub fn column_keys(layout: &Layout) -> Vec<Vec<u8>> {
    layout
        .columns
        .iter()
        .map(|c| {
            let mut key = b", ".to_vec();
            json_string(&mut key, &c.key());
            key.extend_from_slice(b": ");
            key
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(negative: bool, digits: &str, scale: u8) -> String {
        let mut out = Vec::new();
        let value = DecimalValue {
            negative,
            digits: digits.as_bytes(),
            scale,
        };
        push_decimal(&mut out, &value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn decimals_as_python_str_writes_them() {
        // str(Decimal(...)) of each, from CPython 3.11
        assert_eq!(decimal(false, "12345", 2), "123.45");
        assert_eq!(decimal(false, "5", 0), "5");
        assert_eq!(decimal(false, "0", 2), "0.00");
        assert_eq!(decimal(true, "0", 2), "-0.00");
        assert_eq!(decimal(false, "5", 3), "0.005");
        assert_eq!(decimal(false, "0", 10), "0E-10");
        assert_eq!(decimal(false, "0", 6), "0.000000");
        assert_eq!(decimal(false, "0", 7), "0E-7");
        assert_eq!(decimal(false, "1234", 10), "1.234E-7");
        assert_eq!(decimal(false, "1234", 9), "0.000001234");
        assert_eq!(decimal(true, "1", 30), "-1E-30");
    }

    #[test]
    fn floats_as_json_dumps_writes_them() {
        let text = |v: f64| {
            let mut out = Vec::new();
            push_json_float(&mut out, v);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(text(1.5), "1.5");
        assert_eq!(text(1e16), "1e+16");
        assert_eq!(text(0.0001), "0.0001");
        assert_eq!(text(0.00001), "1e-05");
        assert_eq!(text(f64::NAN), "NaN");
        assert_eq!(text(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(text(1.100000023841858), "1.100000023841858");
    }
}
