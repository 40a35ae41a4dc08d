"""Byte ranges of binlog files: how the work is split, and how one range is read.

Strategy: a `Split` is a plain picklable (path, file_seq, start, end). The
driver cuts files larger than `split_bytes` at transaction boundaries found
by the header scan (binlake.read.scan); a task opens the file itself, lets the
core reader take the format description at offset 4 and jump to `start`
(`BinlogReader(start_position=...)`), and stops at `end`. Table maps are
rebuilt from the range itself: in row-based logs they come right before
their rows events inside each transaction.

`transactions()` regroups a range's events into transactions with the state
machine of binlake.read.scan, so every change can carry its transaction's GTID,
XID and commit time, which are only known at its end.

Rule: nothing here depends on how the files were split. Every event carries
(file_seq, pos, sub): the file's number, the event's offset and its index
inside a compressed transaction payload (0 outside), which orders events
exactly as the server committed them.

This module needs neither pyspark nor pyarrow.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from binlake.constants import BINLOG_MAGIC, EventType as E
from binlake.errors import BinlogError, PartialEvent
from binlake.read.events import Event, GtidEvent, MariadbGtidEvent, XidEvent
from binlake.read.gzipped import GZIP_MAGIC, GzipBinlog, is_gzip
from binlake.read.reader import BinlogReader
from binlake.read.scan import TransactionState, scan, step_details

DEFAULT_SPLIT_BYTES = 32 << 20
FIRST_EVENT = 4  #: offset of the first event, after the magic number
#: Where the pipeline decodes new ranges: "auto" is the driver with a local
#: master (the executors would use the same cores) or up to DRIVER_READ_BYTES,
#: else a cluster's executors.
READ_IN = ("auto", "driver", "executors")
DRIVER_READ_BYTES = 256 << 20

_SEQUENCE = re.compile(r"\.(\d+)$")
#: The copies of the server a follower went on with after its Nth failover
#: (binlake.spark.read.failover) are named `failover<N>~<the server's name>`, and
#: numbered after every earlier server's: N * FAILOVER_FILES + the server's
#: own number (at most 2**31 - 1).
_FAILOVER = re.compile(r"^failover(\d+)~")
FAILOVER_FILES = 1 << 32


@dataclass(frozen=True)
class Split:
    """Events of `path` whose offset is in [start, end) (end None: to the end)."""

    path: str
    file_seq: int
    start: int = FIRST_EVENT
    end: int | None = None

    @property
    def file(self) -> str:
        return os.path.basename(self.path)


# -- inputs --------------------------------------------------------------------------

def name_sequence(name: str) -> int | None:
    """The number a server gives its binlog files: `binlog.000042` -> 42
    (`failover1~binlog.000042`: FAILOVER_FILES + 42)."""
    base = os.path.basename(name)
    match = _SEQUENCE.search(base)
    if not match:
        return None
    failover = _FAILOVER.match(base)
    return int(match.group(1)) + (int(failover.group(1)) * FAILOVER_FILES if failover else 0)


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(4)
    except OSError:
        return b""


def is_binlog(path: str) -> bool:
    """A regular file starting with the binlog magic number, or a gzipped one."""
    head = _head(path)
    if head[:2] == GZIP_MAGIC:
        try:
            with GzipBinlog(path) as f:
                head = f.read(4)
        except (OSError, BinlogError):
            return False
    return head == BINLOG_MAGIC


def expand_inputs(inputs: str | os.PathLike | Iterable) -> list[str]:
    """Files, directories (their binlog files, not the index) and glob patterns."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    found: list[str] = []
    for item in inputs:
        item = os.fspath(item)
        if os.path.isdir(item):
            names = sorted(os.listdir(item))
            found += [p for p in (os.path.join(item, n) for n in names)
                      if os.path.isfile(p) and not p.endswith(".index") and is_binlog(p)]
        elif os.path.exists(item):
            found.append(item)
        else:
            matches = sorted(p for p in glob.glob(item) if os.path.isfile(p))
            if not matches:
                raise FileNotFoundError(f"no binlog file matches {item}")
            found += [p for p in matches if is_binlog(p)]
    seen: set = set()
    unique = []
    for path in found:
        real = os.path.abspath(path)
        if real not in seen:
            seen.add(real)
            unique.append(real)
    return unique


def number_files(paths: Iterable[str], *, require_names: bool = False) -> list[tuple[str, int]]:
    """Files in server order, each with its file_seq.

    With distinct numeric extensions (as a server names its files) file_seq
    is that number, stable from one run to the next. Otherwise it is the rank
    in name order, which only orders this one set of inputs.
    """
    paths = list(paths)
    numbers = [name_sequence(p) for p in paths]
    by_number = all(n is not None for n in numbers) and len(set(numbers)) == len(numbers)
    if require_names and not by_number:
        raise ValueError("binlog file names must end in distinct numbers (binlog.000001, ...) "
                         "so that their order is known from one run to the next")
    if by_number:
        return sorted(zip(paths, numbers), key=lambda item: item[1])
    ordered = sorted(paths, key=lambda p: (name_sequence(p) is None, name_sequence(p) or 0,
                                           os.path.basename(p), p))
    return [(path, rank) for rank, path in enumerate(ordered, 1)]


# -- planning --------------------------------------------------------------------------

def plan_splits(segments: Iterable[Split], split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Split]:
    """Cut segments longer than `split_bytes` at transaction boundaries.

    Files with more than one format description (relay logs) are not cut:
    a range after the second one would be framed by the first.
    """
    out: list[Split] = []
    for segment in segments:
        end = segment.start + split_bytes_of(segment)
        if end - segment.start <= split_bytes or is_gzip(segment.path):
            out.append(segment)
            continue
        result = scan(segment.path, start=segment.start, stop=end)
        if result.framing is None or result.descriptions > (1 if segment.start == FIRST_EVENT else 0):
            out.append(segment)
            continue
        cuts = [p for p in result.split_points(split_bytes) if segment.start < p < end]
        edges = [segment.start, *cuts, segment.end]
        out += [Split(segment.path, segment.file_seq, a, b) for a, b in zip(edges, edges[1:])]
    return out


def _size(path: str) -> int:
    return os.path.getsize(path)


def split_bytes_of(split: Split) -> int:
    return (split.end if split.end is not None else _size(split.path)) - split.start


def pack(splits: list[Split], target_bytes: int) -> list[tuple[Split, ...]]:
    """Consecutive splits grouped up to `target_bytes`, so that many small
    files do not cost one task each."""
    groups: list[list[Split]] = []
    filled = 0
    for split in splits:
        size = split_bytes_of(split)
        if not groups or filled + size > target_bytes:
            groups.append([])
            filled = 0
        groups[-1].append(split)
        filled += size
    return [tuple(group) for group in groups]


# -- reading one range ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Positioned:
    event: Event
    sub: int        #: index inside a transaction payload (0: a top-level event)
    end_pos: int    #: where the next top-level event starts


def read_split(split: Split, stream=None, **reader_options) -> Iterator[Positioned]:
    """The events of one range, in order.

    Reading to the end of a file the server still writes (end None) stops
    quietly before a partial last event; an error at or past `end` belongs
    to the next range and is not raised here.
    """
    # A gzip stream cannot seek: its events before `start` are read and skipped.
    if stream is not None:  # a live server's binlog: it places its events itself
        reader = BinlogReader([stream], **reader_options)
    else:
        start = split.start if split.start > FIRST_EVENT and not is_gzip(split.path) else None
        reader = BinlogReader([split.path], start_position=start, **reader_options)
    end = split.end
    last_pos, sub, end_pos = -1, 0, 0
    events = iter(reader)
    while True:
        try:
            event = next(events)
        except StopIteration:
            return
        except PartialEvent:
            if end is None:
                return
            raise
        except BinlogError as exc:
            if end is not None and exc.offset >= end:
                return
            raise
        pos = event.header.pos
        if pos < split.start:
            continue  # the format description the reader takes first
        if end is not None and pos >= end:
            return
        if pos == last_pos:
            sub += 1
        else:
            last_pos, sub, end_pos = pos, 0, event.header.next_pos
        yield Positioned(event, sub, end_pos)


@dataclass
class Transaction:
    """The events from one boundary to the next, and what only the end tells."""

    events: list = field(default_factory=list)   #: [Positioned, ...]
    gtid: str | None = None
    xid: int | None = None
    complete: bool = True     #: False: it has no end (a new one began, or the range ended)
    cut_off: bool = False     #: the range ended inside it
    commit_timestamp: int = 0  #: of its last event
    commit_pos: int = 0       #: where the next transaction starts


def transactions(events: Iterable[Positioned]) -> Iterator[Transaction]:
    """Group a range's events into transactions (single events between them,
    like ROTATE or a DDL statement, are groups of their own)."""
    state = TransactionState()
    current = Transaction()
    for item in events:
        event = item.event
        header = event.header
        code = header.type_code
        details = step_details(event, code)
        if current.events and state.starts(code, details.get("query_kind")):
            yield _unterminated(current, False)  # it never ended: crash-recovery leftovers
            current = Transaction()
        current.events.append(item)
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            current.gtid = event.gtid
        elif isinstance(event, XidEvent):
            current.xid = event.xid
        if code != E.TRANSACTION_PAYLOAD_EVENT:  # its inner events follow and say more
            state.step(code, **details)
        if not state.open:
            current.commit_timestamp = header.timestamp
            current.commit_pos = item.end_pos
            yield current
            current = Transaction()
    if current.events:
        yield _unterminated(current, True)


def _unterminated(txn: Transaction, cut_off: bool) -> Transaction:
    last = txn.events[-1]
    txn.complete, txn.cut_off = False, cut_off
    txn.commit_timestamp = last.event.header.timestamp
    txn.commit_pos = last.end_pos
    return txn
