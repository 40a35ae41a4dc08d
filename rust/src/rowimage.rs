//! Row images: the wire format of every column value, decoded once, delivered to a sink.
//!
//! Strategy: a rows event repeats one layout for every row, so a `Plan` is
//! built once per (table layout, columns-present bitmap): the present columns
//! and the size of the null bitmap. Decoding an image walks the plan with one
//! `match` on each column's `Kind`, reads the value with bounds checked, and
//! hands it to a `ValueSink` already split into its parts (sign, digits,
//! date fields, ...). The sinks (Python values, mysqlbinlog text, Arrow) only
//! decide what a value becomes; none of them reads the wire format.
//!
//! Rule: this module and `binlake/read/values.py` are the only two places that know
//! how a column type is stored; the differential tests keep them equal.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use flate2::{Decompress, FlushDecompress, Status};

use crate::constants::{MYSQL_TYPE_JSON, PARTIAL_JSON_UPDATES};
use crate::cursor::{be_uint, le_uint};
use crate::layout::{Column, Kind, Layout};

/// Why a value could not be decoded: the offset (in the rows data) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError {
    pub unsupported: bool,
    pub detail: String,
}

impl ValueError {
    pub fn corrupt(detail: impl Into<String>) -> Self {
        ValueError {
            unsupported: false,
            detail: detail.into(),
        }
    }
}

pub type ValueResult<T = ()> = Result<T, ValueError>;

/// A DECIMAL as sign, unscaled digits (ASCII, no leading zeros, "0" for zero) and scale.
pub struct DecimalValue<'a> {
    pub negative: bool,
    pub digits: &'a [u8],
    pub scale: u8,
}

impl DecimalValue<'_> {
    /// The plain text `format(Decimal, 'f')` gives: exactly `scale` fraction digits.
    pub fn write_text(&self, out: &mut Vec<u8>) {
        if self.negative {
            out.push(b'-');
        }
        let scale = self.scale as usize;
        if scale == 0 {
            out.extend_from_slice(self.digits);
            return;
        }
        if self.digits.len() <= scale {
            out.extend_from_slice(b"0.");
            out.resize(out.len() + scale - self.digits.len(), b'0');
            out.extend_from_slice(self.digits);
        } else {
            let cut = self.digits.len() - scale;
            out.extend_from_slice(&self.digits[..cut]);
            out.push(b'.');
            out.extend_from_slice(&self.digits[cut..]);
        }
    }
}

/// DATETIME / DATETIME2 fields as stored (no validation: zero dates arrive as zeros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTimeParts {
    pub year: u32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    /// Microseconds; negative only in DATETIME2 images no server writes.
    pub micro: i32,
    pub fsp: u8,
}

/// TIME / TIME2 as sign and magnitude.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeParts {
    pub negative: bool,
    pub hours: u32,
    pub minutes: u32,
    pub seconds: u32,
    pub micro: u32,
    pub fsp: u8,
}

/// What a decoded value becomes. Each method gets the column and the value's
/// raw bytes as stored (without a length prefix), for sinks that print them.
pub trait ValueSink {
    fn null(&mut self, col: &Column) -> ValueResult;
    /// An integer sign-extended from its stored width (`bytes`); the sink applies signedness.
    fn int(&mut self, col: &Column, value: i64, bytes: u8) -> ValueResult;
    fn float(&mut self, col: &Column, value: f32) -> ValueResult;
    fn double(&mut self, col: &Column, value: f64) -> ValueResult;
    fn decimal(&mut self, col: &Column, value: &DecimalValue, raw: &[u8]) -> ValueResult;
    /// A DECIMAL's stored bytes before its digits are worked out: a sink that
    /// already has a value for these bytes takes it and returns true.
    fn decimal_known(&mut self, _col: &Column, _raw: &[u8]) -> ValueResult<bool> {
        Ok(false)
    }
    /// YEAR: 0, or 1901-2155.
    fn year(&mut self, col: &Column, year: u32) -> ValueResult;
    fn date(&mut self, col: &Column, year: u32, month: u32, day: u32) -> ValueResult;
    fn datetime(&mut self, col: &Column, value: DateTimeParts, raw: &[u8]) -> ValueResult;
    /// A DATETIME2 whose packed value is negative (no server writes one): the number.
    fn datetime_negative(&mut self, col: &Column, packed: i64, raw: &[u8]) -> ValueResult;
    /// TIMESTAMP: seconds since the epoch (UTC) and microseconds; 0/0 is the zero timestamp.
    fn timestamp(&mut self, col: &Column, seconds: u32, micro: u32, fsp: u8) -> ValueResult;
    fn time(&mut self, col: &Column, value: TimeParts, raw: &[u8]) -> ValueResult;
    fn bit(&mut self, col: &Column, value: u64, raw: &[u8]) -> ValueResult;
    /// CHAR / VARCHAR bytes (charset per the column).
    fn string(&mut self, col: &Column, bytes: &[u8]) -> ValueResult;
    /// BLOB / TEXT bytes (charset per the column: binary when none).
    fn blob(&mut self, col: &Column, bytes: &[u8]) -> ValueResult;
    /// MariaDB's compressed VARCHAR and TEXT/BLOB, as stored: a header byte,
    /// then the value as is or deflated (`uncompress`). Sinks of values take
    /// this default: the value, uncompressed, as the column's uncompressed
    /// twin gives it (`string` or `blob`). mysqlbinlog's text prints the
    /// stored bytes.
    fn compressed(&mut self, col: &Column, stored: &[u8]) -> ValueResult {
        let value = uncompress(col, stored)?;
        match col.kind {
            Kind::CompressedString { .. } => self.string(col, &value),
            _ => self.blob(col, &value),
        }
    }
    /// GEOMETRY: 4-byte SRID + WKB.
    fn geometry(&mut self, col: &Column, bytes: &[u8]) -> ValueResult;
    /// MySQL binary JSON (MariaDB logs JSON as a BLOB).
    fn json(&mut self, col: &Column, bytes: &[u8]) -> ValueResult;
    /// A partial JSON update's diffs (PARTIAL_UPDATE_ROWS_EVENT), applied by the sink.
    fn json_diff(&mut self, col: &Column, bytes: &[u8]) -> ValueResult;
    /// VECTOR: little-endian float32s.
    fn vector(&mut self, col: &Column, bytes: &[u8]) -> ValueResult;
    fn enum_index(&mut self, col: &Column, index: u16, raw: &[u8]) -> ValueResult;
    fn set_mask(&mut self, col: &Column, mask: u64, raw: &[u8]) -> ValueResult;
}

/// The present columns of one image and its null bitmap size.
#[derive(Debug)]
pub struct Plan {
    pub columns: Vec<usize>,
    pub null_bytes: usize,
    /// 5.1.0-5.1.15 (PRE_GA) images start with the record's delete-mark bit.
    pub null_shift: u32,
}

impl Plan {
    pub fn new(layout: &Layout, bitmap: &[u8], pre_ga: bool) -> Plan {
        let columns = layout.present(bitmap);
        let (null_bytes, null_shift) = if pre_ga {
            // PRE_GA rows copy the record's null bytes, whose bit 0 is the
            // delete mark; those table maps carry no nullability, so every
            // column is taken as nullable (true for every file of that era).
            ((columns.len() + 8) / 8, 1)
        } else {
            (columns.len().div_ceil(8), 0)
        };
        Plan {
            columns,
            null_bytes,
            null_shift,
        }
    }
}

/// Plans of one layout, by (bitmap, pre_ga): built once, shared by every row.
#[derive(Debug, Default)]
pub struct PlanCache {
    plans: HashMap<(Vec<u8>, bool), Arc<Plan>>,
}

impl PlanCache {
    pub fn get(&mut self, layout: &Layout, bitmap: &[u8], pre_ga: bool) -> Arc<Plan> {
        if let Some(plan) = self.plans.get(&(bitmap.to_vec(), pre_ga)) {
            return plan.clone();
        }
        if self.plans.len() > 256 {
            self.plans.clear(); // bounded: bitmaps of MINIMAL images vary per statement
        }
        let plan = Arc::new(Plan::new(layout, bitmap, pre_ga));
        self.plans.insert((bitmap.to_vec(), pre_ga), plan.clone());
        plan
    }
}

/// Bounded reads over the rows data of one event.
pub struct Images<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Images<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Images { buf, pos: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    fn take(&mut self, n: usize) -> ValueResult<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| {
                ValueError::corrupt(format!(
                    "row image runs past the end of the event (needs {n} bytes at {}, {} left)",
                    self.pos,
                    self.buf.len() - self.pos.min(self.buf.len())
                ))
            })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    #[inline]
    fn length_prefixed(&mut self, len_bytes: u8) -> ValueResult<&'a [u8]> {
        let n = le_uint(self.take(len_bytes as usize)?) as usize;
        self.take(n)
    }

    /// A packed integer (`net_field_length_ll`).
    pub fn packed_len(&mut self) -> ValueResult<u64> {
        let first = self.take(1)?[0];
        match first {
            0..=250 => Ok(first as u64),
            252 => Ok(le_uint(self.take(2)?)),
            253 => Ok(le_uint(self.take(3)?)),
            254 => Ok(le_uint(self.take(8)?)),
            _ => Err(ValueError::corrupt(format!(
                "bad packed integer prefix {first}"
            ))),
        }
    }

    /// One image: the null bitmap, then each present non-null column.
    /// `partial`: table column indexes whose value is a JSON diff.
    pub fn image<S: ValueSink>(
        &mut self,
        layout: &Layout,
        plan: &Plan,
        partial: &[usize],
        sink: &mut S,
    ) -> ValueResult {
        let null_raw = self.take(plan.null_bytes)?;
        let nulls = NullBits {
            raw: null_raw,
            shift: plan.null_shift,
        };
        for (slot, &index) in plan.columns.iter().enumerate() {
            let col = &layout.columns[index];
            if nulls.is_null(slot) {
                sink.null(col)?;
            } else if !partial.is_empty() && partial.contains(&index) {
                let n = le_uint(self.take(4)?) as usize;
                let diff = self.take(n)?;
                sink.json_diff(col, diff)?;
            } else {
                self.value(col, sink)?;
            }
        }
        Ok(())
    }

    /// The partial-JSON columns announced after an update's before image:
    /// value options (packed), then one bit per JSON column of the table.
    pub fn partial_columns(&mut self, layout: &Layout) -> ValueResult<Vec<usize>> {
        let options = self.packed_len()?;
        if options & PARTIAL_JSON_UPDATES == 0 {
            return Ok(Vec::new());
        }
        let json: Vec<usize> = layout
            .columns
            .iter()
            .filter(|c| c.type_code == MYSQL_TYPE_JSON)
            .map(|c| c.index)
            .collect();
        let bits = self.take(json.len().div_ceil(8))?;
        Ok(json
            .iter()
            .enumerate()
            .filter(|(n, _)| bits[n / 8] >> (n % 8) & 1 == 1)
            .map(|(_, &i)| i)
            .collect())
    }

    /// One column value.
    #[inline]
    pub fn value<S: ValueSink>(&mut self, col: &Column, sink: &mut S) -> ValueResult {
        match col.kind {
            Kind::Int { bytes } => {
                let raw = self.take(bytes as usize)?;
                let shift = 64 - 8 * bytes as u32;
                let value = ((le_uint(raw) << shift) as i64) >> shift;
                sink.int(col, value, bytes)
            }
            Kind::Float => {
                let raw = self.take(4)?;
                sink.float(col, f32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
            }
            Kind::Double => {
                let raw = self.take(8)?;
                let mut b = [0u8; 8];
                b.copy_from_slice(raw);
                sink.double(col, f64::from_le_bytes(b))
            }
            Kind::Decimal {
                precision,
                scale,
                size,
            } => {
                let raw = self.take(size as usize)?;
                if sink.decimal_known(col, raw)? {
                    return Ok(());
                }
                let mut digits = [0u8; 96];
                let (negative, len) = decimal_digits(raw, precision, scale, &mut digits);
                let value = DecimalValue {
                    negative,
                    digits: &digits[digits.len() - len..],
                    scale,
                };
                sink.decimal(col, &value, raw)
            }
            Kind::Year => {
                let v = self.take(1)?[0] as u32;
                sink.year(col, if v == 0 { 0 } else { 1900 + v })
            }
            Kind::Date => {
                let v = le_uint(self.take(3)?) as u32;
                sink.date(col, v >> 9, (v >> 5) & 15, v & 31)
            }
            Kind::TimeOld => {
                let raw = self.take(3)?;
                let mut v = le_uint(raw) as i32;
                if v & 0x800000 != 0 {
                    v -= 0x1000000;
                }
                let negative = v < 0;
                let v = v.unsigned_abs();
                let parts = TimeParts {
                    negative,
                    hours: v / 10000,
                    minutes: v / 100 % 100,
                    seconds: v % 100,
                    micro: 0,
                    fsp: 0,
                };
                sink.time(col, parts, raw)
            }
            Kind::DatetimeOld => {
                let raw = self.take(8)?;
                let v = le_uint(raw);
                let (d, t) = (v / 1_000_000, v % 1_000_000);
                let parts = DateTimeParts {
                    year: (d / 10000) as u32,
                    month: (d / 100 % 100) as u32,
                    day: (d % 100) as u32,
                    hour: (t / 10000) as u32,
                    minute: (t / 100 % 100) as u32,
                    second: (t % 100) as u32,
                    micro: 0,
                    fsp: 0,
                };
                sink.datetime(col, parts, raw)
            }
            Kind::TimestampOld => {
                let seconds = le_uint(self.take(4)?) as u32;
                sink.timestamp(col, seconds, 0, 0)
            }
            Kind::Timestamp2 { fsp } => {
                let n = frac_bytes(fsp);
                let raw = self.take(4 + n)?;
                let seconds = be_uint(&raw[..4]) as u32;
                let micro = be_uint(&raw[4..]) as u32 * FRAC_UNIT[n];
                sink.timestamp(col, seconds, micro, fsp)
            }
            Kind::Datetime2 { fsp } => {
                let n = frac_bytes(fsp);
                let raw = self.take(5 + n)?;
                let packed = be_uint(&raw[..5]) as i64 - 0x80_0000_0000;
                if packed < 0 {
                    return sink.datetime_negative(col, packed, raw);
                }
                let mut frac = be_uint(&raw[5..]) as i32;
                if n > 0 && frac & (1 << (8 * n - 1)) != 0 {
                    frac -= 1 << (8 * n); // signed: only negative dates set it
                }
                let (ymd, hms) = ((packed >> 17) as u32, (packed & 0x1FFFF) as u32);
                let ym = ymd >> 5;
                let parts = DateTimeParts {
                    year: ym / 13,
                    month: ym % 13,
                    day: ymd & 31,
                    hour: hms >> 12,
                    minute: (hms >> 6) & 63,
                    second: hms & 63,
                    micro: frac * FRAC_UNIT[n] as i32,
                    fsp,
                };
                sink.datetime(col, parts, raw)
            }
            Kind::Time2 { fsp } => {
                let n = frac_bytes(fsp);
                let raw = self.take(3 + n)?;
                sink.time(col, time2_parts(raw, fsp), raw)
            }
            Kind::TimestampHires { fsp } => {
                let raw = self.take(4 + SEC_PART_BYTES[hires_index(fsp)])?;
                let (seconds, micro) = timestamp_hires(raw, fsp);
                sink.timestamp(col, seconds, micro, fsp)
            }
            Kind::DatetimeHires { fsp } => {
                let raw = self.take(DATETIME_HIRES_BYTES[hires_index(fsp)])?;
                sink.datetime(col, datetime_hires_parts(raw, fsp), raw)
            }
            Kind::TimeHires { fsp } => {
                let raw = self.take(TIME_HIRES_BYTES[hires_index(fsp)])?;
                sink.time(col, time_hires_parts(raw, fsp), raw)
            }
            Kind::Bit { bytes, .. } => {
                let raw = self.take(bytes as usize)?;
                sink.bit(col, be_uint(raw), raw)
            }
            Kind::String { len_bytes } => {
                let bytes = self.length_prefixed(len_bytes)?;
                sink.string(col, bytes)
            }
            Kind::Blob { len_bytes } => {
                let bytes = self.length_prefixed(len_bytes)?;
                sink.blob(col, bytes)
            }
            Kind::CompressedString { len_bytes, .. } | Kind::CompressedBlob { len_bytes } => {
                let stored = self.length_prefixed(len_bytes)?;
                sink.compressed(col, stored)
            }
            Kind::Geometry { len_bytes } => {
                let bytes = self.length_prefixed(len_bytes)?;
                sink.geometry(col, bytes)
            }
            Kind::Json { len_bytes } => {
                let bytes = self.length_prefixed(len_bytes)?;
                sink.json(col, bytes)
            }
            Kind::Vector { len_bytes } => {
                let bytes = self.length_prefixed(len_bytes)?;
                sink.vector(col, bytes)
            }
            Kind::Enum { bytes } => {
                let raw = self.take(bytes as usize)?;
                sink.enum_index(col, le_uint(raw) as u16, raw)
            }
            Kind::Set { bytes } => {
                let raw = self.take(bytes as usize)?;
                sink.set_mask(col, le_uint(raw), raw)
            }
            Kind::Unsupported { type_code } => Err(ValueError {
                unsupported: true,
                detail: format!("column type {type_code} ({})", type_name(type_code)),
            }),
        }
    }
}

// MariaDB's compressed columns (sql/field_comp.cc, 10.3+): the row image holds
// the stored value behind a VARCHAR's or a BLOB's length prefix. Its first
// byte says how it is stored: a method of 0 (high nibble): the value follows
// as is; 8: zlib, bit 3 set for a raw deflate stream (no zlib header and
// checksum, the server's default), the low 3 bits the width of the value's
// length, which follows big-endian, then the stream. An empty value has no
// header byte. The twin of this reader is `binlake/read/values.py` (`uncompress`).

/// The compression method of zlib in the header byte's high nibble.
pub const ZLIB_COMPRESSION_METHOD: u8 = 8;

/// The value of a compressed column from its stored bytes, as the server's
/// `Field_longstr::uncompress` and `uncompress_zlib` read it: a declared length
/// over what the column holds and a stream that does not end within the
/// declared length are corrupt; bytes after the stream's end are ignored, as
/// the server ignores them. The output grows as the stream inflates, so a
/// corrupt length costs no more memory than the stream gives.
pub fn uncompress<'a>(col: &Column, stored: &'a [u8]) -> ValueResult<Cow<'a, [u8]>> {
    let Some((&header, rest)) = stored.split_first() else {
        return Ok(Cow::Borrowed(stored));
    };
    let method = header >> 4;
    if method == 0 {
        return Ok(Cow::Borrowed(rest));
    }
    let fail = |why: String| ValueError::corrupt(format!("compressed column {}: {why}", col.key()));
    if method != ZLIB_COMPRESSION_METHOD {
        return Err(fail(format!(
            "unknown compression method {method} (header byte 0x{header:02x})"
        )));
    }
    let width = (header & 0x07) as usize;
    if rest.len() < width {
        return Err(fail("the value ends inside its length".into()));
    }
    let declared = be_uint(&rest[..width]);
    let limit = match col.kind {
        Kind::CompressedString { max_len, .. } => u64::from(max_len),
        Kind::CompressedBlob { len_bytes } => (1u64 << (8 * u32::from(len_bytes))) - 1,
        _ => 0,
    };
    if declared > limit {
        return Err(fail(format!(
            "the value declares {declared} bytes, more than the column holds ({limit})"
        )));
    }
    inflate_at_most(&rest[width..], declared, header & 0x08 == 0)
        .map(Cow::Owned)
        .ok_or_else(|| {
            fail(format!(
                "the value is not a zlib stream of at most its declared {declared} bytes"
            ))
        })
}

/// One deflate stream (`zlib_header`: zlib-wrapped) inflated whole, None if it
/// is corrupt, does not end, or gives more than `declared` bytes.
fn inflate_at_most(stream: &[u8], declared: u64, zlib_header: bool) -> Option<Vec<u8>> {
    // one byte more than declared tells a stream that runs past it
    let bound = usize::try_from(declared).ok()?.checked_add(1)?;
    let mut inflater = Decompress::new(zlib_header);
    let mut out = Vec::with_capacity(bound.min(64 << 10));
    loop {
        let (read, written) = (inflater.total_in(), inflater.total_out());
        let input = stream.get(usize::try_from(read).ok()?..)?;
        let status = inflater
            .decompress_vec(input, &mut out, FlushDecompress::None)
            .ok()?;
        if out.len() > declared as usize {
            return None;
        }
        if status == Status::StreamEnd {
            return Some(out);
        }
        if out.len() == out.capacity() {
            out.reserve_exact(out.capacity().max(1 << 10).min(bound - out.len()));
        } else if inflater.total_in() == read && inflater.total_out() == written {
            return None; // no progress with room to write: the stream is cut short
        }
    }
}

struct NullBits<'a> {
    raw: &'a [u8],
    shift: u32,
}

impl NullBits<'_> {
    #[inline]
    fn is_null(&self, slot: usize) -> bool {
        let bit = slot + self.shift as usize;
        self.raw
            .get(bit / 8)
            .is_some_and(|b| b >> (bit % 8) & 1 == 1)
    }
}

/// Microseconds per stored fraction unit, by fraction bytes.
const FRAC_UNIT: [u32; 4] = [1, 10000, 100, 1];

#[inline]
pub fn frac_bytes(fsp: u8) -> usize {
    (fsp as usize).div_ceil(2)
}

/// TIME2 (`my_time_packed_from_binary`): 3 bytes of integer part offset by
/// 0x800000, then 0-3 bytes of fraction; a negative time with a fraction
/// borrows one second from the integer part.
pub fn time2_parts(raw: &[u8], fsp: u8) -> TimeParts {
    let n = frac_bytes(fsp);
    let packed: i64 = if n == 3 {
        be_uint(&raw[..6]) as i64 - 0x8000_0000_0000
    } else {
        let mut intpart = be_uint(&raw[..3]) as i64 - 0x80_0000;
        let mut frac = if n > 0 {
            be_uint(&raw[3..3 + n]) as i64
        } else {
            0
        };
        if intpart < 0 && frac != 0 {
            intpart += 1;
            frac -= if n == 1 { 0x100 } else { 0x10000 };
        }
        (intpart << 24) + frac * FRAC_UNIT[n] as i64
    };
    let negative = packed < 0;
    let packed = packed.unsigned_abs();
    let (hms, micro) = (packed >> 24, packed % (1 << 24));
    TimeParts {
        negative,
        hours: ((hms >> 12) % 1024) as u32,
        minutes: ((hms >> 6) % 64) as u32,
        seconds: (hms % 64) as u32,
        micro: micro as u32,
        fsp,
    }
}

// MariaDB's own TIME(n)/DATETIME(n)/TIMESTAMP(n), n 1-6 ("hires": 5.3-10.0,
// and later servers with mysql56_temporal_format=OFF; sql/field.cc
// `Field_*_hires`): big-endian counts of 10^-n seconds, logged under the plain
// type codes with no metadata. Widths by n, as the server names them:

/// Bytes of a hires TIMESTAMP's fraction (`sec_part_bytes`).
pub const SEC_PART_BYTES: [usize; 7] = [0, 1, 1, 2, 2, 3, 3];
/// Bytes of a hires DATETIME (`datetime_hires_bytes`).
pub const DATETIME_HIRES_BYTES: [usize; 7] = [5, 6, 6, 7, 7, 7, 8];
/// Bytes of a hires TIME (`time_hires_bytes`).
pub const TIME_HIRES_BYTES: [usize; 7] = [3, 4, 4, 5, 5, 5, 6];
/// 838:59:59, the largest TIME (include/my_time.h).
pub const TIME_MAX_VALUE_SECONDS: u64 = 838 * 3600 + 59 * 60 + 59;
/// 10^n (`log_10_int`), for n up to 6.
const LOG_10_INT: [u64; 7] = [1, 10, 100, 1000, 10000, 100000, 1000000];

/// `fsp` as an index of the tables above (`Kind::of` allows only 1-6).
#[inline]
fn hires_index(fsp: u8) -> usize {
    (fsp as usize).min(6)
}

/// A hires TIMESTAMP (`Field_timestamp_hires::get_timestamp`): 4 bytes of
/// seconds, then the fraction in 10^-fsp seconds; (seconds, microseconds).
pub fn timestamp_hires(raw: &[u8], fsp: u8) -> (u32, u32) {
    let n = hires_index(fsp);
    let seconds = be_uint(raw.get(..4).unwrap_or(raw)) as u32;
    let frac = be_uint(raw.get(4..4 + SEC_PART_BYTES[n]).unwrap_or_default());
    // 1 byte at fsp 1-2, 2 at 3-4, 3 at 5-6: below 10^8 when scaled, fits
    (seconds, (frac * LOG_10_INT[6 - n]) as u32)
}

/// A hires count of 10^-fsp seconds as (whole seconds, microseconds), split
/// before scaling so that no count of the stored width can overflow.
#[inline]
fn hires_seconds(count: u64, fsp: u8) -> (u64, u32) {
    let n = hires_index(fsp);
    let (seconds, frac) = (count / LOG_10_INT[n], count % LOG_10_INT[n]);
    (seconds, (frac * LOG_10_INT[6 - n]) as u32)
}

/// A hires DATETIME (`Field_datetime_hires::get_date`): `pack_time()`,
/// ((((year * 13 + month) * 32 + day) * 24 + hour) * 60 + minute) * 60 + second,
/// in 10^-fsp seconds; taken apart as `unpack_time` does (no validation).
pub fn datetime_hires_parts(raw: &[u8], fsp: u8) -> DateTimeParts {
    let (seconds, micro) = hires_seconds(be_uint(raw), fsp);
    let (days, rem) = (seconds / 86400, (seconds % 86400) as u32);
    let months = days / 32;
    DateTimeParts {
        year: (months / 13) as u32, // < 2^32 at every stored width
        month: (months % 13) as u32,
        day: (days % 32) as u32,
        hour: rem / 3600,
        minute: rem / 60 % 60,
        second: rem % 60,
        micro: micro as i32,
        fsp,
    }
}

/// A hires TIME (`Field_time_hires::get_date`): `pack_time()` of the time in
/// 10^-fsp seconds plus a zero point of 838:59:59 + 1s, so negative times
/// sort first. The hours are `unpack_time`'s: past 9984 (13 * 32 * 24, a
/// value no server writes) they wrap, as they do in the server.
pub fn time_hires_parts(raw: &[u8], fsp: u8) -> TimeParts {
    let zero_point = (TIME_MAX_VALUE_SECONDS + 1) * LOG_10_INT[hires_index(fsp)];
    let stored = be_uint(raw);
    let negative = stored < zero_point;
    let count = if negative {
        zero_point - stored
    } else {
        stored - zero_point
    };
    let (seconds, micro) = hires_seconds(count, fsp);
    TimeParts {
        negative,
        hours: (seconds / 3600 % (13 * 32 * 24)) as u32,
        minutes: (seconds / 60 % 60) as u32,
        seconds: (seconds % 60) as u32,
        micro,
        fsp,
    }
}

const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];
const POW10: [u64; 10] = [
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
];

/// Binary DECIMAL (strings/decimal.cc `bin2decimal`) to sign and unscaled
/// digits, right-aligned in `out`; returns (negative, number of digits).
/// Groups of 9 digits are 4 big-endian bytes, leftover digits use fewer; the
/// sign is the top bit and negative numbers are stored inverted. A group
/// holding more than its digits (corrupt data) is added with its weight, as
/// the reference's arithmetic does, so both cores give the same number.
pub fn decimal_digits(raw: &[u8], precision: u8, scale: u8, out: &mut [u8; 96]) -> (bool, usize) {
    let negative = raw.first().is_some_and(|b| b & 0x80 == 0);
    let mask = if negative { 0xFF } else { 0 };
    let byte = |i: usize| -> u8 {
        let b = raw[i] ^ mask;
        if i == 0 {
            b ^ 0x80
        } else {
            b
        }
    };
    let intg = precision.saturating_sub(scale) as usize;
    let frac = scale as usize;
    // (bytes, digits) of each group, most significant first
    let mut groups: [(usize, usize); 16] = [(0, 0); 16];
    let mut count = 0;
    if intg % 9 != 0 {
        groups[count] = (DIG2BYTES[intg % 9], intg % 9);
        count += 1;
    }
    for _ in 0..intg / 9 + frac / 9 {
        groups[count] = (4, 9);
        count += 1;
    }
    if frac % 9 != 0 {
        groups[count] = (DIG2BYTES[frac % 9], frac % 9);
        count += 1;
    }
    // digits accumulate right-aligned in out (least significant at the end)
    let total_digits: usize = groups[..count].iter().map(|g| g.1).sum();
    let mut at = 0usize; // byte offset in raw
    let mut overflow = false;
    let mut values: [u64; 16] = [0; 16];
    for (g, &(nbytes, _)) in groups[..count].iter().enumerate() {
        let mut v = 0u64;
        for i in 0..nbytes {
            v = v << 8 | byte(at + i) as u64;
        }
        at += nbytes;
        values[g] = v;
        overflow |= v >= POW10[groups[g].1];
    }
    // In range, every digit position of the value is written below; only a
    // corrupt group's carries can reach further left, so only then is the
    // whole buffer cleared (this runs once per DECIMAL value).
    let start = if overflow {
        out.fill(b'0');
        0
    } else {
        out[out.len() - 1] = b'0';
        out.len() - total_digits
    };
    if !overflow {
        let mut end = out.len();
        for g in (0..count).rev() {
            let (_, ndigits) = groups[g];
            let mut v = values[g];
            for k in 0..ndigits {
                out[end - 1 - k] = b'0' + (v % 10) as u8;
                v /= 10;
            }
            end -= ndigits;
        }
    } else {
        // schoolbook: add each group's value at its digit weight
        let mut weight = 0usize; // digits to the right of this group
        for g in (0..count).rev() {
            let (_, ndigits) = groups[g];
            let mut v = values[g];
            let mut k = out.len() - 1 - weight;
            let mut carry = 0u64;
            loop {
                let d = (out[k] - b'0') as u64 + v % 10 + carry;
                out[k] = b'0' + (d % 10) as u8;
                carry = d / 10;
                v /= 10;
                if (v == 0 && carry == 0) || k == 0 {
                    break;
                }
                k -= 1;
            }
            weight += ndigits;
        }
    }
    let first = out[start..]
        .iter()
        .position(|&d| d != b'0')
        .map_or(out.len() - 1, |i| start + i);
    (negative, out.len() - first)
}

/// Civil date (year, month, day) of days since 1970-01-01, for TIMESTAMP
/// seconds (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z.rem_euclid(146097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The server's name of a column type, for messages.
pub fn type_name(type_code: u8) -> &'static str {
    use crate::constants::*;
    match type_code {
        MYSQL_TYPE_DECIMAL => "MYSQL_TYPE_DECIMAL",
        MYSQL_TYPE_NULL => "MYSQL_TYPE_NULL",
        MYSQL_TYPE_NEWDECIMAL => "MYSQL_TYPE_NEWDECIMAL",
        MYSQL_TYPE_BLOB => "MYSQL_TYPE_BLOB",
        MYSQL_TYPE_BLOB_COMPRESSED => "MYSQL_TYPE_BLOB_COMPRESSED",
        MYSQL_TYPE_GEOMETRY => "MYSQL_TYPE_GEOMETRY",
        MYSQL_TYPE_JSON => "MYSQL_TYPE_JSON",
        MYSQL_TYPE_VECTOR => "MYSQL_TYPE_VECTOR",
        _ => "?",
    }
}

/// What a rows event does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Insert,
    Update,
    Delete,
}

impl Operation {
    /// The operation of its name in `binlake.read.events.rows` ("insert", "update", "delete").
    pub fn from_name(name: &str) -> Option<Operation> {
        match name {
            "insert" => Some(Operation::Insert),
            "update" => Some(Operation::Update),
            "delete" => Some(Operation::Delete),
            _ => None,
        }
    }
}

/// Which image of a row a sink is receiving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Before,
    After,
}

/// A sink that receives whole rows: images framed by start/end calls.
pub trait RowSink: ValueSink {
    fn start_row(&mut self, operation: Operation) -> ValueResult;
    fn start_image(&mut self, role: Role, plan: &Plan) -> ValueResult;
    fn end_image(&mut self, role: Role) -> ValueResult;
    /// An update whose after image has no columns (MINIMAL image of nothing).
    fn empty_after_image(&mut self) -> ValueResult {
        Ok(())
    }
    fn end_row(&mut self) -> ValueResult;
}

/// The rows of one rows event, ready to decode.
pub struct RowsData<'a> {
    pub operation: Operation,
    pub partial: bool,
    pub before: &'a Plan,
    pub after: &'a Plan,
    pub data: &'a [u8],
}

/// Decode every row of an event into `sink`. On failure: the offset (in the
/// rows data) of the row that failed, its index, and the reason.
pub fn decode_rows<S: RowSink>(
    layout: &Layout,
    rows: &RowsData,
    sink: &mut S,
) -> Result<usize, (usize, usize, ValueError)> {
    let mut images = Images::new(rows.data);
    let mut index = 0;
    while !images.at_end() {
        let start = images.pos;
        decode_row(layout, rows, &mut images, sink).map_err(|e| (start, index, e))?;
        if images.pos == start {
            // Images of no columns take no bytes: the data left cannot be rows
            // of this layout, and decoding on would never reach its end.
            let left = rows.data.len() - start;
            let detail = format!("row images of no columns cannot hold the {left} bytes left");
            return Err((start, index, ValueError::corrupt(detail)));
        }
        index += 1;
    }
    Ok(index)
}

/// One row: its images in wire order (also used by sinks that stop and resume
/// between rows, such as the Arrow batch builder).
pub fn decode_row<S: RowSink>(
    layout: &Layout,
    rows: &RowsData,
    images: &mut Images,
    sink: &mut S,
) -> ValueResult {
    sink.start_row(rows.operation)?;
    let first = if rows.operation == Operation::Insert {
        Role::After
    } else {
        Role::Before
    };
    sink.start_image(first, rows.before)?;
    images.image(layout, rows.before, &[], sink)?;
    sink.end_image(first)?;
    if rows.operation == Operation::Update {
        let partial = if rows.partial {
            images.partial_columns(layout)?
        } else {
            Vec::new()
        };
        sink.start_image(Role::After, rows.after)?;
        images.image(layout, rows.after, &partial, sink)?;
        sink.end_image(Role::After)?;
    }
    sink.end_row()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digits(raw: &[u8], p: u8, s: u8) -> String {
        let mut out = [0u8; 96];
        let (neg, n) = decimal_digits(raw, p, s, &mut out);
        let v = DecimalValue {
            negative: neg,
            digits: &out[96 - n..],
            scale: s,
        };
        let mut text = Vec::new();
        v.write_text(&mut text);
        String::from_utf8(text).unwrap()
    }

    #[test]
    fn decimals_from_the_server_docs() {
        // DECIMAL(14,4) 1234567890.1234 (strings/decimal.cc comment)
        assert_eq!(
            digits(&[0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2], 14, 4),
            "1234567890.1234"
        );
        // -1234567890.1234: every byte inverted
        let neg: Vec<u8> = [0x81u8, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2]
            .iter()
            .map(|b| !b)
            .collect();
        assert_eq!(digits(&neg, 14, 4), "-1234567890.1234");
        assert_eq!(digits(&[0x80, 0x00, 0x00, 0x00, 0x00], 10, 2), "0.00");
        assert_eq!(digits(&[0x80, 0x00, 0x00, 0x00, 0x05], 10, 2), "0.05");
    }

    /// `v` as `width` big-endian bytes, checked to fit (the server's `store_bigendian`).
    fn be(v: u64, width: usize) -> Vec<u8> {
        assert!(
            width == 8 || v < 1 << (8 * width),
            "{v} does not fit {width} bytes"
        );
        v.to_be_bytes()[8 - width..].to_vec()
    }

    /// The largest fraction of `fsp` digits, in microseconds (.9, .99, ...).
    fn max_micro(fsp: u8) -> u32 {
        let unit = 10u32.pow(6 - fsp as u32);
        999_999 / unit * unit
    }

    #[test]
    fn hires_timestamps_of_every_fsp() {
        for fsp in 1..=6u8 {
            let unit = 10u32.pow(6 - fsp as u32);
            let width = SEC_PART_BYTES[fsp as usize];
            for (seconds, micro) in [
                (0, 0),
                (0, unit),
                (1, 0),
                (2_147_483_647, max_micro(fsp)),
                (u32::MAX, max_micro(fsp)),
            ] {
                let mut raw = seconds.to_be_bytes().to_vec();
                raw.extend(be(u64::from(micro / unit), width));
                assert_eq!(raw.len(), 4 + width);
                assert_eq!(timestamp_hires(&raw, fsp), (seconds, micro), "fsp {fsp}");
            }
        }
    }

    /// `pack_time()` (sql-common/my_time.c) of a date and time, in 10^-fsp seconds.
    fn pack_time(date: (u64, u64, u64), time: (u64, u64, u64), micro: u32, fsp: u8) -> u64 {
        let (y, mo, d) = date;
        let (h, mi, s) = time;
        let seconds = ((((y * 13 + mo) * 32 + d) * 24 + h) * 60 + mi) * 60 + s;
        let scale = 10u64.pow(fsp as u32);
        seconds * scale + u64::from(micro) / 10u64.pow(6 - fsp as u32)
    }

    #[test]
    fn hires_datetimes_of_every_fsp() {
        for fsp in 1..=6u8 {
            let width = DATETIME_HIRES_BYTES[fsp as usize];
            let cases = [
                ((9999, 12, 31), (23, 59, 59), max_micro(fsp)),
                ((0, 0, 0), (0, 0, 0), 0), // the zero date
                ((2024, 0, 0), (0, 0, 0), 0),
                ((1000, 1, 1), (0, 0, 0), 10u32.pow(6 - fsp as u32)),
                (
                    (2024, 2, 29),
                    (12, 34, 56),
                    123456 / 10u32.pow(6 - fsp as u32) * 10u32.pow(6 - fsp as u32),
                ),
            ];
            for (date, time, micro) in cases {
                let raw = be(pack_time(date, time, micro, fsp), width);
                let parts = datetime_hires_parts(&raw, fsp);
                let got = (
                    (parts.year, parts.month, parts.day),
                    (parts.hour, parts.minute, parts.second),
                    parts.micro,
                    parts.fsp,
                );
                let want = (
                    (date.0 as u32, date.1 as u32, date.2 as u32),
                    (time.0 as u32, time.1 as u32, time.2 as u32),
                    micro as i32,
                    fsp,
                );
                assert_eq!(got, want, "fsp {fsp}");
            }
        }
    }

    #[test]
    fn hires_times_of_every_fsp_both_signs() {
        for fsp in 1..=6u8 {
            let width = TIME_HIRES_BYTES[fsp as usize];
            let scale = 10u64.pow(fsp as u32);
            let unit = 10u32.pow(6 - fsp as u32);
            let zero_point = (TIME_MAX_VALUE_SECONDS + 1) * scale;
            for (negative, seconds, micro) in [
                (false, 0, 0),
                (false, 0, unit),
                (true, 0, unit), // -00:00:00.0..1
                (true, 1, 500_000 / unit * unit),
                (false, TIME_MAX_VALUE_SECONDS, max_micro(fsp)),
                (true, TIME_MAX_VALUE_SECONDS, max_micro(fsp)),
                (true, 100 * 3600 + 2 * 60 + 3, 0),
            ] {
                let count = seconds * scale + u64::from(micro / unit);
                let stored = if negative {
                    zero_point - count
                } else {
                    zero_point + count
                };
                let t = time_hires_parts(&be(stored, width), fsp);
                assert_eq!(
                    (t.negative, t.hours, t.minutes, t.seconds, t.micro, t.fsp),
                    (
                        negative,
                        (seconds / 3600) as u32,
                        (seconds / 60 % 60) as u32,
                        (seconds % 60) as u32,
                        micro,
                        fsp
                    ),
                    "fsp {fsp}"
                );
            }
        }
    }

    #[test]
    fn time2_negative_with_fraction_borrows_a_second() {
        // -00:00:01.5 at fsp 1: int part -2 +1 borrow, fraction 0x100-50
        let t = time2_parts(&[0x7F, 0xFF, 0xFF, 0xCE], 1);
        assert!(t.negative);
        assert_eq!((t.hours, t.minutes, t.seconds, t.micro), (0, 0, 0, 500000));
    }

    /// A MariaDB compressed column: VARCHAR(100) in latin1 (meta 101) or a BLOB.
    fn compressed_column(type_code: u8, meta: u16) -> Column {
        let mut col = Column::new(2, type_code, meta, true);
        col.name = Some("v".into());
        col
    }

    fn varchar100() -> Column {
        compressed_column(crate::constants::MYSQL_TYPE_VARCHAR_COMPRESSED, 101)
    }

    /// `value` deflated (raw, the server's default, or zlib-wrapped) behind
    /// its header byte and declared length (`field_comp.cc` `compress_zlib`).
    fn deflated(value: &[u8], raw: bool, declared: u64, width: usize) -> Vec<u8> {
        use std::io::Write;
        let mut stream = Vec::new();
        if raw {
            let mut e = flate2::write::DeflateEncoder::new(&mut stream, Default::default());
            e.write_all(value).unwrap();
            e.finish().unwrap();
        } else {
            let mut e = flate2::write::ZlibEncoder::new(&mut stream, Default::default());
            e.write_all(value).unwrap();
            e.finish().unwrap();
        }
        let header = 0x80 | width as u8 | if raw { 0x08 } else { 0 };
        [vec![header], be(declared, width), stream].concat()
    }

    #[test]
    fn compressed_values_as_a_mariadb_10_11_server_stores_them() {
        let col = varchar100();
        // 'hello': below the compression threshold, kept as is behind a 0
        assert_eq!(&*uncompress(&col, b"\x00hello").unwrap(), b"hello");
        // '': no header byte at all
        assert_eq!(&*uncompress(&col, b"").unwrap(), b"");
        // REPEAT('a', 100): a raw deflate stream (the default, no zlib wrap)
        let raw = [0x89, 0x64, 0x4B, 0x4C, 0xA4, 0x3D, 0x00, 0x00];
        assert_eq!(&*uncompress(&col, &raw).unwrap(), &[b'a'; 100][..]);
        // REPEAT('w', 100) with column_compression_zlib_wrap=ON
        let wrapped = [
            0x81, 0x64, 0x78, 0x9C, 0x2B, 0x2F, 0xA7, 0x3D, 0x00, 0x00, 0x2C, 0x61, 0x2E, 0x7D,
        ];
        assert_eq!(&*uncompress(&col, &wrapped).unwrap(), &[b'w'; 100][..]);
    }

    #[test]
    fn compressed_values_of_every_width_and_both_wrappings() {
        use crate::constants::MYSQL_TYPE_BLOB_COMPRESSED;
        let value: Vec<u8> = (0..70_000u32)
            .map(|i| b"abc"[(i % 7 % 3) as usize])
            .collect();
        for raw in [true, false] {
            for width in [3usize, 4, 7] {
                let col = compressed_column(MYSQL_TYPE_BLOB_COMPRESSED, 3);
                let stored = deflated(&value, raw, value.len() as u64, width);
                assert_eq!(&*uncompress(&col, &stored).unwrap(), &value[..]);
            }
        }
        // a stream shorter than declared is the value (the server's inflate
        // stops at the stream's end); bytes after the end are ignored
        let col = varchar100();
        let mut stored = deflated(b"abc", true, 90, 1);
        assert_eq!(&*uncompress(&col, &stored).unwrap(), b"abc");
        stored.extend_from_slice(b"trailing");
        assert_eq!(&*uncompress(&col, &stored).unwrap(), b"abc");
    }

    fn corrupt(col: &Column, stored: &[u8]) -> String {
        let err = uncompress(col, stored).unwrap_err();
        assert!(!err.unsupported);
        err.detail
    }

    #[test]
    fn corrupt_compressed_values_are_errors() {
        use crate::constants::MYSQL_TYPE_BLOB_COMPRESSED;
        let col = varchar100();
        let text = "x".repeat(90);
        let good = deflated(text.as_bytes(), true, 90, 1);
        assert_eq!(
            corrupt(&col, b"\x20abc"),
            "compressed column v: unknown compression method 2 (header byte 0x20)"
        );
        assert_eq!(
            corrupt(&col, b"\x8A\x01"),
            "compressed column v: the value ends inside its length"
        );
        // more than the column holds: VARCHAR by its length, TINYBLOB 255
        assert_eq!(
            corrupt(&col, &deflated(text.as_bytes(), true, 102, 1)),
            "compressed column v: the value declares 102 bytes, more than the column holds (101)"
        );
        let tiny = compressed_column(MYSQL_TYPE_BLOB_COMPRESSED, 1);
        assert!(corrupt(&tiny, &deflated(b"a", true, 256, 2)).contains("holds (255)"));
        let not_a_stream =
            "compressed column v: the value is not a zlib stream of at most its declared";
        // the stream gives more than declared
        assert!(corrupt(&col, &deflated(text.as_bytes(), true, 89, 1)).starts_with(not_a_stream));
        // cut short, a block of the reserved type 3, a back-reference before
        // the stream's start (zlib refuses it: no window to read from), a
        // wrong checksum, the other wrapping
        assert!(corrupt(&col, &good[..good.len() - 1]).starts_with(not_a_stream));
        let mut bad_block = good.clone();
        bad_block[2] = 0x07;
        assert!(corrupt(&col, &bad_block).starts_with(not_a_stream));
        let too_far = [0x89, 0x64, 0x4B, 0x4C, 0x24, 0x3D, 0x00, 0x00];
        assert!(corrupt(&col, &too_far).starts_with(not_a_stream));
        let mut wrapped = deflated(text.as_bytes(), false, 90, 1);
        let last = wrapped.len() - 1;
        wrapped[last] ^= 1;
        assert!(corrupt(&col, &wrapped).starts_with(not_a_stream));
        let mut unwrapped_as_raw = deflated(text.as_bytes(), false, 90, 1);
        unwrapped_as_raw[0] |= 0x08;
        assert!(corrupt(&col, &unwrapped_as_raw).starts_with(not_a_stream));
        assert!(corrupt(&col, &[0x89, 90]).starts_with(not_a_stream));
    }

    #[test]
    fn a_huge_declared_length_costs_only_what_the_stream_gives() {
        use crate::constants::MYSQL_TYPE_BLOB_COMPRESSED;
        let long = compressed_column(MYSQL_TYPE_BLOB_COMPRESSED, 4);
        let stored = deflated(b"small", true, u64::from(u32::MAX), 4);
        let value = uncompress(&long, &stored).unwrap();
        assert_eq!(&*value, b"small");
        assert!(matches!(value, Cow::Owned(ref v) if v.capacity() <= 64 << 10));
    }

    /// Keeps what `string` and `blob` are given; the rest is not called.
    #[derive(Default)]
    struct Strings(Vec<(&'static str, Vec<u8>)>);

    impl ValueSink for Strings {
        fn null(&mut self, _: &Column) -> ValueResult {
            unreachable!()
        }
        fn int(&mut self, _: &Column, _: i64, _: u8) -> ValueResult {
            unreachable!()
        }
        fn float(&mut self, _: &Column, _: f32) -> ValueResult {
            unreachable!()
        }
        fn double(&mut self, _: &Column, _: f64) -> ValueResult {
            unreachable!()
        }
        fn decimal(&mut self, _: &Column, _: &DecimalValue, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn year(&mut self, _: &Column, _: u32) -> ValueResult {
            unreachable!()
        }
        fn date(&mut self, _: &Column, _: u32, _: u32, _: u32) -> ValueResult {
            unreachable!()
        }
        fn datetime(&mut self, _: &Column, _: DateTimeParts, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn datetime_negative(&mut self, _: &Column, _: i64, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn timestamp(&mut self, _: &Column, _: u32, _: u32, _: u8) -> ValueResult {
            unreachable!()
        }
        fn time(&mut self, _: &Column, _: TimeParts, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn bit(&mut self, _: &Column, _: u64, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn string(&mut self, _: &Column, bytes: &[u8]) -> ValueResult {
            self.0.push(("string", bytes.to_vec()));
            Ok(())
        }
        fn blob(&mut self, _: &Column, bytes: &[u8]) -> ValueResult {
            self.0.push(("blob", bytes.to_vec()));
            Ok(())
        }
        fn geometry(&mut self, _: &Column, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn json(&mut self, _: &Column, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn json_diff(&mut self, _: &Column, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn vector(&mut self, _: &Column, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn enum_index(&mut self, _: &Column, _: u16, _: &[u8]) -> ValueResult {
            unreachable!()
        }
        fn set_mask(&mut self, _: &Column, _: u64, _: &[u8]) -> ValueResult {
            unreachable!()
        }
    }

    #[test]
    fn compressed_columns_give_their_twins_values() {
        use crate::constants::{MYSQL_TYPE_BLOB_COMPRESSED, MYSQL_TYPE_VARCHAR_COMPRESSED};
        // VARCHAR(300) utf8mb4 COMPRESSED: 1201 bytes, a 2-byte length prefix
        let varchar = compressed_column(MYSQL_TYPE_VARCHAR_COMPRESSED, 1201);
        assert_eq!(
            varchar.kind,
            Kind::CompressedString {
                len_bytes: 2,
                max_len: 1201
            }
        );
        let text = deflated("é".repeat(300).as_bytes(), true, 600, 2);
        let blob = compressed_column(MYSQL_TYPE_BLOB_COMPRESSED, 2);
        assert_eq!(blob.kind, Kind::CompressedBlob { len_bytes: 2 });
        assert_eq!(
            Kind::of(MYSQL_TYPE_BLOB_COMPRESSED, 5),
            Kind::Unsupported {
                type_code: MYSQL_TYPE_BLOB_COMPRESSED
            }
        );
        let data = [
            &(text.len() as u16).to_le_bytes()[..],
            &text,
            &[4, 0, 0, b'b', b'i', b'n'],
        ]
        .concat();
        let mut images = Images::new(&data);
        let mut sink = Strings::default();
        images.value(&varchar, &mut sink).unwrap();
        images.value(&blob, &mut sink).unwrap();
        assert!(images.at_end());
        assert_eq!(
            sink.0,
            [
                ("string", "é".repeat(300).into_bytes()),
                ("blob", b"bin".to_vec())
            ]
        );
        // a value cut by the event's end is that, before any inflating
        let mut images = Images::new(&data[..data.len() - 1]);
        images.value(&varchar, &mut sink).unwrap();
        let err = images.value(&blob, &mut sink).unwrap_err();
        assert!(err.detail.contains("runs past the end"), "{}", err.detail);
    }
}
