//! The changes view of one byte range, read natively: `ChangesReader`.
//!
//! Strategy: the loop of `binlake.spark.read.batches._python_change_batches`
//! without a Python object per event. The framer (`framing.rs`) cuts the
//! events; the decoders of `events/` read the ones the loop needs (GTIDs,
//! XID, TABLE_MAP, rows event headers, TRANSACTION_PAYLOAD); `transaction.rs`
//! groups them into transactions as `spark/ranges.py transactions()` does.
//!
//! Complete transactions are handed, a few MB of rows data at a time (a
//! job), to worker threads, which decode their rows into `ChangesBuilder`s in
//! blocks of at most BATCH_ROWS rows of one event, and send back segments
//! (finished Arrow batches with their block sizes) as they fill. The reading
//! thread takes the segments in job order and cuts them where the reference
//! cuts its batches (after any block that brings a batch to BATCH_ROWS), so
//! batches and their boundaries are those of the reference path; only a
//! batch made of two segments is copied (arrow-select `concat_batches`).
//! Errors keep their order: a job's failure comes after its rows before it,
//! a read error after every job before it.
//!
//! Python is called only where the reference decides something this module
//! must not decide twice:
//! * `check(...)`: every event type not decoded here (QUERY and its status
//!   variables, FDE, ROTATE, LOAD, ...) goes through the Python decoder, for
//!   its errors and, under `force`, to learn that it failed (a few per file;
//!   MySQL's BEGIN makes it one per transaction there);
//! * `wanted(db, table)`: the `tables` filter (once per table);
//! * with `follow_schema`, `check(...)` also reads table maps: the reader's
//!   schema history follows the DDL of the QUERY events it checks and
//!   completes table maps (names, UNSIGNED, charsets, ENUM/SET members, hires
//!   precision) once per distinct map and DDL statement;
//! * `still_written()`: whether a transaction cut off at the end of the range
//!   is one the server is still writing (at most once per range);
//! * JSON texts and charsets without a native decoder (`PyHelper`).
//!
//! Errors follow `read_split`: an error at or past `end` ends the range
//! quietly (it belongs to the next one), a partial last event of a file
//! still being written ends it quietly when reading to the end of the file;
//! anything else is raised after every batch made before it.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{mpsc, Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_select::concat::concat_batches;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyModule, PyString};

use super::arrow::{ArrowBatch, Helpers, PyHelper};

use super::errors::raise;
use super::events::{decoded_natively, described, Described, EventsView};
use super::reader::{open_source, PyErrSlot};
use crate::constants::*;
use crate::error::{Error, ErrorKind};
use crate::events::{self, decode_table_map, expect_end, in_event, text, QueryKind};
use crate::framing::{Frame, Framer, Options, LARGE_EVENT_BYTES};
use crate::layout::{Column, Layout};
use crate::rowimage::{Operation, Plan, PlanCache, RowsData, ValueResult};
use crate::sink::arrow::{
    changes_schema, AppendError, ChangesBuilder, EventFields, RowKeys, TextCodec, TextHelper,
};
use crate::sink::events::EventRow;
use crate::source::Source;
use crate::transaction::{is_query, StepDetails, TransactionState};

pub(super) mod json_lines;
pub(super) mod listing;

/// Rows per batch (`BATCH_ROWS` in spark/batches.py).
const BATCH_ROWS: usize = 8192;
/// The window a huge event's row images are read through (`LazyRowData.WINDOW`).
const LAZY_WINDOW: u64 = 8 << 20;
/// Row images at least this big are moved out of the framer, not copied
/// (smaller ones are cheaper to copy than the framer's buffer is to regrow).
const TAKE_BYTES: usize = 16 << 10;
/// Table maps kept by their bytes (reader.py `DecodeContext.shared_cache`'s bound).
const TABLE_CACHE_LIMIT: usize = 4096;

/// A table map as the changes view uses it, shared by every equal map.
pub(super) struct TableEntry {
    /// The table map's body after its post-header, and whether a MariaDB
    /// server wrote it (equal bytes from servers of one flavour, equal entry).
    signature: Vec<u8>,
    mariadb: bool,
    /// `TableMapEvent.qualified_name`, for errors.
    pub(super) qualified: String,
    pub(super) width: u64,
    pub(super) layout: Layout,
    /// Plans and map keys by the event's bitmaps (built once, shared by every row).
    views: Mutex<Views>,
    codecs: Vec<TextCodec>,
    pub(super) codec_names: Vec<Option<Py<PyString>>>,
    wanted: bool,
    /// The table map's database and table names.
    names: (String, String),
    /// Each column's key as JSON, for `dump --format json`'s rows.
    json_keys: Vec<Vec<u8>>,
    /// The fields of its JSON line after table_id and flags, as the
    /// reference completed the map (JSON lines only).
    json_fields: Option<Vec<u8>>,
}

/// A rows event's plans and map keys.
pub(super) struct View {
    pub(super) before: Arc<Plan>,
    pub(super) after: Arc<Plan>,
    keys: RowKeys,
}

impl TableEntry {
    /// The plans and map keys of a rows event of this map (from any thread).
    pub(super) fn view(&self, item: &RowsItem) -> Arc<View> {
        let pre_ga = events::rows::is_pre_ga(item.type_code);
        let mut views = self
            .views
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        views.get(&self.layout, &item.before, item.after.as_deref(), pre_ga)
    }
}

/// (before bitmap, after bitmap, pre_ga).
type ViewKey = (Vec<u8>, Option<Vec<u8>>, bool);

/// Views by (before bitmap, after bitmap, pre_ga); the last one is checked
/// first, without hashing: events of a statement share their bitmaps.
#[derive(Default)]
struct Views {
    plans: PlanCache,
    last: Option<(ViewKey, Arc<View>)>,
    by_bitmaps: HashMap<ViewKey, Arc<View>>,
}

impl Views {
    fn get(
        &mut self,
        layout: &Layout,
        before: &[u8],
        after: Option<&[u8]>,
        pre_ga: bool,
    ) -> Arc<View> {
        if let Some(((b, a, p), view)) = &self.last {
            if b == before && a.as_deref() == after && *p == pre_ga {
                return view.clone();
            }
        }
        let key = (before.to_vec(), after.map(<[u8]>::to_vec), pre_ga);
        let view = match self.by_bitmaps.get(&key) {
            Some(view) => view.clone(),
            None => {
                let b = self.plans.get(layout, before, pre_ga);
                let a = match after {
                    Some(bitmap) => self.plans.get(layout, bitmap, false),
                    None => b.clone(),
                };
                let keys = RowKeys::of(layout, &b, &a);
                let view = Arc::new(View {
                    before: b,
                    after: a,
                    keys,
                });
                if self.by_bitmaps.len() > 256 {
                    self.by_bitmaps.clear(); // bounded: MINIMAL images vary per statement
                }
                self.by_bitmaps.insert(key.clone(), view.clone());
                view
            }
        };
        self.last = Some((key, view.clone()));
        view
    }
}

/// The row images of a rows event: held, or (huge events) left in the file
/// from `rows_offset` to `end`.
pub(super) enum RowsBytes {
    /// The bytes and where the row images start in them.
    Held(Vec<u8>, usize),
    InFile {
        end: u64,
    },
}

impl RowsItem {
    pub(super) fn held_bytes(&self) -> usize {
        match &self.data {
            RowsBytes::Held(data, start) => data.len().saturating_sub(*start),
            RowsBytes::InFile { .. } => 0,
        }
    }
}

/// A wanted rows event of the transaction being read.
pub(super) struct RowsItem {
    pub(super) pos: u64,
    /// The event's length (`EventHeader.next_pos` is `pos` + this).
    pub(super) length: u32,
    sub: i32,
    pub(super) timestamp: u32,
    pub(super) server_id: u32,
    pub(super) type_code: u8,
    pub(super) table_id: u64,
    pub(super) table: Option<Arc<TableEntry>>,
    pub(super) width: u64,
    pub(super) before: Vec<u8>,
    pub(super) after: Option<Vec<u8>>,
    pub(super) rows_offset: u64,
    pub(super) data: RowsBytes,
}

/// The events from one boundary to the next (only what the view needs of them).
#[derive(Default)]
pub(super) struct Transaction {
    events: usize,
    pub(super) rows: Vec<RowsItem>,
    pub(super) gtid: Option<String>,
    pub(super) xid: Option<u64>,
    /// The last event's header timestamp and where the next top-level event starts.
    pub(super) last: (u32, u64),
    /// Set when an event closed it.
    pub(super) commit: Option<(u32, u64)>,
    cut_off: bool,
    /// Its events, for the events view.
    event_rows: Vec<EventRow>,
}

/// What the loop learnt from one event.
enum Decoded {
    /// No fact for the grouping (an event decoded elsewhere, or one that failed under `force`).
    Nothing,
    Gtid(Option<String>),
    MariadbGtid(String, bool),
    Xid(u64),
    Query(QueryKind),
    Rows(bool, Option<RowsItem>),
}

/// How reading stopped.
pub(super) enum Stop {
    /// The range ends here without an error.
    Quiet,
    Raise(PyErr),
}

impl From<PyErr> for Stop {
    fn from(e: PyErr) -> Self {
        Stop::Raise(e)
    }
}

#[pyclass(module = "binlake._native", unsendable)]
pub struct ChangesReader {
    framer: Framer<Box<dyn Source + Send>>,
    pub(super) path: Arc<str>,
    start: u64,
    end: Option<u64>,
    force: bool,
    stream_error: PyErrSlot,
    check: Py<PyAny>,
    wanted: Option<Py<PyAny>>,
    follow_schema: bool,
    still_written: Py<PyAny>,
    binlog_error: Py<PyAny>,
    partial_event: Py<PyAny>,
    /// Collation id -> Python codec (`charsets.codec_for`, binary ones absent).
    codecs: HashMap<u64, String>,
    tables_by_bytes: HashMap<Vec<u8>, Arc<TableEntry>>,
    last_table: Option<Arc<TableEntry>>,
    table_maps: HashMap<u64, Arc<TableEntry>>,
    /// `wanted("", "")`: rows events without a table map.
    wanted_unmapped: Option<bool>,
    state: TransactionState,
    current: Transaction,
    last_pos: Option<u64>,
    sub: i32,
    end_pos: u64,
    ready: VecDeque<RecordBatch>,
    failed: Option<PyErr>,
    finished: bool,
    /// How reading ended (Some(None): cleanly), once it has.
    read_end: Option<Option<PyErr>>,
    pool: Pool,
    dispatched: usize,
    received: usize,
    /// Rows decoded but not yet in a batch, and their count.
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    /// Rows data per job (tests make it tiny: every transaction a job).
    job_bytes: usize,
    /// Set: the loop feeds the events view instead (`EventsReader`).
    events: Option<EventsView>,
    /// A partial last event when reading to the end of a file ends it
    /// quietly (a range: the server may still be writing it); else it is
    /// raised, as the reader raises it (`binlake.changes`).
    partial_is_quiet: bool,
}

impl ChangesReader {
    /// How a core error ends the range (`read_split`'s rules).
    fn stop(&self, py: Python<'_>, error: Error) -> Stop {
        if error.kind == ErrorKind::PartialEvent {
            if self.end.is_none() && self.partial_is_quiet {
                return Stop::Quiet;
            }
        } else if self.end.is_some_and(|end| error.offset >= end) {
            return Stop::Quiet;
        }
        if error.kind == ErrorKind::Io {
            if let Some(e) = self.stream_error.lock().ok().and_then(|mut s| s.take()) {
                return self.stop_py(py, e);
            }
        }
        Stop::Raise(raise(py, &self.path, error))
    }

    /// The same rules for an exception of a Python helper.
    fn stop_py(&self, py: Python<'_>, error: PyErr) -> Stop {
        let value = error.value(py);
        if value
            .is_instance(self.partial_event.bind(py))
            .unwrap_or(false)
        {
            if self.end.is_none() && self.partial_is_quiet {
                return Stop::Quiet;
            }
        } else if value
            .is_instance(self.binlog_error.bind(py))
            .unwrap_or(false)
        {
            let offset: Option<u64> = value.getattr("offset").and_then(|o| o.extract()).ok();
            if let (Some(end), Some(offset)) = (self.end, offset) {
                if offset >= end {
                    return Stop::Quiet;
                }
            }
        }
        Stop::Raise(error)
    }

    /// A decoder's failure: an error, or under `force` an event kept undecoded.
    fn failed_decode(&self, py: Python<'_>, error: Error, frame: &Frame) -> Result<Decoded, Stop> {
        if self.force {
            return Ok(Decoded::Nothing);
        }
        Err(self.stop(py, in_event(error, frame.type_code, frame.pos)))
    }

    /// A small event decoded by `decode` from its body, which must then be
    /// read whole (`check_end`); a failure goes to `failed_decode`.
    fn decode_whole(
        &self,
        py: Python<'_>,
        frame: &Frame,
        decode: impl FnOnce(&mut crate::cursor::Cursor) -> Result<Decoded, Error>,
    ) -> Result<Decoded, Stop> {
        let mut cur = frame.body(self.framer.raw());
        match decode(&mut cur) {
            Ok(decoded) => {
                self.check_end(py, &cur, frame.type_code)?;
                Ok(decoded)
            }
            Err(e) => self.failed_decode(py, e, frame),
        }
    }

    /// reader.py's check that the body was read whole (a warning under `force`).
    fn check_end(&self, py: Python<'_>, cur: &crate::cursor::Cursor, code: u8) -> Result<(), Stop> {
        match expect_end(cur, code) {
            Err(e) if !self.force => Err(self.stop(py, e)),
            _ => Ok(()),
        }
    }

    fn post_header_len(&self, code: u8) -> usize {
        self.framer.format().post_header_len(code)
    }

    fn decode(&mut self, py: Python<'_>, frame: &Frame, keep: bool) -> Result<Decoded, Stop> {
        let code = frame.type_code;
        match code {
            GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => self.decode_whole(py, frame, |cur| {
                events::decode_gtid(cur).map(|g| Decoded::Gtid(g.gtid(code)))
            }),
            GTID_EVENT => self.decode_whole(py, frame, |cur| {
                events::decode_mariadb_gtid(cur)
                    .map(|g| Decoded::MariadbGtid(g.gtid(frame.server_id), g.standalone()))
            }),
            XID_EVENT => {
                self.decode_whole(py, frame, |cur| events::decode_xid(cur).map(Decoded::Xid))
            }
            TABLE_MAP_EVENT => self.table_map(py, frame),
            TRANSACTION_PAYLOAD_EVENT => {
                let raw = self.framer.raw();
                let mut cur = frame.body(raw);
                match events::decode_transaction_payload(&mut cur) {
                    Ok(_) => {
                        self.check_end(py, &cur, code)?;
                        Ok(Decoded::Nothing)
                    }
                    Err(e) => self.failed_decode(py, e, frame),
                }
            }
            // its text is all it has: it cannot fail
            ANNOTATE_ROWS_EVENT => Ok(Decoded::Nothing),
            c if events::is_rows_event(c) => self.rows_event(py, frame, keep),
            c if super::events::described_here(c) && self.events.is_some() => {
                // the events view decodes these itself when they decode whole
                if super::events::decodes_whole(self.framer.raw(), frame, self.framer.format()) {
                    Ok(Decoded::Nothing)
                } else {
                    self.other(py, frame)
                }
            }
            c if is_query(c) && self.events.is_some() => {
                // decoded whole here (status variables too), else by the reference for its error
                let raw = self.framer.raw();
                let mut cur = frame.body(raw);
                match super::events::decode_query(&mut cur, c, self.framer.format()) {
                    Some((q, _)) => Ok(Decoded::Query(events::classify_query(&q.query))),
                    None => self.other(py, frame),
                }
            }
            _ => self.other(py, frame),
        }
    }

    fn table_map(&mut self, py: Python<'_>, frame: &Frame) -> Result<Decoded, Stop> {
        let post = self.post_header_len(TABLE_MAP_EVENT);
        let mariadb = self.framer.format().is_mariadb();
        let raw = self.framer.raw();
        let mut cur = frame.body(raw);
        // table id and flags first; the rest is the cache key
        let mut head = cur.clone();
        let id = if post == 6 {
            head.u32().map(u64::from)
        } else {
            head.u48()
        };
        let (Ok(table_id), Ok(_)) = (id, head.u16()) else {
            let e = decode_table_map(&mut cur, post, mariadb).err();
            return match e {
                Some(e) => self.failed_decode(py, e, frame),
                None => Ok(Decoded::Nothing),
            };
        };
        let signature = head.clone().rest();
        // servers log the same map in every transaction: try the last one before hashing
        let known = match &self.last_table {
            Some(entry) if entry.signature == signature => Some(entry.clone()),
            _ => self.tables_by_bytes.get(signature).cloned(),
        }
        .filter(|entry| entry.mariadb == mariadb);
        if let Some(entry) = known {
            if self
                .table_maps
                .get(&table_id)
                .is_none_or(|e| !Arc::ptr_eq(e, &entry))
            {
                self.table_maps.insert(table_id, entry.clone());
            }
            self.last_table = Some(entry);
            return Ok(Decoded::Nothing);
        }
        let map = match decode_table_map(&mut cur, post, mariadb) {
            Ok(map) => map,
            Err(e) => return self.failed_decode(py, e, frame),
        };
        self.check_end(py, &cur, TABLE_MAP_EVENT)?;
        let map = self.completed(py, frame, map)?;
        let mut entry = self.table_entry(py, &map, mariadb)?;
        if self.events.is_some() && self.follow_schema {
            entry.json_fields = completed_fields(py, &self.check)?;
        }
        let entry = Arc::new(entry);
        if self.tables_by_bytes.len() > TABLE_CACHE_LIMIT {
            self.tables_by_bytes.clear(); // bounded: schema churn must not grow it
        }
        self.tables_by_bytes
            .insert(map.signature.to_vec(), entry.clone());
        self.table_maps.insert(table_id, entry.clone());
        self.last_table = Some(entry);
        Ok(Decoded::Nothing)
    }

    /// The table map as the reference's schema history completes it
    /// (`Schema.annotate`): names, UNSIGNED, meta, charsets and ENUM/SET members.
    fn completed<'m>(
        &self,
        py: Python<'_>,
        frame: &Frame,
        mut map: events::TableMap<'m>,
    ) -> Result<events::TableMap<'m>, Stop> {
        if !self.follow_schema {
            return Ok(map);
        }
        let event = self.call_check(py, frame)?;
        if event.is_none(py) {
            return Ok(map);
        }
        type Facts = (
            Option<String>,
            bool,
            u16,
            Option<u64>,
            Option<Vec<String>>,
            Option<Vec<String>>,
        );
        let facts = || -> PyResult<Vec<Facts>> {
            let columns = event.getattr(py, "columns")?;
            let mut out = Vec::with_capacity(map.columns.len());
            for column in columns.bind(py).try_iter()? {
                let column = column?;
                out.push((
                    column.getattr("name")?.extract()?,
                    column.getattr("unsigned")?.extract()?,
                    column.getattr("meta")?.extract()?,
                    column.getattr("charset")?.extract()?,
                    column.getattr("enum_values")?.extract()?,
                    column.getattr("set_values")?.extract()?,
                ));
            }
            Ok(out)
        };
        let facts = facts().map_err(|e| self.stop_py(py, e))?;
        for (column, facts) in map.columns.iter_mut().zip(facts) {
            let (name, unsigned, meta, charset, enum_values, set_values) = facts;
            column.name = name;
            column.unsigned = unsigned;
            column.meta = meta;
            column.charset = charset;
            column.enum_values = enum_values;
            column.set_values = set_values;
        }
        Ok(map)
    }

    /// What the reference derives from a table map for the view: the `tables`
    /// filter's answer, the layout (`rows.native_columns`) and each column's codec.
    fn table_entry(
        &self,
        py: Python<'_>,
        map: &events::TableMap,
        mariadb: bool,
    ) -> PyResult<TableEntry> {
        let database = text(map.database).into_owned();
        let table = text(map.table).into_owned();
        let wanted = match &self.wanted {
            Some(f) => f.call1(py, (&database, &table))?.is_truthy(py)?,
            None => true,
        };
        // `rows.native_columns`: no codec for GEOMETRY, else `codec_for(charset)`
        let codec_names: Vec<Option<&String>> = map
            .columns
            .iter()
            .map(|c| match (c.type_code, c.charset) {
                (MYSQL_TYPE_GEOMETRY, _) | (_, None) => None,
                (_, Some(id)) => self.codecs.get(&id),
            })
            .collect();
        let layout = map.layout(None);
        Ok(TableEntry {
            signature: map.signature.to_vec(),
            mariadb,
            qualified: format!("{database}.{table}"),
            width: map.columns.len() as u64,
            json_keys: crate::sink::json::column_keys(&layout),
            layout,
            views: Mutex::new(Views::default()),
            codecs: codec_names
                .iter()
                .map(|c| TextCodec::of(c.map(String::as_str)))
                .collect(),
            codec_names: codec_names
                .iter()
                .map(|c| c.map(|name| PyString::intern(py, name).unbind()))
                .collect(),
            wanted,
            names: (database, table),
            json_fields: None,
        })
    }

    fn rows_event(&mut self, py: Python<'_>, frame: &Frame, keep: bool) -> Result<Decoded, Stop> {
        let code = frame.type_code;
        let post = self.post_header_len(code);
        let raw = self.framer.raw();
        let mut cur = frame.body(raw);
        let header =
            match events::decode_rows_header(&mut cur, code, post, frame.large_end.is_some()) {
                Ok(h) => h,
                Err(e) => return self.failed_decode(py, e, frame),
            };
        let stmt_end = header.stmt_end();
        if !keep {
            return Ok(Decoded::Rows(stmt_end, None));
        }
        let table = self.table_maps.get(&header.table_id).cloned();
        let wanted = match &table {
            Some(t) => t.wanted,
            None => match self.wanted_unmapped {
                Some(w) => w,
                None => {
                    let w = match &self.wanted {
                        Some(f) => f.call1(py, ("", ""))?.is_truthy(py)?,
                        None => true,
                    };
                    self.wanted_unmapped = Some(w);
                    w
                }
            },
        };
        if !wanted {
            return Ok(Decoded::Rows(stmt_end, None));
        }
        let before = header.present.to_vec();
        let after = header.present_after.map(<[u8]>::to_vec);
        let (table_id, width, rows_offset) = (header.table_id, header.width, header.rows_offset);
        let data = match (frame.large_end, header.data) {
            (Some(end), _) => RowsBytes::InFile { end },
            (None, Cow::Owned(data)) => RowsBytes::Held(data, 0), // uncompressed
            (None, Cow::Borrowed(data)) if data.len() < TAKE_BYTES => {
                RowsBytes::Held(data.to_vec(), 0)
            }
            (None, Cow::Borrowed(_)) => {
                // a big event's own bytes, moved rather than copied: the row
                // images start at their file offset
                let start = (rows_offset - frame.pos) as usize;
                RowsBytes::Held(self.framer.take_raw(), start)
            }
        };
        let item = RowsItem {
            pos: frame.pos,
            length: frame.length,
            sub: self.sub,
            timestamp: frame.timestamp,
            server_id: frame.server_id,
            type_code: code,
            table_id,
            table,
            width,
            before,
            after,
            rows_offset,
            data,
        };
        Ok(Decoded::Rows(stmt_end, Some(item)))
    }

    /// An event decoded by the Python reference: its errors, and whether it decoded.
    fn other(&mut self, py: Python<'_>, frame: &Frame) -> Result<Decoded, Stop> {
        let event = self.call_check(py, frame)?;
        if event.is_none(py) {
            return Ok(Decoded::Nothing); // undecodable, kept under `force`
        }
        let code = frame.type_code;
        if code == GTID_TAGGED_LOG_EVENT {
            let gtid: Option<String> = event.getattr(py, "gtid")?.extract(py)?;
            return Ok(Decoded::Gtid(gtid));
        }
        if is_query(code) {
            let raw = self.framer.raw();
            let mut cur = frame.body(raw);
            let post = self.post_header_len(code);
            return match events::decode_query(&mut cur, code, post) {
                Ok(q) => {
                    let kind = events::classify_query(&q.query);
                    if self.follow_schema && kind == QueryKind::Other {
                        // DDL may have changed what the next table maps complete to
                        self.tables_by_bytes.clear();
                        self.last_table = None;
                    }
                    Ok(Decoded::Query(kind))
                }
                Err(e) => Err(self.stop(py, in_event(e, code, frame.pos))),
            };
        }
        Ok(Decoded::Nothing)
    }

    /// The Python reference's decoding of an event: the event, or None.
    fn call_check(&self, py: Python<'_>, frame: &Frame) -> Result<Py<PyAny>, Stop> {
        let raw = PyBytes::new(py, self.framer.raw());
        let alg = if frame.fde {
            self.framer.pending_alg()
        } else {
            None
        };
        let args = (
            frame.type_code,
            frame.pos,
            frame.timestamp,
            frame.server_id,
            frame.length,
            frame.log_pos,
            frame.flags,
            frame.checksum,
            frame.header_len,
            raw,
            alg,
            self.framer.binlog_version,
        );
        self.check.call1(py, args).map_err(|e| self.stop_py(py, e))
    }

    /// The events view's row of an event (decoded by the loop just before).
    fn event_row(&mut self, py: Python<'_>, frame: &Frame) -> Result<EventRow, Stop> {
        if decoded_natively(frame.type_code) {
            if let Some(view) = self.events.as_mut() {
                let (raw, format) = (self.framer.raw(), self.framer.format());
                if let Some(row) = view.describe(raw, frame, format, self.sub) {
                    return Ok(row);
                }
            }
            // it failed to decode under `force`: the reference describes what it kept
            self.call_check(py, frame)?;
        }
        let last: Described = self.check.getattr(py, "last")?.extract(py)?;
        Ok(described(frame, self.sub, last))
    }

    /// The next transaction of the range (None: no more events).
    pub(super) fn next_transaction(&mut self, py: Python<'_>) -> Result<Option<Transaction>, Stop> {
        loop {
            let frame = match self.framer.next() {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(self.end_of_events()),
                Err(e) => {
                    return match self.stop(py, e) {
                        Stop::Quiet => Ok(self.end_of_events()),
                        raise => Err(raise),
                    }
                }
            };
            let in_range = frame.pos >= self.start;
            if in_range && self.end.is_some_and(|end| frame.pos >= end) {
                return Ok(self.end_of_events());
            }
            if in_range {
                if self.last_pos == Some(frame.pos) {
                    self.sub += 1;
                } else {
                    (self.last_pos, self.sub, self.end_pos) =
                        (Some(frame.pos), 0, frame.next_pos());
                }
            }
            let keep = in_range && self.events.is_none();
            let decoded = match self.decode(py, &frame, keep) {
                Ok(d) => d,
                Err(Stop::Quiet) => return Ok(self.end_of_events()),
                Err(raise) => return Err(raise),
            };
            if !in_range {
                continue; // the format description read before jumping to `start`
            }
            let row = match self.events {
                Some(_) => match self.event_row(py, &frame) {
                    Ok(row) => Some(row),
                    Err(Stop::Quiet) => return Ok(self.end_of_events()),
                    Err(raise) => return Err(raise),
                },
                None => None,
            };
            if let Some(done) = self.group(&frame, decoded, row) {
                return Ok(Some(done));
            }
        }
    }

    /// `transactions()` for one event: a transaction that ends here, or one
    /// that never ended because this event starts another.
    fn group(
        &mut self,
        frame: &Frame,
        decoded: Decoded,
        row: Option<EventRow>,
    ) -> Option<Transaction> {
        let code = frame.type_code;
        let mut details = StepDetails::default();
        match &decoded {
            Decoded::Query(kind) => details.query_kind = Some(*kind),
            Decoded::Rows(stmt_end, _) => details.stmt_end = *stmt_end,
            Decoded::MariadbGtid(_, standalone) => details.standalone = *standalone,
            _ => {}
        }
        let mut finished = None;
        if self.current.events > 0 && self.state.starts(code, details.query_kind) {
            finished = Some(std::mem::take(&mut self.current));
        }
        let txn = &mut self.current;
        txn.events += 1;
        txn.last = (frame.timestamp, self.end_pos);
        txn.event_rows.extend(row);
        match decoded {
            Decoded::Gtid(gtid) => txn.gtid = gtid,
            Decoded::MariadbGtid(gtid, _) => txn.gtid = Some(gtid),
            Decoded::Xid(xid) => txn.xid = Some(xid),
            Decoded::Rows(_, Some(item)) => txn.rows.push(item),
            _ => {}
        }
        if code != TRANSACTION_PAYLOAD_EVENT {
            // its inner events follow and say more
            self.state.step(code, details);
        }
        if !self.state.open {
            let mut txn = std::mem::take(&mut self.current);
            txn.commit = Some(txn.last);
            debug_assert!(
                finished.is_none(),
                "an event that starts a transaction leaves it open"
            );
            return Some(txn);
        }
        finished
    }

    pub(super) fn end_of_events(&mut self) -> Option<Transaction> {
        if self.current.events == 0 {
            return None;
        }
        let mut txn = std::mem::take(&mut self.current);
        txn.cut_off = true;
        Some(txn)
    }

    /// Read transactions until a job's worth of rows data, and hand it to a worker.
    fn dispatch(&mut self, py: Python<'_>) {
        let mut job = Vec::new();
        let mut bytes = 0usize;
        while bytes < self.job_bytes && self.read_end.is_none() {
            match self.next_transaction(py) {
                Ok(Some(txn)) => {
                    // a transaction the server is still writing: a later read takes it whole
                    if txn.cut_off {
                        match self.still_written.call0(py).and_then(|w| w.is_truthy(py)) {
                            Ok(true) => {
                                self.read_end = Some(None);
                                break;
                            }
                            Ok(false) => {}
                            Err(e) => {
                                self.read_end = Some(Some(e));
                                break;
                            }
                        }
                    }
                    bytes += txn.rows.iter().map(RowsItem::held_bytes).sum::<usize>() + 64;
                    job.push(txn);
                }
                Ok(None) | Err(Stop::Quiet) => self.read_end = Some(None),
                Err(Stop::Raise(e)) => self.read_end = Some(Some(e)),
            }
        }
        if !job.is_empty() {
            self.pool.submit(self.dispatched, job);
            self.dispatched += 1;
        }
    }

    /// A worker's rows into batches cut where the sequential loop cuts
    /// them: after any block of rows that brings the batch to BATCH_ROWS.
    fn recut(&mut self, segment: Segment) -> Option<PyErr> {
        let mut start = 0;
        let mut end = 0;
        for n in segment.blocks {
            end += n;
            self.pending_rows += n;
            if self.pending_rows >= BATCH_ROWS {
                self.pending.push(segment.batch.slice(start, end - start));
                match self.take_pending() {
                    Ok(batch) => self.ready.push_back(batch),
                    Err(e) => return Some(e),
                }
                start = end;
            }
        }
        if end > start {
            self.pending.push(segment.batch.slice(start, end - start));
        }
        None
    }

    /// The rows waiting for the next cut, as one batch (copied only when
    /// they come from two workers' outputs).
    fn take_pending(&mut self) -> PyResult<RecordBatch> {
        self.pending_rows = 0;
        let pieces = std::mem::take(&mut self.pending);
        if pieces.len() == 1 {
            return Ok(pieces.into_iter().next().expect("one piece"));
        }
        concat_batches(&changes_schema(), &pieces)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }
}

#[pymethods]
impl ChangesReader {
    /// One range of `path` (`Split`): events at offsets [start, end).
    /// `stream`: a binary file object to read instead (a gzip file).
    /// `check(type_code, pos, timestamp, server_id, length, log_pos, flags,
    /// checksum, header_len, raw, pending_alg, binlog_version)`: decode an event with the
    /// Python reference, returning it, or None if it failed under `force`.
    /// `wanted(db, table)`: the `tables` filter (None: every table).
    /// `follow_schema`: `check` has a schema history; it is given the table maps too.
    /// `codecs`: collation id -> Python codec. `still_written()`: the file's IN_USE flag now.
    /// `large_event_bytes`, `lazy_window`: reader.py's and `LazyRowData`'s (for tests);
    /// `job_bytes`: rows data per worker job.
    #[new]
    #[pyo3(signature = (path, file, file_seq, start, end, stream, verify_checksums, force,
                        check, wanted, follow_schema, codecs, still_written,
                        large_event_bytes=LARGE_EVENT_BYTES, lazy_window=LAZY_WINDOW,
                        job_bytes=JOB_BYTES))]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        py: Python<'_>,
        path: String,
        file: String,
        file_seq: i64,
        start: u64,
        end: Option<u64>,
        stream: Option<Py<PyAny>>,
        verify_checksums: bool,
        force: bool,
        check: Py<PyAny>,
        wanted: Option<Py<PyAny>>,
        follow_schema: bool,
        codecs: HashMap<u64, String>,
        still_written: Py<PyAny>,
        large_event_bytes: u64,
        lazy_window: u64,
        job_bytes: usize,
    ) -> PyResult<Self> {
        // A gzip stream cannot seek: its events before `start` are read and skipped.
        let start_position = (start > 4 && stream.is_none()).then_some(start);
        let (source, stream_error) = open_source(&path, stream)?;
        let opts = Options {
            verify_checksums,
            force,
            start_position,
            unpack_payloads: true,
            large_event_bytes,
            pending_alg: None,
        };
        let errors = py.import("binlake.errors")?;
        let path: Arc<str> = path.into();
        let file: Arc<str> = file.into();
        let pool = Pool::new(Arc::new(Shared {
            path: path.clone(),
            file,
            file_seq,
            helpers: Helpers::load(py)?,
            lazy_window: lazy_window.max(1),
        }));
        Ok(ChangesReader {
            framer: Framer::new(source, opts),
            path,
            start,
            end,
            force,
            stream_error,
            check,
            wanted,
            follow_schema,
            still_written,
            binlog_error: errors.getattr("BinlogError")?.unbind(),
            partial_event: errors.getattr("PartialEvent")?.unbind(),
            codecs,
            tables_by_bytes: HashMap::new(),
            last_table: None,
            table_maps: HashMap::new(),
            wanted_unmapped: None,
            state: TransactionState::default(),
            current: Transaction::default(),
            last_pos: None,
            sub: 0,
            end_pos: 0,
            ready: VecDeque::new(),
            failed: None,
            finished: false,
            read_end: None,
            pool,
            dispatched: 0,
            received: 0,
            pending: Vec::new(),
            pending_rows: 0,
            job_bytes,
            events: None,
            partial_is_quiet: true,
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch (`pyarrow.record_batch(it)`), None at the end.
    pub(super) fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<ArrowBatch>> {
        if self.events.is_some() {
            return self.next_events_batch(py);
        }
        loop {
            if let Some(batch) = self.ready.pop_front() {
                return Ok(Some(ArrowBatch::new(batch)));
            }
            if let Some(error) = self.failed.take() {
                self.finished = true;
                self.pool.stop();
                return Err(error);
            }
            if self.finished {
                return Ok(None);
            }
            // the next output in order, if a worker has it
            match self.pool.take(self.received) {
                Some(Piece::Rows(segment)) => {
                    self.failed = self.recut(segment);
                    continue;
                }
                Some(Piece::Done(failure)) => {
                    self.received += 1;
                    self.failed = failure.map(|f| f.into_pyerr(&self.path));
                    continue;
                }
                None => {}
            }
            let in_flight = self.dispatched - self.received;
            if self.read_end.is_none() && in_flight < self.pool.workers + 1 {
                self.dispatch(py);
                continue;
            }
            if in_flight > 0 {
                let (pool, wanted) = (&mut self.pool, self.received);
                py.detach(|| pool.wait_for(wanted));
                continue;
            }
            // every job done: the read's own end
            match self.read_end.take() {
                Some(Some(error)) => self.failed = Some(error),
                _ => {
                    self.finished = true;
                    if self.pending_rows > 0 {
                        return Ok(Some(ArrowBatch::new(self.take_pending()?)));
                    }
                }
            }
        }
    }
}

impl ChangesReader {
    /// The same loop read for Python values (`ChangeValues`): a partial last
    /// event is raised, as the reader raises it.
    pub(super) fn raising_partial_events(mut self) -> Self {
        self.partial_is_quiet = false;
        self
    }

    /// The loop over one whole file, as the events view reads it (the
    /// views of `binlake dump --format json` and `binlake events`).
    /// `follow_schema`: as `new`'s.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn whole_file(
        py: Python<'_>,
        path: String,
        name: &str,
        check: Py<PyAny>,
        verify_checksums: bool,
        follow_schema: bool,
        codecs: HashMap<u64, String>,
        large_event_bytes: u64,
    ) -> PyResult<Self> {
        let reader = ChangesReader::new(
            py,
            path,
            name.to_string(),
            0,
            4,
            None,
            None,
            verify_checksums,
            false,
            check,
            None,
            follow_schema,
            codecs,
            py.None(),
            large_event_bytes,
            1,
            1,
        )?;
        Ok(reader.into_events_view(EventsView::new(name.to_string(), 0, 1)))
    }

    /// The same loop feeding the events view (`EventsReader`).
    pub(super) fn into_events_view(mut self, view: EventsView) -> Self {
        self.events = Some(view);
        self
    }

    /// The events view's next batch: `event_batches`' loop, on this thread
    /// (there are no rows to decode), cut after the transaction that
    /// brings a batch to its BATCH_ROWS.
    fn next_events_batch(&mut self, py: Python<'_>) -> PyResult<Option<ArrowBatch>> {
        loop {
            if let Some(batch) = self.ready.pop_front() {
                return Ok(Some(ArrowBatch::new(batch)));
            }
            if let Some(error) = self.failed.take() {
                self.finished = true;
                return Err(error);
            }
            if self.finished {
                return Ok(None);
            }
            let Some(view) = self.events.as_mut() else {
                return Ok(None);
            };
            if view.done {
                self.finished = true;
                if view.builder.rows() == 0 {
                    return Ok(None);
                }
                let batch = view.builder.finish().map_err(arrow_error)?;
                return Ok(Some(ArrowBatch::new(batch)));
            }
            let txn = match self.next_transaction(py) {
                Ok(Some(txn)) => txn,
                Ok(None) | Err(Stop::Quiet) => {
                    view_of(&mut self.events).done = true;
                    continue;
                }
                Err(Stop::Raise(e)) => {
                    self.failed = Some(e);
                    continue;
                }
            };
            // a transaction cut off is the range's last: nothing is read after it
            let still_written = txn.cut_off && self.still_written.call0(py)?.is_truthy(py)?;
            let view = view_of(&mut self.events);
            view.done |= txn.cut_off;
            if still_written {
                continue; // the server is still writing it: a later read takes it whole
            }
            let fixed = (&*self.path, view.file.as_str(), view.file_seq);
            let (gtid, xid) = (txn.gtid.as_deref(), txn.xid.map(|x| x as i64));
            for row in &txn.event_rows {
                view.builder.append(fixed, row, gtid, xid);
            }
            if view.builder.rows() >= view.batch_rows {
                let batch = view.builder.finish().map_err(arrow_error)?;
                self.ready.push_back(batch);
            }
        }
    }
}

/// The events view of a reader made by `into_events_view`.
fn view_of(events: &mut Option<EventsView>) -> &mut EventsView {
    events.get_or_insert_with(|| EventsView::new(String::new(), 0, BATCH_ROWS))
}

fn arrow_error(e: arrow_schema::ArrowError) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// The completed table map's fields after table_id and flags, from the
/// reference's description of it (`_EventDescriber.last`), if it has one
/// (`TableEntry::json_fields`, for JSON lines).
fn completed_fields(py: Python<'_>, check: &Py<PyAny>) -> PyResult<Option<Vec<u8>>> {
    let Ok(last) = check.getattr(py, "last") else {
        return Ok(None);
    };
    let Ok((_, _, _, described)) =
        last.extract::<(Option<String>, Option<String>, Option<String>, String)>(py)
    else {
        return Ok(None);
    };
    // `{["checksum": "0x..", ]"table_id": N, "flags": N, "database": ...}`:
    // nothing before the database's key can contain it
    Ok(described
        .find(", \"database\": ")
        .filter(|_| described.ends_with('}'))
        .map(|at| described.as_bytes()[at + 2..described.len() - 1].to_vec()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChangesReader>()?;
    Ok(())
}

/// The row images of a huge event, left in its file (`LazyRowData`).
pub(super) struct Window<'a> {
    pub(super) path: &'a str,
    pub(super) start: u64,
    pub(super) total: u64,
}

impl Window<'_> {
    /// Up to `size` bytes from `offset` into the row images (fewer at their end).
    pub(super) fn read(&self, offset: u64, size: u64) -> std::io::Result<Vec<u8>> {
        let file = File::open(self.path)?;
        let want = size.min(self.total.saturating_sub(offset)) as usize;
        let mut buf = vec![0u8; want];
        let mut got = 0;
        while got < buf.len() {
            let n = file.read_at(&mut buf[got..], self.start + offset + got as u64)?;
            if n == 0 {
                break;
            }
            got += n;
        }
        buf.truncate(got);
        Ok(buf)
    }
}

// -- the workers -----------------------------------------------------------------------

/// Rows data read before a job goes to a worker.
const JOB_BYTES: usize = 4 << 20;
/// A worker's builder is finished into a segment and sent past these: a
/// huge transaction streams, and Arrow's i32 offsets are never at risk.
const SEGMENT_ROWS: usize = 1 << 15;
const SEGMENT_BYTES: usize = 64 << 20;

/// What a worker needs besides the transactions: shared by every job.
struct Shared {
    path: Arc<str>,
    file: Arc<str>,
    file_seq: i64,
    helpers: Helpers,
    lazy_window: u64,
}

/// Rows decoded by a worker: one finished batch and the sizes of the blocks
/// it was appended in (a block: at most BATCH_ROWS rows of one rows event).
struct Segment {
    batch: RecordBatch,
    blocks: Vec<usize>,
}

/// Why a job stopped early.
enum Failure {
    /// A core error (with the Python exception behind it, if a helper failed).
    Core(Error, Option<PyErr>),
    Py(PyErr),
}

impl Failure {
    fn into_pyerr(self, path: &str) -> PyErr {
        match self {
            Failure::Py(e) => e,
            Failure::Core(error, cause) => Python::attach(|py| {
                let e = raise(py, path, error);
                if let Some(cause) = cause {
                    e.set_cause(py, Some(cause));
                }
                e
            }),
        }
    }
}

/// What a worker sends for a job: its rows segment by segment (so a huge
/// transaction streams), then the end, with the failure that stopped it.
enum Piece {
    Rows(Segment),
    Done(Option<Failure>),
}

/// Pieces a worker may send ahead of the reader (the rest of its job waits).
const PIECES_AHEAD: usize = 1;

/// Worker threads decoding jobs of transactions; outputs are taken in job order.
/// The threads start with the first job: a reader whose transactions are
/// decoded elsewhere (`ChangeValues`) never starts them.
struct Pool {
    workers: usize,
    shared: Arc<Shared>,
    jobs: Option<mpsc::Sender<(usize, Vec<Transaction>)>>,
    results: Option<mpsc::Receiver<(usize, Piece)>>,
    done: HashMap<usize, VecDeque<Piece>>,
    handles: Vec<std::thread::JoinHandle<()>>,
    stopped: bool,
}

impl Pool {
    fn new(shared: Arc<Shared>) -> Pool {
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        Pool {
            workers,
            shared,
            jobs: None,
            results: None,
            done: HashMap::new(),
            handles: Vec::new(),
            stopped: false,
        }
    }

    fn start(&mut self) {
        let (jobs, queue) = mpsc::channel::<(usize, Vec<Transaction>)>();
        let (send, results) = mpsc::sync_channel(PIECES_AHEAD);
        let queue = Arc::new(Mutex::new(queue));
        let shared = &self.shared;
        self.handles = (0..self.workers)
            .map(|_| {
                let (queue, send, shared) = (queue.clone(), send.clone(), shared.clone());
                // one builder per worker: each job starts with the last one's capacity
                let mut builder = ChangesBuilder::new();
                std::thread::spawn(move || loop {
                    let next = queue.lock().ok().and_then(|q| q.recv().ok());
                    let Some((index, txns)) = next else { return };
                    let failure = run_job(&shared, &txns, &mut builder, index, &send);
                    drop(txns);
                    if send.send((index, Piece::Done(failure))).is_err() {
                        return;
                    }
                })
            })
            .collect();
        self.jobs = Some(jobs);
        self.results = Some(results);
    }

    fn submit(&mut self, index: usize, job: Vec<Transaction>) {
        if self.handles.is_empty() && !self.stopped {
            self.start();
        }
        if let Some(jobs) = &self.jobs {
            // a closed queue means the workers are gone: `take` then never sees this job
            let _ = jobs.send((index, job));
        }
    }

    fn keep(&mut self, index: usize, piece: Piece) {
        self.done.entry(index).or_default().push_back(piece);
    }

    /// The next piece of job `index`, if a worker has sent it.
    fn take(&mut self, index: usize) -> Option<Piece> {
        while let Some(Ok((i, piece))) = self.results.as_ref().map(|r| r.try_recv()) {
            self.keep(i, piece);
        }
        let queue = self.done.get_mut(&index)?;
        let piece = queue.pop_front();
        if queue.is_empty() {
            self.done.remove(&index);
        }
        piece
    }

    /// Block until job `index` has a piece (called without the GIL).
    fn wait_for(&mut self, index: usize) {
        while !self.done.contains_key(&index) {
            match self.results.as_ref().map(|r| r.recv()) {
                Some(Ok((i, piece))) => self.keep(i, piece),
                _ => return,
            }
        }
    }

    /// No more jobs: the workers end once their queue is empty.
    fn stop(&mut self) {
        self.jobs = None;
        self.stopped = true;
    }
}

impl Drop for ChangesReader {
    fn drop(&mut self) {
        self.pool.stop();
        // a worker waiting to send a piece sees the channel closed and ends
        self.pool.results = None;
        let handles = std::mem::take(&mut self.pool.handles);
        // a worker may wait for the GIL (a JSON text): join without holding it
        Python::attach(|py| {
            py.detach(|| {
                for h in handles {
                    let _ = h.join();
                }
            })
        });
    }
}

/// A `TextHelper` for a worker thread: takes the GIL for each call.
struct GilHelper<'a> {
    helpers: &'a Helpers,
    codec_names: &'a [Option<Py<PyString>>],
    error: Option<PyErr>,
}

impl GilHelper<'_> {
    fn with<T>(&mut self, f: impl FnOnce(&mut PyHelper) -> T) -> T {
        Python::attach(|py| {
            let mut helper = PyHelper {
                py,
                helpers: self.helpers,
                codec_names: self.codec_names,
                error: None,
            };
            let result = f(&mut helper);
            if let Some(e) = helper.error.take() {
                self.error = Some(e);
            }
            result
        })
    }
}

impl TextHelper for GilHelper<'_> {
    fn json(&mut self, col: &Column, raw: &[u8], out: &mut Vec<u8>) -> ValueResult {
        self.with(|h| h.json(col, raw, out))
    }

    fn json_diff(
        &mut self,
        col: &Column,
        diff: &[u8],
        before: Option<Option<&str>>,
        out: &mut Vec<u8>,
    ) -> ValueResult {
        self.with(|h| h.json_diff(col, diff, before, out))
    }

    fn decode(&mut self, col: &Column, raw: &[u8], out: &mut Vec<u8>) -> ValueResult<bool> {
        self.with(|h| h.decode(col, raw, out))
    }
}

/// One worker's builder, the blocks appended to it, and where its segments go.
struct JobBuilder<'a> {
    builder: ChangesBuilder,
    blocks: Vec<usize>,
    index: usize,
    send: &'a mpsc::SyncSender<(usize, Piece)>,
}

impl JobBuilder<'_> {
    fn block(&mut self, rows: usize) -> Result<(), Failure> {
        self.blocks.push(rows);
        if self.builder.rows() >= SEGMENT_ROWS || self.builder.text_bytes() >= SEGMENT_BYTES {
            self.seal()?;
        }
        Ok(())
    }

    /// The rows so far as a segment (rows after the last block included: a
    /// failed append leaves some that no block covers).
    fn seal(&mut self) -> Result<(), Failure> {
        if self.builder.rows() == 0 {
            return Ok(());
        }
        let batch = self
            .builder
            .finish()
            .map_err(|e| Failure::Py(PyRuntimeError::new_err(e.to_string())))?;
        let blocks = std::mem::take(&mut self.blocks);
        let piece = Piece::Rows(Segment { batch, blocks });
        self.send.send((self.index, piece)).map_err(|_| {
            // the reader is gone: nobody wants the rest
            Failure::Py(PyRuntimeError::new_err("the changes reader was dropped"))
        })
    }
}

/// Decode a job, sending its segments as they fill; the failure that stopped it, if any.
fn run_job(
    shared: &Shared,
    txns: &[Transaction],
    builder: &mut ChangesBuilder,
    index: usize,
    send: &mpsc::SyncSender<(usize, Piece)>,
) -> Option<Failure> {
    let mut job = JobBuilder {
        builder: std::mem::take(builder),
        blocks: Vec::new(),
        index,
        send,
    };
    let mut failure = txns
        .iter()
        .try_for_each(|txn| emit(shared, &mut job, txn))
        .err();
    if let Err(f) = job.seal() {
        failure.get_or_insert(f);
    }
    *builder = job.builder;
    failure
}

/// The rows of one transaction, in blocks of BATCH_ROWS as the Python path makes them.
fn emit(shared: &Shared, job: &mut JobBuilder<'_>, txn: &Transaction) -> Result<(), Failure> {
    let (commit_timestamp, commit_pos) = txn.commit.unwrap_or(txn.last);
    for item in &txn.rows {
        let Some(table) = &item.table else {
            let detail = format!(
                "rows event for table id {} without a table map before it \
                 (start reading at an earlier position)",
                item.table_id
            );
            return Err(Failure::Core(Error::corrupt(item.pos, detail), None));
        };
        if table.width < item.width {
            let detail = format!(
                "rows event has {} columns, its table map {} has {}",
                item.width, table.qualified, table.width
            );
            return Err(Failure::Core(Error::corrupt(item.pos, detail), None));
        }
        let view = table.view(item);
        let (before, after) = (&view.before, &view.after);
        let fields = EventFields {
            path: &shared.path,
            file: &shared.file,
            file_seq: shared.file_seq,
            pos: item.pos as i64,
            sub: item.sub,
            timestamp: item.timestamp as i64,
            commit_timestamp: commit_timestamp as i64,
            commit_pos: commit_pos as i64,
            gtid: txn.gtid.as_deref(),
            xid: txn.xid.map(|x| x as i64),
            server_id: item.server_id as i64,
        };
        let operation = events::rows::operation(item.type_code).unwrap_or(Operation::Insert);
        let partial = item.type_code == PARTIAL_UPDATE_ROWS_EVENT;
        let mut helper = GilHelper {
            helpers: &shared.helpers,
            codec_names: &table.codec_names,
            error: None,
        };
        let images = match &item.data {
            RowsBytes::Held(data, start) => RowImages::Held(data.get(*start..).unwrap_or(&[])),
            RowsBytes::InFile { end } => RowImages::InFile(Window {
                path: &shared.path,
                start: item.rows_offset,
                total: end.saturating_sub(item.rows_offset),
            }),
        };
        let plans = (&**before, &**after, operation, partial);
        append_event_rows(
            shared,
            job,
            item,
            table,
            &images,
            plans,
            &view.keys,
            &fields,
            &mut helper,
        )?;
    }
    Ok(())
}

/// A rows event's row images: held in memory, or left in the file (a huge
/// event) and read through a window of `LazyRowData.WINDOW`.
enum RowImages<'a> {
    Held(&'a [u8]),
    InFile(Window<'a>),
}

impl RowImages<'_> {
    fn total(&self) -> u64 {
        match self {
            RowImages::Held(data) => data.len() as u64,
            RowImages::InFile(window) => window.total,
        }
    }

    /// The images from `offset` on: all of them when held, else up to `size` bytes.
    fn read(&self, offset: u64, size: u64) -> std::io::Result<Cow<'_, [u8]>> {
        match self {
            RowImages::Held(data) => Ok(Cow::Borrowed(
                usize::try_from(offset)
                    .ok()
                    .and_then(|at| data.get(at..))
                    .unwrap_or(&[]),
            )),
            RowImages::InFile(window) => window.read(offset, size).map(Cow::Owned),
        }
    }
}

/// A rows event's rows appended in blocks of at most BATCH_ROWS. Read
/// through a window, a row cut by the window's end fails to decode and is
/// read again from its start with the next window; a failure in a window
/// that reaches the images' end (always, when held) is the event's error.
#[allow(clippy::too_many_arguments)]
fn append_event_rows(
    shared: &Shared,
    job: &mut JobBuilder<'_>,
    item: &RowsItem,
    table: &TableEntry,
    images: &RowImages,
    (before, after, operation, partial): (&Plan, &Plan, Operation, bool),
    keys: &RowKeys,
    fields: &EventFields,
    helper: &mut GilHelper,
) -> Result<(), Failure> {
    let io = |e: std::io::Error| Failure::Py(PyErr::from(e));
    let total = images.total();
    let (mut base, mut window) = (0u64, shared.lazy_window);
    let mut buf = images.read(base, window).map_err(io)?;
    let (mut pos, mut first) = (0usize, 0usize);
    while base + (pos as u64) < total {
        let rows = RowsData {
            operation,
            partial,
            before,
            after,
            data: &buf,
        };
        let appended = job.builder.append_rows(
            &table.layout,
            &rows,
            pos,
            BATCH_ROWS,
            first,
            fields,
            &table.codecs,
            keys,
            helper,
        );
        match appended {
            Err(failed) => {
                if base + buf.len() as u64 >= total {
                    // the window already reached the end: bad data
                    let cause = helper.error.take();
                    return Err(row_failure(item, table, failed, base, first, cause));
                }
                helper.error = None;
                let offset = failed.offset as u64;
                first += failed.rows;
                job.block(failed.rows)?;
                if offset == 0 {
                    window *= 2; // one row outgrew the window
                }
                base += offset;
                buf = images.read(base, window).map_err(io)?;
                pos = 0;
            }
            Ok(done) => {
                first += done.rows;
                pos = done.end;
                job.block(done.rows)?;
                if pos >= buf.len() && base + (pos as u64) < total {
                    // the window ended on a row's end
                    base += pos as u64;
                    buf = images.read(base, window).map_err(io)?;
                    pos = 0;
                }
            }
        }
    }
    Ok(())
}

/// `native_failure`: the reference's error for a row that failed in the
/// buffer starting `base` bytes into the event's row images.
fn row_failure(
    item: &RowsItem,
    table: &TableEntry,
    failed: AppendError,
    base: u64,
    first: usize,
    cause: Option<PyErr>,
) -> Failure {
    let index = first + failed.rows;
    let unsupported = failed.error.unsupported && cause.is_none();
    let name = &table.qualified;
    let detail = &failed.error.detail;
    let (kind, text) = if unsupported {
        (ErrorKind::UnsupportedFeature, format!("{name}: {detail}"))
    } else {
        (
            ErrorKind::CorruptEvent,
            format!("row {index} of {name}: {detail}"),
        )
    };
    let offset = item.rows_offset + base + failed.offset as u64;
    Failure::Core(Error::new(kind, offset, text), cause)
}
