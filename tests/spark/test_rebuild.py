"""`binlake pipeline --rebuild` (binlake.spark.run.rebuild), and the way forward
every refusal of the tables names.

Strategy: from changes/, a lake of the sample binlogs whose table is
removed, then changed by hand, is given back equal to before by --rebuild,
every other table left at its Delta version; with -R, a private MariaDB
(MINIMAL row images) updates a row its binlog never wrote (inserted with
sql_log_bin=0): the run is refused in one line naming `--rebuild` with -R,
and that run gets the lake going again, its table equal to SELECT *. The
refusals' words are checked where they are made, one by one.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")

from binlake.cli.commands.pipeline import sample_dir  # noqa: E402
from binlake.cli.dispatch import main  # noqa: E402
from binlake.spark.run import rebuild  # noqa: E402
from binlake.spark.plans import refusals  # noqa: E402
from binlake.spark.plans.conversions import refusal_of_plan  # noqa: E402
from binlake.spark.run.pipeline import load_manifest, read_table, run_pipeline  # noqa: E402
from binlake.spark.rules.refused import (HISTORY_PARTIAL, KEYLESS_PARTIAL, NEVER_WHOLE,  # noqa: E402
                                  NOT_HELD, UNKNOWN_KEY)
from binlake.spark.plans.typed import refused_value  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402

from .test_table_rows import NOT_CONVERTED, column  # noqa: E402


def rows_of(out, table: str) -> list:
    return sorted(map(repr, (tuple(row.values())
                             for row in read_table(str(out), table).to_pylist())))


def versions(out) -> dict:
    from deltalake import DeltaTable
    folder = Path(out) / "tables"
    return {name: DeltaTable(str(folder / name)).version() for name in sorted(os.listdir(folder))}


@pytest.fixture
def lake(spark, tmp_path):
    out = tmp_path / "lake"
    result = run_pipeline(spark, [sample_dir()], str(out), temporals="text")
    return out, max(result.tables, key=result.tables.get)


def test_rebuild_from_changes_gives_a_removed_or_altered_table_back(spark, lake):
    out, name = lake
    rows, before = rows_of(out, name), versions(out)
    assert len(rows) > 2
    others = {key: version for key, version in before.items() if key != name}

    shutil.rmtree(out / "tables" / name)  # damaged beyond reading
    result = run_pipeline(spark, [sample_dir()], str(out), rebuild=name)
    assert result.table_work["rebuilt"] == [name]
    assert rows_of(out, name) == rows
    assert {key: v for key, v in versions(out).items() if key != name} == others

    from deltalake import write_deltalake
    held = read_table(str(out), name)
    write_deltalake(str(out / "tables" / name), held.slice(1, held.num_rows - 2),
                    mode="overwrite")  # rows changed by hand
    assert rows_of(out, name) != rows
    err, said = io.StringIO(), io.StringIO()
    assert main(["pipeline", sample_dir(), "--out", str(out), "--rebuild", name], said, err) == 0
    assert "1 rebuilt" in said.getvalue(), (said.getvalue(), err.getvalue())
    assert rows_of(out, name) == rows
    assert {key: v for key, v in versions(out).items() if key != name} == others
    # the mark is gone with the rebuild: the next run has nothing to do
    assert rebuild.stale_tables(load_manifest(str(out)).tables) == set()
    assert not run_pipeline(spark, [sample_dir()], str(out)).tables_rebuilt


def test_rebuild_of_no_table_of_the_lake_is_refused(spark, lake):
    out, _ = lake
    state = (out / "_binlake" / "manifest.json").read_bytes()
    with pytest.raises(ValueError, match="--rebuild nowhere.none: no table of this lake"):
        run_pipeline(spark, [sample_dir()], str(out), rebuild="nowhere.none")
    assert (out / "_binlake" / "manifest.json").read_bytes() == state
    err = io.StringIO()
    assert main(["pipeline", sample_dir(), "--out", str(out), "--rebuild", "x.y", "--as-of",
                 "binlog.000001:4", "--as-of-out", str(out.parent / "then")],
                io.StringIO(), err) == 2
    assert "not with --rebuild" in err.getvalue()


# -- the way forward of each refusal -------------------------------------------------------

READS_ANEW = "binlake pipeline --out DIR -R -h HOST -u USER --rebuild db.t"


@pytest.mark.parametrize("reason, forward", [
    (NOT_HELD, "read db.t anew from the server: " + READS_ANEW),
    (NEVER_WHOLE, "read db.t anew from the server: " + READS_ANEW),
    (KEYLESS_PARTIAL, "set binlog_row_image=FULL on the server, then read db.t anew from it: "
     + READS_ANEW),
    (UNKNOWN_KEY, "set binlog_row_image=FULL on the server, then read db.t anew from it: "
     + READS_ANEW),
    (HISTORY_PARTIAL, "set binlog_row_image=FULL on the server and start a lake of its history "
     "from a snapshot of it: binlake pipeline --out NEWDIR -R -h HOST -u USER --snapshot-from --history"),
])
def test_each_refusal_of_a_row_image_ends_with_what_to_run(reason, forward):
    line = refusals.refusal_line(f"binlog.000002 at 400: db.t: {refusals.named(reason, 'db.t')}",
                                "/the/lake")
    assert line.endswith("; to go on, " + forward.replace("--out DIR", "--out /the/lake")), line
    assert ": nothing was applied to the tables; to go on, " in line
    assert line.count("\n") == 0


def test_a_value_no_typed_column_holds_names_temporals_text(spark):
    from pyspark.sql import functions as F
    date = column("DATE")
    line = refusals.refusal_line(refused_value("db.t", date, "0000-00-00", "date"), "/lake")
    assert line.endswith("nothing was applied to the tables; to go on, run again with "
                         "--temporals text: DATE, DATETIME and TIMESTAMP columns are then kept "
                         "as MySQL's exact text (every table rebuilt once)"), line
    # the Spark job refuses it in the same words
    said = spark.range(1).select(refusals.named_column("at {table}: x{table}", F.lit("a.b")))
    assert said.first()[0] == "at a.b: xa.b"


@pytest.mark.parametrize("was, _kind, new", NOT_CONVERTED)
def test_a_type_change_not_converted_names_reading_the_table_anew(was, _kind, new):
    """Read anew, the table's rows start at its first chunk, after the change
    (test_rebuild_with_a_server_passes_a_type_change_binlake_does_not_convert)."""
    plan = {"database": "db", "table": "t", "layout": {"columns": [dict(new, key="c")]},
            "stretches": [{"was": [was]}]}
    line = refusals.refusal_line(refusal_of_plan(plan), "/lake")
    assert line.startswith("db.t: column `c`: ") and line.endswith(
        "nothing was applied to the tables; to go on, read db.t anew from the server: "
        "binlake pipeline --out /lake -R -h HOST -u USER --rebuild db.t"), line


# -- with -R: read anew from the server ------------------------------------------------------

def binlake(lake, server, *options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "binlake", "pipeline", "-R", "--out", str(lake),
                           "-h", "127.0.0.1", "-P", str(server.port), "-u", "root", *options],
                          capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def test_rebuild_with_a_server_gets_a_refused_lake_going(mariadb, tmp_path):
    with MariaDBServer(tmp_path / "server", server_id=47, binlog_row_image="MINIMAL") as server:
        server.execute("CREATE DATABASE db")
        server.execute("CREATE TABLE db.t (id INT PRIMARY KEY, a VARCHAR(20), b INT)")
        server.execute("INSERT INTO db.t SELECT seq, CONCAT('row ', seq), seq "
                       "FROM db.seq_1_to_50")
        server.execute("CREATE TABLE db.other (id INT PRIMARY KEY, v INT)")
        server.execute("INSERT INTO db.other VALUES (1, 1)")
        lake = tmp_path / "lake"
        first = binlake(lake, server, "binlog.000001")
        assert first.returncode == 0, first.stderr
        with server.connect("db") as hidden, hidden.cursor() as cursor:
            cursor.execute("SET SESSION sql_log_bin = 0")
            cursor.execute("INSERT INTO t VALUES (51, 'not in the binlog', 0)")
        server.execute("UPDATE db.t SET b = b + 100 WHERE id IN (7, 51)")
        server.execute("UPDATE db.other SET v = 2")

        refused = binlake(lake, server)
        assert refused.returncode == 1
        line = refused.stderr.strip().splitlines()[-1]
        assert "db.t: a partial row image" in line and line.endswith(
            "nothing was applied to the tables; to go on, read db.t anew from the server: "
            f"binlake pipeline --out {lake} -R -h HOST -u USER --rebuild db.t"), line
        assert binlake(lake, server).returncode == 1  # refused again, as it was

        again = binlake(lake, server, "--rebuild", "db.t")
        assert again.returncode == 0, again.stderr
        assert "reading anew, asked for (db.t): db.t" in again.stderr, again.stderr
        server.execute("UPDATE db.t SET a = 'after' WHERE id IN (8, 51)")
        going = binlake(lake, server)
        assert going.returncode == 0, going.stderr

        def served(table: str) -> list:
            return sorted(map(repr, server.query(f"SELECT * FROM db.{table}")))
        assert rows_of(lake, "db.t") == served("t")
        assert rows_of(lake, "db.other") == served("other")
        assert not list((lake / "_binlake" / "requests").iterdir())


def test_rebuild_with_a_server_passes_a_type_change_binlake_does_not_convert(mariadb, tmp_path):
    """A MODIFY binlake cannot convert as the server did (TIMESTAMP made a
    DATETIME: the ALTER session's time zone is not in the binlog) refuses
    the run with -R --rebuild as its way forward; the table read anew holds
    the server's values from its chunk on, the changes before it (the old
    type's) no longer in its plan."""
    with MariaDBServer(tmp_path / "server", server_id=48) as server:
        server.execute("CREATE DATABASE db")
        server.execute("CREATE TABLE db.t (id INT PRIMARY KEY, at TIMESTAMP NULL, v INT)")
        server.execute("INSERT INTO db.t SELECT seq, '2024-03-01 10:00:00' + INTERVAL seq HOUR, "
                       "seq FROM db.seq_1_to_30")
        lake = tmp_path / "lake"
        first = binlake(lake, server, "binlog.000001")
        assert first.returncode == 0, first.stderr
        server.execute("SET time_zone = '+05:00'")
        server.execute("ALTER TABLE db.t MODIFY at DATETIME NULL")
        server.execute("UPDATE db.t SET v = -v WHERE id % 3 = 0")

        refused = binlake(lake, server)
        assert refused.returncode == 1
        line = refused.stderr.strip().splitlines()[-1]
        assert "db.t: column `at`: a TIMESTAMP column made a DATETIME" in line and line.endswith(
            "nothing was applied to the tables; to go on, read db.t anew from the server: "
            f"binlake pipeline --out {lake} -R -h HOST -u USER --rebuild db.t"), line

        again = binlake(lake, server, "--rebuild", "db.t")
        assert again.returncode == 0, again.stderr
        server.execute("UPDATE db.t SET v = v + 1000 WHERE id < 5")
        going = binlake(lake, server)
        assert going.returncode == 0, going.stderr
        assert rows_of(lake, "db.t") == sorted(map(repr, server.query("SELECT * FROM db.t")))
