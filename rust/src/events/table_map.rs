//! TABLE_MAP_EVENT: the column types and metadata row images need
//! (events/table_map.py `decode_table_map`).
//!
//! Layout (MySQL `rows_event.cpp` Table_map_event, MariaDB `log_event.cc`):
//! post-header table_id (6 bytes, 4 when the FDE says 6) + flags (2); body
//! db (len, bytes, NUL), table (len, bytes, NUL), column count (packed), types
//! (1 byte each), metadata (packed length, then per type 0-2 bytes), null
//! bitmap, then optional metadata as TLVs (binlog_row_metadata=MINIMAL/FULL).
//!
//! Rule: everything after the post-header is a pure function of its bytes
//! (`TableMap::signature`) and the server's flavour (MariaDB or MySQL: their
//! charset lists count different columns, `TableColumn::takes_listed_charset`),
//! so a caller may cache what it derives from a map by those two: servers
//! log the same map again in every transaction.

use crate::constants::*;
use crate::cursor::Cursor;
use crate::error::Result;
use crate::events::text;
use crate::layout::{string_real_type, Column, Layout};

/// One column of a table map, with everything its optional metadata says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableColumn {
    pub index: usize,
    /// The type as in the table map (STRING may hide ENUM/SET: see `real_type`).
    pub type_code: u8,
    /// Metadata packed in one int (2-byte metadata: first byte high).
    pub meta: u16,
    pub nullable: bool,
    pub name: Option<String>,
    pub unsigned: bool,
    /// Collation id, when the table map carries it.
    pub charset: Option<u64>,
    pub enum_values: Option<Vec<String>>,
    pub set_values: Option<Vec<String>>,
    pub geometry_type: Option<u64>,
    pub vector_dimensions: Option<u64>,
    pub visible: bool,
    pub primary_key: bool,
}

impl TableColumn {
    fn new(index: usize, type_code: u8, meta: u16, nullable: bool) -> Self {
        TableColumn {
            index,
            type_code,
            meta,
            nullable,
            name: None,
            unsigned: false,
            charset: None,
            enum_values: None,
            set_values: None,
            geometry_type: None,
            vector_dimensions: None,
            visible: true,
            primary_key: false,
        }
    }

    pub fn real_type(&self) -> u8 {
        if self.type_code == MYSQL_TYPE_STRING {
            string_real_type(self.meta).0
        } else {
            self.type_code
        }
    }

    /// The key of this column in row dicts: its name, else `@N` (1-based).
    pub fn key(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => format!("@{}", self.index + 1),
        }
    }

    fn is_numeric(&self) -> bool {
        matches!(
            self.type_code,
            MYSQL_TYPE_TINY
                | MYSQL_TYPE_SHORT
                | MYSQL_TYPE_INT24
                | MYSQL_TYPE_LONG
                | MYSQL_TYPE_LONGLONG
                | MYSQL_TYPE_NEWDECIMAL
                | MYSQL_TYPE_FLOAT
                | MYSQL_TYPE_DOUBLE
        )
    }

    fn is_blob(&self) -> bool {
        matches!(
            self.type_code,
            MYSQL_TYPE_BLOB | MYSQL_TYPE_TINY_BLOB | MYSQL_TYPE_MEDIUM_BLOB | MYSQL_TYPE_LONG_BLOB
        )
    }

    /// CHAR, VARCHAR and TEXT (with their binary twins), MariaDB's compressed
    /// VARCHAR and TEXT/BLOB too: text in a charset.
    fn is_character(&self) -> bool {
        matches!(
            self.real_type(),
            MYSQL_TYPE_STRING
                | MYSQL_TYPE_VAR_STRING
                | MYSQL_TYPE_VARCHAR
                | MYSQL_TYPE_VARCHAR_COMPRESSED
                | MYSQL_TYPE_BLOB_COMPRESSED
        ) || self.is_blob()
    }

    /// Whether the column has a place in the charset list (DEFAULT_CHARSET /
    /// COLUMN_CHARSET) as the server counts (table_map.py
    /// `takes_listed_charset`): MariaDB every column with a charset but
    /// ENUM/SET, GEOMETRY among them (binary); MySQL its character types and
    /// 9.x's VECTOR (binary), never GEOMETRY.
    fn takes_listed_charset(&self, mariadb: bool) -> bool {
        let binary_extra = if mariadb {
            MYSQL_TYPE_GEOMETRY
        } else {
            MYSQL_TYPE_VECTOR
        };
        self.is_character() || self.real_type() == binary_extra
    }

    fn is_enum_or_set(&self) -> bool {
        matches!(self.real_type(), MYSQL_TYPE_ENUM | MYSQL_TYPE_SET)
    }

    /// The row-image column (`layout::Column`) under `key`, as
    /// `native.RowLayout` builds it from `rows.native_columns()`.
    pub fn layout_column(&self, key: String) -> Column {
        let mut col = Column::new(self.index, self.type_code, self.meta, self.nullable);
        col.unsigned = self.unsigned;
        col.charset = self.charset.and_then(|c| u32::try_from(c).ok());
        col.name = Some(key);
        col.enum_values = self.enum_values.clone();
        col.set_values = self.set_values.clone();
        col
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMap<'a> {
    pub table_id: u64,
    pub flags: u16,
    /// Raw names (`text()` makes them the Python event's strings).
    pub database: &'a [u8],
    pub table: &'a [u8],
    pub columns: Vec<TableColumn>,
    /// Column indexes of the primary key, with prefix lengths (0: whole column).
    pub primary_key: Vec<(u64, u64)>,
    pub default_charset: Option<u64>,
    pub optional_metadata: &'a [u8],
    /// The body after the post-header: equal bytes from servers of one
    /// flavour, equal map (but table id and flags).
    pub signature: &'a [u8],
}

impl TableMap<'_> {
    pub fn has_names(&self) -> bool {
        self.columns.iter().all(|c| c.name.is_some())
    }

    /// The layout row images are decoded with; `keys` (one per column)
    /// replace the columns' own keys (names from a schema).
    pub fn layout(&self, keys: Option<&[String]>) -> Layout {
        let columns = self
            .columns
            .iter()
            .map(|c| {
                let key = match keys.and_then(|k| k.get(c.index)) {
                    Some(k) => k.clone(),
                    None => c.key(),
                };
                c.layout_column(key)
            })
            .collect();
        Layout {
            database: text(self.database).into_owned(),
            table: text(self.table).into_owned(),
            columns,
        }
    }
}

/// `n` bytes where `n` comes from the input (u64), checked before use.
fn bytes_n<'a>(cur: &mut Cursor<'a>, n: u64) -> Result<&'a [u8]> {
    if n > cur.remaining() as u64 {
        return Err(cur.error(format!(
            "needs {n} bytes, only {} left in the event",
            cur.remaining()
        )));
    }
    cur.bytes(n as usize)
}

fn read_meta(cur: &mut Cursor, type_code: u8) -> Result<u16> {
    Ok(match type_code {
        MYSQL_TYPE_FLOAT
        | MYSQL_TYPE_DOUBLE
        | MYSQL_TYPE_BLOB
        | MYSQL_TYPE_TINY_BLOB
        | MYSQL_TYPE_MEDIUM_BLOB
        | MYSQL_TYPE_LONG_BLOB
        | MYSQL_TYPE_GEOMETRY
        | MYSQL_TYPE_JSON
        | MYSQL_TYPE_TIMESTAMP2
        | MYSQL_TYPE_DATETIME2
        | MYSQL_TYPE_TIME2
        | MYSQL_TYPE_VECTOR
        | MYSQL_TYPE_BLOB_COMPRESSED => cur.u8()? as u16,
        // MariaDB's VARCHAR COMPRESSED counts its header byte in its length
        MYSQL_TYPE_VARCHAR | MYSQL_TYPE_VAR_STRING | MYSQL_TYPE_VARCHAR_COMPRESSED => cur.u16()?,
        MYSQL_TYPE_NEWDECIMAL
        | MYSQL_TYPE_BIT
        | MYSQL_TYPE_STRING
        | MYSQL_TYPE_ENUM
        | MYSQL_TYPE_SET => {
            let high = cur.u8()? as u16;
            high << 8 | cur.u8()? as u16
        }
        _ => 0,
    })
}

/// `count` flags, most significant bit first; a bitmap too short for them
/// is corrupt (table_map.py `_bits_msb_first`).
fn bits_msb_first(cur: &Cursor, raw: &[u8], count: usize) -> Result<Vec<bool>> {
    if count > raw.len() * 8 {
        return Err(cur.error(format!(
            "a bitmap of {} bytes cannot flag {count} columns",
            raw.len()
        )));
    }
    Ok((0..count)
        .map(|i| raw[i / 8] & (0x80 >> (i % 8)) != 0)
        .collect())
}

fn charsets(cur: &mut Cursor, count: usize, default_form: bool) -> Result<Vec<u64>> {
    if !default_form {
        return (0..count).map(|_| cur.packed_len()).collect();
    }
    let default = cur.packed_len()?;
    let mut values = vec![default; count];
    while !cur.at_end() {
        let index = cur.packed_len()?;
        let collation = cur.packed_len()?;
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| values.get_mut(i)) {
            *slot = collation;
        }
    }
    Ok(values)
}

fn strings(cur: &mut Cursor) -> Result<Vec<String>> {
    let count = cur.packed_len()?;
    let mut out = Vec::new();
    for _ in 0..count {
        out.push(text(cur.lstring_packed()?).into_owned());
    }
    Ok(out)
}

/// Indexes (into `columns`) of those `pick` selects.
fn which(columns: &[TableColumn], pick: impl Fn(&TableColumn) -> bool) -> Vec<usize> {
    columns
        .iter()
        .filter(|c| pick(c))
        .map(|c| c.index)
        .collect()
}

/// Per-column facts from the TLVs into `columns`; table-level facts into `map`;
/// `mariadb`: the server's flavour, which counts the charset list's columns.
fn apply_optional_metadata(
    cur: &mut Cursor,
    columns: &mut [TableColumn],
    primary_key: &mut Vec<(u64, u64)>,
    default_charset: &mut Option<u64>,
    mariadb: bool,
) -> Result<()> {
    let numeric = which(columns, TableColumn::is_numeric);
    let character = which(columns, |c| c.takes_listed_charset(mariadb));
    let enum_set = which(columns, TableColumn::is_enum_or_set);
    let enums = which(columns, |c| c.real_type() == MYSQL_TYPE_ENUM);
    let sets = which(columns, |c| c.real_type() == MYSQL_TYPE_SET);
    let geometry = which(columns, |c| c.type_code == MYSQL_TYPE_GEOMETRY);
    let vectors = which(columns, |c| c.type_code == MYSQL_TYPE_VECTOR);
    while !cur.at_end() {
        let kind = cur.u8()?;
        let n = cur.packed_len()?;
        let mut value = Cursor::new(bytes_n(cur, n)?, cur.offset() - n);
        match kind {
            SIGNEDNESS => {
                let raw = value.rest();
                for (&i, flag) in numeric
                    .iter()
                    .zip(bits_msb_first(&value, raw, numeric.len())?)
                {
                    columns[i].unsigned = flag;
                }
            }
            DEFAULT_CHARSET | COLUMN_CHARSET => {
                let values = charsets(&mut value, character.len(), kind == DEFAULT_CHARSET)?;
                if kind == DEFAULT_CHARSET && !values.is_empty() {
                    let first = values[0];
                    *default_charset = values.iter().all(|&v| v == first).then_some(first);
                }
                for (&i, cs) in character.iter().zip(values) {
                    columns[i].charset = Some(cs);
                }
            }
            ENUM_AND_SET_DEFAULT_CHARSET | ENUM_AND_SET_COLUMN_CHARSET => {
                let values = charsets(
                    &mut value,
                    enum_set.len(),
                    kind == ENUM_AND_SET_DEFAULT_CHARSET,
                )?;
                for (&i, cs) in enum_set.iter().zip(values) {
                    columns[i].charset = Some(cs);
                }
            }
            COLUMN_NAME => {
                for c in columns.iter_mut() {
                    c.name = Some(text(value.lstring_packed()?).into_owned());
                }
            }
            SET_STR_VALUE => {
                for &i in &sets {
                    columns[i].set_values = Some(strings(&mut value)?);
                }
            }
            ENUM_STR_VALUE => {
                for &i in &enums {
                    columns[i].enum_values = Some(strings(&mut value)?);
                }
            }
            GEOMETRY_TYPE => {
                for &i in &geometry {
                    columns[i].geometry_type = Some(value.packed_len()?);
                }
            }
            SIMPLE_PRIMARY_KEY => {
                let mut keys = Vec::new();
                while !value.at_end() {
                    keys.push((value.packed_len()?, 0));
                }
                *primary_key = keys;
            }
            PRIMARY_KEY_WITH_PREFIX => {
                let mut keys = Vec::new();
                while !value.at_end() {
                    let index = value.packed_len()?;
                    keys.push((index, value.packed_len()?));
                }
                *primary_key = keys;
            }
            COLUMN_VISIBILITY => {
                let raw = value.rest();
                let flags = bits_msb_first(&value, raw, columns.len())?;
                for (c, flag) in columns.iter_mut().zip(flags) {
                    c.visible = flag;
                }
            }
            VECTOR_DIMENSIONALITY => {
                for &i in &vectors {
                    columns[i].vector_dimensions = Some(value.packed_len()?);
                }
            }
            // Unknown TLVs of newer servers are skipped by their length: that
            // is the point of the TLV encoding.
            _ => {}
        }
    }
    Ok(())
}

/// A TABLE_MAP body; `post_header_len` as the format description says (6:
/// 4-byte table ids), `mariadb` whether a MariaDB server wrote it
/// (`Format::is_mariadb`). Reads the whole body.
pub fn decode_table_map<'a>(
    cur: &mut Cursor<'a>,
    post_header_len: usize,
    mariadb: bool,
) -> Result<TableMap<'a>> {
    let table_id = if post_header_len == 6 {
        cur.u32()? as u64
    } else {
        cur.u48()?
    };
    let flags = cur.u16()?;
    let signature = cur.clone().rest();
    let database = cur.lstring1()?;
    cur.u8()?;
    let table = cur.lstring1()?;
    cur.u8()?;
    let count = cur.packed_len()?;
    let types = bytes_n(cur, count)?;
    let metas: Vec<u16> = if cur.at_end() {
        // 5.1 before 5.1.18 wrote no metadata and no null bitmap
        vec![0; types.len()]
    } else {
        let n = cur.packed_len()?;
        let mut meta = Cursor::new(bytes_n(cur, n)?, cur.offset() - n);
        types
            .iter()
            .map(|&t| read_meta(&mut meta, t))
            .collect::<Result<_>>()?
    };
    let nulls: &[u8] = if cur.at_end() {
        &[]
    } else {
        cur.bytes(types.len().div_ceil(8))?
    };
    let optional_start = cur.clone();
    let mut columns: Vec<TableColumn> = types
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let nullable = nulls.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1);
            TableColumn::new(i, t, metas[i], nullable)
        })
        .collect();
    let mut primary_key = Vec::new();
    let mut default_charset = None;
    apply_optional_metadata(
        cur,
        &mut columns,
        &mut primary_key,
        &mut default_charset,
        mariadb,
    )?;
    let optional_metadata = optional_start.clone().rest();
    for c in columns.iter_mut() {
        c.primary_key = primary_key.iter().any(|&(i, _)| i == c.index as u64);
    }
    Ok(TableMap {
        table_id,
        flags,
        database,
        table,
        columns,
        primary_key,
        default_charset,
        optional_metadata,
        signature,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map of shop.t: INT, VARCHAR(20), ENUM('a','b'); names, signedness.
    fn body() -> Vec<u8> {
        let mut b = vec![7, 0, 0, 0, 0, 0, 1, 0];
        b.extend([4, b's', b'h', b'o', b'p', 0, 1, b't', 0]);
        b.extend([3, MYSQL_TYPE_LONG, MYSQL_TYPE_VARCHAR, MYSQL_TYPE_STRING]);
        b.extend([4, 20, 0, MYSQL_TYPE_ENUM, 1]);
        b.push(0b110);
        b.extend([SIGNEDNESS, 1, 0x80]);
        b.extend([COLUMN_NAME, 6, 1, b'a', 1, b'b', 1, b'c']);
        b.extend([ENUM_STR_VALUE, 5, 2, 1, b'x', 1, b'y']);
        b.extend([DEFAULT_CHARSET, 1, 45]);
        b.extend([99, 2, 0, 0]); // an unknown TLV is skipped
        b
    }

    #[test]
    fn columns_and_optional_metadata() {
        let body = body();
        let mut c = Cursor::new(&body, 0);
        let m = decode_table_map(&mut c, 8, false).unwrap();
        assert!(c.at_end());
        assert_eq!(
            (m.table_id, m.database, m.table),
            (7, &b"shop"[..], &b"t"[..])
        );
        let cols = &m.columns;
        assert_eq!(
            (cols[0].unsigned, cols[0].nullable, cols[1].nullable),
            (true, false, true)
        );
        assert_eq!((cols[1].meta, cols[2].meta), (20, 0xF701));
        assert_eq!(cols[2].real_type(), MYSQL_TYPE_ENUM);
        assert_eq!(
            cols[2].enum_values.as_deref(),
            Some(&["x".to_string(), "y".to_string()][..])
        );
        assert_eq!(
            (cols[1].charset, cols[2].charset, m.default_charset),
            (Some(45), None, Some(45))
        );
        assert!(m.has_names());
        let layout = m.layout(None);
        assert_eq!(layout.columns[1].name.as_deref(), Some("b"));
        assert_eq!(layout.table, "t");
    }

    #[test]
    fn truncations_fail_inside_the_body() {
        let body = body();
        for cut in [5, 12, 16, 22, body.len() - 5] {
            let mut c = Cursor::new(&body[..cut], 100);
            let e = decode_table_map(&mut c, 8, false).unwrap_err();
            assert!(e.offset >= 100 && e.offset <= 100 + cut as u64, "{cut}");
        }
        // a column count larger than the event
        let mut b = body[..17].to_vec();
        b[14] = 250;
        assert!(decode_table_map(&mut Cursor::new(&b, 0), 8, false).is_err());
    }

    /// shop.t (INT, POINT, VARCHAR(10) latin1, VARCHAR(40) utf8mb4) with a
    /// COLUMN_CHARSET list of `charsets` (packed integers).
    fn geometry_map(charsets: &[u8]) -> Vec<u8> {
        let mut b = vec![7, 0, 0, 0, 0, 0, 1, 0];
        b.extend([1, b's', 0, 1, b't', 0]);
        b.extend([
            4,
            MYSQL_TYPE_LONG,
            MYSQL_TYPE_GEOMETRY,
            MYSQL_TYPE_VARCHAR,
            MYSQL_TYPE_VARCHAR,
        ]);
        b.extend([5, 4, 10, 0, 40, 0]);
        b.push(0b1110);
        b.extend([COLUMN_CHARSET, charsets.len() as u8]);
        b.extend(charsets);
        b
    }

    fn charsets_of(body: &[u8], mariadb: bool) -> Vec<Option<u64>> {
        let mut c = Cursor::new(body, 0);
        let m = decode_table_map(&mut c, 8, mariadb).unwrap();
        assert!(c.at_end());
        m.columns.iter().map(|c| c.charset).collect()
    }

    #[test]
    fn mariadb_lists_geometry_among_the_charsets_and_mysql_does_not() {
        // a MariaDB server lists GEOMETRY (binary) before the text columns
        // (log_event_server.cc is_character_field), a MySQL server does not
        let mariadb = geometry_map(&[63, 8, 45]);
        assert_eq!(
            charsets_of(&mariadb, true),
            [None, Some(63), Some(8), Some(45)]
        );
        let mysql = geometry_map(&[8, 0xfc, 0xff, 0x00]);
        assert_eq!(charsets_of(&mysql, false), [None, None, Some(8), Some(255)]);
    }

    #[test]
    fn mysql_lists_vector_among_the_charsets() {
        // rust_mysql_common/vector.binlog (MySQL 9.0.1), table bar: BIGINT,
        // VECTOR(2), TEXT utf8mb4, VECTOR(4); DEFAULT_CHARSET binary with the
        // TEXT (the second listed column) as utf8mb4_0900_ai_ci
        let mut b = vec![7, 0, 0, 0, 0, 0, 1, 0];
        b.extend([3, b'd', b't', b'b', 0, 3, b'b', b'a', b'r', 0]);
        b.extend([
            4,
            MYSQL_TYPE_LONGLONG,
            MYSQL_TYPE_VECTOR,
            MYSQL_TYPE_BLOB,
            MYSQL_TYPE_VECTOR,
        ]);
        b.extend([3, 4, 2, 4]);
        b.push(0b0100);
        b.extend([DEFAULT_CHARSET, 5, 63, 1, 0xfc, 0xff, 0x00]);
        assert_eq!(
            charsets_of(&b, false),
            [None, Some(63), Some(255), Some(63)]
        );
    }

    #[test]
    fn mariadb_compressed_columns_take_their_twins_metadata_and_charsets() {
        // as a MariaDB 10.11 server logs (INT, VARCHAR(100) latin1 COMPRESSED,
        // TEXT COMPRESSED, VARCHAR(10) utf8mb4): the compressed columns are
        // character columns of the charset list (latin1 first, the default after)
        let mut b = vec![7, 0, 0, 0, 0, 0, 1, 0];
        b.extend([1, b'c', 0, 1, b't', 0]);
        b.extend([
            4,
            MYSQL_TYPE_LONG,
            MYSQL_TYPE_VARCHAR_COMPRESSED,
            MYSQL_TYPE_BLOB_COMPRESSED,
            MYSQL_TYPE_VARCHAR,
        ]);
        b.extend([5, 101, 0, 2, 40, 0]);
        b.push(0b1110);
        b.extend([DEFAULT_CHARSET, 3, 45, 0, 8]);
        let mut c = Cursor::new(&b, 0);
        let m = decode_table_map(&mut c, 8, true).unwrap();
        assert!(c.at_end());
        let facts: Vec<_> = m
            .columns
            .iter()
            .map(|c| (c.type_code, c.meta, c.charset))
            .collect();
        assert_eq!(
            facts,
            [
                (MYSQL_TYPE_LONG, 0, None),
                (MYSQL_TYPE_VARCHAR_COMPRESSED, 101, Some(8)),
                (MYSQL_TYPE_BLOB_COMPRESSED, 2, Some(45)),
                (MYSQL_TYPE_VARCHAR, 40, Some(45)),
            ]
        );
    }
}
