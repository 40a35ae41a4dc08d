"""binlake.live.backup without a server: events checked as they arrive
(lengths, CRC32s, chunks cut anywhere), the fsync timer, the IN_USE flag
cleared on disk; the CLI's choice of the next binlog by number and its
refusal of options a copy cannot honour."""
from __future__ import annotations

import io
import os
import time
from pathlib import Path

import pytest

import binlake
from binlake.cli.dispatch import main
from binlake.errors import ChecksumMismatch
from binlake.live import backup
from binlake.live.backup import IN_USE_AT, ArrivalCheck, BackupManifest, CopyWriter, resume_point
from binlake.spark.read.ranges import name_sequence

SAMPLE = Path(binlake.__file__).parent / "sample_data" / "binlog.000001"


@pytest.mark.parametrize("chunk", [1, 7, 19, 100, 4096, 1 << 20])
def test_events_cut_anywhere_are_written_whole_and_intact(chunk):
    data = SAMPLE.read_bytes()
    check, written = ArrivalCheck("binlog.000001"), bytearray()
    for start in range(0, len(data), chunk):
        offset, whole = check.whole(start, data[start:start + chunk])
        if whole:
            assert offset == len(written)
            written += whole
    assert bytes(written) == data


def test_an_event_damaged_on_the_way_is_refused_before_it_is_written():
    data = bytearray(SAMPLE.read_bytes())
    damaged = len(data) // 2
    data[damaged] ^= 0x01
    check = ArrivalCheck("binlog.000001")
    with pytest.raises(ChecksumMismatch) as refused:
        for start in range(0, len(data), 512):
            check.whole(start, bytes(data[start:start + 512]))
    assert refused.value.file == "binlog.000001" and refused.value.offset <= damaged


def test_a_write_is_fsynced_within_a_second_with_nothing_after_it(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(backup.os, "fsync", lambda fd: (synced.append(time.monotonic()),
                                                        real(fd)))
    writer = CopyWriter(str(tmp_path / "binlog.000001"), 0)
    try:
        written = time.monotonic()
        writer.write(SAMPLE.read_bytes()[:4096])
        deadline = written + 1.5
        while not synced and time.monotonic() < deadline:
            time.sleep(0.05)
        assert synced and synced[0] - written <= 1.0
    finally:
        writer.close()


def test_the_in_use_flag_is_set_while_written_and_cleared_on_disk_at_the_close(tmp_path):
    data = SAMPLE.read_bytes()
    path = tmp_path / "binlog.000001"
    writer = CopyWriter(str(path), 0)
    writer.write(data)
    assert path.read_bytes()[IN_USE_AT] & 1
    writer.closed_by_server()
    writer.close()
    assert path.read_bytes() == data


def test_a_backup_continues_with_its_last_copy_by_number(tmp_path):
    """The manifest's copies compare by number (.999999 before .1000000),
    and a run continues at the end of the last one's whole part."""
    prefix = str(tmp_path) + "/"
    manifest = BackupManifest(prefix)
    data = SAMPLE.read_bytes()
    for name in ("binlog.999999", "binlog.1000000"):
        (tmp_path / name).write_bytes(data + b"\x00" * 7)  # a torn tail after the whole part
        manifest.record(name, 4, closed=False)
    again = BackupManifest(prefix)
    assert resume_point(prefix, "binlog.999999", 4, again, name_sequence) == (
        "binlog.1000000", len(data), len(data))


def test_old_copies_removed_are_forgotten_and_the_backup_goes_on_after_them(tmp_path):
    """Copies rotated away (closed ones whose files are gone) are not copied
    again: the next run continues with the last copy there, and the
    manifest forgets them (it holds what the folder holds)."""
    prefix = str(tmp_path) + "/"
    manifest = BackupManifest(prefix)
    data = SAMPLE.read_bytes()
    names = [f"binlog.00000{n}" for n in range(1, 5)]
    for name in names:
        (tmp_path / name).write_bytes(data)
        manifest.record(name, len(data), closed=name != names[-1])
    for name in names[:2]:
        os.remove(tmp_path / name)
    again = BackupManifest(prefix)
    assert resume_point(prefix, names[0], 4, again, name_sequence) == (
        names[-1], len(data), len(data))
    assert sorted(BackupManifest(prefix).copies) == names[2:]


def test_a_backup_whose_copies_were_all_removed_goes_on_with_the_next_binlog(tmp_path):
    prefix = str(tmp_path) + "/"
    manifest = BackupManifest(prefix)
    for name in ("binlog.000008", "binlog.000009"):
        manifest.record(name, 1000, closed=True)     # copied whole, then moved away
    assert resume_point(prefix, "binlog.000001", 4, BackupManifest(prefix), name_sequence) == (
        "binlog.000010", 4, 0)
    assert BackupManifest(prefix).copies == {}


def test_the_manifest_appends_a_line_per_change_and_nothing_for_no_change(tmp_path):
    prefix = str(tmp_path) + "/"
    manifest = BackupManifest(prefix)
    manifest.identify({"server_id": 1, "server_uuid": None})   # a new backup: its snapshot
    snapshot = (tmp_path / ".binlake-backup.json").read_bytes()
    for _ in range(3):
        manifest.record("binlog.000001", 500, closed=False)
    manifest.record("binlog.000001", 700, closed=False)
    journal = (tmp_path / ".binlake-backup.journal").read_text().splitlines()
    assert len(journal) == 2                                   # appended, not rewritten
    assert (tmp_path / ".binlake-backup.json").read_bytes() == snapshot
    again = BackupManifest(prefix)
    assert again.copies == {"binlog.000001": {"end": 700, "closed": False}}
    assert again.server == {"server_id": 1, "server_uuid": None}


def test_a_torn_journal_line_ends_the_journal_and_a_full_one_is_folded(tmp_path, monkeypatch):
    prefix = str(tmp_path) + "/"
    manifest = BackupManifest(prefix)
    manifest.identify({"server_id": 1, "server_uuid": None})
    manifest.record("binlog.000001", 500, closed=False)
    with open(tmp_path / ".binlake-backup.journal", "ab") as journal:
        journal.write(b'{"copy": "binlog.000001", "end": 9')   # a kill mid-line
    again = BackupManifest(prefix)
    assert again.copies == {"binlog.000001": {"end": 500, "closed": False}}
    again.record("binlog.000001", 800, closed=True)
    assert BackupManifest(prefix).copies == {"binlog.000001": {"end": 800, "closed": True}}
    monkeypatch.setattr(BackupManifest, "JOURNAL_LINES", 5)
    folded = BackupManifest(prefix)
    for end in range(900, 920):
        folded.record("binlog.000002", end, closed=False)
    assert len((tmp_path / ".binlake-backup.journal").read_text().splitlines()) <= 5
    assert BackupManifest(prefix).copies["binlog.000002"] == {"end": 919, "closed": False}


def test_a_kill_between_the_snapshot_and_emptying_the_journal_replays_nothing_twice(tmp_path):
    prefix = str(tmp_path) + "/"
    manifest = BackupManifest(prefix)
    manifest.identify({"server_id": 1, "server_uuid": None})
    manifest.record("binlog.000001", 500, closed=False)
    kept = (tmp_path / ".binlake-backup.journal").read_bytes()
    manifest.record("binlog.000001", 600, closed=False)
    manifest._snapshot()                                       # folded...
    (tmp_path / ".binlake-backup.journal").write_bytes(kept)   # ...but not emptied: the kill
    assert BackupManifest(prefix).copies == {"binlog.000001": {"end": 600, "closed": False}}


def test_a_backup_of_another_server_is_refused(tmp_path):
    manifest = BackupManifest(str(tmp_path) + "/")
    manifest.identify({"server_id": 1, "server_uuid": None})
    with pytest.raises(ValueError, match="server_id 1, and this server's is 2"):
        BackupManifest(str(tmp_path) + "/").identify({"server_id": 2, "server_uuid": None})


@pytest.mark.parametrize("option", [["--stop-position", "900"], ["--database", "shop"],
                                    ["--start-gtid", "0-1-5"],
                                    ["--stop-datetime", "2030-01-01 00:00:00"],
                                    ["--start-position", "900"],
                                    ["--exclude-gtids", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"]])
def test_options_a_copy_cannot_honour_are_refused_in_one_line(option, tmp_path):
    err = io.StringIO()
    status = main(["dump", "-R", "-h", "127.0.0.1", "-P", "1", "--raw", "-r", f"{tmp_path}/",
                   *option, "binlog.000001"], io.StringIO(), err)
    assert status == 2
    assert err.getvalue().count("\n") == 1 and option[0] in err.getvalue()
    assert os.listdir(tmp_path) == []  # nothing connected to, nothing written


def test_a_copy_begun_after_the_last_recorded_one_is_kept_not_written_anew(tmp_path):
    """Killed after the server's ROTATE began the next copy but before its
    first fsync was recorded: the backup goes on at that copy's whole part
    (a reader beside the copier may have read it), not from its start."""
    prefix = str(tmp_path) + "/"
    manifest = BackupManifest(prefix)
    data = SAMPLE.read_bytes()
    (tmp_path / "binlog.000001").write_bytes(data)
    manifest.record("binlog.000001", len(data), closed=True)
    second = (SAMPLE.parent / "binlog.000002").read_bytes()[:-40]    # the open copy, unrecorded
    (tmp_path / "binlog.000002").write_bytes(second + b"\x00" * 5)   # and a torn tail
    assert resume_point(prefix, "binlog.000001", 4, BackupManifest(prefix), name_sequence)[0] \
        == "binlog.000002"
    name, position, keep = resume_point(prefix, "binlog.000001", 4, BackupManifest(prefix),
                                        name_sequence)
    assert 4 < keep == position <= len(second)
