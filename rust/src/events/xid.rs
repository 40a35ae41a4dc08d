//! XID_EVENT: the transaction's XID, 8 bytes (events/control.py `decode_xid`).

use crate::cursor::Cursor;
use crate::error::Result;

/// The XID (unsigned; the caller checks the body was read whole).
pub fn decode_xid(cur: &mut Cursor) -> Result<u64> {
    cur.u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xid() {
        let mut c = Cursor::new(&[1, 0, 0, 0, 0, 0, 0, 0x80], 0);
        assert_eq!(decode_xid(&mut c).unwrap(), 0x8000_0000_0000_0001);
        assert!(decode_xid(&mut Cursor::new(&[1, 2], 0)).is_err());
    }
}
