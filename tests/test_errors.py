"""Bad input: a clear error naming file, offset and reason, after every good
event before it, and nothing already read is lost."""

from __future__ import annotations

import gzip
import io
import json

import pytest

import binlake
from binlake import ChecksumMismatch, CorruptEvent, NotABinlog, PartialEvent, TruncatedEvent
from binlake.cli.dispatch import main

SAMPLE = "mysql-binlog-connector-java/mysql-bin.checksum-crc32"  # 303 CRC32 events


def _read_all(path):
    events, error = [], None
    try:
        for event in binlake.open(path):
            events.append(event)
    except binlake.BinlogError as exc:
        error = exc
    return events, error


@pytest.fixture(scope="module")
def sample_bytes(corpus):
    return (corpus / SAMPLE).read_bytes()


def test_truncation_anywhere_keeps_every_whole_event(tmp_path, sample_bytes):
    good, _ = _read_all_bytes(tmp_path, sample_bytes)
    boundaries = [e.header.pos for e in good]
    for cut in range(5, len(sample_bytes), 97):
        events, error = _read_all_bytes(tmp_path, sample_bytes[:cut])
        whole = [p for p in boundaries if good[boundaries.index(p)].header.next_pos <= cut]
        assert [e.header.pos for e in events] == whole
        if cut in boundaries:
            assert error is None
        else:
            assert isinstance(error, TruncatedEvent)
            assert not isinstance(error, PartialEvent)  # this file was closed cleanly
            assert error.offset == (whole and good[len(whole) - 1].header.next_pos or 4)


def _read_all_bytes(tmp_path, data):
    path = tmp_path / "cut.bin"
    path.write_bytes(data)
    return _read_all(path)


def test_checksum_mismatch_is_reported_at_its_event(tmp_path, sample_bytes):
    good, _ = _read_all_bytes(tmp_path, sample_bytes)
    victim = good[10]
    data = bytearray(sample_bytes)
    data[victim.header.pos + 20] ^= 0xFF
    events, error = _read_all_bytes(tmp_path, bytes(data))
    assert isinstance(error, ChecksumMismatch)
    assert error.offset == victim.header.pos
    assert len(events) == 10
    # --force-read: keep going, the problem is recorded
    reader = binlake.open(tmp_path / "cut.bin", force=True)
    assert len(list(reader)) == len(good)
    assert any("CRC32" in w for w in reader.stats.warnings)


def test_bad_magic(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"hello world")
    events, error = _read_all(path)
    assert events == [] and isinstance(error, NotABinlog) and error.offset == 0


def test_event_length_smaller_than_header(tmp_path, sample_bytes):
    good, _ = _read_all_bytes(tmp_path, sample_bytes)
    data = bytearray(sample_bytes)
    pos = good[3].header.pos
    data[pos + 9:pos + 13] = (5).to_bytes(4, "little")
    events, error = _read_all_bytes(tmp_path, bytes(data))
    assert isinstance(error, CorruptEvent) and error.offset == pos and len(events) == 3


def test_in_use_file_reports_partial_last_event(corpus):
    events, error = _read_all(corpus / "mysql-5.5.62/std_data/bug11747416_32228_binlog.000001")
    assert isinstance(error, PartialEvent) and error.offset == 316
    assert "still being written" in str(error) or "still had this file open" in str(error)
    assert len(events) > 0


def test_cli_prints_every_event_then_the_error(tmp_path, sample_bytes):
    good, _ = _read_all_bytes(tmp_path, sample_bytes)
    cut = good[20].header.pos + 7
    path = tmp_path / "cut.bin"
    path.write_bytes(sample_bytes[:cut])
    out, err = io.StringIO(), io.StringIO()
    status = main(["dump", "--format", "json", str(path)], out, err)
    assert status == 1
    lines = out.getvalue().splitlines()
    assert len(lines) == 20
    assert json.loads(lines[-1])["next_pos"] == good[20].header.pos
    assert err.getvalue().startswith(f"{path}: offset {good[20].header.pos}: ")


def test_unknown_event_type_is_kept_raw_and_counted(tmp_path, sample_bytes):
    import struct
    import zlib

    from binlake.read.events import UnknownEvent
    good, _ = _read_all_bytes(tmp_path, sample_bytes)
    victim = next(e for e in good if e.type_name == "XID_EVENT")
    pos, length = victim.header.pos, victim.header.length
    data = bytearray(sample_bytes)
    data[pos + 4] = 200  # a type code no server has used
    data[pos + length - 4:pos + length] = struct.pack("<I", zlib.crc32(bytes(data[pos:pos + length - 4])))
    path = tmp_path / "unknown.bin"
    path.write_bytes(bytes(data))
    reader = binlake.open(path)
    events = list(reader)
    assert len(events) == len(good)
    unknown = [e for e in events if isinstance(e, UnknownEvent)]
    assert len(unknown) == 1 and unknown[0].header.pos == pos
    assert unknown[0].raw == bytes(sample_bytes[pos + 19:pos + length - 4])
    assert reader.stats.undecoded == {"UNKNOWN_EVENT_200": 1}


def _gzip_cases(sample_bytes):
    whole = gzip.compress(sample_bytes)
    bad_method = bytearray(whole)
    bad_method[2] = 0xFE  # not deflate: gzip's "Unknown compression method"
    damaged = bytearray(whole)
    damaged[len(whole) // 2] ^= 0xFF
    return {"cut": (whole[:len(whole) // 2], TruncatedEvent),
            "not deflate": (bytes(bad_method), CorruptEvent),
            "damaged": (bytes(damaged), binlake.BinlogError)}


@pytest.mark.parametrize("case", ["cut", "not deflate", "damaged"])
def test_a_damaged_gzip_binlog_is_a_binlog_error_after_every_whole_event(tmp_path, sample_bytes,
                                                                        case):
    data, kind = _gzip_cases(sample_bytes)[case]
    path = tmp_path / "binlog.000001.gz"
    path.write_bytes(data)
    good, _ = _read_all_bytes(tmp_path, sample_bytes)
    events, error = _read_all(path)
    assert isinstance(error, kind), error
    assert str(path) in str(error)
    assert [e.header.pos for e in events] == [e.header.pos for e in good[:len(events)]]
    for entry in (["dump", "-vv"], ["sql"], ["events"]):
        err = io.StringIO()
        assert main([*entry, str(path)], out=io.StringIO(), err=err) == 1
        assert str(path) in err.getvalue().strip().splitlines()[-1], (entry, err.getvalue())
    with pytest.raises(binlake.BinlogError):
        list(binlake.changes(path))
