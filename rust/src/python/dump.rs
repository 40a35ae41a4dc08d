//! Python glue for `sink::dump`: `dump_file` prints one binlog as mysqlbinlog
//! text, or says why the Python printer must.
//!
//! Strategy: the text goes to the caller's `write(bytes)` in chunks of about
//! 1 MB (the caller spools it, so a file refused half-way shows nothing).
//! Local time, charset names and MySQL JSON are asked of Python (`text.py`
//! `_timestamp`, `collation_names.charset_name`, `rowtext.json_text`): one
//! place each. Timestamps are cached per second by the printer.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::text::PyJson;
use crate::framing::{Framer, Options};
use crate::rowimage::ValueResult;
use crate::sink::dump::{DumpHost, DumpOptions, DumpPrinter, GtidMark, Refused};
use crate::sink::text::JsonText;
use crate::source::FileSource;

const CHUNK: usize = 1 << 20;

struct PyHost<'a, 'py> {
    timestamp: &'a Bound<'py, PyAny>,
    micro_timestamp: &'a Bound<'py, PyAny>,
    charsets: &'a [Option<String>],
    json: PyJson<'a, 'py>,
    /// A Python callback failed: the file goes to the Python printer, which fails alike.
    failed: bool,
    /// The binlog, for the bytes of events printed as BINLOG blocks.
    path: &'a str,
    file: Option<std::fs::File>,
    /// The output (a huge event's lines go there as they are made).
    write: &'a Bound<'py, PyAny>,
}

impl JsonText for PyHost<'_, '_> {
    fn document(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> ValueResult {
        self.json.document(bytes, out)
    }

    fn diff(&mut self, index: usize, bytes: &[u8], out: &mut Vec<u8>) -> ValueResult {
        self.json.diff(index, bytes, out)
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
            Err(_) => self.failed = true,
        }
    }

    fn charset_name(&mut self, collation: u16) -> Option<String> {
        self.charsets.get(collation as usize).cloned().flatten()
    }

    fn event_bytes(&mut self, pos: u64, length: u32, out: &mut Vec<u8>) -> bool {
        use std::os::unix::fs::FileExt;
        if self.file.is_none() {
            self.file = std::fs::File::open(self.path).ok();
        }
        let Some(file) = self.file.as_ref() else {
            return false;
        };
        let start = out.len();
        out.resize(start + length as usize, 0);
        file.read_exact_at(&mut out[start..], pos).is_ok()
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
            Err(_) => {
                self.failed = true;
                String::new()
            }
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
#[pyo3(signature = (path, verbose, short_form, base64_output, print_row_count,
                    skip_annotate_row_events, mysql_events_ignorable, large_event_bytes, window,
                    start, stop, show_head_fde,
                    timestamp, micro_timestamp, charsets, json_text, json_diff_text, begin,
                    write))]
#[allow(clippy::too_many_arguments)]
fn dump_file(
    py: Python<'_>,
    path: &str,
    verbose: u8,
    short_form: bool,
    base64_output: &str,
    print_row_count: bool,
    skip_annotate_row_events: bool,
    mysql_events_ignorable: bool,
    large_event_bytes: u64,
    window: u64,
    start: Option<u64>,
    stop: Option<u64>,
    show_head_fde: bool,
    timestamp: Bound<'_, PyAny>,
    micro_timestamp: Bound<'_, PyAny>,
    charsets: Vec<Option<String>>,
    json_text: Py<PyAny>,
    json_diff_text: Py<PyAny>,
    begin: Bound<'_, PyAny>,
    write: Bound<'_, PyAny>,
) -> PyResult<(Option<String>, bool)> {
    let options = DumpOptions {
        verbose,
        short_form,
        base64_auto: base64_output == "auto",
        print_row_count,
        skip_annotate_row_events,
        mysql_events_ignorable,
        window,
        start,
        stop,
        show_head_fde,
    };
    let mut host = PyHost {
        timestamp: &timestamp,
        micro_timestamp: &micro_timestamp,
        charsets: &charsets,
        json: PyJson {
            py,
            document: &json_text,
            diff: &json_diff_text,
        },
        failed: false,
        path,
        file: None,
        write: &write,
    };
    let mut pass = Pass {
        path,
        options: &options,
        large_event_bytes,
    };
    let (mut end, trail) = match pass.run(&mut host, None, &mut |_| Ok(()))? {
        Ok((end, _, trail)) => (end, trail),
        Err(why) => return Ok((Some(why), false)),
    };
    if host.failed {
        return Ok((Some("a Python callback failed".into()), false));
    }
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
    if let Some(limit) = begin.call1((marks,))?.extract::<Option<u64>>()? {
        end = end.min(limit);
    }
    let mut emit = |bytes: &[u8]| -> PyResult<()> {
        write.call1((PyBytes::new(py, bytes),))?;
        Ok(())
    };
    match pass.run(&mut host, Some(end), &mut emit)? {
        Ok((_, printed_mysql_gtid, _)) if !host.failed => Ok((None, printed_mysql_gtid)),
        Ok(_) => Err(PyRuntimeError::new_err(format!(
            "{path}: a Python callback failed while printing"
        ))),
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
                return Ok(Err(match refused {
                    Refused::Unsupported(code, pos) => format!("event type {code} at {pos}"),
                    Refused::Failed(e) => format!("{}: {}", e.offset, e.detail),
                    Refused::Rows(pos) => format!("rows at {pos}"),
                }));
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(dump_file, m)?)?;
    Ok(())
}
