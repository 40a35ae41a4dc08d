"""Live change capture: binlake following a server against its peers, in one run.

    TZ=UTC .venv/bin/python bench/bench_live.py [--shape bulk|oltp|both] [--bulk-mb N]
        [--oltp-mb N] [--pymysqlrepl-rows N]

Strategy. The binlogs of bench_decode.py (generated once, cached under
bench/data/ with the server's data directory) are served by that private
MariaDB again, and each reader runs in a process of its own against the same
server and file, every tool with TZ=UTC:

  live          binlake.stream(...).changes(), every value of every row touched:
                the rows the server sends, as Python values (the call's own time)
  live-same-rows  the live task over the rows the peer reads (its first
                --pymysqlrepl-rows), by the peer's clock (from the first row on)
  live-arrow    binlake.arrow_changes(binlake.stream(...)): the same rows as Arrow
  file          binlake.changes(FILE), the same loop over the server's file:
                what the live path must stay within 2x of
  pymysqlrepl   python-mysql-replication's BinLogStreamReader over the same
                binlog, every value touched, its first --pymysqlrepl-rows rows
                (it is slow; its own clock from its first event)
  c-remote      `mariadb-binlog -R -v --base64-output=decode-rows --to-last-log`
                > /dev/null: the C client reading the same binlog from the server
  dump-remote   `binlake dump` with the same options, the whole process each

Printed: seconds, rows/s and the ratios: live against
python-mysql-replication (issue 30: 50x), live against the file (issue 30: no
slower), binlake dump -R -v against mariadb-binlog -R -v (issue 30: 1.0x).
Nothing here is a unit test: read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import bench_server, parse_json, shape_binlog  # noqa: E402
from bench_decode import measure as run_measure  # noqa: E402

PYTHON = sys.executable
ENV = {"TZ": "UTC", "LC_ALL": "C.UTF-8"}


def task_live(port: str, name: str, limit: str = "0") -> None:
    """Every change; with `limit`, the first `limit` rows by the clock the
    peer's task keeps (from the first change on): the same rows, timed alike."""
    import binlake
    start = time.perf_counter()
    rows, limit = 0, int(limit)
    stream = binlake.stream("127.0.0.1", int(port), "root", "", file=name, stop_never=False)
    for change in stream.changes():
        if limit and rows == 0:
            start = time.perf_counter()
        rows += 1
        for _ in (change.after or change.before).values():
            pass
        if limit and rows >= limit:
            break
    print(json.dumps({"rows": rows, "call_seconds": time.perf_counter() - start}))


def task_live_arrow(port: str, name: str) -> None:
    import pyarrow  # noqa: F401  (its import is not the call's time)

    import binlake
    start = time.perf_counter()
    stream = binlake.stream("127.0.0.1", int(port), "root", "", file=name, stop_never=False)
    rows = sum(batch.num_rows for batch in binlake.arrow_changes(stream))
    print(json.dumps({"rows": rows, "call_seconds": time.perf_counter() - start}))


def task_file(path: str) -> None:
    import binlake
    start = time.perf_counter()
    rows = 0
    for change in binlake.changes(path):
        rows += 1
        for _ in (change.after or change.before).values():
            pass
    print(json.dumps({"rows": rows, "call_seconds": time.perf_counter() - start}))


def task_pymysqlrepl(port: str, name: str, limit: str) -> None:
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent
    settings = {"host": "127.0.0.1", "port": int(port), "user": "root", "passwd": ""}
    stream = BinLogStreamReader(connection_settings=settings, server_id=98, blocking=False,
                                is_mariadb=True, resume_stream=True, log_file=name, log_pos=4,
                                only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
    rows, start = 0, None
    for event in stream:
        if start is None:
            start = time.perf_counter()
        for row in event.rows:
            rows += 1
            for _ in (row.get("after_values") or row.get("values")).values():
                pass
        if rows >= int(limit):
            break
    stream.close()
    print(json.dumps({"rows": rows, "call_seconds": time.perf_counter() - start}))


TASKS = {"live": task_live, "live-arrow": task_live_arrow, "file": task_file,
         "pymysqlrepl": task_pymysqlrepl}


def measure(name: str, argv: list[str], results: dict, *, task: bool = True) -> None:
    """One reader in a process of its own (bench_decode.measure); a task
    prints its JSON line and its rows/s is taken by its own clock."""
    run_measure(name, argv, results, [], env=ENV, parse=parse_json if task else None)
    entry = results.get(name)
    if entry and "rows" in entry:
        entry["rows_per_s"] = entry["rows"] / entry.get("call_seconds", entry["seconds"])


def ensure_peer() -> bool:
    try:
        import pymysqlreplication  # noqa: F401
        return True
    except ImportError:
        print("python-mysql-replication is not installed: pip install mysql-replication "
              "(into this environment) to measure it", file=sys.stderr)
        return False


def measure_shape(shape: str, size_mb: int, peer_rows: int) -> dict:
    meta = shape_binlog(shape, size_mb)
    path = Path(meta["path"])
    results: dict = {}
    server = bench_server(Path(meta["workdir"]))
    server.start()
    try:
        port = str(server.port)
        task = [PYTHON, __file__, "--task"]
        measure("file", task + ["file", str(path)], results)
        measure("live", task + ["live", port, path.name], results)
        measure("live-arrow", task + ["live-arrow", port, path.name], results)
        measure("live-same-rows", task + ["live", port, path.name, str(peer_rows)], results)
        if ensure_peer():
            measure("pymysqlrepl", task + ["pymysqlrepl", port, path.name, str(peer_rows)],
                    results)
        remote = ["-R", "--host=127.0.0.1", f"--port={port}", "--user=root", "-v",
                  "--base64-output=decode-rows", "--to-last-log", path.name]
        measure("c-remote", ["mariadb-binlog", *remote], results, task=False)
        measure("dump-remote", [PYTHON, "-m", "binlake", "dump", *remote], results, task=False)
    finally:
        server.stop()
    return {"size_mb": path.stat().st_size / 1e6, "results": results}


def print_shape(shape: str, measured: dict) -> None:
    r = measured["results"]
    print(f"\n{shape}: {measured['size_mb']:.0f} MB binlog, served by a local MariaDB")
    print(f"  {'reader':<14}{'seconds':>10}{'rows/s':>14}{'peak MB':>10}")
    for name, entry in r.items():
        rate = entry.get("rows_per_s")
        seconds = entry.get("call_seconds", entry["seconds"])
        print(f"  {name:<14}{seconds:>10.2f}{(f'{rate:,.0f}' if rate else '-'):>14}"
              f"{entry['peak_mb']:>10.0f}")
    live, file, peer = r.get("live"), r.get("file"), r.get("pymysqlrepl")
    for name in ("live", "live-arrow", "live-same-rows"):
        if name in r and peer:
            print(f"  {name} / python-mysql-replication rows/s: "
                  f"{r[name]['rows_per_s'] / peer['rows_per_s']:.1f}x (goal 50x)")
    if live and file:
        print(f"  live time / file time: {live['call_seconds'] / file['call_seconds']:.2f}"
              " (goal <= 1)")
    if live and "c-remote" in r:
        print(f"  live / mariadb-binlog -R time: {r['c-remote']['seconds'] / live['call_seconds']:.2f}x")
    if "dump-remote" in r and "c-remote" in r:
        print(f"  binlake dump -R -v speed / mariadb-binlog -R -v: "
              f"{r['c-remote']['seconds'] / r['dump-remote']['seconds']:.2f}x (goal >= 1.0)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    parser.add_argument("--shape", choices=("bulk", "oltp", "both"), default="both")
    parser.add_argument("--bulk-mb", type=int, default=100)
    parser.add_argument("--oltp-mb", type=int, default=60)
    parser.add_argument("--pymysqlrepl-rows", type=int, default=50_000)
    args = parser.parse_args()
    if args.task:
        TASKS[args.task[0]](*args.task[1:])
        return 0
    os.environ.update(ENV)
    time.tzset()
    # Every task imports binlake from bytecode, as an installed copy does: a
    # machine with PYTHONDONTWRITEBYTECODE set would otherwise compile each
    # module at each import, inside the live tasks' timed calls (they import
    # the connection and schema modules there) more than the file's.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    import binlake
    compileall.compile_dir(Path(binlake.__file__).parent, quiet=1)
    shapes = ["bulk", "oltp"] if args.shape == "both" else [args.shape]
    for shape in shapes:
        size = args.bulk_mb if shape == "bulk" else args.oltp_mb
        print_shape(shape, measure_shape(shape, size, args.pymysqlrepl_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
