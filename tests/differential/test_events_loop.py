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

import json

import pytest

pa = pytest.importorskip("pyarrow")

from binlake import core  # noqa: E402
from binlake.spark.read.batches import EVENTS, _native_event_batches, _python_event_batches  # noqa: E402
from binlake.spark.read.ranges import Split  # noqa: E402
from differential.loop_checks import (BEING_WRITTEN, MANY_TRANSACTIONS, MUTATION_FILES,  # noqa: E402
                                      View, check_file_still_being_written, check_gzip_input,
                                      check_mutations, check_ranges_cover_a_file_once,
                                      corpus_binlogs, corpus_path, transaction_ranges)

native = core.native()
pytestmark = pytest.mark.skipif(native is None, reason="native core not built")

VIEW = View(EVENTS, _python_event_batches, _native_event_batches)
pure, loop, assert_same = VIEW.pure, VIEW.loop, VIEW.assert_same


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_corpus_files(relpath):
    split = Split(corpus_path(relpath), 3)
    for options in ({}, {"force": "true"}, {"verify_checksums": "false"}):
        assert_same(split, options)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_ranges_cut_at_transaction_boundaries(relpath):
    for split in transaction_ranges(corpus_path(relpath)):
        assert_same(split, {})


def test_ranges_of_a_big_file_cover_it_once():
    check_ranges_cover_a_file_once(VIEW)


@pytest.mark.parametrize("batch_rows", [1, 7, 100])
def test_batches_are_cut_after_the_transaction_that_fills_one(batch_rows, monkeypatch):
    """A transaction is never split: a batch ends after the transaction that
    brings it to BATCH_ROWS (the native loop takes the Python constant)."""
    from binlake.spark.read import batches
    monkeypatch.setattr(batches, "BATCH_ROWS", batch_rows)
    for relpath in (MANY_TRANSACTIONS,
                    "mariadb-10.11.19/std_data/mdev35643_mysql_80_binlog.000001"):
        path = corpus_path(relpath)
        assert assert_same(Split(path, 1), {}) > 0
        got, _ = loop(Split(path, 1), {})
        assert len(got) > 1 and all(b.num_rows >= batch_rows for b in got[:-1])


@pytest.mark.parametrize("relpath", MUTATION_FILES)
def test_mutated_files_fail_alike(relpath, tmp_path):
    check_mutations(VIEW, relpath, tmp_path, "events-loop")


def test_gzip_input(tmp_path):
    check_gzip_input(VIEW, tmp_path)


@pytest.mark.parametrize("relpath", MUTATION_FILES[:3])
def test_huge_events(relpath, monkeypatch):
    from binlake.read import reader
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    assert assert_same(Split(corpus_path(relpath), 1), {}) > 0


def test_info_is_json_of_every_native_type():
    """The natively written `info` parses, and the types written natively are there."""
    path = corpus_path(MANY_TRANSACTIONS)
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
        for split in transaction_ranges(path):
            assert_same(split, {})
    assert rows


@pytest.mark.parametrize("relpath", BEING_WRITTEN)
def test_files_still_being_written(relpath, tmp_path):
    check_file_still_being_written(VIEW, relpath, tmp_path)
