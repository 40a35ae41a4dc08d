"""Coverage-guided fuzzing of the Python layers with atheris.

    .venv/bin/python fuzz/atheris_reader.py [--native] CORPUS_DIR [SEED_DIR] -runs=1000000 -max_len=16384 -timeout=5

Each input is a whole binlog, read as `binlake.open` reads a stream: every
event decoded (the schema history following its DDL), every rows event's
rows decoded to Python values, `binlake.changes`, `binlake.arrow_changes`,
`dump -vv` and `sql` over the same bytes. By default on the pure-Python reference; with
`--native` on the native core, whose values and Arrow sinks need an
interpreter (the libFuzzer target covers the rest of it; coverage then
guides by the Python layers around it). It must end cleanly or with a
`BinlogError`; anything else escaping is a crash, and libFuzzer's -timeout
catches a hang. Seed it with the heads of the corpus files
(`scripts/fuzz_files.py` loads the same ones).
"""

from __future__ import annotations

import gc
import io
import os
import sys
import tempfile
import time

import atheris

with atheris.instrument_imports(include=["binlake"]):
    import binlake
    from binlake import core
    from binlake.cli.dispatch import main as cli
    from binlake.errors import BinlogError
    from binlake.read.events import RowsEvent

NATIVE = "--native" in sys.argv
FILE_INPUT = os.path.join(tempfile.gettempdir(), f"binlake-atheris-{os.getpid()}.bin")
LOAD_DIR = tempfile.mkdtemp(prefix="binlake-atheris-load-")  # LOAD DATA files rebuilt by sql
core.use_pure(not NATIVE)


class _Input(io.BytesIO):
    name = "fuzz-input"


def test_one_input(data: bytes, timed: bool = True) -> None:
    global _inputs
    with open(FILE_INPUT, "wb") as f:  # arrow_changes and the commands read files
        f.write(data)
    for entry in ENTRY_POINTS:
        # The collector runs between inputs, off the clock: a full collection
        # of the fuzzer's own heap is not the input's work.
        gc.disable()
        start = time.thread_time()
        try:
            entry(data)
        except BinlogError:
            pass
        seconds = time.thread_time() - start
        gc.enable()
        if timed:
            clock(entry.__name__, len(data), seconds)
    _inputs += 1
    gc.collect(2 if _inputs % 1000 == 0 else 1)


_inputs = 0
_slowest: dict[str, float] = {}


def clock(entry: str, size: int, seconds: float) -> None:
    """The issue's budget for each entry point, 1 s per MB plus 50 ms of CPU:
    an input over it is a finding; each entry point's new slowest is
    printed, so the log ends with the slowest of each."""
    budget = size / 1e6 + 0.05
    if seconds > budget:
        raise AssertionError(f"slow: {entry} took {seconds * 1e3:.1f} ms of CPU for "
                             f"{size} bytes (budget {budget * 1e3:.1f} ms)")
    if seconds > _slowest.get(entry, 0.0):
        _slowest[entry] = seconds
        print(f"#slowest {entry} {seconds * 1e3:.3f} ms of CPU for {size} bytes",
              file=sys.stderr)


def rows(data: bytes) -> None:
    for event in binlake.open(_Input(data), verify_checksums=False):
        if isinstance(event, RowsEvent):
            for _ in event.iter_rows():
                pass


def changes(data: bytes) -> None:
    for _ in binlake.changes(_Input(data), verify_checksums=False):
        pass


def arrow_changes(data: bytes) -> None:
    for _ in binlake.arrow_changes(FILE_INPUT, verify_checksums=False):
        pass


def dump(data: bytes) -> None:
    # the commands report bad input with exit status 1, as mysqlbinlog does
    cli(["dump", "-vv", "--force-read", "-l", LOAD_DIR, FILE_INPUT],
        out=io.StringIO(), err=io.StringIO())


def sql(data: bytes) -> None:
    cli(["sql", "-l", LOAD_DIR, FILE_INPUT], out=io.StringIO(), err=io.StringIO())


ENTRY_POINTS = (rows, changes, arrow_changes, dump, sql)


if __name__ == "__main__":
    # what the first inputs would import or cache (codecs, the DDL parser),
    # done before the clock runs: read the seeds once
    for arg in (a for a in sys.argv[1:] if os.path.exists(a)):
        names = sorted(os.listdir(arg))[:500] if os.path.isdir(arg) else [""]
        for name in names:
            with open(os.path.join(arg, name) if name else arg, "rb") as f:
                test_one_input(f.read(), timed=False)
    gc.collect()
    gc.freeze()  # what is loaded now stays: later collections do not walk it
    atheris.Setup([a for a in sys.argv if a != "--native"], test_one_input)
    atheris.Fuzz()
