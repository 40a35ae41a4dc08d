"""The lake under every binlog_row_image (FULL; MINIMAL: an UPDATE logs the
key and the changed columns, an INSERT only the columns it names; NOBLOB:
every column but the BLOBs an UPDATE did not change) and every
binlog_row_metadata (NO_LOG, MINIMAL, FULL: what the table maps say of
names, keys and character sets), a keyed, a composite-keyed, a
unique-keyed and a keyless table taken through ten increments with every
DDL the schema history follows (ADD/DROP/RENAME COLUMN, a type change,
TRUNCATE, RENAME TABLE, a new primary key). After every increment the
Delta tables equal the server's `SELECT *`, read as Parquet files and,
after the last, through Spark; the change data feed of each run's MERGE
into `keyed` says what the binlog's changes did to its keys. What partial
images cannot complete exactly is refused in one line, with no table
changed. The nine settings are a sweep (tests/sweeps.py): each run takes a
share, MINIMAL images without metadata always."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
deltalake = pytest.importorskip("deltalake")

import binlake.spark  # noqa: E402
import binlake.spark.commits.driver_way  # noqa: E402
from binlake.spark.run.pipeline import load_manifest, read_table, run_pipeline  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402
from binlake.testing.workload import DATABASE, SESSION_SETUP, expected_final_state  # noqa: E402

import sweeps  # noqa: E402

from .test_increments import binlog_keys, fed_keys  # noqa: E402
from .test_lake_refusals import lake_bytes  # noqa: E402
from .test_pipeline import assert_tables_equal, canonical_rows, typed_rows  # noqa: E402
from .truth import _columns  # noqa: E402

#: Character sets said: NO_LOG table maps do not say them (binlake.spark.plans.typed).
CREATE = [
    # keyed, with columns an INSERT may leave out (a DEFAULT, NULL) and a BLOB
    "CREATE TABLE keyed (id INT PRIMARY KEY, x INT NOT NULL DEFAULT 7, note TEXT, "
    "z INT, label VARCHAR(10) DEFAULT 'dflt') DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE composite (a INT, b VARCHAR(8), n INT DEFAULT 1, PRIMARY KEY (a, b)) "
    "DEFAULT CHARSET=utf8mb4",
    "CREATE TABLE keyless (a INT, b VARCHAR(8)) DEFAULT CHARSET=utf8mb4",
    # no primary key: the server finds rows by the UNIQUE key of NOT NULL columns
    "CREATE TABLE unique_keyed (id INT NOT NULL, v INT DEFAULT 3, note TEXT, UNIQUE KEY (id), "
    "UNIQUE KEY (v)) DEFAULT CHARSET=utf8mb4",
]

#: One binlog file per step, the pipeline run after each.
STEPS = [
    CREATE + [
        "INSERT INTO keyed (id, note) VALUES (1, 'one'), (2, NULL)",
        "INSERT INTO keyed VALUES (3, 30, 'three', 3, 'full')",
        "INSERT INTO composite (a, b) VALUES (1, 'x'), (1, 'y')",
        "INSERT INTO keyless VALUES (1, 'a'), (1, 'a'), (2, 'b')",
        "INSERT INTO unique_keyed (id, note) VALUES (1, 'one')",
        "INSERT INTO unique_keyed VALUES (2, 20, 'two')"],
    ["UPDATE keyed SET x = 8 WHERE id = 1",
     "UPDATE keyed SET z = 2, note = 'two' WHERE id = 2",
     "UPDATE composite SET n = 5 WHERE a = 1 AND b = 'y'",
     "UPDATE keyless SET b = 'c' WHERE a = 2",
     "UPDATE unique_keyed SET v = 30, note = 'changed' WHERE id = 2",
     "DELETE FROM unique_keyed WHERE id = 1"],
    ["UPDATE keyed SET x = x + 1",  # rows of earlier runs, held by the table only
     "UPDATE keyed SET label = NULL WHERE id = 3",
     "DELETE FROM keyed WHERE id = 2",
     "INSERT INTO keyed (id) VALUES (2)",  # the key again, whole from its defaults
     "UPDATE keyed SET note = 'again' WHERE id = 2",
     "DELETE FROM composite WHERE b = 'x'",
     "DELETE FROM keyless WHERE a = 1 LIMIT 1"],
    ["ALTER TABLE keyed ADD COLUMN w INT NOT NULL DEFAULT 4",
     "UPDATE keyed SET w = 40 WHERE id = 1",
     "UPDATE keyed SET note = 'blob changed' WHERE id = 3",
     "INSERT INTO keyed (id, note) VALUES (5, 'five')"],
    ["UPDATE keyed SET z = 300 WHERE id = 3",  # before the MODIFY, converted with the rows
     "ALTER TABLE keyed MODIFY z TINYINT",  # the server clips 300 to 127 (a lax sql_mode)
     "UPDATE keyed SET z = 9 WHERE id = 1",
     "ALTER TABLE composite MODIFY n DECIMAL(6,1) DEFAULT 1",
     "UPDATE composite SET n = 2.5 WHERE a = 1"],
    ["ALTER TABLE composite RENAME COLUMN n TO m",
     "INSERT INTO composite (a, b) VALUES (2, 'z')",
     "UPDATE composite SET m = 7.5 WHERE a = 2"],
    ["ALTER TABLE keyed DROP COLUMN label", "DELETE FROM keyed WHERE id = 5",
     "INSERT INTO keyless VALUES (3, 'd')"],
    ["TRUNCATE TABLE keyless", "INSERT INTO keyless VALUES (4, 'e'), (4, 'e'), (5, 'f')"],
    ["RENAME TABLE unique_keyed TO unique_renamed",
     "UPDATE unique_renamed SET note = 'renamed' WHERE id = 2"],
    ["DELETE FROM keyless WHERE a = 4 LIMIT 1", "ALTER TABLE keyless ADD PRIMARY KEY (a)",
     "UPDATE keyless SET b = 'g' WHERE a = 5", "UPDATE keyed SET x = 0 WHERE id = 1"],
]


def capture(server) -> tuple[list[str], dict, dict]:
    closed = [str(p) for p in server.binlog_files()][:-1]
    return closed, expected_final_state(server, DATABASE), _columns(server)


def execute(server, statements: list[str]) -> None:
    connection = server.connect(DATABASE)
    with connection.cursor() as cursor:
        for statement in (*SESSION_SETUP, *statements):
            cursor.execute(statement)
    connection.close()
    server.flush_logs()


#: (binlog_row_image, binlog_row_metadata): NO_LOG table maps name no
#: column, so the names come from the DDL the binlogs hold. The first is
#: in every run's share.
SETTINGS = sweeps.share([("MINIMAL", "NO_LOG")] + [
    (image, metadata) for image in ("FULL", "MINIMAL", "NOBLOB")
    for metadata in ("NO_LOG", "MINIMAL", "FULL") if (image, metadata) != ("MINIMAL", "NO_LOG")])


@pytest.fixture(scope="module", params=SETTINGS, ids=["-".join(p) for p in SETTINGS])
def settings(request):
    return request.param


@pytest.fixture(scope="module")
def image(settings):
    return settings[0]


@pytest.fixture(scope="module")
def server(mariadb, settings, tmp_path_factory):
    image, metadata = settings
    with MariaDBServer(tmp_path_factory.mktemp(f"images-{image}-{metadata}"), server_id=12,
                       binlog_row_image=image, binlog_row_metadata=metadata) as running:
        running.execute(f"CREATE DATABASE {DATABASE}")
        yield running


@pytest.fixture(scope="module")
def steps(server) -> list:
    found = []
    for statements in STEPS:
        execute(server, statements)
        found.append(capture(server))
    return found


def arrive(files: list[str], incoming: Path) -> None:
    for path in files:
        if not (incoming / os.path.basename(path)).exists():
            shutil.copy(path, incoming)


def test_every_increment_equal_to_the_server(spark, steps, image, tmp_path):
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    work, read = [], []
    for files, tables, columns in steps:
        arrive(files, incoming)
        version = _version(out, "keyed")
        result = run_pipeline(spark, [str(incoming)], str(out))
        assert_tables_equal(out, tables, columns)
        assert load_manifest(str(out)).pending == {}
        work.append({how: sorted(t.split(".")[1] for t in names)
                     for how, names in result.table_work.items() if names})
        if "keyed" in work[-1].get("merged", []):
            new_files = [f for f in files if f not in read]
            assert fed_keys(out, "keyed", version + 1, _version(out, "keyed")) == \
                binlog_keys(new_files, "keyed", image_keys, read=files), len(work)
        read = files
    # Partial images are merged into the rows the tables hold; DDL carries
    # the rows (a type change's converted); none is rebuilt from changes/.
    assert work[1]["merged"] == ["composite", "keyed", "unique_keyed"]
    assert work[2]["merged"] == ["composite", "keyed"]
    assert work[4]["carried"] == ["composite", "keyed"]
    assert all("rebuilt" not in done for done in work[1:]), work
    # A lake built from all of the changes at once is the same: one table
    # first, then every other, read again for them (--tables widened).
    whole = tmp_path / "whole"
    run_pipeline(spark, [str(incoming)], str(whole), tables=f"{DATABASE}.keyed")
    run_pipeline(spark, [str(incoming)], str(whole))
    assert_tables_equal(whole, tables, columns)
    # Spark reads the same tables.
    for table, rows in tables.items():
        frame = binlake.spark.read_table(spark, str(out), f"{DATABASE}.{table}")
        assert canonical_rows([r.asDict() for r in frame.collect()]) == canonical_rows(
            typed_rows(rows, columns[table], "text")), table


def _version(out: Path, table: str) -> int:
    uri = out / "tables" / f"{DATABASE}.{table}"
    return deltalake.DeltaTable(str(uri)).version() if uri.exists() else -1


def image_keys(change) -> tuple:
    """The `id` an image's change was before, and is after: a MINIMAL after
    image leaves out the key it did not change."""
    before = change.before["id"] if change.before is not None else None
    after = None
    if change.after is not None:
        after = change.after["id"] if "id" in change.after else before
    return before, after


def refused_then(spark, server, tmp_path, database: str, statements: list[str],
                 words: str) -> None:
    """A lake of `database` read so far; then the statements' binlog is
    refused in one line, no table changed; or, under FULL row images, which
    leave nothing out, applied. (A lake of its own database: the binlogs
    keep what other tests refused.)"""
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    server.execute(f"CREATE DATABASE IF NOT EXISTS {database}")
    server.flush_logs()
    arrive(capture(server)[0], incoming)
    run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    execute(server, [f"USE {database}", *statements])
    arrive(capture(server)[0], incoming)
    if server.settings["binlog_row_image"] == "FULL":
        run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
        held = {p.name: len(read_table(str(out), p.name)) for p in (out / "tables").iterdir()}
        assert held == {f"{database}.{table}": len(rows) for table, rows
                        in expected_final_state(server, database).items()}
        return
    tables = lake_bytes(out / "tables")
    with pytest.raises(ValueError, match=words) as refusal:
        run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    assert "\n" not in str(refusal.value) and "nothing was applied" in str(refusal.value)
    assert lake_bytes(out / "tables") == tables


#: Rows moved to new keys by partial images (MINIMAL: the key before, the
#: changed columns after): each takes the row its old key held.
MOVES = [
    "UPDATE moved SET id = 10 WHERE id = 2",  # a row only the table holds
    "UPDATE moved SET a = 30 WHERE id = 3",  # a partial change, then its row moved,
    "UPDATE moved SET id = 20 WHERE id = 3",
    "UPDATE moved SET id = 21 WHERE id = 20",  # moved again,
    "UPDATE moved SET b = 'moved' WHERE id = 21",  # and changed where it is now
    "INSERT INTO moved (id, a, b) VALUES (8, 8, 'eight')",  # a row of this run, moved
    "UPDATE moved SET id = 80 WHERE id = 8",
    "DELETE FROM moved WHERE id = 1",  # a key freed, then taken by a move
    "UPDATE moved SET id = 1 WHERE id = 4",
    "UPDATE moved SET id = id + 100 WHERE id IN (6, 7)",  # one statement, two rows
]


@pytest.mark.parametrize("altered", [False, True])
@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_a_row_moved_to_a_new_key_by_a_partial_image_takes_the_row_it_was(
        spark, server, image, tmp_path, monkeypatch, engine, altered):
    """An UPDATE of the primary key is an ordinary statement: under MINIMAL
    images its after image holds the new key alone, and the row is the one
    the old key held (the table's, or one a change of the run wrote), as
    the server has it. Many changes (more than the driver computes) take
    the same way: Spark's aggregate by key cannot follow a row across keys;
    so do the changes of a table a DDL of the run carries into its new
    columns (`altered`; randomized check R2: Spark refused them)."""
    database = f"moves_{engine}{'_altered' if altered else ''}"
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    execute(server, [f"CREATE DATABASE {database}", f"USE {database}",
                     "CREATE TABLE moved (id INT PRIMARY KEY, a INT, b VARCHAR(10)) "
                     "DEFAULT CHARSET=utf8mb4",
                     "SET SESSION binlog_row_image = 'FULL'",
                     *[f"INSERT INTO moved VALUES ({i}, {i}, 'row {i}')" for i in range(1, 8)]])
    arrive(capture(server)[0], incoming)
    run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    execute(server, [f"USE {database}",
                     *(["ALTER TABLE moved ADD COLUMN e INT DEFAULT 5"] if altered else []),
                     *MOVES])
    arrive(capture(server)[0], incoming)
    if engine == "spark":
        monkeypatch.setattr(binlake.spark.commits.driver_way, "DRIVER_ROWS", -1)
        monkeypatch.setattr(binlake.spark.commits.driver_way, "DRIVER_TABLE_ROWS", -1)
    run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    key = lambda row: row["id"]  # noqa: E731
    assert sorted(read_table(str(out), f"{database}.moved").to_pylist(), key=key) == sorted(
        expected_final_state(server, database)["moved"], key=key)


def test_a_table_keyed_by_a_key_binlake_does_not_know_is_refused(spark, server, settings,
                                                                tmp_path):
    """A UNIQUE NOT NULL key without a primary key, created where the
    binlogs do not say (sql_log_bin=0: no --schema either) and not named by
    the table maps (binlog_row_metadata=MINIMAL; FULL names it as the
    primary key): the server finds rows by it, and logs only it (MINIMAL) or
    no BLOB (NOBLOB) in the before image, which names no row of a table
    binlake takes for keyless."""
    refused_then(spark, server, tmp_path, "uniques", [
        "SET SESSION sql_log_bin = 0",
        "CREATE TABLE unique_only (id INT NOT NULL, v INT, note TEXT, UNIQUE KEY (id))",
        "SET SESSION sql_log_bin = 1",
        "SET GLOBAL binlog_row_metadata = 'MINIMAL'",
        "INSERT INTO unique_only VALUES (1, 1, 'a')",
        "UPDATE unique_only SET v = 2 WHERE id = 1",
        f"SET GLOBAL binlog_row_metadata = '{settings[1]}'"],
        r"uniques\.unique_only: the row is identified by a key binlake does not know")


def test_an_insert_leaving_out_a_column_whose_default_is_not_known_is_refused(
        spark, server, settings, tmp_path):
    """Tables created where the binlogs do not say (their DEFAULTs unknown),
    only inserted into: a new lake builds them with no aggregate by key,
    and refuses a MINIMAL image that leaves a column out, keyed (FULL
    metadata names the key) or keyless, as the aggregate refuses it."""
    database = "inserted"
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    execute(server, [
        f"CREATE DATABASE {database}", f"USE {database}",
        "SET SESSION sql_log_bin = 0",
        "CREATE TABLE hidden_keyed (id INT PRIMARY KEY, v INT DEFAULT 5)",
        "CREATE TABLE hidden_keyless (a INT, b INT DEFAULT 6)",
        "SET SESSION sql_log_bin = 1",
        "SET GLOBAL binlog_row_metadata = 'FULL'",
        "INSERT INTO hidden_keyed (id) VALUES (1), (2)",
        "INSERT INTO hidden_keyless (a) VALUES (1), (1)",
        f"SET GLOBAL binlog_row_metadata = '{settings[1]}'"])
    arrive(capture(server)[0], incoming)
    if settings[0] != "MINIMAL":  # the inserts log every column: built as the server has them
        run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
        assert {p.name: len(read_table(str(out), p.name)) for p in (out / "tables").iterdir()} \
            == {"inserted.hidden_keyed": 2, "inserted.hidden_keyless": 2}
        return
    with pytest.raises(ValueError, match=r"binlog\.\d+ at \d+: inserted\.hidden_\w+: a partial "
                                         r"row image") as refusal:
        run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    assert "\n" not in str(refusal.value) and "nothing was applied" in str(refusal.value)
    assert not any((out / "tables").glob("*/*.parquet"))


def test_a_replace_of_a_held_row_under_partial_images_is_refused(spark, server, tmp_path):
    """REPLACE of a row its key holds: MariaDB runs it as an UPDATE and,
    under MINIMAL or NOBLOB images, logs the columns named (NOBLOB: and the
    other non-BLOBs), not those it set to their DEFAULTs (the randomized
    check's R4: the lake kept their old values). Its statement, annotated in
    events/, refuses the run in one line; an UPDATE, a REPLACE of a new key,
    and an INSERT ... ON DUPLICATE KEY UPDATE beside it do not."""
    refused_then(spark, server, tmp_path, "replaces", [
        "CREATE TABLE r (id INT PRIMARY KEY, a INT DEFAULT 1, note TEXT) DEFAULT CHARSET=utf8mb4",
        "INSERT INTO r VALUES (1, 10, 'ten'), (2, 20, 'twenty'), (3, 30, 'thirty')",
        "UPDATE r SET a = 21 WHERE id = 2",
        "REPLACE INTO r (id, a) VALUES (4, 40)",
        "INSERT INTO r (id, a) VALUES (3, 31) ON DUPLICATE KEY UPDATE a = 31",
        "/* kept */ REPLACE INTO r (id, a) VALUES (1, 11)"],
        r"binlog\.\d+ at \d+: replaces\.r: a REPLACE of a row its key held")
