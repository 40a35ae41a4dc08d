//! Python glue for the reader: `Framer`, an iterator of raw events.
//!
//! Strategy: one flat tuple per event (ints and one `bytes`), which CPython
//! unpacks in a single opcode in `BinlogReader`; the rare extras (a
//! checksum warning under `force`, a huge event's end, an FDE's algorithm
//! byte) are read as attributes only when the tuple's last item flags them,
//! so the common event costs no attribute lookups. Given the `EventHeader`
//! class, the framer makes each event's header itself, and given the event
//! classes, the whole event of the commonest small events (`Makers`): a
//! million small events otherwise spend longer in Python `__init__`s and
//! decoders than in framing. Pipes and gzip files are read through the
//! Python stream object the reader already opened, so decompression and its
//! errors stay Python's.

use std::io::{self, Read};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple, PyType};

use super::errors::raise;
use super::slots::SlotClass;
use crate::constants::*;
use crate::error::{Error, ErrorKind};
use crate::events::{decode_mariadb_gtid, decode_rows_header, decode_xid, text};
use crate::framing::{Frame, Framer, Options, LARGE_EVENT_BYTES};
use crate::source::{FileSource, Source, StreamSource};

/// The fields of the classes the framer makes (`SlotClass` checks them).
const HEADER_FIELDS: [&str; 9] = [
    "file",
    "pos",
    "timestamp",
    "type_code",
    "server_id",
    "length",
    "log_pos",
    "flags",
    "checksum",
];
const MARIADB_GTID_FIELDS: [&str; 12] = [
    "header",
    "seq_no",
    "domain_id",
    "flags2",
    "commit_id",
    "xa_format_id",
    "xa_gtrid",
    "xa_bqual",
    "flags_extra",
    "extra_engines",
    "sa_seq_no",
    "thread_id",
];
const TABLE_MAP_FIELDS: [&str; 10] = [
    "header",
    "table_id",
    "flags",
    "database",
    "table",
    "columns",
    "primary_key",
    "default_charset",
    "optional_metadata",
    "cache",
];
const ROWS_FIELDS: [&str; 10] = [
    "header",
    "table_id",
    "flags",
    "extra_info",
    "width",
    "columns_present",
    "columns_present_after",
    "table",
    "rows_data",
    "rows_offset",
];

/// Flags in the tuple's last item.
const WARNING: u32 = 1;
const LARGE: u32 = 2;
const FDE: u32 = 4;
const INNER: u32 = 8;

pub(super) type PyErrSlot = Arc<Mutex<Option<PyErr>>>;

/// The bytes to frame: `stream` (a Python binary file object, e.g. a gzip
/// file) if given, else the file at `path`; with the slot where the stream's
/// own exception waits to be re-raised as is.
pub(super) fn open_source(
    path: &str,
    stream: Option<Py<PyAny>>,
) -> PyResult<(Box<dyn Source + Send>, PyErrSlot)> {
    let stream_error: PyErrSlot = Arc::new(Mutex::new(None));
    let source: Box<dyn Source + Send> = match stream {
        // A live server's binlog (binlake.live.source) says where its bytes continue.
        Some(obj) if Python::attach(|py| obj.bind(py).hasattr("next_event_at"))? => {
            let locate = Python::attach(|py| obj.clone_ref(py));
            let slot = stream_error.clone();
            let reader = PyStream {
                obj,
                error: stream_error.clone(),
            };
            Box::new(StreamSource::sparse(
                reader,
                Box::new(move |pos| {
                    Python::attach(|py| {
                        locate
                            .call_method1(py, "next_event_at", (pos,))
                            .and_then(|at| at.extract::<u64>(py))
                            .map_err(|e| keep_error(&slot, e))
                    })
                }),
            ))
        }
        Some(obj) => Box::new(StreamSource::new(PyStream {
            obj,
            error: stream_error.clone(),
        })),
        None => Box::new(FileSource::open(path)?),
    };
    Ok((source, stream_error))
}

/// A Python exception kept in `slot` to be re-raised as is; its text for Rust.
fn keep_error(slot: &PyErrSlot, e: PyErr) -> io::Error {
    let text = e.to_string();
    if let Ok(mut kept) = slot.lock() {
        *kept = Some(e);
    }
    io::Error::other(text)
}

/// A Python binary stream as `Read`; its exception waits in `error` to be re-raised as is.
pub(super) struct PyStream {
    pub(super) obj: Py<PyAny>,
    pub(super) error: PyErrSlot,
}

impl Read for PyStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let result = self
                .obj
                .call_method1(py, "read", (buf.len(),))
                .and_then(|data| {
                    let data = data.bind(py);
                    let bytes: &[u8] = data.extract()?;
                    let n = bytes.len().min(buf.len());
                    buf[..n].copy_from_slice(&bytes[..n]);
                    Ok(n)
                });
            result.map_err(|e| keep_error(&self.error, e))
        })
    }
}

/// The Python objects the framer makes itself (`slots::SlotClass`): every
/// event's `EventHeader`, and with `body_classes` the whole event of the
/// commonest small events (`Makers::event`).
struct Makers {
    header: SlotClass,
    /// The path as `str`, shared by every header of the file.
    file: Py<PyString>,
    bodies: Option<BodyClasses>,
}

struct BodyClasses {
    mariadb_gtid: SlotClass,
    xid: SlotClass,
    rows: SlotClass,
    /// `RowsQueryEvent`, made for ANNOTATE_ROWS.
    annotate: Option<SlotClass>,
    /// `TableMapEvent`, made for a map whose bytes the reader decoded
    /// before (`DecodeContext.table_caches`: (server is MariaDB, bytes) ->
    /// cache, whose "decoded_table_map" holds the fields), with those caches.
    table_map: Option<(SlotClass, Py<PyDict>)>,
    /// The reader's table maps by id (`DecodeContext.table_maps`): a rows
    /// event carries the one in force when it is read, as its decoder does.
    table_maps: Py<PyDict>,
}

impl Makers {
    fn header<'py>(&self, py: Python<'py>, frame: &Frame) -> PyResult<Bound<'py, PyAny>> {
        self.header.make(
            py,
            [
                self.file.bind(py).clone().into_any(),
                frame.pos.into_pyobject(py)?.into_any(),
                frame.timestamp.into_pyobject(py)?.into_any(),
                frame.type_code.into_pyobject(py)?.into_any(),
                frame.server_id.into_pyobject(py)?.into_any(),
                frame.length.into_pyobject(py)?.into_any(),
                frame.log_pos.into_pyobject(py)?.into_any(),
                frame.flags.into_pyobject(py)?.into_any(),
                frame.checksum.into_pyobject(py)?.into_any(),
            ],
        )
    }

    /// The Python event of a MariaDB GTID, an XID or an uncompressed v1/v2
    /// rows event, its body decoded by `crate::events` (the reference's
    /// twins). None whenever anything is unusual (a decoding error, bytes
    /// left over, extra row info, bitmaps of more than 64 columns): the
    /// reference decoder then reads the event, and words its errors.
    fn event<'py>(
        &self,
        py: Python<'py>,
        framer: &Framer<Box<dyn Source + Send>>,
        frame: &Frame,
        header: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(classes) = &self.bodies else {
            return Ok(None);
        };
        let header = header.clone();
        let mut cur = frame.body(framer.raw());
        let event = match frame.type_code {
            GTID_EVENT => match decode_mariadb_gtid(&mut cur) {
                Ok(g) if cur.at_end() => classes.mariadb_gtid.make(
                    py,
                    [
                        header,
                        g.seq_no.into_pyobject(py)?.into_any(),
                        g.domain_id.into_pyobject(py)?.into_any(),
                        g.flags2.into_pyobject(py)?.into_any(),
                        g.commit_id.into_pyobject(py)?.into_any(),
                        g.xa_format_id.into_pyobject(py)?.into_any(),
                        g.xa_gtrid.map(|b| PyBytes::new(py, b)).into_pyobject(py)?,
                        g.xa_bqual.map(|b| PyBytes::new(py, b)).into_pyobject(py)?,
                        g.flags_extra.into_pyobject(py)?.into_any(),
                        g.extra_engines.into_pyobject(py)?.into_any(),
                        g.sa_seq_no.into_pyobject(py)?.into_any(),
                        g.thread_id.into_pyobject(py)?.into_any(),
                    ],
                )?,
                _ => return Ok(None),
            },
            XID_EVENT => match decode_xid(&mut cur) {
                Ok(xid) if cur.at_end() => classes
                    .xid
                    .make(py, [header, xid.into_pyobject(py)?.into_any()])?,
                _ => return Ok(None),
            },
            WRITE_ROWS_EVENT_V1..=DELETE_ROWS_EVENT_V1 | WRITE_ROWS_EVENT..=DELETE_ROWS_EVENT => {
                let post = framer.format().post_header_len(frame.type_code);
                let rows = match decode_rows_header(&mut cur, frame.type_code, post, false) {
                    Ok(rows) if cur.at_end() => rows,
                    _ => return Ok(None),
                };
                let extra = &rows.extra;
                if extra.ndb.is_some() || extra.partition_id.is_some() {
                    return Ok(None);
                }
                let Some(present) = bitmap_int(rows.present) else {
                    return Ok(None);
                };
                let after = match rows.present_after {
                    None => None,
                    Some(bitmap) => match bitmap_int(bitmap) {
                        None => return Ok(None),
                        some => some,
                    },
                };
                let table = classes
                    .table_maps
                    .bind(py)
                    .get_item(rows.table_id)?
                    .unwrap_or_else(|| py.None().into_bound(py));
                classes.rows.make(
                    py,
                    [
                        header,
                        rows.table_id.into_pyobject(py)?.into_any(),
                        rows.flags.into_pyobject(py)?.into_any(),
                        PyDict::new(py).into_any(),
                        rows.width.into_pyobject(py)?.into_any(),
                        present.into_pyobject(py)?.into_any(),
                        after.into_pyobject(py)?.into_any(),
                        table,
                        PyBytes::new(py, &rows.data).into_any(),
                        rows.rows_offset.into_pyobject(py)?.into_any(),
                    ],
                )?
            }
            ANNOTATE_ROWS_EVENT => match &classes.annotate {
                // `decode_annotate_rows`: all its text is the statement
                Some(class) => class.make(
                    py,
                    [header, PyString::new(py, &text(cur.rest())).into_any()],
                )?,
                None => return Ok(None),
            },
            TABLE_MAP_EVENT => {
                let Some((class, caches)) = &classes.table_map else {
                    return Ok(None);
                };
                let post = framer.format().post_header_len(frame.type_code);
                let table_id = if post == 6 {
                    cur.u32().map(u64::from)
                } else {
                    cur.u48()
                };
                let (Ok(table_id), Ok(flags)) = (table_id, cur.u16()) else {
                    return Ok(None);
                };
                // table_map.py `decode_table_map`'s key: (flavour, bytes)
                let mariadb = framer.format().is_mariadb();
                let signature = (mariadb, PyBytes::new(py, cur.rest()));
                let Some(cache) = caches.bind(py).get_item(signature)? else {
                    return Ok(None); // a map not seen yet: the reference decodes it
                };
                let Some(decoded) = cache.get_item("decoded_table_map").ok() else {
                    return Ok(None);
                };
                let (fields, unread): (Bound<'py, PyTuple>, usize) = decoded.extract()?;
                if unread != 0 || fields.len() != 6 {
                    return Ok(None);
                }
                let f = |i: usize| fields.get_item(i);
                class.make(
                    py,
                    [
                        header,
                        table_id.into_pyobject(py)?.into_any(),
                        flags.into_pyobject(py)?.into_any(),
                        f(0)?,
                        f(1)?,
                        f(2)?,
                        f(3)?,
                        f(4)?,
                        f(5)?,
                        cache,
                    ],
                )?
            }
            _ => return Ok(None),
        };
        Ok(Some(event))
    }
}

/// What `FileInfo.note` keeps of the events a file's reader hands out,
/// kept here (a Python call per event less): counts by type code, the first
/// and last non-zero timestamps, the last type; and the one before the
/// last event, so that an event the caller fails to decode can be taken back.
#[derive(Clone, Copy)]
struct Noted {
    first_timestamp: Option<u32>,
    last_timestamp: Option<u32>,
    last_type: Option<u8>,
}

struct Notes {
    counts: Vec<u64>,
    /// The types in the order they first came (a Counter's key order).
    order: Vec<u8>,
    /// Events handed out made (the reader counts the others as it decodes them).
    made: Vec<u64>,
    now: Noted,
    before: Option<(u8, Noted)>,
}

impl Notes {
    fn new() -> Self {
        Notes {
            counts: vec![0; 256],
            order: Vec::new(),
            made: vec![0; 256],
            now: Noted {
                first_timestamp: None,
                last_timestamp: None,
                last_type: None,
            },
            before: None,
        }
    }

    fn note(&mut self, code: u8, timestamp: u32) {
        self.before = Some((code, self.now));
        if self.counts[code as usize] == 0 {
            self.order.push(code);
        }
        self.counts[code as usize] += 1;
        if timestamp != 0 {
            self.now.first_timestamp.get_or_insert(timestamp);
            self.now.last_timestamp = Some(timestamp);
        }
        self.now.last_type = Some(code);
    }
}

/// A columns bitmap as the int `Cursor.bitmap` makes (bit i = column i), for up to 64 columns.
fn bitmap_int(bytes: &[u8]) -> Option<u64> {
    if bytes.len() > 8 {
        return None;
    }
    let mut value = [0u8; 8];
    value[..bytes.len()].copy_from_slice(bytes);
    Some(u64::from_le_bytes(value))
}

#[pyclass(module = "binlake._native", name = "Framer", unsendable)]
pub struct PyFramer {
    framer: Framer<Box<dyn Source + Send>>,
    path: String,
    stream_error: PyErrSlot,
    large_end: Option<u64>,
    makers: Option<Makers>,
    /// Made events are handed out alone, not in a tuple, and every event is
    /// noted here (`notes`) rather than by the reader.
    direct: bool,
    notes: Notes,
}

impl PyFramer {
    fn error(&self, py: Python<'_>, error: Error) -> PyErr {
        if error.kind == ErrorKind::Io {
            if let Some(e) = self.stream_error.lock().ok().and_then(|mut s| s.take()) {
                return e;
            }
        }
        raise(py, &self.path, error)
    }
}

#[pymethods]
impl PyFramer {
    /// `stream`: a binary file object to read instead of the file at `path`
    /// (standard input, a gzip file); `path` then only names it in errors.
    /// `header_class`: `EventHeader`, to have each event's header made here.
    #[new]
    #[pyo3(signature = (path, stream=None, verify_checksums=true, force=false,
                        start_position=None, unpack_payloads=true,
                        large_event_bytes=LARGE_EVENT_BYTES, pending_alg=None,
                        header_class=None, body_classes=None, table_maps=None,
                        more_classes=None, direct=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: String,
        stream: Option<Py<PyAny>>,
        verify_checksums: bool,
        force: bool,
        start_position: Option<u64>,
        unpack_payloads: bool,
        large_event_bytes: u64,
        pending_alg: Option<u8>,
        header_class: Option<Bound<'_, PyType>>,
        body_classes: Option<(Bound<'_, PyType>, Bound<'_, PyType>, Bound<'_, PyType>)>,
        table_maps: Option<Bound<'_, PyDict>>,
        more_classes: Option<(Bound<'_, PyType>, Bound<'_, PyType>, Bound<'_, PyDict>)>,
        direct: bool,
    ) -> PyResult<Self> {
        let makers = match header_class {
            None => None,
            Some(class) => {
                let bodies = match (body_classes, table_maps) {
                    (Some((mariadb_gtid, xid, rows)), Some(table_maps)) => Some(BodyClasses {
                        mariadb_gtid: SlotClass::new(&mariadb_gtid, &MARIADB_GTID_FIELDS)?,
                        xid: SlotClass::new(&xid, &["header", "xid"])?,
                        rows: SlotClass::new(&rows, &ROWS_FIELDS)?,
                        table_maps: table_maps.unbind(),
                        annotate: match &more_classes {
                            Some((annotate, _, _)) => {
                                Some(SlotClass::new(annotate, &["header", "query"])?)
                            }
                            None => None,
                        },
                        table_map: match &more_classes {
                            Some((_, table_map, caches)) => Some((
                                SlotClass::new(table_map, &TABLE_MAP_FIELDS)?,
                                caches.clone().unbind(),
                            )),
                            None => None,
                        },
                    }),
                    _ => None,
                };
                Some(Makers {
                    header: SlotClass::new(&class, &HEADER_FIELDS)?,
                    file: PyString::new(py, &path).unbind(),
                    bodies,
                })
            }
        };
        let (source, stream_error) = open_source(&path, stream)?;
        let opts = Options {
            verify_checksums,
            force,
            start_position,
            unpack_payloads,
            large_event_bytes,
            pending_alg,
        };
        Ok(PyFramer {
            framer: Framer::new(source, opts),
            path,
            stream_error,
            large_end: None,
            makers,
            direct,
            notes: Notes::new(),
        })
    }

    /// Magic and version detection (else done by the first `next`).
    fn start(&mut self, py: Python<'_>) -> PyResult<()> {
        self.framer.start().map_err(|e| self.error(py, e))
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// (pos, timestamp, type_code, server_id, length, log_pos, flags,
    /// checksum, header_len, raw, special): `raw` runs from the header to the
    /// end of the body; `special` flags the extras to read as attributes.
    /// With a header class: (header, type_code, timestamp, header_len, raw,
    /// special, event): with `body_classes`, `event` is the whole event when
    /// `Makers::event` could make it (then `raw` is None), else None.
    /// With `direct`, a made event other than a table map (which the reader
    /// completes and registers) is handed out alone.
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let frame = match self.framer.next() {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(None),
            Err(e) => return Err(self.error(py, e)),
        };
        let mut special = 0;
        if self.framer.warning().is_some() {
            special |= WARNING;
        }
        self.large_end = frame.large_end;
        if frame.large_end.is_some() {
            special |= LARGE;
        }
        if frame.fde {
            special |= FDE;
        }
        if frame.inner {
            special |= INNER;
        }
        if let Some(makers) = &self.makers {
            let header = makers.header(py, &frame)?;
            let event = if special == 0 && !self.framer.format().permuted {
                makers.event(py, &self.framer, &frame, &header)?
            } else {
                None
            };
            if self.direct {
                self.notes.note(frame.type_code, frame.timestamp);
                if let Some(event) = &event {
                    if frame.type_code != TABLE_MAP_EVENT {
                        self.notes.made[frame.type_code as usize] += 1;
                        return Ok(Some(event.clone()));
                    }
                }
            }
            let raw = match event {
                Some(_) => None,
                None => Some(PyBytes::new(py, self.framer.raw())),
            };
            let tuple = (
                header,
                frame.type_code,
                frame.timestamp,
                frame.header_len,
                raw,
                special,
                event,
            )
                .into_pyobject(py)?;
            return Ok(Some(tuple.into_any()));
        }
        let raw = PyBytes::new(py, self.framer.raw());
        let tuple = (
            frame.pos,
            frame.timestamp,
            frame.type_code,
            frame.server_id,
            frame.length,
            frame.log_pos,
            frame.flags,
            frame.checksum,
            frame.header_len,
            raw,
            special,
        )
            .into_pyobject(py)?;
        Ok(Some(tuple.into_any()))
    }

    /// The last event handed out was not read after all (its decoding failed).
    fn unnote(&mut self) {
        if let Some((code, before)) = self.notes.before.take() {
            self.notes.counts[code as usize] -= 1;
            if self.notes.counts[code as usize] == 0 {
                self.notes.order.retain(|&c| c != code);
            }
            self.notes.now = before;
        }
    }

    /// With `direct`: ({type code: events handed out}, {type code: of them
    /// made here}, first timestamp, last timestamp, last type code).
    #[allow(clippy::type_complexity)]
    fn notes(
        &self,
    ) -> (
        Vec<(u8, u64)>,
        Vec<(u8, u64)>,
        Option<u32>,
        Option<u32>,
        Option<u8>,
    ) {
        // in the order the types first came, as the reader's Counters keep them
        let in_order = |v: &[u64]| -> Vec<(u8, u64)> {
            self.notes
                .order
                .iter()
                .map(|&code| (code, v[code as usize]))
                .filter(|&(_, n)| n > 0)
                .collect()
        };
        let now = self.notes.now;
        (
            in_order(&self.notes.counts),
            in_order(&self.notes.made),
            now.first_timestamp,
            now.last_timestamp,
            now.last_type,
        )
    }

    /// The checksum problem `force` let the last event through with, worded as `str(error)`.
    #[getter]
    fn warning(&self) -> Option<String> {
        self.framer
            .warning()
            .map(|e| format!("{}: offset {}: {}", self.path, e.offset, e.detail))
    }

    /// For a huge rows event: the file offset where its body ends.
    #[getter]
    fn large_end(&self) -> Option<u64> {
        self.large_end
    }

    #[getter]
    fn pending_alg(&self) -> Option<u8> {
        self.framer.pending_alg()
    }

    #[getter]
    fn binlog_version(&self) -> Option<u16> {
        self.framer.binlog_version
    }

    #[getter]
    fn no_start_event(&self) -> bool {
        self.framer.no_start_event
    }

    #[getter]
    fn in_use(&self) -> bool {
        self.framer.in_use
    }

    #[getter]
    fn end_pos(&self) -> Option<u64> {
        self.framer.end_pos
    }

    /// The framer's own view of the format: (binlog_version, header_length, checksum_alg, permuted).
    #[getter]
    fn format(&self) -> (u16, usize, Option<u8>, bool) {
        let f = self.framer.format();
        (
            f.binlog_version,
            f.header_length,
            f.checksum_alg,
            f.permuted,
        )
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyFramer>()?;
    Ok(())
}
