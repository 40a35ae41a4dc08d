"""The native changes loop (`_native.ChangesReader`) against the pure-Python batches.

What test_arrow_native.py does for whole corpus files with no options, here
for everything else the loop decides: `tables` filters, ranges cut at
transaction boundaries (as the Spark planner cuts them), `force`, gzip
inputs, huge events read through a window, server-written binlogs, and
mutated files (byte flips and truncations anywhere in a file, with and
without checksum verification): the same batches, boundaries included, or
the same error (class, offset, and the first words of its reason).
"""

from __future__ import annotations

import gzip
import random
import shutil

import pytest

pa = pytest.importorskip("pyarrow")

from binlake import core  # noqa: E402
from binlake.errors import BinlogError  # noqa: E402
from binlake.scan import scan  # noqa: E402
from binlake.spark.batches import CHANGES, _native_change_batches, _python_change_batches  # noqa: E402
from binlake.spark.ranges import Split  # noqa: E402
from corpus.manifest import corpus_dir  # noqa: E402
from differential.test_arrow_native import corpus_binlogs  # noqa: E402

native = core.native()
pytestmark = pytest.mark.skipif(native is None, reason="native core not built")


def outcome(make, split: Split, options: dict):
    """(batches, how it failed) of one side."""
    batches = []
    try:
        for batch in make(split, options):
            batches.append(batch)
    except BinlogError as exc:
        return batches, (type(exc).__name__, exc.offset, str(exc).split(": ")[:3])
    except Exception as exc:  # noqa: BLE001 - a pure-path escape must be seen, not hidden
        return batches, (type(exc).__name__, None, None)
    return batches, None


def pure(split: Split, options: dict):
    core.use_pure(True)
    try:
        return outcome(_python_change_batches, split, options)
    finally:
        core.use_pure(False)


def loop(split: Split, options: dict):
    return outcome(lambda s, o: _native_change_batches(native, s, o), split, options)


def assert_same(split: Split, options: dict, what: str = "") -> int:
    expected, expected_error = pure(split, options)
    got, got_error = loop(split, options)
    what = what or f"{split} {options}"
    assert got_error == expected_error, what
    assert [b.num_rows for b in got] == [b.num_rows for b in expected], what
    for n, (a, b) in enumerate(zip(got, expected)):
        assert a.schema.equals(CHANGES), what
        if not a.equals(b):
            for name in CHANGES.names:
                if not a.column(name).equals(b.column(name)):
                    pytest.fail(f"{what}: batch {n} column {name} differs")
    return sum(b.num_rows for b in got)


def corpus_path(relpath: str) -> str:
    if relpath.startswith("<"):
        pytest.fail(f"binlog {relpath} (set BINLAKE_CORPUS)")
    return str(corpus_dir() / relpath)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_tables_filter_and_force(relpath):
    split = Split(corpus_path(relpath), 3)
    for options in ({"tables": "*.t*, test.*"}, {"tables": "nomatch.*"}, {"force": "true"},
                    {"verify_checksums": "false"}):
        assert_same(split, options)


def _transaction_ranges(path: str, pieces: int = 3) -> list[Split]:
    result = scan(path)
    if result.framing is None or result.descriptions > 1 or len(result.boundaries) < 3:
        return []
    inner = [p for p in result.boundaries if p > 4]
    step = max(1, len(inner) // pieces)
    cuts = sorted(set(inner[step::step]))[:pieces - 1]
    edges = [4, *cuts, None]
    return [Split(path, 1, a, b) for a, b in zip(edges, edges[1:])]


@pytest.fixture(params=["one job", "a job per transaction"])
def job_bytes(request, monkeypatch):
    """Workers' outputs are re-cut into the sequential batches: with a job
    per transaction nearly every batch is made of several outputs."""
    from binlake.spark import batches
    if request.param != "one job":
        monkeypatch.setattr(batches, "NATIVE_JOB_BYTES", 1)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_tables_filter_and_force_in_small_jobs(relpath, monkeypatch):
    from binlake.spark import batches
    monkeypatch.setattr(batches, "NATIVE_JOB_BYTES", 1)
    split = Split(corpus_path(relpath), 3)
    for options in ({}, {"tables": "*.t*, test.*"}, {"force": "true"}):
        assert_same(split, options)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_ranges_cut_at_transaction_boundaries(relpath):
    path = corpus_path(relpath)
    for split in _transaction_ranges(path):
        assert_same(split, {})
        assert_same(split, {"tables": "*.*1*"})


def test_ranges_of_a_big_file_cover_it_once():
    path = corpus_path("mysql-binlog-connector-java/mysql-bin.checksum-crc32")
    ranges = _transaction_ranges(path, 5)
    assert len(ranges) > 2
    whole = assert_same(Split(path, 1), {})
    assert sum(assert_same(s, {}) for s in ranges) == whole


def _mutations(data: bytes, rng: random.Random, positions: list[int]) -> bytes:
    out = bytearray(data)
    kind = rng.random()
    if kind < 0.15:  # truncated anywhere
        return bytes(out[:rng.randrange(4, len(out))])
    for _ in range(rng.choice((1, 1, 2, 3))):
        pos = rng.choice(positions)
        nxt = next((p for p in positions if p > pos), len(out))
        at = rng.randrange(pos, nxt)
        if rng.random() < 0.3:
            out[at] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFB, 0xFC, 0xFE, 0xFF))
        else:
            out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


MUTATION_FILES = [
    "mysql-binlog-connector-java/mysql-bin.checksum-crc32",
    "rust_mysql_common/json.binlog.000001",
    "rust_mysql_common/mysql-enum-string-set.000001",
    "mariadb-10.11.19/std_data/mdev35643_mysql_80_binlog.000001",
    "canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000003",
]


@pytest.mark.parametrize("relpath", MUTATION_FILES)
def test_mutated_files_fail_alike(relpath, tmp_path, job_bytes):
    source = corpus_path(relpath)
    data = open(source, "rb").read()
    positions = list(scan(source).positions)
    assert positions
    target = tmp_path / "mutated.bin"
    failures = 0
    for index in range(60):
        rng = random.Random(f"changes-loop:{relpath}:{index}")
        target.write_bytes(_mutations(data, rng, positions))
        options = rng.choice(({}, {"verify_checksums": "false"},
                              {"verify_checksums": "false", "force": "true"}))
        split = Split(str(target), 1)
        _, error = pure(split, options)
        failures += error is not None
        assert_same(split, options, f"{relpath} mutation {index} {options}")
    assert failures, "the mutations must reach the error paths"


def test_gzip_input(tmp_path):
    source = corpus_path("mysql-binlog-connector-java/mysql-bin.checksum-crc32")
    target = tmp_path / "binlog.000007.gz"
    with open(source, "rb") as f, gzip.open(target, "wb") as g:
        shutil.copyfileobj(f, g)
    assert assert_same(Split(str(target), 7), {}) > 0


@pytest.mark.parametrize("relpath", MUTATION_FILES[:3])
def test_huge_events_through_a_window(relpath, monkeypatch, job_bytes):
    from binlake import reader
    from binlake.rows import LazyRowData
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)  # rows cut by the window: refills, growth
    assert assert_same(Split(corpus_path(relpath), 1), {}) > 0


@pytest.mark.server
def test_server_binlogs(server_binlogs, job_bytes):
    rows = 0
    for seq, path in enumerate(server_binlogs, 1):
        rows += assert_same(Split(path, seq), {})
        assert_same(Split(path, seq), {"tables": "*.ints,*.strings"})
        for split in _transaction_ranges(path):
            assert_same(split, {})
    assert rows


@pytest.mark.parametrize("relpath", ["mysql-8.0.40/std_data/binlog_recovery/ddl_in_transaction.000001",
                                     "mysql-binlog-connector-java/mysql-bin.checksum-crc32"])
def test_files_still_being_written(relpath, tmp_path, job_bytes):
    """A file with LOG_EVENT_BINLOG_IN_USE_F cut anywhere: the partial last
    event ends the range quietly and a transaction it cut off is left for a
    later read, as `read_split` and `_transactions` decide; the same cuts
    with the flag cleared are plain truncations."""
    data = bytearray(open(corpus_path(relpath), "rb").read())
    flags_at = 4 + 17
    target = tmp_path / "binlog.000001"
    for in_use in (True, False):
        marked = bytearray(data)
        if in_use:
            marked[flags_at] |= 1
        else:
            marked[flags_at] &= ~1
        for cut in range(len(marked) - 1, 100, -max(1, len(marked) // 40)):
            target.write_bytes(bytes(marked[:cut]))
            assert_same(Split(str(target), 1), {"verify_checksums": "false"},
                        f"{relpath} in_use={in_use} cut at {cut}")


def test_images_of_no_columns_end_with_an_error(tmp_path, job_bytes):
    """A columns-present bitmap zeroed: the images take no bytes, so the rows
    data left cannot be decoded (appending empty rows forever was the bug)."""
    import binlake
    from binlake.events import RowsEvent
    source = corpus_path("mysql-binlog-connector-java/mysql-bin.checksum-crc32")
    data = bytearray(open(source, "rb").read())
    event = next(e for e in binlake.open(source)
                 if isinstance(e, RowsEvent) and e.columns_present_after is None)
    width = (event.width + 7) // 8
    data[event.rows_offset - width:event.rows_offset] = bytes(width)
    target = tmp_path / "no-columns.bin"
    target.write_bytes(bytes(data))
    split = Split(str(target), 1)
    _, error = pure(split, {"verify_checksums": "false"})
    assert error is not None and error[0] == "CorruptEvent"
    assert_same(split, {"verify_checksums": "false"})
