"""The lake, always on: `binlake pipeline -R --follow` against a private MariaDB.

    TZ=UTC .venv/bin/python bench/bench_follow.py [--rate 1000] [--seconds 300]
        [--statement-rows 200000] [--catch-up-rows 2500000] [--skip-catch-up]

Strategy. A fresh private MariaDB (sync_binlog=0, as the test servers) and
the follower as the command, in a process of its own, every tool with TZ=UTC:

  freshness   `--rate` single-row INSERT transactions per second for
              `--seconds` (paced, from 4 connections), each row's commit time
              taken when its COMMIT returns; a poller reads the Delta table's
              new files (deltalake, no JVM) every 0.1 s and notes when each
              row is first there. Printed: the median, 99th percentile and
              maximum of visible - committed (issue 32: 3 s and 10 s).
  statement   one INSERT ... SELECT of `--statement-rows` rows in a table of
              its own: seconds from its commit until the table holds them
              all (issue 32: 15 s).
  catch-up    the follower stopped, `--catch-up-rows` row changes written
              (bench_decode's OLTP-like UPDATEs of 1000 rows each), the
              follower started again: seconds until its lake holds the
              server's last commit; against `binlake pipeline` over copies of
              the same binlogs (the batch job), into a lake at the same point
              (issue 32: the follower at least as fast).
  memory      the follower's peak RSS (its JVM's too: the process tree).

Nothing here is a unit test: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PYTHON = sys.executable
ENV = {**os.environ, "TZ": "UTC", "LC_ALL": "C.UTF-8"}
DB = "fresh"


def follower(server, lake: Path, log, *more: str) -> subprocess.Popen:
    command = [PYTHON, "-m", "binlake", "pipeline", "-R", "--follow", "--out", str(lake),
               "-h", "127.0.0.1", "-P", str(server.port), "-u", "root", *more, "binlog.000001"]
    return subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=ENV)


def status(lake: Path) -> dict:
    try:
        return json.loads((lake / "_binlake" / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def lake_holds_server(server, lake: Path) -> bool:
    """The lake holds the server's last commit (its binlog position)."""
    file, position = server.query("SHOW MASTER STATUS")[0][:2]
    return status(lake).get("lake") == [file, int(position)]


def wait_until(condition, timeout: float, what: str, process=None) -> float:
    start = time.monotonic()
    while not condition():
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the follower ended while waiting for {what}")
        if time.monotonic() - start > timeout:
            raise SystemExit(f"{what}: not in {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - start


class TablePoller(threading.Thread):
    """When each id of a Delta table is first there: its new files read as
    they appear (an insert-only table: files are only added)."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.seen, self.files = path, {}, set()
        self.done = threading.Event()

    def run(self) -> None:
        import pyarrow.parquet as pq
        from deltalake import DeltaTable
        table = None
        while not self.done.is_set():
            try:
                if table is None:
                    table = DeltaTable(str(self.path))
                else:
                    table.update_incremental()
            except Exception:  # noqa: BLE001 - not created yet
                time.sleep(0.1)
                continue
            now = time.time()
            for uri in table.file_uris():
                if uri in self.files:
                    continue
                self.files.add(uri)
                for key in pq.read_table(uri.removeprefix("file://"), columns=["id"]).column(0).to_pylist():
                    self.seen.setdefault(key, now)
            time.sleep(0.1)


def paced_writer(server, table: str, rate: float, seconds: float, committed: dict,
                 first_id: int, connections: int = 4) -> None:
    """`rate` single-row transactions a second for `seconds`, over `connections`."""
    start = time.monotonic() + 0.5

    def one(index: int) -> None:
        connection = server.connect(DB)
        with connection.cursor() as cursor:
            n = index
            while True:
                due = start + n / rate
                if due > start + seconds:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                key = first_id + n
                cursor.execute(f"INSERT INTO {table} VALUES (%s, 'v')", (key,))  # autocommit
                committed[key] = time.time()
                n += connections
        connection.close()
    side_by_side(one, connections)


def side_by_side(one, count: int) -> None:
    """`one(index)` for each index below `count`, each in a thread of its own, until all end."""
    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def tree_rss_mb(pid: int) -> float:
    """The process tree's RSS now (the follower's JVM is its child)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as handle:
                total += sum(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))
            with open(f"/proc/{p}/task/{p}/children") as handle:
                stack += [int(c) for c in handle.read().split()]
        except OSError:
            pass
    return total / 1024


def peak_rss_mb(pid: int, peak: list) -> None:
    """The process tree's RSS, sampled until it ends (the JVM is a child)."""
    while os.path.exists(f"/proc/{pid}"):
        peak[0] = max(peak[0], tree_rss_mb(pid))
        time.sleep(0.5)


def sample_batches(lake: Path, batches: dict, done: threading.Event) -> None:
    """{micro-batch number: its seconds}, from the status file."""
    while not done.is_set():
        found = status(lake)
        if found.get("micro_batches"):
            batches[found["micro_batches"]] = found["last_batch_seconds"]
        time.sleep(0.05)


def percentile(values: list, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(args) -> dict:
    from binlake.testing.mariadb import MariaDBServer
    work = Path(tempfile.mkdtemp(prefix="binlake-follow-bench-"))
    results: dict = {}
    server = MariaDBServer(work / "server", extra={"innodb_buffer_pool_size": "1G",
                                                   "innodb_log_file_size": "256M"})
    server.start()
    log = open(work / "follower.log", "ab")
    process = None
    try:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"CREATE TABLE {DB}.t (id BIGINT PRIMARY KEY, v VARCHAR(8))")
        server.execute(f"CREATE TABLE {DB}.big (id BIGINT PRIMARY KEY, v VARCHAR(8))")
        server.execute(f"CREATE TABLE {DB}.wide (id INT PRIMARY KEY, n INT, s VARCHAR(40))")
        lake = work / "lake"
        process = follower(server, lake, log)
        peak = [0.0]
        threading.Thread(target=peak_rss_mb, args=(process.pid, peak), daemon=True).start()
        started = wait_until(lambda: status(lake).get("micro_batches", 0) >= 1, 300,
                             "the first micro-batch", process)
        results["first_batch_s"] = started

        # freshness
        poller = TablePoller(lake / "tables" / f"{DB}.t")
        poller.start()
        committed: dict = {}
        batches: dict = {}
        sampler = threading.Thread(target=sample_batches, args=(lake, batches, poller.done),
                                   daemon=True)
        sampler.start()
        paced_writer(server, f"{DB}.t", args.rate, args.seconds, committed, 1)
        wait_until(lambda: len(poller.seen) >= len(committed), 120, "the last row", process)
        poller.done.set()
        lags = [poller.seen[key] - at for key, at in committed.items()]
        results["freshness"] = {
            "transactions": len(committed),
            "rate": len(committed) / args.seconds,
            "median_s": statistics.median(lags), "p99_s": percentile(lags, 0.99),
            "max_s": max(lags), "micro_batches": len(batches),
            "batch_median_s": statistics.median(batches.values()) if batches else None,
            "batch_max_s": max(batches.values()) if batches else None}
        print(f"(freshness measured: {json.dumps(results['freshness'])})", flush=True)

        # one large statement
        server.execute(f"INSERT INTO {DB}.big SELECT seq, 'b' FROM {DB}.seq_1_to_{args.statement_rows}")
        done = time.time()

        def holds_all() -> bool:
            from deltalake import DeltaTable
            try:
                return DeltaTable(str(lake / "tables" / f"{DB}.big")).to_pyarrow_dataset() \
                    .count_rows() >= args.statement_rows
            except Exception:  # noqa: BLE001 - not there yet
                return False
        wait_until(holds_all, 300, "the large statement", process)
        results["statement_s"] = time.time() - done
        results["follower_peak_mb"] = peak[0]

        if not args.skip_catch_up:
            results["catch_up"] = catch_up(server, lake, process, log, args.catch_up_rows, work)
            process = None
    finally:
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(120)
        log.close()
        slow = [line for line in (work / "follower.log").read_text().splitlines()
                if "micro-batch" in line]
        print("\n".join(f"  follower: {line}" for line in slow))
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def catch_up(server, lake: Path, process, log, rows: int, work: Path) -> dict:
    """The follower stopped while `rows` row changes are written, then started
    again; the batch pipeline over copies of the same binlogs, into a copy of
    the lake as it was at the stop."""
    wait_until(lambda: lake_holds_server(server, lake), 120, "the lake in step", process)
    process.send_signal(signal.SIGTERM)
    process.wait(120)
    batch_lake = work / "batch-lake"
    shutil.copytree(lake, batch_lake)
    server.execute(f"INSERT INTO {DB}.wide SELECT seq, 0, 'row' FROM {DB}.seq_1_to_100000")
    for _ in range(max(1, rows // 100_000 - 1)):
        server.execute(f"UPDATE {DB}.wide SET n = n + 1")  # 100k row changes each
    server.flush_logs()
    # the batch job: over copies of every binlog (as a scheduler would hand them)
    binlogs = work / "binlogs"
    binlogs.mkdir()
    for path in server.binlog_files():
        shutil.copy(path, binlogs / path.name)
    copied = sorted(str(path) for path in binlogs.iterdir())
    start = time.monotonic()
    subprocess.run([PYTHON, "-m", "binlake", "pipeline", *copied, "--out", str(batch_lake)],
                   check=True, env=ENV, stdout=subprocess.DEVNULL)
    batch = time.monotonic() - start
    # the follower, started again behind all of it
    start = time.monotonic()
    process = follower(server, lake, log)
    try:
        wait_until(lambda: lake_holds_server(server, lake), 1800, "the catch-up", process)
        follow = time.monotonic() - start
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(300)
    return {"rows": rows, "follower_s": follow, "batch_s": batch}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=1000)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--statement-rows", type=int, default=200_000)
    parser.add_argument("--catch-up-rows", type=int, default=2_500_000)
    parser.add_argument("--skip-catch-up", action="store_true")
    args = parser.parse_args()
    os.environ.update({"TZ": "UTC"})
    time.tzset()
    r = measure(args)
    f = r["freshness"]
    print(f"follower: first micro-batch {r['first_batch_s']:.1f} s after its start")
    print(f"freshness: {f['transactions']} single-row transactions at {f['rate']:.0f}/s: "
          f"commit to visible median {f['median_s']:.2f} s (goal 3), p99 {f['p99_s']:.2f} s "
          f"(goal 10), max {f['max_s']:.2f} s; {f['micro_batches']} micro-batches, "
          f"median {f['batch_median_s']:.2f} s, longest {f['batch_max_s']:.2f} s")
    print(f"statement: {args.statement_rows} rows visible {r['statement_s']:.1f} s after "
          "its commit (goal 15)")
    print(f"memory: the follower's peak RSS, JVM included: {r['follower_peak_mb']:.0f} MB")
    if "catch_up" in r:
        c = r["catch_up"]
        print(f"catch-up: {c['rows']} row changes behind: follower {c['follower_s']:.1f} s, "
              f"batch pipeline {c['batch_s']:.1f} s: {c['batch_s'] / c['follower_s']:.2f}x "
              "(goal >= 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
