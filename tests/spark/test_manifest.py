"""The lake's manifest (binlake.spark.state.manifest): its transitions, its JSON
(lakes written before the typed record read the same), its one writer."""
from __future__ import annotations

import json
import os

import pytest

from binlake.spark.state.manifest import (FORMAT, FileRead, Held, Manifest, SnapshotFloor, TablesState,
                                    read_manifest, write_manifest)

#: A manifest as runs before the typed record wrote it: one selection for the
#: lake (`tables_selected`), files without their per-selection holdings,
#: pending runs keyed by text, tables mid-rebuild.
OLD = {
    "format": 1,
    "files": {"binlog.000001": {"file_seq": 1, "path": "/b/binlog.000001", "end": 900,
                                "fingerprint": "0badf00d", "next": "binlog.000002"},
              "binlog.000002": {"file_seq": 2, "path": "/b/binlog.000002", "end": 400,
                                "fingerprint": "0badf00d"}},
    "layouts": {"db.t": {"order": [1, 4], "layout": {"database": "db", "table": "t"}}},
    "pending": {"2": ["database=db/table=t/date=2024-01-01/part-0.parquet"]},
    "run": 2,
    "tables": {"rebuilding": True},
    "tables_selected": ["db.*"],
    "temporals": "text",
}


def test_a_manifest_of_earlier_runs_reads_as_it_was_written():
    manifest = Manifest.from_json(OLD)
    assert manifest.files["binlog.000001"] == FileRead(1, "/b/binlog.000001", 900, "0badf00d",
                                                       "binlog.000002")
    assert manifest.pending == {2: ("database=db/table=t/date=2024-01-01/part-0.parquet",)}
    assert manifest.tables.mixed and manifest.temporals == "text" and not manifest.history
    # The lake's one selection holds every file it read, through its end.
    assert manifest.holds("binlog.000002", ["other.*"]) == (Held(("db.*",), 400),)
    again = Manifest.from_json(json.loads(json.dumps(manifest.to_json())))
    assert again == manifest


def test_a_run_reads_stages_and_builds_in_explicit_steps(tmp_path):
    manifest = Manifest().choosing("typed", history=True)
    read = FileRead(1, "/b/binlog.000001", 500, "cafe0000")
    manifest = manifest.reading({"binlog.000001": manifest.read_for("binlog.000001", read,
                                                                    ["db.a"])}, {})
    manifest = manifest.staging(["database=db/table=a/date=2024-01-01/p.parquet"])
    assert manifest.run == 1 and manifest.runs_after(0) == (1,)
    assert manifest.pending_after(0) == ["database=db/table=a/date=2024-01-01/p.parquet"]
    assert manifest.pending_after(1) == []
    # The file read further, now for db.b too: what changes/ held is kept.
    further = FileRead(1, "/b/binlog.000001", 800, "cafe0000")
    entry = manifest.read_for("binlog.000001", further, ["db.b"])
    assert entry.held == (Held(("db.a",), 500), Held(("db.b",), 800))
    assert manifest.read_for("binlog.000001", further, ["db.a"]).held == (Held(("db.a",), 800),)
    manifest = manifest.reading({"binlog.000001": entry}, {}).staging(["p2.parquet"])
    assert manifest.through() == {"binlog.000001": 800}
    mixed = manifest.tables_mixed({"db.a": "day"})
    assert mixed.tables == TablesState(partition_by={"db.a": "day"}, mixed=True)
    assert Manifest.from_json(mixed.to_json()) == mixed
    built = manifest.tables_built(TablesState({"binlog.000001": 800}, {"db.a": "sig"},
                                              history=True))
    assert built.pending == {} and built.run == 2 and not built.tables.mixed
    assert Manifest.from_json(built.to_json()) == built


def test_a_snapshot_starts_a_lake_only():
    floor = SnapshotFloor("binlog.000003", 1234, 3, "0-1-77", "2024-05-01T00:00:00")
    manifest = Manifest().from_snapshot(floor)
    assert Manifest.from_json(manifest.to_json()).snapshot == floor
    with pytest.raises(ValueError, match="starts a lake"):
        manifest.from_snapshot(floor)


def test_each_server_after_a_failover_has_its_floor():
    first = SnapshotFloor("binlog.000003", 900, 3, gtid="0-1-9")
    moved = SnapshotFloor("failover1~binlog.000001", 330, (1 << 32) + 1, gtid="0-1-20")
    manifest = Manifest().from_snapshot(first).failed_over(moved)
    assert manifest.floor_of(7) == first and manifest.floor_of((1 << 32) + 5) == moved
    assert manifest.floor_of((2 << 32) + 1) is None
    assert Manifest.from_json(json.loads(json.dumps(manifest.to_json()))) == manifest
    with pytest.raises(ValueError, match="already goes on"):
        manifest.failed_over(moved)


def test_the_manifest_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    path = str(tmp_path / "manifest.json")
    assert read_manifest(path, "lake") == Manifest()
    first = Manifest.from_json(OLD)
    write_manifest(path, first)
    assert read_manifest(path, "lake") == first

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full_disk)  # the new file's bytes not on disk
    with pytest.raises(OSError):
        write_manifest(path, first.staging(["p.parquet"]))
    monkeypatch.undo()
    assert read_manifest(path, "lake") == first  # the old state, whole
    assert os.listdir(tmp_path) == ["manifest.json"]  # no partial file left


def test_a_manifest_of_another_format_is_refused(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"format": FORMAT + 1, "files": {}}))
    with pytest.raises(ValueError, match=f"manifest format {FORMAT + 1} is not {FORMAT}"):
        read_manifest(str(path), "lake")


def test_keep_versions_is_a_choice_later_runs_keep():
    chosen = Manifest().choosing("typed", False, 600.0)
    assert Manifest.from_json(chosen.to_json()).keep_versions == 600.0
    assert chosen.choosing("typed", False).keep_versions == 600.0  # a run that does not say
    assert chosen.choosing("typed", False, 60.0).keep_versions == 60.0
    assert "keep_versions" not in Manifest().to_json()
