//! Rows event headers of every generation (events/rows.py `decode_rows_event`):
//! PRE_GA (5.1.0-5.1.15, types 20-22), v1 (23-25), v2 (30-32, with extra row
//! info), PARTIAL_UPDATE_ROWS (39) and MariaDB's compressed v1/v2 (166-171).
//!
//! The row images are not decoded here: `rowimage` does that against the
//! table map's layout, for whichever sink asks.

use std::borrow::Cow;

use crate::constants::*;
use crate::cursor::Cursor;
use crate::error::Result;
use crate::events::query::uncompress_mariadb;
use crate::rowimage::Operation;

/// What a rows event's type code says it does (`ROWS_OPERATION`).
pub fn operation(type_code: u8) -> Option<Operation> {
    match type_code {
        PRE_GA_WRITE_ROWS_EVENT
        | WRITE_ROWS_EVENT_V1
        | WRITE_ROWS_EVENT
        | WRITE_ROWS_COMPRESSED_EVENT_V1
        | WRITE_ROWS_COMPRESSED_EVENT => Some(Operation::Insert),
        PRE_GA_UPDATE_ROWS_EVENT
        | UPDATE_ROWS_EVENT_V1
        | UPDATE_ROWS_EVENT
        | PARTIAL_UPDATE_ROWS_EVENT
        | UPDATE_ROWS_COMPRESSED_EVENT_V1
        | UPDATE_ROWS_COMPRESSED_EVENT => Some(Operation::Update),
        PRE_GA_DELETE_ROWS_EVENT
        | DELETE_ROWS_EVENT_V1
        | DELETE_ROWS_EVENT
        | DELETE_ROWS_COMPRESSED_EVENT_V1
        | DELETE_ROWS_COMPRESSED_EVENT => Some(Operation::Delete),
        _ => None,
    }
}

pub fn is_pre_ga(type_code: u8) -> bool {
    matches!(
        type_code,
        PRE_GA_WRITE_ROWS_EVENT..=PRE_GA_DELETE_ROWS_EVENT
    )
}

fn is_v2(type_code: u8) -> bool {
    matches!(
        type_code,
        WRITE_ROWS_EVENT..=DELETE_ROWS_EVENT
            | PARTIAL_UPDATE_ROWS_EVENT
            | WRITE_ROWS_COMPRESSED_EVENT..=DELETE_ROWS_COMPRESSED_EVENT
    )
}

fn is_compressed(type_code: u8) -> bool {
    matches!(
        type_code,
        WRITE_ROWS_COMPRESSED_EVENT_V1..=DELETE_ROWS_COMPRESSED_EVENT
    )
}

/// The v2 extra row info (`extra_info` of the Python event).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraInfo<'a> {
    pub ndb: Option<(u8, &'a [u8])>,
    pub partition_id: Option<u16>,
    pub source_partition_id: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsHeader<'a> {
    pub type_code: u8,
    pub table_id: u64,
    pub flags: u16,
    pub extra: ExtraInfo<'a>,
    /// Columns in the table (as the event says).
    pub width: u64,
    /// Columns-present bitmap of the (before) image: bit i = column i.
    pub present: &'a [u8],
    /// The after image's bitmap (updates except PRE_GA).
    pub present_after: Option<&'a [u8]>,
    /// File offset of the row images (of their compressed form for MariaDB's
    /// compressed events): row errors are reported from here.
    pub rows_offset: u64,
    /// The row images, uncompressed; empty for a huge event whose row images
    /// stay in the file (`large`).
    pub data: Cow<'a, [u8]>,
}

impl RowsHeader<'_> {
    pub fn operation(&self) -> Operation {
        operation(self.type_code).unwrap_or(Operation::Insert)
    }

    pub fn is_partial(&self) -> bool {
        self.type_code == PARTIAL_UPDATE_ROWS_EVENT
    }

    pub fn is_pre_ga(&self) -> bool {
        is_pre_ga(self.type_code)
    }

    pub fn stmt_end(&self) -> bool {
        self.flags & STMT_END_F != 0
    }
}

fn extra_info<'a>(cur: &mut Cursor<'a>) -> Result<ExtraInfo<'a>> {
    let mut info = ExtraInfo::default();
    while !cur.at_end() {
        let tag = cur.u8()?;
        match tag {
            RW_V_EXTRAINFO_TAG => {
                let length = cur.u8()?;
                if length < 2 {
                    return Err(cur.error(format!(
                        "extra row info length {length} is shorter than its header"
                    )));
                }
                let format = cur.u8()?;
                info.ndb = Some((format, cur.bytes(length as usize - 2)?));
            }
            RW_V_TAG_PART_INFO => {
                info.partition_id = Some(cur.u16()?);
                if cur.remaining() >= 2 {
                    info.source_partition_id = Some(cur.u16()?);
                }
            }
            _ => return Err(cur.error(format!("unknown extra row info tag {tag}"))),
        }
    }
    Ok(info)
}

/// A rows event's post-header, extra info and bitmaps, and its row images
/// (uncompressed). `post_header_len`: the format description's for
/// `type_code` (6: 4-byte table ids). `large`: the framer handed out only the
/// event's head; its row images are read from the file by the caller, from
/// `rows_offset` to the frame's `large_end`.
pub fn decode_rows_header<'a>(
    cur: &mut Cursor<'a>,
    type_code: u8,
    post_header_len: usize,
    large: bool,
) -> Result<RowsHeader<'a>> {
    let table_id = if post_header_len == 6 {
        cur.u32()? as u64
    } else {
        cur.u48()?
    };
    let flags = cur.u16()?;
    let mut extra = ExtraInfo::default();
    if is_v2(type_code) {
        let extra_len = cur.u16()?;
        if extra_len < 2 {
            return Err(cur.error(format!("rows event extra data length {extra_len} < 2")));
        }
        extra = extra_info(&mut cur.sub(extra_len as usize - 2)?)?;
    }
    let width = cur.packed_len()?;
    let bitmap_len = width.div_ceil(8);
    if bitmap_len > cur.remaining() as u64 {
        return Err(cur.error(format!(
            "needs {bitmap_len} bytes, only {} left in the event",
            cur.remaining()
        )));
    }
    let present = cur.bytes(bitmap_len as usize)?;
    let present_after = if operation(type_code) == Some(Operation::Update) && !is_pre_ga(type_code)
    {
        Some(cur.bytes(bitmap_len as usize)?)
    } else {
        None
    };
    let rows_offset = cur.offset();
    let raw = cur.rest();
    let data = if large {
        Cow::Borrowed(&[][..])
    } else if is_compressed(type_code) {
        Cow::Owned(uncompress_mariadb(raw, rows_offset)?)
    } else {
        Cow::Borrowed(raw)
    };
    Ok(RowsHeader {
        type_code,
        table_id,
        flags,
        extra,
        width,
        present,
        present_after,
        rows_offset,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_update_has_two_bitmaps() {
        let mut body = vec![1, 0, 0, 0, 0, 0]; // table id 1
        body.extend(STMT_END_F.to_le_bytes());
        body.extend([3, 0b111, 0b101, 0xAA, 0xBB]);
        let mut c = Cursor::new(&body, 50);
        let h = decode_rows_header(&mut c, UPDATE_ROWS_EVENT_V1, 8, false).unwrap();
        assert!(c.at_end() && h.stmt_end());
        assert_eq!(
            (h.table_id, h.width, h.present, h.present_after),
            (1, 3, &[0b111][..], Some(&[0b101][..]))
        );
        assert_eq!((h.rows_offset, &h.data[..]), (50 + 11, &[0xAA, 0xBB][..]));
        assert_eq!(h.operation(), Operation::Update);
    }

    #[test]
    fn v2_extra_info_and_errors() {
        let mut body = vec![1, 0, 0, 0, 0, 0, 0, 0];
        body.extend(7u16.to_le_bytes());
        body.extend([RW_V_TAG_PART_INFO, 4, 0, 5, 0]);
        body.extend([1, 1]);
        let h =
            decode_rows_header(&mut Cursor::new(&body, 0), WRITE_ROWS_EVENT, 10, false).unwrap();
        assert_eq!(
            (h.extra.partition_id, h.extra.source_partition_id),
            (Some(4), Some(5))
        );
        body[8] = 1; // extra data length 1 < 2
        let e = decode_rows_header(&mut Cursor::new(&body, 0), WRITE_ROWS_EVENT, 10, false)
            .unwrap_err();
        assert_eq!(e.offset, 10);
        // a width whose bitmap is longer than the event
        let body = [
            1, 0, 0, 0, 0, 0, 0, 0, 254, 255, 255, 255, 255, 255, 255, 255, 255,
        ];
        let e = decode_rows_header(&mut Cursor::new(&body, 0), DELETE_ROWS_EVENT_V1, 8, false)
            .unwrap_err();
        assert_eq!(e.offset, 17);
    }
}
