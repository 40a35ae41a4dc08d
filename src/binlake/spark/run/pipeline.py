"""`binlake pipeline`: binlog files into Parquet events/ and changes/, and
Delta tables/.

    out/events/date=YYYY-MM-DD/...                      the events view
    out/changes/database=D/table=T/date=YYYY-MM-DD/...  the changes view
    out/tables/D.T/                                     each table's rows, typed (Delta)
    out/_binlake/manifest.json                          what has been read

Strategy: the manifest records, per file, how far it has been read (always
a transaction boundary found by the header scan) and a fingerprint of its
format description. A run scans each input from there, decodes only the new
byte ranges and appends them (binlake.spark.run.binlogs: which ranges;
binlake.spark.run.staging: staged, then committed): in the driver, written
straight to Parquet (binlake.spark.read.partitioned), or by the `binlog`
data source in a cluster's executors when the new ranges are large
(`read_in`); the table layouts seen so far are kept in the manifest too,
and the change files each run appended until every table took them in
(`pending`). tables/ is then brought in step with them
(binlake.spark.run.lake_tables, binlake.spark.commits.lake: appended,
merged by key, or rebuilt where a table's definition changed or `as_of`
asks), each table committed as its next Delta version. `snapshot` (a
server address) starts a new lake from a consistent snapshot of its tables
(binlake.spark.snapshot.snapshot): their rows become the first changes,
and the binlogs are read from the snapshot's position on. This module is
the run itself: its phases in order, one transaction on the lake's files
(binlake.spark.state.run_undo); the Spark session it is given may be one
that starts where the run first needs it (binlake.spark.run.session).

Rule: output is committed in a fixed order so that a run that dies leaves
either the old state or a state the next run completes: new files are
written under _binlake/staging/ and fsynced (binlake.atomic.fsync_files:
Spark's and the driver's writers do not), the manifest they belong to is
written next to them, then they are moved into place, their folders
fsynced, and the manifest replaced: a power cut never leaves a manifest
naming bytes the disk does not hold. Nor binlog bytes it may not hold: a
run given `read_limits` (the follower: its copies as far as they are
fsynced) reads no file past them.
A run finding a staging manifest finishes that move first; one finding
staging data without one discards it.

Rule: what would make the lake silently wrong is refused in one line
before anything is written: a second run on the same lake (a lock held for
the run), a binlog older than those read or after one never read (by
number, and by the name the previous file's ROTATE gives), a file that is
not the one read before under its name, a `--tables` selecting tables
changes/ does not hold without the binlogs read before (`catch_up`: with
them, those are read again for those tables alone, as a run of its own).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field

from binlake.progress import on_terminal
from binlake.spark.commits.lake import TABLES, tables_in_step
from binlake.spark.plans.history import follow_ranges
from binlake.spark.plans.layouts import find_layouts
from binlake.spark.plans.typed import TEMPORALS
from binlake.spark.read.batches import TableFilter
from binlake.spark.read.partitioned import SNAPSHOT_FILES
from binlake.spark.read.ranges import DEFAULT_SPLIT_BYTES, expand_inputs, number_files
from binlake.spark.run.binlogs import catch_up, new_segments, unread_bytes
from binlake.spark.run.lake_tables import (
    bring_tables_in_step,
    build_tables_as_of,
    parse_as_of,
    parse_partition_by,
    read_changes,
    read_events,
    read_table,
)
from binlake.spark.run.rebuild import marked_stale
from binlake.spark.run.session import LazySession, configure_session, spark_session
from binlake.spark.run.staging import recover_lake, stage_and_commit
from binlake.spark.state.compaction import compact_lake_views
from binlake.spark.state.manifest import Manifest, SnapshotFloor
from binlake.spark.state.run_undo import RunUndo
from binlake.spark.state.store import (SNAPSHOT, clear_folder, has_state, lake_lock,
                                       load_manifest, load_schema_history, make_state_dir,
                                       save_snapshot_seed)

#: A run over this many new binlog bytes has changes enough for Spark
#: (more than the driver computes: driver_way.DRIVER_ROWS a table), so
#: its session starts at once, in the background, as one that rebuilds.
SURELY_SPARK_BYTES = 64 << 20
#: A run that rebuilds its tables from this many bytes of binlogs and
#: changes/ or more needs Spark for them (fewer: the driver, as
#: driver_way.DRIVER_ROWS changes a table), so its session starts at once.
SURELY_SPARK_REBUILD_BYTES = 8 << 20
#: Characters delta-rs takes for URL syntax in a local path (it fails on them).
DELTA_UNSAFE = "[]%#?"


@dataclass
class PipelineResult:
    segments: list = field(default_factory=list)   #: [Split] read by this run
    events: int = 0                                #: rows appended to events/
    changes: int = 0                               #: rows appended to changes/
    table_changes: dict = field(default_factory=dict)  #: "db.table" -> rows appended to changes/
    tables: dict = field(default_factory=dict)     #: "db.table" -> rows in tables/
    tables_rebuilt: bool = False                   #: tables/ was brought in step
    table_work: dict = field(default_factory=dict)  #: "appended"|"merged"|"rebuilt" -> [tables]
    warnings: list = field(default_factory=list)


def run_pipeline(spark, inputs, out: str, *, as_of: str | None = None,
                 as_of_out: str | None = None, split_bytes: int = DEFAULT_SPLIT_BYTES, min_partitions: int | None = None,
                 schema: str | None = None, tables: str | None = None,
                 reader_options: dict | None = None, snapshot=None,
                 snapshot_chunk_rows: int | None = None, snapshot_chunked: bool = False,
                 snapshot_round: tuple | None = None, read_in: str = "auto",
                 temporals: str | None = None, history: bool = False,
                 partition_by: str | dict | None = None, rebuild: str | None = None,
                 read_limits: dict | None = None, keep_versions: float | None = None,
                 log=None) -> PipelineResult:
    """`rebuild`: db.table patterns of tables built again from changes/
    (binlake.spark.run.rebuild). `read_limits` ({binlog name: bytes}) holds
    the run to those bytes of the files it names, and to those files: the
    follower's copies as far as they are on disk for sure. `keep_versions`
    (seconds): how long the tables keep old versions readable, kept by the
    runs after that do not say (binlake.spark.commits.delta.table_properties)."""
    if isinstance(spark, LazySession):
        spark.then(configure_session)
    else:
        configure_session(spark)
    log = log or (lambda message: None)
    out = os.path.abspath(out)
    unusable = sorted(set(out) & set(DELTA_UNSAFE))
    if unusable:
        raise ValueError(f"--out {out}: the Delta tables' writer (delta-rs) cannot address a "
                         f"path containing {' '.join(unusable)}: choose another directory")
    if as_of is not None:
        as_of_out = _as_of_folder(out, as_of_out)
    make_state_dir(out)
    with lake_lock(out):
        try:
            return _run(spark, inputs, out, as_of=as_of, as_of_out=as_of_out,
                        split_bytes=split_bytes, min_partitions=min_partitions, schema=schema,
                        tables=tables, reader_options=reader_options, snapshot=snapshot,
                        snapshot_chunk_rows=snapshot_chunk_rows,
                        snapshot_chunked=snapshot_chunked, snapshot_round=snapshot_round,
                        read_in=read_in, temporals=temporals, keep_history=history,
                        partition_by=parse_partition_by(partition_by), rebuild=rebuild,
                        read_limits=read_limits, keep_versions=keep_versions, log=log)
        except Exception:  # (Ctrl-C does not wait)
            if isinstance(spark, LazySession):
                spark.settle()  # the JVM's own start-up lines before the caller's error line
            raise


def _surely_spark(inputs, out: str, manifest: Manifest, as_of) -> bool:
    """A run sure to need Spark for its tables: --as-of, a large backlog, or
    tables rebuilt from a large history (not small ones: the driver's)."""
    unread = unread_bytes(inputs, out) or 0
    if as_of or unread >= SURELY_SPARK_BYTES:
        return True
    if tables_in_step(manifest.tables, os.path.join(out, TABLES)):
        return False
    # (The lock-free snapshot's chunks: their tables are built by the driver.)
    held = sum(os.path.getsize(os.path.join(folder, name))
               for folder, _, names in os.walk(os.path.join(out, "changes")) for name in names
               if not name.startswith(SNAPSHOT_FILES))
    return unread + held >= SURELY_SPARK_REBUILD_BYTES


def maintain_lake(out: str, *, retention_hours: int | None = None) -> dict:
    """Every table of the lake compacted and vacuumed whole now (a run
    compacts the tables it committed to when their files are many, and
    vacuums only the files their log removed), and the small files of
    events/ and changes/ merged (binlake.spark.state.compaction);
    {"db.table", and "events/ and changes/" where files were merged or
    deleted: {"compacted": n, "vacuumed": n}}.
    Holds the lake's lock: never beside a run."""
    from binlake.spark.commits.delta_upkeep import RETENTION_HOURS, maintain
    folder = os.path.join(out, TABLES)
    if not has_state(out) or not os.path.isdir(folder):
        raise ValueError(f"{out}: no tables of a binlake pipeline here")
    hours = RETENTION_HOURS if retention_hours is None else retention_hours
    with lake_lock(out):
        done = {name: maintain(os.path.join(folder, name), compact=True, retention_hours=hours)
                for name in sorted(os.listdir(folder))}
        # events/ and changes/ merged whole, with no time limit.
        views = compact_lake_views(out, seconds=float("inf"))
        if views["merged"] or views["deleted"]:
            done["events/ and changes/"] = {"compacted": views["merged"],
                                            "vacuumed": views["deleted"]}
        return done


def _as_of_folder(out: str, as_of_out: str | None) -> str:
    """Where `--as-of`'s tables go: a folder the user names, never the lake's
    own tables (readers of those would see the past until the next run)."""
    if not as_of_out:
        raise ValueError("--as-of builds the tables as of that point in a folder of their own: "
                         "name it with --as-of-out DIR (the lake's tables stay as they are)")
    as_of_out = os.path.abspath(as_of_out)
    lake = os.path.abspath(out)
    if as_of_out == lake or as_of_out.startswith(lake + os.sep):
        raise ValueError(f"--as-of-out {as_of_out}: a folder outside the lake {lake}")
    unusable = sorted(set(as_of_out) & set(DELTA_UNSAFE))
    if unusable:
        raise ValueError(f"--as-of-out {as_of_out}: the Delta tables' writer (delta-rs) cannot "
                         f"address a path containing {' '.join(unusable)}: choose another")
    return as_of_out


def _run(spark, inputs, out: str, *, log, **options) -> PipelineResult:
    """One run as one transaction on the lake's files: a run refused (or
    failing) before its tables commit leaves every byte as it was
    (binlake.spark.state.run_undo)."""
    recover_lake(out, log)
    undo = RunUndo.begin(out)
    try:
        result = _run_in(spark, inputs, out, undo=undo, log=log, **options)
    except Exception:
        undo.roll_back()
        raise
    undo.forget()
    return result


@dataclass
class Run:
    """What one run's phases share: where it reads and writes, how."""
    spark: object
    out: str
    wanted: TableFilter
    options: dict          #: the binlog source's options (binlake.spark.read.source)
    undo: RunUndo
    log: object
    result: PipelineResult = field(default_factory=PipelineResult)
    #: a progress bar on stderr while the driver reads (a terminal's, and
    #: not the follower's micro-batches: it has a status line of its own)
    show_progress: bool = False

    def append(self, segments: list, options: dict, manifest: Manifest, history, **more):
        if not self.show_progress or not segments:
            return stage_and_commit(self.spark, self.out, segments, options, manifest, history,
                                    self.log, self.undo, counted=self.result.table_changes,
                                    **more)
        reading = _ReadingBar(segments, more.get("views", ("events", "changes")))
        try:
            return stage_and_commit(self.spark, self.out, segments, options, manifest, history,
                                    reading.log(self.log), self.undo,
                                    counted=self.result.table_changes, progress=reading,
                                    **more)
        finally:
            reading.close()


class _ReadingBar:
    """The bytes of a run's new ranges read in the driver, once per view
    (events/, then changes/), and the rows written per second: told of each
    batch (staging's `progress`), a batch's last `pos` is how far it read."""

    def __init__(self, segments: list, views: tuple):
        from binlake.progress import bar
        self._starts, total = {}, 0
        for split in segments:
            self._starts[split] = total
            end = split.end if split.end is not None else _size(split.path)
            total += max(0, end - split.start)
        self._each = total
        self._views = {view: index * total for index, view in enumerate(views)}
        self.bar = bar(total * len(views), sys.stderr, "binlake pipeline")

    def __call__(self, view: str, split, batch) -> None:
        if not batch.num_rows:
            return
        self.bar.count_rows(batch.num_rows)
        pos = batch.column("pos")[batch.num_rows - 1].as_py()
        self.bar.advance_to(self._views.get(view, 0) + self._starts.get(split, 0)
                            + max(0, pos - split.start))

    def log(self, log):
        """`log`, its line written where the bar was (drawn again after)."""
        def cleared(message: str) -> None:
            self.bar.clear()
            log(message)
        return cleared

    def close(self) -> None:
        self.bar.advance_to(self._each * len(self._views))
        self.bar.close()


def _snapshot_bar(stream):
    """A bar per table of a snapshot's rows, of the server's estimate (~N),
    on a terminal (binlake.spark.snapshot.snapshot's `progress`); else None."""
    if not on_terminal(stream):
        return None
    from binlake.progress import bar
    return lambda estimate, desc: bar(estimate, stream, desc, unit="rows", estimate=True)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _run_in(spark, inputs, out: str, *, as_of, as_of_out, split_bytes, min_partitions, schema,
            tables, reader_options, snapshot, snapshot_chunk_rows, snapshot_chunked,
            snapshot_round, read_in, temporals, keep_history, partition_by, rebuild,
            read_limits, keep_versions, undo: RunUndo, log) -> PipelineResult:
    """The run's phases: the lake's choices, a snapshot's rows, the binlogs
    read again for tables newly selected, the new binlogs, then the tables
    (as of a point, or brought in step)."""
    # Tables --rebuild names: built again from changes/ by this run.
    manifest = marked_stale(load_manifest(out), rebuild, TableFilter(tables))
    manifest, temporals, keep_history, partition_by = _choices(manifest, temporals,
                                                               keep_history, partition_by,
                                                               keep_versions)
    if isinstance(spark, LazySession) and _surely_spark(inputs, out, manifest, as_of):
        spark.start_soon()  # the tables need Spark: its JVM starts while the driver reads
    options = {"split_bytes": str(split_bytes)}
    if min_partitions:  # else Spark's default parallelism where Spark reads (stage_and_commit)
        options["min_partitions"] = str(min_partitions)
    options.update({k: str(v) for k, v in (reader_options or {}).items()})
    if tables:
        options["tables"] = tables
    run = Run(spark, out, TableFilter(tables), options, undo, log,
              show_progress=read_limits is None and on_terminal(sys.stderr))
    files = number_files(expand_inputs(inputs), require_names=True)
    if read_limits is not None:
        files = [(path, seq) for path, seq in files if os.path.basename(path) in read_limits]
    again = catch_up(files, manifest, run.wanted)
    staged_snapshot = None
    if snapshot is not None and manifest.snapshot is None:
        if manifest.files:
            raise ValueError(f"--snapshot-from starts a lake, and {out} has read binlogs "
                             "already: use a new output directory")
        # The seed is the snapshot's DDL (then --schema's tables, by name).
        staged_snapshot, point, schema, chunks = _take_snapshot(
            snapshot, run.wanted, out, schema, snapshot_chunk_rows, snapshot_chunked, log)
        manifest = manifest.from_snapshot(point)
        if chunks is not None:
            manifest = manifest.chunked(chunks)
    elif snapshot_round is not None:
        # Chunks of the lock-free snapshot: their rows and progress go in
        # with this run (binlake.spark.snapshot.chunks).
        staged_snapshot, chunks = snapshot_round
        manifest = manifest.chunked(chunks)
    # The schema history of everything read so far; `schema` seeds the first run.
    history = load_schema_history(out, schema)
    layouts = dict(manifest.layouts)
    if again:
        manifest = _read_again(run, again, manifest, history, layouts)
    manifest = _read_new(run, files, manifest, history, layouts, staged_snapshot, read_in,
                         read_limits)
    if as_of:
        build_tables_as_of(run, as_of, as_of_out, manifest, history, layouts, temporals,
                           partition_by)
    else:
        bring_tables_in_step(run, manifest, history, layouts, temporals, keep_history,
                             partition_by)
    return run.result


def _choices(manifest: Manifest, temporals, keep_history, partition_by: dict,
             keep_versions: float | None = None):
    """The lake's choices a run keeps unless it names others: (the manifest
    recording them, temporals, history, partitioning)."""
    # Chosen when the lake starts, kept by the runs that do not say.
    temporals = temporals or manifest.temporals or "typed"
    if temporals not in TEMPORALS:
        raise ValueError(f"--temporals {temporals}: one of {', '.join(TEMPORALS)}")
    # A history of the rows (--history) once kept is kept by every run.
    keep_history = bool(keep_history or manifest.history)
    manifest = manifest.choosing(temporals, keep_history, keep_versions)
    # Each table's partitioning, once named, is kept until named again.
    kept = manifest.tables.partition_by if manifest.tables else {}
    partition_by = {key: column for key, column in {**kept, **partition_by}.items() if column}
    return manifest, temporals, keep_history, partition_by


def _read_again(run: Run, again: list, manifest: Manifest, history,
                layouts: dict) -> Manifest:
    """Tables newly selected: the binlogs read before, read again for them
    alone (changes/ only: events/ holds every event), as a run of its own."""
    wanted = run.wanted
    _add_layouts(layouts, find_layouts(again, history=history, wanted=wanted))
    caught = manifest.reading({name: manifest.read_for(name, entry, wanted.patterns)
                               for name, entry in manifest.files.items()}, layouts)
    run.log(f"changes: reading {len(again)} range(s) read before again, for the tables "
            f"--tables newly selects")
    held = {name: [[list(h.patterns), h.end] for h in manifest.holds(name, wanted.patterns)]
            for name in {os.path.basename(s.path) for s in again}}
    # Each task takes the history as it was where its range starts.
    manifest, _, added = run.append(again, dict(run.options,
                                                schema=history.json_text(),
                                                tables_held=json.dumps(held)),
                                    caught, history, views=("changes",))
    run.result.changes += added
    return manifest


def _read_new(run: Run, files, manifest: Manifest, history, layouts: dict, staged_snapshot,
              read_in: str, limits: dict | None) -> Manifest:
    """The binlogs' new ranges (and a snapshot's rows) into events/ and
    changes/, with the manifest that says so."""
    result = run.result
    segments, scans, file_entries = new_segments(files, manifest, result.warnings, limits)
    result.segments = segments
    for message in result.warnings:
        run.log(f"warning: {message}")
    file_entries = {name: manifest.read_for(name, entry, run.wanted.patterns)
                    for name, entry in file_entries.items()}
    if segments or staged_snapshot:
        follow_ranges(history, segments, scans)
        _add_layouts(layouts, find_layouts(segments, history=history, wanted=run.wanted,
                                           scans=scans))
        new_manifest = manifest.reading(file_entries, layouts)
        # Each task takes the history as it was where its range starts.
        run.options["schema"] = history.json_text()
        manifest, result.events, changes = run.append(
            segments, run.options, new_manifest, history, snapshot_folder=staged_snapshot,
            read_in=read_in)
        result.changes += changes
    for message in history.warnings:
        run.log(f"warning: {message}")
    result.warnings.extend(history.warnings)
    return manifest


def _add_layouts(layouts: dict, found: dict) -> None:
    """The table-map layouts `found` where they are newer than those known."""
    for key, (order, layout) in found.items():
        if key not in layouts or tuple(layouts[key]["order"]) <= tuple(order):
            layouts[key] = {"order": list(order), "layout": layout}


def _take_snapshot(address, wanted, out: str, schema: str | None, chunk_rows, chunked: bool,
                   log):
    """(the folder of the snapshot's changes, its point for the manifest, the
    schema seed to start the history with, the lock-free snapshot's progress
    with `chunked`)."""
    from binlake.schema.history import load_schema, parse_schema
    from binlake.schema.seeds import filled_in
    from binlake.spark.read.ranges import name_sequence
    from binlake.spark.snapshot.chunks import CHUNK_ROWS
    from binlake.spark.snapshot.snapshot import take_snapshot
    folder = clear_folder(out, SNAPSHOT)
    point, ddl, chunks = take_snapshot(address, wanted, folder, file_seq_of=name_sequence,
                                       chunk_rows=chunk_rows or CHUNK_ROWS, chunked=chunked,
                                       log=log, progress=_snapshot_bar(sys.stderr))
    seed = parse_schema(ddl)
    if schema:
        seed = filled_in(load_schema(schema), seed)
    seed_path = save_snapshot_seed(out, seed)
    floor = SnapshotFloor(point.file, point.pos, name_sequence(point.file), point.gtid, point.time)
    return folder, floor, seed_path, chunks


__all__ = ["run_pipeline", "spark_session", "load_manifest", "parse_as_of", "read_changes",
           "read_table", "read_events", "PipelineResult"]
