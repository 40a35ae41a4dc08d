"""The native events view (`_native.EventsReader`) against the pure-Python batches.

The events view is the changes loop with a second consumer (rust/src/python/
events.rs): its batches, boundaries included, and every `info` JSON must be
those of `_python_event_batches` on the pure path, for every corpus file
(with `force` and without checksum verification too), ranges cut at
transaction boundaries, gzip inputs, huge events, server-written binlogs
and mutated files (the same batches before the error, then the same error:
class, offset and the first words of its reason).
"""

from __future__ import annotations

import gzip
import json
import random
import shutil

import pytest

pa = pytest.importorskip("pyarrow")

from binlake import core  # noqa: E402
from binlake.errors import BinlogError  # noqa: E402
from binlake.scan import scan  # noqa: E402
from binlake.spark.batches import EVENTS, _native_event_batches, _python_event_batches  # noqa: E402
from binlake.spark.ranges import Split  # noqa: E402
from differential.test_arrow_native import corpus_binlogs  # noqa: E402
from differential.test_changes_loop import (MUTATION_FILES, _mutations,  # noqa: E402
                                            _transaction_ranges, corpus_path)

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
        return outcome(_python_event_batches, split, options)
    finally:
        core.use_pure(False)


def loop(split: Split, options: dict):
    return outcome(lambda s, o: _native_event_batches(native, s, o), split, options)


#: Non-BinlogError exceptions of the reference on mutated input (its bugs,
#: in events/*.py): the native side must raise a BinlogError there instead.
REFERENCE_ESCAPES: list = []


def assert_same(split: Split, options: dict, what: str = "") -> int:
    expected, expected_error = pure(split, options)
    got, got_error = loop(split, options)
    what = what or f"{split} {options}"
    if expected_error is not None and expected_error[1] is None:
        # e.g. an IndexError of table_map.py's signedness bitmap on a short TLV
        assert got_error is not None and got_error[1] is not None, what
        REFERENCE_ESCAPES.append((what, expected_error[0], got_error))
        got = got[:len(expected)]
    else:
        assert got_error == expected_error, what
    assert [b.num_rows for b in got] == [b.num_rows for b in expected], what
    for n, (a, b) in enumerate(zip(got, expected)):
        assert a.schema.equals(EVENTS), what
        if not a.equals(b):
            for name in EVENTS.names:
                x, y = a.column(name), b.column(name)
                if not x.equals(y):
                    row = next(i for i in range(len(x)) if x[i] != y[i])
                    pytest.fail(f"{what}: batch {n} column {name} row {row} "
                                f"({b.column('type')[row]}): {x[row]} != {y[row]}")
    return sum(b.num_rows for b in got)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_corpus_files(relpath):
    split = Split(corpus_path(relpath), 3)
    for options in ({}, {"force": "true"}, {"verify_checksums": "false"}):
        assert_same(split, options)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_ranges_cut_at_transaction_boundaries(relpath):
    for split in _transaction_ranges(corpus_path(relpath)):
        assert_same(split, {})


def test_ranges_of_a_big_file_cover_it_once():
    path = corpus_path("mysql-binlog-connector-java/mysql-bin.checksum-crc32")
    ranges = _transaction_ranges(path, 5)
    assert len(ranges) > 2
    whole = assert_same(Split(path, 1), {})
    assert sum(assert_same(s, {}) for s in ranges) == whole


@pytest.mark.parametrize("batch_rows", [1, 7, 100])
def test_batches_are_cut_after_the_transaction_that_fills_one(batch_rows, monkeypatch):
    """A transaction is never split: a batch ends after the transaction that
    brings it to BATCH_ROWS (the native loop takes the Python constant)."""
    from binlake.spark import batches
    monkeypatch.setattr(batches, "BATCH_ROWS", batch_rows)
    for relpath in ("mysql-binlog-connector-java/mysql-bin.checksum-crc32",
                    "mariadb-10.11.19/std_data/mdev35643_mysql_80_binlog.000001"):
        path = corpus_path(relpath)
        assert assert_same(Split(path, 1), {}) > 0
        got, _ = loop(Split(path, 1), {})
        assert len(got) > 1 and all(b.num_rows >= batch_rows for b in got[:-1])


@pytest.mark.parametrize("relpath", MUTATION_FILES)
def test_mutated_files_fail_alike(relpath, tmp_path):
    source = corpus_path(relpath)
    data = open(source, "rb").read()
    positions = list(scan(source).positions)
    assert positions
    target = tmp_path / "mutated.bin"
    failures = 0
    for index in range(60):
        rng = random.Random(f"events-loop:{relpath}:{index}")
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
def test_huge_events(relpath, monkeypatch):
    from binlake import reader
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    assert assert_same(Split(corpus_path(relpath), 1), {}) > 0


def test_info_is_json_of_every_native_type():
    """The natively written `info` parses, and the types written natively are there."""
    path = corpus_path("mysql-binlog-connector-java/mysql-bin.checksum-crc32")
    got, error = loop(Split(path, 1), {})
    assert error is None
    types = set()
    for batch in got:
        for kind, info in zip(batch.column("type").to_pylist(), batch.column("info").to_pylist()):
            json.loads(info)
            types.add(kind)
    assert {"QUERY_EVENT", "TABLE_MAP_EVENT", "XID_EVENT"} <= types


@pytest.mark.server
def test_server_binlogs(server_binlogs):
    rows = 0
    for seq, path in enumerate(server_binlogs, 1):
        rows += assert_same(Split(path, seq), {})
        for split in _transaction_ranges(path):
            assert_same(split, {})
    assert rows


@pytest.mark.parametrize("relpath", ["mysql-8.0.40/std_data/binlog_recovery/ddl_in_transaction.000001",
                                     "mysql-binlog-connector-java/mysql-bin.checksum-crc32"])
def test_files_still_being_written(relpath, tmp_path):
    """A file with LOG_EVENT_BINLOG_IN_USE_F cut anywhere: the partial last
    event ends the range quietly and a transaction it cut off is left for a
    later read (the cut-off transaction is the range's last); the same cuts
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
