"""binlake.read.scan: the header walk agrees with the reader, and its boundaries are safe starts.

A boundary is only useful if decoding can start there knowing nothing but
the format description: for every real binlog, reading from (a sample of)
its boundaries must give exactly the events a full read gives from there,
row values included.
"""
from __future__ import annotations

import json
import random

import pytest

from binlake import BinlogError, BinlogReader
from binlake.text.jsonable import event_to_dict
from binlake.read.scan import BEGIN, END, OTHER, classify_query, scan

from corpus.manifest import corpus_dir


def corpus_files():
    root = corpus_dir()
    if not root.exists():
        return []
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and p.name != "MANIFEST.md")


def reader_events(path: str, start: int | None = None, limit: int | None = None) -> list:
    """(pos, event as JSON with rows) until the end, the first error or `limit` events."""
    out = []
    try:
        for event in BinlogReader([path], start_position=start, schema=False):
            if start is not None and event.header.pos < start:
                continue
            if limit is not None and len(out) == limit:
                break
            try:
                text = json.dumps(event_to_dict(event), default=str)
            except BinlogError as exc:
                text = f"rows error: {exc.detail}"
            out.append((event.header.pos, text))
    except BinlogError as exc:
        out.append((None, type(exc).__name__))
    return out


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.split("binlogs/")[-1])
def test_scan_sees_the_events_the_reader_reads(path):
    result = scan(path)
    events = []
    try:
        for event in BinlogReader([path]):
            if not events or events[-1][0] != event.header.pos:  # payload inner events share it
                events.append((event.header.pos, event.header.type_code, event.header.timestamp))
    except BinlogError:
        pass
    walked = list(zip(result.positions, result.types, result.timestamps))
    assert walked[:len(events)] == events
    assert result.closed_end <= result.end <= result.size
    assert list(result.boundaries) == sorted(set(result.boundaries))


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.split("binlogs/")[-1])
def test_reading_from_any_boundary_equals_the_full_read_from_there(path):
    result = scan(path)
    if result.framing is None or path.endswith(".gz"):
        return
    full = reader_events(path)
    boundaries = [b for b in result.boundaries if b > 4]
    random.Random(path).shuffle(boundaries)
    for start in boundaries[:12]:
        # The transactions right after the start are what a wrong start would break.
        expected = [e for e in full if e[0] is None or e[0] >= start][:200]
        assert reader_events(path, start, limit=200) == expected, start


def test_classify_query():
    assert classify_query("BEGIN") == BEGIN
    assert classify_query(b"XA START X'31',X'',1") == BEGIN
    assert classify_query("COMMIT") == END
    assert classify_query("ROLLBACK") == END
    assert classify_query("XA COMMIT X'31',X'',1") == END
    assert classify_query("ROLLBACK TO SAVEPOINT a") == OTHER
    assert classify_query("BEGIN NOT ATOMIC SELECT 1; END") == OTHER
    assert classify_query("COMMIT_LOG_TABLE_CREATE") == OTHER
    assert classify_query("CREATE TABLE t (i INT)") == OTHER


def test_a_file_cut_mid_event_ends_at_its_last_whole_transaction(tmp_path):
    path = corpus_dir() / "mysql-binlog-connector-java" / "mysql-bin.checksum-crc32"
    if not path.exists():
        pytest.skip("corpus file missing")
    data = path.read_bytes()
    whole = scan(path)
    assert whole.closed_end == whole.end == len(data)
    for cut in (len(data) // 3, len(data) // 2 + 5, len(data) - 1):
        prefix = tmp_path / "cut.000001"
        prefix.write_bytes(data[:cut])
        part = scan(prefix)
        assert part.end <= cut and part.closed_end <= part.end
        assert part.closed_end in list(whole.boundaries) + [whole.end]
        assert list(part.boundaries) == [b for b in whole.boundaries if b < part.end]
        # Resuming from a boundary continues the same walk.
        resumed = scan(path, start=part.closed_end)
        assert list(resumed.boundaries) == [b for b in whole.boundaries if b >= part.closed_end]


def test_a_gtid_starts_a_transaction_even_when_the_last_never_ended():
    path = corpus_dir() / "mysql-8.0.40" / "std_data" / "binlog_recovery" / "ddl_in_transaction.000001"
    if not path.exists():
        pytest.skip("corpus file missing")
    result = scan(path)
    gtids = [p for p, t in zip(result.positions, result.types) if t == 33]
    assert set(gtids) <= set(result.boundaries)
    assert len(gtids) == 3


def test_split_points_are_boundaries_about_that_far_apart():
    path = corpus_dir() / "mariadb-10.11.19" / "std_data" / "mdev6020-mysql-bin.000001"
    if not path.exists():
        pytest.skip("corpus file missing")
    result = scan(path)
    points = result.split_points(10_000)
    assert len(points) > 20
    assert set(points) <= set(result.boundaries)
    assert all(b - a >= 10_000 for a, b in zip(points, points[1:]))
