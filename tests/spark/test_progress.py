"""binlake.spark.state.progress: the lock-free snapshot's progress as typed
records, their transitions, and the manifest's JSON of them checked."""

from __future__ import annotations

import pytest

from binlake.spark.state.manifest import Manifest
from binlake.spark.state.progress import (ChunkPlace, SnapshotProgress, TableProgress,
                                          snapshot_reading)

KEYED = TableProgress("db", "t", ("id",), 100)
KEYLESS = TableProgress("db", "bag", (), 100)


def test_a_round_moves_each_tables_bound_and_counts():
    progress = SnapshotProgress().with_tables([KEYED, KEYLESS])
    assert snapshot_reading(progress) == {"db.t", "db.bag"}
    place = ChunkPlace("binlog.000002", 900, "2026-01-01T00:00:00")
    after = progress.chunks_read([("db.t", ["100"], 100, place),
                                  ("db.bag", None, 7, place)])
    assert after.chunks == 2 and after.tables["db.t"].after == ["100"]
    assert not after.tables["db.t"].done and after.tables["db.bag"].done
    assert after.tables["db.t"].last_chunk == place and after.tables["db.t"].rows == 100
    assert snapshot_reading(after) == {"db.t"} and snapshot_reading(None) == set()
    assert progress.tables["db.t"].after is None  # immutable: a new record each step


def test_a_table_read_anew_starts_at_its_first_chunk_keyed_or_at_its_one_chunk():
    anew = SnapshotProgress().with_tables([
        TableProgress("db", "t", ("id",), 100, since=(1, 500)),
        TableProgress("db", "bag", (), 100, since=(1, 500))])
    first = ChunkPlace("binlog.000002", 900)
    later = ChunkPlace("binlog.000002", 5000)
    once = anew.chunks_read([("db.t", ["100"], 100, first),
                             ("db.bag", None, 7, first)])
    assert once.starts() == {"db.t": (2, 898), "db.bag": (2, 898)}
    twice = once.chunks_read([("db.t", None, 50, later)])
    assert twice.starts()["db.t"] == (2, 898)  # the first chunk's place, not the last's
    # a start the lake is already past stays where it is
    past = SnapshotProgress().with_tables([TableProgress("db", "t", ("id",), 100,
                                                         since=(3, 4))])
    assert past.chunks_read([("db.t", None, 1, first)]).starts() == {"db.t": (3, 4)}
    # no start for a new lake's tables: their rows are the lake's from its snapshot
    assert SnapshotProgress().with_tables([KEYED]).chunks_read(
        [("db.t", None, 1, first)]).starts() == {}


def test_a_rounds_chunks_read_side_by_side_start_and_end_the_table_by_their_places():
    """A round's chunks, in key order, were read in no order of place: the
    start is the earliest place, the last chunk the latest."""
    anew = SnapshotProgress().with_tables([TableProgress("db", "t", ("id",), 100,
                                                         since=(1, 500))])
    late, early = ChunkPlace("binlog.000002", 7000), ChunkPlace("binlog.000002", 900)
    round_ = anew.chunks_read([("db.t", ["100"], 100, late), ("db.t", ["200"], 100, early)])
    assert round_.starts() == {"db.t": (2, 898)}
    assert round_.tables["db.t"].last_chunk == late and round_.tables["db.t"].after == ["200"]
    again = round_.chunks_read([("db.t", None, 3, ChunkPlace("binlog.000002", 6000))])
    assert again.tables["db.t"].last_chunk == late and again.tables["db.t"].done


def test_the_manifest_keeps_the_json_lakes_have_and_refuses_another_shape():
    progress = SnapshotProgress().with_tables([TableProgress("db", "t", ("id",), 100,
                                                             since=(1, 5))]).chunks_read(
        [("db.t", [{"base64": "AAE="}], 100, ChunkPlace("b.000001", 9, None))])
    data = progress.to_json()
    assert data == {"chunks": 1, "tables": {"db.t": {
        "database": "db", "table": "t", "key": ["id"], "after": [{"base64": "AAE="}],
        "done": False, "rows": 100, "chunk_rows": 100, "since": [1, 7],
        "last_chunk": {"file": "b.000001", "pos": 9, "time": None}}}}
    manifest = Manifest().chunked(progress)
    assert Manifest.from_json(manifest.to_json()).chunks == progress
    for broken in ({"tables": {"db.t": {"database": "db"}}, "chunks": 0},
                   {"tables": [], "chunks": 0},
                   {"tables": {"db.t": dict(data["tables"]["db.t"], since=[1])}, "chunks": 1}):
        with pytest.raises(ValueError, match="lock-free snapshot progress"):
            Manifest.from_json(dict(manifest.to_json(), chunks=broken))
