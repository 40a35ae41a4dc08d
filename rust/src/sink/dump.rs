//! A whole binlog as mysqlbinlog text: the native twin of `binlake/text/mysqlbinlog.py`
//! `TextPrinter` for the events real binlogs are made of.
//!
//! Strategy: one `DumpPrinter` per file walks the framer's events, decodes
//! each with `crate::events` and prints it the way `TextPrinter` does, method
//! for method, with the same per-file state (mysqlbinlog's PRINT_EVENT_INFO:
//! database, session flags, sql_mode, charset, ...; the Annotate_rows waiting
//! for its table map; the headers and `###` lines of a statement held until
//! its last rows event). What it cannot print the way the Python printer
//! does is not guessed at: `Refused` says so, and the caller lets the Python
//! printer print the whole file (a checking pass finds that before anything
//! is printed), or for a live stream printed in one pass, the file from the
//! refused event on (the events before it read again silently for its state).
//!
//! Rule: only `--base64-output=decode-rows` and `never` (no BINLOG blocks),
//! no hexdump, no filters or rewrites: `DumpOptions` holds what is supported.
//! The host supplies what Python owns: local time, charset names, MySQL
//! JSON text.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::constants::*;
use crate::cursor::Cursor;
use crate::error::Error;
use crate::events::gtid::uuid_text;
use crate::events::status_vars::decode_status_vars;
use crate::events::{
    control, decode_gtid, decode_mariadb_gtid, decode_query, decode_rows_header, decode_table_map,
    decode_xid, expect_end, in_event, text,
};
use crate::framing::{server_version_tuple, Format, Frame};
use crate::layout::{Column, Layout};
use crate::rowimage::{
    decode_rows, DateTimeParts, DecimalValue, Operation, Plan, PlanCache, Role, RowSink, RowsData,
    TimeParts, ValueResult, ValueSink,
};
use crate::sink::text::{write_rows, write_rows_window, JsonText, TextColumns, TextRequest};

const DELIMITER: &str = "/*!*/;";

// Log_event flags (log_event.h)
const LOG_EVENT_THREAD_SPECIFIC_F: u16 = 0x4;
const LOG_EVENT_ARTIFICIAL_F: u16 = 0x20;
const LOG_EVENT_SKIP_REPLICATION_F: u16 = 0x8000;
// Table_map_log_event flags
const TM_BIT_HAS_TRIGGERS_F: u16 = 1 << 14;
// MariaDB Gtid_log_event flags2 beyond those in constants.rs
const FL_ALLOW_PARALLEL: u8 = 8;
const FL_WAITED: u8 = 16;
const FL_DDL: u8 = 32;
const FL_TRANSACTIONAL: u8 = 4;
const FL_START_ALTER_E1: u8 = 2;

// Query flags2 bits (MariaDB sql_priv.h `OPTION_*`)
const OPTION_AUTO_IS_NULL: u32 = 1 << 14;
const OPTION_NO_CHECK_CONSTRAINT_CHECKS: u32 = 1 << 15;
const OPTION_NOT_AUTOCOMMIT: u32 = 1 << 19;
const OPTION_EXPLICIT_DEF_TIMESTAMP: u32 = 1 << 24;
const OPTION_NO_FOREIGN_KEY_CHECKS: u32 = 1 << 26;
const OPTION_RELAXED_UNIQUE_CHECKS: u32 = 1 << 27;
const OPTION_IF_EXISTS: u32 = 1 << 28;
const OPTION_INSERT_HISTORY: u32 = 1 << 30;

/// Which optional flags2 bits a server writes (`text.py` `_options_written`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Needs {
    Always,
    IfExists,
    ExplicitDef,
}

/// (bit, variable, printed as the inverse of the bit, written when)
const FLAGS2_VARIABLES: [(u32, &str, bool, Needs); 8] = [
    (
        OPTION_NO_FOREIGN_KEY_CHECKS,
        "foreign_key_checks",
        true,
        Needs::Always,
    ),
    (
        OPTION_AUTO_IS_NULL,
        "sql_auto_is_null",
        false,
        Needs::Always,
    ),
    (
        OPTION_RELAXED_UNIQUE_CHECKS,
        "unique_checks",
        true,
        Needs::Always,
    ),
    (OPTION_NOT_AUTOCOMMIT, "autocommit", true, Needs::Always),
    (
        OPTION_NO_CHECK_CONSTRAINT_CHECKS,
        "check_constraint_checks",
        true,
        Needs::Always,
    ),
    (OPTION_IF_EXISTS, "sql_if_exists", false, Needs::IfExists),
    (
        OPTION_EXPLICIT_DEF_TIMESTAMP,
        "explicit_defaults_for_timestamp",
        false,
        Needs::ExplicitDef,
    ),
    (
        OPTION_INSERT_HISTORY,
        "system_versioning_insert_history",
        false,
        Needs::Always,
    ),
];

/// The options the native printer supports (`text.py` `TextOptions`).
#[derive(Debug, Clone, Default)]
pub struct DumpOptions {
    /// 0, 1 (-v) or 2 (-vv).
    pub verbose: u8,
    pub short_form: bool,
    /// --base64-output=auto: BINLOG blocks of format descriptions, table maps
    /// and rows events (else never / decode-rows: none).
    pub base64_auto: bool,
    pub print_row_count: bool,
    pub skip_annotate_row_events: bool,
    /// --mysql-events=ignorable: MySQL-only events as mariadb-binlog prints them.
    pub mysql_events_ignorable: bool,
    /// The first window a huge rows event's images are read through
    /// (`rows.LazyRowData.WINDOW`); 0: `WINDOW`.
    pub window: u64,
    /// --start-position of this file (the first of the run), as filters.py
    /// `EventSelection.verdict` applies it; only above 4 does it select.
    pub start: Option<u64>,
    /// --stop-position of this file (the last of the run).
    pub stop: Option<u64>,
    /// The format description before the start position is printed (not
    /// with decode-rows: mysqlbinlog reads it silently, commands/dump.py).
    pub show_head_fde: bool,
}

/// What the Python side owns.
pub trait DumpHost: JsonText {
    /// `text.py` `_timestamp`: `%02d%02d%02d %2d:%02d:%02d` in local time.
    fn timestamp(&mut self, seconds: u32, out: &mut Vec<u8>);
    /// `collation_names.charset_name`.
    fn charset_name(&mut self, collation: u16) -> Option<String>;
    /// `text.py` `_micro_timestamp`: `%Y-%m-%d %H:%M:%S.ffffff ZONE` in local time.
    fn micro_timestamp(&mut self, micros: u64) -> String;
    /// The event's bytes as stored in the file (checksum and all), appended
    /// to `out`, for its BINLOG block (`rawevents.RawEvents.get`); false if
    /// they could not be read.
    fn event_bytes(&mut self, pos: u64, length: u32, out: &mut Vec<u8>) -> bool;
    /// Text to the output now (a huge event's lines, window by window); false on failure.
    fn emit(&mut self, text: &[u8]) -> bool;
}

/// The window a huge rows event's images are read through (`rows.LazyRowData.WINDOW`).
const WINDOW: u64 = 8 << 20;

/// Why the file is left to the Python printer.
#[derive(Debug)]
pub enum Refused {
    /// An event this printer does not print (type code, position).
    Unsupported(u8, u64),
    /// The framer or a decoder failed: the Python reader reports it.
    Failed(Error),
    /// Rows the native `###` printer leaves to the reference formatter.
    Rows(u64),
}

impl From<Error> for Refused {
    fn from(e: Error) -> Self {
        Refused::Failed(e)
    }
}

type Printed = Result<(), Refused>;

/// A table map as the rows events after it need it.
struct Table {
    /// Decoded as a MariaDB server's map (`decode_table_map`).
    mariadb: bool,
    database: Vec<u8>,
    table: Vec<u8>,
    /// `` `db`.`table` `` as `###` lines show it.
    name: Vec<u8>,
    layout: Layout,
    columns: TextColumns,
    plans: PlanCache,
}

/// mysqlbinlog's PRINT_EVENT_INFO (`text.py` `_FileState`).
#[derive(Default)]
struct FileState {
    db: Vec<u8>,
    flags2: Option<u32>,
    sql_mode: Option<u64>,
    auto_increment: (u16, u16),
    charset: Option<(u16, u16, u16)>,
    time_zone: Vec<u8>,
    lc_time_names: i32,
    charset_database: i32,
    thread_id: Option<u32>,
    allow_parallel: Option<bool>,
    domain_id: Option<u32>,
    server_id: Option<u32>,
    gtid_flags2: u8,
    skip_replication: u8,
    /// table id -> database shown for it
    printed_database: HashMap<u64, Vec<u8>>,
    head: Vec<u8>,
    tail: Vec<u8>,
    /// The statement's BINLOG block lines (base64), held until its end.
    body: Vec<u8>,
    printed_fd_event: bool,
    rows_in_statement: usize,
    server_version: Vec<u8>,
}

/// The Annotate_rows event waiting for its table map: its header line and text.
struct Annotate {
    header: Vec<u8>,
    query: Vec<u8>,
}

/// Prints the events of one file into `out` (the caller drains it).
pub struct DumpPrinter<'h, H: DumpHost> {
    options: DumpOptions,
    host: &'h mut H,
    state: FileState,
    /// table id -> the map in force (an index into `maps`)
    tables: HashMap<u64, usize>,
    /// Every distinct table map of the file, and where each is by its bytes.
    maps: Vec<Table>,
    by_signature: HashMap<Vec<u8>, usize>,
    annotate: Option<Annotate>,
    times: HashMap<u32, Vec<u8>>,
    /// The checking pass: rows are decoded, not printed (see `check_rows`).
    checking: bool,
    /// A MySQL GTID was printed (the Python printer then ends with GTID_NEXT= 'AUTOMATIC').
    pub printed_mysql_gtid: bool,
    /// The event at hand is read but not shown (before the start position,
    /// or the one at the stop position): only the reader's state changes.
    skipping: bool,
    /// Past the events a file begins with (filters.py `_past_file_head`).
    past_head: bool,
    checked_start: bool,
    /// The stop position was reached: nothing more of the file is read.
    pub stopped: bool,
    /// The checking pass's MariaDB Gtid lists and GTIDs shown, in file order,
    /// for mariadb-binlog's GTID state checks (binlake/text/gtid_state.py).
    pub gtid_trail: Vec<GtidMark>,
    /// The printing pass keeps the trail too (a live stream is printed in
    /// one pass: its GTID checks run on what was printed, before it is shown).
    pub record_trail: bool,
    pub out: Vec<u8>,
}

/// One entry of `DumpPrinter::gtid_trail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GtidMark {
    /// A Gtid list: its offset, timestamp and (domain, server id, sequence number)s as stored.
    List {
        pos: u64,
        timestamp: u32,
        gtids: Vec<(u32, u32, u64)>,
    },
    /// A GTID: its offset, domain, server id and sequence number.
    Gtid {
        pos: u64,
        domain: u32,
        server_id: u32,
        seq_no: u64,
    },
}

impl GtidMark {
    /// The offset of the event it comes from.
    pub fn pos(&self) -> u64 {
        match self {
            GtidMark::List { pos, .. } | GtidMark::Gtid { pos, .. } => *pos,
        }
    }
}

fn identifier(name: &[u8], out: &mut Vec<u8>) {
    out.push(b'`');
    for &b in name {
        if b == b'`' {
            out.push(b'`');
        }
        out.push(b);
    }
    out.push(b'`');
}

/// Bytes as the Python printer writes `text()` of them: UTF-8 as is, other
/// bytes read as latin-1 and written as UTF-8.
fn text_bytes(raw: &[u8]) -> Vec<u8> {
    text(raw).into_owned().into_bytes()
}

/// `text.py` `_is_trans_keyword` on the statement as Python holds it (UTF-8
/// with surrogate escapes for other bytes: those never match a keyword).
fn is_trans_keyword(query: &str, xa: bool) -> bool {
    let head: String = query.chars().take(12).collect::<String>().to_uppercase();
    if ["BEGIN", "COMMIT", "SAVEPOINT", "ROLLBACK"]
        .iter()
        .any(|k| head.starts_with(k))
    {
        return true;
    }
    xa && ["XA START", "XA END", "XA COMMIT", "XA ROLLBACK"]
        .iter()
        .any(|k| head.starts_with(k))
}

/// The first characters of the statement as Python's surrogate-escaped str
/// has them (an invalid byte stands for one character that matches nothing).
fn query_head(raw: &[u8]) -> String {
    let mut out = String::new();
    let mut rest = raw;
    let mut count = 0;
    while count < 12 && !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.extend(s.chars().take(12 - count));
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                let s = std::str::from_utf8(good).unwrap_or("");
                for c in s.chars().take(12 - count) {
                    out.push(c);
                    count += 1;
                }
                if count < 12 {
                    out.push('\u{FFFD}');
                    count += 1;
                }
                rest = &bad[1..];
            }
        }
    }
    out
}

impl<'h, H: DumpHost> DumpPrinter<'h, H> {
    /// `checking`: the pass that finds whether the file prints natively
    /// (its text is to be dropped); else the printing pass.
    pub fn new(options: DumpOptions, host: &'h mut H, checking: bool) -> Self {
        let mut options = options;
        if options.short_form {
            options.verbose = 0; // mysqlbinlog: --short-form drops --verbose
        }
        DumpPrinter {
            options,
            host,
            state: FileState {
                lc_time_names: -1,
                charset_database: -1,
                ..FileState::default()
            },
            tables: HashMap::new(),
            maps: Vec::new(),
            by_signature: HashMap::new(),
            annotate: None,
            times: HashMap::new(),
            checking,
            printed_mysql_gtid: false,
            skipping: false,
            past_head: false,
            checked_start: false,
            stopped: false,
            gtid_trail: Vec::new(),
            record_trail: false,
            out: Vec::with_capacity(1 << 20),
        }
    }

    pub fn host_mut(&mut self) -> &mut H {
        self.host
    }

    /// An Annotate_rows is still waiting at the end of the file: the Python
    /// printer would carry it into the next file, which this one cannot.
    pub fn annotate_pending(&self) -> bool {
        self.annotate.is_some()
    }

    /// `text.py` `_encode_base64`.
    fn encode_base64(&self) -> bool {
        self.options.base64_auto && !self.options.short_form
    }

    /// `text.py` `_needs_fde`: in auto mode mysqlbinlog stops at a table map
    /// or rows event before any format description was printed (the Python
    /// printer raises TextError): left to it.
    fn needs_fde(&self, frame: &Frame) -> Printed {
        if self.state.printed_fd_event || self.options.short_form || !self.options.base64_auto {
            return Ok(());
        }
        Err(Refused::Unsupported(frame.type_code, frame.pos))
    }

    /// The event's bytes from the file as BINLOG lines, appended to `out`.
    fn base64_of(&mut self, frame: &Frame, out: &mut Vec<u8>) -> Printed {
        let mut raw = Vec::with_capacity(frame.length as usize);
        if !self.host.event_bytes(frame.pos, frame.length, &mut raw) {
            return Err(Refused::Unsupported(frame.type_code, frame.pos));
        }
        base64_lines(&raw, out);
        Ok(())
    }

    /// The event's BINLOG lines appended to the statement's pending body
    /// (`state.body`, printed when the statement ends).
    fn base64_to_body(&mut self, frame: &Frame) -> Printed {
        let mut body = std::mem::take(&mut self.state.body);
        let printed = self.base64_of(frame, &mut body);
        self.state.body = body;
        printed
    }

    /// One event: its `# at` line, then what its family prints.
    pub fn event(
        &mut self,
        frame: &Frame,
        raw: &[u8],
        format: &Format,
        alg: Option<u8>,
    ) -> Printed {
        if frame.inner {
            return Err(Refused::Unsupported(frame.type_code, frame.pos));
        }
        let supported = matches!(
            frame.type_code,
            FORMAT_DESCRIPTION_EVENT
                | QUERY_EVENT
                | QUERY_COMPRESSED_EVENT
                | XID_EVENT
                | INTVAR_EVENT
                | RAND_EVENT
                | XA_PREPARE_LOG_EVENT
                | STOP_EVENT
                | ROTATE_EVENT
                | BINLOG_CHECKPOINT_EVENT
                | GTID_LIST_EVENT
                | GTID_EVENT
                | ANNOTATE_ROWS_EVENT
                | ROWS_QUERY_LOG_EVENT
                | GTID_LOG_EVENT
                | ANONYMOUS_GTID_LOG_EVENT
                | PREVIOUS_GTIDS_LOG_EVENT
                | TABLE_MAP_EVENT
                | WRITE_ROWS_EVENT_V1
                | UPDATE_ROWS_EVENT_V1
                | DELETE_ROWS_EVENT_V1
                | WRITE_ROWS_EVENT
                | UPDATE_ROWS_EVENT
                | DELETE_ROWS_EVENT
                | WRITE_ROWS_COMPRESSED_EVENT_V1
                | UPDATE_ROWS_COMPRESSED_EVENT_V1
                | DELETE_ROWS_COMPRESSED_EVENT_V1
                | WRITE_ROWS_COMPRESSED_EVENT
                | UPDATE_ROWS_COMPRESSED_EVENT
                | DELETE_ROWS_COMPRESSED_EVENT
        );
        if !supported || format.binlog_version != 4 {
            return Err(Refused::Unsupported(frame.type_code, frame.pos));
        }
        let mut cur = frame.body(raw);
        if !self.selected(frame)? {
            // read as the reader reads it (its errors are the file's), not shown
            self.skipping = true;
            let decoded = self.check(frame, &mut cur, format, raw);
            self.skipping = false;
            return match decoded {
                Err(Refused::Failed(e)) => {
                    Err(Refused::Failed(in_event(e, frame.type_code, frame.pos)))
                }
                Err(other) => Err(other),
                Ok(()) => expect_end(&cur, frame.type_code)
                    .map_err(|e| Refused::Failed(in_event(e, frame.type_code, frame.pos))),
            };
        }
        if !self.options.short_form {
            let _ = writeln!(Wrap(&mut self.out), "# at {}", frame.pos);
        }
        let decoded = if self.checking {
            self.check(frame, &mut cur, format, raw)
        } else {
            self.print(frame, &mut cur, format, raw, alg)
        };
        match decoded {
            Err(Refused::Failed(e)) => {
                Err(Refused::Failed(in_event(e, frame.type_code, frame.pos)))
            }
            Err(other) => Err(other),
            Ok(()) => {
                expect_end(&cur, frame.type_code)
                    .map_err(|e| Refused::Failed(in_event(e, frame.type_code, frame.pos)))?;
                Ok(())
            }
        }
    }

    /// filters.py `EventSelection.verdict` for positions alone: whether the
    /// event is shown; `stopped` is set at the stop position. A start
    /// position that is not where an event starts is the selection's error:
    /// the Python path reports it.
    fn selected(&mut self, frame: &Frame) -> Result<bool, Refused> {
        if let Some(start) = self.options.start.filter(|&s| s > 4) {
            if frame.pos < start {
                if !matches!(frame.type_code, FORMAT_DESCRIPTION_EVENT | ROTATE_EVENT) {
                    self.past_head = true;
                }
                return Ok(frame.type_code == FORMAT_DESCRIPTION_EVENT
                    && !self.past_head
                    && self.options.show_head_fde);
            }
            if !self.checked_start {
                self.checked_start = true;
                if frame.pos != start {
                    return Err(Refused::Unsupported(frame.type_code, frame.pos));
                }
            }
        }
        if self.options.stop.is_some_and(|stop| frame.pos >= stop) {
            self.stopped = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// The checking pass: each event decoded as the printing pass decodes
    /// it, nothing formatted (but the table maps and rows, which decide).
    fn check(&mut self, frame: &Frame, cur: &mut Cursor, format: &Format, raw: &[u8]) -> Printed {
        match frame.type_code {
            FORMAT_DESCRIPTION_EVENT => {
                read_start(cur)?;
                if self.encode_base64() && !self.skipping {
                    self.state.printed_fd_event = true;
                }
            }
            QUERY_EVENT | QUERY_COMPRESSED_EVENT => {
                let q = decode_query(
                    cur,
                    frame.type_code,
                    format.post_header_len(frame.type_code),
                )?;
                decode_status_vars(&mut Cursor::new(q.status_vars, q.status_vars_offset))?;
            }
            XID_EVENT => {
                decode_xid(cur)?;
            }
            INTVAR_EVENT => {
                control::decode_intvar(cur)?;
            }
            RAND_EVENT => {
                control::decode_rand(cur)?;
            }
            XA_PREPARE_LOG_EVENT => {
                read_xa_prepare(cur)?;
            }
            STOP_EVENT => {
                cur.rest();
            }
            ROTATE_EVENT => {
                control::decode_rotate(cur, format.post_header_len(ROTATE_EVENT))?;
            }
            BINLOG_CHECKPOINT_EVENT => {
                control::decode_binlog_checkpoint(cur)?;
            }
            GTID_LIST_EVENT => {
                let gtids = read_gtid_list(cur)?;
                if !self.skipping {
                    self.gtid_trail.push(GtidMark::List {
                        pos: frame.pos,
                        timestamp: frame.timestamp,
                        gtids,
                    });
                }
            }
            GTID_EVENT => {
                let g = decode_mariadb_gtid(cur)?;
                if !self.skipping {
                    self.gtid_trail.push(GtidMark::Gtid {
                        pos: frame.pos,
                        domain: g.domain_id,
                        server_id: frame.server_id,
                        seq_no: g.seq_no,
                    });
                }
            }
            GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => {
                decode_gtid(cur)?;
            }
            PREVIOUS_GTIDS_LOG_EVENT => {
                read_previous_gtids(cur, frame)?;
            }
            ROWS_QUERY_LOG_EVENT => {
                control::decode_rows_query(cur)?;
            }
            ANNOTATE_ROWS_EVENT => {
                if !self.skipping {
                    self.annotate(frame, raw);
                }
                cur.rest();
            }
            TABLE_MAP_EVENT => return self.table_map(frame, cur, format),
            _ => return self.rows(frame, cur, format),
        }
        Ok(())
    }

    /// The printing pass: each family's lines, as `TextPrinter._print_<family>`.
    fn print(
        &mut self,
        frame: &Frame,
        cur: &mut Cursor,
        format: &Format,
        raw: &[u8],
        alg: Option<u8>,
    ) -> Printed {
        let mysql_only = matches!(
            frame.type_code,
            GTID_LOG_EVENT
                | ANONYMOUS_GTID_LOG_EVENT
                | PREVIOUS_GTIDS_LOG_EVENT
                | ROWS_QUERY_LOG_EVENT
        );
        if mysql_only && self.options.mysql_events_ignorable {
            self.checking = true; // decoded as the checking pass does, then printed as mariadb-binlog
            let decoded = self.check(frame, cur, format, raw);
            self.checking = false;
            decoded?;
            if !self.options.short_form {
                self.header(frame, frame.checksum);
                let name = match frame.type_code {
                    GTID_LOG_EVENT => "MySQL Gtid",
                    ANONYMOUS_GTID_LOG_EVENT => "MySQL Anonymous_Gtid",
                    PREVIOUS_GTIDS_LOG_EVENT => "MySQL Previous_gtids",
                    _ => "MySQL Rows_query",
                };
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "\tIgnorable\n# Ignorable event type {} ({name})",
                    frame.type_code
                );
            }
            return Ok(());
        }
        match frame.type_code {
            GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => self.mysql_gtid(frame, cur),
            PREVIOUS_GTIDS_LOG_EVENT => self.previous_gtids(frame, cur),
            ROWS_QUERY_LOG_EVENT => self.rows_query(frame, cur),
            FORMAT_DESCRIPTION_EVENT => self.start(frame, cur, alg),
            QUERY_EVENT | QUERY_COMPRESSED_EVENT => self.query(frame, cur, format),
            XID_EVENT => self.xid(frame, cur),
            INTVAR_EVENT => {
                let (kind, value) = control::decode_intvar(cur)?;
                let name = match kind {
                    1 => "LAST_INSERT_ID",
                    2 => "INSERT_ID",
                    _ => "INVALID_INT",
                };
                self.simple(
                    frame,
                    "\tIntvar\n",
                    &format!("SET {name}={value}{DELIMITER}\n"),
                );
                Ok(())
            }
            RAND_EVENT => {
                let (seed1, seed2) = control::decode_rand(cur)?;
                let body = format!("SET @@RAND_SEED1={seed1}, @@RAND_SEED2={seed2}{DELIMITER}\n");
                self.simple(frame, "\tRand\n", &body);
                Ok(())
            }
            XA_PREPARE_LOG_EVENT => {
                let (format_id, gtrid, bqual) = read_xa_prepare(cur)?;
                let mut xid = Vec::new();
                xid.extend_from_slice(b"X'");
                hex(gtrid, &mut xid);
                xid.extend_from_slice(b"',X'");
                hex(bqual, &mut xid);
                let _ = write!(Wrap(&mut xid), "',{format_id}");
                let xid = String::from_utf8_lossy(&xid).into_owned(); // (ASCII)
                self.simple(
                    frame,
                    &format!("\tXID = {xid}\n"),
                    &format!("XA PREPARE {xid}\n{DELIMITER}\n"),
                );
                Ok(())
            }
            STOP_EVENT => {
                cur.rest(); // some servers pad it; nothing in it is meaningful
                if !self.options.short_form {
                    self.simple(frame, "\tStop\n", "");
                }
                Ok(())
            }
            ROTATE_EVENT => self.rotate(frame, cur, format),
            BINLOG_CHECKPOINT_EVENT => self.checkpoint(frame, cur),
            GTID_LIST_EVENT => self.gtid_list(frame, cur),
            GTID_EVENT => self.mariadb_gtid(frame, cur),
            ANNOTATE_ROWS_EVENT => {
                self.annotate(frame, raw);
                cur.rest();
                Ok(())
            }
            TABLE_MAP_EVENT => self.table_map(frame, cur, format),
            _ => self.rows(frame, cur, format),
        }
    }

    // -- shared pieces ------------------------------------------------------

    fn timestamp(&mut self, seconds: u32) {
        if let Some(text) = self.times.get(&seconds) {
            self.out.extend_from_slice(text);
            return;
        }
        let mut text = Vec::with_capacity(16);
        self.host.timestamp(seconds, &mut text);
        self.out.extend_from_slice(&text);
        if self.times.len() > 1 << 16 {
            self.times.clear(); // bounded: a long file has many seconds
        }
        self.times.insert(seconds, text);
    }

    /// `#YYMMDD HH:MM:SS server id N  end_log_pos N CRC32 0x... `
    fn header(&mut self, frame: &Frame, checksum: Option<u32>) {
        self.out.push(b'#');
        self.timestamp(frame.timestamp);
        let _ = write!(
            Wrap(&mut self.out),
            " server id {}  end_log_pos {} ",
            frame.server_id,
            frame.log_pos
        );
        if let Some(crc) = checksum {
            let _ = write!(Wrap(&mut self.out), "CRC32 0x{crc:08x} ");
        }
    }

    fn skip_replication(&mut self, frame: &Frame) {
        let value = u8::from(frame.flags & LOG_EVENT_SKIP_REPLICATION_F != 0);
        if value != self.state.skip_replication {
            self.state.skip_replication = value;
            let _ = writeln!(
                Wrap(&mut self.out),
                "/*!50521 SET skip_replication={value}*/{DELIMITER}"
            );
        }
    }

    /// `text.py` `_simple`: skip_replication, then header + title (not with --short-form), then body.
    fn simple(&mut self, frame: &Frame, title: &str, body: &str) {
        self.skip_replication(frame);
        if !self.options.short_form {
            self.header(frame, frame.checksum);
            self.out.extend_from_slice(title.as_bytes());
        }
        self.out.extend_from_slice(body.as_bytes());
    }

    // -- control events -------------------------------------------------------

    fn start(&mut self, frame: &Frame, cur: &mut Cursor, alg: Option<u8>) -> Printed {
        let (binlog_version, version, created) = read_start(cur)?;
        self.state.server_version = text_bytes(version);
        if !self.options.short_form {
            // the FDE carries a checksum field even with checksums off
            let checksum = if alg == Some(BINLOG_CHECKSUM_ALG_CRC32) {
                frame.checksum
            } else {
                None
            };
            self.header(frame, checksum);
            let _ = write!(
                Wrap(&mut self.out),
                "\tStart: binlog v {binlog_version}, server v "
            );
            self.out.extend_from_slice(&text_bytes(version));
            self.out.extend_from_slice(b" created ");
            self.timestamp(frame.timestamp);
            if created != 0 {
                self.out.extend_from_slice(b" at startup");
            }
            self.out.push(b'\n');
            if frame.flags & LOG_EVENT_BINLOG_IN_USE_F != 0 {
                self.out.extend_from_slice(
                    b"# Warning: this binlog is either in use or was not closed properly.\n",
                );
            }
        }
        if frame.flags & LOG_EVENT_ARTIFICIAL_F == 0 && created != 0 {
            let _ = writeln!(Wrap(&mut self.out), "ROLLBACK{DELIMITER}");
        }
        if self.encode_base64() {
            self.out.extend_from_slice(b"BINLOG '\n");
            let mut block = std::mem::take(&mut self.out);
            self.base64_of(frame, &mut block)?;
            self.out = block;
            let _ = writeln!(Wrap(&mut self.out), "'{DELIMITER}");
            self.state.printed_fd_event = true;
        }
        Ok(())
    }

    fn xid(&mut self, frame: &Frame, cur: &mut Cursor) -> Printed {
        let xid = decode_xid(cur)?;
        self.simple(
            frame,
            &format!("\tXid = {xid}\n"),
            &format!("COMMIT{DELIMITER}\n"),
        );
        Ok(())
    }

    fn rotate(&mut self, frame: &Frame, cur: &mut Cursor, format: &Format) -> Printed {
        let (position, next) = control::decode_rotate(cur, format.post_header_len(ROTATE_EVENT))?;
        let next = text(next).into_owned();
        if !self.options.short_form {
            self.simple(frame, &format!("\tRotate to {next}  pos: {position}\n"), "");
        }
        Ok(())
    }

    fn checkpoint(&mut self, frame: &Frame, cur: &mut Cursor) -> Printed {
        let file = text(control::decode_binlog_checkpoint(cur)?).into_owned();
        if !self.options.short_form {
            self.simple(frame, &format!("\tBinlog checkpoint {file}\n"), "");
        }
        Ok(())
    }

    fn gtid_list(&mut self, frame: &Frame, cur: &mut Cursor) -> Printed {
        let mut gtids = read_gtid_list(cur)?;
        if self.record_trail {
            self.gtid_trail.push(GtidMark::List {
                pos: frame.pos,
                timestamp: frame.timestamp,
                gtids: gtids.clone(),
            });
        }
        if self.options.short_form {
            return Ok(());
        }
        // mariadb-binlog sorts by domain, then sequence number (rpl_gtid's
        // operator<: the server id is not compared); glibc's qsort keeps ties' order
        gtids.sort_by_key(|&(domain, _, seq)| (domain, seq));
        let listed: Vec<String> = gtids
            .iter()
            .map(|(d, s, n)| format!("{d}-{s}-{n}"))
            .collect();
        self.simple(
            frame,
            &format!("\tGtid list [{}]\n", listed.join(",\n# ")),
            "",
        );
        Ok(())
    }

    fn mariadb_gtid(&mut self, frame: &Frame, cur: &mut Cursor) -> Printed {
        let g = decode_mariadb_gtid(cur)?;
        if self.record_trail {
            self.gtid_trail.push(GtidMark::Gtid {
                pos: frame.pos,
                domain: g.domain_id,
                server_id: frame.server_id,
                seq_no: g.seq_no,
            });
        }
        self.skip_replication(frame);
        let flags2 = g.flags2;
        if !self.options.short_form {
            let mut title = format!("\tGTID {}-{}-{}", g.domain_id, frame.server_id, g.seq_no);
            if flags2 & FL_GROUP_COMMIT_ID != 0 {
                let _ = write!(title, " cid={}", OptNum(g.commit_id));
            }
            if flags2 & FL_DDL != 0 {
                title.push_str(" ddl");
            }
            if flags2 & FL_TRANSACTIONAL != 0 {
                title.push_str(" trans");
            }
            if flags2 & FL_WAITED != 0 {
                title.push_str(" waited");
            }
            let extra = g.flags_extra;
            if extra & FL_START_ALTER_E1 != 0 {
                title.push_str(" START ALTER");
            }
            if extra & FL_COMMIT_ALTER_E1 != 0 {
                let _ = write!(title, " COMMIT ALTER id= {}", OptNum(g.sa_seq_no));
            }
            if extra & FL_ROLLBACK_ALTER_E1 != 0 {
                let _ = write!(title, " ROLLBACK ALTER id= {}", OptNum(g.sa_seq_no));
            }
            if extra & FL_EXTRA_THREAD_ID != 0 {
                let _ = write!(title, " thread_id={}", OptNum(g.thread_id.map(u64::from)));
            }
            self.header(frame, frame.checksum);
            self.out.extend_from_slice(title.as_bytes());
            self.out.push(b'\n');
            let allow_parallel = flags2 & FL_ALLOW_PARALLEL != 0;
            if self.state.allow_parallel != Some(allow_parallel) {
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "/*M!100101 SET @@session.skip_parallel_replication={}*/{DELIMITER}",
                    u8::from(!allow_parallel)
                );
                self.state.allow_parallel = Some(allow_parallel);
            }
            if self.state.domain_id != Some(g.domain_id) {
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "/*M!100001 SET @@session.gtid_domain_id={}*/{DELIMITER}",
                    g.domain_id
                );
                self.state.domain_id = Some(g.domain_id);
            }
            if self.state.server_id != Some(frame.server_id) {
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "/*M!100001 SET @@session.server_id={}*/{DELIMITER}",
                    frame.server_id
                );
                self.state.server_id = Some(frame.server_id);
            }
            let _ = writeln!(
                Wrap(&mut self.out),
                "/*M!100001 SET @@session.gtid_seq_no={}*/{DELIMITER}",
                g.seq_no
            );
        }
        if flags2 & FL_PREPARED_XA != 0 {
            let _ = write!(Wrap(&mut self.out), "XA START X'");
            hex(g.xa_gtrid.unwrap_or(&[]), &mut self.out);
            self.out.extend_from_slice(b"',X'");
            hex(g.xa_bqual.unwrap_or(&[]), &mut self.out);
            let _ = writeln!(
                Wrap(&mut self.out),
                "',{}{DELIMITER}",
                OptNum(g.xa_format_id.map(u64::from))
            );
        } else if flags2 & FL_STANDALONE == 0 {
            let _ = writeln!(Wrap(&mut self.out), "START TRANSACTION\n{DELIMITER}");
        }
        self.state.gtid_flags2 = flags2;
        Ok(())
    }

    // -- MySQL GTIDs (MySQL's mysqlbinlog format) ----------------------------------

    fn mysql_gtid(&mut self, frame: &Frame, cur: &mut Cursor) -> Printed {
        let g = decode_gtid(cur)?;
        let anonymous = frame.type_code == ANONYMOUS_GTID_LOG_EVENT;
        let rbr_only = g.flags & 1 == 0; // not FLAG_MAY_HAVE_SBR
        let short = self.options.short_form;
        if !short {
            self.header(frame, frame.checksum);
            let _ = write!(
                Wrap(&mut self.out),
                "\t{}\tlast_committed={}\tsequence_number={}\trbr_only={}",
                if anonymous { "Anonymous_GTID" } else { "GTID" },
                g.last_committed.unwrap_or(0),
                g.sequence_number.unwrap_or(0),
                if rbr_only { "yes" } else { "no" }
            );
            if g.immediate_commit_timestamp.is_some() {
                let _ = write!(
                    Wrap(&mut self.out),
                    "\toriginal_committed_timestamp={}\timmediate_commit_timestamp={}\ttransaction_length={}",
                    OptNum(g.original_commit_timestamp),
                    OptNum(g.immediate_commit_timestamp),
                    g.transaction_length.unwrap_or(0)
                );
            }
            self.out.push(b'\n');
        }
        if rbr_only {
            let _ = writeln!(
                Wrap(&mut self.out),
                "/*!50718 SET TRANSACTION ISOLATION LEVEL READ COMMITTED*/{DELIMITER}"
            );
        }
        if g.immediate_commit_timestamp.is_some() {
            if !short {
                let original = self
                    .host
                    .micro_timestamp(g.original_commit_timestamp.unwrap_or(0));
                let immediate = self
                    .host
                    .micro_timestamp(g.immediate_commit_timestamp.unwrap_or(0));
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "# original_commit_timestamp={} ({original})\n# immediate_commit_timestamp={} ({immediate})",
                    OptNum(g.original_commit_timestamp),
                    OptNum(g.immediate_commit_timestamp)
                );
            }
            let _ = writeln!(
                Wrap(&mut self.out),
                "/*!80001 SET @@session.original_commit_timestamp={}*/{DELIMITER}",
                OptNum(g.original_commit_timestamp)
            );
        }
        if g.original_server_version.is_some_and(|v| v != 0) {
            let _ = writeln!(
                Wrap(&mut self.out),
                "/*!80014 SET @@session.original_server_version={}*/{DELIMITER}\n/*!80014 SET @@session.immediate_server_version={}*/{DELIMITER}",
                OptNum(g.original_server_version.map(u64::from)),
                OptNum(g.immediate_server_version.map(u64::from))
            );
        }
        let next = g
            .gtid(frame.type_code)
            .unwrap_or_else(|| "ANONYMOUS".into());
        let _ = writeln!(
            Wrap(&mut self.out),
            "SET @@SESSION.GTID_NEXT= '{next}'{DELIMITER}"
        );
        self.printed_mysql_gtid = true;
        Ok(())
    }

    fn previous_gtids(&mut self, frame: &Frame, cur: &mut Cursor) -> Printed {
        let set = read_previous_gtids(cur, frame)?;
        if !self.options.short_form {
            self.header(frame, frame.checksum);
            self.out.extend_from_slice(b"\tPrevious-GTIDs\n# ");
            if set.is_empty() {
                self.out.extend_from_slice(b"[empty]");
            } else {
                self.out
                    .extend_from_slice(set.replace(',', ",\n# ").as_bytes());
            }
            self.out.push(b'\n');
        }
        Ok(())
    }

    fn rows_query(&mut self, frame: &Frame, cur: &mut Cursor) -> Printed {
        let query = control::decode_rows_query(cur)?;
        if !self.options.short_form {
            // (MySQL's mysqlbinlog prints it at once)
            self.header(frame, frame.checksum);
            self.out.extend_from_slice(b"\tRows_query\n# ");
            for (i, line) in text_bytes(query).split(|&b| b == b'\n').enumerate() {
                if i > 0 {
                    self.out.extend_from_slice(b"\n# ");
                }
                self.out.extend_from_slice(line);
            }
            self.out.push(b'\n');
        }
        if self.encode_base64() {
            self.base64_to_body(frame)?;
        }
        Ok(())
    }

    // -- statements -------------------------------------------------------------

    fn query(&mut self, frame: &Frame, cur: &mut Cursor, format: &Format) -> Printed {
        let q = decode_query(
            cur,
            frame.type_code,
            format.post_header_len(frame.type_code),
        )?;
        let vars = decode_status_vars(&mut Cursor::new(q.status_vars, q.status_vars_offset))?;
        // The statement as the Python printer holds it: the stored bytes, but
        // a compressed statement's `text()` (its printer has no raw bytes).
        let query: Vec<u8> = if frame.type_code == QUERY_COMPRESSED_EVENT {
            text_bytes(&q.query)
        } else {
            q.query.to_vec()
        };
        let xa = self.state.gtid_flags2 & 0xC0 != 0;
        let trans_keyword = is_trans_keyword(&query_head(&query), xa);
        let mut flags = frame.flags;
        if trans_keyword {
            flags |= LOG_EVENT_SUPPRESS_USE_F;
        }
        self.skip_replication(frame);
        let short = self.options.short_form;
        if !short {
            self.header(frame, frame.checksum);
            let name = if frame.type_code == QUERY_COMPRESSED_EVENT {
                "Query_compressed"
            } else {
                "Query"
            };
            let _ = writeln!(
                Wrap(&mut self.out),
                "\t{name}\tthread_id={}\texec_time={}\terror_code={}\txid={}",
                q.thread_id,
                q.exec_time,
                q.error_code,
                vars.xid.unwrap_or(0)
            );
        }
        let db = text_bytes(q.database);
        if flags & LOG_EVENT_SUPPRESS_USE_F != 0 {
            if !trans_keyword {
                self.state.db.clear();
            }
        } else if db != self.state.db {
            if !db.is_empty() {
                self.out.extend_from_slice(b"use ");
                identifier(&db, &mut self.out);
                let _ = writeln!(Wrap(&mut self.out), "{DELIMITER}");
            }
            self.state.db = db;
        }
        let _ = write!(Wrap(&mut self.out), "SET TIMESTAMP={}", frame.timestamp);
        if let Some(micro) = vars.hrnow.filter(|&m| m != 0) {
            let _ = write!(Wrap(&mut self.out), ".{micro:06}");
        }
        let _ = writeln!(Wrap(&mut self.out), "{DELIMITER}");
        let state = &mut self.state;
        if state.thread_id.is_none()
            || (flags & LOG_EVENT_THREAD_SPECIFIC_F != 0 && Some(q.thread_id) != state.thread_id)
        {
            let thread = if short { 999_999_999 } else { q.thread_id };
            let _ = writeln!(
                Wrap(&mut self.out),
                "SET @@session.pseudo_thread_id={thread}{DELIMITER}"
            );
            state.thread_id = Some(q.thread_id);
        }
        if let Some(flags2) = vars.flags2 {
            let changed = match state.flags2 {
                None => u32::MAX,
                Some(old) => old ^ flags2,
            };
            if changed != 0 {
                let (if_exists, explicit_def) = options_written(&state.server_version);
                let mut parts = Vec::new();
                for (bit, name, inverse, needs) in FLAGS2_VARIABLES {
                    let written = match needs {
                        Needs::Always => true,
                        Needs::IfExists => if_exists,
                        Needs::ExplicitDef => explicit_def,
                    };
                    if written && changed & bit != 0 {
                        let set = flags2 & bit != 0;
                        let value = if inverse { !set } else { set };
                        parts.push(format!("@@session.{name}={}", u8::from(value)));
                    }
                }
                let _ = writeln!(Wrap(&mut self.out), "SET {}{DELIMITER}", parts.join(", "));
                state.flags2 = Some(flags2);
            }
        }
        if let Some(mode) = vars.sql_mode {
            if state.sql_mode != Some(mode) {
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "SET @@session.sql_mode={mode}{DELIMITER}"
                );
                state.sql_mode = Some(mode);
            }
        }
        let auto = vars.auto_increment.unwrap_or((1, 1));
        if auto != state.auto_increment {
            let _ = writeln!(
                Wrap(&mut self.out),
                "SET @@session.auto_increment_increment={}, @@session.auto_increment_offset={}{DELIMITER}",
                auto.0,
                auto.1
            );
            state.auto_increment = auto;
        }
        if let Some(key) = vars.charset {
            if Some(key) != state.charset {
                let name = self.host.charset_name(key.0);
                match &name {
                    Some(n) => {
                        let _ = writeln!(Wrap(&mut self.out), "/*!\\C {n} */{DELIMITER}");
                    }
                    None => self.out.extend_from_slice(b"# Ignored (Unknown charset) "),
                }
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "SET @@session.character_set_client={},@@session.collation_connection={},@@session.collation_server={}{DELIMITER}",
                    name.as_deref().unwrap_or("Unknown"),
                    key.1,
                    key.2
                );
                self.state.charset = Some(key);
            }
        }
        let state = &mut self.state;
        if let Some(zone) = vars.time_zone.filter(|z| !z.is_empty()) {
            let zone = text_bytes(zone);
            if zone != state.time_zone {
                self.out.extend_from_slice(b"SET @@session.time_zone='");
                self.out.extend_from_slice(&zone);
                let _ = writeln!(Wrap(&mut self.out), "'{DELIMITER}");
                state.time_zone = zone;
            }
        }
        let lc_time = i32::from(vars.lc_time_names.unwrap_or(0));
        if lc_time != state.lc_time_names {
            let _ = writeln!(
                Wrap(&mut self.out),
                "SET @@session.lc_time_names={lc_time}{DELIMITER}"
            );
            state.lc_time_names = lc_time;
        }
        let charset_db = i32::from(vars.charset_database.unwrap_or(0));
        if charset_db != state.charset_database {
            if charset_db != 0 {
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "SET @@session.collation_database={charset_db}{DELIMITER}"
                );
            } else {
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "SET @@session.collation_database=DEFAULT{DELIMITER}"
                );
            }
            state.charset_database = charset_db;
        }
        self.out.extend_from_slice(&query);
        let _ = writeln!(Wrap(&mut self.out), "\n{DELIMITER}");
        Ok(())
    }

    // -- row events ---------------------------------------------------------------

    fn annotate(&mut self, frame: &Frame, raw: &[u8]) {
        if self.options.skip_annotate_row_events {
            return;
        }
        if self.checking {
            // (only whether one is waiting matters there)
            self.annotate = Some(Annotate {
                header: Vec::new(),
                query: Vec::new(),
            });
            return;
        }
        let saved = std::mem::take(&mut self.out);
        self.header(frame, frame.checksum);
        let header = std::mem::replace(&mut self.out, saved);
        let query = raw
            .get(LOG_EVENT_MINIMAL_HEADER_LEN..)
            .unwrap_or(&[])
            .to_vec();
        self.annotate = Some(Annotate { header, query });
    }

    fn annotate_lines(&mut self) {
        let Some(annotate) = self.annotate.take() else {
            return;
        };
        if !self.options.short_form {
            self.out.extend_from_slice(&annotate.header);
            self.out.extend_from_slice(b"\tAnnotate_rows:\n");
        } else {
            self.out.extend_from_slice(b"# Annotate_rows:\n");
        }
        for line in annotate.query.split(|&b| b == b'\r' || b == b'\n') {
            if !line.is_empty() {
                self.out.extend_from_slice(b"#Q> ");
                self.out.extend_from_slice(line);
                self.out.push(b'\n');
            }
        }
    }

    fn table_map(&mut self, frame: &Frame, cur: &mut Cursor, format: &Format) -> Printed {
        let post = format.post_header_len(TABLE_MAP_EVENT);
        // A transaction's table map is usually the last one's bytes again
        // (but table id and flags): equal bytes from servers of one flavour
        // decode to an equal map, so what was derived from it is taken again
        // (as `TableMap::signature` says).
        let mariadb = format.is_mariadb();
        let mut after_post = cur.clone();
        let table_id = if post == 6 {
            after_post.u32()? as u64
        } else {
            after_post.u48()?
        };
        let flags = after_post.u16()?;
        let signature = after_post.rest();
        let known = self.by_signature.get(signature);
        let index = match known.filter(|&&index| self.maps[index].mariadb == mariadb) {
            Some(&index) => {
                *cur = after_post;
                index
            }
            None => {
                let map = decode_table_map(cur, post, mariadb)?;
                let database = text_bytes(map.database);
                let table = text_bytes(map.table);
                let layout = map.layout(None);
                let columns = TextColumns::new(&layout);
                let mut name = Vec::new();
                identifier(&database, &mut name);
                name.push(b'.');
                identifier(&table, &mut name);
                self.maps.push(Table {
                    mariadb,
                    database,
                    table,
                    name,
                    layout,
                    columns,
                    plans: PlanCache::default(),
                });
                let index = self.maps.len() - 1;
                self.by_signature.insert(signature.to_vec(), index);
                index
            }
        };
        self.tables.insert(table_id, index);
        if self.skipping {
            return Ok(()); // the reader knows the map; the printer did not print it
        }
        let database = self.maps[index].database.clone();
        self.state.printed_database.insert(table_id, database);
        self.needs_fde(frame)?;
        if self.checking {
            self.annotate = None;
            return Ok(());
        }
        // the rows headers of the statement so far, then this map's lines
        self.out.append(&mut self.state.head);
        self.annotate_lines();
        if !self.options.short_form {
            self.header(frame, frame.checksum);
            self.out.extend_from_slice(b"\tTable_map: ");
            self.out.extend_from_slice(&self.maps[index].name);
            let _ = write!(Wrap(&mut self.out), " mapped to number {table_id}");
            if flags & TM_BIT_HAS_TRIGGERS_F != 0 {
                self.out.extend_from_slice(b" (has triggers)");
            }
            self.out.push(b'\n');
        }
        if self.encode_base64() {
            self.base64_to_body(frame)?;
        }
        Ok(())
    }

    fn rows(&mut self, frame: &Frame, cur: &mut Cursor, format: &Format) -> Printed {
        let h = decode_rows_header(
            cur,
            frame.type_code,
            format.post_header_len(frame.type_code),
            frame.large_end.is_some(),
        )?;
        if self.skipping {
            return Ok(()); // the reader decodes the header; images only when printed
        }
        let stmt_end = h.stmt_end();
        if frame.large_end.is_some() && (!stmt_end || self.encode_base64()) {
            // (its lines are streamed when its statement ends with it; BINLOG
            // blocks of huge events are the Python printer's)
            return Err(Refused::Unsupported(frame.type_code, frame.pos));
        }
        if stmt_end {
            self.annotate = None;
        }
        self.needs_fde(frame)?;
        if self.encode_base64()
            && matches!(
                frame.type_code,
                WRITE_ROWS_COMPRESSED_EVENT_V1..=DELETE_ROWS_COMPRESSED_EVENT
            )
        {
            // (their BINLOG block is re-encoded uncompressed: not done here)
            return Err(Refused::Unsupported(frame.type_code, frame.pos));
        }
        let options = self.options.clone();
        if !options.short_form && !self.checking {
            // the header line goes to the statement's head (held until its end)
            std::mem::swap(&mut self.out, &mut self.state.head);
            self.header(frame, frame.checksum);
            let name = match h.type_code {
                WRITE_ROWS_EVENT | WRITE_ROWS_EVENT_V1 => "Write_rows",
                UPDATE_ROWS_EVENT | UPDATE_ROWS_EVENT_V1 => "Update_rows",
                DELETE_ROWS_EVENT | DELETE_ROWS_EVENT_V1 => "Delete_rows",
                WRITE_ROWS_COMPRESSED_EVENT | WRITE_ROWS_COMPRESSED_EVENT_V1 => {
                    "Write_compressed_rows"
                }
                UPDATE_ROWS_COMPRESSED_EVENT | UPDATE_ROWS_COMPRESSED_EVENT_V1 => {
                    "Update_compressed_rows"
                }
                _ => "Delete_compressed_rows",
            };
            let flags = if stmt_end { " flags: STMT_END_F" } else { "" };
            let _ = writeln!(
                Wrap(&mut self.out),
                "\t{name}: table id {}{flags}",
                h.table_id
            );
            std::mem::swap(&mut self.out, &mut self.state.head);
        }
        if !options.short_form || options.print_row_count {
            if self.encode_base64() && !self.checking {
                self.base64_to_body(frame)?;
            }
            let shown = self.state.printed_database.get(&h.table_id).cloned();
            let table = self.tables.get(&h.table_id).copied();
            match (table.and_then(|i| self.maps.get_mut(i)), shown) {
                (Some(table), Some(shown)) => {
                    if (table.layout.columns.len() as u64) < h.width {
                        return Err(Refused::Rows(frame.pos));
                    }
                    let name_owned;
                    let name: &[u8] = if shown == table.database || shown.is_empty() {
                        &table.name
                    } else {
                        let mut n = Vec::new();
                        identifier(&shown, &mut n);
                        n.push(b'.');
                        identifier(&table.table, &mut n);
                        name_owned = n;
                        &name_owned
                    };
                    let before = table.plans.get(&table.layout, h.present, false);
                    let after = match h.present_after {
                        Some(bitmap) => table.plans.get(&table.layout, bitmap, false),
                        None => before.clone(),
                    };
                    let after_empty = h.present_after.is_some_and(|b| b.iter().all(|&x| x == 0));
                    let request = TextRequest {
                        rows: RowsData {
                            operation: h.operation(),
                            partial: h.is_partial(),
                            before: &before,
                            after: &after,
                            data: &h.data,
                        },
                        verbose: options.verbose.min(2),
                        name,
                        after_empty,
                    };
                    if let Some(end) = frame.large_end {
                        if !check_columns(&table.layout, &table.columns, &request.rows) {
                            return Err(Refused::Rows(frame.pos));
                        }
                        if !self.checking {
                            // the statement so far, then this event's lines as they are made
                            self.out.append(&mut self.state.head);
                            self.out.append(&mut self.state.tail);
                            if !self.host.emit(&self.out) {
                                return Err(Refused::Rows(frame.pos));
                            }
                            self.out.clear();
                        }
                        let total = end.saturating_sub(h.rows_offset);
                        let first = if options.window == 0 {
                            WINDOW
                        } else {
                            options.window
                        };
                        let (mut base, mut size) = (0u64, first);
                        let (mut buf, mut text) = (Vec::new(), Vec::new());
                        let mut count = 0;
                        while base < total {
                            buf.clear();
                            let n = size.min(total - base);
                            if !self
                                .host
                                .event_bytes(h.rows_offset + base, n as u32, &mut buf)
                            {
                                return Err(Refused::Rows(frame.pos));
                            }
                            let last = base + n >= total;
                            let window = TextRequest {
                                rows: RowsData {
                                    data: &buf,
                                    ..request.rows
                                },
                                ..request
                            };
                            let (rows, stop, failed) = if self.checking {
                                match decode_rows(&table.layout, &window.rows, &mut NullSink) {
                                    Ok(rows) => (rows, buf.len(), false),
                                    Err((offset, index, _)) => (index, offset, true),
                                }
                            } else {
                                text.clear();
                                match write_rows_window(
                                    &table.layout,
                                    &table.columns,
                                    &window,
                                    &mut *self.host,
                                    &mut text,
                                ) {
                                    Ok(rows) => (rows, buf.len(), false),
                                    Err(f) => (f.index, f.offset, true),
                                }
                            };
                            if failed && last {
                                return Err(Refused::Rows(frame.pos)); // no larger window helps
                            }
                            if !self.checking && options.verbose > 0 && !self.host.emit(&text) {
                                return Err(Refused::Rows(frame.pos));
                            }
                            count += rows;
                            if stop == 0 {
                                size *= 2; // one row outgrew the window
                            }
                            base += stop as u64;
                        }
                        self.state.rows_in_statement += count;
                    } else if self.checking {
                        check_rows(&table.layout, &table.columns, &request)
                            .map_err(|_| Refused::Rows(frame.pos))?;
                        return Ok(());
                    } else {
                        let mark = self.state.tail.len();
                        let count = write_rows(
                            &table.layout,
                            &table.columns,
                            &request,
                            &mut *self.host,
                            &mut self.state.tail,
                        )
                        .map_err(|_| Refused::Rows(frame.pos))?;
                        if options.verbose == 0 {
                            self.state.tail.truncate(mark);
                        }
                        self.state.rows_in_statement += count;
                    }
                }
                _ => {
                    if options.verbose > 0 {
                        // mysqlbinlog knows only the table maps it printed (no newline: as it does)
                        let _ = write!(
                            Wrap(&mut self.state.tail),
                            "### Row event for unknown table #{}",
                            h.table_id
                        );
                    }
                }
            }
        }
        if stmt_end {
            self.out.append(&mut self.state.head);
            if !self.state.body.is_empty() {
                self.out.extend_from_slice(b"\nBINLOG '\n");
                self.out.append(&mut self.state.body);
                let _ = writeln!(Wrap(&mut self.out), "'{DELIMITER}");
            }
            if !self.checking && self.state.tail.len() >= 1 << 16 {
                // a big statement's lines go out as they are, not copied into `out` first
                if !self.host.emit(&self.out) || !self.host.emit(&self.state.tail) {
                    return Err(Refused::Rows(frame.pos));
                }
                self.out.clear();
                self.state.tail.clear();
            }
            self.out.append(&mut self.state.tail);
            if options.print_row_count && !options.short_form {
                let _ = writeln!(
                    Wrap(&mut self.out),
                    "# Number of rows: {}",
                    self.state.rows_in_statement
                );
            }
            self.state.rows_in_statement = 0;
        }
        Ok(())
    }
}

/// FORMAT_DESCRIPTION (events/control.py): binlog version, server version
/// (up to its NUL), create timestamp; the rest is the framer's.
fn read_start<'a>(cur: &mut Cursor<'a>) -> Result<(u16, &'a [u8], u32), Error> {
    let binlog_version = cur.u16()?;
    let version = cur.bytes(ST_SERVER_VER_LEN)?;
    let version = version.split(|&b| b == 0).next().unwrap_or(&[]);
    let created = cur.u32()?;
    cur.u8()?; // header length
    cur.rest(); // post-header lengths
    Ok((binlog_version, version, created))
}

/// XA_PREPARE (events/gtid.py): format id, gtrid, bqual (one_phase unused).
fn read_xa_prepare<'a>(cur: &mut Cursor<'a>) -> Result<(u32, &'a [u8], &'a [u8]), Error> {
    cur.u8()?; // one_phase
    let format_id = cur.u32()?;
    let gtrid_len = cur.u32()? as usize;
    let bqual_len = cur.u32()? as usize;
    let gtrid = cur.bytes(gtrid_len)?;
    let bqual = cur.bytes(bqual_len)?;
    cur.rest(); // XIDDATASIZE buffer may be written in full
    Ok((format_id, gtrid, bqual))
}

/// GTID_LIST (events/gtid.py): (domain, server, seq_no) triples.
fn read_gtid_list(cur: &mut Cursor) -> Result<Vec<(u32, u32, u64)>, Error> {
    let word = cur.u32()?;
    let count = word & 0x0FFF_FFFF;
    let mut gtids = Vec::new();
    for _ in 0..count {
        gtids.push((cur.u32()?, cur.u32()?, cur.u64()?));
    }
    cur.rest(); // MariaDB pads an empty list with two zero bytes
    Ok(gtids)
}

/// PREVIOUS_GTIDS (events/gtid.py) as its `gtid_set` text:
/// `uuid:1-5:7,uuid:...`. The tagged form (MySQL 8.4) is not read here.
fn read_previous_gtids(cur: &mut Cursor, frame: &Frame) -> Result<String, Refused> {
    let word = cur.u64()?;
    if word >> 56 != 0 {
        return Err(Refused::Unsupported(frame.type_code, frame.pos));
    }
    let count = word & ((1 << 56) - 1);
    let mut parts = Vec::new();
    for _ in 0..count {
        let mut part = uuid_text(cur.bytes(16)?);
        part.push(':');
        let intervals = cur.u64()?;
        let mut ranges = Vec::new();
        for _ in 0..intervals {
            let (a, b) = (i128::from(cur.i64()?), i128::from(cur.i64()?));
            ranges.push(if b == a + 1 {
                format!("{a}")
            } else {
                format!("{a}-{}", b - 1)
            });
        }
        part.push_str(&ranges.join(":"));
        parts.push(part);
    }
    Ok(parts.join(","))
}

/// The checking pass's rows: refused where the printing pass's `write_rows`
/// could refuse: a present column mysqlbinlog's reading differs on, MySQL
/// JSON (printed by a Python helper that may fail), or images that do not
/// decode (the same decoder, into a sink that keeps nothing).
fn check_rows(layout: &Layout, columns: &TextColumns, request: &TextRequest) -> Result<(), ()> {
    if !check_columns(layout, columns, &request.rows) {
        return Err(());
    }
    decode_rows(layout, &request.rows, &mut NullSink)
        .map(|_| ())
        .map_err(|_| ())
}

/// No present column is one the `###` sink may refuse.
fn check_columns(layout: &Layout, columns: &TextColumns, rows: &RowsData) -> bool {
    rows.before
        .columns
        .iter()
        .chain(rows.after.columns.iter())
        .all(|&index| {
            let printable = columns.columns.get(index).is_some_and(|c| c.printable);
            let json = layout
                .columns
                .get(index)
                .is_some_and(|c| c.type_code == MYSQL_TYPE_JSON);
            printable && !json
        })
}

/// Takes every value and keeps none.
struct NullSink;

impl ValueSink for NullSink {
    fn null(&mut self, _: &Column) -> ValueResult {
        Ok(())
    }
    fn int(&mut self, _: &Column, _: i64, _: u8) -> ValueResult {
        Ok(())
    }
    fn float(&mut self, _: &Column, _: f32) -> ValueResult {
        Ok(())
    }
    fn double(&mut self, _: &Column, _: f64) -> ValueResult {
        Ok(())
    }
    fn decimal(&mut self, _: &Column, _: &DecimalValue, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn year(&mut self, _: &Column, _: u32) -> ValueResult {
        Ok(())
    }
    fn date(&mut self, _: &Column, _: u32, _: u32, _: u32) -> ValueResult {
        Ok(())
    }
    fn datetime(&mut self, _: &Column, _: DateTimeParts, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn datetime_negative(&mut self, _: &Column, _: i64, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn timestamp(&mut self, _: &Column, _: u32, _: u32, _: u8) -> ValueResult {
        Ok(())
    }
    fn time(&mut self, _: &Column, _: TimeParts, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn bit(&mut self, _: &Column, _: u64, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn string(&mut self, _: &Column, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn blob(&mut self, _: &Column, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn compressed(&mut self, _: &Column, _: &[u8]) -> ValueResult {
        Ok(()) // printed as stored: the value is not uncompressed
    }
    fn geometry(&mut self, _: &Column, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn json(&mut self, _: &Column, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn json_diff(&mut self, _: &Column, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn vector(&mut self, _: &Column, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn enum_index(&mut self, _: &Column, _: u16, _: &[u8]) -> ValueResult {
        Ok(())
    }
    fn set_mask(&mut self, _: &Column, _: u64, _: &[u8]) -> ValueResult {
        Ok(())
    }
}

impl RowSink for NullSink {
    fn start_row(&mut self, _: Operation) -> ValueResult {
        Ok(())
    }
    fn start_image(&mut self, _: Role, _: &Plan) -> ValueResult {
        Ok(())
    }
    fn end_image(&mut self, _: Role) -> ValueResult {
        Ok(())
    }
    fn end_row(&mut self) -> ValueResult {
        Ok(())
    }
}

/// `text.py` `_options_written`: (if_exists, explicit_def) for this server.
fn options_written(version: &[u8]) -> (bool, bool) {
    if !version
        .to_ascii_lowercase()
        .windows(7)
        .any(|w| w == b"mariadb")
    {
        return (false, false);
    }
    let (major, minor, patch) = server_version_tuple(version);
    if (major, minor, patch) < (10, 5, 2) {
        return (false, false);
    }
    const THRESHOLDS: [u64; 10] = [99, 99, 99, 99, 99, 17, 9, 5, 4, 2];
    if major == 10 && minor < 10 && patch < THRESHOLDS[minor as usize] {
        return (true, false);
    }
    (true, true)
}

/// Base64 (RFC 4648, padded) in lines of 76 characters, each ending in a
/// newline, as `text.py` `_base64` writes BINLOG blocks.
fn base64_lines(data: &[u8], out: &mut Vec<u8>) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for line in data.chunks(57) {
        for group in line.chunks(3) {
            let b = [
                group[0],
                *group.get(1).unwrap_or(&0),
                *group.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            out.push(ALPHABET[(n >> 18) as usize & 63]);
            out.push(ALPHABET[(n >> 12) as usize & 63]);
            out.push(if group.len() > 1 {
                ALPHABET[(n >> 6) as usize & 63]
            } else {
                b'='
            });
            out.push(if group.len() > 2 {
                ALPHABET[n as usize & 63]
            } else {
                b'='
            });
        }
        out.push(b'\n');
    }
}

fn hex(bytes: &[u8], out: &mut Vec<u8>) {
    for b in bytes {
        let _ = write!(Wrap(out), "{b:02x}");
    }
}

/// A number Python would print, or its `None`.
struct OptNum(Option<u64>);

impl std::fmt::Display for OptNum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(n) => write!(f, "{n}"),
            None => f.write_str("None"),
        }
    }
}

/// `write!` into a byte buffer.
struct Wrap<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Wrap<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trans_keywords_as_python_sees_them() {
        assert!(is_trans_keyword(&query_head(b"begin"), false));
        assert!(is_trans_keyword(&query_head(b"COMMIT /* x */"), false));
        assert!(!is_trans_keyword(&query_head(b"XA END 'x'"), false));
        assert!(is_trans_keyword(&query_head(b"XA END 'x'"), true));
        assert!(!is_trans_keyword(&query_head(b"\xffBEGIN"), false));
        assert_eq!(query_head(b"ab\xffcd").chars().count(), 5);
    }

    #[test]
    fn base64_lines_as_python_writes_them() {
        // base64.b64encode, cut into lines of 76 characters
        let mut out = Vec::new();
        base64_lines(b"", &mut out);
        assert!(out.is_empty());
        base64_lines(b"ab", &mut out);
        assert_eq!(out, b"YWI=\n");
        out.clear();
        let data: Vec<u8> = (0u8..=58).collect();
        base64_lines(&data, &mut out);
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), 76);
        assert_eq!(lines[1], "OTo=");
        assert!(lines[0].starts_with(
            "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4"
        ));
    }

    #[test]
    fn options_written_by_version() {
        assert_eq!(options_written(b"8.0.30"), (false, false));
        assert_eq!(options_written(b"10.5.1-MariaDB"), (false, false));
        assert_eq!(options_written(b"10.5.16-MariaDB"), (true, false));
        assert_eq!(options_written(b"10.5.17-MariaDB"), (true, true));
        assert_eq!(options_written(b"10.11.19-MariaDB-log"), (true, true));
    }
}
