"""The follower's figures for an operator to scrape and alert on: how far
behind the lake is, what each micro-batch costs, what each table takes in,
how the copies' disk and the server connection fare.

Strategy: one object (`FollowMetrics`) holds every figure, and is fed where
the follower builds its status (binlake.spark.run.follow: after each
micro-batch, each round of the lock-free snapshot, a failure), plus two
callbacks from the threads that see the rest: the copier's fsync timer
(binlake.live.backup.CopyWriter's `on_fsync`) and the live source's
reconnects (`LiveOptions.on_reconnect`). It is rendered twice from the same
numbers, under one lock: as JSON in `_binlake/status.json` (`to_json`), and
with `--metrics-port` as OpenMetrics / Prometheus text (`serve`), by
prometheus-client's HTTP server in a thread of its own, through a registry
of the follower's own (several followers in one process do not collide)
holding one collector that reads the object at each scrape: the Prometheus
side keeps no state, so nothing is counted twice or drifts.

Rule: prometheus-client is an optional extra (`binlake[metrics]`), imported
by `serve` alone; the figures and status.json need nothing.

Lag is the server's clock (a binlog event header holds whole seconds, the
time its statement started) against this machine's: a micro-batch's lag is
the seconds from the oldest transaction it read to the end of its commit
(the transactions visible in tables/), as much as a second more than the
true lag, and off by any skew between the two clocks.
"""

from __future__ import annotations

import math
import os
import struct
import threading
import time

#: Bucket bounds (seconds) of the histograms; +Inf is implied.
LAG_BUCKETS = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
BATCH_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)
FSYNC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)

#: What `binlake pipeline --metrics-port` without the extra says.
NEEDS_EXTRA = ("--metrics-port needs prometheus-client: pip install 'binlake[metrics]' "
               "(or prometheus-client)")

_HEADER = struct.Struct("<IBIII")  # timestamp, type, server id, event size, next position
#: Events a binlog begins with, or that the server writes by itself: not a
#: transaction's, their time not a commit's (ROTATE, STOP, START_EVENT_V3,
#: FORMAT_DESCRIPTION_EVENT, PREVIOUS_GTIDS_LOG_EVENT, BINLOG_CHECKPOINT_EVENT,
#: GTID_LIST_EVENT: binlake.constants.EventType).
_NOT_A_TRANSACTION = {1, 3, 4, 15, 35, 161, 163}


class Histogram:
    """Observations counted into cumulative buckets, as Prometheus keeps them."""

    def __init__(self, bounds: tuple):
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)   # per bucket, the last +Inf
        self.count, self.sum = 0, 0.0

    def observe(self, value: float) -> None:
        index = next((i for i, bound in enumerate(self.bounds) if value <= bound),
                     len(self.bounds))
        self.counts[index] += 1
        self.count += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, int]]:
        """[(le, observations at most le), ...], the last ("+Inf", count)."""
        found, total = [], 0
        for bound, count in zip(self.bounds + (math.inf,), self.counts):
            total += count
            found.append((_le(bound), total))
        return found

    def to_json(self) -> dict:
        return {"count": self.count, "sum": round(self.sum, 6),
                "buckets": dict(self.cumulative())}


def _le(bound: float) -> str:
    return "+Inf" if bound == math.inf else repr(float(bound))


def within(histogram: dict, share: float) -> str | None:
    """The smallest bucket bound of a histogram's JSON (`Histogram.to_json`)
    that `share` of its observations are within ("+Inf" past the last); None
    when it holds none."""
    count = histogram.get("count") or 0
    if not count:
        return None
    return next((le for le, seen in histogram["buckets"].items() if seen >= share * count),
                "+Inf")


class FollowMetrics:
    """Every figure of one follower (thread-safe: the copier's and the HTTP
    server's threads read and feed it beside the follower's)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.endpoint: str | None = None       #: the URL scraped, with --metrics-port
        self.lag_last: float | None = None     #: the last micro-batch's lag (seconds)
        self.lag = Histogram(LAG_BUCKETS)
        self.behind_seconds = 0.0              #: now - the oldest event the lake lacks
        self.bytes_behind = 0                  #: copied from the server, not in the lake yet
        self.table_rows: dict[str, int] = {}   #: "db.table" -> changes appended
        self.batches = Histogram(BATCH_BUCKETS)
        self.copy_bytes = 0                    #: written to the copies (counted as fsynced)
        self.fsyncs = Histogram(FSYNC_BUCKETS)
        self.snapshot: dict[str, tuple] = {}   #: "db.table" -> (rows read, rows estimated)
        self._estimates: dict[str, int] = {}
        self.reconnects = self.failovers = self.refusals = 0
        self.files_merged = self.files_deleted = 0  #: of events/ and changes/

    # -- fed by the follower ---------------------------------------------------------------
    def micro_batch(self, seconds: float, lag: float | None, table_rows: dict) -> None:
        """A micro-batch that read something took `seconds`; its oldest
        transaction was `lag` seconds old when it became visible."""
        with self._lock:
            self.batches.observe(seconds)
            if lag is not None:
                self.lag_last = lag
                self.lag.observe(lag)
            for name, rows in table_rows.items():
                self.table_rows[name] = self.table_rows.get(name, 0) + rows

    def backlog(self, seconds: float, nbytes: int) -> None:
        with self._lock:
            self.behind_seconds, self.bytes_behind = seconds, nbytes

    def snapshot_progress(self, progress, estimate=None) -> None:
        """Each table of the lock-free snapshot's `progress` (a
        SnapshotProgress, or None): rows read, against the server's
        estimate, asked once a table through `estimate([(db, table)])`
        (binlake.spark.snapshot.snapshot.estimated_rows); a done table's
        rows are its own estimate."""
        if progress is None:
            return
        entries = list(progress.tables.values())
        unknown = [(e.database, e.table) for e in entries
                   if not e.done and e.name not in self._estimates]
        if unknown and estimate is not None:
            try:
                self._estimates.update(estimate(unknown))
            except Exception:  # noqa: BLE001 - the server away: asked again next round
                pass
        with self._lock:
            self.snapshot = {e.name: (e.rows, e.rows if e.done else self._estimates.get(e.name))
                             for e in entries}

    def failed_over(self) -> None:
        with self._lock:
            self.failovers += 1

    def refused(self) -> None:
        with self._lock:
            self.refusals += 1

    def compacted(self, done: dict) -> None:
        """A pass over the views (binlake.spark.state.compaction.compact_views's result)."""
        with self._lock:
            self.files_merged += done["merged"]
            self.files_deleted += done["deleted"]

    # -- fed by the copier's and the live source's threads --------------------------------
    def copy_fsynced(self, seconds: float, nbytes: int) -> None:
        """CopyWriter's `on_fsync`: an fsync of a copy took `seconds`, and
        made `nbytes` more of it durable."""
        with self._lock:
            self.fsyncs.observe(seconds)
            self.copy_bytes += nbytes

    def counting_reconnects(self, then=None):
        """A LiveOptions.on_reconnect that counts each reconnect, then calls `then`."""
        def on_reconnect(error, attempt) -> None:
            with self._lock:
                self.reconnects += 1
            if then is not None:
                then(error, attempt)
        return on_reconnect

    # -- rendered --------------------------------------------------------------------------
    def to_json(self) -> dict:
        with self._lock:
            return {"endpoint": self.endpoint,
                    "lag_seconds": None if self.lag_last is None else round(self.lag_last, 3),
                    "lag_histogram": self.lag.to_json(),
                    "behind_seconds": round(self.behind_seconds, 3),
                    "bytes_behind": self.bytes_behind,
                    "rows": dict(sorted(self.table_rows.items())),
                    "micro_batch_seconds": self.batches.to_json(),
                    "copy_bytes": self.copy_bytes, "copy_fsync_seconds": self.fsyncs.to_json(),
                    "snapshot": {name: {"read": read, "estimated": estimated}
                                 for name, (read, estimated) in sorted(self.snapshot.items())},
                    "reconnects": self.reconnects, "failovers": self.failovers,
                    "refusals": self.refusals, "view_files_merged": self.files_merged,
                    "view_files_deleted": self.files_deleted,
                    "memory": {"resident_bytes": resident_bytes(),
                               "arrow_bytes": arrow_bytes()}}

    def families(self) -> list:
        """The figures as prometheus-client metric families (its import:
        the caller's, `serve`)."""
        from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                            HistogramMetricFamily)

        def histogram(name, text, found: Histogram):
            return HistogramMetricFamily(name, text, buckets=found.cumulative(),
                                         sum_value=found.sum)

        def counter(name, text, value):
            return CounterMetricFamily(name, text, value=value)
        with self._lock:
            rows = CounterMetricFamily("binlake_rows", "Change rows appended to the lake, per "
                                       "table (rows/s: rate())", labels=["table"])
            for name, count in sorted(self.table_rows.items()):
                rows.add_metric([name], count)
            read = GaugeMetricFamily("binlake_snapshot_rows_read", "Rows the lock-free "
                                     "snapshot has put in the lake, per table", labels=["table"])
            estimated = GaugeMetricFamily("binlake_snapshot_rows_estimated", "Rows the server "
                                          "estimates the table holds (a snapshot's goal)",
                                          labels=["table"])
            for name, (done, goal) in sorted(self.snapshot.items()):
                read.add_metric([name], done)
                if goal is not None:
                    estimated.add_metric([name], goal)
            found = [
                histogram("binlake_lag_seconds", "Commit-to-visible lag of each micro-batch: "
                          "its oldest transaction's server time to its tables' commit",
                          self.lag),
                GaugeMetricFamily("binlake_lag_last_seconds", "The last micro-batch's "
                                  "commit-to-visible lag", value=self.lag_last or 0.0),
                GaugeMetricFamily("binlake_behind_seconds", "Seconds since the server wrote "
                                  "the oldest event the lake lacks", value=self.behind_seconds),
                GaugeMetricFamily("binlake_bytes_behind", "Bytes copied from the server that "
                                  "the lake does not hold yet", value=self.bytes_behind),
                rows,
                histogram("binlake_micro_batch_seconds", "Duration of each micro-batch that "
                          "read something", self.batches),
                counter("binlake_copy_bytes", "Bytes written to the binlog copies (counted "
                        "as fsynced)", self.copy_bytes),
                histogram("binlake_copy_fsync_seconds", "Latency of each fsync of a binlog "
                          "copy", self.fsyncs),
                read, estimated,
                counter("binlake_reconnects", "Connections to the server made again after "
                        "one was lost", self.reconnects),
                counter("binlake_failovers", "Other servers followed on at the address "
                        "(the next primary)", self.failovers),
                counter("binlake_refusals", "Runs or failovers refused in one line, the "
                        "lake left as it was", self.refusals),
                counter("binlake_view_files_merged", "Small files of events/ and changes/ "
                        "merged into larger ones", self.files_merged),
                counter("binlake_view_files_deleted", "Files of events/ and changes/ deleted "
                        "once merged and retired", self.files_deleted),
                GaugeMetricFamily("binlake_resident_memory_bytes", "The follower process's "
                                  "resident memory (a local Spark's JVM, a child, not "
                                  "counted)", value=resident_bytes()),
                GaugeMetricFamily("binlake_arrow_allocated_bytes", "Bytes Arrow's memory "
                                  "pool holds allocated (the rest of resident memory: "
                                  "Python's, delta-rs's, the allocators' free lists)",
                                  value=arrow_bytes())]
        return found


def resident_bytes() -> int:
    """This process's resident memory (Linux's /proc; elsewhere its peak)."""
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def arrow_bytes() -> int:
    """Bytes Arrow's default memory pool has allocated (0 before pyarrow is
    imported: it is not imported for this)."""
    import sys
    arrow = sys.modules.get("pyarrow")
    return int(arrow.total_allocated_bytes()) if arrow is not None else 0


class Endpoint:
    """The HTTP server of one follower's figures (`serve`)."""

    def __init__(self, server, thread):
        self._server, self._thread = server, thread
        host, self.port = server.server_address[:2]
        self.url = f"http://{_url_host(host)}:{self.port}/metrics"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve(metrics: FollowMetrics, host: str, port: int) -> Endpoint:
    """`metrics` served as OpenMetrics / Prometheus text (by the scraper's
    Accept header) at http://HOST:PORT/metrics from a thread of its own;
    port 0 picks a free one (the Endpoint's `port`). ValueError in one line
    where the extra is not installed or the port cannot be bound."""
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError:
        raise ValueError(NEEDS_EXTRA) from None

    class Collector:
        def collect(self):
            return metrics.families()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ValueError(f"--metrics-port {port}: {host}: {exc.strerror or exc}") from None
    endpoint = Endpoint(server, thread)
    metrics.endpoint = endpoint.url
    return endpoint


def available() -> bool:
    """Whether prometheus-client is installed (`binlake[metrics]`)."""
    from importlib.util import find_spec
    return find_spec("prometheus_client") is not None


# -- figures of the copies -----------------------------------------------------------------

def oldest_time(segments: list) -> float | None:
    """The server time of the oldest transaction among the ranges a run read
    (binlake.spark.read.ranges.Split): the first event of the first range
    that is not one a binlog begins with; None where none is found."""
    for split in sorted(segments, key=lambda s: (s.file_seq, s.start)):
        at, end = split.start, split.end
        try:
            with open(split.path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                end = size if end is None else min(end, size)
                while at + _HEADER.size <= end:
                    handle.seek(at)
                    timestamp, kind, _, length, _ = _HEADER.unpack(handle.read(_HEADER.size))
                    if kind not in _NOT_A_TRANSACTION:
                        return float(timestamp)
                    if length < _HEADER.size:
                        break
                    at += length
        except OSError:
            continue
    return None


def lag_after(segments: list, now: float | None = None) -> float | None:
    """A run's commit-to-visible lag, taken when it has ended (`oldest_time`)."""
    oldest = oldest_time(segments)
    if oldest is None:
        return None
    return max(0.0, (time.time() if now is None else now) - oldest)
