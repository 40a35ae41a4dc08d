"""What would make the lake silently wrong is refused in one line, with the
lake left byte for byte as it was: a second run at the same time, a binlog
after one never read, a binlog older than those read, a file under the
next number that is not the one the previous file rotates to, a table
selected whose earlier binlogs are not given; and a value the table's type
cannot hold, with its tables left as they were. A change of --tables keeps
every table whole."""
from __future__ import annotations

import fcntl
import io
import os
import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
from binlake.cli.commands.pipeline import sample_dir  # noqa: E402
from binlake.cli.dispatch import main  # noqa: E402
from binlake.spark.run.pipeline import read_table  # noqa: E402
from binlake.spark.run.pipeline import run_pipeline as pipeline_run  # noqa: E402


def run_pipeline(*args, **options):
    """The sample and the truth hold zero dates: their lakes keep DATE,
    DATETIME and TIMESTAMP as text (a typed lake refuses them, tested apart)."""
    return pipeline_run(*args, **{"temporals": "text", **options})


def lake_bytes(out: Path) -> dict:
    """Every file of the lake, and its bytes."""
    return {str(path.relative_to(out)): path.read_bytes()
            for path in sorted(out.rglob("*")) if path.is_file()}


@pytest.fixture
def binlogs(tmp_path) -> Path:
    folder = tmp_path / "binlogs"
    folder.mkdir()
    for name in ("binlog.000001", "binlog.000002", "binlog.000003"):
        shutil.copy(Path(sample_dir()) / name, folder / name)
    return folder


def refused(spark, inputs, out: Path, words: str) -> None:
    """The run fails with one line saying `words`, through the command line
    as through the API, and the lake has not changed."""
    before = lake_bytes(out)
    with pytest.raises(ValueError, match=re.escape(words)):
        run_pipeline(spark, [str(p) for p in inputs], str(out))
    assert lake_bytes(out) == before
    err = io.StringIO()
    assert main(["pipeline", *map(str, inputs), "--out", str(out)], io.StringIO(), err) == 1
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("binlake pipeline: ") and words in lines[0], lines
    assert lake_bytes(out) == before


def test_a_binlog_after_one_never_read_is_refused(spark, binlogs, tmp_path):
    out = tmp_path / "lake"
    run_pipeline(spark, [str(binlogs / "binlog.000001")], str(out))
    refused(spark, [binlogs / "binlog.000001", binlogs / "binlog.000003"], out,
            "binlog.000003 follows binlog.000001, but binlog.000002 was never read")
    # a first run too: what is given must follow on
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    with pytest.raises(ValueError, match="never read"):
        run_pipeline(spark, [str(binlogs / "binlog.000001"), str(binlogs / "binlog.000003")],
                     str(fresh))
    # given whole, the run goes on
    result = run_pipeline(spark, [str(binlogs)], str(out))
    assert {os.path.basename(s.path) for s in result.segments} == {"binlog.000002", "binlog.000003"}


def test_a_binlog_older_than_those_read_is_refused(spark, binlogs, tmp_path):
    out = tmp_path / "lake"
    run_pipeline(spark, [str(binlogs / "binlog.000002"), str(binlogs / "binlog.000003")], str(out))
    refused(spark, [binlogs / "binlog.000001"], out,
            "binlog.000001 is older than binlog.000003, the last binlog this lake has read")


def test_a_file_that_is_not_the_one_rotated_to_is_refused(spark, binlogs, tmp_path):
    """binlog.000001 ends in a ROTATE naming binlog.000002: a file numbered 2
    under another name is another lineage's."""
    out = tmp_path / "lake"
    run_pipeline(spark, [str(binlogs / "binlog.000001")], str(out))
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(binlogs / "binlog.000002", other / "mysql-bin.000002")
    refused(spark, [other / "mysql-bin.000002"], out,
            "binlog.000001 rotates to binlog.000002, but the next binlog given is mysql-bin.000002")


def test_a_second_run_on_the_same_lake_is_refused(spark, binlogs, tmp_path):
    out = tmp_path / "lake"
    run_pipeline(spark, [str(binlogs / "binlog.000001")], str(out))
    with open(out / "_binlake" / "lock", "a") as held:  # a run in another process
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        refused(spark, [binlogs], out, "another binlake pipeline run is using this lake")
    # the lock goes with the run that held it
    result = run_pipeline(spark, [str(binlogs)], str(out))
    assert len(result.segments) == 2


def rows_of(out: Path) -> dict:
    """{table: its rows, sorted} of a lake's tables."""
    return {path.name: sorted(map(repr, read_table(str(out), path.name).to_pylist()))
            for path in sorted((out / "tables").iterdir())}


def test_a_table_selection_changed_keeps_every_table_whole(spark, binlogs, tmp_path):
    """--tables may change between runs: a table newly selected is built from
    its own history (the binlogs read before are read again for it alone),
    one no longer selected is left as it was, and selected again later it
    takes the changes it missed; each equals a lake that selected it from
    the start."""
    files = sorted(binlogs.iterdir())
    ints, probe = "binlake_test.ints", "binlake_test.probe"
    whole = tmp_path / "whole"  # every table selected from the start
    run_pipeline(spark, [str(f) for f in files], str(whole))
    out = tmp_path / "lake"
    run_pipeline(spark, [str(files[0])], str(out), tables=ints)
    result = run_pipeline(spark, [str(f) for f in files[:2]], str(out), tables=f"{ints},{probe}")
    assert [os.path.basename(s.path) for s in result.segments] == ["binlog.000002"]
    assert sorted(rows_of(out)) == [ints, probe]
    # no longer selected: left as it was
    ints_then = rows_of(out)[ints]
    run_pipeline(spark, [str(f) for f in files], str(out), tables=probe)
    assert rows_of(out)[ints] == ints_then
    assert rows_of(out)[probe] == rows_of(whole)[probe]
    # every table: those never selected built whole, ints given what it missed
    run_pipeline(spark, [str(f) for f in files], str(out))
    assert rows_of(out) == rows_of(whole)
    # and nothing new after that reads nothing again
    assert not run_pipeline(spark, [str(f) for f in files], str(out)).segments


def test_a_table_selected_without_the_binlogs_it_needs_is_refused(spark, binlogs, tmp_path):
    out = tmp_path / "lake"
    files = sorted(binlogs.iterdir())
    run_pipeline(spark, [str(files[0])], str(out), tables="binlake_test.ints")
    before = lake_bytes(out)
    words = ("--tables binlake_test.probe selects tables this lake has not read from "
             "binlog.000001: give it again with the new binlogs")
    with pytest.raises(ValueError, match=re.escape(words)):
        run_pipeline(spark, [str(files[1])], str(out), tables="binlake_test.probe")
    assert lake_bytes(out) == before
    err = io.StringIO()
    assert main(["pipeline", str(files[1]), "--out", str(out), "--tables", "binlake_test.probe"],
                io.StringIO(), err) == 1
    assert err.getvalue().count("\n") == 1 and words in err.getvalue()
    assert lake_bytes(out) == before


def test_a_value_the_tables_type_cannot_hold_is_refused_never_null(spark, binlogs, tmp_path):
    """The sample's zero dates: a typed lake refuses them in one line naming
    table, column and value, and builds no table; the same lake started
    again with --temporals text holds them as MySQL's text."""
    out = tmp_path / "lake"
    err = io.StringIO()
    assert main(["pipeline", str(binlogs), "--out", str(out)], io.StringIO(), err) == 1
    line = err.getvalue().splitlines()[-1]  # after the lines saying what was read
    assert line.startswith("binlake pipeline: binlake_test.temporal: column `"), line
    assert "'0000-00-00" in line and "--temporals text" in line
    assert line.endswith("or year 0): nothing was applied to the tables; to go on, run again "
                         "with --temporals text: DATE, DATETIME and TIMESTAMP columns are then "
                         "kept as MySQL's exact text (every table rebuilt once)"), line
    # nothing stays of the refused run: the lake holds its lock and nothing more
    assert lake_bytes(out) == {"_binlake/lock": b""}
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["_binlake", "_binlake/lock"]
    # a rerun refuses alike
    before = lake_bytes(out)
    with pytest.raises(ValueError, match="binlake_test.temporal: column `"):
        pipeline_run(spark, [str(binlogs)], str(out))
    assert lake_bytes(out) == before
    # the lake's way chosen again: every table built, zero dates as the server wrote them
    result = pipeline_run(spark, [str(binlogs)], str(out), temporals="text")
    assert result.tables["binlake_test.temporal"] > 0
    from binlake.spark.run.pipeline import read_table
    dates = {row["id"]: row["d"] for row in read_table(str(out), "binlake_test.temporal")
             .to_pylist()}
    assert dates[3] == "0000-00-00" and dates[2] == "9999-12-31"
    # recorded: a later run that does not say keeps it, nothing to do
    assert not pipeline_run(spark, [str(binlogs)], str(out)).tables_rebuilt
