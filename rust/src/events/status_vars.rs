//! A QUERY event's status variables (events/query.py `decode_status_vars`).
//!
//! Strategy: the twin of the Python walk, read for read: each `Q_*` code is
//! followed by a value of the code's own shape; a code neither knows ends the
//! walk (the length of its value is not self-described) and the bytes from
//! there are kept as `unknown`. A later occurrence of a code replaces an
//! earlier one, as in the Python dict. Only what a consumer reads is kept
//! (the mysqlbinlog printer's `SET @@session...` lines, the header's xid);
//! the rest is read past with the same reads, so errors fall at the same
//! offsets. `status_var_list` gives every value, in the dict's order (the
//! events view's `status_vars` JSON).

use crate::cursor::Cursor;
use crate::error::Result;

// Status variable codes (sql/log_event.h `Q_*`; MariaDB's from 128).
pub const Q_FLAGS2_CODE: u8 = 0;
pub const Q_SQL_MODE_CODE: u8 = 1;
pub const Q_CATALOG_CODE: u8 = 2;
pub const Q_AUTO_INCREMENT: u8 = 3;
pub const Q_CHARSET_CODE: u8 = 4;
pub const Q_TIME_ZONE_CODE: u8 = 5;
pub const Q_CATALOG_NZ_CODE: u8 = 6;
pub const Q_LC_TIME_NAMES_CODE: u8 = 7;
pub const Q_CHARSET_DATABASE_CODE: u8 = 8;
pub const Q_TABLE_MAP_FOR_UPDATE_CODE: u8 = 9;
pub const Q_MASTER_DATA_WRITTEN_CODE: u8 = 10;
pub const Q_INVOKER: u8 = 11;
pub const Q_UPDATED_DB_NAMES: u8 = 12;
pub const Q_MICROSECONDS: u8 = 13;
pub const Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP: u8 = 16;
pub const Q_DDL_LOGGED_WITH_XID: u8 = 17;
pub const Q_DEFAULT_COLLATION_FOR_UTF8MB4: u8 = 18;
pub const Q_SQL_REQUIRE_PRIMARY_KEY: u8 = 19;
pub const Q_DEFAULT_TABLE_ENCRYPTION: u8 = 20;
pub const Q_HRNOW: u8 = 128;
pub const Q_XID: u8 = 129;
pub const Q_GTID_FLAGS3: u8 = 130;
pub const Q_CHARACTER_SET_COLLATIONS: u8 = 131;

/// OVER_MAX_DBS_IN_EVENT_MTS: too many databases to list.
const OVER_MAX_DBS_IN_EVENT_MTS: u8 = 254;

/// The status variables a consumer reads; None: absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusVars<'a> {
    pub flags2: Option<u32>,
    pub sql_mode: Option<u64>,
    /// (auto_increment_increment, auto_increment_offset)
    pub auto_increment: Option<(u16, u16)>,
    /// (character_set_client, collation_connection, collation_server)
    pub charset: Option<(u16, u16, u16)>,
    /// Raw bytes (`events::text` makes them the Python string).
    pub time_zone: Option<&'a [u8]>,
    pub lc_time_names: Option<u16>,
    pub charset_database: Option<u16>,
    pub xid: Option<u64>,
    /// Q_HRNOW: the microseconds of the statement's timestamp.
    pub hrnow: Option<u32>,
    /// The bytes from the first code not understood (`unknown_status_vars`).
    pub unknown: &'a [u8],
}

/// One status variable's value, shaped as events/query.py `_status_var` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusValue<'a> {
    Int(u64),
    /// Raw bytes (`events::text` makes them the Python string).
    Text(&'a [u8]),
    /// Q_AUTO_INCREMENT: (increment, offset).
    AutoIncrement(u16, u16),
    /// Q_CHARSET_CODE: (character_set_client, collation_connection, collation_server).
    Charset(u16, u16, u16),
    /// Q_INVOKER: (user, host).
    Invoker(&'a [u8], &'a [u8]),
    /// Q_UPDATED_DB_NAMES: None when there were too many to list.
    Databases(Option<Vec<&'a [u8]>>),
    /// Q_CHARACTER_SET_COLLATIONS: (charset, collation) pairs.
    Collations(Vec<(u16, u16)>),
}

/// Walk a status-variables block (the cursor covers exactly it).
pub fn decode_status_vars<'a>(cur: &mut Cursor<'a>) -> Result<StatusVars<'a>> {
    let mut vars = StatusVars::default();
    let unknown = walk_status_vars(cur, |code, value| vars.keep(code, value))?;
    vars.unknown = unknown;
    Ok(vars)
}

/// Every status variable in block order, as the Python dict holds them: a
/// code seen again keeps its first place and takes the later value. Returns
/// them with the bytes from the first code not understood.
pub fn status_var_list<'a>(cur: &mut Cursor<'a>) -> Result<StatusVarList<'a>> {
    let mut list: Vec<(u8, StatusValue<'a>)> = Vec::new();
    let unknown = walk_status_vars(cur, |code, value| {
        match list.iter_mut().find(|(c, _)| *c == code) {
            Some(slot) => slot.1 = value,
            None => list.push((code, value)),
        }
    })?;
    Ok((list, unknown))
}

/// The status variables in order, and the bytes not understood.
pub type StatusVarList<'a> = (Vec<(u8, StatusValue<'a>)>, &'a [u8]);

/// The walk itself: `found(code, value)` for each, then the bytes from the
/// first code without a known shape (empty when all were read).
fn walk_status_vars<'a>(
    cur: &mut Cursor<'a>,
    mut found: impl FnMut(u8, StatusValue<'a>),
) -> Result<&'a [u8]> {
    while !cur.at_end() {
        let start = cur.clone();
        let code = cur.u8()?;
        match read_value(code, cur)? {
            Some(value) => found(code, value),
            None => {
                *cur = start;
                return Ok(cur.rest());
            }
        }
    }
    Ok(&[])
}

impl<'a> StatusVars<'a> {
    /// What a consumer reads of one value.
    fn keep(&mut self, code: u8, value: StatusValue<'a>) {
        match (code, value) {
            (Q_FLAGS2_CODE, StatusValue::Int(v)) => self.flags2 = Some(v as u32),
            (Q_SQL_MODE_CODE, StatusValue::Int(v)) => self.sql_mode = Some(v),
            (Q_AUTO_INCREMENT, StatusValue::AutoIncrement(a, b)) => {
                self.auto_increment = Some((a, b))
            }
            (Q_CHARSET_CODE, StatusValue::Charset(a, b, c)) => self.charset = Some((a, b, c)),
            (Q_TIME_ZONE_CODE, StatusValue::Text(t)) => self.time_zone = Some(t),
            (Q_LC_TIME_NAMES_CODE, StatusValue::Int(v)) => self.lc_time_names = Some(v as u16),
            (Q_CHARSET_DATABASE_CODE, StatusValue::Int(v)) => {
                self.charset_database = Some(v as u16)
            }
            (Q_XID, StatusValue::Int(v)) => self.xid = Some(v),
            (Q_HRNOW, StatusValue::Int(v)) => self.hrnow = Some(v as u32),
            _ => {}
        }
    }
}

/// The `Q_*` name of a code `read_value` reads (binlake.constants.QueryStatusVar).
pub fn status_var_name(code: u8) -> &'static str {
    match code {
        Q_FLAGS2_CODE => "Q_FLAGS2_CODE",
        Q_SQL_MODE_CODE => "Q_SQL_MODE_CODE",
        Q_CATALOG_CODE => "Q_CATALOG_CODE",
        Q_AUTO_INCREMENT => "Q_AUTO_INCREMENT",
        Q_CHARSET_CODE => "Q_CHARSET_CODE",
        Q_TIME_ZONE_CODE => "Q_TIME_ZONE_CODE",
        Q_CATALOG_NZ_CODE => "Q_CATALOG_NZ_CODE",
        Q_LC_TIME_NAMES_CODE => "Q_LC_TIME_NAMES_CODE",
        Q_CHARSET_DATABASE_CODE => "Q_CHARSET_DATABASE_CODE",
        Q_TABLE_MAP_FOR_UPDATE_CODE => "Q_TABLE_MAP_FOR_UPDATE_CODE",
        Q_MASTER_DATA_WRITTEN_CODE => "Q_MASTER_DATA_WRITTEN_CODE",
        Q_INVOKER => "Q_INVOKER",
        Q_UPDATED_DB_NAMES => "Q_UPDATED_DB_NAMES",
        Q_MICROSECONDS => "Q_MICROSECONDS",
        Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP => "Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP",
        Q_DDL_LOGGED_WITH_XID => "Q_DDL_LOGGED_WITH_XID",
        Q_DEFAULT_COLLATION_FOR_UTF8MB4 => "Q_DEFAULT_COLLATION_FOR_UTF8MB4",
        Q_SQL_REQUIRE_PRIMARY_KEY => "Q_SQL_REQUIRE_PRIMARY_KEY",
        Q_DEFAULT_TABLE_ENCRYPTION => "Q_DEFAULT_TABLE_ENCRYPTION",
        Q_HRNOW => "Q_HRNOW",
        Q_XID => "Q_XID",
        Q_GTID_FLAGS3 => "Q_GTID_FLAGS3",
        Q_CHARACTER_SET_COLLATIONS => "Q_CHARACTER_SET_COLLATIONS",
        _ => "?",
    }
}

/// One value; None for a code without a known shape (nothing read).
fn read_value<'a>(code: u8, cur: &mut Cursor<'a>) -> Result<Option<StatusValue<'a>>> {
    use StatusValue::*;
    Ok(Some(match code {
        Q_FLAGS2_CODE | Q_MASTER_DATA_WRITTEN_CODE => Int(cur.u32()?.into()),
        Q_SQL_MODE_CODE | Q_TABLE_MAP_FOR_UPDATE_CODE | Q_DDL_LOGGED_WITH_XID | Q_XID => {
            Int(cur.u64()?)
        }
        Q_CATALOG_CODE => {
            // 5.0.0-5.0.3: length, string, NUL
            let value = cur.lstring1()?;
            cur.u8()?;
            Text(value)
        }
        Q_AUTO_INCREMENT => AutoIncrement(cur.u16()?, cur.u16()?),
        Q_CHARSET_CODE => Charset(cur.u16()?, cur.u16()?, cur.u16()?),
        Q_TIME_ZONE_CODE | Q_CATALOG_NZ_CODE => Text(cur.lstring1()?),
        Q_LC_TIME_NAMES_CODE | Q_CHARSET_DATABASE_CODE | Q_DEFAULT_COLLATION_FOR_UTF8MB4 => {
            Int(cur.u16()?.into())
        }
        Q_INVOKER => Invoker(cur.lstring1()?, cur.lstring1()?),
        Q_UPDATED_DB_NAMES => {
            let count = cur.u8()?;
            if count == OVER_MAX_DBS_IN_EVENT_MTS {
                Databases(None)
            } else {
                let mut names = Vec::with_capacity(count as usize);
                for _ in 0..count {
                    names.push(cur.cstring()?);
                }
                Databases(Some(names))
            }
        }
        Q_MICROSECONDS | Q_HRNOW => Int(cur.uint(3)?),
        Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP
        | Q_SQL_REQUIRE_PRIMARY_KEY
        | Q_DEFAULT_TABLE_ENCRYPTION
        | Q_GTID_FLAGS3 => Int(cur.u8()?.into()),
        Q_CHARACTER_SET_COLLATIONS => {
            let count = cur.u8()?;
            let mut pairs = Vec::with_capacity(count as usize);
            for _ in 0..count {
                pairs.push((cur.u16()?, cur.u16()?));
            }
            Collations(pairs)
        }
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_then_unknown_rest() {
        let mut block = vec![Q_FLAGS2_CODE, 0, 0, 0, 0x0C];
        block.extend([Q_CHARSET_CODE, 45, 0, 45, 0, 8, 0]);
        block.extend([Q_TIME_ZONE_CODE, 3, b'U', b'T', b'C']);
        block.extend([Q_HRNOW, 0x3F, 0x42, 0x0F]);
        block.extend([Q_XID, 9, 0, 0, 0, 0, 0, 0, 0]);
        block.extend([14, 1, 2, 3]); // Q_COMMIT_TS: not understood, kept
        let mut cur = Cursor::new(&block, 100);
        let vars = decode_status_vars(&mut cur).unwrap();
        assert_eq!(vars.flags2, Some(0x0C00_0000));
        assert_eq!(vars.charset, Some((45, 45, 8)));
        assert_eq!(vars.time_zone, Some(&b"UTC"[..]));
        assert_eq!((vars.hrnow, vars.xid), (Some(999_999), Some(9)));
        assert_eq!(vars.unknown, &[14, 1, 2, 3]);
    }

    #[test]
    fn the_list_keeps_the_dicts_order() {
        // as `values[name] = value` in query.py: a code seen again keeps its
        // first place and takes the later value
        let mut block = vec![Q_LC_TIME_NAMES_CODE, 1, 0];
        block.extend([Q_INVOKER, 1, b'u', 1, b'h']);
        block.extend([Q_LC_TIME_NAMES_CODE, 2, 0]);
        block.extend([Q_UPDATED_DB_NAMES, 2, b'a', 0, b'b', 0]);
        let (list, unknown) = status_var_list(&mut Cursor::new(&block, 0)).unwrap();
        assert!(unknown.is_empty());
        assert_eq!(
            list,
            vec![
                (Q_LC_TIME_NAMES_CODE, StatusValue::Int(2)),
                (Q_INVOKER, StatusValue::Invoker(b"u", b"h")),
                (
                    Q_UPDATED_DB_NAMES,
                    StatusValue::Databases(Some(vec![&b"a"[..], &b"b"[..]]))
                ),
            ]
        );
        assert_eq!(status_var_name(Q_INVOKER), "Q_INVOKER");
    }

    #[test]
    fn a_short_value_is_an_error_at_its_offset() {
        let block = [Q_SQL_MODE_CODE, 1, 2, 3];
        let mut cur = Cursor::new(&block, 100);
        let err = decode_status_vars(&mut cur).unwrap_err();
        assert_eq!(err.offset, 101);
    }

    #[test]
    fn too_many_databases_lists_none() {
        let block = [
            Q_UPDATED_DB_NAMES,
            OVER_MAX_DBS_IN_EVENT_MTS,
            Q_LC_TIME_NAMES_CODE,
            2,
            0,
        ];
        let mut cur = Cursor::new(&block, 0);
        let vars = decode_status_vars(&mut cur).unwrap();
        assert_eq!(vars.lc_time_names, Some(2));
    }
}
