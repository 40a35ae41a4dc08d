//! `binlake.changes` natively: `ChangeValues`, the changes loop read into
//! Python values.
//!
//! Strategy: the transactions are those of the changes view
//! (`ChangesReader`: framing, the events a change needs, the schema history's
//! table maps and transaction grouping, all without a Python object per
//! event). Their row images are decoded on the reading thread into the dicts
//! of `RowsEvent.rows()` (`RowLayout`, one per distinct table map), and each
//! row becomes a `binlake.Change` made straight into its slots (`SlotClass`).
//! So a GTID, BEGIN, table map or XID event costs no Python object at all,
//! and a one-row transaction costs one dict per image and one Change.
//!
//! Rows come out one rows event at a time, and a huge event's (one whose
//! row images stay in the file, `RowsBytes::InFile`) a window of row images
//! at a time (`WINDOW` bytes), so it never has all its Change objects alive
//! at once. There a row cut by a window's end fails to decode and is read
//! again from its start in the next window (doubled when one row outgrows
//! it); a failure in a window that reaches the end of the images is the
//! event's error, raised after the rows before it, as `rows.iter_rows`
//! raises it (`native_failure`); a held event with a bad row gives no row.
//! An error that ends the read inside a transaction comes after the rows of
//! that transaction read before it (and after their own errors), as
//! `binlake.changes` yields rows as it reads.
//!
//! Per transaction (`per_transaction`), each group of events from one
//! boundary to the next is one tuple: (changes, gtid, xid, end position,
//! commit timestamp, complete), its rows decoded whole. One change at a
//! time, `on_commit` is called with the same facts once a group's changes
//! have all been handed out, before anything more is read: a live reader
//! moves its resume token there. Given a `CommitMark` instead of a
//! function, the loop writes the facts a resume token needs into it with no
//! Python call: the commonest call of a stream of one-row transactions.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyList, PyString, PyTuple, PyType};

use super::changes::{ChangesReader, RowsBytes, RowsItem, Stop, TableEntry, Transaction, Window};
use super::errors::raise;
use super::slots::SlotClass;
use super::values::RowLayout;
use crate::constants::PARTIAL_UPDATE_ROWS_EVENT;
use crate::error::{Error, ErrorKind};
use crate::events::rows::{is_pre_ga, operation};
use crate::rowimage::Operation;

/// A huge event's read window (its first size; `LazyRowData.WINDOW`'s).
const WINDOW: u64 = 8 << 20;
/// Table layouts kept (the changes loop's own table cache bounds the maps).
const LAYOUT_LIMIT: usize = 4096;
/// `binlake.records.Change`'s fields, in order (`SlotClass` checks them).
const CHANGE_FIELDS: [&str; 12] = [
    "file",
    "pos",
    "next_pos",
    "row_index",
    "timestamp",
    "server_id",
    "gtid",
    "database",
    "table",
    "op",
    "before",
    "after",
];

/// A table map's Python-side facts, made once per distinct map.
struct TableValues {
    /// Keeps the map's address (the key) from being reused while cached.
    _entry: Arc<TableEntry>,
    layout: RowLayout,
    database: Py<PyString>,
    table: Py<PyString>,
}

/// Where the transaction being decoded stands.
struct Cursor {
    txn: Transaction,
    gtid: Option<Py<PyAny>>,
    item: usize,
    /// Offset into the item's row images, the index of the row there, the window.
    base: u64,
    first: usize,
    window: u64,
}

#[pyclass(module = "binlake._native", unsendable)]
pub struct ChangeValues {
    inner: ChangesReader,
    change: SlotClass,
    file: Py<PyString>,
    /// The operations' names, in `Operation`'s order (indexed by it).
    ops: [Py<PyString>; 3],
    layouts: HashMap<usize, TableValues>,
    cursor: Option<Cursor>,
    /// Changes made and not yet handed out.
    ready: VecDeque<Py<PyAny>>,
    /// Transactions made (per transaction).
    transactions: VecDeque<Py<PyAny>>,
    /// The error that ended the read, raised once the rows before it are out.
    after_rows: Option<PyErr>,
    failed: Option<PyErr>,
    finished: bool,
    per_transaction: bool,
    /// A huge event's first read window (`LazyRowData.WINDOW`).
    window: u64,
    /// Told (gtid, xid, end position, timestamp, complete) once a
    /// transaction's changes have all been handed out (one change at a time).
    on_commit: Option<OnCommit>,
}

enum OnCommit {
    Call(Py<PyAny>),
    Mark(Py<CommitMark>),
}

/// Where a reader of changes may resume: after the last whole group handed
/// out, each MariaDB replication domain's last GTID there, and the MySQL
/// GTIDs recorded (per `uuid[:tag]`, as merged intervals). Called as
/// `mark(file, gtid, xid, end_pos, timestamp, complete)` (what the pure
/// loop does, `binlake.live.source._CommitMark` its reference); the native
/// loop writes into it directly.
#[pyclass(module = "binlake._native")]
#[derive(Default)]
pub struct CommitMark {
    after: Option<(Py<PyAny>, u64)>,
    domains: HashMap<String, Py<PyAny>>,
    mysql: HashMap<String, Vec<(u64, u64)>>,
}

/// Intervals kept before those that came out of order are sorted and joined.
const UNMERGED_INTERVALS: usize = 32;

/// Add `gno` to [first, last] intervals: in order (the common case) it
/// extends the last one; otherwise the intervals are joined now and then.
fn add_gno(intervals: &mut Vec<(u64, u64)>, gno: u64) {
    match intervals.last_mut() {
        Some(last) if last.1.checked_add(1) == Some(gno) => last.1 = gno,
        Some(last) if last.0 <= gno && gno <= last.1 => {}
        _ => {
            intervals.push((gno, gno));
            if intervals.len() > UNMERGED_INTERVALS {
                intervals.sort_unstable();
                let mut joined: Vec<(u64, u64)> = Vec::with_capacity(intervals.len());
                for &(first, last) in intervals.iter() {
                    match joined.last_mut() {
                        Some(prev) if first <= prev.1.saturating_add(1) => {
                            prev.1 = prev.1.max(last)
                        }
                        _ => joined.push((first, last)),
                    }
                }
                *intervals = joined;
            }
        }
    }
}

impl CommitMark {
    fn record(
        &mut self,
        py: Python<'_>,
        file: Py<PyAny>,
        gtid: Option<(&str, &Py<PyAny>)>,
        end: u64,
    ) {
        if let Some((text, object)) = gtid {
            if let Some((sid, gno)) = text.rsplit_once(':') {
                // MySQL's UUID[:TAG]:GNO
                if let Ok(gno) = gno.parse::<u64>() {
                    match self.mysql.get_mut(sid) {
                        Some(intervals) => add_gno(intervals, gno),
                        None => {
                            self.mysql.insert(sid.to_owned(), vec![(gno, gno)]);
                        }
                    }
                }
            } else {
                // MariaDB's DOMAIN-SERVER-SEQ (MySQL's UUID:N has no domain)
                let domain = &text[..text.find('-').unwrap_or(text.len())];
                match self.domains.get_mut(domain) {
                    Some(kept) => *kept = object.clone_ref(py),
                    None => {
                        self.domains.insert(domain.to_owned(), object.clone_ref(py));
                    }
                }
            }
        }
        self.after = Some((file, end));
    }
}

#[pymethods]
impl CommitMark {
    #[new]
    fn new() -> Self {
        CommitMark::default()
    }

    /// Record a group that ended; False (nothing recorded) if it was cut off.
    #[pyo3(signature = (file, gtid, _xid, end_pos, _timestamp, complete))]
    #[allow(clippy::too_many_arguments)]
    fn __call__(
        &mut self,
        py: Python<'_>,
        file: Py<PyAny>,
        gtid: Option<Bound<'_, PyString>>,
        _xid: Option<u64>,
        end_pos: u64,
        _timestamp: Option<u32>,
        complete: bool,
    ) -> PyResult<bool> {
        if !complete {
            return Ok(false);
        }
        let text = gtid.as_ref().map(|g| g.to_str()).transpose()?;
        let object = gtid.as_ref().map(|g| g.clone().into_any().unbind());
        self.record(py, file, text.zip(object.as_ref()), end_pos);
        Ok(true)
    }

    /// (file, end position) after the last whole group, None before any.
    #[getter]
    fn after(&self, py: Python<'_>) -> Option<(Py<PyAny>, u64)> {
        self.after
            .as_ref()
            .map(|(file, end)| (file.clone_ref(py), *end))
    }

    /// {"uuid[:tag]": [(first, last), ...]} of the MySQL GTIDs recorded.
    #[getter]
    fn mysql(&self) -> HashMap<String, Vec<(u64, u64)>> {
        self.mysql.clone()
    }

    /// {domain: its last GTID} of the MariaDB GTIDs recorded.
    #[getter]
    fn domains(&self, py: Python<'_>) -> HashMap<String, Py<PyAny>> {
        self.domains
            .iter()
            .map(|(domain, gtid)| (domain.clone(), gtid.clone_ref(py)))
            .collect()
    }
}

#[pymethods]
impl ChangeValues {
    /// `path` names the file (`Change.file`); `stream` is read instead when
    /// given (gzip, standard input, a live server's binlog). `check`, `wanted`,
    /// `follow_schema`, `codecs`: as `ChangesReader` takes them. `start`: the
    /// reader's start_position (4: the first event).
    #[new]
    #[pyo3(signature = (path, start, stream, verify_checksums, force, check, wanted,
                        follow_schema, codecs, change_class, per_transaction=false,
                        large_event_bytes=crate::framing::LARGE_EVENT_BYTES,
                        lazy_window=WINDOW, on_commit=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: String,
        start: u64,
        stream: Option<Py<PyAny>>,
        verify_checksums: bool,
        force: bool,
        check: Py<PyAny>,
        wanted: Option<Py<PyAny>>,
        follow_schema: bool,
        codecs: HashMap<u64, String>,
        change_class: Bound<'_, PyType>,
        per_transaction: bool,
        large_event_bytes: u64,
        lazy_window: u64,
        on_commit: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let never_written = py.eval(c"lambda: False", None, None)?.unbind();
        let inner = ChangesReader::new(
            py,
            path.clone(),
            path.clone(),
            0,
            start,
            None,
            stream,
            verify_checksums,
            force,
            check,
            wanted,
            follow_schema,
            codecs,
            never_written,
            large_event_bytes,
            lazy_window,
            usize::MAX,
        )?
        .raising_partial_events();
        let name = |s: &str| PyString::intern(py, s).unbind();
        Ok(ChangeValues {
            inner,
            change: SlotClass::new(&change_class, &CHANGE_FIELDS)?,
            file: PyString::new(py, &path).unbind(),
            ops: [name("insert"), name("update"), name("delete")],
            layouts: HashMap::new(),
            cursor: None,
            ready: VecDeque::new(),
            transactions: VecDeque::new(),
            after_rows: None,
            failed: None,
            finished: false,
            per_transaction,
            window: lazy_window.max(1),
            on_commit: on_commit.map(|call| match call.extract::<Py<CommitMark>>(py) {
                Ok(mark) => OnCommit::Mark(mark),
                Err(_) => OnCommit::Call(call),
            }),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next Change (per transaction: the next transaction's tuple), None at the end.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        loop {
            let made = if self.per_transaction {
                self.transactions.pop_front()
            } else {
                self.ready.pop_front()
            };
            if made.is_some() {
                return Ok(made);
            }
            if let Some(error) = self.failed.take() {
                self.finished = true;
                return Err(error);
            }
            if self.finished {
                return Ok(None);
            }
            if let Err(error) = self.step(py) {
                self.cursor = None;
                if self.per_transaction {
                    self.ready.clear(); // a transaction that failed is not handed out in part
                }
                self.failed = Some(error);
            }
        }
    }
}

impl ChangeValues {
    /// One window of the current transaction's rows, or the next transaction.
    fn step(&mut self, py: Python<'_>) -> PyResult<()> {
        if self.cursor.is_none() {
            return self.next_transaction(py);
        }
        if self.decode_window(py)? {
            return Ok(());
        }
        // the transaction is done
        let cursor = self.cursor.take().expect("a transaction being decoded");
        if let Some(error) = self.after_rows.take() {
            return Err(error); // per transaction, the one it cut off is dropped (`__next__`)
        }
        self.ended(py, &cursor.txn, cursor.gtid)
    }

    /// A transaction whose rows have all been made: its tuple (per
    /// transaction), else `on_commit` is told, before anything more is read.
    fn ended(
        &mut self,
        py: Python<'_>,
        txn: &Transaction,
        gtid: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        if !self.per_transaction && self.on_commit.is_none() {
            return Ok(());
        }
        let (timestamp, pos) = txn.commit.unwrap_or(txn.last);
        if let Some(OnCommit::Mark(mark)) = &self.on_commit {
            if txn.commit.is_some() {
                let gtid = txn.gtid.as_deref().zip(gtid.as_ref());
                mark.borrow_mut(py)
                    .record(py, self.file.clone_ref(py).into_any(), gtid, pos);
            }
            return Ok(());
        }
        let facts = [
            gtid.map_or_else(|| py.None().into_bound(py), |g| g.into_bound(py)),
            txn.xid.into_pyobject(py)?.into_any(),
            pos.into_pyobject(py)?.into_any(),
            timestamp.into_pyobject(py)?.into_any(),
            PyBool::new(py, txn.commit.is_some()).to_owned().into_any(),
        ];
        if self.per_transaction {
            let changes = PyList::new(py, self.ready.drain(..))?.into_any();
            let [gtid, xid, pos, timestamp, complete] = facts;
            let made = PyTuple::new(py, [changes, gtid, xid, pos, timestamp, complete])?;
            self.transactions.push_back(made.into_any().unbind());
        } else if let Some(OnCommit::Call(on_commit)) = &self.on_commit {
            on_commit.call1(py, PyTuple::new(py, facts)?)?;
        }
        Ok(())
    }

    fn next_transaction(&mut self, py: Python<'_>) -> PyResult<()> {
        let txn = match self.inner.next_transaction(py) {
            Ok(Some(txn)) => txn,
            Ok(None) | Err(Stop::Quiet) => {
                self.finished = true;
                return Ok(());
            }
            Err(Stop::Raise(error)) => {
                // the rows read before the error come first (their own errors too)
                match self.inner.end_of_events() {
                    Some(txn) if !txn.rows.is_empty() => {
                        self.after_rows = Some(error);
                        txn
                    }
                    _ => return Err(error),
                }
            }
        };
        if txn.rows.is_empty() && !self.per_transaction {
            let gtid = txn
                .gtid
                .as_ref()
                .map(|g| PyString::new(py, g).into_any().unbind());
            return self.ended(py, &txn, gtid);
        }
        let gtid = txn
            .gtid
            .as_ref()
            .map(|g| PyString::new(py, g).into_any().unbind());
        self.cursor = Some(Cursor {
            txn,
            gtid,
            item: 0,
            base: 0,
            first: 0,
            window: self.window,
        });
        Ok(())
    }

    /// Decode the next window of rows; false when the transaction has no more.
    fn decode_window(&mut self, py: Python<'_>) -> PyResult<bool> {
        let path = self.inner.path.clone();
        let cursor = self.cursor.as_mut().expect("a transaction being decoded");
        let Some(item) = cursor.txn.rows.get(cursor.item) else {
            return Ok(false);
        };
        let table = checked_table(item).map_err(|e| raise(py, &path, e))?;
        let key = Arc::as_ptr(table) as usize;
        if !self.layouts.contains_key(&key) {
            if self.layouts.len() >= LAYOUT_LIMIT {
                self.layouts.clear();
            }
            let values = TableValues {
                _entry: table.clone(),
                layout: RowLayout::of_layout(py, &table.layout, &table.codec_names)?,
                database: PyString::new(py, &table.layout.database).unbind(),
                table: PyString::new(py, &table.layout.table).unbind(),
            };
            self.layouts.insert(key, values);
        }
        let values = self.layouts.get_mut(&key).expect("just made");
        let op = operation(item.type_code).unwrap_or(Operation::Insert);
        let op_name = &self.ops[op as usize];
        let (buf, total) = images(item, &path, cursor.base, cursor.window)?;
        let (rows, failure) = values.layout.decode(
            py,
            op,
            &buf,
            &item.before,
            item.after.as_deref(),
            item.type_code == PARTIAL_UPDATE_ROWS_EVENT,
            is_pre_ga(item.type_code),
        )?;
        let reached_end = cursor.base + buf.len() as u64 >= total;
        let held = matches!(item.data, RowsBytes::Held(..));
        if let (Some((offset, error)), true) = (&failure, held) {
            // `iter_rows` decodes a held event whole: none of its rows come out
            let at = item.rows_offset + *offset as u64;
            let error = error.clone_ref(py);
            return Err(row_failure(py, &path, table, at, 0, error));
        }
        let count = rows.len();
        if count > 0 {
            // what every row of the event shares, made once
            let shared = [
                self.file.bind(py).clone().into_any(),
                item.pos.into_pyobject(py)?.into_any(),
                (item.pos + u64::from(item.length))
                    .into_pyobject(py)?
                    .into_any(),
                item.timestamp.into_pyobject(py)?.into_any(),
                item.server_id.into_pyobject(py)?.into_any(),
                match &cursor.gtid {
                    Some(g) => g.bind(py).clone(),
                    None => py.None().into_bound(py),
                },
                values.database.bind(py).clone().into_any(),
                values.table.bind(py).clone().into_any(),
                op_name.bind(py).clone().into_any(),
            ];
            for (index, (before, after)) in rows.into_iter().enumerate() {
                let [file, pos, next_pos, timestamp, server_id, gtid, database, table, op] =
                    shared.clone();
                let change = self.change.make(
                    py,
                    [
                        file,
                        pos,
                        next_pos,
                        (cursor.first + index).into_pyobject(py)?.into_any(),
                        timestamp,
                        server_id,
                        gtid,
                        database,
                        table,
                        op,
                        before,
                        after,
                    ],
                )?;
                self.ready.push_back(change.unbind());
            }
        }
        let window_first = cursor.first;
        cursor.first += count;
        match failure {
            Some((offset, error)) if reached_end => {
                let at = item.rows_offset + cursor.base + offset as u64;
                return Err(row_failure(py, &path, table, at, window_first, error));
            }
            Some((offset, _)) => {
                // a row cut by the window's end: read again from its start
                if offset == 0 {
                    cursor.window *= 2;
                }
                cursor.base += offset as u64;
            }
            None if reached_end => {
                cursor.item += 1;
                (cursor.base, cursor.first, cursor.window) = (0, 0, self.window);
            }
            None => cursor.base += buf.len() as u64,
        }
        Ok(true)
    }
}

/// The event's table map, which must exist and be as wide as the event (`rows.checked_table`).
fn checked_table(item: &RowsItem) -> Result<&Arc<TableEntry>, Error> {
    let Some(table) = &item.table else {
        return Err(Error::corrupt(
            item.pos,
            format!(
                "rows event for table id {} without a table map before it \
                 (start reading at an earlier position)",
                item.table_id
            ),
        ));
    };
    if table.width < item.width {
        return Err(Error::corrupt(
            item.pos,
            format!(
                "rows event has {} columns, its table map {} has {}",
                item.width, table.qualified, table.width
            ),
        ));
    }
    Ok(table)
}

/// An item's row images from `base`: all of them when held (`iter_rows`
/// decodes a held event whole), else up to `window` bytes; and their total size.
fn images<'a>(
    item: &'a RowsItem,
    path: &str,
    base: u64,
    window: u64,
) -> PyResult<(Cow<'a, [u8]>, u64)> {
    match &item.data {
        RowsBytes::Held(data, start) => {
            let all = data.get(*start..).unwrap_or(&[]);
            let from = usize::try_from(base).unwrap_or(usize::MAX).min(all.len());
            Ok((Cow::Borrowed(&all[from..]), all.len() as u64))
        }
        RowsBytes::InFile { end } => {
            let file = Window {
                path,
                start: item.rows_offset,
                total: end.saturating_sub(item.rows_offset),
            };
            Ok((Cow::Owned(file.read(base, window)?), file.total))
        }
    }
}

/// `rows.native_failure`: the reference's error for a row that failed at
/// file offset `at`, in a window whose first row has index `window_first`.
fn row_failure(
    py: Python<'_>,
    path: &str,
    table: &TableEntry,
    at: u64,
    window_first: usize,
    error: PyErr,
) -> PyErr {
    let facts = error
        .value(py)
        .getattr("args")
        .and_then(|a| a.extract::<(usize, usize, bool, String)>());
    let Ok((_, index, unsupported, detail)) = facts else {
        return error;
    };
    let name = &table.qualified;
    let row = window_first + index;
    let (kind, text) = if unsupported {
        (ErrorKind::UnsupportedFeature, format!("{name}: {detail}"))
    } else {
        (
            ErrorKind::CorruptEvent,
            format!("row {row} of {name}: {detail}"),
        )
    };
    let e = raise(py, path, Error::new(kind, at, text));
    e.set_cause(py, error.cause(py));
    e
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChangeValues>()?;
    m.add_class::<CommitMark>()?;
    Ok(())
}
