"""Where a live server's transactions end, read off its bytes as they
arrive: the commit mark of a reader that prints events without grouping
them into transactions (`dump -R --stop-never`), so that after a failover
behind the address it goes on by the GTID state after the last whole
transaction, as `LiveStream.transactions()` does.

Strategy: each event a `LiveFile` queues is stepped through the walk's own
state machine (read/scan.py `raw_step`, the one definition of boundaries
over bytes); at each boundary the mark is called as the changes loop calls
it (`mark(file, gtid, xid, end_pos, timestamp, complete)`), with the GTID
that opened the group. The reader hands out every queued event before it
waits on the server, which is where a failover is noticed: what the mark
holds then is what was printed.
"""

from __future__ import annotations

import struct

from binlake.constants import EventType as E
from binlake.read.scan import GTID_EVENTS, Framing, TransactionState, _fde_framing, gtid_text, raw_step

_HEADER = struct.Struct("<IBIIIH")
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_TAGGED = int(E.GTID_TAGGED_LOG_EVENT)


class RawCommits:
    """A commit mark fed with a live file's bytes (`feed`)."""

    def __init__(self, mark):
        self.mark = mark
        self.state = TransactionState()
        self._framing: Framing | None = None
        self._file: str | None = None
        self._gtid: str | None = None
        #: a MySQL tagged GTID was seen (not read here): the GTID state
        #: after it is not known, and nothing goes on by it
        self.unknown_gtids = False

    @property
    def cut(self) -> bool:
        """Whether the last event fed left a transaction (or statement) open."""
        return self.state.open

    def describe(self, file: str, description: bytes) -> None:
        """The format description `file`'s events are framed by."""
        if file != self._file:
            # (a transaction never spans two files: one cut at a file's end never ended)
            self._file, self.state, self._gtid = file, TransactionState(), None
        self._framing = _fde_framing(description, 0, len(description))

    def feed(self, file: str, pos: int, data) -> None:
        """Events (one or a run of them) queued for `file` at `pos`."""
        at, size = 0, len(data)
        while at + 19 <= size:
            code, length = _HEADER.unpack_from(data, at)[1:4:2]
            if length < 19 or at + length > size:
                return                      # (the reader reports what is malformed)
            if code == _FDE:
                self.describe(file, bytes(data[at:at + length]))
            permutation = self._framing.permutation if self._framing is not None else None
            if permutation is not None and code < len(permutation):
                code = int(permutation[code])   # (early 5.1's renumbering, as the walk does)
            if self._framing is not None and file == self._file:
                self._step(file, pos + at + length, data, at, length, code)
            at += length

    def _step(self, file: str, end: int, data, at: int, length: int, code: int) -> None:
        if code in GTID_EVENTS or code == E.GTID_EVENT:
            self._gtid = gtid_text(data, at, code, self._framing)
            self.unknown_gtids |= code == _TAGGED
        raw_step(self.state, data, at, length, code, self._framing)
        if not self.state.open:
            self.mark(file, self._gtid, None, end, None, True)
            self._gtid = None
