//! The changes view of one byte range, read natively: `ChangesReader`.
//!
//! Strategy: the loop of `binlake.spark.batches._python_change_batches`
//! without a Python object per event. The framer (`framing.rs`) cuts the
//! events; the decoders of `events/` read the ones the loop needs (GTIDs,
//! XID, TABLE_MAP, rows event headers, TRANSACTION_PAYLOAD); `transaction.rs`
//! groups them into transactions as `spark/ranges.py transactions()` does;
//! and at each transaction's end its rows go to the same `ChangesBuilder` as
//! before, in blocks of BATCH_ROWS, so batches and their boundaries are those
//! of the reference path.
//!
//! Python is called only where the reference decides something this module
//! must not decide twice:
//! * `check(...)`: every event type not decoded here (QUERY and its status
//!   variables, FDE, ROTATE, LOAD, ...) goes through the Python decoder, for
//!   its errors and, under `force`, to learn that it failed (a few per file;
//!   MySQL's BEGIN makes it one per transaction there);
//! * `wanted(db, table)`: the `tables` filter (once per table);
//! * `schema_columns(db, table)`: names from CREATE TABLE statements (once
//!   per table map without names);
//! * `still_written()`: whether a transaction cut off at the end of the range
//!   is one the server is still writing (at most once per range);
//! * JSON texts and charsets without a native decoder (`PyHelper`).
//!
//! Errors follow `read_split`: an error at or past `end` ends the range
//! quietly (it belongs to the next one), a partial last event of a file
//! still being written ends it quietly when reading to the end of the file;
//! anything else is raised after every batch made before it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyModule, PyString};

use super::arrow::{ArrowBatch, Helpers, PyHelper};
use super::raise;
use super::reader::{PyErrSlot, PyStream};
use crate::constants::*;
use crate::error::{Error, ErrorKind};
use crate::events::{self, decode_table_map, expect_end, in_event, text, QueryKind};
use crate::framing::{Frame, Framer, Options, LARGE_EVENT_BYTES};
use crate::layout::Layout;
use crate::rowimage::{Operation, PlanCache, RowsData};
use crate::sink::arrow::{AppendError, ChangesBuilder, EventFields, TextCodec};
use crate::source::{FileSource, Source, StreamSource};
use crate::transaction::{is_query, StepDetails, TransactionState};

/// Rows per batch (`BATCH_ROWS` in spark/batches.py).
const BATCH_ROWS: usize = 8192;
/// The window a huge event's row images are read through (`LazyRowData.WINDOW`).
const LAZY_WINDOW: u64 = 8 << 20;
/// Table maps kept by their bytes (reader.py `DecodeContext.shared_cache`'s bound).
const TABLE_CACHE_LIMIT: usize = 4096;

/// A table map as the changes view uses it, shared by every equal map.
struct TableEntry {
    /// `TableMapEvent.qualified_name`, for errors.
    qualified: String,
    width: u64,
    layout: Layout,
    plans: RefCell<PlanCache>,
    codecs: Vec<TextCodec>,
    codec_names: Vec<Option<Py<PyString>>>,
    wanted: bool,
}

/// The row images of a rows event: held, or (huge events) left in the file
/// from `rows_offset` to `end`.
enum RowsBytes {
    /// The bytes and where the row images start in them.
    Held(Vec<u8>, usize),
    InFile {
        end: u64,
    },
}

/// A wanted rows event of the transaction being read.
struct RowsItem {
    pos: u64,
    sub: i32,
    timestamp: u32,
    server_id: u32,
    type_code: u8,
    table_id: u64,
    table: Option<Rc<TableEntry>>,
    width: u64,
    before: Vec<u8>,
    after: Option<Vec<u8>>,
    rows_offset: u64,
    data: RowsBytes,
}

/// The events from one boundary to the next (only what the view needs of them).
#[derive(Default)]
struct Transaction {
    events: usize,
    rows: Vec<RowsItem>,
    gtid: Option<String>,
    xid: Option<u64>,
    /// The last event's header timestamp and where the next top-level event starts.
    last: (u32, u64),
    /// Set when an event closed it.
    commit: Option<(u32, u64)>,
    cut_off: bool,
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
enum Stop {
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
    path: Rc<str>,
    file: Rc<str>,
    file_seq: i64,
    start: u64,
    end: Option<u64>,
    force: bool,
    stream_error: PyErrSlot,
    check: Py<PyAny>,
    wanted: Option<Py<PyAny>>,
    schema_columns: Option<Py<PyAny>>,
    still_written: Py<PyAny>,
    binlog_error: Py<PyAny>,
    partial_event: Py<PyAny>,
    /// Collation id -> Python codec (`charsets.codec_for`, binary ones absent).
    codecs: HashMap<u64, String>,
    helpers: Helpers,
    tables_by_bytes: HashMap<Vec<u8>, Rc<TableEntry>>,
    table_maps: HashMap<u64, Rc<TableEntry>>,
    /// `wanted("", "")`: rows events without a table map.
    wanted_unmapped: Option<bool>,
    state: TransactionState,
    current: Transaction,
    last_pos: Option<u64>,
    sub: i32,
    end_pos: u64,
    builder: ChangesBuilder,
    ready: VecDeque<RecordBatch>,
    failed: Option<PyErr>,
    events_done: bool,
    finished: bool,
    /// `LazyRowData.WINDOW` (tests make it tiny).
    lazy_window: u64,
}

impl ChangesReader {
    /// How a core error ends the range (`read_split`'s rules).
    fn stop(&self, py: Python<'_>, error: Error) -> Stop {
        if error.kind == ErrorKind::PartialEvent {
            if self.end.is_none() {
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
            if self.end.is_none() {
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
            GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => {
                let raw = self.framer.raw();
                let mut cur = events::body(raw, frame);
                match events::decode_gtid(&mut cur) {
                    Ok(g) => {
                        let gtid = g.gtid(code);
                        self.check_end(py, &cur, code)?;
                        Ok(Decoded::Gtid(gtid))
                    }
                    Err(e) => self.failed_decode(py, e, frame),
                }
            }
            GTID_EVENT => {
                let raw = self.framer.raw();
                let mut cur = events::body(raw, frame);
                match events::decode_mariadb_gtid(&mut cur) {
                    Ok(g) => {
                        let decoded = Decoded::MariadbGtid(g.gtid(frame.server_id), g.standalone());
                        self.check_end(py, &cur, code)?;
                        Ok(decoded)
                    }
                    Err(e) => self.failed_decode(py, e, frame),
                }
            }
            XID_EVENT => {
                let raw = self.framer.raw();
                let mut cur = events::body(raw, frame);
                match events::decode_xid(&mut cur) {
                    Ok(xid) => {
                        self.check_end(py, &cur, code)?;
                        Ok(Decoded::Xid(xid))
                    }
                    Err(e) => self.failed_decode(py, e, frame),
                }
            }
            TABLE_MAP_EVENT => self.table_map(py, frame),
            TRANSACTION_PAYLOAD_EVENT => {
                let raw = self.framer.raw();
                let mut cur = events::body(raw, frame);
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
            _ => self.other(py, frame),
        }
    }

    fn table_map(&mut self, py: Python<'_>, frame: &Frame) -> Result<Decoded, Stop> {
        let post = self.post_header_len(TABLE_MAP_EVENT);
        let raw = self.framer.raw();
        let mut cur = events::body(raw, frame);
        // table id and flags first; the rest is the cache key
        let mut head = cur.clone();
        let id = if post == 6 {
            head.u32().map(u64::from)
        } else {
            head.u48()
        };
        let (Ok(table_id), Ok(_)) = (id, head.u16()) else {
            let e = decode_table_map(&mut cur, post).err();
            return match e {
                Some(e) => self.failed_decode(py, e, frame),
                None => Ok(Decoded::Nothing),
            };
        };
        if let Some(entry) = self.tables_by_bytes.get(head.clone().rest()) {
            self.table_maps.insert(table_id, entry.clone());
            return Ok(Decoded::Nothing);
        }
        let map = match decode_table_map(&mut cur, post) {
            Ok(map) => map,
            Err(e) => return self.failed_decode(py, e, frame),
        };
        self.check_end(py, &cur, TABLE_MAP_EVENT)?;
        let entry = Rc::new(self.table_entry(py, &map)?);
        if self.tables_by_bytes.len() > TABLE_CACHE_LIMIT {
            self.tables_by_bytes.clear(); // bounded: schema churn must not grow it
        }
        self.tables_by_bytes
            .insert(map.signature.to_vec(), entry.clone());
        self.table_maps.insert(table_id, entry);
        Ok(Decoded::Nothing)
    }

    /// What `_change_layout` and `_wanted_rows_events` derive from a table map.
    fn table_entry(&self, py: Python<'_>, map: &events::TableMap) -> PyResult<TableEntry> {
        let database = text(map.database).into_owned();
        let table = text(map.table).into_owned();
        let wanted = match &self.wanted {
            Some(f) => f.call1(py, (&database, &table))?.is_truthy(py)?,
            None => true,
        };
        // schema.rename_rows's rule: `@N` becomes the Nth name, when there is one
        let mut keys = None;
        if let (Some(f), false) = (&self.schema_columns, map.has_names()) {
            let names: Option<Vec<String>> = f.call1(py, (&database, &table))?.extract(py)?;
            if let Some(names) = names.filter(|n| !n.is_empty()) {
                let renamed: Vec<String> = map
                    .columns
                    .iter()
                    .map(|c| match (&c.name, names.get(c.index)) {
                        (None, Some(name)) => name.clone(),
                        _ => c.key(),
                    })
                    .collect();
                keys = Some(renamed);
            }
        }
        // `rows.native_columns`: no codec for GEOMETRY, else `codec_for(charset)`
        let codec_names: Vec<Option<&String>> = map
            .columns
            .iter()
            .map(|c| match (c.type_code, c.charset) {
                (MYSQL_TYPE_GEOMETRY, _) | (_, None) => None,
                (_, Some(id)) => self.codecs.get(&id),
            })
            .collect();
        Ok(TableEntry {
            qualified: format!("{database}.{table}"),
            width: map.columns.len() as u64,
            layout: map.layout(keys.as_deref()),
            plans: RefCell::new(PlanCache::default()),
            codecs: codec_names
                .iter()
                .map(|c| TextCodec::of(c.map(String::as_str)))
                .collect(),
            codec_names: codec_names
                .iter()
                .map(|c| c.map(|name| PyString::intern(py, name).unbind()))
                .collect(),
            wanted,
        })
    }

    fn rows_event(&mut self, py: Python<'_>, frame: &Frame, keep: bool) -> Result<Decoded, Stop> {
        let code = frame.type_code;
        let post = self.post_header_len(code);
        let raw = self.framer.raw();
        let mut cur = events::body(raw, frame);
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
            (None, Cow::Borrowed(_)) => {
                // the event's own bytes, moved: the row images start at their file offset
                let start = (rows_offset - frame.pos) as usize;
                RowsBytes::Held(self.framer.take_raw(), start)
            }
        };
        let item = RowsItem {
            pos: frame.pos,
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
        let event = match self.check.call1(py, args) {
            Ok(event) => event,
            Err(e) => return Err(self.stop_py(py, e)),
        };
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
            let mut cur = events::body(raw, frame);
            let post = self.post_header_len(code);
            return match events::decode_query(&mut cur, code, post) {
                Ok(q) => Ok(Decoded::Query(events::classify_query(&q.query))),
                Err(e) => Err(self.stop(py, in_event(e, code, frame.pos))),
            };
        }
        Ok(Decoded::Nothing)
    }

    /// The next transaction of the range (None: no more events).
    fn next_transaction(&mut self, py: Python<'_>) -> Result<Option<Transaction>, Stop> {
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
            let decoded = match self.decode(py, &frame, in_range) {
                Ok(d) => d,
                Err(Stop::Quiet) => return Ok(self.end_of_events()),
                Err(raise) => return Err(raise),
            };
            if !in_range {
                continue; // the format description read before jumping to `start`
            }
            if let Some(done) = self.group(&frame, decoded) {
                return Ok(Some(done));
            }
        }
    }

    /// `transactions()` for one event: a transaction that ends here, or one
    /// that never ended because this event starts another.
    fn group(&mut self, frame: &Frame, decoded: Decoded) -> Option<Transaction> {
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

    fn end_of_events(&mut self) -> Option<Transaction> {
        self.events_done = true;
        if self.current.events == 0 {
            return None;
        }
        let mut txn = std::mem::take(&mut self.current);
        txn.cut_off = true;
        Some(txn)
    }

    /// The rows of one transaction into the builder; full batches into `ready`.
    fn emit(&mut self, py: Python<'_>, txn: &Transaction) -> PyResult<()> {
        let (commit_timestamp, commit_pos) = txn.commit.unwrap_or(txn.last);
        let (path, file) = (self.path.clone(), self.file.clone());
        for item in &txn.rows {
            let Some(table) = &item.table else {
                return Err(raise(
                    py,
                    &self.path,
                    Error::corrupt(
                        item.pos,
                        format!(
                            "rows event for table id {} without a table map before it \
                             (start reading at an earlier position)",
                            item.table_id
                        ),
                    ),
                ));
            };
            if table.width < item.width {
                return Err(raise(
                    py,
                    &self.path,
                    Error::corrupt(
                        item.pos,
                        format!(
                            "rows event has {} columns, its table map {} has {}",
                            item.width, table.qualified, table.width
                        ),
                    ),
                ));
            }
            let pre_ga = events::rows::is_pre_ga(item.type_code);
            let (before, after) = {
                let mut plans = table.plans.borrow_mut();
                let before = plans.get(&table.layout, &item.before, pre_ga);
                let after = match &item.after {
                    Some(bitmap) => plans.get(&table.layout, bitmap, false),
                    None => before.clone(),
                };
                (before, after)
            };
            let fields = EventFields {
                path: &path,
                file: &file,
                file_seq: self.file_seq,
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
            let held;
            let data: &[u8] = match &item.data {
                RowsBytes::Held(data, start) => data.get(*start..).unwrap_or(&[]),
                RowsBytes::InFile { end } => {
                    held = Window {
                        path: &path,
                        start: item.rows_offset,
                        total: end.saturating_sub(item.rows_offset),
                    };
                    let mut rows = RowsData {
                        operation,
                        partial,
                        before: &before,
                        after: &after,
                        data: &[],
                    };
                    self.lazy_rows(py, item, table, &held, &mut rows, &fields)?;
                    continue;
                }
            };
            let rows = RowsData {
                operation,
                partial,
                before: &before,
                after: &after,
                data,
            };
            let (mut pos, mut first) = (0, 0);
            // blocks of BATCH_ROWS, as the Python path makes them: same batches
            while pos < data.len() {
                match self.append(py, table, &rows, pos, first, &fields) {
                    Ok((n, next)) => (pos, first) = (next, first + n),
                    Err((failed, cause)) => {
                        return Err(self.row_failure(py, item, table, failed, 0, first, cause))
                    }
                }
                self.flush_full()?;
            }
        }
        Ok(())
    }

    /// A huge event's rows read through a window, as `_lazy_rows`: a row cut
    /// by the window's end fails to decode and is read again from its start
    /// with the next window.
    fn lazy_rows<'p>(
        &mut self,
        py: Python<'_>,
        item: &RowsItem,
        table: &TableEntry,
        window_of: &Window,
        rows: &mut RowsData<'p>,
        fields: &EventFields,
    ) -> PyResult<()> {
        let total = window_of.total;
        let (mut base, mut window) = (0u64, self.lazy_window);
        let mut buf = window_of.read(base, window)?;
        let (mut pos, mut first) = (0usize, 0usize);
        while base + (pos as u64) < total {
            // SAFETY-free juggling: the plans outlive this call, the data is this window
            let chunk = RowsData {
                operation: rows.operation,
                partial: rows.partial,
                before: rows.before,
                after: rows.after,
                data: &buf,
            };
            match self.append(py, table, &chunk, pos, first, fields) {
                Err((failed, cause)) => {
                    let offset = failed.offset as u64;
                    let called_with = first;
                    first += failed.rows;
                    if base + buf.len() as u64 >= total {
                        // the window already reached the end: bad data
                        return Err(self.row_failure(
                            py,
                            item,
                            table,
                            failed,
                            base,
                            called_with,
                            cause,
                        ));
                    }
                    if offset == 0 {
                        window *= 2; // one row outgrew the window
                    }
                    base += offset;
                    buf = window_of.read(base, window)?;
                    pos = 0;
                }
                Ok((n, next)) => {
                    first += n;
                    pos = next;
                    if pos >= buf.len() && base + (pos as u64) < total {
                        // the window ended on a row's end
                        base += pos as u64;
                        buf = window_of.read(base, window)?;
                        pos = 0;
                    }
                }
            }
            self.flush_full()?;
        }
        Ok(())
    }

    fn append(
        &mut self,
        py: Python<'_>,
        table: &TableEntry,
        rows: &RowsData,
        start: usize,
        first: usize,
        fields: &EventFields,
    ) -> Result<(usize, usize), (AppendError, Option<PyErr>)> {
        let mut helper = PyHelper {
            py,
            helpers: &self.helpers,
            codec_names: &table.codec_names,
            error: None,
        };
        match self.builder.append_rows(
            &table.layout,
            rows,
            start,
            BATCH_ROWS,
            first,
            fields,
            &table.codecs,
            &mut helper,
        ) {
            Ok(done) => Ok((done.rows, done.end)),
            Err(failed) => Err((failed, helper.error.take())),
        }
    }

    /// `native_failure`: the reference's error for a row that failed in the
    /// buffer starting `base` bytes into the event's row images.
    #[allow(clippy::too_many_arguments)]
    fn row_failure(
        &self,
        py: Python<'_>,
        item: &RowsItem,
        table: &TableEntry,
        failed: AppendError,
        base: u64,
        first: usize,
        cause: Option<PyErr>,
    ) -> PyErr {
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
        let error = raise(py, &self.path, Error::new(kind, offset, text));
        if let Some(cause) = cause {
            error.set_cause(py, Some(cause));
        }
        error
    }

    /// A batch once BATCH_ROWS rows are in.
    fn flush_full(&mut self) -> PyResult<()> {
        if self.builder.rows() >= BATCH_ROWS {
            let batch = self
                .builder
                .finish()
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            self.ready.push_back(batch);
        }
        Ok(())
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
    /// `schema_columns(db, table)`: column names from a schema (None: no schema).
    /// `codecs`: collation id -> Python codec. `still_written()`: the file's IN_USE flag now.
    /// `large_event_bytes`, `lazy_window`: reader.py's and `LazyRowData`'s (for tests).
    #[new]
    #[pyo3(signature = (path, file, file_seq, start, end, stream, verify_checksums, force,
                        check, wanted, schema_columns, codecs, still_written,
                        large_event_bytes=LARGE_EVENT_BYTES, lazy_window=LAZY_WINDOW))]
    #[allow(clippy::too_many_arguments)]
    fn new(
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
        schema_columns: Option<Py<PyAny>>,
        codecs: HashMap<u64, String>,
        still_written: Py<PyAny>,
        large_event_bytes: u64,
        lazy_window: u64,
    ) -> PyResult<Self> {
        let stream_error: PyErrSlot = Arc::new(Mutex::new(None));
        // A gzip stream cannot seek: its events before `start` are read and skipped.
        let start_position = (start > 4 && stream.is_none()).then_some(start);
        let source: Box<dyn Source + Send> = match stream {
            Some(obj) => Box::new(StreamSource::new(PyStream {
                obj,
                error: stream_error.clone(),
            })),
            None => Box::new(FileSource::open(&path)?),
        };
        let opts = Options {
            verify_checksums,
            force,
            start_position,
            unpack_payloads: true,
            large_event_bytes,
            pending_alg: None,
        };
        let errors = py.import("binlake.errors")?;
        Ok(ChangesReader {
            framer: Framer::new(source, opts),
            path: path.into(),
            file: file.into(),
            file_seq,
            start,
            end,
            force,
            stream_error,
            check,
            wanted,
            schema_columns,
            still_written,
            binlog_error: errors.getattr("BinlogError")?.unbind(),
            partial_event: errors.getattr("PartialEvent")?.unbind(),
            codecs,
            helpers: Helpers::load(py)?,
            tables_by_bytes: HashMap::new(),
            table_maps: HashMap::new(),
            wanted_unmapped: None,
            state: TransactionState::default(),
            current: Transaction::default(),
            last_pos: None,
            sub: 0,
            end_pos: 0,
            builder: ChangesBuilder::new(),
            ready: VecDeque::new(),
            failed: None,
            events_done: false,
            finished: false,
            lazy_window: lazy_window.max(1),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch (`pyarrow.record_batch(it)`), None at the end.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<ArrowBatch>> {
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
            if self.events_done {
                self.finished = true;
                if self.builder.rows() == 0 {
                    return Ok(None);
                }
                let batch = self
                    .builder
                    .finish()
                    .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
                return Ok(Some(ArrowBatch::new(batch)));
            }
            match self.next_transaction(py) {
                Ok(Some(txn)) => {
                    // a transaction the server is still writing: a later read takes it whole
                    if txn.cut_off && self.still_written.call0(py)?.is_truthy(py)? {
                        self.events_done = true;
                        continue;
                    }
                    if let Err(e) = self.emit(py, &txn) {
                        self.failed = Some(e);
                    }
                }
                Ok(None) => {}
                Err(Stop::Quiet) => self.events_done = true,
                Err(Stop::Raise(e)) => self.failed = Some(e),
            }
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChangesReader>()?;
    Ok(())
}

/// The row images of a huge event, left in its file (`LazyRowData`).
struct Window<'a> {
    path: &'a str,
    start: u64,
    total: u64,
}

impl Window<'_> {
    /// Up to `size` bytes from `offset` into the row images (fewer at their end).
    fn read(&self, offset: u64, size: u64) -> std::io::Result<Vec<u8>> {
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
