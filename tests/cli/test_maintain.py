"""`binlake maintain`: a lake's Delta tables compacted and vacuumed, never
beside a pipeline run (binlake.spark.commits.delta_upkeep.maintain)."""
from __future__ import annotations

import fcntl
import io
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyspark")

import pyarrow.parquet as pq  # noqa: E402

from binlake.cli.dispatch import main  # noqa: E402
from binlake.spark.commits.delta import commit_table, read_table  # noqa: E402
from binlake.spark.commits.delta_upkeep import maintain  # noqa: E402


def lake_of_small_files(out: Path, commits: int) -> Path:
    """A lake whose one table took `commits` appends, a file each, and holds
    a file no commit names (what a run killed before its commit leaves)."""
    table = out / "tables" / "db.t"
    table.mkdir(parents=True)
    (out / "_binlake").mkdir()
    for run in range(1, commits + 1):
        rows = pa.table({"id": pa.array([run], pa.int64())})
        pq.write_table(rows, table / f"part-{run}.parquet")
        commit_table(str(table), "db.t", [f"part-{run}.parquet"], rows.schema, run=run,
                     through={}, mode="append")
    pq.write_table(pa.table({"id": pa.array([99], pa.int64())}), table / "part-orphan.parquet")
    return table


def parquet_files(table: Path) -> set:
    return {p.name for p in table.glob("*.parquet")}


def test_a_table_of_many_small_files_is_compacted_and_the_rest_vacuumed(tmp_path):
    table = lake_of_small_files(tmp_path / "lake", 3)
    out, err = io.StringIO(), io.StringIO()
    assert main(["maintain", "--out", str(tmp_path / "lake"), "--retention-hours", "0"],
                out, err) == 0, err.getvalue()
    assert out.getvalue() == "db.t: 3 files compacted, 4 files deleted\n"
    assert len(parquet_files(table)) == 1  # the compacted one
    assert sorted(read_table(str(table)).column("id").to_pylist()) == [1, 2, 3]


def test_a_run_leaves_few_files_alone_and_old_versions_readable(tmp_path):
    table = lake_of_small_files(tmp_path / "lake", 2)
    assert maintain(str(table)) == {"compacted": 0, "vacuumed": 0}  # a week's retention
    assert parquet_files(table) == {"part-1.parquet", "part-2.parquet", "part-orphan.parquet"}


def test_maintenance_beside_a_run_is_refused(tmp_path):
    lake = tmp_path / "lake"
    lake_of_small_files(lake, 2)
    with open(lake / "_binlake" / "lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        err = io.StringIO()
        assert main(["maintain", "--out", str(lake)], io.StringIO(), err) == 1
    assert "another binlake pipeline run is using this lake" in err.getvalue()
    err = io.StringIO()
    assert main(["maintain", "--out", str(tmp_path / "none")], io.StringIO(), err) == 1
    assert err.getvalue().startswith("binlake maintain: ") and "no tables" in err.getvalue()


KILLS = 6  #: in a full sweep (tests/sweeps.py)
MAINTAIN = """
import sys
import deltalake  # loaded before "ready": the moments drawn are the maintenance's
from binlake.spark.commits.delta_upkeep import maintain
print("ready", flush=True)
maintain(sys.argv[1], compact=True, retention_hours=0)
"""


def test_maintenance_killed_at_random_moments_leaves_the_rows_as_they_were(tmp_path):
    """Compaction is one commit and vacuum deletes only what no version
    holds: a SIGKILL at any moment of it leaves the table's rows, and the
    next maintenance finishes the work."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import sweeps

    timing = lake_of_small_files(tmp_path / "timing", 20)
    started = time.perf_counter()
    maintain(str(timing), compact=True, retention_hours=0)
    takes = time.perf_counter() - started
    rng = sweeps.generator(29)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    for trial in range(sweeps.trials(KILLS)):
        table = lake_of_small_files(tmp_path / f"lake{trial}", 20)
        rows = sorted(read_table(str(table)).column("id").to_pylist())
        process = subprocess.Popen([sys.executable, "-c", MAINTAIN, str(table)], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert process.stdout.readline() == "ready\n"
        time.sleep(rng.uniform(0, 2 * takes))  # a moment of the maintenance, or just after
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert sorted(read_table(str(table)).column("id").to_pylist()) == rows
        maintain(str(table), compact=True, retention_hours=0)
        assert sorted(read_table(str(table)).column("id").to_pylist()) == rows
        assert len(parquet_files(table)) == 1


def test_a_run_vacuums_only_what_its_log_removed_and_maintain_vacuums_whole(tmp_path,
                                                                             monkeypatch):
    """A run's vacuum is lite (the files its log removed, past the
    retention): the version its merge replaced stays readable, even where
    that version's file was written long ago, and a file no commit names
    is left to `binlake maintain`, whose vacuum is full."""
    import os
    import shutil
    import time
    from urllib.parse import unquote

    from binlake.cli.commands.pipeline import sample_dir
    from binlake.spark.run.pipeline import run_pipeline
    from binlake.spark.run.session import LazySession

    def no_spark():
        raise AssertionError("the sample's runs need no Spark session")
    modes = []
    vacuum = deltalake.DeltaTable.vacuum

    def recorded(self, *args, **kwargs):
        modes.append(kwargs.get("full", False))
        return vacuum(self, *args, **kwargs)
    monkeypatch.setattr(deltalake.DeltaTable, "vacuum", recorded)
    incoming, lake = tmp_path / "incoming", tmp_path / "lake"
    incoming.mkdir()
    shutil.copy(os.path.join(sample_dir(), "binlog.000001"), incoming)
    options = {"temporals": "text"}
    run_pipeline(LazySession(no_spark, "local[2]"), [str(incoming)], str(lake), **options)
    tables = lake / "tables"
    weeks_ago = time.time() - 10 * 24 * 3600  # written long ago, removed just now
    for path in tables.rglob("*.parquet"):
        os.utime(path, (weeks_ago, weeks_ago))
    orphan = sorted(tables.iterdir())[0] / "part-never-committed.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), orphan)
    os.utime(orphan, (weeks_ago, weeks_ago))
    before = {path.name: deltalake.DeltaTable(str(path)).version() for path in tables.iterdir()}
    before_rows = {path.name: deltalake.DeltaTable(str(path)).to_pyarrow_table().num_rows
                   for path in tables.iterdir()}
    for name in ("binlog.000002", "binlog.000003"):
        shutil.copy(os.path.join(sample_dir(), name), incoming)
    result = run_pipeline(LazySession(no_spark, "local[2]"), [str(incoming)], str(lake),
                          **options)
    assert result.table_work["merged"] and modes and not any(modes)
    replaced = set()
    for name in result.table_work["merged"]:
        table = deltalake.DeltaTable(str(tables / name), version=before[name])
        replaced |= set(table.file_uris()) - set(deltalake.DeltaTable(str(tables / name))
                                                 .file_uris())
        for uri in table.file_uris():  # every file of the replaced version still there
            assert os.path.exists(unquote(uri)), (name, uri)
        assert table.to_pyarrow_table().num_rows == before_rows[name]
    assert replaced  # the merges rewrote files: a full vacuum on delta-rs #4290 lost them
    assert orphan.exists()
    modes.clear()
    assert main(["maintain", "--out", str(lake)], io.StringIO(), io.StringIO()) == 0
    assert modes and all(modes)
    assert not orphan.exists()
