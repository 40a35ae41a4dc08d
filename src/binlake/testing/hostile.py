"""Reading untrusted bytes through every entry point, on both cores, with a
clock and a memory meter: the harness of `scripts/fuzz_files.py` and of the
regression inputs it found (`tests/regressions/`).

Strategy: a worker process reads one input through `binlake.open` + every
row, `binlake.changes`, `dump -vv --force-read` and `sql`, on the native core
and on the pure-Python reference, and reports how each ended and its peak
RSS. The parent gives each run a time budget (1 s per MB plus 50 ms, with a
floor for process noise) and kills a worker that overruns it four times
over, so that a hang is reported, not waited for. Anything but a clean end
or a `BinlogError` is a problem: another exception, a crash, a hang, a run
over its budget, or a peak beyond twice the input plus 100 MB.
"""

from __future__ import annotations

import contextlib
import io
import resource
import tempfile
import time
from multiprocessing import Pipe, Process

ENTRY_POINTS = ("rows", "changes", "dump", "sql")
BUDGET_FLOOR = 2.0          #: seconds: below this, a slow run is process noise


def budget(size: int) -> float:
    """Seconds one entry point may take on an input of `size` bytes."""
    return max(BUDGET_FLOOR, size / 1e6 + 0.05)


def run_entry(name: str, path: str, load_dir: str) -> None:
    """Read `path` through one entry point; LOAD DATA files go to `load_dir`."""
    import binlake
    from binlake.cli.dispatch import main as cli
    from binlake.read.events import RowsEvent
    if name == "rows":
        for event in binlake.open(path, verify_checksums=False):
            if isinstance(event, RowsEvent):
                for _ in event.iter_rows():
                    pass
    elif name == "changes":
        for _ in binlake.changes(path, verify_checksums=False):
            pass
    elif name == "dump":
        cli(["dump", "-vv", "--force-read", "-l", load_dir, path],
            out=io.StringIO(), err=io.StringIO())
    elif name == "sql":
        cli(["sql", "-l", load_dir, path], out=io.StringIO(), err=io.StringIO())


def worker(conn) -> None:
    from binlake import core
    from binlake.schema import ddl
    from binlake.errors import BinlogError
    # what the entry points import on first use, imported now: a run's clock
    # times reading the input, not loading the package
    from binlake.cli.dispatch import main as cli
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        cli(["dump", "--help"], out=io.StringIO(), err=io.StringIO())  # every command's module
    list(ddl.parse_script("CREATE TABLE t (a INT)", None))
    while True:
        job = conn.recv()
        if job is None:
            return
        path, entry, pure = job
        core.use_pure(pure)
        start = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix="binlake-hostile-") as load_dir:
                run_entry(entry, path, load_dir)
            result = "ok"
        except BinlogError:
            result = "binlog-error"
        except Exception as exc:  # noqa: BLE001 - the finding itself
            result = f"escaped {type(exc).__name__}: {str(exc)[:200]}"
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        conn.send((result, time.perf_counter() - start, peak))


class Worker:
    """A process that reads inputs on request (`worker`); replaced when killed."""

    def __init__(self):
        self.conn, child = Pipe()
        self.process = Process(target=worker, args=(child,), daemon=True)
        self.process.start()
        self.base_mb = None

    def run(self, path: str, entry: str, pure: bool, budget: float):
        self.conn.send((path, entry, pure))
        if not self.conn.poll(budget):
            self.kill()
            return ("hang", budget, 0.0)
        try:
            return self.conn.recv()
        except EOFError:
            code = self.process.exitcode
            self.kill()
            return (f"crash (exit {code})", 0.0, 0.0)

    def kill(self) -> None:
        self.process.kill()
        self.process.join()


def check(worker_: Worker, path: str, size: int,
          slowest: dict | None = None) -> tuple[Worker, list[str]]:
    """Every entry point on both cores; what went wrong. `slowest` keeps,
    per entry point and core, the longest run seen (seconds, input bytes)."""
    problems = []
    limit = budget(size)
    for pure in (False, True):
        for entry in ENTRY_POINTS:
            result, seconds, peak = worker_.run(path, entry, pure, limit * 4)
            core = "pure" if pure else "native"
            if result.startswith(("hang", "crash")):
                problems.append(f"{entry}/{core}: {result}")
                worker_ = Worker()
                continue
            if result.startswith("escaped"):
                problems.append(f"{entry}/{core}: {result}")
            if slowest is not None and seconds > slowest.get(f"{entry}/{core}", (0, 0))[0]:
                slowest[f"{entry}/{core}"] = (seconds, size)
            if seconds > limit:
                problems.append(f"{entry}/{core}: slow, {seconds:.2f} s for {size} bytes")
            if worker_.base_mb is None:
                worker_.base_mb = peak
            if peak - worker_.base_mb > 2 * size / 1e6 + 100:
                problems.append(f"{entry}/{core}: peak {peak:.0f} MB")
    return worker_, problems
