"""A table without a primary key whose first UNIQUE NOT NULL key holds a
prefix of a column (issue 46, defect 4): the server keys it by the next
UNIQUE key of NOT NULL whole columns (its clustered index), and under
binlog_row_image=MINIMAL a before image holds that key alone. The lake
keys the table as the server does, so an UPDATE and a DELETE of rows it
holds find them: after each run the Delta table equals the server's
`SELECT *`, whether the table maps name the key (binlog_row_metadata=FULL)
or the schema history must (NO_LOG).

Strategy: one private MariaDB (MINIMAL row images); each metadata setting
a database of its own, its binlogs read in two runs (the rows, then the
changes to them) and once more in one run from nothing."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")

from binlake.spark.run.pipeline import read_table, run_pipeline  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402
from binlake.testing.workload import DATABASE, expected_final_state  # noqa: E402

from .test_row_images import arrive, capture, execute  # noqa: E402

ROWS = 200

CREATE = ("CREATE TABLE t (a VARCHAR(100) NOT NULL, b INT NOT NULL, c INT, "
          "UNIQUE (a(10)), UNIQUE (b)) DEFAULT CHARSET=utf8mb4")
INSERT = "INSERT INTO t VALUES " + ", ".join(
    f"('key{b:07d} of row {b}', {b}, {b})" for b in range(1, ROWS + 1))
CHANGES = ["UPDATE t SET c = -c WHERE b % 3 = 0", "DELETE FROM t WHERE b % 5 = 0"]


@pytest.fixture(scope="module")
def server(mariadb, tmp_path_factory):
    with MariaDBServer(tmp_path_factory.mktemp("prefix-keys"), server_id=46,
                       binlog_row_image="MINIMAL") as running:
        running.execute(f"CREATE DATABASE {DATABASE}")  # where `execute` connects
        yield running


def held(out, database: str) -> list[dict]:
    return sorted(read_table(str(out), f"{database}.t").to_pylist(), key=lambda row: row["b"])


def served(server, database: str) -> list[dict]:
    return sorted(expected_final_state(server, database)["t"], key=lambda row: row["b"])


@pytest.mark.parametrize("metadata", ["NO_LOG", "FULL"])
def test_a_table_keyed_past_a_prefixed_unique_key_takes_its_minimal_changes(
        spark, server, tmp_path, metadata):
    database = f"prefixed_{metadata.lower()}"
    incoming, out, whole = tmp_path / "incoming", tmp_path / "out", tmp_path / "whole"
    incoming.mkdir()
    server.execute(f"SET GLOBAL binlog_row_metadata = '{metadata}'")
    execute(server, [f"CREATE DATABASE {database}", f"USE {database}", CREATE, INSERT])
    arrive(capture(server)[0], incoming)
    run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    assert held(out, database) == served(server, database)
    execute(server, [f"USE {database}", *CHANGES])
    arrive(capture(server)[0], incoming)
    run_pipeline(spark, [str(incoming)], str(out), tables=f"{database}.*")
    rows = served(server, database)
    assert len(rows) == ROWS - ROWS // 5
    assert held(out, database) == rows
    run_pipeline(spark, [str(incoming)], str(whole), tables=f"{database}.*")
    assert held(whole, database) == rows
