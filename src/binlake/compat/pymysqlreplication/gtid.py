"""MySQL GTIDs and GTID sets as python-mysql-replication models them.

Strategy: a `Gtid` is one server UUID with its transaction intervals, kept
half-open as (first, last + 1) and merged on every change; a `GtidSet` is
those by UUID. `encode()`/`decode()` are the COM_BINLOG_DUMP_GTID payload
(MySQL's `Gtid_set::encode`: 8-byte counts, 16-byte UUID, 8-byte bounds,
all little-endian, the last bound exclusive), the form the dump sends.
"""

from __future__ import annotations

import re
import struct
import uuid as _uuid

_SID = re.compile(r"^[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
_INTERVAL = re.compile(r"^(\d+)(?:-(\d+))?$")


def _merged(intervals) -> list:
    """Half-open intervals, sorted, touching ones joined."""
    out: list = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


class Gtid:
    """`uuid:1-5:7` (transactions 1 to 5 and 7 of one server)."""

    @staticmethod
    def parse_interval(interval: str) -> tuple:
        m = _INTERVAL.match(interval)
        if not m:
            raise ValueError(f"GTID format is incorrect: {interval!r}")
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else start
        if end < start:
            raise ValueError(f"GTID interval ends before it starts: {interval!r}")
        return start, end + 1

    @staticmethod
    def parse(gtid: str) -> tuple:
        sid, sep, rest = gtid.strip().partition(":")
        if not sep or not _SID.match(sid) or not rest:
            raise ValueError(f"GTID format is incorrect: {gtid!r}")
        return sid.lower(), [Gtid.parse_interval(part) for part in rest.split(":")]

    def __init__(self, gtid, sid=None, intervals=()):
        if sid:
            self.sid, parsed = sid, list(intervals)
        else:
            self.sid, parsed = Gtid.parse(gtid)
        self.intervals = _merged(parsed)

    def __contains__(self, other) -> bool:
        if other.sid != self.sid:
            return False
        return all(any(s <= os and oe <= e for s, e in self.intervals)
                   for os, oe in other.intervals)

    def __add__(self, other: "Gtid") -> "Gtid":
        if other.sid != self.sid:
            raise Exception(f"Attempt to merge different SID{self.sid} != {other.sid}")
        return Gtid(None, self.sid, self.intervals + other.intervals)

    def __sub__(self, other: "Gtid") -> "Gtid":
        if other.sid != self.sid:
            return Gtid(None, self.sid, self.intervals)
        left = list(self.intervals)
        for cut_start, cut_end in other.intervals:
            kept = []
            for start, end in left:
                if cut_end <= start or end <= cut_start:
                    kept.append((start, end))
                    continue
                if start < cut_start:
                    kept.append((start, cut_start))
                if cut_end < end:
                    kept.append((cut_end, end))
            left = kept
        return Gtid(None, self.sid, left)

    def __str__(self) -> str:
        parts = [str(s) if e - s == 1 else f"{s}-{e - 1}" for s, e in self.intervals]
        return ":".join([self.sid, *parts])

    def __repr__(self) -> str:
        return f'<Gtid "{self}">'

    @property
    def encoded_length(self) -> int:
        return 16 + 8 + 16 * len(self.intervals)

    def encode(self) -> bytes:
        out = [_uuid.UUID(self.sid).bytes, struct.pack("<Q", len(self.intervals))]
        out += [struct.pack("<QQ", s, e) for s, e in self.intervals]
        return b"".join(out)

    @classmethod
    def decode(cls, payload) -> "Gtid":
        sid = str(_uuid.UUID(bytes=payload.read(16)))
        (count,) = struct.unpack("<Q", payload.read(8))
        intervals = [struct.unpack("<QQ", payload.read(16)) for _ in range(count)]
        return cls(None, sid, intervals)

    def _key(self):
        return self.sid, self.intervals

    def __eq__(self, other):
        return isinstance(other, Gtid) and self._key() == other._key()

    def __hash__(self):
        return hash((self.sid, tuple(self.intervals)))

    def __lt__(self, other):
        return self._key() < other._key()

    def __le__(self, other):
        return self._key() <= other._key()

    def __gt__(self, other):
        return self._key() > other._key()

    def __ge__(self, other):
        return self._key() >= other._key()


class GtidSet:
    """A MySQL GTID set (`uuid:1-56,uuid2:1-20`; newlines as MySQL prints them are fine)."""

    def __init__(self, gtid_set):
        if isinstance(gtid_set, GtidSet):
            gtid_set = gtid_set.gtids
        if isinstance(gtid_set, str):
            parts = [p for p in gtid_set.replace("\n", "").split(",") if p.strip()]
            gtid_set = [Gtid(p.strip()) for p in parts]
        self.gtids: list = []
        for gtid in gtid_set or ():
            self.merge_gtid(gtid if isinstance(gtid, Gtid) else Gtid(gtid))

    def merge_gtid(self, gtid: Gtid) -> None:
        for i, have in enumerate(self.gtids):
            if have.sid == gtid.sid:
                self.gtids[i] = have + gtid
                return
        self.gtids.append(gtid)

    def __contains__(self, other) -> bool:
        others = other.gtids if isinstance(other, GtidSet) else [other]
        return all(any(o in g for g in self.gtids) for o in others)

    def __add__(self, other) -> "GtidSet":
        result = GtidSet(list(self.gtids))
        for gtid in (other.gtids if isinstance(other, GtidSet) else [other]):
            result.merge_gtid(gtid)
        return result

    def __str__(self) -> str:
        return ",".join(str(g) for g in self.gtids)

    def __repr__(self) -> str:
        return f"<GtidSet {self.gtids!r}>"

    @property
    def encoded_length(self) -> int:
        return 8 + sum(g.encoded_length for g in self.gtids)

    def encoded(self) -> bytes:
        return struct.pack("<Q", len(self.gtids)) + b"".join(g.encode() for g in self.gtids)

    encode = encoded

    @classmethod
    def decode(cls, payload) -> "GtidSet":
        (count,) = struct.unpack("<Q", payload.read(8))
        return cls([Gtid.decode(payload) for _ in range(count)])

    def __eq__(self, other):
        return isinstance(other, GtidSet) and sorted(self.gtids) == sorted(other.gtids)
