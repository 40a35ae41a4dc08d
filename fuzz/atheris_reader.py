"""Coverage-guided fuzzing of the pure-Python reference with atheris.

    .venv/bin/python fuzz/atheris_reader.py CORPUS_DIR [SEED_DIR] -runs=1000000 -max_len=16384 -timeout=5

Each input is a whole binlog, read as `binlake.open` reads a stream, on the
pure-Python core: every event decoded (the schema history following its
DDL), every rows event's rows decoded, and `binlake.changes` over the same
bytes. It must end cleanly or with a `BinlogError`; anything else escaping
is a crash, and libFuzzer's -timeout catches a hang. Seed it with the heads
of the corpus files (`scripts/fuzz_files.py` loads the same ones).
"""

from __future__ import annotations

import io
import sys

import atheris

with atheris.instrument_imports(include=["binlake"]):
    import binlake
    from binlake import core
    from binlake.errors import BinlogError
    from binlake.events import RowsEvent

core.use_pure(True)


class _Input(io.BytesIO):
    name = "fuzz-input"


def test_one_input(data: bytes) -> None:
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


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
