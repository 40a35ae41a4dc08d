"""The native Arrow builder of the changes view against the pure-Python batches, on every corpus file.

Both sides read the same range the same way (`binlake.spark.batches`); the
pure side runs with the native core switched off (`core.use_pure`), so its
values come from binlake/values.py and their texts from spark/exact.py.
Batches must be equal one by one (same boundaries), and a file that fails
must fail the same way on both sides (error class, offset, row).
"""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow")

from binlake import core  # noqa: E402
from binlake.errors import BinlogError  # noqa: E402
from binlake.spark.batches import CHANGES, _native_change_batches, _python_change_batches  # noqa: E402
from binlake.spark.ranges import Split, is_binlog  # noqa: E402
from corpus.manifest import corpus_dir  # noqa: E402

native = core.native()
pytestmark = pytest.mark.skipif(native is None, reason="native core not built")


def corpus_binlogs() -> list[str]:
    root = corpus_dir()
    if not root.exists():  # said by the test, not skipped in silence
        return [f"<corpus missing: {root}>"]
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and p.name != "MANIFEST.md" and is_binlog(str(p)))


def read_batches(make, split: Split, options: dict):
    """(batches, error class and message) of one side."""
    batches = []
    try:
        for batch in make(split, options):
            batches.append(batch)
    except BinlogError as exc:
        # the two cores word a row's failure differently: the row and its offset must agree
        where = str(exc).split(": ")[:3]
        return batches, (type(exc).__name__, exc.offset, where)
    return batches, None


def pure_batches(split: Split, options: dict):
    core.use_pure(True)
    try:
        return read_batches(_python_change_batches, split, options)
    finally:
        core.use_pure(False)


def native_batches(split: Split, options: dict):
    return read_batches(lambda s, o: _native_change_batches(native, s, o), split, options)


def assert_same(path: str, options: dict) -> int:
    if path.startswith("<"):
        pytest.fail(f"binlog {path} (set BINLAKE_CORPUS)")
    split = Split(str(corpus_dir() / path), 1)
    expected, expected_error = pure_batches(split, options)
    got, got_error = native_batches(split, options)
    assert got_error == expected_error, path
    assert [b.num_rows for b in got] == [b.num_rows for b in expected], path
    for n, (a, b) in enumerate(zip(got, expected)):
        assert a.schema.equals(CHANGES)
        if not a.equals(b):
            for name in CHANGES.names:
                x, y = a.column(name), b.column(name)
                if not x.equals(y):
                    rows = [i for i in range(len(x)) if x[i] != y[i]][:3]
                    pytest.fail(f"{path} batch {n} column {name} rows {rows}: "
                                f"{[x[i].as_py() for i in rows]} != {[y[i].as_py() for i in rows]}")
    return sum(b.num_rows for b in got)


@pytest.mark.parametrize("path", corpus_binlogs())
def test_native_change_batches_equal_pure(path):
    assert_same(path, {})
