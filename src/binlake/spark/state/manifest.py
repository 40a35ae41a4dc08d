"""The lake's state (`_binlake/manifest.json`) as one typed record.

Strategy: a `Manifest` is immutable; each step of a run that changes the
lake's state is a method that returns the next manifest (`choosing`,
`from_snapshot`, `reading`, `staging`, `copies_removed`, `tables_mixed`,
`tables_built`), and `write_manifest` is the one place a manifest reaches the disk: as JSON
written to a temporary file, fsynced, then renamed over the old one, so a
reader sees the old state or the new, never part of one. Its one caller
is binlake.spark.state.store, the one writer of the lake's state: a run
stages its next manifest beside its staged data and renames it into place
last (binlake.spark.run.staging); the JSON is the format lakes written
before this module have, read the same way.

What it holds:
    files      each binlog read: its number, where it was read up to (always
               a transaction boundary), a fingerprint of its format
               description, the name its ROTATE gives the next file, up
               to where changes/ holds it for each table selection (--tables),
               and whether the follower's copy of it was removed
               (binlake.spark.state.copies: --keep-binlogs)
    layouts    each table's last table-map layout (binlake.spark.plans.layouts)
    run        the number of the last run that appended to changes/
    pending    the change files of each run that tables/ has yet to take in
    temporals  how DATE/DATETIME/TIMESTAMP columns are typed, chosen at the start
    history    whether history/ (SCD type 2) tables are kept
    snapshot   where a lake started from a snapshot sits in the binlog
    failovers  where the lake went on in the binlogs of each server the
               follower moved to (binlake.spark.read.failover): a floor each
    chunks     how far the lock-free snapshot of each keyed table has read
               (binlake.spark.state.progress): committed with the
               run that appended the chunks' rows, so a killed snapshot
               resumes at its first chunk not in the lake
    tables     the state of tables/: the binlog position it reflects and the
               plan signature of each table, the column each table named by
               --partition-by is partitioned by, or "mixed" while a rebuild that
               leaves tables of two points if killed is under way
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace

from binlake.atomic import replaced
from binlake.spark.read.ranges import FAILOVER_FILES
from binlake.spark.state.progress import SnapshotProgress

#: The manifest's format; a lake of another is refused, never guessed at.
FORMAT = 1


@dataclass(frozen=True)
class Held:
    """changes/ holds a file up to `end` for the tables `patterns` select
    (no pattern: every table)."""
    patterns: tuple[str, ...]
    end: int


@dataclass(frozen=True)
class FileRead:
    """A binlog file the lake has read."""
    file_seq: int
    path: str
    end: int                       #: read up to here: a transaction boundary
    fingerprint: str               #: of its format description (pipeline.fingerprint)
    next: str | None = None        #: the file its ROTATE names
    held: tuple[Held, ...] | None = None  #: None: a lake from before selections were kept
    #: The follower's copy of it was removed (recorded before the file goes).
    copy_removed: bool = False

    def holding(self, patterns, end: int) -> "FileRead":
        """This file once read up to `end` for the tables `patterns` select."""
        chosen = tuple(sorted(patterns))
        kept = tuple(held for held in self.held or () if held.patterns != chosen)
        return replace(self, held=kept + (Held(chosen, end),))

    def to_json(self) -> dict:
        data = {"file_seq": self.file_seq, "path": self.path, "end": self.end,
                "fingerprint": self.fingerprint}
        if self.next:
            data["next"] = self.next
        if self.held is not None:
            data["tables"] = [[list(held.patterns), held.end] for held in self.held]
        if self.copy_removed:
            data["copy_removed"] = True
        return data

    @classmethod
    def from_json(cls, data: dict) -> "FileRead":
        held = data.get("tables")
        return cls(data["file_seq"], data.get("path", ""), data["end"], data["fingerprint"],
                   data.get("next"),
                   None if held is None else tuple(Held(tuple(p), end) for p, end in held),
                   bool(data.get("copy_removed")))


@dataclass(frozen=True)
class SnapshotFloor:
    """Where a lake starts reading a server's binlogs: the snapshot it
    started from, or a failover's first position on the next server. Its
    binlog file (and that file's number), the offset, the GTID state and
    the time it was taken."""
    file: str
    pos: int
    file_seq: int
    gtid: str | None = None
    time: str | None = None


@dataclass(frozen=True)
class TablesState:
    """What tables/ reflects. `mixed`: a rebuild is under way that a kill
    would leave with tables of two points (the next run rebuilds them all)."""
    through: dict = field(default_factory=dict)   #: file name -> offset
    plans: dict = field(default_factory=dict)     #: "db.table" -> plan signature
    as_of: str | None = None
    temporals: str = "typed"
    history: bool = False
    partition_by: dict = field(default_factory=dict)  #: "db.table" -> column
    mixed: bool = False

    def to_json(self) -> dict:
        if self.mixed:
            return {"rebuilding": True, "partition_by": self.partition_by}
        data = {"through": self.through, "plans": self.plans, "as_of": self.as_of,
                "temporals": self.temporals, "history": self.history}
        if self.partition_by:
            data["partition_by"] = self.partition_by
        return data

    @classmethod
    def from_json(cls, data: dict | None) -> "TablesState | None":
        if not data:
            return None
        if data.get("rebuilding") or "plans" not in data:
            return cls(partition_by=data.get("partition_by") or {}, mixed=True)
        return cls(data.get("through") or {}, data["plans"], data.get("as_of"),
                   data.get("temporals", "typed"), data.get("history", False),
                   data.get("partition_by") or {})


@dataclass(frozen=True)
class Manifest:
    files: dict = field(default_factory=dict)     #: file name -> FileRead
    layouts: dict = field(default_factory=dict)   #: table -> {"order", "layout"}
    run: int = 0
    pending: dict = field(default_factory=dict)   #: run -> (change file, ...), under changes/
    temporals: str | None = None
    history: bool = False
    snapshot: SnapshotFloor | None = None
    tables: TablesState | None = None
    #: The lock-free snapshot's progress, None when there is none.
    chunks: SnapshotProgress | None = None
    #: The one selection a lake from before per-file selections recorded.
    selected_before: tuple[str, ...] | None = None
    #: Where the lake went on after each failover (binlake.spark.read.failover).
    failovers: tuple[SnapshotFloor, ...] = ()
    #: Seconds the tables keep old versions readable (--keep-versions; None: Delta's week).
    keep_versions: float | None = None

    # -- transitions -------------------------------------------------------------------

    def choosing(self, temporals: str, history: bool,
                 keep_versions: float | None = None) -> "Manifest":
        """The lake's settings as this run keeps them."""
        return replace(self, temporals=temporals, history=history,
                       keep_versions=self.keep_versions if keep_versions is None
                       else keep_versions)

    def from_snapshot(self, floor: SnapshotFloor) -> "Manifest":
        """A new lake started from a snapshot: binlogs are read from its point on."""
        if self.files or self.snapshot:
            raise ValueError("a snapshot starts a lake: this one has read binlogs already")
        return replace(self, snapshot=floor)

    def failed_over(self, floor: SnapshotFloor) -> "Manifest":
        """The lake goes on in the next server's binlogs at `floor`."""
        if self.floor_of(floor.file_seq) is not None:
            raise ValueError(f"the lake already goes on in {floor.file}'s server's binlogs")
        return replace(self, failovers=self.failovers + (floor,))

    def chunked(self, progress: SnapshotProgress) -> "Manifest":
        """The lock-free snapshot read so far (its chunks' rows in this run)."""
        return replace(self, chunks=progress)

    def reading(self, files: dict, layouts: dict) -> "Manifest":
        """`files` (name -> FileRead) read further, the table layouts now known."""
        return replace(self, files={**self.files, **files}, layouts=layouts)

    def staging(self, written: list[str]) -> "Manifest":
        """A run that appended `written` (change files under changes/) to the
        lake: its number is the next, its files pending for tables/."""
        run = self.run + 1
        return replace(self, run=run, pending={**self.pending, run: tuple(written)})

    def copies_removed(self, names) -> "Manifest":
        """The follower's copies of the binlogs `names` (read whole) removed."""
        return replace(self, files={**self.files, **{
            name: replace(self.files[name], copy_removed=True) for name in names}})

    def tables_mixed(self, partition_by: dict) -> "Manifest":
        """tables/ about to hold tables of two points until this run ends."""
        return replace(self, tables=TablesState(partition_by=partition_by, mixed=True))

    def tables_built(self, tables: TablesState) -> "Manifest":
        """tables/ in step with every pending run: nothing pending any more."""
        return replace(self, tables=tables, pending={})

    # -- reading -----------------------------------------------------------------------

    def holds(self, name: str, patterns) -> tuple[Held, ...]:
        """Up to where changes/ holds the file `name` read before, for each
        selection. A lake from before these were kept: the selection it
        recorded, else `patterns` (the one given now), through the file's end."""
        entry = self.files[name]
        if entry.held is not None:
            return entry.held
        chosen = self.selected_before
        return (Held(tuple(sorted(patterns)) if chosen is None else chosen, entry.end),)

    def read_for(self, name: str, entry: FileRead, patterns) -> FileRead:
        """`entry` (the file `name` read up to its end) read for the tables
        `patterns` selects too: what changes/ held of it before is kept."""
        before = self.holds(name, patterns) if name in self.files else ()
        removed = name in self.files and self.files[name].copy_removed  # (a file given again)
        return replace(entry, held=before, copy_removed=removed).holding(patterns, entry.end)

    def floor_of(self, file_seq: int) -> SnapshotFloor | None:
        """Where the lake starts in the binlogs of the server whose file is
        numbered `file_seq` (None: the first server's, from its start)."""
        server = file_seq // FAILOVER_FILES
        return next((floor for floor in (self.snapshot, *self.failovers)
                     if floor is not None and floor.file_seq // FAILOVER_FILES == server), None)

    def file_seqs(self) -> dict:
        return {name: entry.file_seq for name, entry in self.files.items()}

    def through(self) -> dict:
        """file name -> offset read up to, in name order."""
        return {name: entry.end for name, entry in sorted(self.files.items())}

    def pending_after(self, done: int) -> list[str]:
        """The change files (under changes/) of the runs after run `done`."""
        return [name for run, names in sorted(self.pending.items()) if run > done
                for name in names]

    def runs_after(self, done: int) -> tuple[int, ...]:
        return tuple(sorted(run for run in self.pending if run > done))

    # -- JSON --------------------------------------------------------------------------

    def to_json(self) -> dict:
        data = {"format": FORMAT, "files": {name: entry.to_json()
                                            for name, entry in self.files.items()},
                "layouts": self.layouts, "run": self.run,
                "pending": {str(run): list(names) for run, names in self.pending.items()},
                "history": self.history,
                "tables": self.tables.to_json() if self.tables else None}
        if self.temporals:
            data["temporals"] = self.temporals
        if self.snapshot:
            data["snapshot"] = asdict(self.snapshot)
        if self.chunks is not None:
            data["chunks"] = self.chunks.to_json()
        if self.failovers:
            data["failovers"] = [asdict(floor) for floor in self.failovers]
        if self.selected_before is not None:
            data["tables_selected"] = list(self.selected_before)
        if self.keep_versions is not None:
            data["keep_versions"] = self.keep_versions
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Manifest":
        snapshot = data.get("snapshot")
        selected = data.get("tables_selected")
        return cls(files={name: FileRead.from_json(entry)
                          for name, entry in data.get("files", {}).items()},
                   layouts=data.get("layouts") or {}, run=data.get("run", 0),
                   pending={int(run): tuple(names)
                            for run, names in (data.get("pending") or {}).items()},
                   temporals=data.get("temporals"), history=bool(data.get("history")),
                   snapshot=SnapshotFloor(**snapshot) if snapshot else None,
                   tables=TablesState.from_json(data.get("tables")),
                   chunks=SnapshotProgress.from_json(data.get("chunks")),
                   selected_before=None if selected is None else tuple(selected),
                   keep_versions=data.get("keep_versions"),
                   failovers=tuple(SnapshotFloor(**floor)
                                   for floor in data.get("failovers") or ()))


def read_manifest(path: str, lake: str) -> Manifest:
    """The manifest at `path` (an empty one where there is none yet)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        return Manifest()
    if data.get("format") != FORMAT:
        raise ValueError(f"{lake}: manifest format {data.get('format')} is not {FORMAT}")
    return Manifest.from_json(data)


def write_manifest(path: str, manifest: Manifest) -> None:
    """The one place a manifest is written: whole, fsynced, renamed over the
    old one and its folder fsynced (binlake.atomic)."""
    # One line, by json's C encoder (an indented dump is its Python one:
    # 0.2 s a run for a lake of 1,000 tables).
    text = json.dumps(manifest.to_json(), sort_keys=True, separators=(",", ":"))
    with replaced(path) as f:
        f.write(text)


__all__ = ["Manifest", "FileRead", "Held", "SnapshotFloor", "TablesState", "read_manifest",
           "write_manifest", "FORMAT"]
