"""Which events to show: the selection options of mysqlbinlog and mariadb-binlog.

Strategy: `EventSelection.verdict(event, file_index, last_file)` answers SHOW,
SKIP or STOP for each event in stream order, with the meanings the two tools
give their options:

- positions: `--start-position` applies to the first file, `--stop-position`
  to the last (an event starting at or after it stops the run);
- datetimes: skip events before `--start-datetime` until the first event at
  or after it (from then on everything counts, as in mysqlbinlog, so clocks
  going back do not cut a transaction); stop at the first event at or after
  `--stop-datetime`;
- `--server-id`: only events written by that server (format descriptions
  and rotates always count);
- transaction filters work on whole event groups (a GTID event and the
  events of its transaction): MySQL GTID sets (`--include-gtids`,
  `--exclude-gtids`) and MariaDB GTID lists (`--start-gtid` exclusive,
  `--stop-gtid` inclusive, per replication domain).

`--database` and `--table` are not here: mysqlbinlog applies them while
printing (a table map decides about the rows events after it), see text/mysqlbinlog.py.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass
from enum import Enum

from binlake.constants import EventType as E, LogEventFlag
from binlake.gtids import GtidSet
from binlake.read.events import (Event, EventHeader, GtidEvent, MariadbGtidEvent, QueryEvent, UnknownEvent, XaPrepareEvent,
                     XidEvent)


class Verdict(Enum):
    SHOW = "show"
    SKIP = "skip"
    STOP = "stop"


# -- datetimes ----------------------------------------------------------------------

_DATETIME_PARTS = re.compile(r"\d+")


def parse_datetime(text: str) -> int:
    """A local date and time as mysqlbinlog takes it (any punctuation between
    the parts: '2004-12-25 11:25:56', '2004/12/25T11.25.56', '20041225112556')
    -> seconds since the epoch."""
    stripped = text.strip()
    parts = _DATETIME_PARTS.findall(stripped)
    if len(parts) == 1 and len(parts[0]) in (8, 14):  # YYYYMMDD[hhmmss]
        digits = parts[0]
        parts = [digits[0:4], digits[4:6], digits[6:8]] + (
            [digits[8:10], digits[10:12], digits[12:14]] if len(digits) == 14 else [])
    if len(parts) < 3 or len(parts) > 7 or re.search(r"[^\d\s\-/.:T_]", stripped):
        raise ValueError(f"bad datetime {text!r}: expected YYYY-MM-DD hh:mm:ss")
    numbers = [int(p) for p in parts[:6]] + [0] * (6 - min(len(parts), 6))
    year = numbers[0]
    if len(parts[0]) <= 2:
        year += 2000 if year < 70 else 1900
    moment = (year, *numbers[1:6])
    dt.datetime(*moment)  # validates the fields
    return int(time.mktime(moment + (0, 0, -1)))


# -- the selection --------------------------------------------------------------------

@dataclass
class SelectionOptions:
    start_position: int | None = None
    stop_position: int | None = None
    start_datetime: int | None = None
    stop_datetime: int | None = None
    server_ids: set | None = None       #: --server-id/--do-server-ids
    ignore_server_ids: set | None = None
    do_domain_ids: set | None = None     #: MariaDB GTID domains
    ignore_domain_ids: set | None = None
    include_gtids: GtidSet | None = None
    exclude_gtids: GtidSet | None = None
    offset: int | None = None           #: --offset: leave out the first N events read
    start_gtids: dict | None = None     #: MariaDB: show groups after these (exclusive)
    stop_gtids: dict | None = None      #: MariaDB: show groups up to these (inclusive)
    #: MySQL's --server-id-bits: the bits of a server id that count
    server_id_mask: int = 0xFFFFFFFF

    @property
    def gtid_filtering(self) -> bool:
        return bool(self.server_ids or self.ignore_server_ids or self.do_domain_ids
                    or self.ignore_domain_ids or self.start_gtids or self.stop_gtids)

    def server_shown(self, server_id: int) -> bool:
        server_id &= self.server_id_mask
        if self.server_ids and server_id not in self.server_ids:
            return False
        return not (self.ignore_server_ids and server_id in self.ignore_server_ids)

    def domain_shown(self, domain_id: int) -> bool:
        if self.do_domain_ids and domain_id not in self.do_domain_ids:
            return False
        return not (self.ignore_domain_ids and domain_id in self.ignore_domain_ids)


class _Group:
    """Tracks the event group (transaction) the stream is in, to know where it ends."""

    def __init__(self):
        self.active = False
        self.begun = False   #: a BEGIN was seen: the group ends at COMMIT/XID, not after one statement

    def start(self, begun: bool = False) -> None:
        self.active, self.begun = True, begun

    def ends_with(self, event: Event) -> bool:
        """Whether `event`, inside a group, is its last event."""
        if isinstance(event, (XidEvent, XaPrepareEvent)):
            return True
        if isinstance(event, QueryEvent):
            head = event.query.lstrip()[:12].upper()
            if head.startswith("BEGIN") or head.startswith("XA START"):
                self.begun = True
                return False
            if head.startswith(("COMMIT", "ROLLBACK", "XA END", "XA PREPARE", "XA COMMIT",
                                "XA ROLLBACK")) and not head.startswith("ROLLBACK TO"):
                return True
            return not self.begun
        return False


class EventSelection:
    """Stateful: feed it every event, in order; it says what to do with each."""

    def __init__(self, options: SelectionOptions | None = None):
        self.options = options or SelectionOptions()
        self._started_by_time = self.options.start_datetime is None
        self._group = _Group()
        self._group_shown = True
        #: the last MariaDB GTID's domain was filtered out: mariadb-binlog then
        #: also leaves out the events after its group, up to the next GTID
        self._domain_excluded = False
        self._stop_reached: set = set()  #: domains whose stop window has passed
        self._windows: dict = {}  #: domain -> "open" or "passed" (absent: not yet open)
        self._last_read = None  #: the header of the last event read (for `unreached_stops`)
        self._checked_start = False
        self._past_file_head = False
        self.error: str | None = None  #: why the selection stopped the run, if it is an error
        self._read = 0  #: events read so far, for --offset
        if not self.options.offset:
            self.verdict = self._verdict  # no count to keep: one call less per event

    def verdict(self, event: Event, first_file: bool, last_file: bool) -> Verdict:
        """What to do with `event`. --offset leaves out the first N events
        mysqlbinlog reads (from --start-position on, and the format
        description it reads before it), whatever else says, but never a
        format description."""
        verdict = self._verdict(event, first_file, last_file)
        o = self.options
        h = event.header
        if verdict is Verdict.SKIP and first_file and (o.start_position or 0) > 4 \
                and h.pos < o.start_position:
            return verdict  # before the start: not read
        index, self._read = self._read, self._read + 1
        if index < o.offset and verdict is Verdict.SHOW \
                and h.type_code != E.FORMAT_DESCRIPTION_EVENT:
            return Verdict.SKIP
        return verdict

    def _verdict(self, event: Event, first_file: bool, last_file: bool) -> Verdict:
        o = self.options
        h = event.header
        self._last_read = h
        is_fde = h.type_code == E.FORMAT_DESCRIPTION_EVENT
        if first_file and o.start_position is not None and o.start_position > 4:
            if h.pos < o.start_position:
                # Before the start, mysqlbinlog reads only the format
                # descriptions (and rotates) the file begins with, and shows
                # those format descriptions when it writes BINLOG statements.
                if h.type_code not in (E.FORMAT_DESCRIPTION_EVENT, E.ROTATE_EVENT):
                    self._past_file_head = True
                return Verdict.SHOW if is_fde and not self._past_file_head else Verdict.SKIP
            if not self._checked_start:
                self._checked_start = True
                if h.pos != o.start_position:
                    self.error = (f"--start-position {o.start_position} is not where an event "
                                  f"starts (the next event starts at {h.pos})")
                    return Verdict.STOP
        if not is_fde and not self._started_by_time:
            if h.timestamp < o.start_datetime:
                return Verdict.SKIP
            self._started_by_time = True
        if o.stop_datetime is not None and h.timestamp >= o.stop_datetime:
            return Verdict.STOP
        if last_file and o.stop_position is not None and h.pos >= o.stop_position:
            return Verdict.STOP
        if is_fde:
            self._domain_excluded = False  # a new file starts outside any filtered group
            return Verdict.SHOW
        return self._group_verdict(event)

    def _group_verdict(self, event: Event) -> Verdict:
        o = self.options
        group = self._group
        if isinstance(event, (GtidEvent, MariadbGtidEvent)):
            # A MariaDB GTID that does not stand alone is itself the BEGIN.
            group.start(begun=isinstance(event, MariadbGtidEvent) and not event.flags2 & 1)
            self._group_shown = self._show_group(event)
            if isinstance(event, MariadbGtidEvent) and (o.do_domain_ids or o.ignore_domain_ids
                                                         or o.start_gtids or o.stop_gtids):
                # mariadb-binlog's group filtering (domains and GTID windows, with the
                # server filter when given): what follows a group left out is left out too
                self._domain_excluded = not self._group_shown
            if self._group_shown is None:
                return Verdict.STOP
            return Verdict.SHOW if self._group_shown else Verdict.SKIP
        if group.active:
            if group.ends_with(event):
                group.active = False
            return Verdict.SHOW if self._group_shown else Verdict.SKIP
        # outside any group
        if self._domain_excluded:
            return Verdict.SKIP
        if event.header.type_code != E.ROTATE_EVENT and not o.server_shown(event.header.server_id):
            return Verdict.SKIP
        if o.stop_gtids and self._stop_reached >= set(o.stop_gtids):
            return Verdict.STOP
        return Verdict.SHOW

    def _show_group(self, event) -> bool | None:
        """True: show the group; False: skip it; None: stop reading."""
        o = self.options
        if not o.server_shown(event.header.server_id):
            return False
        if isinstance(event, GtidEvent):
            if event.gtid is None:  # anonymous: outside any GTID set
                return not o.include_gtids
            sid, tag = event.sid, event.tag
            key = (sid, tag.lower() if tag else None, event.gno)
            if o.include_gtids is not None and key not in o.include_gtids:
                return False
            if o.exclude_gtids is not None and key in o.exclude_gtids:
                return False
            return True
        domain, seq = event.domain_id, event.seq_no
        if not o.domain_shown(domain):
            return False
        if not (o.start_gtids or o.stop_gtids):
            return True
        if o.stop_gtids and self._stop_reached >= set(o.stop_gtids):
            return None  # every stop window has passed: the next GTID ends the run
        return self._window(domain, seq)

    def _window(self, domain: int, seq: int) -> bool:
        """mariadb-binlog's per-domain GTID window: inactive until a GTID
        after the start (or, without one, up to the stop) opens it; open, it
        shows every group until one at or past the stop closes it. A domain
        without a window is shown unless stop positions are given; with them,
        only the domains they name are."""
        o = self.options
        start = o.start_gtids.get(domain) if o.start_gtids else None
        stop = o.stop_gtids.get(domain) if o.stop_gtids else None
        if stop is None and (start is None or o.stop_gtids):
            return not o.stop_gtids
        state = self._windows.get(domain)
        if state == "passed":
            return False
        stop_seq = stop[1] if stop is not None else None
        if state == "open":
            if stop_seq is not None and seq >= stop_seq:
                self._pass(domain)
                return seq == stop_seq
            return True
        if start is None:
            opens, shown = seq <= stop_seq, True
        else:
            opens = seq >= start[1] and (stop_seq is None or seq <= stop_seq)
            shown = seq != start[1]  # the start itself is not shown
        if not opens:
            return False
        if stop_seq is not None and seq == stop_seq:
            self._pass(domain)
        else:
            self._windows[domain] = "open"
        return shown

    def _pass(self, domain: int) -> None:
        self._windows[domain] = "passed"
        self._stop_reached.add(domain)

    def read_natively(self, file: str, end: int) -> None:
        """The events of `file` before `end` were read by the native printer
        (not seen here): the last one read ends there."""
        self._last_read = EventHeader(file=file, pos=end, timestamp=0, type_code=0, server_id=0,
                                      length=0, log_pos=end, flags=0)

    def unreached_stops(self, stop_datetime_text: str | None, last_file: str | None = None,
                        last_file_end: int | None = None) -> list[str]:
        """mariadb-binlog's warnings for stop positions the input ended before.
        `last_file_end`: where `last_file` ends, for a file the native
        printer printed (its events were not seen here)."""
        o, last = self.options, self._last_read
        lines = []
        if o.stop_datetime is not None and (last is None or last.timestamp < o.stop_datetime):
            lines.append(f"Did not reach stop datetime '{stop_datetime_text}' before end of input")
        end = last_file_end
        if last is not None and (last_file is None or last.file == last_file):
            end = last.pos + last.length
        if o.stop_position is not None and (end is None or end < o.stop_position):
            lines.append(f"Did not reach stop position {o.stop_position} before end of input")
        for domain, (server_id, seq_no) in (o.stop_gtids or {}).items():
            if domain not in self._stop_reached:
                lines.append(f"Did not reach stop position {domain}-{server_id}-{seq_no} "
                             "before end of input")
        return lines

    def after(self, event: Event) -> Verdict | None:
        """Called after an event was shown: STOP when a --stop-gtid range is complete."""
        o = self.options
        if (o.stop_gtids and not self._group.active and self._stop_reached >= set(o.stop_gtids)):
            return Verdict.STOP
        return None


# -- MySQL's --require-row-format --------------------------------------------------

class RowFormatCheck:
    """Which events MySQL's mysqlbinlog --require-row-format refuses (its
    transaction boundary parser's row-logging constraints): LOAD DATA,
    Intvar and Rand events, User_var events inside a transaction, temporary
    tables, and inside BEGIN ... COMMIT any statement but XA END, XA PREPARE,
    SAVEPOINT and CREATE TABLE. MariaDB's own events are taken as their MySQL
    counterparts: a GTID that opens a transaction as a BEGIN, Annotate_rows as
    Rows_query, Gtid lists and checkpoints as Previous-GTIDs."""

    MESSAGE = "Event being written violates the --require-row-format parameter constraints."
    ALWAYS_REFUSED = frozenset({
        E.INTVAR_EVENT, E.RAND_EVENT, E.LOAD_EVENT, E.CREATE_FILE_EVENT, E.APPEND_BLOCK_EVENT,
        E.EXEC_LOAD_EVENT, E.DELETE_FILE_EVENT, E.NEW_LOAD_EVENT, E.BEGIN_LOAD_QUERY_EVENT,
        E.EXECUTE_LOAD_QUERY_EVENT})
    #: statements a transaction may hold besides row events
    IN_TRANSACTION = ("XA END", "XA PREPARE", "SAVEPOINT", "CREATE TABLE")
    #: a temporary table's statement is one only when longer than this (as the parser has it)
    TEMPORARY_PREFIX_LENGTH = 16

    def __init__(self):
        self._in_transaction = False

    def allows(self, event: Event) -> bool:
        code = event.header.type_code
        if code in self.ALWAYS_REFUSED:
            return False
        if code == E.USER_VAR_EVENT:
            return not self._in_transaction  # only before a DDL, outside transactions
        if isinstance(event, QueryEvent):
            return self._allows_query(event.query)
        if isinstance(event, (XidEvent, XaPrepareEvent, GtidEvent)):
            self._in_transaction = False
        elif isinstance(event, MariadbGtidEvent):
            self._in_transaction = not event.flags2 & 1  # FL_STANDALONE: no BEGIN to come
        elif isinstance(event, UnknownEvent):
            return bool(event.header.flags & LogEventFlag.LOG_EVENT_IGNORABLE_F)
        return True

    def _allows_query(self, query: str) -> bool:
        head = query.lstrip()[:24].upper()
        if len(query.strip()) > self.TEMPORARY_PREFIX_LENGTH \
                and head.startswith(("CREATE TEMPORARY", "DROP TEMPORARY")):
            return False
        if head.startswith(("BEGIN", "XA START")):
            self._in_transaction = True
            return True
        if head.startswith(("COMMIT", "XA ROLLBACK")) or (
                head.startswith("ROLLBACK") and not head.startswith("ROLLBACK TO")):
            self._in_transaction = False
            return True
        return not self._in_transaction or head.startswith(self.IN_TRANSACTION)
