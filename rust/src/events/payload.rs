//! TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+, binlog_transaction_compression;
//! events/payload.py `decode_transaction_payload`).
//!
//! Layout: TLV header fields (type, length, value; all net_field_length
//! integers) ending with field 0, then the payload: the transaction's events,
//! back to back with their own headers and no checksums, zstd-compressed or
//! not. The framer (`framing.rs`) streams the inner events after this one;
//! this decoder gives the header's facts and the stored bytes.

use crate::constants::PAYLOAD_NONE;
use crate::cursor::Cursor;
use crate::error::Result;

pub const OTW_PAYLOAD_HEADER_END_MARK: u64 = 0;
pub const OTW_PAYLOAD_SIZE_FIELD: u64 = 1;
pub const OTW_PAYLOAD_COMPRESSION_TYPE_FIELD: u64 = 2;
pub const OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD: u64 = 3;
/// A payload may claim at most this many uncompressed bytes per stored byte,
/// and may not decompress past what it claims (events/payload.py's bound).
pub const MAX_PAYLOAD_RATIO: u64 = 4096;

impl TransactionPayload<'_> {
    /// The most bytes the payload may decompress to (`decompressed_limit`).
    pub fn decompressed_limit(&self) -> u64 {
        if self.uncompressed_size != self.payload_size {
            return self.uncompressed_size;
        }
        MAX_PAYLOAD_RATIO.saturating_mul(self.payload_size)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionPayload<'a> {
    /// `PAYLOAD_ZSTD` or `PAYLOAD_NONE` (others are refused when unpacked).
    pub compression_type: u64,
    pub payload_size: u64,
    pub uncompressed_size: u64,
    /// The payload as stored (compressed).
    pub payload: &'a [u8],
    /// File offset of `payload[0]`.
    pub payload_offset: u64,
}

pub fn decode_transaction_payload<'a>(cur: &mut Cursor<'a>) -> Result<TransactionPayload<'a>> {
    let (mut size, mut compression, mut uncompressed) = (0u64, PAYLOAD_NONE, 0u64);
    loop {
        let field = cur.packed_len()?;
        if field == OTW_PAYLOAD_HEADER_END_MARK {
            break;
        }
        let n = cur.packed_len()?;
        if n > cur.remaining() as u64 {
            return Err(cur.error(format!(
                "needs {n} bytes, only {} left in the event",
                cur.remaining()
            )));
        }
        let value = cur.sub(n as usize)?.packed_len()?;
        match field {
            OTW_PAYLOAD_SIZE_FIELD => size = value,
            OTW_PAYLOAD_COMPRESSION_TYPE_FIELD => compression = value,
            OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD => uncompressed = value,
            _ => {}
        }
    }
    let payload_offset = cur.offset();
    let payload = cur.rest();
    let len = payload.len() as u64;
    if size != 0 && size != len {
        return Err(cur.error(format!("payload is {len} bytes, header says {size}")));
    }
    if uncompressed > MAX_PAYLOAD_RATIO.saturating_mul(len.max(1)) {
        return Err(cur.error(format!(
            "payload of {len} bytes claims {uncompressed} uncompressed: \
             more than {MAX_PAYLOAD_RATIO} times its size"
        )));
    }
    Ok(TransactionPayload {
        compression_type: compression,
        payload_size: len,
        uncompressed_size: if uncompressed != 0 { uncompressed } else { len },
        payload,
        payload_offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::PAYLOAD_ZSTD;

    #[test]
    fn tlv_header_then_payload() {
        let body = [2, 1, 0, 1, 1, 3, 3, 1, 9, 0, 0xA, 0xB, 0xC];
        let mut c = Cursor::new(&body, 100);
        let p = decode_transaction_payload(&mut c).unwrap();
        assert_eq!(
            (p.compression_type, p.payload_size, p.uncompressed_size),
            (PAYLOAD_ZSTD, 3, 9)
        );
        assert_eq!((p.payload, p.payload_offset), (&[0xA, 0xB, 0xC][..], 110));
        let mut bad = body;
        bad[5] = 2; // size field says 2
        let e = decode_transaction_payload(&mut Cursor::new(&bad, 100)).unwrap_err();
        assert_eq!(e.offset, 113);
        assert!(decode_transaction_payload(&mut Cursor::new(&[1, 5], 0)).is_err());
    }
}
