//! QUERY_EVENT, MariaDB's QUERY_COMPRESSED_EVENT and EXECUTE_LOAD_QUERY_EVENT
//! (events/query.py `decode_query`), and the statement classification of
//! binlake/read/scan.py `classify_query`.
//!
//! The status-variables block is kept as a raw slice: what it holds is
//! decoded elsewhere (its parser is not this module's).

use std::borrow::Cow;
use std::io::Read;

use crate::constants::*;
use crate::cursor::{be_uint, Cursor};
use crate::error::{Error, Result};

/// EXECUTE_LOAD_QUERY's extra post-header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecuteLoad {
    pub file_id: u32,
    pub fn_pos_start: u32,
    pub fn_pos_end: u32,
    pub dup_handling: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query<'a> {
    pub thread_id: u32,
    pub exec_time: u32,
    pub error_code: u16,
    /// The status variables, undecoded.
    pub status_vars: &'a [u8],
    /// File offset of `status_vars[0]`.
    pub status_vars_offset: u64,
    /// Raw bytes (`text()` makes them the Python event's `database`).
    pub database: &'a [u8],
    /// The statement's bytes, uncompressed for QUERY_COMPRESSED_EVENT.
    pub query: Cow<'a, [u8]>,
    pub execute_load: Option<ExecuteLoad>,
}

/// A QUERY-family body; `post_header_len` as the format description says
/// for `type_code`. The caller checks the body was read whole (it always is).
pub fn decode_query<'a>(
    cur: &mut Cursor<'a>,
    type_code: u8,
    post_header_len: usize,
) -> Result<Query<'a>> {
    let mut post = cur.sub(post_header_len)?;
    let thread_id = post.u32()?;
    let exec_time = post.u32()?;
    let db_len = post.u8()? as usize;
    let error_code = post.u16()?;
    let status_len = if post.remaining() >= 2 {
        post.u16()? as usize
    } else {
        0
    };
    let execute_load = if type_code == EXECUTE_LOAD_QUERY_EVENT {
        Some(ExecuteLoad {
            file_id: post.u32()?,
            fn_pos_start: post.u32()?,
            fn_pos_end: post.u32()?,
            dup_handling: post.u8()?,
        })
    } else {
        None
    };
    let status_vars_offset = cur.offset();
    let status_vars = cur.bytes(status_len)?;
    let database = cur.bytes(db_len)?;
    cur.u8()?; // NUL after the database name
    let raw = cur.rest();
    let query = if type_code == QUERY_COMPRESSED_EVENT {
        Cow::Owned(uncompress_mariadb(raw, cur.offset())?)
    } else {
        Cow::Borrowed(raw)
    };
    Ok(Query {
        thread_id,
        exec_time,
        error_code,
        status_vars,
        status_vars_offset,
        database,
        query,
        execute_load,
    })
}

/// deflate's best case is about 1032:1; a header claiming more is corrupt.
const MAX_DEFLATE_RATIO: u64 = 1032;

/// MariaDB `binlog_buf_uncompress`: 1 header byte (0x80 | alg << 4 | lenlen),
/// the uncompressed length big-endian in lenlen bytes, then zlib data.
/// Errors are reported at `offset` (where query.py's cursor stands).
pub fn uncompress_mariadb(raw: &[u8], offset: u64) -> Result<Vec<u8>> {
    let Some(&head) = raw.first().filter(|&&b| b & 0x80 != 0) else {
        return Err(Error::corrupt(
            offset,
            "compressed event without its compression header",
        ));
    };
    let lenlen = (head & 0x07) as usize;
    let alg = (head & 0x70) >> 4;
    if alg != 0 {
        return Err(Error::corrupt(
            offset,
            format!("unknown MariaDB compression algorithm {alg}"),
        ));
    }
    let len_end = (1 + lenlen).min(raw.len());
    let expected = be_uint(&raw[1..len_end]);
    let compressed = &raw[len_end..];
    if expected > MAX_DEFLATE_RATIO * compressed.len() as u64 + 64 {
        return Err(Error::corrupt(
            offset,
            format!(
                "{} compressed bytes cannot hold the {expected} the header says",
                compressed.len()
            ),
        ));
    }
    let mut data = Vec::new();
    // one zlib stream, bytes after its end ignored; never more than the
    // header says, plus one byte to tell
    flate2::bufread::ZlibDecoder::new(compressed)
        .take(expected + 1)
        .read_to_end(&mut data)
        .map_err(|e| Error::corrupt(offset, format!("zlib: {e}")))?;
    if data.len() as u64 > expected {
        return Err(Error::corrupt(
            offset,
            format!("uncompresses past the {expected} bytes the header says"),
        ));
    }
    if data.len() as u64 != expected {
        return Err(Error::corrupt(
            offset,
            format!("uncompressed {} bytes, header says {expected}", data.len()),
        ));
    }
    Ok(data)
}

/// Where a statement leaves the transaction state (scan.py `BEGIN/END/OTHER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryKind {
    /// BEGIN, XA START / XA BEGIN.
    Begin,
    /// COMMIT, ROLLBACK, XA PREPARE / COMMIT / ROLLBACK.
    End,
    Other,
}

/// scan.py `classify_query` over the statement's bytes: the server writes
/// these statements verbatim, so a prefix test on the first 17 bytes
/// (ASCII-uppercased) is exact; `ROLLBACK TO SAVEPOINT` stays inside.
pub fn classify_query(query: &[u8]) -> QueryKind {
    let mut head = [0u8; 17];
    let n = query.len().min(17);
    head[..n].copy_from_slice(&query[..n]);
    head.make_ascii_uppercase();
    let head = &head[..n];
    if head == b"BEGIN" || head.starts_with(b"XA START") || head.starts_with(b"XA BEGIN") {
        return QueryKind::Begin;
    }
    if head == b"COMMIT"
        || head == b"ROLLBACK"
        || head.starts_with(b"XA PREPARE")
        || head.starts_with(b"XA COMMIT")
        || head.starts_with(b"XA ROLLBACK")
    {
        return QueryKind::End;
    }
    QueryKind::Other
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn query_body(db: &[u8], status: &[u8], query: &[u8]) -> Vec<u8> {
        let mut b = 7u32.to_le_bytes().to_vec();
        b.extend(0u32.to_le_bytes());
        b.push(db.len() as u8);
        b.extend(0u16.to_le_bytes());
        b.extend((status.len() as u16).to_le_bytes());
        b.extend(status);
        b.extend(db);
        b.push(0);
        b.extend(query);
        b
    }

    #[test]
    fn plain_query() {
        let body = query_body(b"shop", &[0, 1, 2, 3, 4], b"BEGIN");
        let mut c = Cursor::new(&body, 1000);
        let q = decode_query(&mut c, QUERY_EVENT, 13).unwrap();
        assert!(c.at_end());
        assert_eq!(
            (q.thread_id, q.database, &q.query[..], q.status_vars.len()),
            (7, &b"shop"[..], &b"BEGIN"[..], 5)
        );
        assert_eq!(q.status_vars_offset, 1013);
        assert_eq!(classify_query(&q.query), QueryKind::Begin);
        // database length past the end: an error where the read starts
        let mut body = body;
        body[8] = 200;
        let e = decode_query(&mut Cursor::new(&body, 1000), QUERY_EVENT, 13).unwrap_err();
        assert_eq!(e.offset, 1018);
    }

    #[test]
    fn compressed_query() {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"COMMIT").unwrap();
        let mut raw = vec![0x81, 6];
        raw.extend(z.finish().unwrap());
        let body = query_body(b"", &[], &raw);
        let q = decode_query(&mut Cursor::new(&body, 0), QUERY_COMPRESSED_EVENT, 13).unwrap();
        assert_eq!(&q.query[..], b"COMMIT");
        raw[1] = 7;
        let body = query_body(b"", &[], &raw);
        let e = decode_query(&mut Cursor::new(&body, 0), QUERY_COMPRESSED_EVENT, 13).unwrap_err();
        assert_eq!(e.offset, body.len() as u64);
        assert!(uncompress_mariadb(&[0x01], 5).is_err());
        assert!(uncompress_mariadb(&[0x91, 0], 5).is_err());
    }

    #[test]
    fn statement_kinds() {
        for (q, kind) in [
            (&b"begin"[..], QueryKind::Begin),
            (b"XA START 'x'", QueryKind::Begin),
            (b"COMMIT", QueryKind::End),
            (b"rollback", QueryKind::End),
            (b"ROLLBACK TO SAVEPOINT a", QueryKind::Other),
            (b"XA COMMIT 'x'", QueryKind::End),
            (b"BEGIN ", QueryKind::Other),
            (b"CREATE TABLE t (a int)", QueryKind::Other),
        ] {
            assert_eq!(classify_query(q), kind, "{q:?}");
        }
    }
}
