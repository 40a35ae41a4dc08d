//! A QUERY event's status variables (events/query.py `decode_status_vars`).
//!
//! Strategy: the twin of the Python walk, read for read: each `Q_*` code is
//! followed by a value of the code's own shape; a code neither knows ends the
//! walk (the length of its value is not self-described) and the bytes from
//! there are kept as `unknown`. A later occurrence of a code replaces an
//! earlier one, as in the Python dict. Only what a consumer reads is kept
//! (the mysqlbinlog printer's `SET @@session...` lines, the header's xid);
//! the rest is read past with the same reads, so errors fall at the same
//! offsets.

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

/// Walk a status-variables block (the cursor covers exactly it).
pub fn decode_status_vars<'a>(cur: &mut Cursor<'a>) -> Result<StatusVars<'a>> {
    let mut vars = StatusVars::default();
    while !cur.at_end() {
        let start = cur.clone();
        let code = cur.u8()?;
        if !read_value(code, cur, &mut vars)? {
            *cur = start;
            vars.unknown = cur.rest();
            break;
        }
    }
    Ok(vars)
}

/// One value; false for a code without a known shape (nothing read).
fn read_value<'a>(code: u8, cur: &mut Cursor<'a>, vars: &mut StatusVars<'a>) -> Result<bool> {
    match code {
        Q_FLAGS2_CODE => vars.flags2 = Some(cur.u32()?),
        Q_SQL_MODE_CODE => vars.sql_mode = Some(cur.u64()?),
        Q_CATALOG_CODE => {
            // 5.0.0-5.0.3: length, string, NUL
            cur.lstring1()?;
            cur.u8()?;
        }
        Q_AUTO_INCREMENT => vars.auto_increment = Some((cur.u16()?, cur.u16()?)),
        Q_CHARSET_CODE => vars.charset = Some((cur.u16()?, cur.u16()?, cur.u16()?)),
        Q_TIME_ZONE_CODE => vars.time_zone = Some(cur.lstring1()?),
        Q_CATALOG_NZ_CODE => {
            cur.lstring1()?;
        }
        Q_LC_TIME_NAMES_CODE => vars.lc_time_names = Some(cur.u16()?),
        Q_CHARSET_DATABASE_CODE => vars.charset_database = Some(cur.u16()?),
        Q_DEFAULT_COLLATION_FOR_UTF8MB4 => {
            cur.u16()?;
        }
        Q_TABLE_MAP_FOR_UPDATE_CODE | Q_DDL_LOGGED_WITH_XID => {
            cur.u64()?;
        }
        Q_XID => vars.xid = Some(cur.u64()?),
        Q_MASTER_DATA_WRITTEN_CODE => {
            cur.u32()?;
        }
        Q_INVOKER => {
            cur.lstring1()?; // user
            cur.lstring1()?; // host
        }
        Q_UPDATED_DB_NAMES => {
            let count = cur.u8()?;
            if count != OVER_MAX_DBS_IN_EVENT_MTS {
                for _ in 0..count {
                    cur.cstring()?;
                }
            }
        }
        Q_MICROSECONDS => {
            cur.uint(3)?;
        }
        Q_HRNOW => vars.hrnow = Some(cur.uint(3)? as u32),
        Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP
        | Q_SQL_REQUIRE_PRIMARY_KEY
        | Q_DEFAULT_TABLE_ENCRYPTION
        | Q_GTID_FLAGS3 => {
            cur.u8()?;
        }
        Q_CHARACTER_SET_COLLATIONS => {
            let count = cur.u8()?;
            for _ in 0..count {
                cur.u16()?;
                cur.u16()?;
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
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
