//! The events view of one byte range: `EventsView`, the changes loop's
//! (`changes.rs`) second consumer, and what the loop and the whole-file
//! readers (`changes/json_lines.rs`, `changes/listing.rs`) ask of it: which
//! events are decoded natively, and each event's row. The Python iterator
//! over it is `EventsReader` (`events_reader.rs`).
//!
//! Strategy: the loop that frames, decodes and groups transactions for the
//! changes view is reused as is (`ChangesReader` with an `EventsView`): each
//! event of the range becomes an `EventRow` of its transaction, and at the
//! transaction's end its rows go to the `EventsBuilder` with its GTID and
//! XID, in batches cut where `event_batches` cuts them (after the
//! transaction that reaches BATCH_ROWS).
//!
//! `info` is written natively (sink/events.rs) for the events every
//! transaction has, decoded again here with the `events/` decoders (cheap,
//! and the loop's own decode stays as it is). In this view the loop also
//! decodes QUERY events (status variables included) and the small events of
//! `described_here` instead of handing them to the reference, whenever they
//! decode whole: one that does not goes to the reference, whose error or
//! warning is then the one raised. Every other event was handed to the
//! Python reference by the loop already (`check`), which keeps the
//! description it made of it (`check.last`: database, table, query, info);
//! an event of a natively decoded type that failed to decode under `force`
//! is handed to it as well, to describe it as the reference's UnknownEvent.
//!
//! Rule: format descriptions stay with the reference, whose decoder state
//! (`_EventChecker`) must see every one of them.

use std::collections::HashMap;
use std::rc::Rc;

use crate::constants::*;
use crate::cursor::Cursor;
use crate::events::status_vars::{status_var_list, StatusVarList};
use crate::events::{self, control, text};
use crate::framing::{Format, Frame};
use crate::sink::events::{self as sink, EventRow, EventsBuilder, JsonObject};

/// Table maps kept by their bytes (as the changes loop bounds its cache).
const TABLE_CACHE_LIMIT: usize = 4096;

/// What the events view keeps of a table map, shared by every equal map.
struct MapInfo {
    /// Decoded as a MariaDB server's map (equal bytes from servers of one
    /// flavour, equal map: `TableMap::signature`).
    mariadb: bool,
    database: String,
    table: String,
    /// Its info's fields after table_id and flags.
    fields: Vec<u8>,
}

/// The events consumer of the loop.
pub(super) struct EventsView {
    pub builder: EventsBuilder,
    /// The `file` and `file_seq` columns.
    pub file: String,
    pub file_seq: i64,
    /// The range's events are all read.
    pub done: bool,
    /// `BATCH_ROWS` of spark/batches.py (tests make it small).
    pub batch_rows: usize,
    tables_by_bytes: HashMap<Vec<u8>, Rc<MapInfo>>,
    table_maps: HashMap<u64, Rc<MapInfo>>,
}

/// Whether the loop decodes this type itself (else the Python reference does,
/// and describes it).
pub(super) fn decoded_natively(code: u8) -> bool {
    matches!(
        code,
        GTID_LOG_EVENT
            | ANONYMOUS_GTID_LOG_EVENT
            | GTID_EVENT
            | XID_EVENT
            | TABLE_MAP_EVENT
            | TRANSACTION_PAYLOAD_EVENT
            | ANNOTATE_ROWS_EVENT
            | QUERY_EVENT
            | QUERY_COMPRESSED_EVENT
            | EXECUTE_LOAD_QUERY_EVENT
    ) || events::is_rows_event(code)
        || described_here(code)
}

/// The events the events view decodes itself where the changes loop hands
/// them to the reference (see `decodes_whole`).
pub(super) fn described_here(code: u8) -> bool {
    matches!(
        code,
        STOP_EVENT
            | ROTATE_EVENT
            | INTVAR_EVENT
            | RAND_EVENT
            | BINLOG_CHECKPOINT_EVENT
            | ROWS_QUERY_LOG_EVENT
    )
}

/// Whether one of `described_here`'s events decodes natively and whole:
/// if not, the reference decodes it, for its error or warning.
pub(super) fn decodes_whole(raw: &[u8], frame: &Frame, format: &Format) -> bool {
    let mut cur = frame.body(raw);
    let code = frame.type_code;
    let decoded = match code {
        STOP_EVENT => return true, // padding allowed: nothing in it is read
        ROTATE_EVENT => control::decode_rotate(&mut cur, format.post_header_len(code)).is_ok(),
        INTVAR_EVENT => control::decode_intvar(&mut cur).is_ok(),
        RAND_EVENT => control::decode_rand(&mut cur).is_ok(),
        BINLOG_CHECKPOINT_EVENT => control::decode_binlog_checkpoint(&mut cur).is_ok(),
        ROWS_QUERY_LOG_EVENT => control::decode_rows_query(&mut cur).is_ok(),
        _ => false,
    };
    decoded && cur.at_end()
}

impl EventsView {
    pub fn new(file: String, file_seq: i64, batch_rows: usize) -> Self {
        EventsView {
            builder: EventsBuilder::new(),
            file,
            file_seq,
            done: false,
            batch_rows: batch_rows.max(1),
            tables_by_bytes: HashMap::new(),
            table_maps: HashMap::new(),
        }
    }

    /// The row of an event the loop decoded natively, None if its decoder
    /// fails (it failed in the loop too, under `force`: the reference
    /// describes it as it keeps it).
    pub fn describe(
        &mut self,
        raw: &[u8],
        frame: &Frame,
        format: &Format,
        sub: i32,
    ) -> Option<EventRow> {
        let mut info = Vec::with_capacity(128);
        let (database, table, query) = self.describe_into(raw, frame, format, &mut info, true)?;
        // the writers write JSON text only
        let info = String::from_utf8(info).unwrap_or_default();
        Some(described(frame, sub, (database, table, query, info)))
    }

    /// `describe`'s info written into `info`; with `subject`, the row's
    /// database, table and query too (else None: JSON lines need none).
    #[allow(clippy::type_complexity)]
    pub fn describe_into(
        &mut self,
        raw: &[u8],
        frame: &Frame,
        format: &Format,
        info: &mut Vec<u8>,
        subject: bool,
    ) -> Option<(Option<String>, Option<String>, Option<String>)> {
        let code = frame.type_code;
        let checksum = frame.checksum;
        let mut cur = frame.body(raw);
        let (mut database, mut table, mut query) = (None, None, None);
        match code {
            GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => {
                let g = events::decode_gtid(&mut cur).ok()?;
                sink::mysql_gtid_info(info, checksum, &g);
            }
            GTID_EVENT => {
                let g = events::decode_mariadb_gtid(&mut cur).ok()?;
                sink::mariadb_gtid_info(info, checksum, &g);
            }
            XID_EVENT => {
                let xid = events::decode_xid(&mut cur).ok()?;
                sink::xid_info(info, checksum, xid);
            }
            ANNOTATE_ROWS_EVENT => {
                let q = text(cur.rest());
                sink::rows_query_info(info, checksum, &q);
                query = subject.then(|| q.into_owned());
            }
            QUERY_EVENT | QUERY_COMPRESSED_EVENT | EXECUTE_LOAD_QUERY_EVENT => {
                let (q, (vars, unknown)) = decode_query(&mut cur, code, format)?;
                sink::query_info(info, checksum, &q, &vars, unknown);
                // `_event_subject`: `event.database or None`
                if subject {
                    database = Some(text(q.database).into_owned()).filter(|d| !d.is_empty());
                    query = Some(text(&q.query).into_owned());
                }
            }
            STOP_EVENT => sink::ints_info(info, checksum, &[]),
            ROTATE_EVENT => {
                let post = format.post_header_len(code);
                let (position, name) = control::decode_rotate(&mut cur, post).ok()?;
                sink::rotate_info(info, checksum, position, &text(name));
            }
            INTVAR_EVENT => {
                let (kind, value) = control::decode_intvar(&mut cur).ok()?;
                sink::ints_info(info, checksum, &[("kind", kind.into()), ("value", value)]);
            }
            RAND_EVENT => {
                let (seed1, seed2) = control::decode_rand(&mut cur).ok()?;
                sink::ints_info(info, checksum, &[("seed1", seed1), ("seed2", seed2)]);
            }
            BINLOG_CHECKPOINT_EVENT => {
                let name = control::decode_binlog_checkpoint(&mut cur).ok()?;
                sink::binlog_checkpoint_info(info, checksum, &text(name));
            }
            ROWS_QUERY_LOG_EVENT => {
                let q = text(control::decode_rows_query(&mut cur).ok()?);
                sink::rows_query_info(info, checksum, &q);
                query = subject.then(|| q.into_owned());
            }
            TRANSACTION_PAYLOAD_EVENT => {
                let p = events::decode_transaction_payload(&mut cur).ok()?;
                let mut o = JsonObject::info(info, checksum);
                match p.compression_type {
                    PAYLOAD_ZSTD => o.str("compression_type", "ZSTD"),
                    PAYLOAD_NONE => o.str("compression_type", "NONE"),
                    other => o.str("compression_type", &other.to_string()),
                }
                o.int("payload_size", p.payload_size);
                o.int("uncompressed_size", p.uncompressed_size);
                o.end();
            }
            TABLE_MAP_EVENT => {
                let post = format.post_header_len(code);
                let mut head = cur.clone();
                let table_id = if post == 6 {
                    head.u32().map(u64::from).ok()?
                } else {
                    head.u48().ok()?
                };
                let flags = head.u16().ok()?;
                let mariadb = format.is_mariadb();
                let known = self.tables_by_bytes.get(head.clone().rest());
                let map = match known.filter(|map| map.mariadb == mariadb) {
                    Some(map) => map.clone(),
                    None => {
                        let decoded = events::decode_table_map(&mut cur, post, mariadb).ok()?;
                        let map = Rc::new(MapInfo {
                            mariadb,
                            database: text(decoded.database).into_owned(),
                            table: text(decoded.table).into_owned(),
                            fields: sink::table_map_fields(&decoded),
                        });
                        if self.tables_by_bytes.len() > TABLE_CACHE_LIMIT {
                            self.tables_by_bytes.clear();
                        }
                        self.tables_by_bytes
                            .insert(decoded.signature.to_vec(), map.clone());
                        map
                    }
                };
                sink::table_map_info(info, checksum, table_id, flags, &map.fields);
                if subject {
                    database = Some(map.database.clone());
                    table = Some(map.table.clone());
                }
                self.table_maps.insert(table_id, map);
            }
            c if events::is_rows_event(c) => {
                let post = format.post_header_len(code);
                let header =
                    events::decode_rows_header(&mut cur, code, post, frame.large_end.is_some())
                        .ok()?;
                let map = self.table_maps.get(&header.table_id);
                let names = map.map(|m| (m.database.as_str(), m.table.as_str()));
                sink::rows_info(info, checksum, &header, names);
                if subject {
                    database = map.map(|m| m.database.clone());
                    table = map.map(|m| m.table.clone());
                }
            }
            _ => return None,
        }
        Some((database, table, query))
    }
}

/// A QUERY-family event and its status variables, None if either fails to
/// decode (the reference then decodes it, for its error).
pub(super) fn decode_query<'a>(
    cur: &mut Cursor<'a>,
    code: u8,
    format: &Format,
) -> Option<(events::Query<'a>, StatusVarList<'a>)> {
    let q = events::decode_query(cur, code, format.post_header_len(code)).ok()?;
    let mut vars = Cursor::new(q.status_vars, q.status_vars_offset);
    let vars = status_var_list(&mut vars).ok()?;
    Some((q, vars))
}

/// The row of an event from its frame and its description (database,
/// table, query, info): `describe`'s own, or the Python reference's (`check.last`).
pub(super) fn described(frame: &Frame, sub: i32, last: Described) -> EventRow {
    let (database, table, query, info) = last;
    EventRow {
        pos: frame.pos,
        sub,
        timestamp: frame.timestamp,
        type_code: frame.type_code,
        server_id: frame.server_id,
        length: frame.length,
        log_pos: frame.log_pos,
        flags: frame.flags,
        database,
        table,
        query,
        info,
    }
}

/// `_EventChecker.last`: (database, table, query, info) of the last event it decoded.
pub(super) type Described = (Option<String>, Option<String>, Option<String>, String);
