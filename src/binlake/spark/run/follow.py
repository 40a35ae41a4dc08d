"""`binlake pipeline -R --follow`: a live server kept in the lake, seconds
behind its commits, each transaction in it exactly once.

Strategy: one process, two parts joined by files on disk.
- The copier, a thread: the replica client of `binlake dump -R --raw
  --stop-never` (binlake.live.source, binlake.live.backup) keeps byte-exact
  copies of the server's binlogs in the lake's `_binlake/binlogs/`: each
  event checked as it arrives, fsynced within a second, resumed from its own
  manifest, through killed dump threads, lost connections and server
  restarts. Started on a server that is not the one the copies are of, or
  finding one at its address when it reconnects, the follower takes it for
  the next primary of the lake's replication domain
  (binlake.spark.read.failover): the old copies go in first, then the lake is
  placed in the new server's binlog by its GTIDs, or refused in one line
  (binlake.spark.run.follow_failover).
- Micro-batches, in the calling thread: each is a run of the batch pipeline
  (binlake.spark.run.pipeline.run_pipeline) over those copies, in this process
  and one Spark session (started when a run first needs one: small
  increments are applied by the driver alone). A run takes the whole
  transactions the copies hold past the lake's manifest, appends them to
  events/ and changes/ and applies them to tables/, committed by the run's
  own protocol (staging, then the manifest, Delta application
  transactions): each transaction goes in exactly once whatever stops the
  follower when, the next start completing or discarding a run in flight.
  A run starts as soon as the previous one has ended and new bytes are on
  disk.
- Durable bytes only: the copier's timer fsyncs up to a second after a
  write, and a run's manifest, fsynced, must name no byte a crash of the
  machine can take back (the lake would refuse the shorter copy forever).
  So before each run the follower fsyncs each copy grown since the last
  (the newest, as a rule: one fsync a micro-batch) and holds the run to the
  sizes taken before those fsyncs (`read_limits`); a copy begun after them
  waits for the next run.
A restarted follower needs no position: its copier continues from the
backup manifest, its runs from the lake's. Tables its `--tables` newly
selects, and those `binlake pipeline --snapshot-tables` asks for (a file in
_binlake/requests/, taken between micro-batches), are read anew by the
lock-free snapshot's rounds below (binlake.spark.run.follow_anew records
them: binlake.spark.snapshot.snapshot.read_anew).

A lake started with `snapshot` (a server address: -R --snapshot-from)
begins with the lock-free snapshot (binlake.spark.snapshot.chunks): a first run
reads the keyless tables under one read view and sets the lake's start
there; the keyed tables are then read in rounds of chunks by Spark tasks,
one round before each micro-batch, which appends the round's rows with
the binlog up to past every chunk's position (it waits for the copies to
get there) and records the progress, until every table is read.

Rule: the lake's lock is held for the follower's life (a batch run beside
it is refused), and the copier's on its folder. `stop()` (the command's
first SIGTERM or Ctrl-C) ends the follower after the micro-batch in
flight; the copier's fatal error ends it the same way, then is raised.
What the follower writes under _binlake/ itself (its status, a manifest
placing the lake or recording tables read anew, the requests taken) goes
through binlake.spark.state.store, the state's one writer. Its figures for
an operator (lag, backlog, rows per table, micro-batch and fsync times,
snapshot progress, reconnects, failovers, refusals) are kept where its
status is built, in the status's FollowMetrics (binlake.spark.run.metrics),
written with it and served to a scraper with `metrics_address`.

Bounded storage: between micro-batches (after each, and every
COPIES_EVERY_SECONDS besides) the copies the lake needs no more
and older than `keep_binlogs` are removed (binlake.spark.state.copies:
closed by the server, not the newest, read whole by the views and the
tables), recorded in the manifest first; and every COMPACT_EVERY_SECONDS
the small files of events/ and changes/ are merged, no reader seeing half
of a merge (binlake.spark.state.compaction).
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from binlake.atomic import durable_size
from binlake.spark.commits.delta_upkeep import spread_vacuums
from binlake.spark.read.failover import FAILOVER_PREFIX, copies_prefix, current_epoch
from binlake.spark.read.ranges import name_sequence
from binlake.spark.run.follow_anew import TablesAnew
from binlake.spark.run.follow_failover import NextServer
from binlake.spark.run.metrics import FollowMetrics, lag_after, serve
from binlake.spark.run.pipeline import PipelineResult, run_pipeline
from binlake.spark.run.session import LazySession
from binlake.spark.run.staging import recover_lake
from binlake.spark.snapshot.chunks import plan_round, progressed, read_round
from binlake.spark.state.compaction import COMPACT_EVERY_SECONDS, compact_lake_views
from binlake.spark.state.copies import remove_old_copies
from binlake.spark.state.progress import snapshot_reading
from binlake.spark.state.store import (BINLOGS, SNAPSHOT_ROUND, clear_folder, folder_path,
                                       lake_lock, load_manifest, make_folder, write_status)

#: How often the follower looks for new bytes when the copies are idle.
POLL_SECONDS = 0.1
#: A micro-batch that takes longer is reported (what it did to which tables).
SLOW_BATCH_SECONDS = 5.0
#: Rounds of the snapshot that may fail in a row (the server restarting,
#: the connections lost) before the follower gives up.
ROUND_RETRIES = 10
#: The window rows/s is measured over.
RATE_WINDOW_SECONDS = 10.0
#: How often an idle follower looks for copies aged past --keep-binlogs.
COPIES_EVERY_SECONDS = 60.0
_HEADER_TIMESTAMP = struct.Struct("<I")


@dataclass
class FollowStatus:
    """Where the follower stands, after each micro-batch (`_binlake/status.json`)."""

    state: str = "starting"            #: starting | following | stopped | interrupted | failed
    server: str = ""
    received: tuple | None = None      #: (binlog, bytes) the copies hold
    lake: tuple | None = None          #: (binlog, offset) the lake holds everything before
    behind_seconds: float = 0.0        #: now - the server time of the oldest event not in the lake
    rows_per_second: float = 0.0       #: changes appended, over the last RATE_WINDOW_SECONDS
    micro_batches: int = 0
    last_batch_seconds: float = 0.0    #: how long the last micro-batch that read something took
    changes: int = 0                   #: appended since the follower started
    tables_committed: int = 0          #: table commits since the follower started
    error: str | None = None
    snapshot_rows: int = 0             #: rows the lock-free snapshot has put in the lake
    snapshot_tables_left: int = 0      #: keyed tables it has yet to finish
    snapshot_read: int = 0             #: rows its rounds read in this process (some again)
    metrics: FollowMetrics = field(default_factory=FollowMetrics, repr=False)
    _rates: deque = field(default_factory=deque, repr=False)

    def counted(self, result: PipelineResult, now: float) -> None:
        self.micro_batches += 1
        self.changes += result.changes
        self.tables_committed += sum(len(tables) for tables in result.table_work.values())
        self._rates.append((now, result.changes))
        while self._rates and self._rates[0][0] < now - RATE_WINDOW_SECONDS:
            self._rates.popleft()
        span = max(now - self._rates[0][0], 1.0) if len(self._rates) > 1 else RATE_WINDOW_SECONDS
        self.rows_per_second = sum(count for _, count in self._rates) / span

    def to_json(self) -> dict:
        return {"state": self.state, "server": self.server,
                "received": list(self.received) if self.received else None,
                "lake": list(self.lake) if self.lake else None,
                "behind_seconds": round(self.behind_seconds, 3),
                "rows_per_second": round(self.rows_per_second, 1),
                "micro_batches": self.micro_batches,
                "last_batch_seconds": round(self.last_batch_seconds, 3), "changes": self.changes,
                "tables_committed": self.tables_committed, "error": self.error,
                "snapshot_rows": self.snapshot_rows,
                "snapshot_tables_left": self.snapshot_tables_left,
                "snapshot_read": self.snapshot_read, "metrics": self.metrics.to_json(),
                "updated": time.time()}

    def line(self) -> str:
        where = f"{self.lake[0]} at {self.lake[1]}" if self.lake else "nothing yet"
        snapshot = (f", snapshot: {self.snapshot_rows:,} rows, {self.snapshot_tables_left} "
                    "table(s) to go" if self.snapshot_tables_left else "")
        return (f"binlake: {where} in the lake, {self.behind_seconds:.1f} s behind, "
                f"{self.rows_per_second:,.0f} rows/s, {self.tables_committed} table commits"
                + snapshot)


class StorageUpkeep:
    """What keeps a follower's storage bounded, between micro-batches: the
    copies the lake needs no more removed (after each micro-batch that
    read, and every COPIES_EVERY_SECONDS besides: a copy ageing past
    --keep-binlogs), and the views' small files merged every
    COMPACT_EVERY_SECONDS (binlake.spark.state.compaction: a pass starts
    merges for PASS_SECONDS at most). A failure of either is a warning."""

    def __init__(self, out: str, keep_binlogs: float | None, metrics: FollowMetrics, log):
        self.out, self.keep_binlogs, self.metrics, self.log = out, keep_binlogs, metrics, log
        self._copies_checked = float("-inf")
        self._views_compacted = time.monotonic()  # (a first pass after a first while)

    def between_batches(self, read: bool) -> None:
        now = time.monotonic()
        if self.keep_binlogs is not None and (read or now >= self._copies_checked
                                              + COPIES_EVERY_SECONDS):
            self._copies_checked = now
            try:
                remove_old_copies(self.out, self.keep_binlogs)
            except OSError as exc:
                self.log(f"warning: copies not removed: {exc}")
        if now >= self._views_compacted + COMPACT_EVERY_SECONDS:
            self._views_compacted = now
            try:
                self.metrics.compacted(compact_lake_views(self.out))
            except OSError as exc:
                self.log(f"warning: views not compacted: {exc}")


class Follower:
    """Follows `source` (a LiveSource, stop_never) into the lake `out`.

    `start` is the server's binlog a new copy starts from (the backup's own
    manifest decides after that); `pipeline_options` are run_pipeline's
    keywords, the same for every micro-batch; `on_status(status)` is called
    after each one. `address` (a ServerAddress of the server `source`
    reads) is where the lock-free snapshot reads: `snapshot` starts a new
    lake from it, in chunks of `chunk_rows` rows, `round_chunks` a round
    (default: two per core); a restart continues one unfinished.
    `metrics_address` ((host, port), port 0: any) serves the status's
    figures to a scraper while the follower runs (binlake.spark.run.metrics).
    `keep_binlogs`: seconds a copy the lake has read whole is kept (None:
    every copy kept; binlake.spark.state.copies)."""

    def __init__(self, spark, out: str, source, start: str | None, *,
                 pipeline_options: dict | None = None, log=None, on_status=None,
                 address=None, snapshot: bool = False, chunk_rows: int | None = None,
                 round_chunks: int | None = None, metrics_address: tuple | None = None,
                 keep_binlogs: float | None = None):
        self.spark, self.out, self.source = spark, os.path.abspath(out), source
        self.start = start
        self.address, self.snapshot = address, snapshot
        self.chunk_rows, self.round_chunks = chunk_rows, round_chunks
        self.pipeline_options = dict(pipeline_options or {})
        self.log = log or (lambda message: None)
        self.on_status = on_status
        self.prefix = folder_path(self.out, BINLOGS) + os.sep
        self.status = FollowStatus(server=source.where)
        self.metrics, self.metrics_address = self.status.metrics, metrics_address
        # Counted in the source's options: a source made anew (`anew`) keeps them.
        source.options.on_reconnect = self.metrics.counting_reconnects(
            source.options.on_reconnect)
        self._stop = threading.Event()          # stop() was called, or the copier ended
        self._requested = threading.Event()     # stop() was called
        self._copier = None
        self._names_in_lake = ""                # failover<N>~ on the Nth server after the first
        self._stop_when_snapshotted = False
        self._round_failures = 0                # in a row
        self._synced: dict = {}                 # copy's name -> bytes this process fsynced
        self._storage = StorageUpkeep(self.out, keep_binlogs, self.metrics, self.log)
        # The next server after a failover (its catch-up: a run over the old
        # server's copies), and the tables read anew.
        self._next_server = NextServer(self.out, self.prefix, self.log, self._stop,
                                       lambda: self._run(log=self.log))
        self._anew = TablesAnew(self.out, address, self.pipeline_options, chunk_rows, self.log)

    def stop(self) -> None:
        """End after the micro-batch in flight (from any thread, a signal handler too)."""
        self._requested.set()
        self._stop.set()

    def run(self) -> FollowStatus:
        """Follow until `stop()` or a failure (raised after the lake is left whole)."""
        # Bound first: a port taken is refused before anything is written.
        endpoint = serve(self.metrics, *self.metrics_address) if self.metrics_address else None
        spread_vacuums(True)
        try:
            make_folder(self.out, BINLOGS)
            with lake_lock(self.out):
                if endpoint is not None:
                    self.log(f"metrics: {endpoint.url}")
                    self._write_status()  # the port it picked, said at once
                # A killed run's writes undone before the follower records
                # anything (tables read anew): else a later recovery undoes both.
                recover_lake(self.out, self.log)
                while self._follow_one_server():
                    # Another server answers at the address (a failover behind
                    # it): followed as at a start, with a source of its own.
                    self.log(f"{self.source.where}: another server answers: following it on")
                    self.source = self.source.anew()
                    self._stop.clear()
        finally:
            spread_vacuums(False)
            if endpoint is not None:
                endpoint.close()
        return self.status

    def _follow_one_server(self) -> bool:
        """Follow the server at the source's address until `stop()` or a
        failure (raised); True where the copier found another server there."""
        from binlake.live.backup import Copier
        from binlake.live.source import ServerChanged
        try:
            before = current_epoch(self.prefix)
            epoch, placing = self._next_server.moved(self.source)
        except Exception as exc:
            self._failed(exc)
            raise
        if epoch > before:
            self.metrics.failed_over()
        self._copier = Copier(self.source, copies_prefix(self.prefix, epoch), name_sequence,
                              on_fsync=self.metrics.copy_fsynced)
        # The lake's name of this server's binlogs, for the chunks' positions.
        self._names_in_lake = FAILOVER_PREFIX.format(epoch) if epoch else ""
        try:
            if placing or epoch:  # the next server's: its first copy, or where it goes on
                start = placing.file if placing else self._copier.first_copy()
            else:
                start = (self._begin(self._copier.backup) or self.start
                         or self._copier.first_copy())
            if start is None:
                raise ValueError("a new lake follows the server from a binlog: name it "
                                 "(the server's first: SHOW BINARY LOGS)")
            self._anew.newly_selected()
            self._anew.take_requests()
            options = self.source.options
            if snapshot_reading(load_manifest(self.out).chunks) and not options.stop_never:
                # -R alone: followed until the snapshot is done, then to the end.
                options.stop_never = self._stop_when_snapshotted = True
            self._copier.start(start, on_end=self._stop.set)
            if placing is None or self._next_server.place(placing, self._copier):
                self._micro_batches()
        except ServerChanged:
            if self._requested.is_set() or not self.source.options.stop_never:
                raise
            return True
        finally:
            self._copier.close()
        return False

    def _begin(self, backup) -> str | None:
        """The binlog a lake started from a snapshot starts from (its copies
        may be none yet, after a kill); for a new lake with `snapshot`, its
        first run first (the keyless tables, the chunks planned). None for
        any other lake."""
        manifest = load_manifest(self.out)
        if manifest.snapshot:
            return manifest.snapshot.file
        if not self.snapshot:
            return None
        if manifest.files or backup.copies:
            raise ValueError("--snapshot-from starts a lake, and this one has read binlogs "
                             "already: use a new output directory (nothing was changed)")
        self._run(log=self.log, snapshot=self.address, snapshot_chunk_rows=self.chunk_rows,
                  snapshot_chunked=True)
        return load_manifest(self.out).snapshot.file

    # Micro-batches --------------------------------------------------------------------
    def _run(self, **options) -> PipelineResult:
        """A run of the pipeline over the copies as far as they are on disk
        for sure (`_on_disk`)."""
        return run_pipeline(self.spark, [self.prefix], self.out, read_limits=self._on_disk(),
                            **options, **self.pipeline_options)

    def _on_disk(self) -> dict:
        """{copy's name: bytes of it on disk for sure}, every copy's: one
        grown since the last call (the newest, as a rule: the copier fsyncs
        a copy as it closes it) fsynced first, through a descriptor of the
        follower's own (binlake.atomic.durable_size: an fsync writes what
        any descriptor wrote), its size taken before: the copier's timer may
        be up to a second away."""
        sizes = {}
        for name in _copies(self.prefix):
            path = self.prefix + name
            size = os.path.getsize(path)
            if size != self._synced.get(name):
                size = durable_size(path)
            sizes[name] = size
        self._synced = sizes
        return sizes

    def _micro_batches(self) -> None:
        try:
            self._follow()
        except BaseException as exc:
            self._failed(exc)
            raise
        self.status.state = "stopped"
        self._write_status()

    def _failed(self, exc: BaseException) -> None:
        """The status of a follower ended by `exc`; a refusal counted (a
        ValueError of binlake's: the lake left as it was, one line)."""
        if isinstance(exc, KeyboardInterrupt):
            self.status.state, self.status.error = "interrupted", None
        else:
            self.status.state, self.status.error = "failed", str(exc) or type(exc).__name__
            if isinstance(exc, ValueError) \
                    and type(exc).__module__.split(".")[0] not in ("pyspark", "py4j"):
                self.metrics.refused()
        self._write_status()

    def _follow(self) -> None:
        seen = None
        self.status.state, self.status.error = "following", None
        while True:
            stopping = self._stop.is_set()
            if not stopping:
                self._anew.take_requests()
            chunks = None if stopping else self._snapshot_round()
            received = _copies_size(self.prefix)
            read = received != seen or stopping or chunks
            if read:
                # What the copies hold now goes in (when stopping too: every
                # whole transaction received before the stop).
                seen = received
                # The first run says what it did (a catch-up, a recovery);
                # later ones only warn: the status says the rest.
                log = self.log if not self.status.micro_batches else self._warnings
                began = time.monotonic()
                result = self._run(log=log, snapshot_round=chunks)
                self._report(result, time.monotonic() - began)
            self._storage.between_batches(read=bool(read))
            if stopping:
                break
            self._stop.wait(POLL_SECONDS)
        if self._copier.failure is not None and not self._requested.is_set():
            raise self._copier.failure

    def _snapshot_round(self) -> tuple | None:
        """(folder, progress) of the lock-free snapshot's next round, read and
        waited for (the copies past each chunk's position); None when the
        snapshot is done, or the follower stops meanwhile (the round is read
        again by the next start)."""
        progress = load_manifest(self.out).chunks
        self.metrics.snapshot_progress(progress, self._estimate)
        self.status.snapshot_tables_left = len(snapshot_reading(progress))
        if not self.status.snapshot_tables_left:
            if self._stop_when_snapshotted:
                self.stop()
            return None
        self.status.snapshot_rows = sum(e.rows for e in progress.tables.values())
        folder = clear_folder(self.out, SNAPSHOT_ROUND)
        count = self.round_chunks or 2 * (os.cpu_count() or 1)
        # On this machine the driver's threads read a round as fast as Spark
        # tasks would (the server formats the pages), without a JVM; a
        # cluster's tasks read it there, once its session is up.
        spark = None if count == 1 or _local(self.spark) else self.spark
        if isinstance(spark, LazySession) and not spark.ready():
            # The JVM's seconds of start pass while the driver reads rounds itself.
            spark.start_soon()
            spark = None
        try:
            chunks = plan_round(self.address, progress, count)
            reads = read_round(spark, self.address, chunks, folder, self._names_in_lake)
        except Exception as exc:  # noqa: BLE001 - a server restarting: the round again later
            self._round_failures += 1
            if self._round_failures > ROUND_RETRIES:
                raise
            self.log(f"warning: a round of the snapshot failed ({str(exc).splitlines()[0]}); "
                     f"reading it again in {self._round_failures} s")
            self._stop.wait(self._round_failures)
            return None
        self._round_failures = 0
        self.status.snapshot_read += sum(read.rows for read in reads)
        self._write_status()
        last = max((name_sequence(file), pos) for file, pos in (r.read_through for r in reads))
        while _copied_through(self.prefix) < last:
            if self._stop.wait(POLL_SECONDS):
                return None
        return folder, progressed(progress, reads)

    def _estimate(self, tables: list) -> dict:
        from binlake.spark.snapshot.snapshot import estimated_rows
        return estimated_rows(self.address, tables) if self.address is not None else {}

    def _warnings(self, message: str) -> None:
        if message.startswith("warning"):
            self.log(message)

    def _report(self, result: PipelineResult, seconds: float) -> None:
        now = time.time()
        if result.segments or result.tables_rebuilt:
            self.status.counted(result, now)
            self.status.last_batch_seconds = seconds
            self.metrics.micro_batch(seconds, lag_after(result.segments, now) if result.segments
                                     else None, result.table_changes)
            if seconds > SLOW_BATCH_SECONDS:  # worth a line: it is how far behind the lake fell
                work = ", ".join(f"{how} {_named(tables)}"
                                 for how, tables in result.table_work.items() if tables)
                self.log(f"micro-batch {self.status.micro_batches} took {seconds:.1f} s: "
                         f"{result.changes} changes; tables {work or 'unchanged'}")
        files = load_manifest(self.out).files
        if files:
            name, entry = max(files.items(), key=lambda item: item[1].file_seq)
            self.status.lake = (name, entry.end)
        self.status.received = _last_copy(self.prefix)
        self.status.behind_seconds = _behind(self.prefix, files, now)
        self.metrics.backlog(self.status.behind_seconds, _bytes_behind(self.prefix, files))
        self._write_status()

    def _write_status(self) -> None:
        write_status(self.out, self.status.to_json())
        if self.on_status is not None:
            self.on_status(self.status)


def _local(spark) -> bool:
    """Whether the session is (or will be) a local one, on this machine."""
    master = spark.master if isinstance(spark, LazySession) else spark.sparkContext.master
    return bool(master) and master.startswith("local")


def _copies(prefix: str) -> list[str]:
    names = [name for name in os.listdir(prefix) if not name.startswith(".")
             and name_sequence(name) is not None]
    return sorted(names, key=name_sequence)


def _copied_through(prefix: str) -> tuple:
    """(file number, size) of the newest copy: every position before it is on disk."""
    last = _last_copy(prefix)
    return (name_sequence(last[0]), last[1]) if last else (-1, 0)


def _copies_size(prefix: str) -> tuple:
    """(newest copy, its size): what changes when bytes arrive."""
    return _last_copy(prefix) or ("", 0)


def _last_copy(prefix: str) -> tuple | None:
    names = _copies(prefix)
    if not names:
        return None
    return names[-1], os.path.getsize(prefix + names[-1])


def _bytes_behind(prefix: str, files: dict) -> int:
    """Bytes the copies hold past the lake's end (from its newest binlog on)."""
    last = max((entry.file_seq for entry in files.values()), default=None)
    total = 0
    for name in _copies(prefix):
        if last is not None and name_sequence(name) < last:
            continue
        entry = files.get(name)
        total += max(0, os.path.getsize(prefix + name) - (entry.end if entry else 4))
    return total


def _behind(prefix: str, files: dict, now: float) -> float:
    """Seconds since the server wrote the oldest event the copies hold and
    the lake does not (0 when the lake holds everything received)."""
    last = max((entry.file_seq for entry in files.values()), default=None)
    for name in _copies(prefix):
        if last is not None and name_sequence(name) < last:
            continue
        entry = files.get(name)
        start = entry.end if entry else 4
        path = prefix + name
        if os.path.getsize(path) < start + 19:
            continue
        with open(path, "rb") as handle:
            handle.seek(start)
            (timestamp,) = _HEADER_TIMESTAMP.unpack(handle.read(4))
        return max(0.0, now - timestamp)
    return 0.0


def _named(tables: list, shown: int = 5) -> str:
    """A few of `tables` by name, and how many more (a line per slow
    micro-batch, whatever the lake holds)."""
    more = len(tables) - shown
    return ", ".join(sorted(tables)[:shown]) + (f" and {more} more" if more > 0 else "")
