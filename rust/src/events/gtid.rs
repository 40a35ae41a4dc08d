//! GTID events: MySQL GTID_LOG / ANONYMOUS_GTID_LOG and MariaDB GTID_EVENT
//! (events/gtid.py `decode_gtid`, `decode_mariadb_gtid`). GTID_TAGGED (MySQL
//! 8.4's serialization format) is not decoded here.

use crate::constants::*;
use crate::cursor::Cursor;
use crate::decimal;
use crate::error::Result;

/// MySQL GTID_LOG_EVENT / ANONYMOUS_GTID_LOG_EVENT: flags, sid, gno, then the
/// logical clock and commit facts of 5.7.5+ where present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlGtid<'a> {
    pub flags: u8,
    pub sid: &'a [u8],
    pub gno: i64,
    pub last_committed: Option<i64>,
    pub sequence_number: Option<i64>,
    /// Microseconds since the epoch.
    pub immediate_commit_timestamp: Option<u64>,
    pub original_commit_timestamp: Option<u64>,
    pub transaction_length: Option<u64>,
    pub immediate_server_version: Option<u32>,
    pub original_server_version: Option<u32>,
    pub commit_group_ticket: Option<u64>,
}

impl MysqlGtid<'_> {
    /// The sid as Python's `str(uuid.UUID(bytes=sid))`.
    pub fn sid_text(&self) -> String {
        uuid_text(self.sid)
    }

    /// `GtidEvent.gtid`: "uuid:gno", None for an ANONYMOUS_GTID_LOG_EVENT.
    pub fn gtid(&self, type_code: u8) -> Option<String> {
        if type_code == ANONYMOUS_GTID_LOG_EVENT {
            return None;
        }
        Some(format!("{}:{}", self.sid_text(), self.gno))
    }
}

/// A server UUID's 16 bytes as text, `8-4-4-4-12` lowercase hex digits
/// (`uuid.UUID(bytes=...)`): a GTID's source, a PREVIOUS_GTIDS set's sids.
pub fn uuid_text(sid: &[u8]) -> String {
    let mut out = String::with_capacity(36);
    for (i, b) in sid.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The logical clock typecode that introduces last_committed/sequence_number.
const LOGICAL_CLOCK_TYPECODE: u8 = 2;

pub fn decode_gtid<'a>(cur: &mut Cursor<'a>) -> Result<MysqlGtid<'a>> {
    let flags = cur.u8()?;
    let sid = cur.bytes(16)?;
    let gno = cur.i64()?;
    let mut g = MysqlGtid {
        flags,
        sid,
        gno,
        last_committed: None,
        sequence_number: None,
        immediate_commit_timestamp: None,
        original_commit_timestamp: None,
        transaction_length: None,
        immediate_server_version: None,
        original_server_version: None,
        commit_group_ticket: None,
    };
    if cur.peek() == Some(LOGICAL_CLOCK_TYPECODE) {
        cur.u8()?;
        g.last_committed = Some(cur.i64()?);
        g.sequence_number = Some(cur.i64()?);
        if cur.remaining() >= 7 {
            let mut immediate = cur.uint(7)?;
            if immediate & (1 << 55) != 0 {
                immediate &= !(1 << 55);
                g.original_commit_timestamp = Some(cur.uint(7)?);
            } else {
                g.original_commit_timestamp = Some(immediate);
            }
            g.immediate_commit_timestamp = Some(immediate);
        }
        if !cur.at_end() {
            g.transaction_length = Some(cur.packed_len()?);
        }
        if cur.remaining() >= 4 {
            let mut immediate = cur.u32()?;
            if immediate & (1 << 31) != 0 {
                immediate &= !(1 << 31);
                g.original_server_version = Some(cur.u32()?);
            } else {
                g.original_server_version = Some(immediate);
            }
            g.immediate_server_version = Some(immediate);
        }
        if cur.remaining() >= 8 {
            g.commit_group_ticket = Some(cur.u64()?);
        }
    }
    Ok(g)
}

/// MariaDB GTID_EVENT: stands for BEGIN (or is a standalone statement's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MariadbGtid<'a> {
    pub seq_no: u64,
    pub domain_id: u32,
    pub flags2: u8,
    pub commit_id: Option<u64>,
    pub xa_format_id: Option<u32>,
    pub xa_gtrid: Option<&'a [u8]>,
    pub xa_bqual: Option<&'a [u8]>,
    pub flags_extra: u8,
    pub extra_engines: Option<u8>,
    pub sa_seq_no: Option<u64>,
    pub thread_id: Option<u32>,
}

impl MariadbGtid<'_> {
    /// `MariadbGtidEvent.gtid`: "domain-server-seq" (once per transaction:
    /// written without `fmt`).
    pub fn gtid(&self, server_id: u32) -> String {
        let mut out = String::with_capacity(32);
        push_decimal(&mut out, self.domain_id as u64);
        out.push('-');
        push_decimal(&mut out, server_id as u64);
        out.push('-');
        push_decimal(&mut out, self.seq_no);
        out
    }

    /// FL_STANDALONE: a statement outside any transaction (DDL), no BEGIN implied.
    pub fn standalone(&self) -> bool {
        self.flags2 & FL_STANDALONE != 0
    }
}

/// `v` in decimal, appended to a `String` (the digits are ASCII).
fn push_decimal(out: &mut String, v: u64) {
    out.extend(
        decimal::digits(&mut [0; 20], v)
            .iter()
            .map(|&b| char::from(b)),
    );
}

pub fn decode_mariadb_gtid<'a>(cur: &mut Cursor<'a>) -> Result<MariadbGtid<'a>> {
    let seq_no = cur.u64()?;
    let domain_id = cur.u32()?;
    let flags2 = cur.u8()?;
    let mut g = MariadbGtid {
        seq_no,
        domain_id,
        flags2,
        commit_id: None,
        xa_format_id: None,
        xa_gtrid: None,
        xa_bqual: None,
        flags_extra: 0,
        extra_engines: None,
        sa_seq_no: None,
        thread_id: None,
    };
    if flags2 & FL_GROUP_COMMIT_ID != 0 {
        g.commit_id = Some(cur.u64()?);
    }
    if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA) != 0 {
        g.xa_format_id = Some(cur.u32()?);
        let gtrid_len = cur.u8()? as usize;
        let bqual_len = cur.u8()? as usize;
        g.xa_gtrid = Some(cur.bytes(gtrid_len)?);
        g.xa_bqual = Some(cur.bytes(bqual_len)?);
    }
    if !cur.at_end() {
        // Without the optional parts the post-header is zero padding up to 19 bytes.
        let flags_extra = cur.u8()?;
        g.flags_extra = flags_extra;
        if flags_extra & FL_EXTRA_MULTI_ENGINE_E1 != 0 {
            g.extra_engines = Some(cur.u8()?);
        }
        if flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1) != 0 {
            g.sa_seq_no = Some(cur.u64()?);
        }
        if flags_extra & FL_EXTRA_THREAD_ID != 0 {
            g.thread_id = Some(cur.u32()?);
        }
        cur.rest();
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_gtid_text_and_clock() {
        let mut body = vec![1u8];
        body.extend((0..16u8).collect::<Vec<_>>());
        body.extend(42i64.to_le_bytes());
        body.push(2);
        body.extend(7i64.to_le_bytes());
        body.extend(8i64.to_le_bytes());
        let mut c = Cursor::new(&body, 0);
        let g = decode_gtid(&mut c).unwrap();
        assert!(c.at_end());
        assert_eq!(
            g.gtid(GTID_LOG_EVENT).unwrap(),
            "00010203-0405-0607-0809-0a0b0c0d0e0f:42"
        );
        assert_eq!(g.gtid(ANONYMOUS_GTID_LOG_EVENT), None);
        assert_eq!((g.last_committed, g.sequence_number), (Some(7), Some(8)));
        // a short body fails at the read that runs out
        let mut c = Cursor::new(&body[..10], 100);
        assert_eq!(decode_gtid(&mut c).unwrap_err().offset, 101);
    }

    #[test]
    fn mariadb_gtid_flags() {
        let mut body = 5u64.to_le_bytes().to_vec();
        body.extend(3u32.to_le_bytes());
        body.push(FL_STANDALONE | FL_GROUP_COMMIT_ID);
        body.extend(9u64.to_le_bytes());
        let mut c = Cursor::new(&body, 0);
        let g = decode_mariadb_gtid(&mut c).unwrap();
        assert!(c.at_end() && g.standalone());
        assert_eq!((g.gtid(7), g.commit_id), ("3-7-5".to_string(), Some(9)));
        // padding up to the post-header length is read as flags_extra and the rest
        body.truncate(13);
        body.extend([0u8; 6]);
        body[12] = 0;
        let mut c = Cursor::new(&body, 0);
        let g = decode_mariadb_gtid(&mut c).unwrap();
        assert!(c.at_end() && !g.standalone());
    }
}
