"""Where each table's rows start in the lake, and which `--as-of` points the
lake can give exactly.

Strategy: a table read anew by the lock-free snapshot (binlake.spark.snapshot.snapshot
`read_anew`: newly selected by --tables, selected again after a gap, asked
for by --snapshot-tables) has a start, its progress entry's `since`: its
chunks hold its rows from there on, so its changes before it do not count
(changes/ may lack some of them, those of a gap, and a table without a key
would count the rest twice: once as changes, once in its chunk's rows).
`starting_anew` is the one place that rule is applied; the lake's normal
build and `--as-of` both take their plans through it.

A point is given exactly only where the lake holds the table's whole state
then. A table whose lock-free snapshot is unfinished, or whose last chunk
was read after the point, has rows (those of the chunks read later) the
lake holds only as of later; before a table's start (its chunks all come
after it), and before the snapshot a lake started from, the lake holds no
state of it. `refuse_inexact` refuses such a point in one line naming the
table and what to do, before anything is written.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

from binlake.spark.state.manifest import Manifest
from binlake.spark.state.progress import ChunkPlace, SnapshotProgress
from binlake.spark.read.ranges import name_sequence
from binlake.spark.read.partitioned import SNAPSHOT_FILES, escape_partition_value



@dataclass(frozen=True)
class AsOf:
    """A point in the binlog: a UTC time, or (file_seq, pos)."""

    time: dt.datetime | None = None
    file_seq: int | None = None
    pos: int | None = None

    def condition(self):
        """Spark's column of this point: a commit at or before it."""
        from pyspark.sql import functions as F
        if self.time is not None:
            return F.col("commit_timestamp") <= F.lit(self.time)
        seq = F.col("commit_key.file_seq")
        return (seq < self.file_seq) | ((seq == self.file_seq) & (F.col("commit_pos") <= self.pos))

    def includes(self, file_seq: int, pos: int, time: dt.datetime | None) -> bool:
        """`condition` of one commit (its file's number, the position and
        time of its commit): it is at or before the point."""
        if self.time is not None:
            return time is not None and time <= self.time
        return (file_seq, pos) <= (self.file_seq, self.pos)

    def describe(self) -> str:
        if self.time is not None:
            return self.time.isoformat()
        return f"file_seq {self.file_seq}, pos {self.pos}"


def starting_anew(plans: list, progress: SnapshotProgress | None) -> tuple[list, set]:
    """The plans with the tables the lock-free snapshot read anew into the
    lake starting at their `since`: their changes before it are superseded
    by the chunks; and the names of those tables, which are built again
    from their chunks, never carried."""
    starts = progress.starts() if progress is not None else {}
    if not starts:
        return plans, set()
    out = []
    for plan in plans:
        since = starts.get(f"{plan['database']}.{plan['table']}")
        if since is not None:
            stretches = [dict(stretch, after=list(max(tuple(stretch["after"]), since)))
                         for stretch in plan["stretches"]
                         if stretch["before"][0] is None or tuple(stretch["before"]) > since]
            plan = dict(plan, stretches=stretches)
        out.append(plan)
    return out, set(starts)


def refuse_inexact(text: str, point: AsOf, plans: list, manifest: Manifest,
                   changes_root: str) -> None:
    """A ValueError, in one line, where `point` (`--as-of text`) is one the
    lake cannot give exactly for a table of `plans` (the module's rule)."""
    end = "; nothing was changed"
    floor = manifest.snapshot
    if floor is not None and _before(point, floor.file_seq, floor.pos, floor.time):
        raise ValueError(f"--as-of {text}: before the snapshot this lake started from "
                         f"({floor.file}:{floor.pos}): the lake holds no state of its tables "
                         f"then; take a point at or after it{end}")
    progress = manifest.chunks.tables if manifest.chunks is not None else {}
    for plan in plans:
        name = f"{plan['database']}.{plan['table']}"
        entry = progress.get(name)
        if entry is None:
            continue
        if not entry.done:
            raise ValueError(f"--as-of {text}: {name} is still being read by the lock-free "
                             "snapshot (its chunks read after the point hold its rows as of "
                             "later): take --as-of once its snapshot has finished, at a point "
                             f"after its last chunk{end}")
        last = entry.last_chunk or _last_chunk_in(changes_root, plan)
        if last is not None and _before(point, name_sequence(last.file), last.pos, last.time):
            raise ValueError(f"--as-of {text}: {name} was read by the lock-free snapshot, its "
                             f"last chunk at {last.file}:{last.pos} ({last.time}): the "
                             "lake holds its rows from there on, not before; take a point at or "
                             f"after it{end}")


def _last_chunk_in(changes_root: str, plan: dict) -> ChunkPlace | None:
    """The last chunk of the table's files in changes/ (a lake whose progress
    does not record it): its place, as the progress records it."""
    import pyarrow.parquet as pq
    folder = os.path.join(changes_root, f"database={escape_partition_value(plan['database'])}",
                          f"table={escape_partition_value(plan['table'])}")
    found = []
    for where, _, names in os.walk(folder):
        for name in names:
            if name.startswith(SNAPSHOT_FILES) and name.endswith(".parquet"):
                first = pq.ParquetFile(os.path.join(where, name)).read_row_group(
                    0, columns=["file", "commit_pos", "commit_timestamp"]).slice(0, 1)
                row = first.to_pylist()[0]
                found.append((name_sequence(row["file"]), row["commit_pos"], row))
    if not found:
        return None
    row = max(found, key=lambda item: item[:2])[2]
    return ChunkPlace(row["file"], row["commit_pos"], row["commit_timestamp"])


def _before(point: AsOf, file_seq: int, pos: int, time) -> bool:
    """A commit at (`file_seq`, `pos`, `time`) comes after the point: the
    point is before it (a time point and a commit of no recorded time:
    not known, not refused)."""
    if point.time is not None and time is None:
        return False
    return not point.includes(file_seq, pos, _utc(time))


def _utc(moment) -> dt.datetime | None:
    """A recorded time (ISO 8601 text or a datetime) as an aware UTC datetime."""
    if moment is None:
        return None
    if isinstance(moment, str):
        moment = dt.datetime.fromisoformat(moment)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


__all__ = ["starting_anew", "refuse_inexact"]
