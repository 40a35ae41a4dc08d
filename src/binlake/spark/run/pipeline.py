"""`binlake pipeline`: binlog files into Parquet events/ and changes/, and
Delta tables/.

    out/events/date=YYYY-MM-DD/...                      the events view
    out/changes/database=D/table=T/date=YYYY-MM-DD/...  the changes view
    out/tables/D.T/                                     each table's rows, typed (Delta)
    out/_binlake/manifest.json                          what has been read

Strategy: the manifest records, per file, how far it has been read (always
a transaction boundary found by the header scan) and a fingerprint of its
format description. A run scans each input from there, decodes only the new
byte ranges and appends them: in the driver, written straight to Parquet
(binlake.spark.read.partitioned), or by the `binlog` data source in a cluster's
executors when the new ranges are large (`read_in`); the table
layouts seen so far are kept in the manifest too, and the change files each
run appended until every table took them in (`pending`). tables/ is then
brought in step with them (binlake.spark.commits.lake: appended, merged by key, or
rebuilt where a table's definition changed or `as_of` asks), each table
committed as its next Delta version. `snapshot` (a server address) starts a
new lake from a consistent snapshot of its tables (binlake.spark.snapshot.snapshot):
their rows become the first changes, and the binlogs are read from the
snapshot's position on.

Rule: output is committed in a fixed order so that a run that dies leaves
either the old state or a state the next run completes: new files are
written under _binlake/staging/ and fsynced (binlake.atomic.fsync_files:
Spark's and the driver's writers do not), the manifest they belong to is
written next to them, then they are moved into place, their folders
fsynced, and the manifest replaced: a power cut never leaves a manifest
naming bytes the disk does not hold.
A run finding a staging manifest finishes that move first; one finding
staging data without one discards it.

Rule: what would make the lake silently wrong is refused in one line
before anything is written: a second run on the same lake (a lock held for
the run), a binlog older than those read or after one never read (by
number, and by the name the previous file's ROTATE gives), a file that is
not the one read before under its name, a `--tables` selecting tables
changes/ does not hold without the binlogs read before (`_catch_up`: with
them, those are read again for those tables alone, as a run of its own).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import re
import shutil
import sys
import threading
import zlib
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from binlake.atomic import fsync_directory, fsync_files
from binlake.read.scan import read_framing, scan
from binlake.spark.read.batches import CHANGES, EVENTS, VIEWS, TableFilter, spark_ddl
from binlake.spark.plans.history import PositionOrder, follow_ranges, load_history, table_plans
from binlake.spark.plans.layouts import find_layouts
from binlake.spark.read.ranges import (DEFAULT_SPLIT_BYTES, DRIVER_READ_BYTES, FAILOVER_FILES,
                                  FIRST_EVENT, READ_IN, Split, expand_inputs, number_files,
                                  split_bytes_of)
from binlake.spark.commits.lake import TABLES, tables_in_step, update_tables
from binlake.spark.commits.spark_way import concurrently, hadoop_literal
from binlake.spark.state.manifest import FileRead, Manifest, SnapshotFloor, read_manifest, write_manifest
from binlake.spark.read.partitioned import SNAPSHOT_FILES, parquet_rows
from binlake.spark.run.rebuild import marked_stale, stale_tables
from binlake.spark.state.run_undo import RunUndo
from binlake.spark.state.progress import snapshot_reading
from binlake.spark.state.starts import refuse_inexact, starting_anew
from binlake.spark.rules.tables import AsOf, one_of
from binlake.spark.plans.typed import PARTITION_TYPES, TEMPORALS, spark_type, with_temporals

STATE_DIR = "_binlake"
#: A run over this many new binlog bytes has changes enough for Spark
#: (more than the driver computes: driver_tables.DRIVER_ROWS a table), so
#: its session starts at once, in the background, as one that rebuilds.
SURELY_SPARK_BYTES = 64 << 20
CHANGE_PARTITIONS = ("database", "table", "date")
#: A run that rebuilds its tables from this many bytes of binlogs and
#: changes/ or more needs Spark for them (fewer: the driver, as
#: driver_tables.DRIVER_ROWS changes a table), so its session starts at once.
SURELY_SPARK_REBUILD_BYTES = 8 << 20
#: A local session on at most FEW_CORES cores for at most SHORT_RUN_BYTES of
#: binlogs compiles with the JVM's first JIT tier only.
FEW_CORES = 4
SHORT_RUN_BYTES = 256 << 20
#: Characters delta-rs takes for URL syntax in a local path (it fails on them).
DELTA_UNSAFE = "[]%#?"
EVENT_PARTITIONS = ("date",)
VIEW_PARTITIONS = [("events", EVENT_PARTITIONS), ("changes", CHANGE_PARTITIONS)]


@dataclass
class PipelineResult:
    segments: list = field(default_factory=list)   #: [Split] read by this run
    events: int = 0                                #: rows appended to events/
    changes: int = 0                               #: rows appended to changes/
    tables: dict = field(default_factory=dict)     #: "db.table" -> rows in tables/
    tables_rebuilt: bool = False                   #: tables/ was brought in step
    table_work: dict = field(default_factory=dict)  #: "appended"|"merged"|"rebuilt" -> [tables]
    warnings: list = field(default_factory=list)


def spark_session(master: str | None = None, app: str = "binlake pipeline",
                  work_bytes: int | None = None):
    """An embedded local[*] session; the cluster's with `master`; the one
    spark-submit prepared when run under it. `work_bytes`: the binlog bytes
    the session is for, when known (a short run on a few local cores gets a
    JVM tuned for starting fast)."""
    # Spark's Python workers must run this interpreter (it has binlake and pyarrow).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName(app)
    master = master or local_master()
    if master:
        builder = builder.master(master)
    cores = _local_cores(master)
    if cores:
        # Spark's 200 shuffle partitions are 200 tasks per stage, mostly overhead on
        # one machine; a few per core keep every core busy.
        builder = (builder.config("spark.sql.shuffle.partitions", str(4 * cores))
                   .config("spark.ui.showConsoleProgress", "false"))
        # Quiet: the JVM logs errors only (a normal run prints binlake's lines
        # alone), and a host name that resolves to a loopback address is no
        # reason to warn when everything runs on this machine.
        builder = builder.config("spark.driver.extraJavaOptions",
                                 local_java_options(cores, work_bytes))
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()


def local_master() -> str | None:
    """The master of a session nobody named one for: local[*], unless under
    spark-submit (None: the one it prepared)."""
    return None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[*]"


class LazySession:
    """A Spark session started where a run first needs one (`start()` gives
    it): a run the driver does alone (nothing new, a small increment,
    binlake.spark.rules.driver_tables) starts no JVM. `master` is what the
    session is for, known before it starts. `start_soon()` starts it in
    the background, for a run sure to need it: the JVM's seconds of start
    then pass while the driver reads the binlogs. Threads share one start."""

    def __init__(self, start, master: str | None = None):
        self._start, self._session, self._then = start, None, []
        self.master = master
        self._lock = threading.Lock()
        self._starting: Future | None = None

    def then(self, configure) -> None:
        """`configure(session)` now if it runs, else when it starts."""
        with self._lock:
            if self._session is None:
                self._then.append(configure)
                return
        configure(self._session)

    def start_soon(self) -> None:
        with self._lock:
            if self._session is None and self._starting is None:
                self._starting = Future()
                threading.Thread(target=self._started, daemon=True,
                                 name="spark session start").start()

    def ready(self) -> bool:
        """The session is there (or its start has ended): using it waits for nothing."""
        return self._session is not None or (self._starting is not None
                                             and self._starting.done())

    def settle(self) -> None:
        """Wait for a start `start_soon` began, whatever its outcome."""
        if self._starting is not None:
            wait([self._starting])

    def _started(self) -> None:
        try:
            self._starting.set_result(self._start())
        except BaseException as exc:  # noqa: BLE001 - raised where the session is used
            self._starting.set_exception(exc)

    def __getattr__(self, name: str):
        if self._session is None:
            with self._lock:
                if self._session is None:
                    session = (self._starting.result() if self._starting is not None
                               else self._start())
                    for configure in self._then:
                        configure(session)
                    self._session = session
        return getattr(self._session, name)


def local_java_options(cores: int, work_bytes: int | None) -> str:
    """The JVM options of a local session: binlake's log4j configuration;
    Spark's generated code compiled however long its methods (HotSpot
    leaves a method of over 8000 bytecode bytes to its interpreter, and a
    table's projection of its changes is longer: the rebuild of the bench's
    bulk table took 7.3 s warm with it, 5.2 s without); for a short run on a
    few cores, the JIT's first tier only (the optimizing compiler's threads
    would take CPU from the work itself, while a long run gains from its
    code: bench/README.md)."""
    log4j = Path(__file__).with_name("log4j2.properties").as_uri()  # spaces escaped
    options = f"-Dlog4j2.configurationFile={log4j} -XX:-DontCompileHugeMethods"
    if cores <= FEW_CORES and work_bytes is not None and work_bytes <= SHORT_RUN_BYTES:
        options += " -XX:TieredStopAtLevel=1"
    return options


def _local_cores(master: str | None) -> int | None:
    """N of local[N] (local[*]: this machine's cores); None for a cluster."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master or "")
    if not match:
        return None
    return (os.cpu_count() or 1) if match[1] in (None, "*") else int(match[1])


def unread_bytes(inputs, out: str) -> int | None:
    """About how many bytes of `inputs` a run over `out` has yet to read (from
    the manifest, no scan): the size of a run, before its session starts."""
    try:
        manifest = load_manifest(os.path.abspath(out))
        return sum(max(0, os.path.getsize(path) - _read_before(manifest, path, seq))
                   for path, seq in number_files(expand_inputs(inputs)))
    except (OSError, ValueError):
        return None  # the run itself says what is wrong


def _read_before(manifest: Manifest, path: str, seq: int) -> int:
    """The bytes of `path` the lake has read, or will never read (before a
    snapshot's or a failover's floor)."""
    known = manifest.files.get(os.path.basename(path))
    if known is not None:
        return known.end
    floor = manifest.floor_of(seq)
    if floor is None or seq > floor.file_seq:
        return 0
    return floor.pos if seq == floor.file_seq else os.path.getsize(path)


# -- the manifest ------------------------------------------------------------------------

def _state(out: str, *parts: str) -> str:
    return os.path.join(out, STATE_DIR, *parts)


def load_manifest(out: str) -> Manifest:
    """The lake's state (binlake.spark.state.manifest)."""
    return read_manifest(_state(out, "manifest.json"), out)


def fingerprint(path: str) -> str:
    """CRC32 of the format description without its flags (the server clears
    LOG_EVENT_BINLOG_IN_USE_F when it closes the file) and checksum."""
    with open(path, "rb") as f:
        head = f.read(4096)
    framing = read_framing(head, len(head))
    end = framing.fde_end if framing else min(len(head), 4 + 19)
    stable = head[4:4 + 17] + head[4 + 19:end - (framing.checksum_len if framing else 0)]
    return f"{zlib.crc32(stable):08x}"


# -- a run -------------------------------------------------------------------------------

def run_pipeline(spark, inputs, out: str, *, as_of: str | None = None,
                 as_of_out: str | None = None, split_bytes: int = DEFAULT_SPLIT_BYTES, min_partitions: int | None = None,
                 schema: str | None = None, tables: str | None = None,
                 reader_options: dict | None = None, snapshot=None,
                 snapshot_chunk_rows: int | None = None, snapshot_chunked: bool = False,
                 snapshot_round: tuple | None = None, read_in: str = "auto",
                 temporals: str | None = None, history: bool = False,
                 partition_by: str | dict | None = None, rebuild: str | None = None,
                 log=None) -> PipelineResult:
    """`rebuild`: db.table patterns of tables built again from changes/
    (binlake.spark.run.rebuild)."""
    if isinstance(spark, LazySession):
        spark.then(_configure)
    else:
        _configure(spark)
    log = log or (lambda message: None)
    out = os.path.abspath(out)
    unusable = sorted(set(out) & set(DELTA_UNSAFE))
    if unusable:
        raise ValueError(f"--out {out}: the Delta tables' writer (delta-rs) cannot address a "
                         f"path containing {' '.join(unusable)}: choose another directory")
    if as_of is not None:
        as_of_out = _as_of_folder(out, as_of_out)
    os.makedirs(_state(out), exist_ok=True)
    with lake_lock(out):
        try:
            return _run(spark, inputs, out, as_of=as_of, as_of_out=as_of_out,
                        split_bytes=split_bytes, min_partitions=min_partitions, schema=schema,
                        tables=tables, reader_options=reader_options, snapshot=snapshot,
                        snapshot_chunk_rows=snapshot_chunk_rows,
                        snapshot_chunked=snapshot_chunked, snapshot_round=snapshot_round,
                        read_in=read_in, temporals=temporals, keep_history=history,
                        partition_by=parse_partition_by(partition_by), rebuild=rebuild,
                        log=log)
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


def _configure(spark) -> None:
    # Spark's default INT96 timestamps read back as naive times outside Spark.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")


def maintain_lake(out: str, *, retention_hours: int | None = None) -> dict:
    """Every table of the lake compacted and vacuumed whole now (a run
    compacts the tables it committed to when their files are many, and
    vacuums only the files their log removed); {"db.table":
    {"compacted": n, "vacuumed": n}}. Holds the lake's lock: never beside a run."""
    from binlake.spark.commits.delta_upkeep import RETENTION_HOURS, maintain
    folder = os.path.join(out, TABLES)
    if not os.path.isdir(_state(out)) or not os.path.isdir(folder):
        raise ValueError(f"{out}: no tables of a binlake pipeline here")
    hours = RETENTION_HOURS if retention_hours is None else retention_hours
    with lake_lock(out):
        return {name: maintain(os.path.join(folder, name), compact=True, retention_hours=hours)
                for name in sorted(os.listdir(folder))}


#: (lake, thread) holding the lake's lock in this process -> holders nested in it.
_HELD_LAKES: dict = {}


@contextmanager
def lake_lock(out: str):
    """An exclusive lock on the lake: a second run is refused (two runs
    would stage and append the same ranges). The lock goes with the process
    however it ends, so a killed run never leaves it held. It nests within
    one thread: a follower holds it for its life, its micro-batch runs
    inside."""
    holder = (os.path.abspath(out), threading.get_ident())
    if holder in _HELD_LAKES:
        _HELD_LAKES[holder] += 1
        try:
            yield
        finally:
            _HELD_LAKES[holder] -= 1
        return
    handle = os.open(_state(out, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"{out}: another binlake pipeline run is using this lake: "
                             "nothing was changed; run again when it has ended") from None
        _HELD_LAKES[holder] = 1
        try:
            yield
        finally:
            del _HELD_LAKES[holder]
    finally:
        os.close(handle)


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
class _Run:
    """What one run's phases share: where it reads and writes, how."""
    spark: object
    out: str
    wanted: TableFilter
    options: dict          #: the binlog source's options (binlake.spark.read.source)
    undo: RunUndo
    log: object
    result: PipelineResult = field(default_factory=PipelineResult)

    def append(self, segments: list, options: dict, manifest: Manifest, history, **more):
        return _append(self.spark, self.out, segments, options, manifest, history, self.log,
                       self.undo, **more)

    def read_changes(self, files=None, only=None):
        return _changes_of(self.spark, self.out, files, only)


def _run_in(spark, inputs, out: str, *, as_of, as_of_out, split_bytes, min_partitions, schema,
            tables, reader_options, snapshot, snapshot_chunk_rows, snapshot_chunked,
            snapshot_round, read_in, temporals, keep_history, partition_by, rebuild,
            undo: RunUndo, log) -> PipelineResult:
    """The run's phases: the lake's choices, a snapshot's rows, the binlogs
    read again for tables newly selected, the new binlogs, then the tables
    (as of a point, or brought in step)."""
    # Tables --rebuild names: built again from changes/ by this run.
    manifest = marked_stale(load_manifest(out), rebuild, TableFilter(tables))
    manifest, temporals, keep_history, partition_by = _choices(manifest, temporals,
                                                               keep_history, partition_by)
    if isinstance(spark, LazySession) and _surely_spark(inputs, out, manifest, as_of):
        spark.start_soon()  # the tables need Spark: its JVM starts while the driver reads
    options = {"split_bytes": str(split_bytes)}
    if min_partitions:  # else Spark's default parallelism, where Spark reads (_append)
        options["min_partitions"] = str(min_partitions)
    options.update({k: str(v) for k, v in (reader_options or {}).items()})
    if tables:
        options["tables"] = tables
    run = _Run(spark, out, TableFilter(tables), options, undo, log)
    files = number_files(expand_inputs(inputs), require_names=True)
    catch_up = _catch_up(files, manifest, run.wanted)
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
    history = load_history(_state(out, "schema.json"), schema)
    layouts = dict(manifest.layouts)
    if catch_up:
        manifest = _read_again(run, catch_up, manifest, history, layouts)
    manifest = _read_new(run, files, manifest, history, layouts, staged_snapshot, read_in)
    if as_of:
        _tables_as_of(run, as_of, as_of_out, manifest, history, layouts, temporals,
                      partition_by)
    else:
        _tables_in_step(run, manifest, history, layouts, temporals, keep_history, partition_by)
    return run.result


def _choices(manifest: Manifest, temporals, keep_history, partition_by: dict):
    """The lake's choices a run keeps unless it names others: (the manifest
    recording them, temporals, history, partitioning)."""
    # Chosen when the lake starts, kept by the runs that do not say.
    temporals = temporals or manifest.temporals or "typed"
    if temporals not in TEMPORALS:
        raise ValueError(f"--temporals {temporals}: one of {', '.join(TEMPORALS)}")
    # A history of the rows (--history) once kept is kept by every run.
    keep_history = bool(keep_history or manifest.history)
    manifest = manifest.choosing(temporals, keep_history)
    # Each table's partitioning, once named, is kept until named again.
    kept = manifest.tables.partition_by if manifest.tables else {}
    partition_by = {key: column for key, column in {**kept, **partition_by}.items() if column}
    return manifest, temporals, keep_history, partition_by


def _read_again(run: _Run, catch_up: list, manifest: Manifest, history,
                layouts: dict) -> Manifest:
    """Tables newly selected: the binlogs read before, read again for them
    alone (changes/ only: events/ holds every event), as a run of its own."""
    wanted = run.wanted
    _add_layouts(layouts, find_layouts(catch_up, history=history, wanted=wanted))
    caught = manifest.reading({name: manifest.read_for(name, entry, wanted.patterns)
                               for name, entry in manifest.files.items()}, layouts)
    run.log(f"changes: reading {len(catch_up)} range(s) read before again, for the tables "
            f"--tables newly selects")
    held = {name: [[list(h.patterns), h.end] for h in manifest.holds(name, wanted.patterns)]
            for name in {os.path.basename(s.path) for s in catch_up}}
    # Each task takes the history as it was where its range starts.
    manifest, _, added = run.append(catch_up, dict(run.options,
                                                   schema=json.dumps(history.to_json()),
                                                   tables_held=json.dumps(held)),
                                    caught, history, views=("changes",))
    run.result.changes += added
    return manifest


def _read_new(run: _Run, files, manifest: Manifest, history, layouts: dict, staged_snapshot,
              read_in: str) -> Manifest:
    """The binlogs' new ranges (and a snapshot's rows) into events/ and
    changes/, with the manifest that says so."""
    result = run.result
    segments, scans, file_entries = _new_segments(files, manifest, result.warnings)
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
        run.options["schema"] = json.dumps(history.to_json())
        manifest, result.events, changes = run.append(
            segments, run.options, new_manifest, history, snapshot_folder=staged_snapshot,
            read_in=read_in)
        result.changes += changes
    for message in history.warnings:
        run.log(f"warning: {message}")
    result.warnings.extend(history.warnings)
    return manifest


def _tables_as_of(run: _Run, as_of: str, as_of_out: str, manifest: Manifest, history,
                  layouts: dict, temporals: str, partition_by: dict) -> None:
    """The tables as of the point, whole, in their own folder; the lake's
    tables and its manifest's state of them stay as they are. Each table
    starts where the normal build starts it; a point the lake cannot give
    exactly (a table still being read among them) is refused."""
    order = PositionOrder(manifest.file_seqs())
    point = parse_as_of(as_of, manifest)
    plans = _plans(history, layouts, order, run.wanted, temporals, partition_by,
                   _before(point, order))
    refuse_inexact(as_of, point, plans, manifest, os.path.join(run.out, "changes"))
    plans, _ = starting_anew(plans, manifest.chunks)
    os.makedirs(as_of_out, exist_ok=True)
    result = run.result
    result.tables, _, result.table_work = update_tables(
        run.spark, run.out, plans, manifest, as_of=point,
        staged=os.path.join(as_of_out, "_binlake.new"), read_changes=run.read_changes,
        tables_mixed=lambda: None, committing=lambda: None, log=run.log,
        tables_dir=os.path.join(as_of_out, TABLES))
    result.tables_rebuilt = True


def _tables_in_step(run: _Run, manifest: Manifest, history, layouts: dict, temporals: str,
                    keep_history: bool, partition_by: dict) -> None:
    """tables/ (and history/) brought in step with the manifest, where they
    are not: the changes a run added, a choice changed, tables --rebuild
    names."""
    out, state = run.out, manifest.tables
    if not (manifest.pending or state is None or state.mixed or state.as_of is not None
            or state.temporals != temporals or state.history != keep_history
            or state.partition_by != partition_by or stale_tables(state)
            or not os.path.isdir(os.path.join(out, TABLES))):
        return
    order = PositionOrder(manifest.file_seqs())
    # A table the lock-free snapshot is still reading is not in tables/ yet:
    # its chunks and changes wait in changes/, and the run that appends its
    # last chunk builds it from them, as a table new to the lake.
    reading, wanted = snapshot_reading(manifest.chunks), run.wanted
    built = wanted if not reading else (
        lambda database, table: wanted(database, table) and f"{database}.{table}" not in reading)
    plans, fresh = starting_anew(_plans(history, layouts, order, built, temporals,
                                        partition_by), manifest.chunks)
    fresh |= stale_tables(state)  # built from their changes, never carried

    def tables_mixed() -> None:
        write_manifest(_state(out, "manifest.json"), manifest.tables_mixed(partition_by))

    result = run.result
    result.tables, built, result.table_work = update_tables(
        run.spark, out, plans, manifest, as_of=None, staged=_state(out, "tables.new"),
        read_changes=run.read_changes, tables_mixed=tables_mixed, committing=run.undo.forget,
        log=run.log, history=keep_history, selected=built, fresh=fresh)
    result.tables_rebuilt = True
    write_manifest(_state(out, "manifest.json"), manifest.tables_built(
        replace(built, temporals=temporals, history=keep_history, partition_by=partition_by)))


def _add_layouts(layouts: dict, found: dict) -> None:
    """The table-map layouts `found` where they are newer than those known."""
    for key, (order, layout) in found.items():
        if key not in layouts or tuple(layouts[key]["order"]) <= tuple(order):
            layouts[key] = {"order": list(order), "layout": layout}


def _plans(history, layouts: dict, order, wanted, temporals: str, partition_by: dict,
           before=None) -> list:
    """The plans of the tables `wanted` selects, their temporal columns
    typed as `temporals` says (a lake switched to another way carries no
    such column over: its tables are rebuilt, the plans having changed),
    partitioned as `partition_by` says (a changed partitioning rewrites the
    table: its plan changed)."""
    plans = []
    for plan in table_plans(history, layouts, order, before):
        if not wanted(plan["database"], plan["table"]):
            continue
        plan = dict(plan, layout=with_temporals(plan["layout"], temporals))
        column = partition_by.get(f"{plan['database']}.{plan['table']}")
        if column:
            plan["partition_by"] = [_partition_column(plan, column)]
        plans.append(plan)
    return plans


def _partition_column(plan: dict, name: str) -> str:
    """The column of the plan's table named `name` (as MySQL matches column
    names: without case), refused in one line where the table has none or
    it is not of a type whose values name partition folders exactly."""
    table = f"{plan['database']}.{plan['table']}"
    found = [c for c in plan["layout"]["columns"] if c["key"].lower() == name.lower()]
    if not found:
        raise ValueError(f"--partition-by {table}={name}: the table has no such column "
                         f"({', '.join(c['key'] for c in plan['layout']['columns'])}): name "
                         f"another, or none ({table}=); nothing was changed")
    if not isinstance(spark_type(found[0]), PARTITION_TYPES):
        raise ValueError(f"--partition-by {table}={name}: a {spark_type(found[0]).simpleString()} "
                         "column: a table is partitioned by an integer or DATE column (typed, "
                         "not --temporals text); nothing was changed")
    return found[0]["key"]


def parse_partition_by(given: str | dict | None) -> dict:
    """`db.table=column,...` (or such a dict) as {"db.table": column};
    `db.table=` (an empty column) ends that table's partitioning."""
    if isinstance(given, dict) or given is None:
        return dict(given or {})
    found = {}
    for item in filter(None, (part.strip() for part in given.split(","))):
        table, equals, column = item.partition("=")
        if not equals or table.count(".") != 1 or not all(table.split(".")):
            raise ValueError(f"--partition-by {item!r}: DB.TABLE=COLUMN (DB.TABLE= for none)")
        found[table] = column.strip()
    return found


def _changes_of(spark, out: str, files: list | None, only: set | None):
    """changes/ whole, the `files` of it, or the partitions of the tables
    `only` names ((database, table) pairs); None when there is none yet."""
    root = os.path.join(out, "changes")
    if not os.path.isdir(root):
        return None
    if files is not None:
        return read_changes(spark, out, files)
    frame = read_changes(spark, out)
    return frame if only is None else frame.where(one_of(only))


def _new_segments(files, manifest: Manifest, warnings: list):
    """The byte ranges not read yet: from where the manifest left each file
    to its last transaction boundary."""
    segments, scans, entries = [], {}, {}
    _refuse_holes(files, manifest)
    for path, seq in files:
        name = os.path.basename(path)
        mark = fingerprint(path)
        known = manifest.files.get(name)
        floor = manifest.floor_of(seq)
        if known is None and seq >= FAILOVER_FILES and floor is None:
            raise ValueError(f"{path}: a copy of a server the follower moved to, and the lake "
                             "has not placed itself in its binlogs yet: run the follower "
                             "(nothing was changed)")
        if known is None and floor is not None and seq <= floor.file_seq:
            # A lake started from a snapshot, or gone on after a failover,
            # reads that server's binlogs from the floor's position on.
            if seq < floor.file_seq:
                continue
            known = FileRead(seq, path, floor.pos, mark)
        if known is not None and known.fingerprint != mark:
            raise ValueError(f"{path} is not the {name} read before (its format description "
                             "differs): use a new output directory")
        start = known.end if known else FIRST_EVENT
        if os.path.getsize(path) < start:
            raise ValueError(f"{path} is shorter than the {start} bytes read before: "
                             "use a new output directory")
        found = scan(path, start=start)
        if found.framing is None:
            warnings.append(f"{path}: {found.stopped}, skipped")
            continue
        if not found.framing.in_use and found.closed_end < found.size:
            # A closed file should end with a whole transaction and a whole event.
            reason = found.stopped or "the last transaction has no end"
            warnings.append(f"{path}: read up to offset {found.closed_end} of {found.size}: {reason}")
        end = max(found.closed_end, start)
        entries[name] = FileRead(seq, path, end, mark,
                                 found.rotates_to or (known.next if known else None))
        if end > start:
            split = Split(path, seq, start, end)
            segments.append(split)
            scans[split] = found
    _refuse_other_successors({**manifest.files, **entries})
    return segments, scans, entries


def _catch_up(files, manifest: Manifest, wanted: TableFilter) -> list:
    """The ranges of binlogs read before to read again, for tables the
    selection (--tables) selects and changes/ does not hold (a table newly
    selected; one selected again after runs that did not select it), each
    range from where changes/ holds the file for some of them (`holds`)
    to where the lake read it. Refused in one line where such a file is not
    given again, or the lake started from a snapshot (one of other tables).
    A selection that only narrows an earlier one needs nothing: its tables
    are held."""
    chosen = sorted(wanted.patterns)
    given = {os.path.basename(path): (path, seq) for path, seq in files}
    needed = []
    for name, entry in sorted(manifest.files.items(), key=lambda item: item[1].file_seq):
        holds = manifest.holds(name, wanted.patterns)
        whole = [set(held.patterns) for held in holds if held.end >= entry.end]
        if any(not held or (chosen and set(chosen) <= held) for held in whole):
            continue
        starts = sorted({FIRST_EVENT} | {held.end for held in holds if held.end < entry.end})
        needed.append((name, entry, starts))
    if not needed:
        return []
    subject = f"--tables {','.join(chosen)}" if chosen else "a run without --tables"
    if manifest.snapshot:
        raise ValueError(f"{subject} selects tables this lake has not read, and it started from "
                         "a snapshot of other tables: use a new output directory (nothing was "
                         "changed)")
    missing = [name for name, _, _ in needed if name not in given]
    if missing:
        where = (missing[0] if len(missing) == 1
                 else f"{missing[0]} to {missing[-1]} ({len(missing)} files)")
        raise ValueError(f"{subject} selects tables this lake has not read from {where}: give "
                         f"{'it' if len(missing) == 1 else 'them'} again with the new binlogs, "
                         "or use a new output directory (nothing was changed)")
    splits = []
    for name, entry, starts in needed:
        path, seq = given[name]
        if fingerprint(path) != entry.fingerprint:
            raise ValueError(f"{path} is not the {name} read before (its format description "
                             "differs): use a new output directory")
        splits += [Split(path, seq, start, entry.end) for start in starts if start < entry.end]
    return splits


def _refuse_holes(files, manifest: Manifest) -> None:
    """Files read before and files given now must follow one another by
    number: a file older than the last one read that was never read, or a
    number missing between them, would leave changes out of the lake."""
    read = {entry.file_seq: name for name, entry in manifest.files.items()}
    given = {seq: os.path.basename(path) for path, seq in files
             if os.path.basename(path) not in manifest.files
             and (manifest.floor_of(seq) is None or seq >= manifest.floor_of(seq).file_seq)}
    if read:
        last = max(read)
        older = sorted(seq for seq in given if seq < last)
        if older:
            raise ValueError(f"{given[older[0]]} is older than {read[last]}, the last binlog "
                             "this lake has read, and was never read: nothing was changed "
                             "(a binlog's changes go in in order; use a new output directory)")
    named = {**read, **given}
    numbers = sorted(named)
    for before, after in zip(numbers, numbers[1:]):
        if after // FAILOVER_FILES != before // FAILOVER_FILES:
            continue  # the next server's binlogs: the failover's floor says where they go on
        if after != before + 1:
            first, last = (_numbered(named[after], (before + 1) % FAILOVER_FILES),
                           _numbered(named[after], (after - 1) % FAILOVER_FILES))
            missing = (f"{first} was" if first == last else f"{first} to {last} were")
            raise ValueError(f"{named[after]} follows {named[before]}, but {missing} never read: "
                             "nothing was changed; give " + ("it" if first == last else "them")
                             + " too")


def _numbered(name: str, seq: int) -> str:
    """`name` with its number (its last digits: binlog.000042, binlog.000042.gz)
    replaced by `seq`."""
    return re.sub(r"\d+(?=\D*$)", lambda digits: str(seq).zfill(len(digits.group())), name)


def _refuse_other_successors(entries: dict) -> None:
    """A closed binlog names the next one in its ROTATE event: the file read
    after it must be that one (a file of another server or another lineage
    under the next number would splice two histories)."""
    by_seq = {entry.file_seq: name for name, entry in entries.items()}
    for seq, name in sorted(by_seq.items()):
        expected = entries[name].next
        successor = by_seq.get(seq + 1)
        if expected and successor and successor != expected:
            raise ValueError(f"{name} rotates to {expected}, but the next binlog given is "
                             f"{successor}: nothing was changed (is it another server's?); to go "
                             f"on, give {expected}, or use a new output directory for the "
                             "other server")


def _before(point: AsOf | None, order: PositionOrder):
    """Which statements of the schema history come before `point`."""
    if point is None:
        return None
    if point.time is not None:
        limit = point.time.timestamp()
        return lambda version: version.timestamp is None or version.timestamp <= limit
    return lambda version: order(version.position) < (point.file_seq, point.pos)


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
    folder = _state(out, "snapshot")
    shutil.rmtree(folder, ignore_errors=True)
    point, ddl, chunks = take_snapshot(address, wanted, folder, file_seq_of=name_sequence,
                                       chunk_rows=chunk_rows or CHUNK_ROWS, chunked=chunked,
                                       log=log)
    seed = parse_schema(ddl)
    if schema:
        seed = filled_in(load_schema(schema), seed)
    seed_path = _state(out, "schema-from-snapshot.json")
    seed.save(seed_path)
    floor = SnapshotFloor(point.file, point.pos, name_sequence(point.file), point.gtid, point.time)
    return folder, floor, seed_path, chunks


def _append(spark, out: str, segments: list, options: dict, manifest: Manifest, history, log,
            undo: RunUndo, snapshot_folder: str | None = None, read_in: str = "auto",
            views: tuple = ("events", "changes")):
    """Read the segments, stage `views` (and a snapshot's rows), then commit
    them with `manifest` as their run; returns (the manifest committed,
    events, changes written)."""
    staging = _state(out, "staging")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    if snapshot_folder:
        os.replace(snapshot_folder, os.path.join(staging, "snapshot"))
    chosen = [(view, parts) for view, parts in VIEW_PARTITIONS if view in views]
    written = dict.fromkeys(("events", "changes"), 0)
    if not segments:
        pass
    elif _read_in_driver(spark, segments, read_in):
        for view, parts in chosen:
            written[view] = _write_in_driver(segments, options, staging, view, parts, log)
    else:
        from binlake.spark.read.source import register
        register(spark)  # only here: registering a Python data source takes a second
        options = {"min_partitions": str(spark.sparkContext.defaultParallelism), **options}
        # Two jobs at once: each keeps the cores busy while the other waits on its tail.
        written.update(zip((view for view, _ in chosen), concurrently(
            lambda view, parts: _write_in_spark(spark, segments, options, staging, view, parts,
                                                log), chosen)))
    events, changes = written["events"], written["changes"]
    if snapshot_folder:  # its rows are changes like the others (op "r")
        changes += parquet_rows(os.path.join(staging, "snapshot"))
        _move_tree(os.path.join(staging, "snapshot"), os.path.join(staging, "changes"))
    # The change files tables/ has yet to take in, by run (binlake.spark.commits.lake).
    written = sorted(os.path.relpath(os.path.join(folder, name), os.path.join(staging, "changes"))
                     for folder, _, names in os.walk(os.path.join(staging, "changes"))
                     for name in names if name.endswith(".parquet"))
    manifest = manifest.staging(written)
    # What the manifest will name is on disk before it is (the snapshot's
    # files are under changes/ by now).
    fsync_files([path for view in ("events", "changes")
                 for path in _data_files(os.path.join(staging, view))], staging)
    history.save(os.path.join(staging, "schema.json"))
    write_manifest(os.path.join(staging, "manifest.json"), manifest)
    _commit_staging(out, undo)
    return manifest, events, changes


def _read_in_driver(spark, segments: list, read_in: str) -> bool:
    """Where new ranges are read: "driver", "executors", or "auto": in the
    driver when Spark runs on this machine anyway (a local master) or the
    ranges are small; a cluster's executors read large ones in parallel."""
    if read_in not in READ_IN:
        raise ValueError(f"read_in {read_in!r}: one of {', '.join(READ_IN)}")
    if read_in != "auto":
        return read_in == "driver"
    lazy = isinstance(spark, LazySession) and spark.master
    local = (spark.master if lazy else spark.sparkContext.master).startswith("local")
    return local or sum(split_bytes_of(s) for s in segments) <= DRIVER_READ_BYTES


def _write_in_driver(segments: list, options: dict, staging: str, view: str, parts: tuple,
                     log) -> int:
    """One view of the ranges, decoded here and written as Spark's layout
    (binlake.spark.read.partitioned)."""
    from binlake.spark.read.batches import change_batches, event_batches
    from binlake.spark.read.partitioned import PartitionedParquet
    batches = change_batches if view == "changes" else event_batches
    sink = PartitionedParquet(os.path.join(staging, view), VIEWS[view], parts)
    for split in segments:
        for batch in batches(split, options):
            sink.write(batch)
    rows = sink.close()
    log(f"{view}: {rows} rows from {len(segments)} range(s)")
    return rows


def _write_in_spark(spark, segments: list, options: dict, staging: str, view: str,
                    parts: tuple, log) -> int:
    """One view of the ranges, read by the `binlog` data source in Spark's tasks."""
    from pyspark.sql import functions as F
    ranges = json.dumps([{"path": s.path, "file_seq": s.file_seq, "start": s.start, "end": s.end}
                         for s in segments])
    # Days in UTC, whatever the session time zone.
    date = F.date_from_unix_date(F.floor(F.unix_seconds("timestamp") / 86400).cast("int"))
    # A reader of its own: DataFrameReader.option() changes the reader it is called on.
    reader = spark.read.format("binlog").options(**options, ranges=ranges, view=view)
    frame = reader.load().withColumn("date", date)
    target = os.path.join(staging, view)
    # The writer wants its partition columns sorted; commit order within them.
    frame.sortWithinPartitions(*parts, "commit_key").write.partitionBy(*parts).parquet(target)
    rows = parquet_rows(target)
    log(f"{view}: {rows} rows from {len(segments)} range(s)")
    return rows


def _data_files(root: str) -> list[str]:
    """Every data file under `root` (not _SUCCESS, nor Hadoop's .crc files)."""
    return [os.path.join(folder, name) for folder, _dirs, names in os.walk(root)
            for name in names if not name.startswith(("_", "."))]


def _move_tree(root: str, target: str) -> list[str]:
    """Every data file under `root` to the same place under `target`; their
    new paths."""
    moved = []
    for path in _data_files(root):
        moved.append(os.path.join(target, os.path.relpath(path, root)))
        os.makedirs(os.path.dirname(moved[-1]), exist_ok=True)
        os.replace(path, moved[-1])
    return moved


def _commit_staging(out: str, undo: RunUndo | None) -> None:
    """Move staged data files (fsynced when staged) into place, make their
    new names durable, then install their manifest; the run's `undo`
    record names the files first."""
    staging = _state(out, "staging")
    if undo is not None:
        undo.adding([os.path.join(out, view, os.path.relpath(path, os.path.join(staging, view)))
                     for view in ("events", "changes")
                     for path in _data_files(os.path.join(staging, view))])
    moved = [path for view in ("events", "changes")
             for path in _move_tree(os.path.join(staging, view), os.path.join(out, view))]
    fsync_files(moved, out)  # the bytes were synced: this syncs the folders' new names
    if os.path.exists(os.path.join(staging, "schema.json")):
        os.replace(os.path.join(staging, "schema.json"), _state(out, "schema.json"))
    os.replace(os.path.join(staging, "manifest.json"), _state(out, "manifest.json"))
    fsync_directory(_state(out, "manifest.json"))
    shutil.rmtree(staging, ignore_errors=True)


def recover_lake(out: str, log) -> None:
    """What a killed run left: undone where its record is open, else (a
    run of an earlier version) its staged commit completed or discarded.
    Called under the lake's lock before anything reads the manifest: a
    follower's own writes to it (requests taken) must not be undone by it."""
    if RunUndo.recover(out, log):
        return
    staging = _state(out, "staging")
    if not os.path.isdir(staging):
        return
    if os.path.exists(os.path.join(staging, "manifest.json")):
        log("completing the commit of an interrupted run")
        _commit_staging(out, None)
    else:
        log("discarding the staged output of an interrupted run")
        shutil.rmtree(staging)


def read_changes(spark, out: str, files: list | None = None):
    """The changes/ dataset (or those `files` of it), with its partition
    columns typed as written."""
    schema = spark_ddl(CHANGES) + ", `date` DATE"
    root = os.path.join(out, "changes")
    if files is None:
        return spark.read.schema(schema).parquet(hadoop_literal(root))
    return (spark.read.schema(schema).option("basePath", root)
            .parquet(*map(hadoop_literal, files)))


def read_events(spark, out: str):
    schema = spark_ddl(EVENTS) + ", `date` DATE"
    return spark.read.schema(schema).parquet(hadoop_literal(os.path.join(out, "events")))



def read_table(out: str, table: str):
    """A lake table's current version as a pyarrow Table (`table`: "db.table")."""
    from binlake.spark.commits.delta import read_table as read
    return read(os.path.join(out, "tables", table))


_POSITION = re.compile(r"(?P<file>.+):(?P<pos>\d+)")


def parse_as_of(text: str, manifest: Manifest) -> AsOf:
    """`FILE:POS` (a file the manifest knows) or a date-time (UTC unless it says)."""
    match = _POSITION.fullmatch(text)
    if match:
        entry = manifest.files.get(os.path.basename(match["file"]))
        if entry is not None:
            return AsOf(file_seq=entry.file_seq, pos=int(match["pos"]))
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--as-of {text!r}: neither FILE:POS of a file read so far "
                         "nor a date-time like 2024-05-01T12:00:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return AsOf(time=moment)


__all__ = ["run_pipeline", "spark_session", "load_manifest", "parse_as_of", "read_changes", "read_table",
           "read_events", "PipelineResult"]
