"""How far the lock-free snapshot has read each keyed table: the manifest's
`chunks`, as typed records with their transitions.

Strategy: a `SnapshotProgress` is immutable and lives in the manifest
(binlake.spark.state.manifest), committed with the run that appended the
chunks' rows, so a killed snapshot resumes at its first chunk not in the
lake. Its changes are methods returning the next one: tables (re)entered
(`with_tables`: a new lake's keyed tables, or tables read anew into a
lake, each with its `since`), a round of chunks read (`chunks_read`:
each table's last bound, rows, where its latest chunk sorts, and the
start of a table read anew moved to its first round's earliest chunk: a
round's chunks are read side by side, their places in no key order). It is checked when
loaded: a manifest whose progress is not this shape is refused in one
line, never guessed at. The JSON is the one lakes written before this
module have.

A table's `since` (read anew into a lake) is where its rows start: its
changes before are superseded by its chunks (binlake.spark.state.starts).
Without a key it is the one chunk's place (a multiset: the changes
before its read view are in its rows); with one, its first chunk's place
once that is read: a change before it is of a key its chunks or a later
change give the state of, or of one gone by then. `last_chunk` is the
chunk that sorts latest (an `--as-of` point before it is refused,
binlake.spark.state.starts).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from binlake.spark.read.ranges import name_sequence


@dataclass(frozen=True)
class ChunkPlace:
    """Where a chunk's rows sort among the changes: a server binlog position
    (as the lake names the file) and the time its read view opened."""
    file: str
    pos: int
    time: str | None = None
    number: int | None = None  #: the chunk's number in the snapshot (not saved)

    @property
    def start(self) -> tuple:
        """Just before the chunk's rows, in the lake's numbering: they sort
        at (file_seq, pos - 1, number + 1) (binlake.spark.snapshot.server_rows:
        sub = the chunk's number + 1), so after (file_seq, pos - 1, number),
        as do no rows of an earlier read at the same place (a table read
        anew twice at one binlog position); without a number (a place
        loaded from the manifest) (file_seq, pos - 2)."""
        if self.number is None:
            return (name_sequence(self.file), self.pos - 2)
        return (name_sequence(self.file), self.pos - 1, self.number)


@dataclass(frozen=True)
class TableProgress:
    """One table's lock-free snapshot: its key, the last bound read (`after`:
    key values as JSON, text or {"base64": ...}; None before the first
    chunk), whether it is done, the rows read, its chunks' size."""
    database: str
    table: str
    key: tuple[str, ...]
    chunk_rows: int
    after: list | None = None
    done: bool = False
    rows: int = 0
    #: (file_seq, pos[, sub]): read anew, its rows start after it (ChunkPlace.start)
    since: tuple | None = None
    last_chunk: ChunkPlace | None = None

    @property
    def name(self) -> str:
        return f"{self.database}.{self.table}"

    def chunks_read(self, reads: list[tuple[list | None, int, ChunkPlace]]
                    ) -> "TableProgress":
        """The progress once these chunks of a round (in key order: each its
        upper bound, None at the table's end, its rows and its place) are in
        the lake. A round's chunks are read side by side: their places are
        in no key order."""
        through = reads[-1][0]
        starts = [place.start for *_, place in reads]
        latest = reads[max(range(len(reads)), key=lambda i: starts[i])][2]
        last = self.last_chunk
        if last is None or latest.start > last.start:
            last = latest
        since = self.since
        if since is not None and not self.key:
            since = starts[0]  # a multiset: the changes before its read view are in its rows
        elif since is not None and self.last_chunk is None:
            since = max(since, min(starts))  # keyed: from its first chunks on (the module's rule)
        return replace(self, after=through, done=through is None,
                       rows=self.rows + sum(rows for _, rows, _ in reads), last_chunk=last,
                       since=since)

    def to_json(self) -> dict:
        data = {"database": self.database, "table": self.table, "key": list(self.key),
                "after": self.after, "done": self.done, "rows": self.rows,
                "chunk_rows": self.chunk_rows}
        if self.since is not None:
            data["since"] = list(self.since)
        if self.last_chunk is not None:
            data["last_chunk"] = {"file": self.last_chunk.file, "pos": self.last_chunk.pos,
                                  "time": self.last_chunk.time}
        return data

    @classmethod
    def from_json(cls, data) -> "TableProgress":
        _check(isinstance(data, dict), "a table's entry is not an object")
        for name, kind in (("database", str), ("table", str), ("key", list), ("done", bool),
                           ("rows", int), ("chunk_rows", int)):
            _check(isinstance(data.get(name), kind), f"a table's {name!r} is not a {kind.__name__}")
        _check(data.get("after") is None or isinstance(data["after"], list),
               "a table's 'after' is not a list")
        since, last = data.get("since"), data.get("last_chunk")
        _check(since is None or (isinstance(since, list) and len(since) in (2, 3)
                                 and all(isinstance(v, int) for v in since)),
               "a table's 'since' is not [file_seq, pos] or [file_seq, pos, sub]")
        _check(last is None or (isinstance(last, dict) and isinstance(last.get("file"), str)
                                and isinstance(last.get("pos"), int)),
               "a table's 'last_chunk' is not {file, pos, time}")
        return cls(data["database"], data["table"], tuple(data["key"]), data["chunk_rows"],
                   data.get("after"), data["done"], data["rows"],
                   tuple(since) if since is not None else None,
                   ChunkPlace(last["file"], last["pos"], last.get("time")) if last else None)


@dataclass(frozen=True)
class SnapshotProgress:
    """Every table the lock-free snapshot reads or has read ("db.table", in
    the order it reads them), and the chunks read so far (their numbers)."""
    tables: dict[str, TableProgress] = field(default_factory=dict)
    chunks: int = 0

    def reading(self) -> set[str]:
        """The tables it has yet to finish."""
        return {name for name, entry in self.tables.items() if not entry.done}

    def starts(self) -> dict[str, tuple[int, int]]:
        """Where the rows of each table read anew start."""
        return {name: entry.since for name, entry in self.tables.items()
                if entry.since is not None}

    def with_tables(self, entries: list[TableProgress]) -> "SnapshotProgress":
        """The progress with these tables to read (anew: their old entries replaced)."""
        return replace(self, tables={**self.tables, **{e.name: e for e in entries}})

    def chunks_read(self, reads: list[tuple[str, list | None, int, ChunkPlace]]
                    ) -> "SnapshotProgress":
        """The progress once these chunks (a round, in key order: each its
        table, upper bound, rows and place) are in the lake."""
        by_table: dict[str, list] = {}
        for name, *read in reads:
            by_table.setdefault(name, []).append(read)
        tables = {name: self.tables[name].chunks_read(by_table[name]) if name in by_table
                  else entry for name, entry in self.tables.items()}
        return replace(self, tables=tables, chunks=self.chunks + len(reads))

    def to_json(self) -> dict:
        return {"tables": {name: entry.to_json() for name, entry in self.tables.items()},
                "chunks": self.chunks}

    @classmethod
    def from_json(cls, data) -> "SnapshotProgress | None":
        if data is None:
            return None
        _check(isinstance(data, dict) and isinstance(data.get("tables"), dict)
               and isinstance(data.get("chunks"), int), "not {tables, chunks}")
        return cls({name: TableProgress.from_json(entry)
                    for name, entry in data["tables"].items()}, data["chunks"])


def snapshot_reading(progress: SnapshotProgress | None) -> set[str]:
    """The tables ("db.table") the lock-free snapshot has yet to finish."""
    return progress.reading() if progress is not None else set()


def _check(holds: bool, what: str) -> None:
    if not holds:
        raise ValueError(f"the manifest's lock-free snapshot progress (chunks): {what}")


__all__ = ["ChunkPlace", "TableProgress", "SnapshotProgress", "snapshot_reading"]
