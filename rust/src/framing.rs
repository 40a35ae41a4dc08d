//! Framing: magic, version detection, event headers, checksums, stream state.
//!
//! Strategy: the twin of `reader.py`'s framing, decision for decision and
//! error for error (class, offset and wording), so the Python reader can hand
//! its framing to this one and the differential tests can hold them equal.
//! 1. Magic, then the binlog version from the first event: START_EVENT_V3
//!    under 75 bytes -> v1 (13-byte headers), 75+ -> v3; an FDE -> v4; another
//!    type a 4.x server could start a file with -> v3 without a start event.
//! 2. Each event is cut to `length`; with CRC32 on, the last 4 bytes are
//!    checked and dropped. The FDE says its own algorithm in the byte before
//!    its checksum, which exists only from the versions that write it
//!    (MySQL 5.6.1, MariaDB 5.3.0), and is checksummed with IN_USE cleared.
//! 3. The stream state is the last FDE (relay logs hold several), parsed here
//!    exactly when the Python decoder would succeed on it, since the Python
//!    reader changes its state only on a decoded FDE. Early 5.1/5.2 trees
//!    (wl2325) number events differently: their codes are remapped.
//! 4. A TRANSACTION_PAYLOAD's events follow it, decompressed as a stream (a big
//!    compressed transaction is never held uncompressed) and carrying the
//!    payload event's position. Rows events over `large_event_bytes` in a
//!    regular file are checksummed through the window and handed out as their
//!    first 64 KB: their row images stay in the file.
//!
//! Rule: an error is returned only after every good event before it; after
//! it the framer is finished.

use std::io::{self, Read};

use crate::constants::*;
use crate::cursor::{le_uint, Cursor};
use crate::error::{Error, ErrorKind, Result};
use crate::source::{Source, StreamSource, WINDOW};

/// Rows events bigger than this keep their row images in the file.
pub const LARGE_EVENT_BYTES: u64 = 64 << 20;
/// The head of a huge rows event handed out: post-header, extra info and bitmaps fit.
pub const LARGE_EVENT_HEAD: usize = 1 << 16;

/// The early 5.1/5.2 (wl2325) numbering: old code -> today's code.
const WL2325_EVENT_PERMUTATION: [u8; 23] = [
    UNKNOWN_EVENT,
    START_EVENT_V3,
    QUERY_EVENT,
    STOP_EVENT,
    ROTATE_EVENT,
    INTVAR_EVENT,
    LOAD_EVENT,
    7, // SLAVE_EVENT
    CREATE_FILE_EVENT,
    APPEND_BLOCK_EVENT,
    EXEC_LOAD_EVENT,
    DELETE_FILE_EVENT,
    NEW_LOAD_EVENT,
    RAND_EVENT,
    USER_VAR_EVENT,
    FORMAT_DESCRIPTION_EVENT,
    TABLE_MAP_EVENT,
    PRE_GA_WRITE_ROWS_EVENT,
    PRE_GA_UPDATE_ROWS_EVENT,
    PRE_GA_DELETE_ROWS_EVENT,
    XID_EVENT,
    BEGIN_LOAD_QUERY_EVENT,
    EXECUTE_LOAD_QUERY_EVENT,
];

const LAZY_ROWS_TYPES: [u8; 7] = [
    WRITE_ROWS_EVENT_V1,
    UPDATE_ROWS_EVENT_V1,
    DELETE_ROWS_EVENT_V1,
    WRITE_ROWS_EVENT,
    UPDATE_ROWS_EVENT,
    DELETE_ROWS_EVENT,
    PARTIAL_UPDATE_ROWS_EVENT,
];

/// What frames the events after a start event or FDE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pub binlog_version: u16,
    /// Raw bytes up to the first NUL (decoders decide how to read them).
    pub server_version: Vec<u8>,
    pub header_length: usize,
    /// Indexed by type code - 1, already in today's numbering.
    pub post_header_lengths: Vec<u8>,
    /// None: the server predates checksums.
    pub checksum_alg: Option<u8>,
    /// The wl2325 numbering is in force.
    pub permuted: bool,
}

impl Format {
    /// Until the FDE is read: enough to frame the FDE itself.
    pub fn v4_placeholder() -> Self {
        Format {
            binlog_version: 4,
            server_version: Vec::new(),
            header_length: LOG_EVENT_MINIMAL_HEADER_LEN,
            post_header_lengths: Vec::new(),
            checksum_alg: None,
            permuted: false,
        }
    }

    /// Binlog v1 and v3 carry no FDE: their lengths are the server's constants.
    pub fn old(binlog_version: u16) -> Self {
        let mut lengths = vec![0u8; NEW_LOAD_EVENT as usize];
        for (code, len) in [
            (START_EVENT_V3, START_V3_HEADER_LEN as u8),
            (QUERY_EVENT, 11),
            (LOAD_EVENT, 18),
            (CREATE_FILE_EVENT, 4),
            (APPEND_BLOCK_EVENT, 4),
            (EXEC_LOAD_EVENT, 4),
            (DELETE_FILE_EVENT, 4),
            (NEW_LOAD_EVENT, 18),
        ] {
            lengths[code as usize - 1] = len;
        }
        if binlog_version == 3 {
            lengths[ROTATE_EVENT as usize - 1] = 8;
        }
        Format {
            binlog_version,
            server_version: Vec::new(),
            header_length: if binlog_version == 1 {
                OLD_HEADER_LEN
            } else {
                LOG_EVENT_MINIMAL_HEADER_LEN
            },
            post_header_lengths: lengths,
            checksum_alg: None,
            permuted: false,
        }
    }

    pub fn post_header_len(&self, type_code: u8) -> usize {
        match type_code {
            0 => 0,
            c => self
                .post_header_lengths
                .get(c as usize - 1)
                .map_or(0, |&l| l as usize),
        }
    }

    /// A MariaDB server wrote the events (control.py `FormatDescription.is_mariadb`).
    pub fn is_mariadb(&self) -> bool {
        is_mariadb(&self.server_version)
    }
}

/// The version triple as `server_version_tuple` in events/control.py reads it:
/// the digits of each of the first three dot-separated pieces before any '-'.
pub fn server_version_tuple(version: &[u8]) -> (u64, u64, u64) {
    let base = version.split(|&b| b == b'-').next().unwrap_or(&[]);
    let mut parts = [0u64; 3];
    for (i, piece) in base.split(|&b| b == b'.').take(3).enumerate() {
        parts[i] = piece
            .iter()
            .filter(|b| b.is_ascii_digit())
            .fold(0u64, |v, b| {
                v.saturating_mul(10).saturating_add((b - b'0') as u64)
            });
    }
    (parts[0], parts[1], parts[2])
}

fn is_mariadb(version: &[u8]) -> bool {
    version
        .windows(7)
        .any(|w| w.eq_ignore_ascii_case(b"mariadb"))
}

/// Whether this server wrote the checksum-algorithm byte into its FDE
/// (`checksum_version_split`: MySQL 5.6.1, MariaDB 5.3.0).
pub fn has_checksum_field(version: &[u8]) -> bool {
    let v = server_version_tuple(version);
    if is_mariadb(version) {
        v >= (5, 3, 0)
    } else {
        v >= (5, 6, 1)
    }
}

fn is_wl2325(version: &[u8]) -> bool {
    let at = |i: usize| version.get(i).copied().unwrap_or(0);
    let tail = |from: usize, s: &[u8]| version.get(from..from + s.len()) == Some(s);
    (version.starts_with(b"5.1.") && (b'1'..=b'5').contains(&at(4)) && tail(5, b"-a_drop5"))
        || version.starts_with(b"5.1.4-a_drop6")
        || (version.starts_with(b"5.2.") && (b'0'..=b'2').contains(&at(4)) && tail(5, b"-a_drop6"))
}

fn until_nul(raw: &[u8]) -> &[u8] {
    raw.split(|&b| b == 0).next().unwrap_or(&[])
}

fn crc32(parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

/// What the caller chooses about a read.
#[derive(Clone, Debug)]
pub struct Options {
    pub verify_checksums: bool,
    /// Keep going past a checksum mismatch (the event comes with a warning).
    pub force: bool,
    /// Like mysqlbinlog --start-position: after the first event, jump here.
    pub start_position: Option<u64>,
    pub unpack_payloads: bool,
    pub large_event_bytes: u64,
    /// The FDE algorithm byte seen last, carried over from a previous file.
    pub pending_alg: Option<u8>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            verify_checksums: true,
            force: false,
            start_position: None,
            unpack_payloads: true,
            large_event_bytes: LARGE_EVENT_BYTES,
            pending_alg: None,
        }
    }
}

/// One event's header fields; its bytes are `Framer::raw()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Offset in the file (for a payload's inner event: the payload event's).
    pub pos: u64,
    pub timestamp: u32,
    /// After the wl2325 renumbering.
    pub type_code: u8,
    pub server_id: u32,
    pub length: u32,
    pub log_pos: u32,
    pub flags: u16,
    /// The stored CRC32, when the event has one.
    pub checksum: Option<u32>,
    /// Where the body starts in `raw()`.
    pub header_len: usize,
    /// An event of a TRANSACTION_PAYLOAD.
    pub inner: bool,
    /// A huge rows event: `raw()` is its head, its body ends at this file offset.
    pub large_end: Option<u64>,
    /// A FORMAT_DESCRIPTION in the file: `Framer::pending_alg()` is its algorithm byte.
    pub fde: bool,
}

impl Frame {
    pub fn next_pos(&self) -> u64 {
        self.pos + self.length as u64
    }

    /// A cursor over this event's body (`raw` as the framer hands it: header,
    /// body, no checksum), whose offsets are file offsets: the body starts at
    /// `pos + header_len` (for a payload's inner event `pos` is the payload
    /// event's position, as in reader.py). The `events` decoders read it.
    pub fn body<'a>(&self, raw: &'a [u8]) -> Cursor<'a> {
        let start = self.header_len.min(raw.len());
        Cursor::new(&raw[start..], self.pos + start as u64)
    }
}

/// A TRANSACTION_PAYLOAD whose events come next.
enum Payload {
    Pending {
        compression: u64,
        data: Vec<u8>,
        offset: u64,
        /// The most bytes it may decompress to (`TransactionPayload::decompressed_limit`).
        limit: u64,
        outer_pos: u64,
    },
    Open {
        stream: StreamSource<Box<dyn Read + Send>>,
        pos: u64,
        outer_pos: u64,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Start,
    Events,
    Done,
}

/// Frames the events of one binlog, in order.
pub struct Framer<S: Source> {
    src: S,
    opts: Options,
    phase: Phase,
    pos: u64,
    fde: Format,
    raw: Vec<u8>,
    warning: Option<Error>,
    payload: Option<Payload>,
    /// Returned by the next call (events after START_ENCRYPTION are encrypted).
    deferred: Option<Error>,
    pending_alg: Option<u8>,
    /// The file's server version is known (the reader's `info.server_version`).
    version_known: bool,
    /// Facts for the reader's FileInfo.
    pub binlog_version: Option<u16>,
    pub no_start_event: bool,
    pub in_use: bool,
    pub encrypted: bool,
    pub partial_tail: bool,
    pub end_pos: Option<u64>,
}

impl<S: Source> Framer<S> {
    /// Whether a TRANSACTION_PAYLOAD's events follow it (from the next payload on).
    pub fn set_unpack_payloads(&mut self, unpack: bool) {
        self.opts.unpack_payloads = unpack;
    }

    pub fn new(src: S, opts: Options) -> Self {
        let pending_alg = opts.pending_alg;
        Framer {
            src,
            opts,
            phase: Phase::Start,
            pos: 4,
            fde: Format::v4_placeholder(),
            raw: Vec::new(),
            warning: None,
            payload: None,
            deferred: None,
            pending_alg,
            version_known: false,
            binlog_version: None,
            no_start_event: false,
            in_use: false,
            encrypted: false,
            partial_tail: false,
            end_pos: None,
        }
    }

    /// The current format (the last FDE, or the v1/v3 constants).
    pub fn format(&self) -> &Format {
        &self.fde
    }

    /// The last event's bytes from its first header byte to the end of its
    /// body (checksum and FDE algorithm byte removed).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The last event's bytes, moved out rather than copied (`raw()` is then
    /// empty until the next event), for a caller that keeps them.
    pub fn take_raw(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.raw)
    }

    /// The checksum problem `force` let the last event through with.
    pub fn warning(&self) -> Option<&Error> {
        self.warning.as_ref()
    }

    /// Where the next event starts (after the last one given).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Whether the next event's first bytes are held already: if not, the
    /// next call reads the source, which for a live stream may wait.
    pub fn next_is_held(&self) -> bool {
        self.src.held_end() > self.pos
    }

    /// The checksum-algorithm byte of the last FDE (None: it has none).
    pub fn pending_alg(&self) -> Option<u8> {
        self.pending_alg
    }

    /// Magic and version detection; `next` does this first if not done yet.
    pub fn start(&mut self) -> Result<()> {
        if self.phase != Phase::Start {
            return Ok(());
        }
        self.phase = Phase::Done;
        self.detect()?;
        self.phase = Phase::Events;
        Ok(())
    }

    /// The next event, or None at the clean end of the input.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Frame>> {
        self.warning = None;
        if self.phase == Phase::Start {
            self.start()?;
        }
        if self.phase == Phase::Done {
            return Ok(None);
        }
        let result = self.step();
        match &result {
            Err(_) | Ok(None) => self.phase = Phase::Done,
            Ok(Some(_)) => {}
        }
        result
    }

    fn step(&mut self) -> Result<Option<Frame>> {
        if let Some(error) = self.deferred.take() {
            return Err(error);
        }
        if self.payload.is_some() {
            if let Some(frame) = self.inner_event()? {
                return Ok(Some(frame));
            }
            self.payload = None;
        }
        self.outer_event()
    }

    fn detect(&mut self) -> Result<()> {
        let magic = self.src.read_at(0, 4)?.to_vec();
        if magic == ENCRYPTED_BINLOG_MAGIC {
            self.encrypted = true;
            return Err(Error::new(
                ErrorKind::EncryptedBinlog,
                0,
                "MySQL encrypted binlog (magic fd 62 69 6e): decrypt it with the server's keyring first",
            ));
        }
        if magic != BINLOG_MAGIC {
            let shown = if magic.is_empty() {
                "(empty file)".to_string()
            } else {
                magic
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            return Err(Error::new(
                ErrorKind::NotABinlog,
                0,
                format!("bad magic number {shown}"),
            ));
        }
        let first = self.src.read_at(4, LOG_EVENT_MINIMAL_HEADER_LEN)?;
        if first.len() < LOG_EVENT_MINIMAL_HEADER_LEN {
            self.binlog_version = Some(4);
            self.fde = Format::v4_placeholder();
            return Ok(());
        }
        let type_code = first[4];
        let length = le_uint(&first[9..13]);
        let version = match type_code {
            START_EVENT_V3 => {
                if length < (LOG_EVENT_MINIMAL_HEADER_LEN + START_V3_HEADER_LEN) as u64 {
                    1
                } else {
                    3
                }
            }
            FORMAT_DESCRIPTION_EVENT => 4,
            // 4.0/4.1 wrote a start event only in the first file after startup
            t if t <= USER_VAR_EVENT => {
                self.no_start_event = true;
                3
            }
            t => {
                return Err(Error::corrupt(
                    4,
                    format!(
                        "the first event has type {t}: neither a start event, a format \
                         description, nor an event a 4.x server could start a file with; \
                         nothing says how to read this file"
                    ),
                ))
            }
        };
        self.binlog_version = Some(version);
        self.fde = if version == 4 {
            Format::v4_placeholder()
        } else {
            Format::old(version)
        };
        Ok(())
    }

    fn truncated(&mut self, pos: u64, detail: String) -> Error {
        if self.in_use {
            self.partial_tail = true;
            return Error::new(
                ErrorKind::PartialEvent,
                pos,
                detail
                    + "; the server still had this file open (LOG_EVENT_BINLOG_IN_USE_F), so \
                       this is the event being written",
            );
        }
        Error::new(ErrorKind::TruncatedEvent, pos, detail)
    }

    fn outer_event(&mut self) -> Result<Option<Frame>> {
        let pos = self.src.next_event_at(self.pos)?;
        self.pos = pos;
        let head = self.src.read_at(pos, LOG_EVENT_MINIMAL_HEADER_LEN)?;
        if head.is_empty() {
            self.end_pos = Some(pos);
            return Ok(None);
        }
        let v1 = self.fde.binlog_version == 1;
        let min_len = if v1 {
            OLD_HEADER_LEN
        } else {
            LOG_EVENT_MINIMAL_HEADER_LEN
        };
        if head.len() < min_len {
            let got = head.len();
            return Err(self.truncated(
                pos,
                format!("event header cut short: {got} of {min_len} bytes"),
            ));
        }
        let timestamp = le_uint(&head[0..4]) as u32;
        let raw_type = head[4];
        let server_id = le_uint(&head[5..9]) as u32;
        let length = le_uint(&head[9..13]) as u32;
        let (log_pos, flags) = if v1 {
            (0, 0)
        } else {
            (le_uint(&head[13..17]) as u32, le_uint(&head[17..19]) as u16)
        };
        let is_description = raw_type == FORMAT_DESCRIPTION_EVENT || raw_type == START_EVENT_V3;
        // A description's own header is always the minimal one.
        let header_len = if is_description {
            min_len
        } else {
            self.fde.header_length
        };
        if (length as usize) < header_len {
            return Err(Error::corrupt(
                pos,
                format!("event length {length} is shorter than its {header_len}-byte header"),
            ));
        }
        let mut frame = Frame {
            pos,
            timestamp,
            type_code: raw_type,
            server_id,
            length,
            log_pos,
            flags,
            checksum: None,
            header_len,
            inner: false,
            large_end: None,
            fde: false,
        };
        if length as u64 > self.opts.large_event_bytes
            && LAZY_ROWS_TYPES.contains(&raw_type)
            && !self.fde.permuted
        {
            if let Some(size) = self.src.file_size() {
                return self.large_rows_event(frame, size).map(Some);
            }
        }
        let raw = self.src.read_at(pos, length as usize)?;
        if raw.len() < length as usize {
            let got = raw.len();
            return Err(self.truncated(
                pos,
                format!("event of {length} bytes cut short at {got} bytes (type {raw_type})"),
            ));
        }
        self.raw.clear();
        self.raw.extend_from_slice(raw);
        if self.fde.permuted && (raw_type as usize) < WL2325_EVENT_PERMUTATION.len() {
            frame.type_code = WL2325_EVENT_PERMUTATION[raw_type as usize];
        }
        let mut body_end = length as usize;
        let mut error = None;
        if raw_type == FORMAT_DESCRIPTION_EVENT {
            frame.fde = true;
            (body_end, frame.checksum, error) = self.fde_checksum(pos);
        } else if self.fde.checksum_alg == Some(BINLOG_CHECKSUM_ALG_CRC32) {
            if (length as usize) < header_len + BINLOG_CHECKSUM_LEN {
                return Err(Error::corrupt(
                    pos,
                    format!("event length {length} leaves no room for its checksum"),
                ));
            }
            body_end = length as usize - BINLOG_CHECKSUM_LEN;
            let stored = le_uint(&self.raw[body_end..]) as u32;
            frame.checksum = Some(stored);
            if self.opts.verify_checksums {
                let computed = crc32(&[&self.raw[..body_end]]);
                if computed != stored {
                    error = Some(Error::new(
                        ErrorKind::ChecksumMismatch,
                        pos,
                        format!(
                            "CRC32 checksum mismatch: stored 0x{stored:08x}, computed 0x{computed:08x}"
                        ),
                    ));
                }
            }
        }
        if let Some(error) = error {
            if !self.opts.force {
                return Err(error);
            }
            self.warning = Some(error);
        }
        self.raw.truncate(body_end);
        self.after_event(&frame);
        self.pos = pos + length as u64;
        if let Some(start) = self.opts.start_position {
            if self.pos < start {
                self.pos = start;
            }
        }
        Ok(Some(frame))
    }

    /// The FDE's checksum rules; `self.raw` holds the whole event.
    fn fde_checksum(&mut self, pos: u64) -> (usize, Option<u32>, Option<Error>) {
        let raw = &self.raw;
        let from = (LOG_EVENT_MINIMAL_HEADER_LEN + 2).min(raw.len());
        let to = (LOG_EVENT_MINIMAL_HEADER_LEN + 52).min(raw.len());
        if !has_checksum_field(until_nul(&raw[from..to])) {
            self.pending_alg = None;
            return (raw.len(), None, None);
        }
        // length >= 19 here, so both offsets are inside the event.
        let alg_at = raw.len() - BINLOG_CHECKSUM_LEN - BINLOG_CHECKSUM_ALG_DESC_LEN;
        let alg = raw[alg_at];
        self.pending_alg = Some(alg);
        let stored = le_uint(&raw[raw.len() - 4..]) as u32;
        let mut error = None;
        // With checksums OFF some servers (MariaDB 10.6) leave the FDE's own CRC zero.
        if self.opts.verify_checksums && alg == BINLOG_CHECKSUM_ALG_CRC32 {
            let flags = [raw[17] & !(LOG_EVENT_BINLOG_IN_USE_F as u8)];
            let computed = crc32(&[&raw[..17], &flags, &raw[18..raw.len() - 4]]);
            if computed != stored {
                error = Some(Error::new(
                    ErrorKind::ChecksumMismatch,
                    pos,
                    format!(
                        "CRC32 checksum mismatch in the format description: stored \
                         0x{stored:08x}, computed 0x{computed:08x}"
                    ),
                ));
            }
        }
        (alg_at, Some(stored), error)
    }

    /// A rows event too big to hold: checksum it through the window and
    /// hand out its head; the row images stay in the file.
    fn large_rows_event(&mut self, mut frame: Frame, size: u64) -> Result<Frame> {
        let (pos, length) = (frame.pos, frame.length as u64);
        if pos + length > size {
            let got = size.saturating_sub(pos);
            let t = frame.type_code;
            return Err(self.truncated(
                pos,
                format!("event of {length} bytes cut short at {got} bytes (type {t})"),
            ));
        }
        let mut body_end = length;
        if self.fde.checksum_alg == Some(BINLOG_CHECKSUM_ALG_CRC32) {
            body_end = length - BINLOG_CHECKSUM_LEN as u64;
            let stored = le_uint(self.src.read_at(pos + body_end, 4)?) as u32;
            frame.checksum = Some(stored);
            if self.opts.verify_checksums {
                let mut h = crc32fast::Hasher::new();
                let mut offset = 0u64;
                while offset < body_end {
                    let n = (WINDOW as u64).min(body_end - offset) as usize;
                    h.update(self.src.read_at(pos + offset, n)?);
                    offset += WINDOW as u64;
                }
                let computed = h.finalize();
                if computed != stored {
                    let error = Error::new(
                        ErrorKind::ChecksumMismatch,
                        pos,
                        format!(
                            "CRC32 checksum mismatch: stored 0x{stored:08x}, computed 0x{computed:08x}"
                        ),
                    );
                    if !self.opts.force {
                        return Err(error);
                    }
                    self.warning = Some(error);
                }
            }
        }
        let head = self
            .src
            .read_at(pos, (body_end as usize).min(LARGE_EVENT_HEAD))?;
        self.raw.clear();
        self.raw.extend_from_slice(head);
        frame.large_end = Some(pos + body_end);
        // As reader.py: no state change and no start-position jump after it.
        self.pos = pos + length;
        Ok(frame)
    }

    /// The state an event changes, exactly when the Python decoders would
    /// produce the event that changes it in reader.py.
    fn after_event(&mut self, frame: &Frame) {
        let body = self.raw.get(frame.header_len..).unwrap_or(&[]);
        match frame.type_code {
            // a header length under 19 fails the Python decoder (and would
            // make every event zero bytes long): the state stays as it was
            FORMAT_DESCRIPTION_EVENT
                if body.len() > 2 + ST_SERVER_VER_LEN + 4
                    && body[56] as usize >= LOG_EVENT_MINIMAL_HEADER_LEN =>
            {
                let binlog_version = le_uint(&body[0..2]) as u16;
                let server_version = until_nul(&body[2..2 + ST_SERVER_VER_LEN]).to_vec();
                let header_length = body[56] as usize;
                let mut post_header = body[57..].to_vec();
                let permuted = is_wl2325(&server_version);
                if permuted {
                    let mut p = vec![0u8; post_header.len()];
                    let n = (post_header.len() + 1).min(WL2325_EVENT_PERMUTATION.len());
                    for old_code in 1..n {
                        let new = WL2325_EVENT_PERMUTATION[old_code] as usize;
                        if let Some(slot) = p.get_mut(new.wrapping_sub(1)) {
                            *slot = post_header[old_code - 1];
                        }
                    }
                    post_header = p;
                }
                self.fde = Format {
                    binlog_version,
                    server_version,
                    header_length,
                    post_header_lengths: post_header,
                    checksum_alg: self.pending_alg,
                    permuted,
                };
                if !self.version_known {
                    self.version_known = true;
                    self.in_use = frame.flags & LOG_EVENT_BINLOG_IN_USE_F != 0;
                }
            }
            START_EVENT_V3 if body.len() >= START_V3_HEADER_LEN => self.version_known = true,
            TRANSACTION_PAYLOAD_EVENT if !frame.inner && self.opts.unpack_payloads => {
                let base = frame.pos + frame.header_len as u64;
                if let Some(payload) = parse_payload(body, base, frame.pos) {
                    self.payload = Some(payload);
                }
            }
            START_ENCRYPTION_EVENT => {
                self.encrypted = true;
                self.deferred = Some(Error::new(
                    ErrorKind::EncryptedBinlog,
                    frame.next_pos(),
                    "events after START_ENCRYPTION_EVENT are encrypted (MariaDB \
                     encrypt_binlog); decrypt with the server's key file first",
                ));
            }
            _ => {}
        }
    }

    fn inner_event(&mut self) -> Result<Option<Frame>> {
        if let Some(Payload::Pending { .. }) = self.payload {
            let Some(Payload::Pending {
                compression,
                data,
                offset,
                limit,
                outer_pos,
            }) = self.payload.take()
            else {
                unreachable!("matched above")
            };
            let reader: Box<dyn Read + Send> = match compression {
                PAYLOAD_NONE => Box::new(io::Cursor::new(data)),
                PAYLOAD_ZSTD => {
                    let decoder = zstd::stream::read::Decoder::with_buffer(io::Cursor::new(data))
                        .map_err(|e| zstd_error(outer_pos, e))?;
                    Box::new(Bounded {
                        inner: EndOfInput(decoder.single_frame()),
                        left: limit,
                    })
                }
                other => {
                    return Err(Error::new(
                        ErrorKind::UnsupportedFeature,
                        offset,
                        format!("unknown payload compression {other}"),
                    ))
                }
            };
            self.payload = Some(Payload::Open {
                stream: StreamSource::new(reader),
                pos: 0,
                outer_pos,
            });
        }
        let Some(Payload::Open {
            stream,
            pos,
            outer_pos,
        }) = self.payload.as_mut()
        else {
            return Ok(None);
        };
        let (ipos, outer_pos) = (*pos, *outer_pos);
        let head = stream
            .read_at(ipos, LOG_EVENT_MINIMAL_HEADER_LEN)
            .map_err(|e| zstd_read(outer_pos, e))?;
        if head.is_empty() {
            return Ok(None);
        }
        if head.len() < LOG_EVENT_MINIMAL_HEADER_LEN {
            return Err(Error::corrupt(
                outer_pos,
                format!("transaction payload: {} stray bytes at its end", head.len()),
            ));
        }
        let frame = Frame {
            pos: outer_pos,
            timestamp: le_uint(&head[0..4]) as u32,
            type_code: head[4],
            server_id: le_uint(&head[5..9]) as u32,
            length: le_uint(&head[9..13]) as u32,
            log_pos: le_uint(&head[13..17]) as u32,
            flags: le_uint(&head[17..19]) as u16,
            checksum: None,
            header_len: self.fde.header_length,
            inner: true,
            large_end: None,
            fde: false,
        };
        let length = frame.length as usize;
        let raw: &[u8] = if length >= LOG_EVENT_MINIMAL_HEADER_LEN {
            stream
                .read_at(ipos, length)
                .map_err(|e| zstd_read(outer_pos, e))?
        } else {
            &[]
        };
        if raw.len() < length.max(LOG_EVENT_MINIMAL_HEADER_LEN) {
            return Err(Error::corrupt(
                outer_pos,
                format!("transaction payload: inner event at {ipos} has bad length {length}"),
            ));
        }
        self.raw.clear();
        self.raw.extend_from_slice(raw);
        *pos = ipos + length as u64;
        self.after_event(&frame);
        Ok(Some(frame))
    }
}

/// A frame cut short ends the stream rather than failing it, as with
/// python-zstandard's `stream_reader`: the inner framing then reports what is missing.
struct EndOfInput<R>(R);

impl<R: Read> Read for EndOfInput<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.0.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(0),
            other => other,
        }
    }
}

/// A decompressing reader that fails once it gives more than `left` bytes:
/// a payload never decompresses past the size its header claims.
struct Bounded<R> {
    inner: R,
    left: u64,
}

/// The words of the reader's error past the bound (events/payload.py's).
const PAST_CLAIMED_SIZE: &str = "decompresses past the size its header claims";

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(n)
            }
            None => Err(io::Error::other(PAST_CLAIMED_SIZE)),
        }
    }
}

fn zstd_error(outer_pos: u64, e: io::Error) -> Error {
    Error::corrupt(outer_pos, format!("transaction payload: zstd: {e}"))
}

/// A read error inside a payload stream is the decompressor's (or the
/// bound's), not the disk's.
fn zstd_read(outer_pos: u64, e: Error) -> Error {
    if e.detail.ends_with(PAST_CLAIMED_SIZE) {
        return Error::corrupt(
            outer_pos,
            format!("transaction payload: {PAST_CLAIMED_SIZE}"),
        );
    }
    Error::corrupt(
        outer_pos,
        format!("transaction payload: zstd: {}", e.detail),
    )
}

/// TRANSACTION_PAYLOAD's TLV header, accepted exactly when
/// events/payload.py decodes it (else the reader keeps it undecoded and
/// does not unpack it): `events::decode_transaction_payload`.
fn parse_payload(body: &[u8], base: u64, outer_pos: u64) -> Option<Payload> {
    let mut cur = Cursor::new(body, base);
    let payload = crate::events::decode_transaction_payload(&mut cur).ok()?;
    Some(Payload::Pending {
        compression: payload.compression_type,
        data: payload.payload.to_vec(),
        offset: payload.payload_offset,
        limit: payload.decompressed_limit(),
        outer_pos,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One v4 event: header (19 bytes) + body, with a CRC32 when `crc`.
    fn event(type_code: u8, flags: u16, body: &[u8], crc: bool, pos: u32) -> Vec<u8> {
        let length = (19 + body.len() + if crc { 4 } else { 0 }) as u32;
        let mut e = Vec::new();
        e.extend_from_slice(&1_700_000_000u32.to_le_bytes());
        e.push(type_code);
        e.extend_from_slice(&7u32.to_le_bytes());
        e.extend_from_slice(&length.to_le_bytes());
        e.extend_from_slice(&(pos + length).to_le_bytes());
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(body);
        if crc {
            let c = crc32(&[&e]);
            e.extend_from_slice(&c.to_le_bytes());
        }
        e
    }

    fn fde_body(version: &str, alg: Option<u8>) -> Vec<u8> {
        let mut b = 4u16.to_le_bytes().to_vec();
        let mut v = version.as_bytes().to_vec();
        v.resize(ST_SERVER_VER_LEN, 0);
        b.extend_from_slice(&v);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.push(19);
        b.extend_from_slice(&[0u8; 40]); // post-header lengths
        b.extend(alg);
        b
    }

    /// A v4 binlog of `server` with CRC32 when `crc`, then the given (type, body) events.
    fn binlog(server: &str, crc: bool, in_use: bool, events: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut out = BINLOG_MAGIC.to_vec();
        let alg = has_checksum_field(server.as_bytes()).then_some(crc as u8);
        // The FDE's CRC is computed with IN_USE clear; set the flag afterwards.
        let mut fde = event(
            FORMAT_DESCRIPTION_EVENT,
            0,
            &fde_body(server, alg),
            alg.is_some(),
            4,
        );
        if in_use {
            fde[17] |= 1;
        }
        out.extend(fde);
        for (t, body) in events {
            let pos = out.len() as u32;
            out.extend(event(*t, 0, body, crc, pos));
        }
        out
    }

    fn frames(data: &[u8], opts: Options) -> (Vec<Frame>, Option<Error>) {
        let mut f = Framer::new(StreamSource::new(data), opts);
        let mut out = Vec::new();
        loop {
            match f.next() {
                Ok(Some(frame)) => out.push(frame),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn v4_with_checksums_frames_and_strips_crc() {
        let data = binlog(
            "5.7.30-log",
            true,
            false,
            &[(QUERY_EVENT, vec![1; 30]), (XID_EVENT, vec![2; 8])],
        );
        let mut f = Framer::new(StreamSource::new(&data[..]), Options::default());
        let fde = f.next().unwrap().unwrap();
        assert!(fde.fde && fde.checksum.is_some());
        assert_eq!(f.pending_alg(), Some(BINLOG_CHECKSUM_ALG_CRC32));
        assert_eq!(f.format().checksum_alg, Some(1));
        let q = f.next().unwrap().unwrap();
        assert_eq!(
            (q.pos, q.type_code, q.length),
            (fde.next_pos(), QUERY_EVENT, 19 + 30 + 4)
        );
        assert_eq!(f.raw().len(), 19 + 30);
        assert_eq!(f.next().unwrap().unwrap().type_code, XID_EVENT);
        assert_eq!(f.next().unwrap(), None);
        assert_eq!(f.end_pos, Some(data.len() as u64));
    }

    #[test]
    fn crc_mismatch_stops_unless_forced() {
        let mut data = binlog(
            "10.6.4-MariaDB",
            true,
            false,
            &[(QUERY_EVENT, vec![1; 30]), (XID_EVENT, vec![2; 8])],
        );
        let fde_len = le_uint(&data[13..17]) as usize;
        data[4 + fde_len + 25] ^= 0xff;
        let (got, err) = frames(&data, Options::default());
        assert_eq!(got.len(), 1);
        let err = err.unwrap();
        assert_eq!(
            (err.kind, err.offset),
            (ErrorKind::ChecksumMismatch, 4 + fde_len as u64)
        );
        let (got, err) = frames(
            &data,
            Options {
                force: true,
                ..Options::default()
            },
        );
        assert_eq!((got.len(), err), (3, None));
        let (got, err) = frames(
            &data,
            Options {
                verify_checksums: false,
                ..Options::default()
            },
        );
        assert_eq!((got.len(), err), (3, None));
    }

    #[test]
    fn old_servers_fde_has_no_checksum_field() {
        assert!(!has_checksum_field(b"5.6.0-log") && has_checksum_field(b"5.6.1-m5"));
        assert!(!has_checksum_field(b"5.2.9-MariaDB") && has_checksum_field(b"5.3.0-MariaDB"));
        let data = binlog("5.1.73-log", false, false, &[(QUERY_EVENT, vec![1; 30])]);
        let (got, err) = frames(&data, Options::default());
        assert_eq!((got.len(), err, got[0].checksum), (2, None, None));
    }

    #[test]
    fn bad_magic_encrypted_and_empty() {
        let e = frames(b"", Options::default()).1.unwrap();
        assert_eq!(
            (e.kind, e.offset, e.detail.as_str()),
            (ErrorKind::NotABinlog, 0, "bad magic number (empty file)")
        );
        let e = frames(b"\xfdbin\0\0", Options::default()).1.unwrap();
        assert_eq!(e.kind, ErrorKind::EncryptedBinlog);
        let e = frames(b"GIF89a", Options::default()).1.unwrap();
        assert_eq!(e.detail, "bad magic number 47 49 46 38");
        assert_eq!(frames(BINLOG_MAGIC, Options::default()), (vec![], None));
    }

    #[test]
    fn truncation_is_partial_in_an_in_use_file() {
        let data = binlog("8.0.30", true, true, &[(QUERY_EVENT, vec![1; 30])]);
        let cut = &data[..data.len() - 3];
        let (got, err) = frames(cut, Options::default());
        assert_eq!((got.len(), err.unwrap().kind), (1, ErrorKind::PartialEvent));
        let data = binlog("8.0.30", true, false, &[(QUERY_EVENT, vec![1; 30])]);
        let (_, err) = frames(&data[..data.len() - 40], Options::default());
        let err = err.unwrap();
        assert_eq!(err.kind, ErrorKind::TruncatedEvent);
        assert!(
            err.detail.starts_with("event header cut short"),
            "{}",
            err.detail
        );
    }

    #[test]
    fn bogus_lengths_are_errors_without_allocating() {
        let mut data = binlog("8.0.30", true, false, &[(QUERY_EVENT, vec![1; 30])]);
        let at = data.len() - 53 + 9;
        data[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = frames(&data, Options::default()).1.unwrap();
        assert_eq!(err.kind, ErrorKind::TruncatedEvent);
        data[at..at + 4].copy_from_slice(&10u32.to_le_bytes());
        let err = frames(&data, Options::default()).1.unwrap();
        assert_eq!(err.kind, ErrorKind::CorruptEvent);
        data[at..at + 4].copy_from_slice(&21u32.to_le_bytes());
        let err = frames(&data, Options::default()).1.unwrap();
        assert_eq!(
            err.detail,
            "event length 21 leaves no room for its checksum"
        );
    }

    #[test]
    fn version_detection_v1_v3_and_no_start_event() {
        // v1: a START_EVENT_V3 of 69 bytes, 13-byte headers after it.
        let mut data = BINLOG_MAGIC.to_vec();
        let mut start = vec![0u8; 13];
        start[4] = START_EVENT_V3;
        start[9..13].copy_from_slice(&69u32.to_le_bytes());
        start.extend_from_slice(&[0u8; 56]);
        data.extend(&start);
        let mut q = vec![0u8; 13];
        q[4] = QUERY_EVENT;
        q[9..13].copy_from_slice(&30u32.to_le_bytes());
        q.extend_from_slice(&[b'x'; 17]);
        data.extend(&q);
        let mut f = Framer::new(StreamSource::new(&data[..]), Options::default());
        f.next().unwrap().unwrap();
        assert_eq!(f.binlog_version, Some(1));
        let q = f.next().unwrap().unwrap();
        assert_eq!((q.pos, q.header_len, q.log_pos), (73, 13, 0));
        assert_eq!(f.next().unwrap(), None);
        // A 4.x file starting with a QUERY: v3 without a start event.
        let mut data = BINLOG_MAGIC.to_vec();
        data.extend(event(QUERY_EVENT, 0, &[0; 20], false, 4));
        let mut f = Framer::new(StreamSource::new(&data[..]), Options::default());
        assert_eq!(f.next().unwrap().unwrap().type_code, QUERY_EVENT);
        assert_eq!((f.binlog_version, f.no_start_event), (Some(3), true));
        // Nothing a file can start with.
        let mut data = BINLOG_MAGIC.to_vec();
        data.extend(event(GTID_LOG_EVENT, 0, &[0; 20], false, 4));
        let err = frames(&data, Options::default()).1.unwrap();
        assert_eq!((err.kind, err.offset), (ErrorKind::CorruptEvent, 4));
    }

    #[test]
    fn wl2325_codes_are_renumbered() {
        let data = binlog(
            "5.2.2-a_drop6p13-debug-log",
            false,
            false,
            &[(16, vec![0; 10]), (20, vec![0; 10])],
        );
        let (got, err) = frames(&data, Options::default());
        assert_eq!(err, None);
        assert_eq!(
            (got[1].type_code, got[2].type_code),
            (TABLE_MAP_EVENT, XID_EVENT)
        );
    }

    fn packed(n: u64) -> Vec<u8> {
        match n {
            0..=250 => vec![n as u8],
            _ => [vec![252], (n as u16).to_le_bytes().to_vec()].concat(),
        }
    }

    /// TRANSACTION_PAYLOAD body: TLV fields (compression, size), end mark, payload.
    fn payload_event(compression: u8, payload: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for (field, value) in [(2u64, compression as u64), (1, payload.len() as u64)] {
            let v = packed(value);
            body.extend(packed(field));
            body.extend(packed(v.len() as u64));
            body.extend(v);
        }
        body.push(0);
        body.extend_from_slice(payload);
        body
    }

    #[test]
    fn transaction_payload_events_follow_it() {
        let mut inner = event(QUERY_EVENT, 0, &[b'q'; 20], false, 0);
        inner.extend(event(XID_EVENT, 0, &[9; 8], false, 0));
        for (compression, stored) in [
            (PAYLOAD_NONE as u8, inner.clone()),
            (PAYLOAD_ZSTD as u8, zstd::encode_all(&inner[..], 3).unwrap()),
        ] {
            let body = payload_event(compression, &stored);
            let data = binlog(
                "8.0.30",
                true,
                false,
                &[
                    (TRANSACTION_PAYLOAD_EVENT, body),
                    (ROTATE_EVENT, vec![0; 12]),
                ],
            );
            let (got, err) = frames(&data, Options::default());
            assert_eq!(err, None);
            let kinds: Vec<_> = got.iter().map(|f| (f.type_code, f.inner)).collect();
            assert_eq!(
                kinds,
                [
                    (15, false),
                    (40, false),
                    (QUERY_EVENT, true),
                    (XID_EVENT, true),
                    (ROTATE_EVENT, false)
                ]
            );
            assert_eq!(got[2].pos, got[1].pos);
            let (got, _) = frames(
                &data,
                Options {
                    unpack_payloads: false,
                    ..Options::default()
                },
            );
            assert_eq!(got.len(), 3);
        }
        // An unknown compression is an error after the payload event.
        let data = binlog(
            "8.0.30",
            true,
            false,
            &[(TRANSACTION_PAYLOAD_EVENT, payload_event(7, &inner))],
        );
        let (got, err) = frames(&data, Options::default());
        assert_eq!(
            (got.len(), err.unwrap().kind),
            (2, ErrorKind::UnsupportedFeature)
        );
    }

    #[test]
    fn huge_rows_events_stay_in_the_file() {
        let data = binlog(
            "8.0.30",
            true,
            false,
            &[
                (WRITE_ROWS_EVENT, vec![5; 200_000]),
                (XID_EVENT, vec![1; 8]),
            ],
        );
        let path = std::env::temp_dir().join(format!("binlake-huge-{}", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let src = crate::source::FileSource::open(path.to_str().unwrap()).unwrap();
        let mut f = Framer::new(
            src,
            Options {
                large_event_bytes: 1000,
                ..Options::default()
            },
        );
        f.next().unwrap();
        let rows = f.next().unwrap().unwrap();
        assert_eq!(rows.large_end, Some(rows.pos + 19 + 200_000));
        assert_eq!(f.raw().len(), LARGE_EVENT_HEAD);
        assert_eq!(f.next().unwrap().unwrap().type_code, XID_EVENT);
        std::fs::remove_file(&path).unwrap();
    }

    /// Every file of the shared corpus: positions chain from 4, and an error
    /// happens only on a file MANIFEST.md marks corrupt, truncated or encrypted.
    #[test]
    fn corpus_walk() {
        let root = std::env::var("BINLAKE_CORPUS").unwrap_or_else(|_| {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/binlogs").to_string()
        });
        let root = std::path::Path::new(&root);
        let Ok(manifest) = std::fs::read_to_string(root.join("MANIFEST.md")) else {
            eprintln!(
                "corpus_walk: no MANIFEST.md under {} (set BINLAKE_CORPUS); skipped",
                root.display()
            );
            return;
        };
        let mut bad = std::collections::HashMap::new();
        for line in manifest.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split('|').collect();
            let (Some(name), Some(cond)) = (cells.get(1), cells.get(6)) else {
                continue;
            };
            let c = cond.to_uppercase();
            let must_fail = ([
                "CORRUPT",
                "TRUNCATED",
                "ENCRYPTED",
                "MALFORMED",
                "NOT A BINLOG",
            ]
            .iter()
            .any(|w| c.contains(w))
                && !c.contains("EVENTS INTACT"))
                || c.contains("STALE CRC32");
            bad.insert(name.trim().trim_matches('`').to_string(), must_fail);
        }
        let (mut files, mut events) = (0, 0);
        for (name, must_fail) in &bad {
            let path = root.join(name);
            let is_gz = name.ends_with(".gz");
            let src: Box<dyn Source> = if is_gz {
                let file = std::fs::File::open(&path).unwrap();
                Box::new(StreamSource::new(flate2::read::MultiGzDecoder::new(file)))
            } else {
                Box::new(crate::source::FileSource::open(path.to_str().unwrap()).unwrap())
            };
            let mut f = Framer::new(src, Options::default());
            let mut expected = 4;
            let result = loop {
                match f.next() {
                    Ok(Some(frame)) => {
                        events += 1;
                        if !frame.inner {
                            assert_eq!(frame.pos, expected, "{name}");
                            expected = frame.next_pos();
                        }
                    }
                    Ok(None) => break Ok(expected),
                    Err(e) => break Err(e),
                }
            };
            match result {
                Ok(end) => {
                    if !is_gz {
                        assert_eq!(end, std::fs::metadata(&path).unwrap().len(), "{name}");
                    }
                }
                Err(e) => assert!(must_fail, "{name}: unexpected {:?} {e}", e.kind),
            }
            files += 1;
        }
        assert!(files > 100, "only {files} corpus files");
        eprintln!("corpus_walk: {files} files, {events} events");
    }
}
