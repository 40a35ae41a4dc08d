//! Python glue for `sink::dump`: `dump_file` prints one binlog as mysqlbinlog
//! text, or says why the Python printer must; `dump_stream` prints a live
//! server's binlog in one pass as it arrives, up to the first event the
//! Python printer must print (which then takes the rest of the file).
//!
//! Strategy: the text goes to the caller's `write(bytes)` in chunks of about
//! 1 MB (the caller spools it, so a file refused half-way shows nothing).
//! Local time, charset names and MySQL JSON are asked of Python (`text.py`
//! `_timestamp`, `collation_names.charset_name`, `rowtext.json_text`): one
//! place each. Timestamps are cached per second by the printer.

use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::reader::open_source;
use super::text::{append_bytes, PyJson};
use crate::framing::{Framer, Options};
use crate::rowimage::{ValueError, ValueResult};
use crate::sink::dump::{DumpHost, DumpOptions, DumpPrinter, GtidMark, Refused};
use crate::sink::text::JsonText;
use crate::source::FileSource;

const CHUNK: usize = 1 << 20;

struct PyHost<'a, 'py> {
    timestamp: &'a Bound<'py, PyAny>,
    micro_timestamp: &'a Bound<'py, PyAny>,
    charsets: &'a [Option<String>],
    json: PyJson<'a, 'py>,
    /// The exception a Python callback raised (Ctrl-C, SIGTERM, ...): raised
    /// once the text printed before it is written.
    failed: Option<PyErr>,
    /// Where the bytes of events printed as BINLOG blocks are read again.
    binlog: Binlog<'a, 'py>,
    /// The output (a huge event's lines go there as they are made).
    write: &'a Bound<'py, PyAny>,
}

/// The binlog being printed, for events' bytes read again.
enum Binlog<'a, 'py> {
    /// A regular file (opened when first needed).
    File(&'a str, Option<std::fs::File>),
    /// A live server's binlog (`live.source.LiveFile`), which keeps them (`raw_event`).
    Live(&'a Bound<'py, PyAny>),
}

impl PyHost<'_, '_> {
    fn fail(&mut self, e: PyErr) {
        self.failed.get_or_insert(e);
    }
}

impl PyHost<'_, '_> {
    /// A JSON helper's result; an interruption (Ctrl-C, SIGTERM: not an
    /// `Exception`) is kept to be raised, not taken for JSON it cannot print.
    fn json_result(
        &mut self,
        result: PyResult<Bound<'_, PyAny>>,
        out: &mut Vec<u8>,
    ) -> ValueResult {
        match result {
            Err(e) if !e.is_instance_of::<PyException>(self.json.py) => {
                self.fail(e);
                Err(ValueError::corrupt("interrupted"))
            }
            result => append_bytes(result, out),
        }
    }
}

impl JsonText for PyHost<'_, '_> {
    fn document(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> ValueResult {
        let py = self.json.py;
        let result = self
            .json
            .document
            .bind(py)
            .call1((PyBytes::new(py, bytes),));
        self.json_result(result, out)
    }

    fn diff(&mut self, index: usize, bytes: &[u8], out: &mut Vec<u8>) -> ValueResult {
        let py = self.json.py;
        let result = self
            .json
            .diff
            .bind(py)
            .call1((PyBytes::new(py, bytes), index));
        self.json_result(result, out)
    }
}

impl DumpHost for PyHost<'_, '_> {
    fn timestamp(&mut self, seconds: u32, out: &mut Vec<u8>) {
        match self
            .timestamp
            .call1((seconds,))
            .and_then(|t| t.extract::<String>())
        {
            Ok(text) => out.extend_from_slice(text.as_bytes()),
            Err(e) => self.fail(e),
        }
    }

    fn charset_name(&mut self, collation: u16) -> Option<String> {
        self.charsets.get(collation as usize).cloned().flatten()
    }

    fn event_bytes(&mut self, pos: u64, length: u32, out: &mut Vec<u8>) -> bool {
        use std::os::unix::fs::FileExt;
        match &mut self.binlog {
            Binlog::File(path, file) => {
                if file.is_none() {
                    *file = std::fs::File::open(*path).ok();
                }
                let Some(file) = file.as_ref() else {
                    return false;
                };
                let start = out.len();
                out.resize(start + length as usize, 0);
                file.read_exact_at(&mut out[start..], pos).is_ok()
            }
            Binlog::Live(live) => match live.call_method1("raw_event", (pos, length)) {
                Ok(raw) => match raw.extract::<&[u8]>() {
                    Ok(bytes) => {
                        out.extend_from_slice(bytes);
                        true
                    }
                    Err(_) => false, // None: no longer held
                },
                Err(e) => {
                    self.fail(e);
                    false
                }
            },
        }
    }

    fn emit(&mut self, text: &[u8]) -> bool {
        self.write
            .call1((PyBytes::new(self.json.py, text),))
            .is_ok()
    }

    fn micro_timestamp(&mut self, micros: u64) -> String {
        match self
            .micro_timestamp
            .call1((micros,))
            .and_then(|t| t.extract::<String>())
        {
            Ok(text) => text,
            Err(e) => {
                self.fail(e);
                String::new()
            }
        }
    }
}

/// The printing options, as `TextPrinter._native_arguments` gives them:
/// (verbose, short form, --base64-output, row counts, skip Annotate_rows,
/// MySQL events as ignorable, a huge event's first window, start, stop,
/// show the first format description before the start).
#[derive(FromPyObject)]
struct PrintOptions(
    u8,
    bool,
    String,
    bool,
    bool,
    bool,
    u64,
    Option<u64>,
    Option<u64>,
    bool,
);

impl From<PrintOptions> for DumpOptions {
    fn from(o: PrintOptions) -> Self {
        DumpOptions {
            verbose: o.0,
            short_form: o.1,
            base64_auto: o.2 == "auto",
            print_row_count: o.3,
            skip_annotate_row_events: o.4,
            mysql_events_ignorable: o.5,
            window: o.6,
            start: o.7,
            stop: o.8,
            show_head_fde: o.9,
        }
    }
}

/// What Python does for the printer: (local time of a second, of a
/// microsecond timestamp, charset names by collation, MySQL JSON text, JSON
/// diff text).
#[derive(FromPyObject)]
struct Helpers<'py>(
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Vec<Option<String>>,
    Py<PyAny>,
    Py<PyAny>,
);

impl<'py> Helpers<'py> {
    fn host<'a>(
        &'a self,
        py: Python<'py>,
        binlog: Binlog<'a, 'py>,
        write: &'a Bound<'py, PyAny>,
    ) -> PyHost<'a, 'py> {
        PyHost {
            timestamp: &self.0,
            micro_timestamp: &self.1,
            charsets: &self.2,
            json: PyJson {
                py,
                document: &self.3,
                diff: &self.4,
            },
            failed: None,
            binlog,
            write,
        }
    }
}

/// Print `path` (a regular, uncompressed binlog) with the options given,
/// in two passes: the first finds whether every event prints natively
/// (nothing is written), then `begin(gtid_trail)` is called, which may
/// return an offset to stop before (the GTID checks ending the run there),
/// and the second writes the text through `write(bytes)`. `gtid_trail`: the
/// first pass's Gtid lists `("list", pos, timestamp, [(domain, server_id,
/// seq_no)])` and GTIDs `("gtid", pos, domain, server_id, seq_no)`. Returns
/// (None, whether a MySQL GTID was printed) when printed, else (why the
/// Python printer must print the file, False): then nothing was written.
#[pyfunction]
fn dump_file(
    py: Python<'_>,
    path: &str,
    options: PrintOptions,
    helpers: Helpers<'_>,
    large_event_bytes: u64,
    begin: Bound<'_, PyAny>,
    write: Bound<'_, PyAny>,
) -> PyResult<(Option<String>, bool)> {
    let options = DumpOptions::from(options);
    let mut host = helpers.host(py, Binlog::File(path, None), &write);
    let mut pass = Pass {
        path,
        options: &options,
        large_event_bytes,
    };
    let (mut end, trail) = match pass.run(&mut host, None, &mut |_| Ok(()))? {
        Ok((end, _, trail)) => (end, trail),
        Err(why) => return Ok((Some(why), false)),
    };
    if let Some(e) = host.failed.take() {
        return Err(e);
    }
    let marks = trail_list(py, trail)?;
    if let Some(limit) = begin.call1((marks,))?.extract::<Option<u64>>()? {
        end = end.min(limit);
    }
    let mut emit = |bytes: &[u8]| -> PyResult<()> {
        write.call1((PyBytes::new(py, bytes),))?;
        Ok(())
    };
    match pass.run(&mut host, Some(end), &mut emit)? {
        Ok((_, printed_mysql_gtid, _)) => match host.failed.take() {
            None => Ok((None, printed_mysql_gtid)),
            Some(e) => Err(e),
        },
        Err(why) => Err(PyRuntimeError::new_err(format!(
            "{path}: the file changed while it was printed ({why})"
        ))),
    }
}

/// What a walk reached: the offset after its last event, whether a MySQL
/// GTID was printed, and the GTID trail (`DumpPrinter::gtid_trail`).
type Walked = (u64, bool, Vec<GtidMark>);

/// One walk over the file.
struct Pass<'a> {
    path: &'a str,
    options: &'a DumpOptions,
    large_event_bytes: u64,
}

impl Pass<'_> {
    /// The checking pass (`end` None: text dropped) or the printing pass up
    /// to the end the checking pass reached. Ok(Err(why)): refused.
    fn run(
        &mut self,
        host: &mut PyHost<'_, '_>,
        end: Option<u64>,
        emit: &mut dyn FnMut(&[u8]) -> PyResult<()>,
    ) -> PyResult<Result<Walked, String>> {
        let source = match FileSource::open(self.path) {
            Ok(s) => s,
            Err(e) => return Ok(Err(format!("cannot open: {e}"))),
        };
        let opts = Options {
            large_event_bytes: self.large_event_bytes,
            ..Options::default()
        };
        let mut framer = Framer::new(source, opts);
        let checking = end.is_none();
        let mut printer = DumpPrinter::new(self.options.clone(), host, checking);
        let mut reached = 4;
        loop {
            if end.is_some_and(|end| reached >= end) {
                break;
            }
            let frame = match framer.next() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => return Ok(Err(format!("{}: {}", e.offset, e.detail))),
            };
            if framer.warning().is_some() {
                return Ok(Err("checksum warning".into()));
            }
            let alg = framer.pending_alg();
            if let Err(refused) = printer.event(&frame, framer.raw(), framer.format(), alg) {
                return Ok(Err(refusal_text(&refused)));
            }
            reached = frame.next_pos();
            if printer.stopped {
                break;
            }
            if checking {
                printer.out.clear();
            } else if printer.out.len() >= CHUNK {
                emit(&printer.out)?;
                printer.out.clear();
            }
        }
        if checking && !printer.stopped && (framer.partial_tail || framer.encrypted) {
            return Ok(Err("partial or encrypted file".into()));
        }
        if printer.annotate_pending() {
            return Ok(Err("Annotate_rows left for the next file".into()));
        }
        if !printer.out.is_empty() {
            emit(&printer.out)?;
        }
        let trail = std::mem::take(&mut printer.gtid_trail);
        Ok(Ok((reached, printer.printed_mysql_gtid, trail)))
    }
}

fn refusal_text(refused: &Refused) -> String {
    match refused {
        Refused::Unsupported(code, pos) => format!("event type {code} at {pos}"),
        Refused::Failed(e) => format!("{}: {}", e.offset, e.detail),
        Refused::Rows(pos) => format!("rows at {pos}"),
    }
}

/// How a live binlog's printing ended (`dump_stream`'s first item).
const PRINTED: &str = "printed";
const STOPPED: &str = "stopped";
const CHECKED: &str = "checked";
const REFUSED: &str = "refused";
const RAISED: &str = "raised";

/// Print a live server's binlog (`stream`, a `live.source.LiveFile` named
/// `name`) in one pass, as it arrives: the text of whole events goes to
/// `write(bytes)` in chunks of about 1 MB, and whenever the next event is
/// not here yet (so a follower sees each event received). Before text is
/// written, the Gtid lists and GTIDs it shows (`dump_file`'s trail) are
/// given to `check(trail)`, which returns the offset of the event the GTID
/// checks end the run at, or None; the text stops before that event.
///
/// Returns (how, offset, whether a MySQL GTID was printed, exception):
/// ("printed", end) at the end of the file; ("stopped", pos) at the stop
/// position; ("checked", pos) where the checks ended the run; ("refused",
/// pos) at the first event this printer leaves to the Python printer, whose
/// text is not written: the caller prints from there on (the events before
/// `pos`, read again silently, give the Python printer its state);
/// ("raised", pos, _, exception): what the stream or a callback raised (a
/// lost server, Ctrl-C), for the caller to raise, the text of the events
/// before it written.
#[pyfunction]
fn dump_stream(
    py: Python<'_>,
    stream: Bound<'_, PyAny>,
    name: &str,
    options: PrintOptions,
    helpers: Helpers<'_>,
    check: Option<Bound<'_, PyAny>>,
    write: Bound<'_, PyAny>,
) -> PyResult<(&'static str, u64, bool, Option<Py<PyAny>>)> {
    let options = DumpOptions::from(options);
    let mut host = helpers.host(py, Binlog::Live(&stream), &write);
    let (source, stream_error) = open_source(name, Some(stream.clone().unbind()))?;
    let mut framer = Framer::new(source, Options::default());
    let mut printer = DumpPrinter::new(options, &mut host, false);
    printer.record_trail = true;
    let mut shown = Shown {
        check: check.as_ref(),
        write: &write,
        marks: Vec::new(),
    };
    let end = loop {
        if !framer.next_is_held() && !printer.out.is_empty() {
            // the next read may wait for the server: what is printed goes out first
            if let Some(pos) = shown.flush(&mut printer)? {
                break (CHECKED, pos, None);
            }
        }
        let at = framer.position();
        let before = printer.out.len();
        let frame = match framer.next() {
            Ok(Some(frame)) => frame,
            Ok(None) if framer.partial_tail || framer.encrypted || printer.annotate_pending() => {
                // left to the Python printer: its warning, its error, or the
                // Annotate_rows it carries into the next file
                break (REFUSED, framer.position(), None);
            }
            Ok(None) => break (PRINTED, framer.position(), None),
            Err(_) => match stream_error.lock().ok().and_then(|mut e| e.take()) {
                Some(raised) => break (RAISED, at, Some(raised)),
                // the Python reader reports it, with the file's name
                None => break (REFUSED, at, None),
            },
        };
        let trail = printer.gtid_trail.len();
        let alg = framer.pending_alg();
        let printed = printer.event(&frame, framer.raw(), framer.format(), alg);
        let raised = printer.host_mut().failed.take();
        if printed.is_err() || raised.is_some() {
            printer.out.truncate(before);
            printer.gtid_trail.truncate(trail);
            match raised {
                Some(raised) => break (RAISED, frame.pos, Some(raised)),
                None => break (REFUSED, frame.pos, None),
            }
        }
        // (the trail and its marks are emptied together: a new entry is this event's)
        shown.marks.resize(printer.gtid_trail.len(), before);
        if printer.stopped {
            break (STOPPED, frame.pos, None);
        }
        if printer.out.len() >= CHUNK {
            if let Some(pos) = shown.flush(&mut printer)? {
                break (CHECKED, pos, None);
            }
        }
    };
    // the text of every event before the end is written (unless the checks end it sooner)
    let (how, pos, raised) = match end {
        (CHECKED, ..) => end,
        (how, pos, raised) => match shown.flush(&mut printer)? {
            Some(checked) => (CHECKED, checked, None),
            None => (how, pos, raised),
        },
    };
    let raised = raised.map(|e| e.into_value(py).into_any());
    Ok((how, pos, printer.printed_mysql_gtid, raised))
}

/// What `dump_stream` has printed and not yet written, and the GTID checks.
struct Shown<'a, 'py> {
    check: Option<&'a Bound<'py, PyAny>>,
    write: &'a Bound<'py, PyAny>,
    /// For each entry of the printer's GTID trail: where its event's text begins in `out`.
    marks: Vec<usize>,
}

impl Shown<'_, '_> {
    /// Check the trail, then write the text up to where the checks end the
    /// run (Some(that event's offset)) or all of it (None).
    fn flush<H: DumpHost>(&mut self, printer: &mut DumpPrinter<'_, H>) -> PyResult<Option<u64>> {
        let mut limit = None;
        if let Some(check) = self.check.filter(|_| !printer.gtid_trail.is_empty()) {
            let trail = std::mem::take(&mut printer.gtid_trail);
            let positions: Vec<u64> = trail.iter().map(GtidMark::pos).collect();
            let marks = trail_list(check.py(), trail)?;
            if let Some(pos) = check.call1((marks,))?.extract::<Option<u64>>()? {
                // the checks name one of the events given: its text and the rest are dropped
                let index = positions.iter().position(|&p| p == pos).unwrap_or(0);
                printer.out.truncate(self.marks[index]);
                limit = Some(pos);
            }
        }
        printer.gtid_trail.clear();
        self.marks.clear();
        if !printer.out.is_empty() {
            self.write
                .call1((PyBytes::new(self.write.py(), &printer.out),))?;
            printer.out.clear();
        }
        Ok(limit)
    }
}

/// The GTID trail as `dump_file` gives it to Python.
fn trail_list(py: Python<'_>, trail: Vec<GtidMark>) -> PyResult<Bound<'_, PyList>> {
    let marks = PyList::empty(py);
    for mark in trail {
        match mark {
            GtidMark::List {
                pos,
                timestamp,
                gtids,
            } => marks.append(("list", pos, timestamp, gtids))?,
            GtidMark::Gtid {
                pos,
                domain,
                server_id,
                seq_no,
            } => marks.append(("gtid", pos, domain, server_id, seq_no))?,
        }
    }
    Ok(marks)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dump_stream, m)?)?;
    m.add_function(wrap_pyfunction!(dump_file, m)?)?;
    Ok(())
}
