"""`--schema-from`: the seed schema read from a live server names the columns
of binlogs written without them (binlog_row_metadata=NO_LOG).

Strategy: a private server gets its tables (and a view and a sequence, which
are not tables to seed), a new binlog, then only row changes. `binlake
schema` and `binlake sql` with `--schema-from` pointed at the server must
know every column; the SQL replayed onto the tables as they were before the
binlog gives the server's tables.
"""
from __future__ import annotations

import argparse
import json
import subprocess

import pytest

from binlake.cli.commands import pipeline
from binlake.schema.history import load_schema
from binlake.testing.mariadb import MariaDBServer
from binlake.testing.workload import tables_state

from .replay import replay, run_binlake

pytestmark = pytest.mark.server

DATABASES = ("sf_shop", "sf_crm")


@pytest.fixture(scope="module")
def server(mariadbd, tmp_path_factory):
    with MariaDBServer(tmp_path_factory.mktemp("schema-from"), binlog_row_metadata="NO_LOG") as server:
        yield server


@pytest.fixture(scope="module")
def written(server):
    """(binlog files after the tables were made, mariadb-dump --no-data of them, final tables)"""
    for database in DATABASES:
        server.execute(f"DROP DATABASE IF EXISTS {database}")
        server.execute(f"CREATE DATABASE {database}")
    server.execute("CREATE TABLE sf_shop.orders (id INT PRIMARY KEY, customer VARCHAR(20), "
                   "total DECIMAL(8,2), paid TINYINT UNSIGNED, tag BINARY(4))")
    server.execute("CREATE TABLE sf_shop.`odd name` (`select` INT, `a b` TEXT)")
    server.execute("CREATE TABLE sf_crm.people (k1 INT, k2 CHAR(2), name VARCHAR(30), "
                   "PRIMARY KEY (k2, k1))")
    server.execute("CREATE VIEW sf_shop.big_orders AS SELECT * FROM sf_shop.orders WHERE total > 10")
    server.execute("CREATE SEQUENCE sf_crm.ids")
    dump = subprocess.run(["mariadb-dump", f"--defaults-file={server.defaults_file}", "--no-data",
                           "--databases", *DATABASES], capture_output=True, check=True).stdout
    server.flush_logs()
    first = server.query("SHOW MASTER STATUS")[0][0]
    for statement in (
            "INSERT INTO sf_shop.orders VALUES (1, 'ann', 5.50, 200, 'ab'), (2, 'bo', 12, 0, NULL), "
            "(3, 'cy', 1, 255, x'00000000')",
            "UPDATE sf_shop.orders SET paid = 250, customer = 'ann!' WHERE id = 1",
            "DELETE FROM sf_shop.orders WHERE id = 2",
            "INSERT INTO sf_shop.`odd name` VALUES (1, 'x'), (1, 'x'), (2, NULL)",
            "UPDATE sf_shop.`odd name` SET `a b` = 'y' WHERE `select` = 2",
            "DELETE FROM sf_shop.`odd name` WHERE `select` = 1 LIMIT 1",
            "INSERT INTO sf_crm.people VALUES (1, 'aa', 'one'), (1, 'bb', 'two')",
            "UPDATE sf_crm.people SET name = 'uno' WHERE k1 = 1 AND k2 = 'aa'"):
        server.execute(statement)
    final = tables_state(server, DATABASES)
    server.flush_logs()
    files = [str(p) for p in server.binlog_files()]
    files = files[next(i for i, f in enumerate(files) if f.endswith("/" + first)):]
    return files, dump, final


def _connection(server) -> list[str]:
    return ["--schema-from", "--host", "127.0.0.1", "--port", str(server.port), "--user", "root"]


def test_schema_prints_the_servers_tables_as_seeds(server, written):
    files, _, _ = written
    status, text, err = run_binlake("schema", *_connection(server), *files)
    assert status == 0 and err == "", err
    text = text.decode()
    assert "CREATE TABLE `sf_shop`.`orders` (\n  `id` INT(11) NOT NULL,\n" in text
    assert "  `paid` TINYINT(3) UNSIGNED DEFAULT NULL" in text
    assert "CREATE TABLE `sf_shop`.`odd name` (\n  `select` INT(11)" in text
    assert "PRIMARY KEY (`k2`, `k1`)" in text
    assert "big_orders" not in text and "`ids`" not in text  # a view, a sequence
    assert text.count("# before the first binlog") == 3


def test_sql_with_schema_from_rebuilds_the_tables(server, written, tmp_path):
    files, dump, final = written
    status, sql, err = run_binlake("sql", "--schema-from",
                                   f"--defaults-file={server.defaults_file}", *files)
    assert status == 0, err
    assert "warning" not in err, err
    assert b"INSERT INTO `sf_shop`.`orders` (`id`, `customer`, `total`, `paid`, `tag`)" in sql
    for database in DATABASES:
        server.execute(f"DROP DATABASE {database}")
    replay(server, dump)
    replay(server, sql)
    assert tables_state(server, DATABASES) == final


def test_without_a_seed_the_binlog_has_no_names(written):
    files, _, _ = written
    status, _, err = run_binlake("sql", *files)
    assert status != 0 and "column names unknown" in err


def test_connection_problems_are_errors_not_usage(server, written):
    files, _, _ = written
    status, _, err = run_binlake("sql", "--schema-from", "--host", "127.0.0.1", "--port",
                                 str(server.port), "--user", "nobody", *files)
    assert status == 1 and "--schema-from: cannot connect to 127.0.0.1:" in err
    status, _, err = run_binlake("schema", "--user", "root", *files)
    assert status == 2 and "connection options are for -R and --schema-from" in err


def test_pipeline_passes_the_seed_as_a_saved_history(server, written, tmp_path):
    """The pipeline's tasks read --schema from a path: the seed goes there as JSON."""
    parser = argparse.ArgumentParser(add_help=False)  # -h is the host, as in the mysql client
    pipeline.add_arguments(parser)
    args = parser.parse_args(["--out", str(tmp_path / "out"), *_connection(server)])
    path = pipeline._schema_path(args)
    assert json.loads(open(path).read())["format"] == "binlake-schema-history"
    assert load_schema(path).columns("sf_crm", "people") == ["k1", "k2", "name"]
    args = parser.parse_args(["--out", str(tmp_path / "out"), "--schema", "x.sql"])
    assert pipeline._schema_path(args) == "x.sql"


def test_a_stream_from_the_first_binlog_needs_no_seed(server, written):
    """A stream that reads the server's binlogs from the start of the first
    one follows every DDL the server logged: its seed is skipped (no crawl
    of every table's definition), as for a stream begun with no file."""
    from binlake.connection.settings import ServerAddress
    from binlake.schema.seeds import schema_from_server
    address = ServerAddress("127.0.0.1", server.port, "root", "")
    first = server.query("SHOW BINARY LOGS")[0][0]
    assert schema_from_server(address, unless_reading_from=(first, 4)) is None
    for start in ((first, 256), (written[0][0].rsplit("/", 1)[1], 4), None):
        seeded = schema_from_server(address, unless_reading_from=start)
        assert ("sf_shop", "orders") in seeded.versions, start
