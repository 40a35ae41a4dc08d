"""The lake under partial row images (binlog_row_image=MINIMAL and NOBLOB):
an UPDATE logs the key and the changed columns (MINIMAL) or every column
but the BLOBs it did not change (NOBLOB), an INSERT under MINIMAL only the
columns it names. After every increment the Delta tables equal the
server's `SELECT *`; what cannot be completed exactly is refused in one
line, with no table changed."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")

from binlake.spark.pipeline import load_manifest, run_pipeline  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402
from binlake.testing.workload import DATABASE, SESSION_SETUP, expected_final_state  # noqa: E402

from .test_lake_refusals import lake_bytes  # noqa: E402
from .test_pipeline import assert_tables_equal  # noqa: E402
from .truth import _columns  # noqa: E402

#: Character sets said: NO_LOG table maps do not say them (binlake.spark.typed).
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
#: column, so the names come from the DDL the binlogs hold.
SETTINGS = [("MINIMAL", "FULL"), ("NOBLOB", "FULL"), ("MINIMAL", "NO_LOG")]


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
    work = []
    for files, tables, columns in steps:
        arrive(files, incoming)
        result = run_pipeline(spark, [str(incoming)], str(out))
        assert_tables_equal(out, tables, columns)
        assert load_manifest(str(out))["pending"] == {}
        work.append({how: sorted(t.split(".")[1] for t in names)
                     for how, names in result.table_work.items() if names})
    # Partial images are merged into the rows the tables hold, not rebuilt.
    assert work[1]["merged"] == ["composite", "keyed", "unique_keyed"]
    assert work[2]["merged"] == ["composite", "keyed"]


def refused_then(spark, server, tmp_path, database: str, statements: list[str],
                 words: str) -> None:
    """A lake of `database` read so far; then the statements' binlog is
    refused in one line, no table changed. (A lake of its own database:
    the binlogs keep what other tests refused.)"""
    incoming, out = tmp_path / "incoming", tmp_path / "out"
    incoming.mkdir()
    server.execute(f"CREATE DATABASE IF NOT EXISTS {database}")
    server.flush_logs()
    arrive(capture(server)[0], incoming)
    run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    execute(server, [f"USE {database}", *statements])
    arrive(capture(server)[0], incoming)
    tables = lake_bytes(out / "tables")
    with pytest.raises(ValueError, match=words) as refusal:
        run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    assert "\n" not in str(refusal.value) and "nothing was applied" in str(refusal.value)
    assert lake_bytes(out / "tables") == tables


def test_a_row_moved_to_a_new_key_by_a_partial_image_is_refused(spark, server, image, tmp_path):
    blob = "TEXT" if image == "NOBLOB" else "INT"  # NOBLOB leaves out only unchanged BLOBs
    refused_then(spark, server, tmp_path, "moves", [
        f"CREATE TABLE moved (id INT PRIMARY KEY, v {blob})",
        "INSERT INTO moved VALUES (1, 1)",
        "UPDATE moved SET id = 100 WHERE id = 1"],
        r"binlog\.\d+ at \d+: moves\.moved: a partial row image")


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
