"""GTIDs as people write them: MySQL GTID sets (`uuid[:tag]:1-5`) and
MariaDB GTID lists (`domain-server-sequence`), for the selection options,
the replica client's GTID positioning and resume tokens.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


# -- MySQL GTID sets ------------------------------------------------------------------

_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")


@dataclass
class GtidSet:
    """A MySQL GTID set: `uuid[:tag]:1-5:7,uuid2:3` -> {(uuid, tag): [(first, last), ...]}."""

    intervals: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> "GtidSet":
        result = cls()
        for part in (p.strip() for p in text.replace("\n", "").split(",")):
            if not part:
                continue
            pieces = part.split(":")
            sid = pieces[0].strip().lower()
            if not _UUID.match(sid):
                raise ValueError(f"bad GTID set {text!r}: {sid!r} is not a UUID")
            sid = _canonical_uuid(sid)
            tag = None
            for piece in pieces[1:]:
                piece = piece.strip()
                if re.match(r"^\d+(-\d+)?$", piece):
                    first, _, last = piece.partition("-")
                    first, last = int(first), int(last or first)
                    if first < 1 or last < first:
                        raise ValueError(f"bad GTID interval {piece!r}")
                    result.intervals.setdefault((sid, tag), []).append((first, last))
                elif re.match(r"^[a-zA-Z_][a-zA-Z0-9_]{0,31}$", piece):
                    tag = piece.lower()
                else:
                    raise ValueError(f"bad GTID set {text!r} near {piece!r}")
        return result

    def __contains__(self, gtid: tuple) -> bool:
        sid, tag, gno = gtid
        return any(a <= gno <= b for a, b in self.intervals.get((sid, tag), ()))

    def union(self, *others) -> "GtidSet":
        """This set and `others`' (GtidSets, or {"uuid[:tag]": [(first, last)]}
        as the changes loop's commit marks keep them), intervals merged."""
        merged = {key: list(intervals) for key, intervals in self.intervals.items()}
        for other in others:
            if isinstance(other, GtidSet):
                items = other.intervals.items()
            else:
                items = (((sid, tag or None), intervals) for key, intervals in other.items()
                         for sid, _, tag in [key.partition(":")])
            for key, intervals in items:
                merged.setdefault(key, []).extend(intervals)
        return GtidSet({key: merged_intervals(intervals) for key, intervals in merged.items()})

    def difference(self, other: "GtidSet") -> "GtidSet":
        """The GTIDs of this set that are not in `other` (what a server whose
        gtid_executed is `other` lacks of this set)."""
        out = {}
        for key, intervals in self.intervals.items():
            left = merged_intervals(intervals)
            for first, last in merged_intervals(other.intervals.get(key, ())):
                left = [piece for a, b in left for piece in
                        ((a, min(b, first - 1)), (max(a, last + 1), b)) if piece[0] <= piece[1]]
            if left:
                out[key] = left
        return GtidSet(out)

    def __str__(self) -> str:
        """As MySQL writes a set: `uuid[:tag]:1-5:7`, groups by UUID and tag."""
        parts = []
        for (sid, tag), intervals in sorted(self.intervals.items(),
                                            key=lambda item: (item[0][0], item[0][1] or "")):
            ranges = ":".join(f"{a}" if a == b else f"{a}-{b}"
                              for a, b in merged_intervals(intervals))
            parts.append(f"{sid}{':' + tag if tag else ''}:{ranges}")
        return ",".join(parts)


def merged_intervals(intervals) -> list:
    """[first, last] intervals sorted, with those that touch or overlap joined."""
    out: list = []
    for first, last in sorted(intervals):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def _canonical_uuid(text: str) -> str:
    hex_ = text.replace("-", "")
    return f"{hex_[:8]}-{hex_[8:12]}-{hex_[12:16]}-{hex_[16:20]}-{hex_[20:]}"


# -- MariaDB GTID lists ---------------------------------------------------------------

def parse_gtid_list(text: str, which: str = "GTID list") -> dict[int, tuple[int, int]]:
    """`0-1-100,1-2-5` -> {domain: (server_id, seq_no)}; one GTID per domain
    (`which`: "Start position" or "Stop position", as mariadb-binlog names them)."""
    result: dict[int, tuple[int, int]] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        match = re.match(r"^(\d+)-(\d+)-(\d+)$", part)
        if not match:
            raise ValueError(f"bad GTID {part!r}: expected domain-server-sequence")
        domain, server, seq = map(int, match.groups())
        if domain in result:  # mariadb-binlog's words
            before = "-".join(map(str, (domain, *result[domain])))
            raise ValueError(f"{which} cannot have repeated domain ids (found {part} when "
                             f"{before} was previously specified)")
        result[domain] = (server, seq)
    return result


def is_gtid_list(text: str) -> bool:
    return bool(re.match(r"^\s*\d+-\d+-\d+(\s*,\s*\d+-\d+-\d+)*\s*$", text))
