"""The follower for hours, and at the server's full speed (issue 48's soak and
throughput figures).

    TZ=UTC .venv/bin/python bench/bench_soak.py --mode soak [--seconds 7200] [--rate 1000]
        [--tables 10] [--sample-seconds 60] [--keep-versions 10m] > soak.txt
    TZ=UTC .venv/bin/python bench/bench_soak.py --mode throughput [--seconds 120]

Strategy. A fresh private MariaDB with `--tables` keyed tables and
`binlake pipeline -R --follow --keep-versions 10m` as the command
(bench_follow.py's; the tables keep ten minutes of versions, as an
always-on lake would be told to). Writers
on 4 connections insert into a table drawn at random; after a COMMIT the
writer notes the time and the server's binlog position (SHOW MASTER STATUS
on its own connection: the commit's end or later) in a queue of its own
(positions one connection sees only grow). A poller reads status.json
every 50 ms and pops from each queue's front while the lake's position
(`lake`) has passed the entry's: its lag is now - commit time. Memory stays
bounded: only what the lake lacks is queued, lags kept as array('f').

  soak        `--rate` one-row transactions a second (paced) for `--seconds`;
              every `--sample-seconds` a line: the follower's RSS (process
              tree, JVM included; the median of a reading each 5 s, as the
              JVM's heap swings between its collections), the lake's files and size, freshness of
              the interval, micro-batches, status.json's behind_seconds. Then
              10 minutes in against the end (a third of a shorter run).
  throughput  as fast as 4 connections go, `--seconds` of one-row
              transactions then `--seconds` of 100-row ones: transactions
              and rows a second, freshness (a sample: one position per
              connection each 10 ms, as SHOW MASTER STATUS after every commit
              would halve the rate), the catch-up after the writers stop,
              peak RSS, micro-batch durations.

Nothing here is a unit test. The work directory is left for inspection.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import threading
import time
from array import array
from collections import deque
from pathlib import Path

from bench_follow import (DB, follower, peak_rss_mb, percentile, side_by_side, status,
                          tree_rss_mb, wait_until)

PROBE_EVERY = 0.01  # throughput: seconds between a connection's position probes
WRITERS = 4
RSS_EVERY = 5  # soak: seconds between RSS readings


def _position(found) -> tuple:
    return (found[0], int(found[1])) if found else ("", 0)


def _p(values, q: float) -> float:
    return percentile(values, q) if len(values) else float("nan")


def lake_files(lake: Path) -> tuple[int, int, float]:
    """(parquet files in events/ and changes/, files in tables/ with their
    _delta_log, MB of the three): the data, not _binlake/'s binlog copies."""
    logs = tables = size = 0
    for part in ("events", "changes", "tables"):
        for root, _, names in os.walk(lake / part):
            for name in names:
                try:
                    size += os.path.getsize(os.path.join(root, name))
                except OSError:  # removed meanwhile (a compaction)
                    continue
                if part == "tables":
                    tables += 1
                elif name.endswith(".parquet"):
                    logs += 1
    return logs, tables, size / 2**20


class Freshness(threading.Thread):
    """Each writer's pending (commit time, position), popped once the lake holds it."""

    def __init__(self, lake: Path):
        super().__init__(daemon=True)
        self.lake, self.pending = lake, [deque() for _ in range(WRITERS)]
        self.lags, self.found, self.batches = array("f"), {}, {}
        self.lock, self.done = threading.Lock(), threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            found = status(self.lake)
            held, now = _position(found.get("lake")), time.time()
            with self.lock:
                for queue in self.pending:  # deques: append and popleft are thread-safe
                    while queue and queue[0][1] <= held:
                        self.lags.append(now - queue.popleft()[0])
            if found.get("micro_batches"):
                self.found = found
                self.batches[found["micro_batches"]] = found.get("last_batch_seconds")
            time.sleep(0.05)

    def take(self) -> array:
        """The lags seen since the last take."""
        with self.lock:
            lags, self.lags = self.lags, array("f")
        return lags

    def drained(self) -> bool:
        return not any(self.pending)


def write(server, tables: int, seconds: float, tracker: Freshness, counts: list,
          rate: float | None = None, rows: int = 1, base: int = 0) -> float:
    """`rate` transactions a second over the connections (paced), or with no
    rate each as fast as it goes, for `seconds`; `rows` rows a transaction,
    ids unique from `base`. Returns the seconds written."""
    start = time.monotonic() + 0.5  # every connection open before the first
    end = start + seconds

    def one(index: int) -> None:
        draw, queue, probed = random.Random(index), tracker.pending[index], 0.0
        connection = server.connect(DB)
        time.sleep(max(0.0, start - time.monotonic()))
        with connection.cursor() as cursor:
            n = index
            while True:
                if rate:
                    due = start + n / rate
                    if due > end:
                        break
                    time.sleep(max(0.0, due - time.monotonic()))
                elif time.monotonic() >= end:
                    break
                first = base + n * rows
                values = ", ".join(f"({first + j}, 'v')" for j in range(rows))
                cursor.execute(f"INSERT INTO t{draw.randrange(tables)} VALUES {values}")  # autocommit
                when = time.time()
                counts[index] += 1
                if rate or when - probed >= PROBE_EVERY:
                    cursor.execute("SHOW MASTER STATUS")
                    queue.append((when, _position(cursor.fetchone())))
                    probed = when
                n += WRITERS
        connection.close()
    side_by_side(one, WRITERS)
    return time.monotonic() - start


def soak(args, server, lake: Path, process, tracker: Freshness) -> None:
    counts, samples = [0] * WRITERS, []
    writer = threading.Thread(target=write, args=(server, args.tables, args.seconds, tracker,
                                                  counts), kwargs={"rate": args.rate})
    start, readings, stop = time.monotonic(), [], threading.Event()

    def read_rss() -> None:  # the JVM's heap swings by 100s of MB between its collections
        while not stop.wait(RSS_EVERY):
            readings.append(tree_rss_mb(process.pid))
    threading.Thread(target=read_rss, daemon=True).start()

    def sample() -> dict:
        lags, (logs, files, mb) = tracker.take(), lake_files(lake)
        now, interval = tree_rss_mb(process.pid), readings[:]
        del readings[:len(interval)]
        s = {"t": time.monotonic() - start, "tx": sum(counts), "rss": _p(interval or [now], 0.5),
             "rss_now": now,
             "arrow": (tracker.found.get("memory") or {}).get("arrow_bytes", 0) / 2**20,
             "logs": logs, "files": files, "mb": mb, "lags": lags,
             "batches": tracker.found.get("micro_batches", 0),
             "behind": tracker.found.get("behind_seconds", float("nan"))}
        samples.append(s)
        print(f"{s['t'] / 60:6.1f} min {s['tx']:>10,} tx  RSS {s['rss']:5.0f} MB (now "
              f"{now:4.0f}, Arrow's {s['arrow']:4.0f})  files: "
              f"{logs:5} events+changes {files:5} tables  {mb:8.1f} MB  freshness p50 "
              f"{_p(lags, 0.5):5.2f} s p99 {_p(lags, 0.99):5.2f} s  {s['batches']:5} "
              f"micro-batches  behind {s['behind']:.1f} s", flush=True)
        return s
    writer.start()
    k = 1
    while writer.is_alive():  # a sample each interval on the clock, not drifting
        writer.join(max(0.0, start + k * args.sample_seconds - time.monotonic()))
        if writer.is_alive():
            sample()
            k += 1
    wait_until(tracker.drained, 300, "every commit visible", process)
    end = sample()  # the drain's lags go in the last interval
    stop.set()

    window = min(600.0, args.seconds / 3)  # the 10 minutes
    at = min(samples, key=lambda s: abs(s["t"] - window))
    first = [lag for s in samples if s["t"] <= window + 1 for lag in s["lags"]]
    last = [lag for s in samples if s["t"] > end["t"] - window + 1 for lag in s["lags"]]
    p99_first, p99_last = _p(first, 0.99), _p(last, 0.99)
    print(f"soak: {end['tx']:,} transactions at {args.rate:g}/s into {args.tables} tables, "
          f"{end['t'] / 60:.1f} min; the window: {window / 60:g} min")
    print(f"  RSS (the median of an interval's readings): {at['rss']:.0f} MB at "
          f"{at['t'] / 60:.1f} min, {end['rss']:.0f} MB at the end: "
          f"{end['rss'] / at['rss']:.2f}x (single readings {at['rss_now']:.0f} and "
          f"{end['rss_now']:.0f} MB: {end['rss_now'] / at['rss_now']:.2f}x)")
    print(f"  freshness p99: first window {p99_first:.2f} s ({len(first):,} tx), last "
          f"{p99_last:.2f} s ({len(last):,} tx): {p99_last / p99_first:.2f}x")
    print(f"  files at {at['t'] / 60:.1f} min: {at['logs']} events+changes, {at['files']} "
          f"tables; at the end: {end['logs']}, {end['files']} "
          f"({(end['logs'] + end['files']) / max(1, at['logs'] + at['files']):.2f}x), while "
          f"data {at['mb']:.1f} -> {end['mb']:.1f} MB ({end['mb'] / max(at['mb'], 1e-9):.2f}x), "
          f"transactions {end['tx'] / max(1, at['tx']):.2f}x, micro-batches "
          f"{at['batches']} -> {end['batches']} ({end['batches'] / max(1, at['batches']):.2f}x); "
          f"files a micro-batch {(at['logs'] + at['files']) / max(1, at['batches']):.1f} -> "
          f"{(end['logs'] + end['files']) / max(1, end['batches']):.1f} (falls if compacted)")
    print("targets: files grow with the data; RSS end/10min <= 1.10; "
          "p99 last10/first10 <= 1.5 and <= 3 s")


def throughput(args, server, lake: Path, process, tracker: Freshness) -> None:
    peak = [0.0]
    threading.Thread(target=peak_rss_mb, args=(process.pid, peak), daemon=True).start()
    for phase, rows in enumerate((1, 100)):
        tracker.take()
        peak[0], before, counts = 0.0, max(tracker.batches, default=0), [0] * WRITERS
        seconds = write(server, args.tables, args.seconds, tracker, counts, rows=rows,
                        base=phase * 10**12)
        last = _position(server.query("SHOW MASTER STATUS")[0])
        caught = wait_until(lambda last=last: _position(tracker.found.get("lake")) >= last
                            and tracker.drained(), 1800, "the server's last commit", process)
        lags = tracker.take()
        durations = [s for n, s in tracker.batches.items() if n > before and s is not None]
        tx = sum(counts)
        print(f"{rows}-row transactions, {WRITERS} connections at full speed, {seconds:.0f} s: "
              f"{tx / seconds:,.0f} tx/s, {tx * rows / seconds:,.0f} rows/s; freshness "
              f"({len(lags):,} sampled) p50 {_p(lags, 0.5):.2f} s, p99 {_p(lags, 0.99):.2f} s, "
              f"max {max(lags, default=float('nan')):.2f} s; the lake at the last commit "
              f"{caught:.1f} s after the writers stopped; peak RSS {peak[0]:.0f} MB; "
              f"{len(durations)} micro-batches, p50 {_p(durations, 0.5):.2f} s, p99 "
              f"{_p(durations, 0.99):.2f} s", flush=True)
    print("target: freshness p99 <= 5 s at the rate sustained (or the ceiling stated)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("soak", "throughput"), default="soak")
    parser.add_argument("--seconds", type=float, help="soak 7200, throughput 120 a phase")
    parser.add_argument("--rate", type=float, default=1000, help="soak: transactions a second")
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--sample-seconds", type=float, default=60)
    parser.add_argument("--keep-versions", default="10m",
                        help="the follower's --keep-versions (default 10m: a table committed "
                             "every second keeps a week of versions otherwise)")
    args = parser.parse_args()
    if args.seconds is None:
        args.seconds = 7200 if args.mode == "soak" else 120
    os.environ["TZ"] = "UTC"
    time.tzset()
    from binlake.testing.mariadb import MariaDBServer
    work = Path(tempfile.mkdtemp(prefix=f"binlake-{args.mode}-bench-"))
    print(f"work directory: {work}", flush=True)
    # a larger redo log: 4 connections at full speed otherwise wait on its checkpoints
    with MariaDBServer(work / "server", extra={"innodb_buffer_pool_size": "512M",
                                               "innodb_log_file_size": "256M"}) as server:
        server.execute(f"CREATE DATABASE {DB}")
        for n in range(args.tables):
            server.execute(f"CREATE TABLE {DB}.t{n} (id BIGINT PRIMARY KEY, v VARCHAR(8))")
        lake = work / "lake"
        with open(work / "follower.log", "ab") as log:
            process = follower(server, lake, log, "--keep-versions", args.keep_versions)
            try:
                first = wait_until(lambda: status(lake).get("micro_batches", 0) >= 1, 600,
                                   "the first micro-batch", process)
                print(f"first micro-batch {first:.1f} s after the follower's start", flush=True)
                tracker = Freshness(lake)
                tracker.start()
                (soak if args.mode == "soak" else throughput)(args, server, lake, process, tracker)
                tracker.done.set()
            finally:
                process.terminate()
                process.wait(120)
    print(f"left for inspection: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
