"""Decode throughput of binlake against its peers, on the same file, in one run.

    .venv/bin/python bench/bench_decode.py [--shape bulk|oltp|both] [--size-mb 100]
        [--bulk-mb N] [--oltp-mb N] [--huge-event-mb 256] [--skip NAME ...]

Strategy. For each binlog shape a row-based MariaDB binlog is generated once by
binlake's own workload generators and cached under bench/data/ (gitignored), with
the private server's data directory, so later runs reuse it and can restart the
server for the one peer that must stream from it:

  bulk   generate_bulk: many rows per event (INSERT ... SELECT batches)
  oltp   generate_oltp: one row per transaction (GTID, ANNOTATE, TABLE_MAP, one
         rows event, XID), from a stored procedure

Then, on that file, each measurement runs in a process of its own, so its time
is its own and its peak memory (max RSS from wait4, the largest process of its
tree) too:

  mariadb-binlog    `mariadb-binlog --base64-output=decode-rows -v` > /dev/null:
                    the C reference every ratio is taken against (run before and
                    after the others; the faster of the two is the reference)
  binlake-dump-v    `binlake dump --base64-output=decode-rows -v` > /dev/null
  binlake-dump-json `binlake dump --format json` > /dev/null (one JSON line per
                    event, rows with their values)
  binlake-api       binlake.open + every RowsEvent's iter_rows, to Python values,
                    one core (the core in use is reported: native or pure); also
                    (binlake-api-call) the same loop timed inside the process,
                    after the imports
  binlake-api-pure  the same with BINLAKE_PURE=1: the pure-Python reference
  binlake-changes   binlake.changes(path), every value of every image touched
                    (the native changes loop, records.py); binlake-changes-call:
                    the same loop timed inside the process
  arrow-changes     binlake.arrow_changes(paths) to Arrow, counting rows: the
                    process's wall time, and (arrow-changes-call) the time of the
                    API call itself measured inside that process, after
                    `import pyarrow` (no interpreter start, imports or exit)
  pipeline          `binlake pipeline FILE --out DIR` on local[*], end to end
                    (JVM start, events/, changes/, tables/ as Parquet)
  pipeline-floor    the same on a binlog of a few dozen events: Spark's fixed cost
  header-scan       binlake.read.scan over the event headers only
  pymysqlrepl       python-mysql-replication streaming the first 50 000 rows of
                    the same binlog from the server (it cannot read files)

and, once per run, one rows event of --huge-event-mb MB (one INSERT ... SELECT
with binlog_row_event_max_size raised): the API, dump -v and arrow_changes on
it, for their peak memory, next to mariadb-binlog's.

Every process runs with TZ=UTC and LC_ALL=C.UTF-8: without TZ, glibc re-reads
/etc/localtime for each timestamp the C tool prints, doubling its time.

Printed: a results table per shape (seconds, rows/s, MB/s, peak MB, ratio
against mariadb-binlog from the same run) and a targets table (issue 9) saying
met or missed. Raw figures go to bench/data/last_results.json. Nothing here
is a unit test: these machines are shared and noisy, so read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PYTHON = sys.executable
PYMYSQLREPL_SAMPLE_ROWS = 50_000
MEMORY_LIMIT_MB = 300
C_TOOL = ["mariadb-binlog", "--base64-output=decode-rows", "-v"]
#: Every tool timed runs in this environment (the C tool at its best).
BENCH_ENV = {"TZ": "UTC", "LC_ALL": "C.UTF-8"}
MEASUREMENTS = ("mariadb-binlog", "binlake-dump-v", "binlake-dump-json", "binlake-api", "binlake-api-pure",
                "binlake-changes",
                "arrow-changes", "pipeline", "pipeline-floor", "header-scan", "pymysqlrepl")
#: A binlog of a few dozen events: the pipeline on it is Spark's fixed cost.
TINY_BINLOG = HERE.parent / "src" / "binlake" / "sample_data" / "binlog.000003"


def run_measured(argv: list[str], stdout=subprocess.DEVNULL,
                 env: dict | None = None) -> tuple[float, float, str]:
    """(seconds, peak RSS in MB, captured stdout) of a child process. stdout is
    either discarded or small (the tasks' JSON line); stderr goes to a file, as
    Spark writes a lot there and an unread pipe would block it."""
    with tempfile.TemporaryFile() as err_file, tempfile.TemporaryFile() as out_file:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out_file if stdout == subprocess.PIPE else stdout,
                                stderr=err_file, env={**os.environ, **BENCH_ENV, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err_file.seek(0)
        out_file.seek(0)
        err = err_file.read().decode(errors="replace")
        out = out_file.read().decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} failed ({proc.returncode}): {err[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024, out


# -- tasks run in child processes ------------------------------------------------

def task_api(path: str) -> None:
    """Every row to Python values; also how long that took in this process
    (after the imports), as for arrow_changes."""
    import binlake
    import binlake.core
    from binlake.read.events import RowsEvent
    rows = 0
    start = time.perf_counter()
    for event in binlake.open(path):
        if isinstance(event, RowsEvent):
            for before, after in event.iter_rows():  # one at a time: memory stays flat
                rows += 1
                for image in (before, after):
                    if image is not None:
                        for _ in image.values():
                            pass
    call = time.perf_counter() - start
    print(json.dumps({"rows": rows, "core": binlake.core.name(), "call_seconds": call}))


def task_changes(path: str) -> None:
    """binlake.changes to Python values, every value touched; timed as task_api."""
    import binlake
    import binlake.core
    rows = 0
    start = time.perf_counter()
    for change in binlake.changes(path):
        rows += 1
        for image in (change.before, change.after):
            if image is not None:
                for _ in image.values():
                    pass
    call = time.perf_counter() - start
    print(json.dumps({"rows": rows, "core": binlake.core.name(), "call_seconds": call}))


def task_arrow(*paths: str) -> None:
    """Rows through binlake.arrow_changes, whatever Arrow shape it returns: a
    Table or RecordBatch (num_rows), a RecordBatchReader or an iterable of
    batches (consumed one at a time). Also says how long the API call itself
    took, in this process: pyarrow is imported first, so that time excludes
    interpreter start, imports and exit."""
    import binlake
    import binlake.core
    arrow_changes = getattr(binlake, "arrow_changes", None)
    if arrow_changes is None:
        print(json.dumps({"available": False}))
        return
    import pyarrow  # noqa: F401  (its import is not the API's time)
    start = time.perf_counter()
    result = arrow_changes(list(paths))
    if hasattr(result, "num_rows"):
        rows = result.num_rows
    else:
        rows = sum(batch.num_rows for batch in result)
    call = time.perf_counter() - start
    print(json.dumps({"available": True, "rows": rows, "core": binlake.core.name(),
                      "call_seconds": call}))


def task_core() -> None:
    import binlake.core
    print(json.dumps({"core": binlake.core.name()}))


def task_scan(path: str) -> None:
    from binlake.read.scan import scan
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


TASKS = {"api": task_api, "changes": task_changes, "arrow": task_arrow, "core": task_core, "scan": task_scan,
         "pymysqlrepl": task_pymysqlrepl}


def task_argv(name: str, *params: str) -> list[str]:
    return [PYTHON, __file__, "--task", name, *params]


# -- binlogs (generated once, cached under bench/data/) ------------------------------

def bench_server(workdir: Path):
    from binlake.testing.mariadb import MariaDBServer
    return MariaDBServer(workdir, max_binlog_size=1 << 30,
                         extra={"innodb_buffer_pool_size": "2G",
                                "innodb_log_file_size": "256M"})


def shape_binlog(shape: str, size_mb: int) -> dict:
    """The cached binlog of one shape and size: {"path", "counts", "workdir"}; the
    server's work directory is kept so pymysqlrepl can stream the same file."""
    from binlake.testing.workload import generate_bulk, generate_oltp
    folder = DATA / f"{shape}-{size_mb}mb"
    meta_file = folder / "meta.json"
    if meta_file.exists():
        return json.loads(meta_file.read_text())
    shutil.rmtree(folder, ignore_errors=True)
    generate = {"bulk": generate_bulk, "oltp": generate_oltp}[shape]
    started = time.perf_counter()
    with bench_server(folder / "server") as server:
        counts = generate(server, "bench", size_mb * 1_000_000)
        server.flush_logs()
        path = max(server.binlog_files(), key=lambda f: f.stat().st_size)
    seconds = time.perf_counter() - started
    meta = {"path": str(path), "workdir": str(folder / "server"), "counts": counts,
            "generate_seconds": round(seconds, 1)}
    meta_file.write_text(json.dumps(meta, indent=1))
    print(f"generated {shape}: {path.stat().st_size / 1e6:.0f} MB in {seconds:.0f} s: {counts}",
          flush=True)
    return meta


def huge_event_binlog(size_mb: int) -> Path:
    """A binlog whose rows sit in one event of about size_mb (one INSERT ...
    SELECT with binlog_row_event_max_size raised): the case that must not be
    held in memory. Cached as bench/data/huge-event-<size>mb.bin."""
    from binlake.testing.mariadb import MariaDBServer
    target = DATA / f"huge-event-{size_mb}mb.bin"
    if target.exists():
        return target
    workdir = DATA / "server-huge"
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
        shutil.copy(path, target)
    shutil.rmtree(workdir, ignore_errors=True)
    return target


# -- measuring one file ------------------------------------------------------------

def core_name(env: dict | None = None) -> str:
    """The core a binlake child process started with this environment uses."""
    _, _, out = run_measured(task_argv("core"), subprocess.PIPE, env)
    return json.loads(out)["core"]


def measure(name: str, argv: list[str], results: dict, skip: list[str], *,
            env: dict | None = None, core: str | None = None, parse=None) -> None:
    """Run one measurement into results[name]; a failure is reported, not fatal."""
    if name in skip:
        return
    try:
        seconds, peak, out = run_measured(argv, subprocess.PIPE if parse else subprocess.DEVNULL,
                                          env)
    except (RuntimeError, FileNotFoundError) as exc:
        print(f"  {name}: not measured: {exc}", file=sys.stderr, flush=True)
        return
    entry = {"seconds": seconds, "peak_mb": peak}
    if core:
        entry["core"] = core
    if parse:
        entry.update(parse(out))
    results[name] = entry
    print(f"  {name}: {seconds:.2f} s, peak {peak:.0f} MB "
          f"{entry.get('core', '')} {entry.get('note', '')}", flush=True)


def parse_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def parse_arrow(out: str) -> dict:
    found = parse_json(out)
    if not found["available"]:
        return {"unavailable": True, "note": "binlake.arrow_changes not available"}
    return {"rows": found["rows"], "core": found["core"], "call_seconds": found.get("call_seconds"),
            "note": "process wall time (python start, imports, exit included)"}


def measure_file(path: Path, skip: list[str], rows_hint: int | None) -> dict:
    """Every measurement except the server-streaming peer, on one binlog file."""
    results: dict = {}
    file = str(path)
    native_core = core_name()
    measure("mariadb-binlog", C_TOOL + [file], results, skip)
    measure("binlake-dump-v", [PYTHON, "-m", "binlake", "dump", "--base64-output=decode-rows",
                               "-v", file], results, skip, core=native_core)
    measure("binlake-dump-json", [PYTHON, "-m", "binlake", "dump", "--format", "json", file],
            results, skip, core=native_core)
    measure("binlake-api", task_argv("api", file), results, skip, parse=parse_json)
    measure("binlake-api-pure", task_argv("api", file), results, skip,
            env={"BINLAKE_PURE": "1"}, parse=parse_json)
    measure("binlake-changes", task_argv("changes", file), results, skip, parse=parse_json)
    measure("arrow-changes", task_argv("arrow", file), results, skip, parse=parse_arrow)
    for name in ("binlake-api", "binlake-changes", "arrow-changes"):
        entry = results.get(name)
        if entry and entry.get("call_seconds"):
            results[f"{name}-call"] = {
                "seconds": entry["call_seconds"], "peak_mb": entry["peak_mb"],
                "core": entry.get("core", ""), "rows": entry["rows"],
                "note": "the same run's API call alone, in-process (no interpreter start, "
                        "no imports)"}
    for name, source in (("pipeline", file), ("pipeline-floor", str(TINY_BINLOG))):
        if "pipeline" in skip or name in skip:
            continue
        with tempfile.TemporaryDirectory(prefix="pipeline-", dir=DATA) as scratch:
            # --temporals text: the workloads' zero dates are no Spark dates.
            measure(name, [PYTHON, "-m", "binlake", "pipeline", source, "--temporals", "text",
                           "--out", str(Path(scratch) / "out")],
                    results, skip, core=native_core,
                    env={"PYSPARK_PYTHON": PYTHON, "PYSPARK_DRIVER_PYTHON": PYTHON})
    if "pipeline-floor" in results:  # its rows are the sample's, not this file's
        results["pipeline-floor"].update(rows=0, note="JVM + Spark start and the jobs' fixed "
                                         f"cost, on {TINY_BINLOG.name} ({TINY_BINLOG.stat().st_size} B)")
    measure("header-scan", task_argv("scan", file), results, skip)
    again: dict = {}
    measure("mariadb-binlog", C_TOOL + [file], again, skip)
    if "mariadb-binlog" in again and "mariadb-binlog" in results:
        first = results["mariadb-binlog"]
        first["note"] = f"best of {first['seconds']:.2f} s, {again['mariadb-binlog']['seconds']:.2f} s"
        if again["mariadb-binlog"]["seconds"] < first["seconds"]:
            first.update(seconds=again["mariadb-binlog"]["seconds"])
        first["peak_mb"] = max(first["peak_mb"], again["mariadb-binlog"]["peak_mb"])
    rows = results.get("binlake-api", {}).get("rows") or rows_hint
    size_mb = path.stat().st_size / 1e6
    for name, entry in results.items():
        entry.setdefault("rows", None if name == "header-scan" else rows)
        if name == "pipeline-floor":
            continue
        if entry.get("unavailable"):
            continue
        entry["mb_per_s"] = size_mb / entry["seconds"]
        entry["rows_per_s"] = entry["rows"] / entry["seconds"] if entry["rows"] else None
    return results


def measure_pymysqlrepl(meta: dict, rows: int, results: dict, skip: list[str]) -> None:
    """python-mysql-replication streams a sample of the same file from the server,
    restarted on the cached work directory. The sample stays well inside the file:
    at its end the library reconnects and streams the file again from the start."""
    if "pymysqlrepl" in skip:
        return
    sample = min(PYMYSQLREPL_SAMPLE_ROWS, rows // 2)
    server = bench_server(Path(meta["workdir"]))
    server.start()
    try:
        measure("pymysqlrepl", task_argv("pymysqlrepl", str(server.port),
                                         str(sample), Path(meta["path"]).name),
                results, skip, parse=parse_json)
    finally:
        server.stop()
    entry = results.get("pymysqlrepl")
    if entry:  # its own clock: from the first event, not from the process start
        entry.update(rows_per_s=entry["rows"] / entry["seconds"], mb_per_s=None,
                     note=f"first {entry['rows']:,} rows, streamed from the server")


def measure_huge_event(size_mb: int, skip: list[str]) -> dict:
    """Peak memory (and speed) on one rows event of size_mb."""
    path = huge_event_binlog(size_mb)
    huge_skip = skip + ["binlake-api-pure", "pipeline", "pipeline-floor", "header-scan"]
    return measure_file(path, huge_skip, None)


# -- reporting ---------------------------------------------------------------------

def ratio_against_c(results: dict, name: str) -> float | None:
    entry, reference = results.get(name), results.get("mariadb-binlog")
    if not entry or not reference or entry.get("unavailable"):
        return None
    if name == "pymysqlrepl":  # a sample: compare rates, not times
        return (entry["rows_per_s"] / reference["rows_per_s"]) if reference.get("rows_per_s") else None
    return reference["seconds"] / entry["seconds"]


def print_results(title: str, results: dict) -> None:
    print(f"\n{title}\n")
    print(f"| {'measurement':<17}| {'core':<20}| {'seconds':>8} | {'rows/s':>11} | {'MB/s':>6} "
          f"| {'peak MB':>7} | {'vs C':>6} | note")
    print(f"|{'-' * 18}|{'-' * 21}|{'-' * 10}:|{'-' * 12}:|{'-' * 7}:|{'-' * 8}:|{'-' * 7}:|---")
    for name, r in results.items():
        if r.get("unavailable"):
            print(f"| {name:<17}| {'':<20}| {'-':>8} | {'-':>11} | {'-':>6} | {'-':>7} | {'-':>6} "
                  f"| not available")
            continue
        ratio = ratio_against_c(results, name)
        rows_per_s = f"{r['rows_per_s']:,.0f}" if r.get("rows_per_s") else "-"
        mb_per_s = f"{r['mb_per_s']:.1f}" if r.get("mb_per_s") else "-"
        print(f"| {name:<17}| {r.get('core', ''):<20}| {r['seconds']:>8.2f} | {rows_per_s:>11} "
              f"| {mb_per_s:>6} | {r['peak_mb']:>7.0f} | {f'{ratio:.2f}x' if ratio else '-':>6} "
              f"| {r.get('note', '')}")


def target_rows(shape: str, results: dict, size_mb: float) -> list[tuple[str, str, str]]:
    """(target, reached, status) for one shape's results."""
    def ratio_row(label, name, goal, stretch=None):
        ratio = ratio_against_c(results, name)
        if name in results and results[name].get("unavailable"):
            return (label, "not available", "not measured")
        if ratio is None:
            return (label, "-", "not measured")
        status = "met" if ratio >= goal else "missed"
        if stretch and ratio >= stretch:
            status = "met (stretch too)"
        return (label, f"{ratio:.2f}x", status)

    rows = [
        ratio_row(f"{shape}: dump -v >= 1.0x C (stretch 2x)", "binlake-dump-v", 1.0, 2.0),
        ratio_row(f"{shape}: dump --format json >= 1.5x C", "binlake-dump-json", 1.5),
        ratio_row(f"{shape}: API full decode >= 1.0x C (process wall time)", "binlake-api", 1.0),
        ratio_row(f"{shape}: API full decode >= 1.0x C (API call in-process)",
                  "binlake-api-call", 1.0),
        ratio_row(f"{shape}: binlake.changes >= 1.0x C (process wall time)", "binlake-changes",
                  1.0),
        ratio_row(f"{shape}: binlake.changes >= 1.0x C (API call in-process)",
                  "binlake-changes-call", 1.0),
        ratio_row(f"{shape}: arrow_changes >= 3x C rows/s (process wall time)", "arrow-changes",
                  3.0),
        ratio_row(f"{shape}: arrow_changes >= 3x C rows/s (API call in-process)",
                  "arrow-changes-call", 3.0),
        ratio_row(f"{shape}: pipeline local[*] >= 0.15x C", "pipeline", 0.15),
    ]
    floor = ratio_against_c(results, "pipeline-floor")
    if floor is not None:  # what the ratio could be if reading took no time at all
        label, reached, status = rows[-1]
        rows[-1] = (label, f"{reached} (Spark's fixed cost alone: {floor:.2f}x)", status)
    # python-mysql-replication's rate is taken by its own clock from its first
    # event, so binlake's is that of its API call in-process too.
    peer = results.get("pymysqlrepl")
    for name in ("binlake-api-call", "binlake-changes-call", "arrow-changes-call"):
        entry = results.get(name)
        label = f"{shape}: {name} >= 50x python-mysql-replication rows/s"
        if entry and peer and entry.get("rows_per_s") and peer.get("rows_per_s"):
            times = entry["rows_per_s"] / peer["rows_per_s"]
            rows.append((label, f"{times:.1f}x", "met" if times >= 50 else "missed"))
        else:
            rows.append((label, "-", "not measured"))
    rows.append(memory_row(f"{shape}: peak < {MEMORY_LIMIT_MB} MB ({size_mb:.0f} MB file)", results))
    return rows


def memory_row(label: str, results: dict) -> tuple[str, str, str]:
    """Largest peak of binlake's own decoders (not the pipeline's JVM)."""
    peaks = {name: results[name]["peak_mb"] for name in ("binlake-api", "binlake-changes",
                                                          "binlake-dump-v", "binlake-dump-json",
                                                          "arrow-changes")
             if name in results and not results[name].get("unavailable")}
    if not peaks:
        return (label, "-", "not measured")
    reached = ", ".join(f"{name} {peak:.0f} MB" for name, peak in peaks.items())
    return (label, reached, "met" if max(peaks.values()) < MEMORY_LIMIT_MB else "missed")


def print_targets(rows: list[tuple[str, str, str]]) -> None:
    print("\ntargets (issues 9 and 19)\n")
    print("| target | reached | status |\n|---|---|---|")
    for target, reached, status in rows:
        print(f"| {target} | {reached} | {status} |")


# -- main --------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("bulk", "oltp", "both"), default="both")
    parser.add_argument("--size-mb", type=int, default=100, help="binlog size of each shape")
    parser.add_argument("--bulk-mb", type=int, help="bulk binlog size (default: --size-mb)")
    parser.add_argument("--oltp-mb", type=int, help="OLTP binlog size (default: --size-mb)")
    parser.add_argument("--huge-event-mb", type=int, default=256,
                        help="also measure one rows event of this size (0: skip)")
    parser.add_argument("--skip", nargs="*", default=[], choices=MEASUREMENTS,
                        help="measurements to leave out")
    parser.add_argument("--task", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        name, *params = args.task
        TASKS[name](*params)
        return 0

    DATA.mkdir(exist_ok=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}: {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    shapes = ["bulk", "oltp"] if args.shape == "both" else [args.shape]
    sizes = {"bulk": args.bulk_mb or args.size_mb, "oltp": args.oltp_mb or args.size_mb}
    report, targets = {}, []
    for shape in shapes:
        meta = shape_binlog(shape, sizes[shape])
        path = Path(meta["path"])
        size_mb = path.stat().st_size / 1e6
        print(f"{shape}: {path} ({size_mb:.0f} MB)", flush=True)
        rows_hint = sum(meta["counts"][k] for k in ("inserts", "updates", "deletes"))
        results = measure_file(path, args.skip, rows_hint)
        rows = results.get("binlake-api", {}).get("rows") or rows_hint
        measure_pymysqlrepl(meta, rows, results, args.skip)
        report[shape] = {"file": str(path), "mb": size_mb, "rows": rows, "results": results}
        print_results(f"{shape}: {path.name}, {size_mb:.0f} MB, {rows:,} row images, "
                      f"{time.strftime('%H:%M')}", results)
        targets += target_rows(shape, results, size_mb)
    if args.huge_event_mb:
        print(f"huge event: {args.huge_event_mb} MB", flush=True)
        huge = measure_huge_event(args.huge_event_mb, args.skip)
        report["huge-event"] = {"mb": args.huge_event_mb, "results": huge}
        print_results(f"one {args.huge_event_mb} MB rows event", huge)
        targets.append(memory_row(f"peak < {MEMORY_LIMIT_MB} MB, one {args.huge_event_mb} MB "
                                  f"rows event", huge))
    print_targets(targets)
    report["targets"] = targets
    report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    (DATA / "last_results.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
