"""`binlake pipeline --schema` over binlogs without column names whose tables
change midway: the rebuilt tables equal the server's `SELECT *`, with their
final column names, at the end and `--as-of` every point between the DDL.

Strategy: a private MariaDB writes binlogs with binlog_row_metadata NO_LOG or
MINIMAL; one table exists before the first binlog (its DDL comes from
`mariadb-dump --no-data`, the seed); then every kind of schema change is
made between writes, and the server's tables are captured after each step
with the binlog position there.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
from decimal import Decimal

import pytest

pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyspark")
from binlake.cli.dispatch import main  # noqa: E402
from binlake.constants import EventType as E  # noqa: E402
from binlake.read.scan import scan  # noqa: E402
from binlake.spark.run.pipeline import read_table, run_pipeline  # noqa: E402
from binlake.testing.mariadb import MariaDBServer, ensure_mariadb_installed  # noqa: E402
import sweeps  # noqa: E402

DB = "evolve"

#: (label, statements): after each step the server's tables are captured.
STEPS = [
    ("create", [
        "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), qty INT)",
        "CREATE TABLE log (msg VARCHAR(20), n INT)",  # no primary key
        "INSERT INTO items VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30)",
        "INSERT INTO log VALUES ('a', 1), ('b', 2), ('b', 2)",
        "INSERT INTO seeded VALUES (3, 'c')",
    ]),
    ("add columns", [
        "ALTER TABLE items ADD price DECIMAL(6,2) NOT NULL DEFAULT 1.50 AFTER name, "
        "ADD note VARCHAR(10) DEFAULT 'none', ADD flag TINYINT NOT NULL",
        "UPDATE items SET qty = qty + 1 WHERE id = 1",
        "INSERT INTO items (id, name, qty, price, note, flag) VALUES (4, 'four', 40, 4.25, 'n4', 1)",
        "ALTER TABLE seeded ADD COLUMN extra INT DEFAULT 5 FIRST",
        "INSERT INTO seeded VALUES (9, 4, 'd')",
    ]),
    ("rename and change", [
        "ALTER TABLE items CHANGE qty quantity BIGINT, RENAME COLUMN name TO title",
        "ALTER TABLE log MODIFY n BIGINT UNSIGNED, ALTER COLUMN msg SET DEFAULT 'x'",
        "DELETE FROM items WHERE id = 2",
        "UPDATE items SET quantity = 99 WHERE id = 3",
        "DELETE FROM log WHERE msg = 'a'",
    ]),
    ("drop column and rename table", [
        "ALTER TABLE items DROP COLUMN note",
        "RENAME TABLE items TO goods, log TO journal",
        "UPDATE goods SET title = 'FOUR' WHERE id = 4",
        "INSERT INTO journal (n) VALUES (7)",
        "CREATE TABLE goods_copy LIKE goods",
        "INSERT INTO goods_copy SELECT * FROM goods WHERE id < 4",
    ]),
    ("truncate, drop and re-create", [
        "TRUNCATE TABLE journal",
        "INSERT INTO journal VALUES ('after', 1)",
        "DROP TABLE goods_copy",
        "CREATE TABLE goods_copy (k VARCHAR(5) PRIMARY KEY, v INT)",
        "INSERT INTO goods_copy VALUES ('x', 1)",
        "ALTER TABLE goods RENAME TO stock",
        "INSERT INTO stock (id, title, price, quantity, flag) VALUES (5, 'five', 5.00, 5, 1)",
    ]),
]


def _server(work, row_metadata: str) -> MariaDBServer:
    """A private MariaDB writing binlogs with this row metadata (skips without one)."""
    try:
        ensure_mariadb_installed()
    except RuntimeError as error:
        pytest.skip(f"MariaDB server unavailable: {error}")
    return MariaDBServer(work / "server", binlog_row_metadata=row_metadata)


@pytest.fixture(scope="module", params=["NO_LOG", "MINIMAL"])
def workload(request, tmp_path_factory):
    work = tmp_path_factory.mktemp(f"evolve-{request.param}")
    with _server(work, request.param) as server:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"CREATE TABLE {DB}.seeded (id INT PRIMARY KEY, tag CHAR(3))")
        server.execute(f"INSERT INTO {DB}.seeded VALUES (1, 'a'), (2, 'b')")
        seed = work / "seed.sql"
        dump = subprocess.run(["mariadb-dump", f"--defaults-file={server.defaults_file}",
                               "--no-data", "--databases", DB], capture_output=True, check=True)
        seed.write_bytes(dump.stdout)
        # The rows the seeded table had before the first binlog read (a backup's).
        backup = {"seeded": _rows(server, "seeded")}
        server.flush_logs()
        first = server.query("SHOW MASTER STATUS")[0][0]
        points = []
        connection = server.connect(DB)
        try:
            with connection.cursor() as cursor:
                for label, statements in STEPS:
                    for statement in statements:
                        cursor.execute(statement)
                    connection.commit()
                    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
                    points.append((label, f"{file}:{pos}", _tables(server)))
        finally:
            connection.close()
        server.flush_logs()
        files = [str(p) for p in server.binlog_files() if p.name >= first and p.suffix[1:].isdigit()]
        yield files, seed, backup, points


def _rows(server, table: str) -> list[dict]:
    connection = server.connect(DB)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM `{table}`")
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]
    finally:
        connection.close()


def _tables(server) -> dict:
    return {table: _rows(server, table) for (table,) in server.query(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (DB,))}


def _plain(value):
    """One kind per value: what the server returns and what Parquet holds differ
    in kind only (bytes of a text column the binlog gave no charset)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value.hex()
    if isinstance(value, Decimal):  # BIGINT UNSIGNED is decimal(20,0) in Parquet
        return int(value) if value.as_tuple().exponent >= 0 else str(value)
    if isinstance(value, float):
        return str(Decimal(str(value)))
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def _canonical(rows: list[dict]) -> list:
    return sorted((tuple((k, _plain(v)) for k, v in row.items()) for row in rows), key=repr)


def _rebuilt(out) -> dict:
    tables = {}
    for name in os.listdir(os.path.join(out, "tables")):
        database, table = name.split(".", 1)
        assert database == DB
        tables[table] = read_table(out, name).to_pylist()
    return tables


def _assert_equal(got: dict, expected: dict, seeded_before: list[dict]) -> None:
    assert sorted(got) == sorted(expected)
    for table, rows in expected.items():
        if table == "seeded":
            # Rows written before the first binlog are the backup's, not the binlogs'.
            before = {r["id"] for r in seeded_before}
            rows = [r for r in rows if r["id"] not in before]
        assert [list(r) for r in got[table][:1]] == [list(r) for r in rows[:1]], table
        assert _canonical(got[table]) == _canonical(rows), table


def test_tables_equal_the_server_at_the_end_and_between_every_change(workload, spark, tmp_path):
    files, seed, backup, points = workload
    out = tmp_path / "out"
    result = run_pipeline(spark, files, str(out), schema=str(seed))
    assert not [w for w in result.warnings if "schema history" in w or "cannot read" in w]
    _assert_equal(_rebuilt(out), points[-1][2], backup["seeded"])
    then = tmp_path / "then"
    for label, position, tables in points[:-1]:
        run_pipeline(spark, files, str(out), as_of=position, as_of_out=str(then))
        _assert_equal(_rebuilt(then), tables, backup["seeded"])
    _assert_equal(_rebuilt(out), points[-1][2], backup["seeded"])  # the lake's stayed


@pytest.mark.parametrize("read_in", ["driver", "executors"])
def test_pipeline_failures_are_one_line(workload, tmp_path, read_in):
    files, seed, _backup, _points = workload
    broken = tmp_path / os.path.basename(files[0])
    data = bytearray(open(files[0], "rb").read())
    found = scan(files[0])
    rows_at = [p for p, t in zip(found.positions, found.types) if t in (E.WRITE_ROWS_EVENT_V1, E.WRITE_ROWS_EVENT)][-1]
    data[rows_at + 25] ^= 0xFF  # a rows event's body: a checksum mismatch
    broken.write_bytes(bytes(data))
    import io
    out, err = io.StringIO(), io.StringIO()
    status = main(["pipeline", str(broken), "--out", str(tmp_path / "o"), "--schema", str(seed),
                   "--read-in", read_in], out=out, err=err)
    assert status == 1
    last = err.getvalue().strip().splitlines()[-1]
    assert last.startswith(f"binlake pipeline: {broken}: offset {rows_at}: "), err.getvalue()
    assert "Traceback" not in err.getvalue() and "\tat " not in err.getvalue()


# -- the schema workload of binlake.testing (every kind of column-changing DDL) -------------

@pytest.fixture(scope="module", params=["NO_LOG", "MINIMAL"])
def schema_workload(request, tmp_path_factory):
    from binlake.testing.workload import prepare_schema_workload, run_schema_workload
    work = tmp_path_factory.mktemp(f"schema-workload-{request.param}")
    with _server(work, request.param) as server:
        baseline = prepare_schema_workload(server, "pipe_wl")
        checkpoints = run_schema_workload(server, "pipe_wl")
        server.flush_logs()
        files = [str(p) for p in server.binlog_files()]
    first = next(i for i, p in enumerate(files) if p.endswith("/" + baseline.first_binlog))
    seed = work / "seed.sql"
    seed.write_text(baseline.schema_sql, encoding="utf-8")
    backup_rows = {row for state in checkpoints[0].tables.values() for row in state.rows}
    return files[first:], seed, checkpoints, backup_rows


def _state_rows(out) -> dict:
    found = {}
    for name in os.listdir(os.path.join(out, "tables")):
        table = read_table(out, name)
        found[name] = (tuple(table.column_names), table.to_pylist())
    return found


#: Generated columns added by ALTER: the server computes them for the rows it
#: has; a binlog has their values only in rows written since (README, Known limits).
COMPUTED_BY_THE_SERVER = {("pipe_wl.computed", "label")}
#: Rows moved by ALTER ... CONVERT PARTITION / CONVERT TABLE: the server logs the
#: statement, not the rows, so which rows moved is not in the binlog (Known limits).
ROWS_MOVED_BY_DDL = {"pipe_wl.readings", "pipe_wl.readings_old"}


def test_pipeline_follows_every_kind_of_ddl_of_the_schema_workload(schema_workload, spark,
                                                                      tmp_path):
    """Every table at every checkpoint, with its columns in order; rows the
    backup held before the first binlog are not in the binlogs (their table
    must only hold the binlogs' rows among the server's)."""
    files, seed, checkpoints, backup_rows = schema_workload
    out, then = str(tmp_path / "out"), str(tmp_path / "then")
    result = run_pipeline(spark, files, out, schema=str(seed))
    assert not [w for w in result.warnings if "schema history" in w or "cannot read" in w]
    # The last one always; a fifth of the others (each a rebuild of every
    # table as of it, the slowest sweep of the suite).
    for checkpoint in sweeps.share(reversed(checkpoints[1:]), 1 / 5):
        run_pipeline(spark, files, out, as_of=f"{checkpoint.file}:{checkpoint.pos}", as_of_out=then)
        got = _state_rows(then)
        assert sorted(got) == sorted(checkpoint.tables), checkpoint.label
        for name, state in checkpoint.tables.items():
            columns, rows = got[name]
            assert columns == state.columns, (checkpoint.label, name)
            computed = {c for t, c in COMPUTED_BY_THE_SERVER if t == name}
            kinds = dict(zip(state.columns, state.types))
            server = _typed([dict(zip(state.columns, r)) for r in state.rows
                             if r not in backup_rows], kinds, computed)
            rebuilt = _typed(rows, kinds, computed, from_server=False)
            if name in ROWS_MOVED_BY_DDL:
                continue
            where = (checkpoint.label, name, "missing:", sorted(set(server) - set(rebuilt)),
                     "extra:", sorted(set(rebuilt) - set(server)))
            if any(r in backup_rows for r in state.rows):
                assert set(server) <= set(rebuilt), where
            else:
                assert rebuilt == server, where


def _typed(rows: list[dict], kinds: dict, left_out: set, from_server: bool = True) -> list:
    """Rows as tables/ types them (truth.typed_value), in one canonical form;
    text of a column the binlog gave no charset is compared as its UTF-8."""
    from .truth import canonical, typed_value
    out = []
    for row in rows:
        values = []
        for name, value in row.items():
            if name in left_out:
                continue
            column_type = kinds[name]
            data_type = re.match(r"\w+", column_type).group(0).lower()
            if from_server:
                value = typed_value(value, {"data_type": data_type, "column_type": column_type})
            if isinstance(value, bytes) and data_type in _TEXTS:
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError:  # a column converted to latin1
                    value = value.decode("cp1252")
            values.append((name, canonical(value)))
        out.append(tuple(values))
    return sorted(out, key=repr)


_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum"}
