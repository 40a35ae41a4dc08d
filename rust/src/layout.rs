//! A table's columns as row images need them: each column's wire kind resolved
//! once from (type, metadata), plus what the table map's optional metadata says.
//!
//! Strategy: the table map says a column's type and packs its metadata in 0-2
//! bytes; everything a row decoder needs per value (widths, precision, fsp,
//! length-prefix size) is worked out here once, so decoding a value is one
//! `match` on `Kind` with no per-row lookups. The Python twin of these facts is
//! `binlake/read/values.py` (`column_decoder`, `string_real_type`).

use crate::constants::*;

/// How a column's value is laid out in a row image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// TINY/SHORT/INT24/LONG/LONGLONG: little-endian, `bytes` wide.
    Int {
        bytes: u8,
    },
    Float,
    Double,
    /// NEWDECIMAL (strings/decimal.cc `bin2decimal`).
    Decimal {
        precision: u8,
        scale: u8,
        size: u8,
    },
    Year,
    /// DATE / NEWDATE: 3 bytes, day | month << 5 | year << 9.
    Date,
    /// TIME before 5.6: 3 bytes, signed HHMMSS.
    TimeOld,
    /// DATETIME before 5.6: 8 bytes, YYYYMMDDHHMMSS.
    DatetimeOld,
    /// TIMESTAMP before 5.6: 4 bytes of seconds.
    TimestampOld,
    Timestamp2 {
        fsp: u8,
    },
    Datetime2 {
        fsp: u8,
    },
    Time2 {
        fsp: u8,
    },
    /// MariaDB 5.3-10.0 TIMESTAMP(1-6) (`Field_timestamp_hires`): logged as
    /// TIMESTAMP with no metadata; `fsp` comes from the DDL as the column's meta.
    TimestampHires {
        fsp: u8,
    },
    /// MariaDB 5.3-10.0 DATETIME(1-6) (`Field_datetime_hires`), likewise.
    DatetimeHires {
        fsp: u8,
    },
    /// MariaDB 5.3-10.0 TIME(1-6) (`Field_time_hires`), likewise.
    TimeHires {
        fsp: u8,
    },
    /// BIT: `bytes` big-endian bytes holding `bits` bits.
    Bit {
        bits: u16,
        bytes: u8,
    },
    /// CHAR / VARCHAR / VAR_STRING: length prefix of 1 or 2 bytes.
    String {
        len_bytes: u8,
    },
    /// BLOB / TEXT of every size: length prefix of 1-4 bytes.
    Blob {
        len_bytes: u8,
    },
    /// MariaDB's VARCHAR COMPRESSED: a VARCHAR's length prefix, then the value
    /// as stored (`rowimage::uncompress`); `max_len`, the column's length in
    /// bytes (its metadata), bounds the length the value declares.
    CompressedString {
        len_bytes: u8,
        max_len: u16,
    },
    /// MariaDB's TEXT/BLOB COMPRESSED: a BLOB's length prefix of 1-4 bytes,
    /// then the value as stored.
    CompressedBlob {
        len_bytes: u8,
    },
    Geometry {
        len_bytes: u8,
    },
    Json {
        len_bytes: u8,
    },
    Vector {
        len_bytes: u8,
    },
    /// ENUM: index of 1 or 2 bytes; SET: bitmask of 1-8 bytes.
    Enum {
        bytes: u8,
    },
    Set {
        bytes: u8,
    },
    /// A type whose row image width cannot be known (e.g. old DECIMAL, NULL).
    Unsupported {
        type_code: u8,
    },
}

const DIG2BYTES: [u8; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// Bytes of a binary DECIMAL(precision, scale).
pub fn decimal_size(precision: u8, scale: u8) -> usize {
    let intg = precision.saturating_sub(scale) as usize;
    let frac = scale as usize;
    intg / 9 * 4 + DIG2BYTES[intg % 9] as usize + frac / 9 * 4 + DIG2BYTES[frac % 9] as usize
}

/// STRING metadata hides the real type (CHAR, ENUM, SET) and a 10-bit max
/// length in two bytes (`Field_string::do_save_field_metadata`).
pub fn string_real_type(meta: u16) -> (u8, u16) {
    let byte0 = (meta >> 8) as u8;
    let byte1 = meta & 0xFF;
    if meta == 0 {
        // table maps before 5.1.18 carry no metadata: a short CHAR
        return (MYSQL_TYPE_STRING, 0);
    }
    if byte0 & 0x30 != 0x30 {
        return (
            byte0 | 0x30,
            byte1 | ((((byte0 & 0x30) ^ 0x30) as u16) << 4),
        );
    }
    (byte0, byte1)
}

impl Kind {
    /// ENUM: an index of 1 or 2 bytes; SET: a bitmask of 1-8 bytes.
    fn enum_or_set(type_code: u8, bytes: u16) -> Kind {
        match (type_code, bytes) {
            (MYSQL_TYPE_ENUM, 1..=2) => Kind::Enum { bytes: bytes as u8 },
            (MYSQL_TYPE_SET, 1..=8) => Kind::Set { bytes: bytes as u8 },
            _ => Kind::Unsupported { type_code },
        }
    }

    /// The layout of a column of table-map type `type_code` with metadata `meta`.
    pub fn of(type_code: u8, meta: u16) -> Kind {
        let one = (meta & 0xFF) as u8;
        match type_code {
            MYSQL_TYPE_TINY => Kind::Int { bytes: 1 },
            MYSQL_TYPE_SHORT => Kind::Int { bytes: 2 },
            MYSQL_TYPE_INT24 => Kind::Int { bytes: 3 },
            MYSQL_TYPE_LONG => Kind::Int { bytes: 4 },
            MYSQL_TYPE_LONGLONG => Kind::Int { bytes: 8 },
            MYSQL_TYPE_FLOAT => Kind::Float,
            MYSQL_TYPE_DOUBLE => Kind::Double,
            MYSQL_TYPE_NEWDECIMAL => {
                let (precision, scale) = ((meta >> 8) as u8, one);
                if precision == 0 || precision > 65 || scale > 30 || scale > precision {
                    return Kind::Unsupported { type_code };
                }
                Kind::Decimal {
                    precision,
                    scale,
                    size: decimal_size(precision, scale) as u8,
                }
            }
            MYSQL_TYPE_YEAR => Kind::Year,
            MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE => Kind::Date,
            // The wire gives these no metadata: a meta of 1-6 was set from the
            // DDL and is the fsp of a MariaDB hires column (see `Kind::TimeHires`).
            MYSQL_TYPE_TIME | MYSQL_TYPE_DATETIME | MYSQL_TYPE_TIMESTAMP if meta > 6 => {
                Kind::Unsupported { type_code }
            }
            MYSQL_TYPE_TIME if meta > 0 => Kind::TimeHires { fsp: one },
            MYSQL_TYPE_DATETIME if meta > 0 => Kind::DatetimeHires { fsp: one },
            MYSQL_TYPE_TIMESTAMP if meta > 0 => Kind::TimestampHires { fsp: one },
            MYSQL_TYPE_TIME => Kind::TimeOld,
            MYSQL_TYPE_DATETIME => Kind::DatetimeOld,
            MYSQL_TYPE_TIMESTAMP => Kind::TimestampOld,
            MYSQL_TYPE_TIMESTAMP2 | MYSQL_TYPE_DATETIME2 | MYSQL_TYPE_TIME2 if one > 6 => {
                Kind::Unsupported { type_code }
            }
            MYSQL_TYPE_TIMESTAMP2 => Kind::Timestamp2 { fsp: one },
            MYSQL_TYPE_DATETIME2 => Kind::Datetime2 { fsp: one },
            MYSQL_TYPE_TIME2 => Kind::Time2 { fsp: one },
            MYSQL_TYPE_BIT => {
                // metadata read as (bits % 8) << 8 | whole bytes
                let (rem, whole) = (meta >> 8, meta & 0xFF);
                let bytes = whole + u16::from(rem != 0);
                if bytes > 8 || rem > 7 {
                    return Kind::Unsupported { type_code };
                }
                Kind::Bit {
                    bits: whole * 8 + rem,
                    bytes: bytes as u8,
                }
            }
            MYSQL_TYPE_VARCHAR | MYSQL_TYPE_VAR_STRING => Kind::String {
                len_bytes: if meta < 256 { 1 } else { 2 },
            },
            MYSQL_TYPE_STRING => {
                let (real, length) = string_real_type(meta);
                match real {
                    MYSQL_TYPE_ENUM | MYSQL_TYPE_SET => Kind::enum_or_set(real, length),
                    _ => Kind::String {
                        len_bytes: if length < 256 { 1 } else { 2 },
                    },
                }
            }
            MYSQL_TYPE_ENUM | MYSQL_TYPE_SET => Kind::enum_or_set(type_code, one as u16),
            MYSQL_TYPE_BLOB
            | MYSQL_TYPE_TINY_BLOB
            | MYSQL_TYPE_MEDIUM_BLOB
            | MYSQL_TYPE_LONG_BLOB => match one {
                1..=4 => Kind::Blob { len_bytes: one },
                _ => Kind::Unsupported { type_code },
            },
            MYSQL_TYPE_VARCHAR_COMPRESSED => Kind::CompressedString {
                len_bytes: if meta < 256 { 1 } else { 2 },
                max_len: meta,
            },
            MYSQL_TYPE_BLOB_COMPRESSED => match one {
                1..=4 => Kind::CompressedBlob { len_bytes: one },
                _ => Kind::Unsupported { type_code },
            },
            MYSQL_TYPE_GEOMETRY => match one {
                1..=4 => Kind::Geometry { len_bytes: one },
                _ => Kind::Unsupported { type_code },
            },
            MYSQL_TYPE_JSON => match one {
                1..=4 => Kind::Json { len_bytes: one },
                _ => Kind::Unsupported { type_code },
            },
            MYSQL_TYPE_VECTOR => match one {
                1..=4 => Kind::Vector { len_bytes: one },
                _ => Kind::Unsupported { type_code },
            },
            _ => Kind::Unsupported { type_code },
        }
    }
}

/// One column of a table map, with what its optional metadata says.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub index: usize,
    /// The type as in the table map (STRING may hide ENUM/SET: see `kind`).
    pub type_code: u8,
    pub meta: u16,
    pub kind: Kind,
    pub nullable: bool,
    pub unsigned: bool,
    /// Collation id, when the table map carries it.
    pub charset: Option<u32>,
    pub name: Option<String>,
    pub enum_values: Option<Vec<String>>,
    pub set_values: Option<Vec<String>>,
}

impl Column {
    pub fn new(index: usize, type_code: u8, meta: u16, nullable: bool) -> Self {
        Column {
            index,
            type_code,
            meta,
            kind: Kind::of(type_code, meta),
            nullable,
            unsigned: false,
            charset: None,
            name: None,
            enum_values: None,
            set_values: None,
        }
    }

    /// The key of this column in row dicts and text: its name, else `@N` (1-based).
    pub fn key(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => format!("@{}", self.index + 1),
        }
    }
}

/// A table's columns, in table-map order.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub database: String,
    pub table: String,
    pub columns: Vec<Column>,
}

impl Layout {
    /// Indexes of the columns whose bit is set in a columns-present bitmap.
    pub fn present(&self, bitmap: &[u8]) -> Vec<usize> {
        (0..self.columns.len())
            .filter(|&i| bitmap.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_sizes() {
        assert_eq!(decimal_size(10, 2), 5);
        assert_eq!(decimal_size(65, 30), 30);
        assert_eq!(decimal_size(18, 9), 8);
    }

    #[test]
    fn classic_temporals_with_a_meta_are_mariadb_hires() {
        assert_eq!(Kind::of(MYSQL_TYPE_TIMESTAMP, 0), Kind::TimestampOld);
        assert_eq!(Kind::of(MYSQL_TYPE_DATETIME, 0), Kind::DatetimeOld);
        assert_eq!(Kind::of(MYSQL_TYPE_TIME, 0), Kind::TimeOld);
        for fsp in 1..=6u8 {
            let meta = u16::from(fsp);
            assert_eq!(
                Kind::of(MYSQL_TYPE_TIMESTAMP, meta),
                Kind::TimestampHires { fsp }
            );
            assert_eq!(
                Kind::of(MYSQL_TYPE_DATETIME, meta),
                Kind::DatetimeHires { fsp }
            );
            assert_eq!(Kind::of(MYSQL_TYPE_TIME, meta), Kind::TimeHires { fsp });
        }
        for meta in [7u16, 0x100, 0x101, 0xFFFF] {
            for t in [MYSQL_TYPE_TIME, MYSQL_TYPE_DATETIME, MYSQL_TYPE_TIMESTAMP] {
                assert_eq!(Kind::of(t, meta), Kind::Unsupported { type_code: t });
            }
        }
    }

    #[test]
    fn a_meta_from_the_ddl_makes_classic_temporals_hires() {
        // the schema history sets it on the table map's column (python/changes.rs)
        let hires = Column::new(0, MYSQL_TYPE_TIMESTAMP, 3, true);
        assert_eq!(hires.kind, Kind::TimestampHires { fsp: 3 });
        let classic = Column::new(0, MYSQL_TYPE_TIMESTAMP, 0, true);
        assert_eq!(classic.kind, Kind::TimestampOld);
    }

    #[test]
    fn string_metadata_hides_enum_and_set() {
        assert_eq!(Kind::of(MYSQL_TYPE_STRING, 0xF701), Kind::Enum { bytes: 1 });
        assert_eq!(Kind::of(MYSQL_TYPE_STRING, 0xF808), Kind::Set { bytes: 8 });
        assert_eq!(
            Kind::of(MYSQL_TYPE_STRING, 0xFE14),
            Kind::String { len_bytes: 1 }
        );
        // CHAR(255) in utf8mb4: 1020 bytes, the high bits of the length in byte 0
        assert_eq!(
            Kind::of(MYSQL_TYPE_STRING, 0xCEFC),
            Kind::String { len_bytes: 2 }
        );
    }
}
