"""Delta tables kept by MERGE (`binlake.spark.commits.delta`): a run's net changes
per key applied once, whatever was committed before a kill."""
from __future__ import annotations

import json

import pytest

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")
pc = pytest.importorskip("pyarrow.compute")

from binlake.spark.commits.delta import (DELETED, committed_run,  # noqa: E402
                                         merge_net_changes, through_of)


def net(rows: list[tuple], deleted: list[bool], names=("id", "name")):
    columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    return pa.table({**columns, DELETED: deleted})


def rows(dicts: list[dict]) -> list[str]:
    """Rows in an order of their own, as a table has none."""
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in dicts)


def state(uri) -> list[str]:
    return rows(deltalake.DeltaTable(str(uri)).to_pyarrow_table().to_pylist())


def test_a_first_run_creates_then_merges_replace_delete_and_insert(tmp_path):
    uri = str(tmp_path / "db.t")
    first = net([(1, "a"), (2, "b"), (3, "gone")], [False, False, True])
    assert merge_net_changes(uri, "db.t", first, ["id"], run=1, through={"b.1": 100}) == "created"
    assert state(uri) == rows([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    second = net([(1, "A"), (2, None), (4, "d"), (5, "never there")], [False, True, False, True])
    assert merge_net_changes(uri, "db.t", second, ["id"], run=2, through={"b.1": 200}) == "merged"
    assert state(uri) == rows([{"id": 1, "name": "A"}, {"id": 4, "name": "d"}])
    assert committed_run(uri, "db.t") == 2 and through_of(uri) == {"b.1": 200}


def test_a_run_committed_before_a_kill_is_not_applied_twice(tmp_path):
    uri = str(tmp_path / "db.t")
    merge_net_changes(uri, "db.t", net([(1, "a")], [False]), ["id"], run=1, through={})
    again = net([(1, "b"), (2, "c")], [False, False])
    assert merge_net_changes(uri, "db.t", again, ["id"], run=2, through={"f": 2}) == "merged"
    version = deltalake.DeltaTable(uri).version()
    # the rerun after a kill that came after this table's commit
    assert merge_net_changes(uri, "db.t", again, ["id"], run=2, through={"f": 2}) == "already"
    assert deltalake.DeltaTable(uri).version() == version
    assert committed_run(uri, "db.other") is None


def test_keys_of_any_name_and_composite_keys(tmp_path):
    uri = str(tmp_path / "db.odd")
    names = ("order", "my `col`", "value")
    first = [(1, "x", "a"), (1, "y", "b"), (2, "x", "c")]
    merge_net_changes(uri, "db.odd", net(first, [False] * 3, names), ["order", "my `col`"],
                      run=1, through={})
    change = net([(1, "y", "B"), (2, "x", None)], [False, True], names)
    merge_net_changes(uri, "db.odd", change, ["order", "my `col`"], run=2, through={})
    assert state(uri) == rows([{"order": 1, "my `col`": "x", "value": "a"},
                          {"order": 1, "my `col`": "y", "value": "B"}])


def test_a_table_without_a_key_is_refused():
    with pytest.raises(ValueError, match="primary key"):
        merge_net_changes("unused", "db.t", net([(1, "a")], [False]), [], run=1, through={})


def test_a_column_added_since_the_last_run_is_added_to_the_table(tmp_path):
    uri = str(tmp_path / "db.t")
    merge_net_changes(uri, "db.t", net([(1, "a"), (2, "b")], [False, False]), ["id"], run=1,
                      through={})
    wider = net([(2, "B", 7), (3, "c", 8)], [False, False], ("id", "name", "added"))
    merge_net_changes(uri, "db.t", wider, ["id"], run=2, through={})
    assert state(uri) == rows([{"id": 1, "name": "a", "added": None},
                          {"id": 2, "name": "B", "added": 7},
                          {"id": 3, "name": "c", "added": 8}])


def test_files_written_elsewhere_become_the_whole_table_in_one_commit(tmp_path):
    import pyarrow.parquet as pq

    from binlake.spark.commits.delta import commit_table, read_table
    uri = tmp_path / "db.t"
    uri.mkdir()
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=schema), uri / "part-1.parquet")
    commit_table(str(uri), "db.t", ["part-1.parquet"], schema, run=1, through={"f": 1})
    assert rows(read_table(str(uri)).to_pylist()) == rows([{"id": 1, "name": "a"},
                                                           {"id": 2, "name": "b"}])
    pq.write_table(pa.table({"id": [3], "name": ["c"]}, schema=schema), uri / "part-2.parquet")
    pq.write_table(pa.table({"id": [9], "name": ["never committed"]}, schema=schema),
                   uri / "part-3.parquet")
    commit_table(str(uri), "db.t", ["part-2.parquet"], schema, run=2, through={"f": 2})
    assert read_table(str(uri)).to_pylist() == [{"id": 3, "name": "c"}]
    assert committed_run(str(uri), "db.t") == 2 and through_of(str(uri)) == {"f": 2}
    # time travel: the first commit's rows are still there
    first = deltalake.DeltaTable(str(uri), version=1).to_pyarrow_table().to_pylist()
    assert rows(first) == rows([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])


def stage(table, uri, partition_by: tuple, run: int) -> list[str]:
    """`table` written into `uri` as a run stages it: a file per value of
    the partition column, in its folder, without the column."""
    import pyarrow.parquet as pq

    from binlake.spark.commits.delta import partition_folder
    if not partition_by:
        pq.write_table(table, uri / f"part-{run}.parquet")
        return [f"part-{run}.parquet"]
    column, = partition_by
    names = []
    for value in set(table.column(column).to_pylist()):
        name = f"{partition_folder(column, value)}/part-{run}.parquet"
        (uri / name).parent.mkdir(exist_ok=True)
        mine = table.filter(pc.equal(table[column], value))
        pq.write_table(mine.drop_columns([column]), uri / name)
        names.append(name)
    return names


def test_a_partitioned_table_keeps_each_value_in_its_folder_and_reads_it_back(tmp_path):
    """Files in their partition's folder (the column in no file, NULL as
    Hive's default partition) are read back with their values; a MERGE
    moves a row to another partition; another partitioning, or none,
    writes the rows again under it with the table's versions kept."""
    import datetime as dt

    import pyarrow.parquet as pq

    from binlake.spark.commits.delta import commit_table, partition_folder, read_table
    uri = tmp_path / "db.t"
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("n", pa.int32())])
    names = []
    for day, ids in [(dt.date(2024, 1, 2), [1, 2]), (None, [3])]:
        folder = uri / partition_folder("day", day)
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": ids, "n": pa.array(ids, pa.int32())}),
                       folder / "part.parquet")
        names.append(f"{partition_folder('day', day)}/part.parquet")
    commit_table(str(uri), "db.t", names, schema, run=1, through={}, partition_by=("day",))
    expected = [{"id": 1, "day": dt.date(2024, 1, 2), "n": 1},
                {"id": 2, "day": dt.date(2024, 1, 2), "n": 2}, {"id": 3, "day": None, "n": 3}]
    assert deltalake.DeltaTable(str(uri)).metadata().partition_columns == ["day"]
    assert rows(read_table(str(uri)).to_pylist()) == rows(expected) == state(uri)
    moved = pa.table({"id": [2], "day": [dt.date(2024, 5, 1)], "n": pa.array([20], pa.int32()),
                      DELETED: [False]})
    merge_net_changes(str(uri), "db.t", moved, ["id"], run=2, through={})
    expected[1] = {"id": 2, "day": dt.date(2024, 5, 1), "n": 20}
    assert rows(read_table(str(uri)).to_pylist()) == rows(expected) == state(uri)
    # Partitioned by another column, then by none: the same rows each time.
    for run, partition_by in [(3, ("n",)), (4, ())]:
        staged = stage(read_table(str(uri)), uri, partition_by, run)
        commit_table(str(uri), "db.t", staged, schema, run=run, through={},
                     partition_by=partition_by)
        assert deltalake.DeltaTable(str(uri)).metadata().partition_columns == list(partition_by)
        assert rows(read_table(str(uri)).to_pylist()) == rows(expected) == state(uri)
        assert not any((uri / name).exists() for name in staged)  # written again: in no version
    assert committed_run(str(uri), "db.t") == 4


def test_a_datetime_column_added_later_gets_its_table_feature(tmp_path):
    import datetime as dt

    import pyarrow.parquet as pq

    from binlake.spark.commits.delta import commit_table, read_table
    uri = tmp_path / "db.t"
    uri.mkdir()
    plain = pa.schema([("id", pa.int64())])
    pq.write_table(pa.table({"id": [1]}, schema=plain), uri / "part-1.parquet")
    commit_table(str(uri), "db.t", ["part-1.parquet"], plain, run=1, through={})
    wider = pa.schema([("id", pa.int64()), ("at", pa.timestamp("us"))])  # DATETIME: no zone
    when = dt.datetime(2024, 2, 29, 12, 30)
    pq.write_table(pa.table({"id": [1], "at": [when]}, schema=wider), uri / "part-2.parquet")
    commit_table(str(uri), "db.t", ["part-2.parquet"], wider, run=2, through={})
    assert read_table(str(uri)).to_pylist() == [{"id": 1, "at": when}]


def test_committed_files_carry_statistics_and_every_commit_feeds_changes(tmp_path):
    """Readers and MERGE skip files by their min/max; a downstream job reads
    each version's changes (the change data feed)."""
    import datetime as dt

    import pyarrow.parquet as pq

    from binlake.spark.commits.delta import STATS_TEXT_CHARS, commit_table

    uri = tmp_path / "db.t"
    uri.mkdir()
    long_text = "x" * (STATS_TEXT_CHARS + 1)
    rows = pa.table({"id": pa.array([3, 1, None], pa.int64()), "name": ["b", "a", long_text],
                     "day": [dt.date(2024, 1, 2), dt.date(2023, 5, 6), None],
                     "ratio": [0.5, float("nan"), 1.0],
                     "unsigned": pa.array([5, 7, None], pa.decimal128(20, 0)),
                     "huge": pa.array([1, 2**60, 3], pa.decimal128(20, 0))})
    pq.write_table(rows, uri / "part-1.parquet")
    commit_table(str(uri), "db.t", ["part-1.parquet"], rows.schema, run=1, through={})
    actions = pa.table(deltalake.DeltaTable(str(uri)).get_add_actions(flatten=True)).to_pylist()
    (action,) = actions
    assert action["num_records"] == 3
    assert (action["min.id"], action["max.id"], action["null_count.id"]) == (1, 3, 1)
    assert (action["min.day"], action["max.day"]) == (dt.date(2023, 5, 6), dt.date(2024, 1, 2))
    assert action.get("min.name") is None  # the longest text is past what stats carry
    assert action.get("min.ratio") is None  # a NaN has no place in a range
    assert (action["min.unsigned"], action["max.unsigned"]) == (5, 7)  # BIGINT UNSIGNED
    assert action.get("max.huge") is None  # past what a JSON number holds exactly
    assert deltalake.DeltaTable(str(uri)).metadata().configuration[
        "delta.enableChangeDataFeed"] == "true"
    more = pa.table({"id": pa.array([3], pa.int64()), "name": ["B"],
                     "day": pa.array([None], pa.date32()), "ratio": [2.0],
                     "unsigned": pa.array([None], pa.decimal128(20, 0)),
                     "huge": pa.array([None], pa.decimal128(20, 0)),
                     DELETED: [False]})
    merge_net_changes(str(uri), "db.t", more, ["id"], run=2, through={})
    feed = pa.table(deltalake.DeltaTable(str(uri)).load_cdf(starting_version=2).read_all()).to_pylist()
    changes = sorted((row["_change_type"], row["id"], row["name"]) for row in feed)
    assert changes == [("update_postimage", 3, "B"), ("update_preimage", 3, "b")]


def test_a_merge_reads_only_the_files_its_keys_bounds_overlap(tmp_path):
    import pyarrow.parquet as pq

    from binlake.spark.commits.delta import commit_table, key_bounds

    uri = tmp_path / "db.t"
    uri.mkdir()
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    names = []
    for n in range(4):  # four files of 100 keys each
        pq.write_table(pa.table({"id": list(range(n * 100, n * 100 + 100)),
                                 "name": ["x"] * 100}, schema), uri / f"part-{n}.parquet")
        names.append(f"part-{n}.parquet")
    commit_table(str(uri), "db.t", names, schema, run=1, through={})
    change = net([(150, "y"), (160, None)], [False, True])
    bounds = key_bounds(change.select(["id"]))
    assert bounds == {"id": (150, 160)}
    merge_net_changes(str(uri), "db.t", change, ["id"], run=2, through={}, bounds=bounds)
    (metrics,) = [h["operationMetrics"] for h in deltalake.DeltaTable(str(uri)).history(1)]
    assert (metrics["num_target_files_scanned"], metrics["num_target_files_skipped_during_scan"]) \
        == (1, 3)
    rows = deltalake.DeltaTable(str(uri)).to_pyarrow_table()
    assert rows.num_rows == 399 and ("y" in rows.column("name").to_pylist())
    assert key_bounds(pa.table({"k": ["b'", "a"], "f": [1.5, 2.5]})) == {"k": ("a", "b'")}
    more = net([(1000, "z")], [False])  # beyond every file's range: no file read
    merge_net_changes(str(uri), "db.t", more, ["id"], run=3, through={},
                      bounds=key_bounds(more.select(["id"])))
    assert deltalake.DeltaTable(str(uri)).history(1)[0]["operation"] == "WRITE"


def test_net_changes_beyond_every_held_key_are_appended_not_merged(tmp_path):
    from binlake.spark.commits.delta import key_bounds
    uri = str(tmp_path / "db.t")
    merge_net_changes(uri, "db.t", net([(1, "a"), (2, "b")], [False, False]), ["id"], run=1,
                      through={})
    # New keys: one inserted and deleted within the run, one with a column
    # the table does not have yet.
    more = pa.table({"id": [3, 4, 5], "name": ["c", "d", None], "extra": [None, None, 7],
                     DELETED: [False, True, False]})
    assert merge_net_changes(uri, "db.t", more.to_reader(), ["id"], run=2, through={"f": 2},
                             bounds=key_bounds(more.select(["id"]))) == "appended"
    assert state(uri) == rows([{"id": 1, "name": "a", "extra": None},
                               {"id": 2, "name": "b", "extra": None},
                               {"id": 3, "name": "c", "extra": None},
                               {"id": 5, "name": None, "extra": 7}])
    table = deltalake.DeltaTable(uri)
    assert table.history(1)[0]["operation"] == "WRITE"
    assert committed_run(uri, "db.t") == 2 and through_of(uri) == {"f": 2}
    feed = pa.table(table.load_cdf(starting_version=table.version()).read_all()).to_pylist()
    assert sorted((row["_change_type"], row["id"]) for row in feed) == [("insert", 3),
                                                                       ("insert", 5)]
    # Keys within the held range: a MERGE.
    within = net([(2, "B"), (9, "i")], [False, False])
    assert merge_net_changes(uri, "db.t", within, ["id"], run=3, through={},
                             bounds=key_bounds(within.select(["id"]))) == "merged"
    assert {"id": 2, "name": "B", "extra": None} in deltalake.DeltaTable(uri).to_pyarrow_table().to_pylist()


def test_an_unsigned_key_past_exact_statistics_is_merged(tmp_path):
    """delta-rs clamps a DECIMAL's statistics past 2^63: such a range says
    nothing, so keys beyond it may still be held."""
    import decimal

    from binlake.spark.commits.delta import key_bounds
    uri = str(tmp_path / "db.t")
    top = 2**64 - 1

    def unsigned(key: int, name: str):
        return pa.table({"id": pa.array([decimal.Decimal(key)], pa.decimal128(20, 0)),
                         "name": [name], DELETED: [False]})
    merge_net_changes(uri, "db.t", unsigned(top, "a"), ["id"], run=1, through={})
    again = unsigned(top, "b")
    bounds = key_bounds(again.select(["id"]))
    assert bounds == {"id": (top, top)}
    assert merge_net_changes(uri, "db.t", again, ["id"], run=2, through={},
                             bounds=bounds) == "merged"
    assert state(uri) == rows([{"id": decimal.Decimal(top), "name": "b"}])



def test_a_table_made_before_the_change_data_feed_gets_it_at_its_next_merge(tmp_path):
    uri = str(tmp_path / "db.t")
    deltalake.write_deltalake(uri, pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    assert "delta.enableChangeDataFeed" not in deltalake.DeltaTable(uri).metadata().configuration
    merge_net_changes(uri, "db.t", net([(1, "b")], [False]), ["id"], run=1, through={})
    table = deltalake.DeltaTable(uri)
    assert table.metadata().configuration["delta.enableChangeDataFeed"] == "true"
    feed = pa.table(table.load_cdf(starting_version=table.version()).read_all()).to_pylist()
    assert sorted(row["_change_type"] for row in feed) == ["update_postimage", "update_preimage"]


def test_keep_versions_bounds_the_log_and_the_files_a_vacuum_keeps(tmp_path):
    """--keep-versions: a table committed often keeps its log entries and
    removed files that long (its checkpoints clean the log, the vacuum
    after each run the files), not a week."""
    import os
    import time
    from binlake.spark.commits.delta import table_properties
    from binlake.spark.commits.delta_upkeep import after_run
    uri = str(tmp_path / "db.t")
    properties = dict(table_properties(1), **{"delta.checkpointInterval": "5"})
    vacuumed = 0
    for run in range(1, 13):
        merge_net_changes(uri, "db.t", net([(1, f"v{run}")], [False]), ["id"], run=run,
                          through={}, properties=properties)
        vacuumed += after_run(uri, every=60, keep=1)["vacuumed"]  # (one lite vacuum)
        if run in (4, 8):
            time.sleep(2)  # the versions before outlive the window
    config = deltalake.DeltaTable(uri).metadata().configuration
    assert config["delta.logRetentionDuration"] == "interval 1 seconds"
    assert config["delta.deletedFileRetentionDuration"] == "interval 1 seconds"
    log = os.listdir(os.path.join(uri, "_delta_log"))
    assert "00000000000000000000.json" not in log  # cleaned at a checkpoint
    assert vacuumed >= 4  # the files only old versions named
    # past the window, only the files of the current version are left, though
    # the checkpoints dropped the remove actions a lite vacuum reads
    time.sleep(1.1)
    after_run(uri, every=60, keep=1)
    live = {os.path.basename(u) for u in deltalake.DeltaTable(uri).file_uris()}
    assert {n for n in os.listdir(uri) if n.endswith(".parquet")} == live
    assert state(uri) == rows([{"id": 1, "name": "v12"}])
    # a later commit without the choice leaves it as it is
    merge_net_changes(uri, "db.t", net([(2, "b")], [False]), ["id"], run=13, through={})
    assert deltalake.DeltaTable(uri).metadata().configuration[
        "delta.logRetentionDuration"] == "interval 1 seconds"


def test_files_delta_rs_writes_carry_statistics_of_every_column(tmp_path):
    """A table binlake creates asks for statistics of all its columns
    (`delta.dataSkippingNumIndexedCols` -1): delta-rs's default is the
    first 32, and a MERGE or a reader skips files by the others too."""
    from binlake.spark.commits.delta import add_actions
    uri = str(tmp_path / "db.wide")
    names = tuple(f"c{i}" for i in range(40))
    first = [tuple(row * 100 + i for i in range(40)) for row in (1, 2)]
    merge_net_changes(uri, "db.wide", net(first, [False, False], names), ["c0"], run=1,
                      through={})
    later = [tuple(row * 100 + i for i in range(40)) for row in (2, 3)]
    merge_net_changes(uri, "db.wide", net(later, [False, False], names), ["c0"], run=2,
                      through={})
    table = deltalake.DeltaTable(uri)
    assert table.metadata().configuration["delta.dataSkippingNumIndexedCols"] == "-1"
    files = add_actions(table)
    assert files.num_rows and "min.c39" in files.column_names
    assert None not in files.column("min.c39").to_pylist() + files.column("max.c39").to_pylist()
    assert min(files.column("min.c39").to_pylist()) == 139
    assert max(files.column("max.c39").to_pylist()) == 339


class FsyncLog:
    """os.fsync recorded: the paths synced, in order, each with whether the
    table's next log entry (`entry`) existed at that moment."""

    def __init__(self, monkeypatch, entry=None):
        import os
        self.synced, self.entry, self._fsync = [], entry, os.fsync
        monkeypatch.setattr(os, "fsync", self)

    def __call__(self, fd):
        import os
        path = os.readlink(f"/proc/self/fd/{fd}")
        self.synced.append((path, self.entry is not None and os.path.exists(self.entry)))
        return self._fsync(fd)

    def paths(self) -> list:
        return [path for path, _ in self.synced]


def named_files(uri: str, version: int) -> list:
    """The data files a table's log entry `version` adds, as full paths."""
    from urllib.parse import unquote
    entry = f"{uri}/_delta_log/{version:020d}.json"
    with open(entry) as lines:
        actions = [json.loads(line) for line in lines if line.strip()]
    return [f"{uri}/{unquote(a['add']['path'])}" for a in actions if "add" in a]


def test_files_handed_to_a_commit_are_synced_before_the_log_entry_that_names_them(
        tmp_path, monkeypatch):
    """commit_table's files (Spark's, moved into the table) are fsynced with
    their folders before delta-rs writes the entry naming them; the entry
    and _delta_log/ after it."""
    import os

    import pyarrow.parquet as pq

    from binlake.spark.commits.delta import commit_table, partition_folder
    uri = str(tmp_path / "db.t")
    schema = pa.schema([("id", pa.int64()), ("day", pa.int32())])
    commit_table(uri, "db.t", [], schema, run=1, through={},  # version 0, then an empty one
                 partition_by=("day",))
    folder = os.path.join(uri, partition_folder("day", 3))  # a folder new to the table
    os.makedirs(folder)
    pq.write_table(pa.table({"id": [1]}), os.path.join(folder, "part-1.parquet"))
    version = deltalake.DeltaTable(uri).version() + 1
    entry = f"{uri}/_delta_log/{version:020d}.json"
    log = FsyncLog(monkeypatch, entry)
    commit_table(uri, "db.t", ["day=3/part-1.parquet"], schema, run=2, through={},
                 mode="append", partition_by=("day",))
    assert named_files(uri, version) == [os.path.join(folder, "part-1.parquet")]
    before_entry = {path for path, entry_there in log.synced if not entry_there}
    assert {os.path.join(folder, "part-1.parquet"), folder, uri} <= before_entry
    assert entry in log.paths() and f"{uri}/_delta_log" in log.paths()
    assert log.paths().count(os.path.join(folder, "part-1.parquet")) == 1  # not again after


def test_files_delta_rs_writes_in_a_merge_are_synced_with_its_log_entry(tmp_path, monkeypatch):
    """A MERGE's files and entry are written by delta-rs in one call: each
    file it names, and then the entry, is fsynced before the merge returns."""
    uri = str(tmp_path / "db.t")
    merge_net_changes(uri, "db.t", net([(1, "a"), (2, "b")], [False, False]), ["id"], run=1,
                      through={})
    log = FsyncLog(monkeypatch)
    merge_net_changes(uri, "db.t", net([(2, "B"), (3, "c")], [False, False]), ["id"], run=2,
                      through={})
    version = deltalake.DeltaTable(uri).version()
    synced = log.paths()
    entry = f"{uri}/_delta_log/{version:020d}.json"
    assert named_files(uri, version) and entry in synced
    for path in named_files(uri, version):
        assert synced.index(path) < synced.index(entry), path


def test_the_newest_version_is_found_without_listing_the_log(tmp_path, monkeypatch):
    """A follower's table gains a log entry a second, kept a month by
    default: a commit finds the newest by stats from the one it saw last,
    and fsyncs a checkpoint a commit wrote with `_last_checkpoint`."""
    import os

    from binlake.spark.commits import delta_sync
    uri = str(tmp_path / "db.t")
    properties = {"delta.checkpointInterval": "3"}
    merge_net_changes(uri, "db.t", net([(1, "a")], [False]), ["id"], run=1, through={},
                      properties=properties)
    assert deltalake.DeltaTable(uri).version() < 2  # (no checkpoint yet)
    listed = []
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path=".": listed.append(path) or real(path))
    log = FsyncLog(monkeypatch)
    for run in range(2, 6):
        merge_net_changes(uri, "db.t", net([(run, "b")], [False]), ["id"], run=run,
                          through={}, properties=properties)
    assert not [path for path in listed if path.endswith("_delta_log")]
    assert delta_sync.latest_version(uri) == deltalake.DeltaTable(uri).version()
    checkpoints = [f"{uri}/_delta_log/{name}" for name in real(f"{uri}/_delta_log")
                   if ".checkpoint." in name]
    assert checkpoints
    for checkpoint in checkpoints:
        assert checkpoint in log.paths()
    assert f"{uri}/_delta_log/_last_checkpoint" in log.paths()


def test_a_follower_spreads_its_first_vacuums_over_the_interval(tmp_path, monkeypatch):
    """A one-run process lite-vacuums each table it commits to; a follower
    (spread_vacuums) counts a table first seen as vacuumed at a random
    point of the last interval, so that 1,000 tables are not all vacuumed
    in its first micro-batches."""
    from binlake.spark.commits import delta_upkeep
    vacuums = []
    real = deltalake.DeltaTable.vacuum
    monkeypatch.setattr(deltalake.DeltaTable, "vacuum",
                        lambda self, *a, **k: vacuums.append(self) or real(self, *a, **k))
    monkeypatch.setattr(delta_upkeep, "_vacuumed", {})
    monkeypatch.setattr(delta_upkeep, "_spread", False)
    uris = [str(tmp_path / f"db.t{n}") for n in range(2)]
    for uri in uris:
        merge_net_changes(uri, "db.t", net([(1, "a")], [False]), ["id"], run=1, through={})
    delta_upkeep.after_run(uris[0], every=60)
    assert len(vacuums) == 1  # one run: vacuumed
    delta_upkeep.spread_vacuums(True)
    monkeypatch.setattr(delta_upkeep.random, "uniform", lambda low, high: (low + high) / 2)
    now = delta_upkeep.time.monotonic()
    delta_upkeep.after_run(uris[1], every=60)
    assert len(vacuums) == 1  # first seen by a follower: counted as vacuumed 30 s ago
    monkeypatch.setattr(delta_upkeep.time, "monotonic", lambda: now + 31)
    delta_upkeep.after_run(uris[1], every=60)
    assert len(vacuums) == 2


def test_a_table_committed_often_is_compacted_by_tiers_not_rewritten_whole(tmp_path,
                                                                          monkeypatch):
    """A follower appends a small file to a table at every commit. Its
    compaction merges files of like size (tiers: small files into files of
    the first bound, those into the next...), so the files stay few and
    a row is rewritten a few times, not at every 16th commit as when the
    table was compacted whole (the bytes written grew with the square of
    the table)."""
    import os
    import random
    from binlake.spark.commits import delta_upkeep
    monkeypatch.setattr(delta_upkeep, "TIER_BYTES", (8 << 10, 64 << 10, 512 << 10, 4 << 20))
    monkeypatch.setattr(delta_upkeep, "COMPACT_AT_FILES", 4)
    rewritten = []
    compact = deltalake.table.TableOptimizer.compact

    def counted(self, *args, **kwargs):
        found = compact(self, *args, **kwargs)
        rewritten.append(json.loads(found["filesAdded"])["totalSize"])
        return found
    monkeypatch.setattr(deltalake.table.TableOptimizer, "compact", counted)
    uri = str(tmp_path / "db.t")
    draw = random.Random(48)
    for run in range(1, 301):
        merge_net_changes(uri, "db.t", net([(run * 10 + i, draw.randbytes(60).hex())
                                            for i in range(10)], [False] * 10),
                          ["id"], run=run, through={})
        delta_upkeep.after_run(uri, every=3600)
    sizes = [os.path.getsize(u) for u in deltalake.DeltaTable(uri).file_uris()]
    # each tier holds at most COMPACT_AT_FILES files after a run
    for low, high in zip((0, *delta_upkeep.TIER_BYTES), delta_upkeep.TIER_BYTES):
        assert sum(low < size <= high for size in sizes) <= 4, sizes
    # a row rewritten about once per tier, and a few times in the small one
    # (compacted whole at every 5th file: 37 times)
    assert 0 < sum(rewritten) < 8 * sum(sizes), (sum(rewritten), sizes)
    assert len(state(uri)) == 3000
