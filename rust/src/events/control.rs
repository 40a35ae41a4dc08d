//! Small control and statement-context events (events/control.py, gtid.py
//! and query.py twins): ROTATE, INTVAR, RAND, BINLOG_CHECKPOINT, ROWS_QUERY.
//!
//! Each reads exactly what its Python twin reads, in the same order; the
//! caller checks the body was read whole (reader.py `_MUST_CONSUME`).

use crate::cursor::Cursor;
use crate::error::Result;

/// ROTATE_EVENT (`decode_rotate`): the next file's first position (4 when
/// the post-header is too short to hold it) and its name, raw.
pub fn decode_rotate<'a>(cur: &mut Cursor<'a>, post_header_len: usize) -> Result<(u64, &'a [u8])> {
    let position = if post_header_len >= 8 { cur.u64()? } else { 4 };
    Ok((position, cur.rest()))
}

/// INTVAR_EVENT (`decode_intvar`): (kind, value).
pub fn decode_intvar(cur: &mut Cursor) -> Result<(u8, u64)> {
    let kind = cur.u8()?;
    Ok((kind, cur.u64()?))
}

/// RAND_EVENT (`decode_rand`): (seed1, seed2).
pub fn decode_rand(cur: &mut Cursor) -> Result<(u64, u64)> {
    let seed1 = cur.u64()?;
    Ok((seed1, cur.u64()?))
}

/// BINLOG_CHECKPOINT_EVENT (`decode_binlog_checkpoint`): the file name, raw.
pub fn decode_binlog_checkpoint<'a>(cur: &mut Cursor<'a>) -> Result<&'a [u8]> {
    let length = cur.u32()? as usize;
    cur.bytes(length)
}

/// ROWS_QUERY_LOG_EVENT (`decode_rows_query`): the statement, raw, after a
/// length byte the server ignores (it truncates at 255).
pub fn decode_rows_query<'a>(cur: &mut Cursor<'a>) -> Result<&'a [u8]> {
    cur.u8()?;
    Ok(cur.rest())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotate_with_and_without_position() {
        let body = [4, 0, 0, 0, 0, 0, 0, 0, b'b', b'.', b'2'];
        assert_eq!(
            decode_rotate(&mut Cursor::new(&body, 0), 8).unwrap(),
            (4, &b"b.2"[..])
        );
        assert_eq!(
            decode_rotate(&mut Cursor::new(b"b.2", 0), 0).unwrap(),
            (4, &b"b.2"[..])
        );
    }

    #[test]
    fn short_bodies_fail() {
        assert!(decode_intvar(&mut Cursor::new(&[1, 2], 0)).is_err());
        assert!(decode_rand(&mut Cursor::new(&[0; 15], 0)).is_err());
        assert!(decode_binlog_checkpoint(&mut Cursor::new(&[9, 0, 0, 0, b'a'], 0)).is_err());
        assert!(decode_rows_query(&mut Cursor::new(&[], 0)).is_err());
        let mut c = Cursor::new(&[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0], 0);
        assert_eq!(decode_rand(&mut c).unwrap(), (1, 2));
    }
}
