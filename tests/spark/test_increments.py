"""The lake fed in increments (binlake.spark.commits.lake): binlog files arrive one by
one from a server that keeps writing (and is restarted once), the pipeline
runs after each, and tables/ equals the server's `SELECT *` every time.

The steps exercise each way a run brings a table in step: inserts appended,
updates and deletes merged by key, a keyless table's deletes (its rows rewritten), and
DDL (ADD COLUMN with a default, TRUNCATE, RENAME, DROP, type changes: carried,
values converted as the server converted them; an index or a comment: the
table as it was, new rows appended), computed in the driver (small increments) and, again, all by
Spark's jobs. Then the same increments again with the pipeline SIGKILLed at
random moments of the runs that merge, keeping a history (--history): each
rerun must end where one uninterrupted run would, and each keyed table's
history must hold the versions the binlogs give its rows.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
deltalake = pytest.importorskip("deltalake")
pa = pytest.importorskip("pyarrow")

import binlake  # noqa: E402
import binlake.spark  # noqa: E402
from binlake.spark.commits import driver_way  # noqa: E402
from binlake.spark.run.pipeline import load_manifest, run_pipeline  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402
from binlake.testing.workload import (DATABASE, SESSION_SETUP,  # noqa: E402
                                      expected_final_state, run_basic_workload)

import sweeps  # noqa: E402

from .test_lake_refusals import lake_bytes  # noqa: E402
from .test_pipeline import assert_tables_equal  # noqa: E402
from .truth import _columns, canonical_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESTART = "RESTART"
KILLS_PER_STEP = 3  #: in a full sweep (tests/sweeps.py)

#: After the basic workload, one binlog file per step.
STEPS = [
    ["INSERT INTO ints (id, ti) VALUES (5001, 1), (5002, 2), (5003, 3)",
     "INSERT INTO no_pk (a, b, c) VALUES (9, 'more', 1.5), (9, 'more', 1.5)"],
    ["UPDATE probe SET amount = amount + 1 WHERE id <= 2",
     "UPDATE ints SET id = 6001 WHERE id = 5001",
     "DELETE FROM ints WHERE id = 5002"],
    ["DELETE FROM no_pk WHERE a = 9 LIMIT 1", "UPDATE no_pk SET c = 7 WHERE b = 'dup' LIMIT 1"],
    ["ALTER TABLE probe ADD COLUMN extra INT NOT NULL DEFAULT 5",
     "INSERT INTO probe (id, label, amount, extra) VALUES (300, 'wide', 2.5, 6)"],
    [RESTART, "UPDATE probe SET extra = extra + 1 WHERE id = 300", "DELETE FROM ints WHERE id = 6001"],
    ["TRUNCATE TABLE strings", "INSERT INTO strings (id, vc_utf8) VALUES (1, 'after truncate')"],
    ["RENAME TABLE enums TO enums_renamed", "UPDATE enums_renamed SET e = 'x y' WHERE id = 1"],
    ["DROP TABLE geo", "INSERT INTO ints (id, ti) VALUES (7001, 7)"],
    ["START TRANSACTION", "UPDATE ints SET id = id + 100000 WHERE id BETWEEN 1050 AND 1055",
     "INSERT INTO ints (id, ti) VALUES (1050, 50)", "DELETE FROM probe WHERE id = 300", "COMMIT"],
    ["ALTER TABLE ints ADD INDEX by_ti (ti)", "ALTER TABLE ints COMMENT 'an index, a comment'",
     "INSERT INTO ints (id, ti) VALUES (8001, 8)"],
    ["ALTER TABLE probe DROP COLUMN extra", "ALTER TABLE ints CHANGE ti tiny TINYINT",
     "UPDATE ints SET tiny = 9 WHERE id = 8001", "DELETE FROM no_pk WHERE a IS NULL OR a = 1",
     "ALTER TABLE no_pk ADD PRIMARY KEY (a, b)", "UPDATE no_pk SET c = 3 WHERE a = 2"],
    ["ALTER TABLE probe MODIFY amount DECIMAL(12,3)", "RENAME TABLE strings TO strings_old",
     # Type changes the server converts (rounds, and clips under the lax
     # sql_mode of the workload), of rows held and of a change before them.
     "UPDATE numbers SET d10_2 = 2.5, d18_9 = 7.125 WHERE id = 4",
     "ALTER TABLE numbers MODIFY d10_2 TINYINT, MODIFY d18_9 DECIMAL(10,2), MODIFY f DOUBLE, "
     "MODIFY d5_0 VARCHAR(20)",
     "UPDATE numbers SET d10_2 = d10_2 + 1 WHERE id = 1",
     "ALTER TABLE ints MODIFY bi_u INT, MODIFY i_u BIGINT",
     "CREATE TABLE strings (id INT PRIMARY KEY, note TEXT)",
     "INSERT INTO strings VALUES (1, 'a new table under an old name')"],
]


@dataclass
class Step:
    files: list[str]     #: every closed binlog file so far
    tables: dict         #: SELECT * of every table
    columns: dict        #: information_schema facts per table


@pytest.fixture(scope="module")
def steps(mariadb, tmp_path_factory) -> list[Step]:
    found = []
    with MariaDBServer(tmp_path_factory.mktemp("increments"), server_id=11) as server:
        run_basic_workload(server, DATABASE)
        server.flush_logs()
        found.append(_capture(server))
        for statements in STEPS:
            connection = None
            for statement in statements:
                if statement == RESTART:  # a restart opens a new binlog file
                    server.stop()
                    server.start()
                    continue
                if connection is None:
                    connection = server.connect(DATABASE)
                    with connection.cursor() as cursor:
                        for setup in SESSION_SETUP:
                            cursor.execute(setup)
                with connection.cursor() as cursor:
                    cursor.execute(statement)
            connection.close()
            server.flush_logs()
            found.append(_capture(server))
    return found


def _capture(server) -> Step:
    closed = [str(p) for p in server.binlog_files()][:-1]  # the last one is in use
    return Step(closed, expected_final_state(server, DATABASE), _columns(server))


def arrive(step: Step, incoming: Path) -> None:
    for path in step.files:
        if not (incoming / os.path.basename(path)).exists():
            shutil.copy(path, incoming)


#: The tables the Spark way partitions (--partition-by): a keyed table by its
#: key, a keyless one (a key added later) by a column holding NULL.
PARTITIONED = {f"{DATABASE}.probe": "id", f"{DATABASE}.no_pk": "a"}


@pytest.mark.parametrize("way", ["driver", "spark"])
def test_every_increment_equal_to_the_server(spark, steps, tmp_path, monkeypatch, way):
    """`way`: small increments computed in the driver (the default), or all
    by Spark's jobs (both run binlake.spark.rules.table_rows), those
    with two tables partitioned."""
    partition_by = None
    if way == "spark":
        monkeypatch.setattr(driver_way, "DRIVER_ROWS", -1)
        partition_by = PARTITIONED
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    assert len(steps) == 1 + len(STEPS)
    work, versions = [], []
    for number, step in enumerate(steps):
        arrive(step, incoming)
        # The workload's zero dates: DATE/DATETIME/TIMESTAMP kept as text.
        result = run_pipeline(spark, [str(incoming)], str(out), temporals="text",
                              partition_by=partition_by)
        assert result.segments, number
        assert_tables_equal(out, step.tables, step.columns)
        for table, column in (partition_by or {}).items():
            assert_partitioned(spark, out, table, [column])
        assert load_manifest(str(out)).pending == {}
        work.append({how: sorted(t.split(".")[1] for t in tables)
                     for how, tables in result.table_work.items() if tables})
        versions.append({table: deltalake.DeltaTable(str(out / "tables" / f"{DATABASE}.{table}"))
                         .version() for table in FED})
        # The change data feed of the run's commits says what the binlogs
        # say its changes did to each key of the tables merged into (read
        # now, as a downstream job would: a type change rewrites the table
        # under a new schema, which earlier versions' files do not have).
        new_files = [f for f in step.files if number and f not in steps[number - 1].files]
        for table in FED:
            if table in work[-1].get("merged", []) + work[-1].get("appended", []):
                feed = fed_keys(out, table, versions[-2][table] + 1, versions[-1][table])
                assert feed == binlog_keys(new_files, table), (number, table)
        for table in work[-1].get("carried", []):  # marked as what its feed is: a rewrite
            history = deltalake.DeltaTable(str(out / "tables" / f"{DATABASE}.{table}")).history()
            binlake_commits = [entry for entry in history if "binlake.through" in entry]
            assert binlake_commits[0].get("binlake.rewritten") in ("carried", "repartitioned")
        if "no_pk" in work[-1].get("rewritten", []):  # a keyless table's copies, merged
            uri = str(out / "tables" / f"{DATABASE}.no_pk")
            feed = deltalake.DeltaTable(uri).load_cdf(
                starting_version=deltalake.DeltaTable(uri).version()).read_all()
            names = [f.name for f in deltalake.DeltaTable(uri).schema().fields]
            assert (net_copies(pa.table(feed).to_pylist(), names)
                    == binlog_copies(new_files, "no_pk"))
    # Each table took the cheapest way its changes allow.
    assert work[1] == {"appended": ["ints", "no_pk"]}
    assert work[2] == {"merged": ["ints", "probe"]}
    assert work[3] == {"rewritten": ["no_pk"]}  # no key: its rows now, rewritten
    assert work[4] == {"carried": ["probe"]}  # ADD COLUMN: its rows, with the new column
    assert work[5] == {"merged": ["ints", "probe"]}
    assert work[6] == {"carried": ["strings"]}  # TRUNCATE: none of its rows
    assert work[7] == {"carried": ["enums_renamed"]}  # RENAME TABLE
    assert work[8] == {"appended": ["ints"]}
    assert work[9] == {"merged": ["ints", "probe"]}
    assert work[10] == {"appended": ["ints"]}  # DDL that changes no column changes nothing
    # DROP/RENAME COLUMN and a new primary key carry the rows; so does a
    # type change, its values converted as the server converted them
    assert work[11] == {"carried": ["ints", "no_pk", "probe"]}
    assert work[12] == {"carried": ["ints", "numbers", "probe", "strings", "strings_old"]}
    # Nothing new: nothing done.
    assert not run_pipeline(spark, [str(incoming)], str(out)).tables_rebuilt
    if way == "spark":
        assert_partitioning_changes(spark, out, incoming, steps[-1])
    # Spark reads the Delta tables, now and as of an earlier version (the
    # table's versions: 0 its schema, 1 the first run, 2 the first increment).
    ids = lambda rows: sorted(row["id"] for row in rows)  # noqa: E731
    now = binlake.spark.read_table(spark, str(out), f"{DATABASE}.ints")
    assert ids(r.asDict() for r in now.collect()) == ids(steps[-1].tables["ints"])
    then = binlake.spark.read_table(spark, str(out), f"{DATABASE}.ints", as_of=2)
    assert ids(r.asDict() for r in then.collect()) == ids(steps[1].tables["ints"])


def assert_partitioned(spark, out: Path, table: str, columns: list) -> None:
    """The table is partitioned by `columns` (each file in its partition's
    folder), and delta-rs's reader and Spark's read the rows binlake's does."""
    uri = str(out / "tables" / table)
    delta = deltalake.DeltaTable(uri)
    assert delta.metadata().partition_columns == columns, table
    for path in delta.file_uris():
        folders = os.path.relpath(path, uri).split(os.sep)[:-1]
        assert [folder.split("=")[0] for folder in folders] == columns, path
    ours = canonical_rows(binlake.spark.run.pipeline.read_table(str(out), table).to_pylist())
    assert canonical_rows(pa.table(delta.to_pyarrow_table()).to_pylist()) == ours, table
    frame = binlake.spark.read_table(spark, str(out), table)
    assert frame.columns == [f.name for f in delta.schema().fields]
    assert canonical_rows(r.asDict() for r in frame.collect()) == ours, table


def assert_partitioning_changes(spark, out: Path, incoming: Path, step: "Step") -> None:
    """A partitioning a table cannot have is refused in one line with the
    lake as it was; one changed, begun or ended rewrites the table's rows
    once, partitioned as asked, and is kept by the runs that do not name it."""
    before = lake_bytes(out)
    for asked, reason in [({f"{DATABASE}.no_pk": "c"}, "a double column"),
                          ({f"{DATABASE}.probe": "label"}, "a string column"),
                          ({f"{DATABASE}.probe": "nope"}, "the table has no such column")]:
        with pytest.raises(ValueError, match=reason) as refused:
            run_pipeline(spark, [str(incoming)], str(out), partition_by=asked)
        assert "\n" not in str(refused.value) and "nothing was changed" in str(refused.value)
        assert lake_bytes(out) == before
    result = run_pipeline(spark, [str(incoming)], str(out),
                          partition_by=f"{DATABASE}.probe=,{DATABASE}.ints=tiny")
    assert result.table_work == {**{how: [] for how in result.table_work},
                                 "carried": [f"{DATABASE}.ints", f"{DATABASE}.probe"]}
    assert_tables_equal(out, step.tables, step.columns)
    assert_partitioned(spark, out, f"{DATABASE}.ints", ["tiny"])
    assert_partitioned(spark, out, f"{DATABASE}.probe", [])
    assert_partitioned(spark, out, f"{DATABASE}.no_pk", ["a"])  # as named before
    assert not run_pipeline(spark, [str(incoming)], str(out)).tables_rebuilt


WAYS = ("driver", "spark")
#: Keyed tables whose change data feed is held to the binlog's changes.
FED = ("ints", "probe")


def history_rows(out: Path, table: str) -> list[tuple]:
    """(id, from file, from pos, from time, to file, to pos, to time) of the
    history table (--history: the killed runs below keep one, and after each
    increment it must equal `binlog_versions`)."""
    rows = pa.table(deltalake.DeltaTable(str(out / "history" / f"{DATABASE}.{table}"))
                    .to_pyarrow_table()).to_pylist()
    return sorted((r["id"], r["_valid_from_file"], r["_valid_from_pos"], r["_valid_from_time"],
                   r["_valid_to_file"], r["_valid_to_pos"], r["_valid_to_time"]) for r in rows)


def binlog_versions(files: list[str], table: str) -> list[tuple]:
    """The same from the binlogs: each transaction leaves a version of each
    row it changed (the last image it wrote), ending the one before."""
    versions, current = [], {}
    for txn in binlake.transactions(files):
        last = {}
        for change in txn.changes:
            if change.table != table:
                continue
            if change.before is not None:
                last[change.before["id"]] = None
            if change.after is not None:
                last[change.after["id"]] = change.after
        point = [os.path.basename(txn.file), txn.end_pos,
                 dt.datetime.fromtimestamp(txn.timestamp, dt.timezone.utc)]
        for key, row in last.items():
            if key in current:
                current.pop(key)[4:] = point
            if row is not None:
                current[key] = [key, *point, None, None, None]
                versions.append(current[key])
    return sorted(map(tuple, versions))


def fed_keys(out: Path, table: str, first: int, last: int) -> dict:
    """{id: "insert"|"delete"|"update"} of the table's change data feed
    over versions first..last (a version that changed no row adds nothing)."""
    uri = str(out / "tables" / f"{DATABASE}.{table}")
    rows = pa.table(deltalake.DeltaTable(uri).load_cdf(
        starting_version=first, ending_version=last).read_all()).to_pylist()
    before = {row["id"] for row in rows if row["_change_type"] in ("delete", "update_preimage")}
    after = {row["id"] for row in rows if row["_change_type"] in ("insert", "update_postimage")}
    return net_kinds(before, after)


def binlog_keys(files: list[str], table: str, keys=None, read: list[str] | None = None) -> dict:
    """The same from the binlog: a key existed before if its first change
    found it there, and after if its last change left it there. `keys`:
    (id before, id after) of a change (default: its images' `id`); `read`:
    the files to read, from the first (the DDL names the columns where the
    table maps do not), of which `files` are counted."""
    first, last = {}, {}
    counted = {os.path.basename(path) for path in files}
    for change in binlake.changes(read or files):
        if change.table != table or os.path.basename(change.file) not in counted:
            continue
        before, after = keys(change) if keys else (
            change.before["id"] if change.before is not None else None,
            change.after["id"] if change.after is not None else None)
        touches = []
        if change.before is not None:
            touches.append((before, True, False))
        if change.after is not None:
            touches.append((after, False, True))
        for key, was, stays in touches:
            first.setdefault(key, was)
            last[key] = stays
    return net_kinds({k for k, was in first.items() if was},
                     {k for k, stays in last.items() if stays})


def net_copies(feed: list[dict], names: list[str]) -> Counter:
    """Of a keyless table's change data feed: the copies of each row (its
    columns `names`, in the table's order: a partition column comes last in
    a feed) it adds (negative: removes), nets of 0 left out."""
    sign = {"insert": 1, "delete": -1}
    found = Counter()
    for row in feed:
        found[tuple(row[name] for name in names)] += sign[row["_change_type"]]
    return Counter({row: n for row, n in found.items() if n})


def binlog_copies(files: list[str], table: str) -> Counter:
    """The same from the binlog's changes: +1 per after image, -1 per before."""
    found = Counter()
    for change in binlake.changes(files):
        if change.table == table:
            if change.after is not None:
                found[tuple(change.after.values())] += 1
            if change.before is not None:
                found[tuple(change.before.values())] -= 1
    return Counter({row: n for row, n in found.items() if n})


def net_kinds(before: set, after: set) -> dict:
    return {key: "update" if key in before and key in after else
            "delete" if key in before else "insert" for key in before | after}


#: `binlake pipeline` with every increment computed by Spark's jobs.
IN_SPARK = ("import sys; from binlake.spark.commits import driver_way; driver_way.DRIVER_ROWS = -1; "
            "from binlake.cli.dispatch import main; sys.exit(main(sys.argv[1:]))")


def pipeline(incoming: Path, out: Path, way: str = "driver") -> list[str]:
    start = ["-m", "binlake"] if way == "driver" else ["-c", IN_SPARK]
    return [sys.executable, *start, "pipeline", str(incoming), "--out", str(out),
            "--master", "local[2]", "--temporals", "text", "--history"]


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable}


def test_runs_killed_while_merging_end_as_uninterrupted_runs(steps, tmp_path):
    """Each kill comes at a random moment of the tables step (the run says
    when it starts appending and merging; the history tables follow),
    run after run; a rerun then completes the work once: tables equal to
    the server, history tables to the binlogs' versions."""
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    arrive(steps[0], incoming)
    subprocess.run(pipeline(incoming, out), env=environment(), check=True, capture_output=True)
    rng = sweeps.generator(18)
    kills = 0
    # appends; merges; a keyless table's rows rewritten; ADD COLUMN carrying
    # a table's rows; merges after a restart
    for step in steps[1:6]:
        arrive(step, incoming)
        for _ in range(sweeps.trials(KILLS_PER_STEP)):
            # either way: the driver's small increments, or Spark's jobs
            process = subprocess.Popen(pipeline(incoming, out, rng.choice(WAYS)),
                                       env=environment(),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       text=True, start_new_session=True)
            for line in process.stderr:
                if line.startswith(("tables: appending", "tables: carrying")):
                    time.sleep(rng.uniform(0, 3))
                    break
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the JVM and its Python workers too
            except ProcessLookupError:  # it had finished: the next run has nothing to do
                pass
            process.wait()
            kills += 1
        done = subprocess.run(pipeline(incoming, out), env=environment(),
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        assert_tables_equal(out, step.tables, step.columns)
        for table in FED:
            assert history_rows(out, table) == binlog_versions(step.files, table), table
    assert kills == 5 * sweeps.trials(KILLS_PER_STEP)
