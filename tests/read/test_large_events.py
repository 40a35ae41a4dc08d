"""Huge rows events keep their row images in the file and are decoded through
a window: the values must be identical to the in-memory path."""

from __future__ import annotations

import pytest

import binlake
import binlake.read.events
from binlake.read import reader
from binlake.read.rows import LazyRowData

FILES = [
    "mysql-binlog-connector-java/mysql-bin.checksum-crc32",
    "rust_mysql_common/json.binlog.000001",
    "rust_mysql_common/mysql-enum-string-set.000001",
    "mariadb-10.11.19/std_data/mdev35643_mysql_80_binlog.000001",
    "canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000003",
]


@pytest.mark.parametrize("relpath", FILES)
def test_lazy_rows_equal_in_memory_rows(corpus, relpath, monkeypatch):
    path = corpus / relpath
    expected = list(binlake.changes(path))
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)  # forces refills and window growth
    lazy_events = [e for e in binlake.open(path)
                   if isinstance(getattr(e, "rows_data", None), LazyRowData)]
    assert lazy_events, "the test must exercise the lazy path"
    assert list(binlake.changes(path)) == expected


def test_lazy_rows_checksum_is_verified(corpus, tmp_path, monkeypatch):
    data = bytearray((corpus / FILES[0]).read_bytes())
    events = list(binlake.open(corpus / FILES[0]))
    victim = next(e for e in events if isinstance(e, binlake.read.events.RowsEvent)
                  and e.header.length > 100)
    data[victim.header.pos + 60] ^= 0xFF
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(data))
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    with pytest.raises(binlake.ChecksumMismatch) as info:
        list(binlake.open(path))
    assert info.value.offset == victim.header.pos


def _dump(path, *options) -> bytes:
    import io
    from binlake.cli.dispatch import main
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.StringIO()
    status = main(["dump", *options, str(path)], out=out, err=err)
    out.flush()
    return status, raw.getvalue(), err.getvalue()


DUMP_OPTIONS = [("--base64-output=decode-rows", "-v"), ("-vv",), (), ("--short-form",)]


@pytest.mark.parametrize("options", DUMP_OPTIONS, ids=" ".join)
@pytest.mark.parametrize("relpath", FILES)
def test_lazy_rows_dump_like_in_memory(corpus, relpath, options, monkeypatch):
    """A huge event's ### lines are printed window by window and its BINLOG
    block streamed from the file: the text is the in-memory path's."""
    path = corpus / relpath
    expected = _dump(path, *options)
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)
    from binlake.text import mysqlbinlog as text
    monkeypatch.setattr(text._Base64Chunks, "CHUNK", 57)
    monkeypatch.setattr(text._Spooled, "CHUNK", 7)
    assert _dump(path, *options) == expected


def test_lazy_rows_dump_of_corrupt_rows_like_in_memory(corpus, tmp_path, monkeypatch):
    """Rows the native printer refuses half-way through a huge event: nothing
    of the windows already printed shows, the reference prints the event."""
    from binlake.read.events import RowsEvent
    src = corpus / FILES[1]
    victim = max((e for e in binlake.open(src) if isinstance(e, RowsEvent)),
                 key=lambda e: e.header.length)
    data = bytearray(src.read_bytes())
    end = victim.header.pos + victim.header.length - (4 if victim.header.checksum is not None else 0)
    data[end - 8] ^= 0xFF  # a length in the last row: it runs past the end
    data[end - 9] ^= 0x80
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(data))
    for options in (("--base64-output=decode-rows", "-v"), ("-v",), ()):
        expected = _dump(path, "--no-verify-checksum", *options)
        assert "warning" in expected[2]
        with monkeypatch.context() as patch:
            patch.setattr(reader, "LARGE_EVENT_BYTES", 64)
            patch.setattr(LazyRowData, "WINDOW", 16)
            assert _dump(path, "--no-verify-checksum", *options) == expected
