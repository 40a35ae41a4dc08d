//! Event bodies decoded natively: the families the changes loop and the
//! mysqlbinlog text printer need (GTID, XID, QUERY, TABLE_MAP, ROWS headers,
//! TRANSACTION_PAYLOAD).
//!
//! Strategy: the twin of `binlake/read/events/*.py`, decision for decision and
//! error for error (class and offset; wording as close as it matters). Each
//! decoder is a plain function over a `Cursor` bounded to the event body (the
//! checksum already removed by the framer) whose offsets are file offsets:
//! make it with `Frame::body(raw)`. Nothing here depends on the framer (it
//! uses `decode_transaction_payload` to unpack payloads). Structs borrow from
//! the body where the Python event keeps bytes, so decoding allocates only
//! what Python derives (texts, column facts).
//!
//! Rules, as `reader.py` applies them around the Python decoders:
//! * a decoder's error is reported as `"<TYPE_NAME> at <pos>: <detail>"`
//!   (`in_event`);
//! * every event type the Python reader decodes must account for all of its
//!   body (`expect_end`, reader.py `_MUST_CONSUME`: every decoded type but STOP).

use std::borrow::Cow;

use crate::constants::*;
use crate::cursor::Cursor;
use crate::error::Error;

pub mod control;
pub mod gtid;
pub mod payload;
pub mod query;
pub mod rows;
pub mod status_vars;
pub mod table_map;
pub mod xid;

pub use gtid::{decode_gtid, decode_mariadb_gtid, MariadbGtid, MysqlGtid};
pub use payload::{decode_transaction_payload, TransactionPayload};
pub use query::{classify_query, decode_query, uncompress_mariadb, Query, QueryKind};
pub use rows::{decode_rows_header, RowsHeader};
pub use table_map::{decode_table_map, TableColumn, TableMap};
pub use xid::decode_xid;

/// A decoder's error as reader.py reports it: prefixed with the event's type and position.
pub fn in_event(error: Error, type_code: u8, pos: u64) -> Error {
    error.context(format_args!("{} at {pos}", event_type_name(type_code)))
}

/// reader.py's check that a decoder read the whole body.
pub fn expect_end(cur: &Cursor, type_code: u8) -> Result<(), Error> {
    if cur.at_end() {
        return Ok(());
    }
    Err(cur.error(format!(
        "{} unread bytes after the {} body",
        cur.remaining(),
        event_type_name(type_code)
    )))
}

/// Identifiers and statements as cursor.py's `text`: UTF-8 when valid, else
/// latin-1 (byte-preserving).
pub fn text(raw: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(raw) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(raw.iter().map(|&b| b as char).collect()),
    }
}

/// The rows event codes (`ROWS_OPERATION` in events/rows.py).
pub fn is_rows_event(type_code: u8) -> bool {
    matches!(
        type_code,
        PRE_GA_WRITE_ROWS_EVENT..=DELETE_ROWS_EVENT_V1
            | WRITE_ROWS_EVENT..=DELETE_ROWS_EVENT
            | PARTIAL_UPDATE_ROWS_EVENT
            | WRITE_ROWS_COMPRESSED_EVENT_V1..=DELETE_ROWS_COMPRESSED_EVENT
    )
}

/// `Log_event_type` names as binlake/constants.py `event_type_name` gives them.
pub fn event_type_name(code: u8) -> Cow<'static, str> {
    let name = match code {
        UNKNOWN_EVENT => "UNKNOWN_EVENT",
        START_EVENT_V3 => "START_EVENT_V3",
        QUERY_EVENT => "QUERY_EVENT",
        STOP_EVENT => "STOP_EVENT",
        ROTATE_EVENT => "ROTATE_EVENT",
        INTVAR_EVENT => "INTVAR_EVENT",
        LOAD_EVENT => "LOAD_EVENT",
        7 => "SLAVE_EVENT",
        CREATE_FILE_EVENT => "CREATE_FILE_EVENT",
        APPEND_BLOCK_EVENT => "APPEND_BLOCK_EVENT",
        EXEC_LOAD_EVENT => "EXEC_LOAD_EVENT",
        DELETE_FILE_EVENT => "DELETE_FILE_EVENT",
        NEW_LOAD_EVENT => "NEW_LOAD_EVENT",
        RAND_EVENT => "RAND_EVENT",
        USER_VAR_EVENT => "USER_VAR_EVENT",
        FORMAT_DESCRIPTION_EVENT => "FORMAT_DESCRIPTION_EVENT",
        XID_EVENT => "XID_EVENT",
        BEGIN_LOAD_QUERY_EVENT => "BEGIN_LOAD_QUERY_EVENT",
        EXECUTE_LOAD_QUERY_EVENT => "EXECUTE_LOAD_QUERY_EVENT",
        TABLE_MAP_EVENT => "TABLE_MAP_EVENT",
        PRE_GA_WRITE_ROWS_EVENT => "PRE_GA_WRITE_ROWS_EVENT",
        PRE_GA_UPDATE_ROWS_EVENT => "PRE_GA_UPDATE_ROWS_EVENT",
        PRE_GA_DELETE_ROWS_EVENT => "PRE_GA_DELETE_ROWS_EVENT",
        WRITE_ROWS_EVENT_V1 => "WRITE_ROWS_EVENT_V1",
        UPDATE_ROWS_EVENT_V1 => "UPDATE_ROWS_EVENT_V1",
        DELETE_ROWS_EVENT_V1 => "DELETE_ROWS_EVENT_V1",
        INCIDENT_EVENT => "INCIDENT_EVENT",
        HEARTBEAT_LOG_EVENT => "HEARTBEAT_LOG_EVENT",
        IGNORABLE_LOG_EVENT => "IGNORABLE_LOG_EVENT",
        ROWS_QUERY_LOG_EVENT => "ROWS_QUERY_LOG_EVENT",
        WRITE_ROWS_EVENT => "WRITE_ROWS_EVENT",
        UPDATE_ROWS_EVENT => "UPDATE_ROWS_EVENT",
        DELETE_ROWS_EVENT => "DELETE_ROWS_EVENT",
        GTID_LOG_EVENT => "GTID_LOG_EVENT",
        ANONYMOUS_GTID_LOG_EVENT => "ANONYMOUS_GTID_LOG_EVENT",
        PREVIOUS_GTIDS_LOG_EVENT => "PREVIOUS_GTIDS_LOG_EVENT",
        TRANSACTION_CONTEXT_EVENT => "TRANSACTION_CONTEXT_EVENT",
        VIEW_CHANGE_EVENT => "VIEW_CHANGE_EVENT",
        XA_PREPARE_LOG_EVENT => "XA_PREPARE_LOG_EVENT",
        PARTIAL_UPDATE_ROWS_EVENT => "PARTIAL_UPDATE_ROWS_EVENT",
        TRANSACTION_PAYLOAD_EVENT => "TRANSACTION_PAYLOAD_EVENT",
        HEARTBEAT_LOG_EVENT_V2 => "HEARTBEAT_LOG_EVENT_V2",
        GTID_TAGGED_LOG_EVENT => "GTID_TAGGED_LOG_EVENT",
        ANNOTATE_ROWS_EVENT => "ANNOTATE_ROWS_EVENT",
        BINLOG_CHECKPOINT_EVENT => "BINLOG_CHECKPOINT_EVENT",
        GTID_EVENT => "GTID_EVENT",
        GTID_LIST_EVENT => "GTID_LIST_EVENT",
        START_ENCRYPTION_EVENT => "START_ENCRYPTION_EVENT",
        QUERY_COMPRESSED_EVENT => "QUERY_COMPRESSED_EVENT",
        WRITE_ROWS_COMPRESSED_EVENT_V1 => "WRITE_ROWS_COMPRESSED_EVENT_V1",
        UPDATE_ROWS_COMPRESSED_EVENT_V1 => "UPDATE_ROWS_COMPRESSED_EVENT_V1",
        DELETE_ROWS_COMPRESSED_EVENT_V1 => "DELETE_ROWS_COMPRESSED_EVENT_V1",
        WRITE_ROWS_COMPRESSED_EVENT => "WRITE_ROWS_COMPRESSED_EVENT",
        UPDATE_ROWS_COMPRESSED_EVENT => "UPDATE_ROWS_COMPRESSED_EVENT",
        DELETE_ROWS_COMPRESSED_EVENT => "DELETE_ROWS_COMPRESSED_EVENT",
        other => return Cow::Owned(format!("UNKNOWN_EVENT_{other}")),
    };
    Cow::Borrowed(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_utf8_else_latin1() {
        assert_eq!(text(b"caf\xc3\xa9"), "café");
        assert_eq!(text(b"caf\xe9"), "café");
    }

    #[test]
    fn errors_carry_the_event() {
        let e = in_event(Error::corrupt(10, "short"), XID_EVENT, 4);
        assert_eq!(e.detail, "XID_EVENT at 4: short");
        let mut c = Cursor::new(&[1, 2, 3], 100);
        c.u8().unwrap();
        let e = expect_end(&c, GTID_LOG_EVENT).unwrap_err();
        assert_eq!(
            (e.offset, e.detail.as_str()),
            (101, "2 unread bytes after the GTID_LOG_EVENT body")
        );
        assert_eq!(event_type_name(99), "UNKNOWN_EVENT_99");
    }
}
