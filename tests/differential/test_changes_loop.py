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


import pytest

pa = pytest.importorskip("pyarrow")

from binlake import core  # noqa: E402
from binlake.spark.read.batches import CHANGES, _native_change_batches, _python_change_batches  # noqa: E402
from binlake.spark.read.ranges import Split  # noqa: E402
from differential.loop_checks import (BEING_WRITTEN, MUTATION_FILES, View,  # noqa: E402
                                      check_file_still_being_written, check_gzip_input,
                                      check_mutations, check_ranges_cover_a_file_once,
                                      corpus_binlogs, corpus_path, transaction_ranges)

native = core.native()
pytestmark = pytest.mark.skipif(native is None, reason="native core not built")

VIEW = View(CHANGES, _python_change_batches, _native_change_batches)
pure, assert_same = VIEW.pure, VIEW.assert_same


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_tables_filter_and_force(relpath):
    split = Split(corpus_path(relpath), 3)
    for options in ({"tables": "*.t*, test.*"}, {"tables": "nomatch.*"}, {"force": "true"},
                    {"verify_checksums": "false"}):
        assert_same(split, options)


@pytest.fixture(params=["one job", "a job per transaction"])
def job_bytes(request, monkeypatch):
    """Workers' outputs are re-cut into the sequential batches: with a job
    per transaction nearly every batch is made of several outputs."""
    from binlake.spark.read import batches
    if request.param != "one job":
        monkeypatch.setattr(batches, "NATIVE_JOB_BYTES", 1)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_tables_filter_and_force_in_small_jobs(relpath, monkeypatch):
    from binlake.spark.read import batches
    monkeypatch.setattr(batches, "NATIVE_JOB_BYTES", 1)
    split = Split(corpus_path(relpath), 3)
    for options in ({}, {"tables": "*.t*, test.*"}, {"force": "true"}):
        assert_same(split, options)


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_ranges_cut_at_transaction_boundaries(relpath):
    path = corpus_path(relpath)
    for split in transaction_ranges(path):
        assert_same(split, {})
        assert_same(split, {"tables": "*.*1*"})


def test_ranges_of_a_big_file_cover_it_once():
    check_ranges_cover_a_file_once(VIEW)


@pytest.mark.parametrize("relpath", MUTATION_FILES)
def test_mutated_files_fail_alike(relpath, tmp_path, job_bytes):
    check_mutations(VIEW, relpath, tmp_path, "changes-loop")


def test_gzip_input(tmp_path):
    check_gzip_input(VIEW, tmp_path)


@pytest.mark.parametrize("relpath", MUTATION_FILES[:3])
def test_huge_events_through_a_window(relpath, monkeypatch, job_bytes):
    from binlake.read import reader
    from binlake.read.rows import LazyRowData
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)  # rows cut by the window: refills, growth
    assert assert_same(Split(corpus_path(relpath), 1), {}) > 0


@pytest.mark.server
def test_server_binlogs(server_binlogs, job_bytes):
    rows = 0
    for seq, path in enumerate(server_binlogs, 1):
        rows += assert_same(Split(path, seq), {})
        assert_same(Split(path, seq), {"tables": "*.ints,*.strings"})
        for split in transaction_ranges(path):
            assert_same(split, {})
    assert rows


@pytest.mark.parametrize("relpath", BEING_WRITTEN)
def test_files_still_being_written(relpath, tmp_path, job_bytes):
    check_file_still_being_written(VIEW, relpath, tmp_path)


def test_images_of_no_columns_end_with_an_error(tmp_path, job_bytes):
    """A columns-present bitmap zeroed: the images take no bytes, so the rows
    data left cannot be decoded (appending empty rows forever was the bug)."""
    import binlake
    from binlake.read.events import RowsEvent
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


def test_json_strings_that_are_not_utf8_fail_alike(tmp_path):
    """A JSON document whose key is not valid UTF-8 has no text in the view:
    both loops report its row corrupt (the pure one used to let pyarrow's
    UnicodeEncodeError escape)."""
    import struct
    import zlib
    data = bytearray(open(corpus_path("rust_mysql_common/json-opaque.binlog"), "rb").read())
    pos = 1197  # the rows event of {"d": 123.456}
    size = struct.unpack_from("<I", data, pos + 9)[0]
    key = data.rindex(b"d", pos, pos + size - 4)
    data[key] = 0xFF
    struct.pack_into("<I", data, pos + size - 4, zlib.crc32(bytes(data[pos:pos + size - 4])))
    path = tmp_path / "bad-json.binlog"
    path.write_bytes(bytes(data))
    split = Split(str(path), 3)
    for options in ({}, {"force": "true"}):
        assert_same(split, options)
    _, error = pure(split, {})
    assert error == ("CorruptEvent", 1228, [str(path), "offset 1228", "row 0 of foo.test"])
