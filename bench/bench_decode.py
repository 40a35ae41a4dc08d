"""Decode throughput of binlake against its peers, on the same file, in one run.

    .venv/bin/python bench/bench_decode.py [--size-mb 1000] [--keep-server]

Makes (or reuses, under bench/data/) a row-based MariaDB binlog of about the
given size with binlake's own workload generator, then times on that file:

  binlake-api      full decode of every row to Python values (one core)
  binlake-dump-v   `binlake dump --base64-output=decode-rows -v` to /dev/null
  mariadb-binlog   `mariadb-binlog --base64-output=decode-rows -v` to /dev/null
  header-scan      binlake.scan over the event headers only
  pymysqlrepl      python-mysql-replication streaming from the server (a sample)

Each runs in its own process, so peak memory (max RSS) is its own. Figures
are printed as rows/s, MB/s, peak MB and a ratio against mariadb-binlog from
the same run. Targets (issue 5) are printed next to what was reached.
Nothing here is a unit test: these machines are noisy, so read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PYTHON = sys.executable
PYMYSQLREPL_SAMPLE_ROWS = 50_000


def run_measured(argv: list[str], stdout=subprocess.DEVNULL) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, captured stdout) of a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    out = proc.stdout.read().decode() if proc.stdout else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({proc.returncode}): {err[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024, out


# -- tasks run in child processes ------------------------------------------------

def task_api(path: str) -> None:
    import binlake
    from binlake.events import RowsEvent
    rows = 0
    for event in binlake.open(path):
        if isinstance(event, RowsEvent):
            for _ in event.iter_rows():  # pairs one at a time: memory stays flat
                rows += 1
    print(json.dumps({"rows": rows}))


def task_scan(path: str) -> None:
    from binlake.scan import scan
    result = scan(path)
    print(json.dumps({"events": len(result.positions), "boundaries": len(result.boundaries)}))


def task_pymysqlrepl(port: str, limit: str, log_file: str) -> None:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent
    settings = {"host": "127.0.0.1", "port": int(port), "user": "root", "passwd": ""}
    stream = BinLogStreamReader(connection_settings=settings, server_id=99, blocking=False,
                                is_mariadb=True, resume_stream=True, log_file=log_file,
                                log_pos=4,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    rows, start = 0, time.perf_counter()
    for event in stream:
        rows += len(event.rows)
        if rows >= int(limit):
            break
    stream.close()
    print(json.dumps({"rows": rows, "seconds": time.perf_counter() - start}))


# -- the benchmark -----------------------------------------------------------------

def make_binlog(size_mb: int, workdir: Path):
    """Start a private MariaDB, fill its binlog, and return (server, binlog path)."""
    from binlake.testing.mariadb import MariaDBServer
    from binlake.testing.workload import generate_bulk
    shutil.rmtree(workdir, ignore_errors=True)
    server = MariaDBServer(workdir, max_binlog_size=1 << 30,
                           extra={"innodb_buffer_pool_size": "2G"})
    server.start()
    server.execute("CREATE DATABASE IF NOT EXISTS bench")
    started = time.perf_counter()
    counts = generate_bulk(server, "bench", size_mb * 1_000_000)
    server.flush_logs()
    biggest = max(server.binlog_files(), key=lambda f: f.stat().st_size)
    print(f"generated {biggest.stat().st_size / 1e6:.0f} MB in "
          f"{time.perf_counter() - started:.0f} s: {counts}", flush=True)
    return server, biggest


def huge_event_binlog(size_mb: int, workdir: Path) -> Path:
    """A binlog whose rows sit in one event of about size_mb (one INSERT ...
    SELECT with binlog_row_event_max_size raised): the case that must not be
    held in memory."""
    from binlake.testing.mariadb import MariaDBServer
    shutil.rmtree(workdir, ignore_errors=True)
    rows = size_mb * 1_000_000 // 120
    with MariaDBServer(workdir, extra={"binlog_row_event_max_size": 1 << 31,
                                       "max_allowed_packet": 1 << 30}) as server:
        server.execute("CREATE DATABASE huge")
        server.execute("CREATE TABLE huge.t (id BIGINT PRIMARY KEY, v VARCHAR(100), "
                       "d DECIMAL(12,2), ts DATETIME(6))")
        server.execute(f"INSERT INTO huge.t SELECT seq, REPEAT('x', 80), seq / 100, "
                       f"'2024-01-01' + INTERVAL seq SECOND FROM huge.seq_1_to_{rows}")
        server.flush_logs()
        path = max(server.binlog_files(), key=lambda f: f.stat().st_size)
        target = DATA / f"huge-event-{size_mb}mb.bin"
        shutil.copy(path, target)
    return target


def row_count(path: Path) -> int:
    _, _, out = run_measured([PYTHON, __file__, "--task", "api", str(path)], subprocess.PIPE)
    return json.loads(out)["rows"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1000)
    parser.add_argument("--huge-event-mb", type=int, default=300,
                        help="also decode one rows event of this size and report its peak memory (0: skip)")
    parser.add_argument("--task", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--skip", nargs="*", default=[],
                        help="measurements to leave out (binlake-api, binlake-dump-v, "
                             "mariadb-binlog, header-scan, pymysqlrepl)")
    args = parser.parse_args()
    if args.task:
        name, *params = args.task
        {"api": task_api, "scan": task_scan, "pymysqlrepl": task_pymysqlrepl}[name](*params)
        return 0

    DATA.mkdir(exist_ok=True)
    server, binlog = make_binlog(args.size_mb, DATA / f"server-{args.size_mb}mb")
    try:
        size_mb = binlog.stat().st_size / 1e6
        rows = row_count(binlog) if "binlake-api" not in args.skip else None
        results = {}
        measurements = {
            "mariadb-binlog": ["mariadb-binlog", "--base64-output=decode-rows", "-v", str(binlog)],
            "binlake-api": [PYTHON, __file__, "--task", "api", str(binlog)],
            "binlake-dump-v": [PYTHON, "-m", "binlake", "dump", "--base64-output=decode-rows",
                               "-v", str(binlog)],
            "header-scan": [PYTHON, __file__, "--task", "scan", str(binlog)],
        }
        for name, argv in measurements.items():
            if name in args.skip:
                continue
            try:
                seconds, peak, _ = run_measured(argv)
            except (RuntimeError, FileNotFoundError) as exc:
                print(f"{name}: not measured: {exc}", file=sys.stderr)
                continue
            results[name] = {"seconds": seconds, "peak_mb": peak,
                             "rows_per_s": rows / seconds if rows else None,
                             "mb_per_s": size_mb / seconds}
        if "pymysqlrepl" not in args.skip:
            _, peak, out = run_measured([PYTHON, __file__, "--task", "pymysqlrepl",
                                         str(server.port), str(PYMYSQLREPL_SAMPLE_ROWS),
                                         binlog.name],
                                        subprocess.PIPE)
            sample = json.loads(out)
            results["pymysqlrepl"] = {"seconds": sample["seconds"], "peak_mb": peak,
                                      "rows_per_s": sample["rows"] / sample["seconds"],
                                      "mb_per_s": None, "note": f"first {sample['rows']} rows"}
    finally:
        server.stop()
    if args.huge_event_mb:
        huge = huge_event_binlog(args.huge_event_mb, DATA / "server-huge")
        seconds, peak, out = run_measured([PYTHON, __file__, "--task", "api", str(huge)],
                                          subprocess.PIPE)
        huge_rows = json.loads(out)["rows"]
        c_seconds, c_peak, _ = run_measured(["mariadb-binlog", "--base64-output=decode-rows",
                                             "-v", str(huge)])
        results["huge-event-api"] = {"seconds": seconds, "peak_mb": peak,
                                     "rows_per_s": huge_rows / seconds, "mb_per_s": None,
                                     "ratio": c_seconds / seconds,
                                     "note": f"one {huge.stat().st_size / 1e6:.0f} MB rows event; "
                                             f"mariadb-binlog on it: {c_seconds:.2f} s, "
                                             f"peak {c_peak:.0f} MB"}

    print(f"\nfile: {binlog} ({size_mb:.0f} MB, {rows} row images)\n")
    reference = results.get("mariadb-binlog", {}).get("rows_per_s")
    print(f"{'measurement':<16}{'seconds':>9}{'rows/s':>12}{'MB/s':>9}{'peak MB':>9}{'vs C':>8}")
    for name, r in results.items():
        ratio = r.get("ratio") or ((r["rows_per_s"] / reference)
                                   if reference and r["rows_per_s"] else None)
        print(f"{name:<16}{r['seconds']:>9.2f}"
              f"{(r['rows_per_s'] or 0):>12,.0f}{(r['mb_per_s'] or 0):>9.0f}"
              f"{r['peak_mb']:>9.0f}{(f'{ratio:.2f}x' if ratio else '-'):>8}"
              f"  {r.get('note', '')}")
    api = results.get("binlake-api", {}).get("rows_per_s")
    peer = results.get("pymysqlrepl", {}).get("rows_per_s")
    print("\ntargets: binlake-api >= 0.5x C; dump -v >= 0.35x C; header scan >= 1000 MB/s; "
          ">= 20x python-mysql-replication; peak < 300 MB")
    if api and peer:
        print(f"binlake-api vs python-mysql-replication: {api / peer:.1f}x")
    (DATA / "last_results.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
