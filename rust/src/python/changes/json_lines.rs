//! `binlake dump --format json` of one whole file, natively: `JsonLinesReader`.
//!
//! Strategy: the changes loop's framing, decoders and Python reference are
//! reused as the events view uses them (`EventsView`), without grouping
//! transactions: each event becomes its line as soon as it is read (header
//! fields, then the `info` the events view writes or the reference's
//! `last`, then its rows through `sink::json::JsonRows`), in chunks of
//! about 1 MB. The reference (`check`) follows the schema: it sees every
//! event not decoded here, the DDL among the QUERY events, and each distinct
//! table map, whose completed fields it describes (`json_fields`).
//!
//! Two stages: this thread reads a chunk of events and writes their lines,
//! except the rows of rows events of at least `JOB_BYTES`, which worker
//! threads format while the next chunk is read; a chunk is handed out once
//! its rows are in, in order. A huge rows event (left in its file by the
//! framer) is read through a growing window twice: once to check that every
//! row writes, then to write them a chunk at a time, never held whole.
//!
//! Rule: nothing is guessed. Where this reader cannot write an event as
//! the reference does (a read or decode error, a partial JSON update, a
//! value the reference refuses) it stops before that event and says why
//! (`refused`); `events` lines are written (a worker's refusal cuts its
//! chunk at that event), and the caller has the reference dump the file
//! from that event on, so its output and its errors are the reference's own.

use std::collections::HashMap;
use std::sync::{mpsc, Arc};

use pyo3::prelude::*;

use super::{
    ChangesReader, Decoded, GilHelper, RowsBytes, RowsItem, Shared, Stop, TableEntry, View,
};
use crate::constants::*;
use crate::events::{self, QueryKind};
use crate::framing::{Frame, LARGE_EVENT_BYTES};
use crate::rowimage::{decode_row, decode_rows, Images, Operation, RowsData};
use crate::sink::arrow::TextHelper;
use crate::sink::events as info;
use crate::sink::json::{push_line_head, push_table_map_head, JsonRows, LineHead};
use crate::transaction::is_query;

use super::super::arrow::PyHelper;
use super::super::events::decoded_natively;

/// Lines handed out at a time (about).
const CHUNK: usize = 1 << 20;
/// Rows data of a rows event from which a worker formats its rows.
const JOB_BYTES: usize = 2 << 10;
/// Rows data handed to the workers per chunk, at most (about).
const CHUNK_JOB_BYTES: usize = 4 << 20;

/// One rows event's rows, for a worker.
struct RowsJob {
    id: u64,
    table: Arc<TableEntry>,
    view: Arc<View>,
    type_code: u8,
    data: Vec<u8>,
    start: usize,
}

/// Where a worker's rows go in a chunk's text.
struct Hole {
    /// Where the event's line starts (a refusal cuts the chunk there).
    line_start: usize,
    at: usize,
    job: u64,
    /// The event's number in the file.
    event: u64,
}

/// Lines read but not handed out yet.
#[derive(Default)]
struct Chunk {
    text: Vec<u8>,
    holes: Vec<Hole>,
    /// Its lines.
    events: u64,
    /// Why reading stopped after it, if the reference must go on from there.
    refused: Option<String>,
}

/// What reading one event did.
enum Line {
    Written,
    /// A huge rows event's line is begun: its rows follow (`Huge`).
    Huge,
    End,
}

/// A huge rows event's rows, read through a growing window from its file.
struct Huge {
    table: Arc<TableEntry>,
    view: Arc<View>,
    type_code: u8,
    path: Arc<str>,
    /// Where the row images start in the file, and their size.
    start: u64,
    total: u64,
    /// The window: its size, its bytes, where they start in the images.
    size: u64,
    buf: Vec<u8>,
    base: u64,
    /// Where the next row starts in `buf`.
    pos: usize,
    rows: usize,
}

impl Huge {
    /// Back to the first row (after the checking pass).
    fn rewind(&mut self) {
        (self.buf, self.base, self.pos, self.rows) = (Vec::new(), 0, 0, 0);
    }

    fn read(&mut self, from: u64) -> Result<(), String> {
        let window = super::Window {
            path: &self.path,
            start: self.start,
            total: self.total,
        };
        self.buf = window.read(from, self.size).map_err(|e| e.to_string())?;
        (self.base, self.pos) = (from, 0);
        Ok(())
    }

    /// Write rows into `out` until it holds `limit` bytes (None: every row,
    /// each dropped once written, to check that all write); Ok(true) when
    /// the last row is written.
    fn stream(
        &mut self,
        helper: &mut impl TextHelper,
        out: &mut Vec<u8>,
        limit: Option<usize>,
    ) -> Result<bool, String> {
        let operation = events::rows::operation(self.type_code).unwrap_or(Operation::Insert);
        let partial = self.type_code == PARTIAL_UPDATE_ROWS_EVENT;
        loop {
            if self.base + self.pos as u64 >= self.total {
                return Ok(true);
            }
            if self.pos >= self.buf.len() {
                self.read(self.base + self.pos as u64)?;
                if self.buf.is_empty() {
                    return Err("the row images end early".into());
                }
            }
            let rows = RowsData {
                operation,
                partial,
                before: &self.view.before,
                after: &self.view.after,
                data: &self.buf[self.pos..],
            };
            let mut images = Images::new(rows.data);
            let mark = out.len();
            let table = &self.table;
            let mut sink =
                JsonRows::continuing(out, helper, &table.codecs, &table.json_keys, self.rows);
            match decode_row(&table.layout, &rows, &mut images, &mut sink) {
                Ok(()) if images.pos > 0 => {
                    self.rows += 1;
                    self.pos += images.pos;
                }
                Ok(()) => return Err("row images of no columns cannot hold the bytes left".into()),
                Err(e) => {
                    out.truncate(mark);
                    if self.base + self.buf.len() as u64 >= self.total {
                        return Err(e.detail);
                    }
                    // the row runs past the window: read again from its start
                    // (a row that does not fit a whole window doubles it)
                    if self.pos == 0 {
                        self.size = self.size.saturating_mul(2);
                    }
                    self.read(self.base + self.pos as u64)?;
                }
            }
            match limit {
                None if out.len() >= CHUNK => out.clear(),
                Some(limit) if out.len() >= limit => return Ok(false),
                _ => {}
            }
        }
    }
}

/// The JSON lines of one file (`dump --format json`), in chunks.
#[pyclass(module = "binlake._native", unsendable)]
pub struct JsonLinesReader {
    inner: ChangesReader,
    /// What every line starts alike with (`file`: the path as the caller was given it).
    head: LineHead,
    /// Lines handed out so far (every event of the file until `refused`).
    #[pyo3(get)]
    events: u64,
    /// Why the reference must write the rest of the file, from event `events` on.
    #[pyo3(get)]
    refused: Option<String>,
    /// Events read into chunks.
    read: u64,
    /// Nothing more is read (the end of the file, or a refusal).
    reading_done: bool,
    /// The chunk whose rows the workers are formatting.
    pending: Option<Chunk>,
    /// The huge rows event whose line is being written (after `pending`).
    huge: Option<Huge>,
    /// The first window of a huge event's rows (`LazyRowData.WINDOW`).
    window: u64,
    workers: Workers,
    next_job: u64,
    /// A rows event's info, written before it is merged into its line.
    scratch: Vec<u8>,
}

#[pymethods]
impl JsonLinesReader {
    /// `check`: the reference (`jsonable.EventDescriber` with the dump's
    /// schema history), called as `ChangesReader`'s is. `codecs`: collation
    /// id -> Python codec.
    #[new]
    #[pyo3(signature = (path, file, check, verify_checksums, codecs,
                        large_event_bytes=LARGE_EVENT_BYTES, window=8 << 20))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: String,
        file: String,
        check: Py<PyAny>,
        verify_checksums: bool,
        codecs: HashMap<u64, String>,
        large_event_bytes: u64,
        window: u64,
    ) -> PyResult<Self> {
        let inner = ChangesReader::whole_file(
            py,
            path,
            &file,
            check,
            verify_checksums,
            true,
            codecs,
            large_event_bytes,
        )?;

        let workers = Workers::new(inner.pool.shared.clone());
        Ok(JsonLinesReader {
            inner,
            head: LineHead::new(&file),
            events: 0,
            refused: None,
            read: 0,
            reading_done: false,
            pending: None,
            huge: None,
            window: window.max(1),
            workers,
            next_job: 0,
            scratch: Vec::with_capacity(256),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next chunk of lines (UTF-8 bytes), None when the file is done or refused.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Vec<u8>>> {
        loop {
            if self.pending.is_none() {
                if let Some(huge) = self.huge.as_mut() {
                    let mut out = Vec::with_capacity(CHUNK + (64 << 10));
                    let table = huge.table.clone();
                    let mut helper = table_helper(py, &self.inner.pool.shared, &table);
                    match huge.stream(&mut helper, &mut out, Some(CHUNK)) {
                        Ok(true) => {
                            out.extend_from_slice(b"]}\n");
                            self.huge = None;
                            self.events += 1;
                        }
                        Ok(false) => {}
                        Err(why) => {
                            // its rows all wrote a moment ago
                            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                                "{}: the file changed while it was written ({why})",
                                self.inner.path
                            )));
                        }
                    }
                    return Ok(Some(out));
                }
                if self.reading_done {
                    return Ok(None);
                }
                self.pending = Some(self.read_chunk(py));
            }
            // the next chunk is read while the workers format this one's rows
            let next = (!self.reading_done && self.huge.is_none()).then(|| self.read_chunk(py));
            let chunk = self.pending.take().unwrap_or_default();
            self.pending = next;
            let text = self.assemble(py, chunk);
            if !text.is_empty() {
                return Ok(Some(text));
            }
        }
    }
}

impl Drop for JsonLinesReader {
    fn drop(&mut self) {
        self.workers.stop();
    }
}

impl JsonLinesReader {
    /// Lines up to CHUNK bytes (or CHUNK_JOB_BYTES of rows for the workers).
    fn read_chunk(&mut self, py: Python<'_>) -> Chunk {
        let mut chunk = Chunk::default();
        let mut job_bytes = 0;
        while chunk.text.len() < CHUNK && job_bytes < CHUNK_JOB_BYTES {
            let at = chunk.text.len();
            match self.line(py, &mut chunk, &mut job_bytes) {
                Ok(Line::Written) => {
                    chunk.events += 1;
                    self.read += 1;
                }
                Ok(Line::Huge) => {
                    self.read += 1;
                    break;
                }
                Ok(Line::End) => {
                    self.reading_done = true;
                    break;
                }
                Err(why) => {
                    chunk.text.truncate(at);
                    chunk.refused = Some(why);
                    self.reading_done = true;
                    break;
                }
            }
        }
        chunk
    }

    /// A chunk's text with its rows in; a worker's refusal cuts it at that
    /// event's line, and nothing after it is handed out.
    fn assemble(&mut self, py: Python<'_>, chunk: Chunk) -> Vec<u8> {
        if chunk.holes.is_empty() {
            self.events += chunk.events;
            self.refused = chunk.refused;
            return chunk.text;
        }
        let mut out = Vec::with_capacity(chunk.text.len() * 3);
        let mut from = 0;
        for hole in &chunk.holes {
            let workers = &mut self.workers;
            let result = py.detach(|| workers.wait(hole.job));
            match result {
                Ok(rows) => {
                    out.extend_from_slice(&chunk.text[from..hole.at]);
                    out.extend_from_slice(&rows);
                    from = hole.at;
                }
                Err(why) => {
                    out.extend_from_slice(&chunk.text[from..hole.line_start]);
                    self.events = hole.event;
                    self.refused = Some(why);
                    self.pending = None;
                    self.huge = None;
                    self.reading_done = true;
                    return out;
                }
            }
        }
        out.extend_from_slice(&chunk.text[from..]);
        self.events += chunk.events;
        self.refused = chunk.refused;
        out
    }

    /// The next event's line; Ok(false) at the end of the file, Err(why) refused.
    fn line(
        &mut self,
        py: Python<'_>,
        chunk: &mut Chunk,
        job_bytes: &mut usize,
    ) -> Result<Line, String> {
        let r = &mut self.inner;
        let frame = match r.framer.next() {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(Line::End),
            Err(e) => return Err(format!("{}: {}", e.offset, e.detail)),
        };
        if r.framer.warning().is_some() {
            return Err("a checksum warning".into());
        }
        if r.last_pos == Some(frame.pos) {
            r.sub += 1;
        } else {
            (r.last_pos, r.sub, r.end_pos) = (Some(frame.pos), 0, frame.next_pos());
        }
        let code = frame.type_code;
        // a rows event's info first: decoding may move its bytes out of the framer
        self.scratch.clear();
        if events::is_rows_event(code) {
            let mut cur = frame.body(r.framer.raw());
            let post = r.framer.format().post_header_len(code);
            let large = frame.large_end.is_some();
            if let Ok(header) = events::decode_rows_header(&mut cur, code, post, large) {
                let table = r.table_maps.get(&header.table_id);
                let names = table.map(|t| (t.names.0.as_str(), t.names.1.as_str()));
                info::rows_info(&mut self.scratch, frame.checksum, &header, names);
            }
        }
        let decoded = self.decode(py, &frame).map_err(|why| stop_text(py, why))?;
        let r = &mut self.inner;
        let out = &mut chunk.text;
        let line_start = out.len();
        match decoded {
            Decoded::Rows(_, Some(item)) => {
                let line = &self.scratch;
                if line.is_empty() {
                    return Err("a rows event's header".into());
                }
                push_line_head(out, &mut self.head, &frame, line, true);
                out.extend_from_slice(b", \"rows\": ");
                if let RowsBytes::InFile { end } = item.data {
                    let mut huge = self.huge_rows(item, end)?;
                    // every row must write before any is written
                    let table = huge.table.clone();
                    let mut helper = table_helper(py, &self.inner.pool.shared, &table);
                    huge.stream(&mut helper, &mut Vec::new(), None)?;
                    huge.rewind();
                    chunk.text.push(b'[');
                    self.huge = Some(huge);
                    return Ok(Line::Huge);
                }
                let job = rows_job(item, self.next_job)?;
                if job.data.len() - job.start < JOB_BYTES {
                    let mut helper = table_helper(py, &self.inner.pool.shared, &job.table);
                    format_rows(&job, &mut helper, out)?;
                } else {
                    *job_bytes += job.data.len() - job.start;
                    chunk.holes.push(Hole {
                        line_start,
                        at: out.len(),
                        job: job.id,
                        event: self.read,
                    });
                    self.next_job += 1;
                    self.workers.submit(job);
                }
            }
            _ if code == TABLE_MAP_EVENT => {
                let entry = r.last_table.clone().ok_or("a table map not kept")?;
                let fields = entry
                    .json_fields
                    .as_deref()
                    .ok_or("a table map not described")?;
                let mut head = frame.body(r.framer.raw());
                let table_id = if r.framer.format().post_header_len(code) == 6 {
                    head.u32().map(u64::from)
                } else {
                    head.u48()
                };
                let (Ok(table_id), Ok(flags)) = (table_id, head.u16()) else {
                    return Err("a table map's head".into());
                };
                push_table_map_head(out, &mut self.head, &frame, table_id, flags, fields);
            }
            _ => {
                // the events view's own infos have no header field but MySQL's GTID flags
                let native = decoded_natively(code)
                    && !matches!(code, GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT);
                let info = &mut self.scratch;
                info.clear();
                let described = match r.events.as_mut() {
                    Some(view) if native => view
                        .describe_into(r.framer.raw(), &frame, r.framer.format(), info, false)
                        .is_some(),
                    _ => false,
                };
                if described {
                    push_line_head(out, &mut self.head, &frame, info, false);
                } else {
                    let row = r.event_row(py, &frame).map_err(|why| stop_text(py, why))?;
                    push_line_head(out, &mut self.head, &frame, row.info.as_bytes(), true);
                }
            }
        }
        chunk.text.extend_from_slice(b"}\n");
        Ok(Line::Written)
    }

    /// A huge rows event's state, or why the reference must write its rows.
    fn huge_rows(&self, item: RowsItem, end: u64) -> Result<Huge, String> {
        let (table, view) = table_view(&item)?;
        Ok(Huge {
            table,
            view,
            type_code: item.type_code,
            path: self.inner.path.clone(),
            start: item.rows_offset,
            total: end.saturating_sub(item.rows_offset),
            size: self.window,
            buf: Vec::new(),
            base: 0,
            pos: 0,
            rows: 0,
        })
    }

    /// The changes loop's decoding, with the DDL among QUERY events handed
    /// to the reference (its schema history follows it) and rows kept.
    fn decode(&mut self, py: Python<'_>, frame: &Frame) -> Result<Decoded, Stop> {
        let r = &mut self.inner;
        let code = frame.type_code;
        if is_query(code) {
            let raw = r.framer.raw();
            let mut cur = frame.body(raw);
            let kind = super::super::events::decode_query(&mut cur, code, r.framer.format())
                .map(|(q, _)| events::classify_query(&q.query));
            return match kind {
                Some(kind) if kind != QueryKind::Other => Ok(Decoded::Query(kind)),
                _ => r.other(py, frame),
            };
        }
        r.decode(py, frame, true)
    }
}

/// A rows event's job, or why the reference must write its rows.
fn rows_job(item: RowsItem, id: u64) -> Result<RowsJob, String> {
    let (table, view) = table_view(&item)?;
    let RowsBytes::Held(data, start) = item.data else {
        return Err("a huge rows event".into());
    };
    Ok(RowsJob {
        id,
        table,
        view,
        type_code: item.type_code,
        start: start.min(data.len()),
        data,
    })
}

/// A rows event's table and its plans, or why the reference must write its rows.
fn table_view(item: &RowsItem) -> Result<(Arc<TableEntry>, Arc<View>), String> {
    let table = item
        .table
        .clone()
        .ok_or("a rows event without its table map")?;
    if table.width < item.width {
        return Err("a rows event wider than its table map".into());
    }
    let view = table.view(item);
    Ok((table, view))
}

/// The `rows` list of a job, or why the reference must write it.
fn format_rows(
    job: &RowsJob,
    helper: &mut impl TextHelper,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let rows = RowsData {
        operation: events::rows::operation(job.type_code).unwrap_or(Operation::Insert),
        partial: job.type_code == PARTIAL_UPDATE_ROWS_EVENT,
        before: &job.view.before,
        after: &job.view.after,
        data: &job.data[job.start..],
    };
    let table = &job.table;
    let mut sink = JsonRows::new(out, helper, &table.codecs, &table.json_keys);
    decode_rows(&table.layout, &rows, &mut sink).map_err(|(_, _, e)| e.detail)?;
    sink.finish();
    Ok(())
}

type JobResult = (u64, Result<Vec<u8>, String>);

/// Threads formatting the rows of big rows events, started with the first.
struct Workers {
    shared: Arc<Shared>,
    jobs: Option<mpsc::Sender<RowsJob>>,
    results: Option<mpsc::Receiver<JobResult>>,
    done: HashMap<u64, Result<Vec<u8>, String>>,
    handles: Vec<std::thread::JoinHandle<()>>,
}

impl Workers {
    fn new(shared: Arc<Shared>) -> Self {
        Workers {
            shared,
            jobs: None,
            results: None,
            done: HashMap::new(),
            handles: Vec::new(),
        }
    }

    fn submit(&mut self, job: RowsJob) {
        if self.jobs.is_none() {
            self.start();
        }
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }

    fn start(&mut self) {
        let (jobs, queue) = mpsc::channel::<RowsJob>();
        let (send, results) = mpsc::channel::<JobResult>();
        let queue = Arc::new(std::sync::Mutex::new(queue));
        let count = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 4);
        self.handles = (0..count)
            .map(|_| {
                let (queue, send, shared) = (queue.clone(), send.clone(), self.shared.clone());
                std::thread::spawn(move || loop {
                    let next = queue.lock().ok().and_then(|q| q.recv().ok());
                    let Some(job) = next else { return };
                    let mut helper = GilHelper {
                        helpers: &shared.helpers,
                        codec_names: &job.table.codec_names,
                        error: None,
                    };
                    let mut out = Vec::with_capacity((job.data.len() - job.start) * 3);
                    let result = format_rows(&job, &mut helper, &mut out).map(|()| out);
                    if send.send((job.id, result)).is_err() {
                        return;
                    }
                })
            })
            .collect();
        self.jobs = Some(jobs);
        self.results = Some(results);
    }

    /// Job `id`'s rows (called without the GIL: a worker may need it).
    fn wait(&mut self, id: u64) -> Result<Vec<u8>, String> {
        loop {
            if let Some(result) = self.done.remove(&id) {
                return result;
            }
            match self.results.as_ref().map(|r| r.recv()) {
                Some(Ok((i, result))) => {
                    self.done.insert(i, result);
                }
                _ => return Err("the JSON workers stopped".into()),
            }
        }
    }

    /// No more jobs: the workers end once their queue is empty.
    fn stop(&mut self) {
        self.jobs = None;
        self.results = None;
        let handles = std::mem::take(&mut self.handles);
        if handles.is_empty() {
            return;
        }
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

/// The Python helpers of a table's values, on this thread (it holds the GIL).
fn table_helper<'a, 'py>(
    py: Python<'py>,
    shared: &'a Shared,
    table: &'a TableEntry,
) -> PyHelper<'a, 'py> {
    PyHelper {
        py,
        helpers: &shared.helpers,
        codec_names: &table.codec_names,
        error: None,
    }
}

fn stop_text(py: Python<'_>, stop: Stop) -> String {
    match stop {
        Stop::Quiet => "the end of the range".into(),
        Stop::Raise(e) => e.value(py).to_string(),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<JsonLinesReader>()?;
    Ok(())
}
