"""A fast walk over event headers: positions, types, timestamps and transaction boundaries.

Strategy: memory-map the file and hop from header to header with one
`struct.unpack_from` each; event bodies are never decoded. Only three kinds
of event are peeked at, a few bytes each, because the transaction structure
needs them: the format description (header length, checksum algorithm,
post-header lengths), QUERY events (is the statement BEGIN, COMMIT, ...?)
and, outside explicit transactions, the STMT_END_F flag of rows events.

A *boundary* is a position where no transaction or statement is open: the
events from there on can be decoded knowing only the format description at
offset 4, because row-based logs write a statement's table maps right before
its rows events inside the transaction. That is what lets a Spark task read
a byte range of a file on its own (see binlake.spark.read.ranges).

Rule: `TransactionState` is the one definition of where transactions start
and end; the scan feeds it type codes and the range reader feeds it decoded
events, so both agree by construction.
"""

from __future__ import annotations

import mmap
import os
import struct
import uuid
import zlib
from array import array
from dataclasses import dataclass, field

from binlake.constants import (BINLOG_CHECKSUM_LEN, BINLOG_MAGIC, FL_STANDALONE,
                        LOG_EVENT_MINIMAL_HEADER_LEN, OLD_HEADER_LEN, START_V3_HEADER_LEN,
                        STMT_END_F, ChecksumAlg, EventType as E, LogEventFlag)
from binlake.read.events import MariadbGtidEvent, QueryEvent, RowsEvent
from binlake.read.events.control import has_checksum_field
from binlake.read.events.rows import ROWS_OPERATION
from binlake.read.gzipped import GZIP_MAGIC, GzipBinlog
from binlake.read.reader import _permutation  # the reader's own wl2325 renumbering

_HEADER = struct.Struct("<IBIIIH")
_HEADER_V1 = struct.Struct("<IBII")
_U16 = struct.Struct("<H").unpack_from

GTID_EVENTS = frozenset({E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT, E.GTID_TAGGED_LOG_EVENT})
QUERY_EVENTS = frozenset({E.QUERY_EVENT, E.QUERY_COMPRESSED_EVENT, E.EXECUTE_LOAD_QUERY_EVENT})
ROWS_EVENTS = frozenset(ROWS_OPERATION)
#: Events that belong to the statement that follows them (session context,
#: row annotations, table maps, LOAD DATA blocks): they open a statement.
STATEMENT_PARTS = frozenset({E.TABLE_MAP_EVENT, E.ROWS_QUERY_LOG_EVENT, E.ANNOTATE_ROWS_EVENT,
                             E.INTVAR_EVENT, E.RAND_EVENT, E.USER_VAR_EVENT,
                             E.BEGIN_LOAD_QUERY_EVENT, E.APPEND_BLOCK_EVENT,
                             E.CREATE_FILE_EVENT})
#: Statements complete in one event (old LOAD DATA generations).
STATEMENT_ENDS = frozenset({E.LOAD_EVENT, E.NEW_LOAD_EVENT, E.EXEC_LOAD_EVENT, E.DELETE_FILE_EVENT})

BEGIN, END, OTHER = "begin", "end", "other"
RELEASE_BYTES = 64 << 20


def classify_query(query: bytes | str) -> str:
    """BEGIN / END (COMMIT, ROLLBACK, XA PREPARE/COMMIT/ROLLBACK) / OTHER.

    The server writes these statements verbatim, so a prefix test is exact;
    `ROLLBACK TO SAVEPOINT` stays inside its transaction.
    """
    if isinstance(query, str):
        query = query.encode("utf-8", "replace")
    head = query[:17].upper()
    if head == b"BEGIN" or head.startswith((b"XA START", b"XA BEGIN")):
        return BEGIN
    if head in (b"COMMIT", b"ROLLBACK") or head.startswith((b"XA PREPARE", b"XA COMMIT",
                                                             b"XA ROLLBACK")):
        return END
    return OTHER


class TransactionState:
    """Whether a transaction (or a statement outside one) is open.

    `open`: some event since the last boundary still needs its sequel.
    `explicit`: inside BEGIN ... COMMIT/XID (or a MariaDB GTID group), where
    only the end of the transaction closes; outside, a statement closes with
    its last event (a QUERY, or a rows event flagged STMT_END_F).
    """

    __slots__ = ("open", "explicit")

    def __init__(self):
        self.open = False
        self.explicit = False

    def starts(self, code: int, query_kind: str | None = None) -> bool:
        """Whether this event begins a transaction even though one is open:
        a GTID, or a BEGIN inside BEGIN, means the open one never ended
        (crash-recovery leftovers)."""
        return code in GTID_EVENTS or code == E.GTID_EVENT or (
            query_kind == BEGIN and self.explicit)

    def step(self, code: int, query_kind: str | None = None, stmt_end: bool = False,
             standalone: bool = False) -> None:
        if code in ROWS_EVENTS:
            if not self.explicit and stmt_end:
                self.open = False
            else:
                self.open = True
        elif code in STATEMENT_PARTS:
            self.open = True
        elif code in QUERY_EVENTS:
            if query_kind == BEGIN:
                self.open = self.explicit = True
            elif query_kind == END or not self.explicit:
                self.open = self.explicit = False
        elif code == E.XID_EVENT or code == E.XA_PREPARE_LOG_EVENT:
            self.open = self.explicit = False
        elif code in GTID_EVENTS:
            self.open, self.explicit = True, False
        elif code == E.GTID_EVENT:  # MariaDB: the GTID event stands for BEGIN
            self.open, self.explicit = True, not standalone
        elif code == E.TRANSACTION_PAYLOAD_EVENT:
            # Holds the rest of the transaction (BEGIN ... XID) compressed.
            self.open = self.explicit = False
        elif code in STATEMENT_ENDS and not self.explicit:
            self.open = False


def step_details(event, code: int) -> dict:
    """What `TransactionState.step` needs of a decoded event besides its code."""
    if code in QUERY_EVENTS and isinstance(event, QueryEvent):
        return {"query_kind": classify_query(event.query)}
    if isinstance(event, RowsEvent):
        return {"stmt_end": bool(event.flags & STMT_END_F)}
    if isinstance(event, MariadbGtidEvent):
        return {"standalone": bool(event.flags2 & FL_STANDALONE)}
    return {}


@dataclass
class Framing:
    """What the first event says about how to frame and peek the rest."""

    binlog_version: int
    header_length: int
    checksum_len: int                 #: 4 with CRC32, else 0
    post_header_lengths: bytes        #: by type code - 1, as in the FDE (b"": v1/v3)
    permutation: tuple | None         #: early-5.1 renumbering (wl2325), else None
    server_version: str = ""
    in_use: bool = False
    fde_end: int = 4                  #: position after the first event

    def post_len(self, code: int, default: int = 0) -> int:
        lengths = self.post_header_lengths
        return lengths[code - 1] if 0 < code <= len(lengths) else default

    @property
    def query_post_header(self) -> int:
        return self.post_len(E.QUERY_EVENT, 11)

    def table_id_width(self, code: int) -> int:
        """Rows and table map post-headers: 6-byte table ids, 4 before 5.1.?"""
        return 4 if self.post_len(code) == 6 else 6


@dataclass
class ScanResult:
    path: str
    size: int
    framing: Framing | None
    positions: array = field(default_factory=lambda: array("q"))
    types: array = field(default_factory=lambda: array("B"))       #: type codes (remapped)
    timestamps: array = field(default_factory=lambda: array("L"))
    boundaries: array = field(default_factory=lambda: array("q"))  #: transaction starts
    #: QUERY events other than BEGIN/COMMIT/ROLLBACK/XA: where DDL can be
    statements: array = field(default_factory=lambda: array("q"))
    closed_end: int = 4     #: after the last event that left no transaction open
    end: int = 4            #: after the last complete event
    descriptions: int = 0   #: format description events seen (relay logs have several)
    stopped: str | None = None  #: why the walk ended before the file did, if it did
    #: the next file's name, when the walk ended with a ROTATE event (a closed binlog)
    rotates_to: str | None = None

    def split_points(self, every: int) -> list[int]:
        """Boundaries about `every` bytes apart (each the first at or past a multiple)."""
        points, target = [], every
        for pos in self.boundaries:
            if pos >= target:
                points.append(pos)
                target = pos + every
        return points


def read_framing(buf, size: int) -> Framing | None:
    """The format of the file from its first event (None: not a v1-v4 binlog)."""
    if size < 4 + OLD_HEADER_LEN or buf[:4] != BINLOG_MAGIC:
        return None
    code = buf[4 + 4]
    length = int.from_bytes(buf[4 + 9:4 + 13], "little")
    if code == E.START_EVENT_V3 and length < LOG_EVENT_MINIMAL_HEADER_LEN + START_V3_HEADER_LEN:
        return Framing(1, OLD_HEADER_LEN, 0, b"", None, fde_end=4 + length)
    if code != E.FORMAT_DESCRIPTION_EVENT or size < 4 + length:
        return Framing(3, LOG_EVENT_MINIMAL_HEADER_LEN, 0, b"", None,
                       fde_end=4 + length if code == E.START_EVENT_V3 else 4)
    return _fde_framing(buf, 4, length)


def _fde_framing(buf, pos: int, length: int) -> Framing:
    body = pos + LOG_EVENT_MINIMAL_HEADER_LEN
    version = bytes(buf[body + 2:body + 52]).split(b"\0")[0].decode("latin-1")
    header_length = buf[body + 56]
    end = pos + length
    checksum_len = 0
    if has_checksum_field(version):
        end -= BINLOG_CHECKSUM_LEN + 1
        if buf[end] == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32:
            checksum_len = BINLOG_CHECKSUM_LEN
    permutation, post = _permutation(version, bytes(buf[body + 57:end]))
    flags = _U16(buf, pos + 17)[0]
    return Framing(4, header_length, checksum_len, post, permutation, version,
                   bool(flags & LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F), pos + length)


def scan(path: str | os.PathLike, start: int | None = None, stop: int | None = None) -> ScanResult:
    """Walk the event headers of `path` from `start` (a boundary; default:
    the first event) up to `stop` (default: end of file)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return ScanResult(path, 0, None, stopped="empty file")
        if f.read(2) == GZIP_MAGIC:  # the reader streams these; here they are inflated whole
            with GzipBinlog(path) as inflated:
                data = inflated.read()
            return _scan_buffer(path, data, len(data), start, stop)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _scan_buffer(path, buf, size, start, stop)


def _scan_buffer(path: str, buf, size: int, start: int | None, stop: int | None) -> ScanResult:
    framing = read_framing(buf, size)
    if framing is None:
        return ScanResult(path, size, None, stopped="not a binlog")
    result = ScanResult(path, size, framing)
    _walk(buf, min(size, stop) if stop is not None else size, framing, result,
          start if start is not None else 4)
    if result.types and result.types[-1] == E.ROTATE_EVENT:
        result.rotates_to = _rotate_target(bytes(buf[result.positions[-1]:result.end]), framing)
    return result


def _rotate_target(event: bytes, framing: Framing) -> str | None:
    """The file name a ROTATE event gives: after its header and the next
    file's position (ROTATE_HEADER_LEN, 8 bytes), up to its checksum."""
    checksum = framing.checksum_len
    if not checksum and len(event) > 4 and zlib.crc32(event[:-4]) == int.from_bytes(event[-4:], "little"):
        checksum = 4  # a file without a format description whose events carry CRC32s
    return event[framing.header_length + 8:len(event) - checksum].decode("utf-8", "replace") or None


def _walk(buf, size: int, framing: Framing, result: ScanResult, pos: int) -> None:
    v1 = framing.binlog_version == 1
    unpack = (_HEADER_V1 if v1 else _HEADER).unpack_from
    min_header = OLD_HEADER_LEN if v1 else LOG_EVENT_MINIMAL_HEADER_LEN
    permutation = framing.permutation
    positions, types, timestamps = result.positions, result.types, result.timestamps
    boundaries = result.boundaries
    state = TransactionState()
    closed_end = pos
    # Mapped pages stay resident (and count in RSS) until released: drop what
    # the walk has passed every RELEASE_BYTES, so memory stays flat on big files.
    releasable = isinstance(buf, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED")
    released = 0
    next_release = RELEASE_BYTES if releasable else size + 1
    # The hot loop: one unpack per event; the state machine only for events
    # that can change it.
    while pos + min_header <= size:
        if pos >= next_release:
            upto = pos - pos % mmap.PAGESIZE
            buf.madvise(mmap.MADV_DONTNEED, released, upto - released)
            released, next_release = upto, pos + RELEASE_BYTES
        fields = unpack(buf, pos)
        timestamp, code, length = fields[0], fields[1], fields[3]
        if length < min_header:
            result.stopped = f"bad event length {length} at {pos}"
            break
        if pos + length > size:
            result.stopped = f"event at {pos} cut short"
            break
        if permutation is not None and code < len(permutation):
            code = int(permutation[code])
        if not state.open or code in GTID_EVENTS or code == E.GTID_EVENT:
            boundaries.append(pos)
        positions.append(pos)
        types.append(code)
        timestamps.append(timestamp)
        if code == E.FORMAT_DESCRIPTION_EVENT:
            result.descriptions += 1
            if pos != 4:  # a relay log's second description reframes what follows
                framing = _fde_framing(buf, pos, length)
        elif code in QUERY_EVENTS:
            kind = _query_kind(buf, pos, length, code, framing)
            if kind == OTHER:
                result.statements.append(pos)
            if state.open and state.starts(code, kind):
                boundaries.append(pos)
            state.step(code, kind)
        elif code in ROWS_EVENTS:
            state.step(code, stmt_end=not state.explicit and _statement_ends(buf, pos, code,
                                                                             framing))
        elif code == E.START_ENCRYPTION_EVENT:  # what follows is ciphertext
            pos += length
            result.stopped = f"encrypted from {pos}"
            break
        elif code == E.GTID_EVENT:
            state.step(code, standalone=_standalone(buf, pos, framing))
        else:
            state.step(code)
        pos += length
        if not state.open:
            closed_end = pos
    result.end = pos
    result.closed_end = closed_end


def raw_step(state: TransactionState, buf, pos: int, length: int, code: int,
             framing: Framing) -> None:
    """`state.step` for the event at `pos` from its bytes, as the walk
    steps (a live reader's events as they arrive: live/boundaries.py)."""
    if code in QUERY_EVENTS:
        state.step(code, _query_kind(buf, pos, length, code, framing))
    elif code in ROWS_EVENTS:
        state.step(code, stmt_end=not state.explicit and _statement_ends(buf, pos, code, framing))
    elif code == E.GTID_EVENT:
        state.step(code, standalone=_standalone(buf, pos, framing))
    else:
        state.step(code)


def _statement_ends(buf, pos: int, code: int, framing: Framing) -> bool:
    """A rows event's STMT_END_F (after its table id in the post-header)."""
    flags_at = pos + framing.header_length + framing.table_id_width(code)
    return bool(_U16(buf, flags_at)[0] & STMT_END_F)


def _standalone(buf, pos: int, framing: Framing) -> bool:
    """A MariaDB GTID event's FL_STANDALONE (flags2, after seq_no and domain_id)."""
    return bool(buf[pos + framing.header_length + 12] & FL_STANDALONE)


def gtid_text(buf, pos: int, code: int, framing: Framing) -> str | None:
    """The GTID a GTID event at `pos` names, as the reader writes it:
    MariaDB's DOMAIN-SERVER-SEQ (seq_no, domain_id; the server id is the
    header's), MySQL's UUID:GNO (after the flags byte); None for the
    anonymous and tagged ones (a tagged GTID's fields are serialized)."""
    body = pos + framing.header_length
    if code == E.GTID_EVENT:
        seq_no, domain = struct.unpack_from("<QI", buf, body)
        server_id = struct.unpack_from("<I", buf, pos + 5)[0]
        return f"{domain}-{server_id}-{seq_no}"
    if code == E.GTID_LOG_EVENT:
        sid = uuid.UUID(bytes=bytes(buf[body + 1:body + 17]))
        return f"{sid}:{struct.unpack_from('<q', buf, body + 17)[0]}"
    return None


def _query_kind(buf, pos: int, length: int, code: int, framing: Framing) -> str:
    # 17 bytes tell apart every statement classify_query looks for.
    head = query_head(buf, pos, length, code, framing, 17)
    return OTHER if head is None else classify_query(head)


def query_head(buf, pos: int, length: int, code: int, framing: Framing,
               size: int) -> bytes | None:
    """The first `size` bytes of a QUERY event's statement, from the file's
    bytes (None: a compressed statement that does not unpack)."""
    post = pos + framing.header_length
    db_len = buf[post + 8]
    status_len = _U16(buf, post + 11)[0] if framing.query_post_header >= 13 else 0
    start = post + framing.query_post_header + status_len + db_len + 1
    end = pos + length - framing.checksum_len
    if code != E.QUERY_COMPRESSED_EVENT:
        return bytes(buf[start:min(end, start + size)])
    # MariaDB compressed query: 1 header byte, big-endian length, zlib.
    raw = bytes(buf[start:end])
    if not raw or not raw[0] & 0x80:
        return None
    lenlen = raw[0] & 0x07
    try:
        return zlib.decompressobj().decompress(raw[1 + lenlen:], size)
    except zlib.error:
        return None
