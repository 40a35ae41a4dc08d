//! `binlake events` of one whole file, natively: `EventListReader`.
//!
//! Strategy: the events view's loop (`ChangesReader` with an `EventsView`,
//! payloads not unpacked: SHOW BINLOG EVENTS lists a compressed transaction
//! as one event), each event written as its row of the listing straight
//! away, as JSON lines or as the aligned table (`commands/events.py`
//! `_TableWriter`). The Info column is written here for the events every
//! transaction has (the server's `pack_info()` wording, as `event_info`
//! writes it); the reference (`check`, an `EventInfoDescriber`) has already
//! decoded every other event and keeps its Info in `last`.
//!
//! Rule: as `JsonLinesReader`: an event this reader cannot list as the
//! reference does (any read or decode error) is not guessed at; it stops
//! before it (`refused`, `events`) and the caller has the reference list the
//! file from that event on.

use pyo3::prelude::*;

use super::{ChangesReader, Stop};
use crate::constants::*;
use crate::events::{self, control, text};
use crate::framing::{Frame, LARGE_EVENT_BYTES};
use crate::sink::events::{json_string, json_text};

use super::super::events::{decoded_natively, described_here};

const CHUNK: usize = 1 << 20;

/// How rows are written.
enum Layout {
    /// `{"Log_name": ..., ..., "Info": ...}` per line.
    Json,
    /// The aligned table: each of the first five cells padded to its width.
    Table([usize; 5]),
}

/// The SHOW BINLOG EVENTS listing of one file, in chunks of text.
#[pyclass(module = "binlake._native", unsendable)]
pub struct EventListReader {
    inner: ChangesReader,
    /// The Log_name column.
    name: String,
    layout: Layout,
    /// `EVENT_TYPE_STR` by type code (binlake.constants).
    type_names: Vec<Option<String>>,
    limit: Option<u64>,
    /// Rows written so far.
    #[pyo3(get)]
    events: u64,
    /// Why the reference must list the rest of the file, from event `events` on.
    #[pyo3(get)]
    refused: Option<String>,
    done: bool,
}

#[pymethods]
impl EventListReader {
    /// `format`: "json" or "table" (then `widths`: the first five columns').
    /// `type_names`: type code -> Event_type text. `check`: the reference.
    #[new]
    #[pyo3(signature = (path, name, format, widths, type_names, check, verify_checksums,
                        limit=None, large_event_bytes=LARGE_EVENT_BYTES))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: String,
        name: String,
        format: &str,
        widths: [usize; 5],
        type_names: std::collections::HashMap<u8, String>,
        check: Py<PyAny>,
        verify_checksums: bool,
        limit: Option<u64>,
        large_event_bytes: u64,
    ) -> PyResult<Self> {
        let mut inner = ChangesReader::whole_file(
            py,
            path,
            &name,
            check,
            verify_checksums,
            false, // table maps as the binlog wrote them: Info shows only their names
            Default::default(),
            large_event_bytes,
        )?;
        inner.framer.set_unpack_payloads(false);
        let mut names = vec![None; 256];
        for (code, text) in type_names {
            names[code as usize] = Some(text);
        }
        Ok(EventListReader {
            inner,
            name,
            layout: if format == "json" {
                Layout::Json
            } else {
                Layout::Table(widths)
            },
            type_names: names,
            limit,
            events: 0,
            refused: None,
            done: false,
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next chunk of rows (UTF-8), None when the file is done or refused.
    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Vec<u8>>> {
        let mut out = Vec::with_capacity(CHUNK + (16 << 10));
        while !self.done && out.len() < CHUNK {
            if self.limit.is_some_and(|limit| self.events >= limit) {
                self.done = true;
                break;
            }
            match self.row(py) {
                Ok(Some(row)) => {
                    self.write(&row, &mut out);
                    self.events += 1;
                }
                Ok(None) => self.done = true,
                Err(why) => {
                    self.refused = Some(why);
                    self.done = true;
                }
            }
        }
        Ok((!out.is_empty()).then_some(out))
    }
}

/// One row of the listing.
struct Row {
    pos: u64,
    type_code: u8,
    server_id: u32,
    log_pos: u32,
    info: String,
}

impl EventListReader {
    /// The next event's row; Ok(None) at the end of the file, Err(why) refused.
    fn row(&mut self, py: Python<'_>) -> Result<Option<Row>, String> {
        let r = &mut self.inner;
        let frame = match r.framer.next() {
            Ok(Some(frame)) => frame,
            Ok(None) => return Ok(None),
            Err(e) => return Err(format!("{}: {}", e.offset, e.detail)),
        };
        if r.framer.warning().is_some() {
            return Err("a checksum warning".into());
        }
        r.decode(py, &frame, false)
            .map_err(|why| stop_text(py, why))?;
        let native = info(r, &frame).map_err(|e| e.detail)?;
        let info = match native {
            Some(info) => info,
            None => {
                // decoded by the reference just now: its Info
                let last = r.check.getattr(py, "last").map_err(|e| e.to_string())?;
                last.extract::<String>(py).map_err(|e| e.to_string())?
            }
        };
        Ok(Some(Row {
            pos: frame.pos,
            type_code: frame.type_code,
            server_id: frame.server_id,
            log_pos: frame.log_pos,
            info,
        }))
    }

    fn type_name(&self, code: u8) -> String {
        match &self.type_names[code as usize] {
            Some(name) => name.clone(),
            None => format!("Unknown({code})"),
        }
    }

    fn write(&self, row: &Row, out: &mut Vec<u8>) {
        let type_name = self.type_name(row.type_code);
        match &self.layout {
            Layout::Json => {
                // json.dumps(dict(zip(COLUMNS, row)), ensure_ascii=False)
                out.extend_from_slice(b"{\"Log_name\": ");
                json_string(out, &self.name);
                out.extend_from_slice(
                    format!(", \"Pos\": {}, \"Event_type\": ", row.pos).as_bytes(),
                );
                json_string(out, &type_name);
                out.extend_from_slice(
                    format!(
                        ", \"Server_id\": {}, \"End_log_pos\": {}, \"Info\": ",
                        row.server_id, row.log_pos
                    )
                    .as_bytes(),
                );
                json_text(out, row.info.as_bytes());
                out.extend_from_slice(b"}\n");
            }
            Layout::Table(widths) => {
                // str(v).ljust(w) for the first five, joined by two spaces
                let cells = [
                    self.name.clone(),
                    row.pos.to_string(),
                    type_name,
                    row.server_id.to_string(),
                    row.log_pos.to_string(),
                ];
                for (cell, &width) in cells.iter().zip(widths) {
                    out.extend_from_slice(cell.as_bytes());
                    let chars = cell.chars().count();
                    out.resize(out.len() + width.saturating_sub(chars), b' ');
                    out.extend_from_slice(b"  ");
                }
                for c in row.info.chars() {
                    match c {
                        '\\' => out.extend_from_slice(b"\\\\"),
                        '\n' => out.extend_from_slice(b"\\n"),
                        c => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    }
                }
                out.push(b'\n');
            }
        }
    }
}

/// `commands/events.py` `event_info` of the events written here; None for
/// the ones the reference decoded (format descriptions, GTID lists, ...).
fn info(r: &ChangesReader, frame: &Frame) -> crate::error::Result<Option<String>> {
    let raw = r.framer.raw();
    let format = r.framer.format();
    let code = frame.type_code;
    let mut cur = frame.body(raw);
    let post = format.post_header_len(code);
    if described_here(code) && !super::super::events::decodes_whole(raw, frame, format) {
        return Ok(None);
    }
    Ok(Some(match code {
        QUERY_EVENT | QUERY_COMPRESSED_EVENT | EXECUTE_LOAD_QUERY_EVENT => {
            let Some((q, _)) = super::super::events::decode_query(&mut cur, code, format) else {
                return Ok(None);
            };
            let database = text(q.database);
            let mut info = String::new();
            if !database.is_empty() && frame.flags & LOG_EVENT_SUPPRESS_USE_F == 0 {
                info.push_str(&format!("use `{}`; ", database.replace('`', "``")));
            }
            info.push_str(&text(&q.query));
            if code == EXECUTE_LOAD_QUERY_EVENT {
                if let Some(load) = q.execute_load {
                    info.push_str(&format!(" ;file_id={}", load.file_id));
                }
            }
            info
        }
        GTID_EVENT => {
            let g = events::decode_mariadb_gtid(&mut cur)?;
            let gtid = g.gtid(frame.server_id);
            let mut info = if g.flags2 & FL_PREPARED_XA != 0 {
                let hex = |b: Option<&[u8]>| {
                    b.unwrap_or_default()
                        .iter()
                        .map(|x| format!("{x:02x}"))
                        .collect::<String>()
                };
                format!(
                    "XA START X'{}',X'{}',{} GTID {gtid}",
                    hex(g.xa_gtrid),
                    hex(g.xa_bqual),
                    g.xa_format_id.map_or("None".to_string(), |f| f.to_string())
                )
            } else if g.flags2 & FL_STANDALONE != 0 {
                format!("GTID {gtid}")
            } else {
                format!("BEGIN GTID {gtid}")
            };
            if g.flags2 & FL_GROUP_COMMIT_ID != 0 {
                info.push_str(&format!(
                    " cid={}",
                    g.commit_id.map_or("None".to_string(), |c| c.to_string())
                ));
            }
            info
        }
        GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => {
            let g = events::decode_gtid(&mut cur)?;
            let gtid = g.gtid(code).unwrap_or_else(|| "ANONYMOUS".into());
            format!("SET @@SESSION.GTID_NEXT= '{gtid}'")
        }
        XID_EVENT => format!("COMMIT /* xid={} */", events::decode_xid(&mut cur)?),
        TABLE_MAP_EVENT => {
            let map = events::decode_table_map(&mut cur, post, format.is_mariadb())?;
            format!(
                "table_id: {} ({}.{})",
                map.table_id,
                text(map.database),
                text(map.table)
            )
        }
        c if events::is_rows_event(c) => {
            let large = frame.large_end.is_some();
            let h = events::decode_rows_header(&mut cur, c, post, large)?;
            let end = if h.flags & STMT_END_F != 0 {
                " flags: STMT_END_F"
            } else {
                ""
            };
            format!("table_id: {}{end}", h.table_id)
        }
        ANNOTATE_ROWS_EVENT => text(cur.rest()).into_owned(),
        ROWS_QUERY_LOG_EVENT => format!("# {}", text(control::decode_rows_query(&mut cur)?)),
        ROTATE_EVENT => {
            let (position, name) = control::decode_rotate(&mut cur, post)?;
            format!("{};pos={position}", text(name))
        }
        INTVAR_EVENT => {
            let (kind, value) = control::decode_intvar(&mut cur)?;
            let name = match kind {
                1 => "LAST_INSERT_ID",
                2 => "INSERT_ID",
                _ => "INVALID_INT",
            };
            format!("{name}={value}")
        }
        RAND_EVENT => {
            let (seed1, seed2) = control::decode_rand(&mut cur)?;
            format!("rand_seed1={seed1},rand_seed2={seed2}")
        }
        BINLOG_CHECKPOINT_EVENT => text(control::decode_binlog_checkpoint(&mut cur)?).into_owned(),
        STOP_EVENT => String::new(),
        TRANSACTION_PAYLOAD_EVENT => {
            let p = events::decode_transaction_payload(&mut cur)?;
            let name = match p.compression_type {
                PAYLOAD_ZSTD => "ZSTD".to_string(),
                PAYLOAD_NONE => "NONE".to_string(),
                other => other.to_string(),
            };
            format!(
                "compression='{name}', decompressed_size={} bytes",
                p.uncompressed_size
            )
        }
        // the reference decoded it (`decode` hands it every other type)
        _ if !decoded_natively(code) => return Ok(None),
        _ => {
            return Err(crate::error::Error::corrupt(
                frame.pos,
                format!("event type {code}: no Info written natively"),
            ))
        }
    }))
}

fn stop_text(py: Python<'_>, stop: Stop) -> String {
    match stop {
        Stop::Quiet => "the end of the range".into(),
        Stop::Raise(e) => e.value(py).to_string(),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EventListReader>()?;
    Ok(())
}
