"""Coverage-guided fuzzing of the Python layers with atheris.

    .venv/bin/python fuzz/atheris_reader.py [--native] CORPUS_DIR [SEED_DIR] -runs=1000000 -max_len=16384 -timeout=5

Each input is a whole binlog, read as `binlake.open` reads a stream: every
event decoded (the schema history following its DDL), every rows event's
rows decoded to Python values, `binlake.changes` and `binlake.arrow_changes`
over the same bytes. By default on the pure-Python reference; with
`--native` on the native core, whose values and Arrow sinks need an
interpreter (the libFuzzer target covers the rest of it; coverage then
guides by the Python layers around it). It must end cleanly or with a
`BinlogError`; anything else escaping is a crash, and libFuzzer's -timeout
catches a hang. Seed it with the heads of the corpus files
(`scripts/fuzz_files.py` loads the same ones).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import time

import atheris

with atheris.instrument_imports(include=["binlake"]):
    import binlake
    from binlake import core
    from binlake.errors import BinlogError
    from binlake.events import RowsEvent

NATIVE = "--native" in sys.argv
ARROW_INPUT = os.path.join(tempfile.gettempdir(), f"binlake-atheris-{os.getpid()}.bin")
core.use_pure(not NATIVE)


class _Input(io.BytesIO):
    name = "fuzz-input"


def test_one_input(data: bytes) -> None:
    start = time.thread_time()
    read(data)
    clock(len(data), time.thread_time() - start)


_slowest = 0.0


def clock(size: int, seconds: float) -> None:
    """The issue's budget, 1 s per MB plus 50 ms of CPU: an input over it is a
    finding; each new slowest is printed, so the log ends with the slowest."""
    global _slowest
    budget = size / 1e6 + 0.05
    if seconds > budget:
        raise AssertionError(f"slow: {seconds * 1e3:.1f} ms of CPU for {size} bytes "
                             f"(budget {budget * 1e3:.1f} ms)")
    if seconds > _slowest:
        _slowest = seconds
        print(f"#slowest {seconds * 1e3:.3f} ms of CPU for {size} bytes", file=sys.stderr)


def read(data: bytes) -> None:
    try:
        for event in binlake.open(_Input(data), verify_checksums=False):
            if isinstance(event, RowsEvent):
                for _ in event.iter_rows():
                    pass
    except BinlogError:
        pass
    try:
        for _ in binlake.changes(_Input(data), verify_checksums=False):
            pass
    except BinlogError:
        pass
    with open(ARROW_INPUT, "wb") as f:  # arrow_changes reads files (splits)
        f.write(data)
    try:
        for _ in binlake.arrow_changes(ARROW_INPUT, verify_checksums=False):
            pass
    except BinlogError:
        pass


if __name__ == "__main__":
    # what the first inputs would import or cache (codecs, the DDL parser),
    # done before the clock runs: read the seeds once
    for directory in (a for a in sys.argv[1:] if os.path.isdir(a)):
        for name in sorted(os.listdir(directory))[:500]:
            with open(os.path.join(directory, name), "rb") as f:
                read(f.read())
    atheris.Setup([a for a in sys.argv if a != "--native"], test_one_input)
    atheris.Fuzz()
