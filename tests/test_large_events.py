"""Huge rows events keep their row images in the file and are decoded through
a window: the values must be identical to the in-memory path."""

from __future__ import annotations

import pytest

import binlake
import binlake.events
from binlake import reader
from binlake.rows import LazyRowData

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
    victim = next(e for e in events if isinstance(e, binlake.events.RowsEvent)
                  and e.header.length > 100)
    data[victim.header.pos + 60] ^= 0xFF
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(data))
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    with pytest.raises(binlake.ChecksumMismatch) as info:
        list(binlake.open(path))
    assert info.value.offset == victim.header.pos
