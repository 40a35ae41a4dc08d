"""`binlake pipeline` against the truth: the server's own SELECT * (see truth.py).

The rebuilt tables must equal the server's at the end and, with --as-of a
position or a time, at the capture point in the middle. The output must not
depend on how the work was split (one partition, or files cut into ranges)
nor on how the input arrived (one run, or several runs over growing input),
and a re-run over the same input must change nothing.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil

import pytest

pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyspark")
from binlake.cli.dispatch import main  # noqa: E402
from binlake.spark.run.pipeline import load_manifest, read_table  # noqa: E402
from binlake.spark.run.pipeline import run_pipeline as pipeline_run  # noqa: E402

from .truth import canonical_rows, typed_rows  # noqa: E402

DB = "binlake_test"


def run_pipeline(*args, **options):
    """The sample and the truth hold zero dates: their lakes keep DATE,
    DATETIME and TIMESTAMP as text (a typed lake refuses them, tested apart)."""
    return pipeline_run(*args, **{"temporals": "text", **options})


def table_rows(out, table: str) -> list[dict]:
    return read_table(out, f"{DB}.{table}").to_pylist()


def assert_tables_equal(out, expected: dict, columns: dict) -> None:
    assert sorted(os.listdir(os.path.join(out, "tables"))) == sorted(f"{DB}.{t}" for t in expected)
    for table, rows in expected.items():
        got = table_rows(out, table)
        expected = typed_rows(rows, columns[table], "text")
        assert canonical_rows(got) == canonical_rows(expected), table


def dataset(out, view: str) -> list[dict]:
    """A view's rows in commit order, without the input-dependent path."""
    rows = pq.read_table(os.path.join(out, view)).to_pylist()
    for row in rows:
        row.pop("path")
        for side in ("before", "after"):
            if row.get(side) is not None:
                row[side] = sorted(row[side])
    key = lambda r: tuple(r["commit_key"].values())  # noqa: E731
    return sorted(rows, key=key)


def files_under(out) -> dict:
    found = {}
    for folder, _dirs, names in os.walk(out):
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, out)] = os.path.getsize(path)
    return found


@pytest.fixture(scope="module")
def one_partition(spark, truth, tmp_path_factory):
    """One run over every file, all of it in one partition."""
    out = tmp_path_factory.mktemp("pipeline") / "one"
    result = run_pipeline(spark, truth.files, str(out), split_bytes=1 << 40, min_partitions=1)
    return out, result


def test_tables_equal_the_server_at_the_end(one_partition, truth):
    out, result = one_partition
    assert len(truth.files) >= 3
    assert [s.start for s in result.segments] == [4] * len(truth.files)
    assert result.changes > 500 and result.events > 200
    assert_tables_equal(out, truth.final, truth.columns)


def test_changes_are_partitioned_by_database_table_and_date(one_partition):
    out, _ = one_partition
    top = os.listdir(os.path.join(out, "changes"))
    assert top == [f"database={DB}"]
    tables = os.listdir(os.path.join(out, "changes", f"database={DB}"))
    assert "table=no_pk" in tables and "table=ints" in tables
    dates = os.listdir(os.path.join(out, "changes", f"database={DB}", "table=ints"))
    assert all(d.startswith("date=20") for d in dates)
    assert all(d.startswith("date=") for d in os.listdir(os.path.join(out, "events")))


@pytest.mark.parametrize("point", ["position", "time"])
def test_as_of_the_middle_equals_the_server_then(one_partition, truth, tmp_path, spark, point):
    out = tmp_path / "out"
    shutil.copytree(one_partition[0], out)
    as_of = truth.middle_position if point == "position" else truth.middle_time.isoformat()
    lake = files_under(out)
    then = tmp_path / "then"
    result = run_pipeline(spark, truth.files, str(out), as_of=as_of, as_of_out=str(then))
    assert result.segments == [] and result.tables_rebuilt
    assert_tables_equal(then, truth.middle, truth.columns)
    assert truth.middle != truth.final
    # the lake's own tables (and manifest) stay as they are: readers never see the past
    assert files_under(out) == lake
    assert_tables_equal(out, truth.final, truth.columns)
    with pytest.raises(ValueError, match="--as-of-out"):
        run_pipeline(spark, truth.files, str(out), as_of=as_of)
    with pytest.raises(ValueError, match="outside the lake"):
        run_pipeline(spark, truth.files, str(out), as_of=as_of, as_of_out=str(out / "x"))
    assert files_under(out) == lake


def test_same_output_read_by_executors_in_ranges_and_read_in_several_runs(one_partition, truth,
                                                                         spark, tmp_path):
    single = one_partition[0]  # read in the driver (a local master's default)
    # Read by Spark's executors in many partitions: files cut into ranges of
    # about 4 kB at transaction boundaries.
    ranges = tmp_path / "ranges"
    result = run_pipeline(spark, truth.files, str(ranges), split_bytes=4096, read_in="executors")
    assert len(result.segments) == len(truth.files)
    # Several runs over input that grows as a server writes it: the second file
    # first appears cut in the middle of an event, then whole, then the third.
    incoming, runs = tmp_path / "incoming", tmp_path / "runs"
    incoming.mkdir()
    first, second = truth.files[0], truth.files[1]
    shutil.copy(first, incoming)
    run_pipeline(spark, [str(incoming)], str(runs), split_bytes=4096)
    data = open(second, "rb").read()
    (incoming / os.path.basename(second)).write_bytes(data[:len(data) * 2 // 3])
    partial = run_pipeline(spark, [str(incoming)], str(runs), split_bytes=4096)
    assert [s.start for s in partial.segments] == [4]
    for path in truth.files[1:]:
        shutil.copy(path, incoming)
    last = run_pipeline(spark, [str(incoming)], str(runs), split_bytes=4096)
    assert last.segments[0].start > 4  # the second file resumed where the last run stopped
    for view in ("events", "changes"):
        expected = dataset(single, view)
        assert dataset(ranges, view) == expected, view
        assert dataset(runs, view) == expected, view
    assert_tables_equal(ranges, truth.final, truth.columns)
    assert_tables_equal(runs, truth.final, truth.columns)


def test_a_rerun_over_the_same_input_changes_nothing(one_partition, truth, spark):
    out = one_partition[0]
    before = files_under(out)
    manifest = load_manifest(str(out))
    result = run_pipeline(spark, truth.files, str(out), split_bytes=1 << 40, min_partitions=1)
    assert result.segments == [] and not result.tables_rebuilt
    assert files_under(out) == before
    assert load_manifest(str(out)) == manifest


def test_cli_on_the_sample_data_rebuilds_its_tables(spark, tmp_path):
    """The sample as shipped, on the defaults: its zero dates kept as text."""
    out, err = io.StringIO(), io.StringIO()
    # Spark's readers expand glob patterns: a name like this must still be itself.
    lake = tmp_path / "lake{a,b}*"
    command = ["pipeline", "--sample", "--out", str(lake)]
    assert main(command, out, err) == 0, err.getvalue()
    from binlake.spark.run.pipeline import load_manifest
    assert load_manifest(str(lake)).temporals == "text"
    assert "3 file(s)" in out.getvalue()
    from binlake.cli.commands.pipeline import sample_dir
    with gzip.open(os.path.join(sample_dir(), "expected_state.json.gz"), "rt") as f:
        expected = json.load(f)["tables"]
    for table, rows in expected.items():
        got = table_rows(lake, table)
        assert len(got) == len(rows), table
        if rows and "id" in rows[0]:
            assert sorted(r["id"] for r in got) == sorted(r["id"] for r in rows), table


def test_small_increments_and_nothing_new_start_no_spark_session(spark, tmp_path):
    """The driver computes small increments (binlake.spark.commits.driver_way),
    history tables' too: a run over the sample's last two files, and one
    with nothing new, never ask for the session; the tables are the server's."""
    from binlake.cli.commands.pipeline import sample_dir
    from binlake.spark.run.session import LazySession

    def no_spark():
        raise AssertionError("a small increment started a Spark session")
    incoming, lake = sample_lake_then_increment(spark, tmp_path, history=True)
    result = run_pipeline(LazySession(no_spark, "local[2]"), [str(incoming)], str(lake),
                          history=True)
    assert result.changes > 0 and result.table_work["merged"] and result.table_work["history"]
    assert not run_pipeline(LazySession(no_spark, "local[2]"), [str(incoming)],
                            str(lake)).tables_rebuilt
    with gzip.open(os.path.join(sample_dir(), "expected_state.json.gz"), "rt") as f:
        expected = json.load(f)["tables"]
    for table, rows in expected.items():
        assert len(table_rows(lake, table)) == len(rows), table


def test_a_small_increment_imports_no_pandas(spark, tmp_path):
    """pyarrow imports pandas (0.27 s: a third of a small run) for a Python
    scalar or list made Arrow, `to_numpy`, `group_by` or pyarrow.dataset;
    the table rules and their commits do none of these
    (binlake.spark.rules.engine), so a run that merges a few changes, in a
    fresh process, leaves pandas unimported."""
    import subprocess
    import sys

    incoming, lake = sample_lake_then_increment(spark, tmp_path)
    code = ("import io, sys; from binlake.cli.dispatch import main; err = io.StringIO(); "
            "status = main(sys.argv[1:], io.StringIO(), err); "
            "print(status, 'pandas' in sys.modules, err.getvalue().count('merging into'))")
    done = subprocess.run([sys.executable, "-c", code, "pipeline", str(incoming), "--out",
                           str(lake)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": os.path.dirname(
                              os.path.dirname(binlake_path()))})
    assert done.stdout.split() == ["0", "False", "1"], done.stdout + done.stderr


def test_a_table_whose_creation_was_killed_is_made_again(spark, tmp_path):
    """A run killed as delta-rs created a table leaves its `_delta_log/`
    holding no entry (a commit's temporary file at most): the next run
    makes the table, rather than failing to open it."""
    from binlake.cli.commands.pipeline import sample_dir
    from binlake.spark.commits.lake import _committed_point
    incoming, lake = sample_lake_then_increment(spark, tmp_path)
    for table in os.listdir(lake / "tables"):
        shutil.rmtree(lake / "tables" / table)
        (lake / "tables" / table / "_delta_log").mkdir(parents=True)
        (lake / "tables" / table / "_delta_log" / "_commit_5e1f.json.tmp").write_text("{")
        # where a DDL statement since asks which point the table was committed at
        assert _committed_point(str(lake / "tables" / table), order=None) is None
    run_pipeline(spark, [str(incoming)], str(lake))
    with gzip.open(os.path.join(sample_dir(), "expected_state.json.gz"), "rt") as f:
        expected = json.load(f)["tables"]
    for table, rows in expected.items():
        assert len(table_rows(lake, table)) == len(rows), table


def sample_lake_then_increment(spark, tmp_path, **options):
    """A lake of the sample's first binlog, and its last two arrived since:
    (the incoming folder, the lake)."""
    from binlake.cli.commands.pipeline import sample_dir
    incoming, lake = tmp_path / "incoming", tmp_path / "lake"
    incoming.mkdir()
    shutil.copy(os.path.join(sample_dir(), "binlog.000001"), incoming)
    run_pipeline(spark, [str(incoming)], str(lake), **options)
    for name in ("binlog.000002", "binlog.000003"):
        shutil.copy(os.path.join(sample_dir(), name), incoming)
    return incoming, lake


def binlake_path() -> str:
    import binlake
    return binlake.__file__


def test_a_run_that_rebuilds_the_tables_starts_spark_while_it_reads(spark, tmp_path,
                                                                     monkeypatch):
    """A lake's first run that rebuilds its tables in Spark (here: the
    sample's, held as large) asks for the session in the background before a
    binlog is read (its JVM starts while the driver reads), once, however
    many threads then use it; settings given with `then` reach it. A run
    with nothing new never asks."""
    import threading

    from binlake.cli.commands.pipeline import sample_dir
    from binlake.spark.commits import driver_way
    from binlake.spark.run import pipeline
    from binlake.spark.run.session import LazySession
    monkeypatch.setattr(pipeline, "SURELY_SPARK_REBUILD_BYTES", 0)
    monkeypatch.setattr(driver_way, "DRIVER_ROWS", -1)
    asked, configured = [], []

    def start():
        asked.append(threading.current_thread().name)
        return spark
    lazy = LazySession(start, "local[2]")
    lazy.then(configured.append)
    lake = tmp_path / "lake"
    result = run_pipeline(lazy, [sample_dir()], str(lake))
    assert result.tables_rebuilt and result.tables
    assert asked == ["spark session start"] and configured == [spark]

    def no_spark():
        raise AssertionError("a run with nothing new started a Spark session")
    assert not run_pipeline(LazySession(no_spark, "local[2]"), [sample_dir()],
                            str(lake)).tables_rebuilt


def test_a_small_lakes_first_run_starts_no_spark(tmp_path):
    """Small tables new to the lake are rebuilt by the driver, by the rules
    Spark's rebuild follows (tests/spark/test_driver_tables.py): the
    sample's first run needs no JVM."""
    from binlake.cli.commands.pipeline import sample_dir
    from binlake.spark.run.session import LazySession

    def no_spark():
        raise AssertionError("a small lake's first run started a Spark session")
    lake = tmp_path / "lake"
    result = run_pipeline(LazySession(no_spark, "local[2]"), [sample_dir()], str(lake))
    assert result.tables and sorted(result.table_work["rebuilt"]) == sorted(result.tables)
    with gzip.open(os.path.join(sample_dir(), "expected_state.json.gz"), "rt") as f:
        expected = json.load(f)["tables"]
    for table, rows in expected.items():
        assert len(table_rows(lake, table)) == len(rows), table


def test_a_lazy_session_is_started_once_by_many_threads(spark):
    import threading
    import time

    from binlake.spark.run.session import LazySession
    asked = []

    def start():
        asked.append(1)
        time.sleep(0.2)  # threads arrive while it starts
        return spark
    lazy = LazySession(start)
    names = []
    threads = [threading.Thread(target=lambda: names.append(lazy.version)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert asked == [1] and names == [spark.version] * 4


def test_an_output_path_delta_cannot_address_is_refused_in_one_line(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert main(["pipeline", "--sample", "--out", str(tmp_path / "lake[1]")], out, err) == 1
    assert "cannot address a path containing [ ]" in err.getvalue()
    assert not (tmp_path / "lake[1]").exists()


def test_unread_bytes_follow_the_manifest(one_partition, truth, tmp_path):
    from binlake.spark.run.binlogs import unread_bytes
    total = sum(os.path.getsize(p) for p in truth.files)
    assert unread_bytes(truth.files, str(tmp_path / "new")) == total
    manifest = load_manifest(str(one_partition[0]))
    read = sum(manifest.files[os.path.basename(p)].end for p in truth.files)
    assert unread_bytes(truth.files, str(one_partition[0])) == total - read
    assert unread_bytes([str(tmp_path / "missing")], str(tmp_path / "new")) in (0, None)


def test_only_a_short_run_on_few_cores_gets_the_first_jit_tier():
    from binlake.spark.run.session import FEW_CORES, SHORT_RUN_BYTES, local_java_options
    quick = "-XX:TieredStopAtLevel=1"
    assert "log4j2.configurationFile=" in local_java_options(2, None)
    # ... a file that is there (a module's move once pointed it at none)
    from urllib.parse import unquote, urlparse
    log4j = local_java_options(2, None).split("log4j2.configurationFile=")[1].split()[0]
    assert os.path.isfile(unquote(urlparse(log4j).path)), log4j
    # Spark's long generated methods are compiled, never left to the interpreter.
    assert "-XX:-DontCompileHugeMethods" in local_java_options(8, None)
    assert quick in local_java_options(2, 10_000)
    assert quick in local_java_options(FEW_CORES, SHORT_RUN_BYTES)
    assert quick not in local_java_options(2, SHORT_RUN_BYTES + 1)
    assert quick not in local_java_options(FEW_CORES + 1, 10_000)
    assert quick not in local_java_options(2, None)  # size unknown: a long run, maybe


def test_every_file_a_manifest_or_delta_log_names_is_synced_before_it(tmp_path, monkeypatch):
    """A power cut must not leave a manifest naming bytes the disk lost:
    each staged events/ and changes/ file is fsynced with its folder once
    in place, before the manifest is installed (a cut before that undoes
    the run: binlake.spark.state.run_undo), and every file the tables' logs name before the manifest
    that says the tables took the run in."""
    from urllib.parse import unquote

    import deltalake

    from binlake.cli.commands.pipeline import sample_dir
    from binlake.spark.run.session import LazySession

    def no_spark():
        raise AssertionError("the sample's run needs no Spark session")
    order = []  # ("fsync", path) and ("replace", source, target), as they happen
    fsync, rename = os.fsync, os.replace

    def synced(fd):
        order.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return fsync(fd)

    def replaced(source, target):
        order.append(("replace", os.fspath(source), os.fspath(target)))
        return rename(source, target)
    monkeypatch.setattr(os, "fsync", synced)
    monkeypatch.setattr(os, "replace", replaced)
    lake = os.path.realpath(tmp_path) + "/lake"
    run_pipeline(LazySession(no_spark, "local[2]"), [sample_dir()], lake)
    monkeypatch.undo()
    state, staging = f"{lake}/_binlake", f"{lake}/_binlake/staging"
    staged_manifest = order.index(("fsync", f"{staging}/manifest.json.partial"))
    installed = order.index(("replace", f"{staging}/manifest.json", f"{state}/manifest.json"))
    views = [os.path.join(folder, name) for view in ("events", "changes")
             for folder, _, names in os.walk(f"{lake}/{view}") for name in names]
    assert views
    for path in views:
        at_staging = path.replace(lake, staging, 1)
        moved = order.index(("replace", at_staging, path))
        assert staged_manifest < moved, path
        assert ("fsync", path) in order[moved:installed], path
        assert ("fsync", os.path.dirname(path)) in order[moved:installed], path
    last_manifest = max(i for i, step in enumerate(order)
                        if step == ("fsync", f"{state}/manifest.json.partial"))
    tables = [f"{lake}/tables/{name}" for name in os.listdir(f"{lake}/tables")]
    assert tables
    for uri in tables:
        for path in map(unquote, deltalake.DeltaTable(uri).file_uris()):
            assert ("fsync", path) in order[:last_manifest], path
        entry = f"{uri}/_delta_log/{deltalake.DeltaTable(uri).version():020d}.json"
        assert ("fsync", entry) in order[:last_manifest], entry
