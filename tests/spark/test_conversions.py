"""A MODIFY that changes a column's type: the lake holds what the server made
of each value (binlake.spark.plans.conversions), whichever engine carries the
table and when a lake is built anew from the changes; a change binlake
cannot convert as the server did (TIMESTAMP to DATETIME: the ALTER's
session time zone) refuses the run in one line, nothing applied.

MEASURED: what MariaDB 10.11 made of each value under sql_mode=''
(ALTER TABLE ... MODIFY on a private server, then SELECT)."""
from __future__ import annotations

import shutil
from decimal import Decimal

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pytest.importorskip("deltalake")

from binlake.schema.ddl import ColumnSpec  # noqa: E402
from binlake.spark.commits import driver_way  # noqa: E402
from binlake.spark.plans.conversions import server_value  # noqa: E402
from binlake.spark.commits.delta import read_table  # noqa: E402
from binlake.spark.plans.layouts import ddl_layout_column  # noqa: E402
from binlake.spark.run.pipeline import run_pipeline  # noqa: E402

DB = "conv"


def column(kind: str, *args) -> dict:
    text = "CHAR" in kind or "TEXT" in kind
    return ddl_layout_column(ColumnSpec("v", kind, tuple(args), False,
                                        "utf8mb4" if text else None))


MEASURED = [
    (column("VARCHAR", 20), column("INT"),
     {"12.7": "12", "abc": "0", "7": "7", "-3.5": "-3", "  42x": "42", "1e3": "1",
      "12.5": "12", "99999999999": "2147483647", "0x1A": "0", ".5": "0", "+8": "8", "": "0"}),
    (column("VARCHAR", 20), column("DECIMAL", 5, 2),
     {"1.235": "1.24", "-1.235": "-1.24", "abc": "0.00", "12abc": "12.00", "1e2": "100.00",
      "99999": "999.99", "-99999": "-999.99", " 3.14159 ": "3.14"}),
    (column("VARCHAR", 30), column("DOUBLE"),
     {"12.7": 12.7, "abc": 0.0, "1e3x": 1000.0, "-0.1": -0.1, "1e400": 1.7976931348623157e308}),
    (column("DOUBLE"), column("INT"),
     {"2.5": "2", "3.5": "4", "-2.5": "-2", "-3.5": "-4", "12.7": "13", "1e+20": "2147483647",
      "-1e+20": "-2147483648"}),
    (column("DOUBLE"), column("DECIMAL", 6, 2),
     {"1.005": "1.01", "2.675": "2.68", "-1.005": "-1.01", "10000000000.0": "9999.99",
      "0.125": "0.13"}),
    (column("FLOAT"), column("INT"), {"2.5": "2", "12.7": "13"}),
    (column("INT"), column("CHAR", 3), {"12345": "123", "-7": "-7"}),
    (column("DECIMAL", 10, 2), column("VARCHAR", 4), {"123.45": "123.", "1.50": "1.50"}),
    (column("VARCHAR", 10), column("VARCHAR", 3), {"abcdef": "abc", "ab  ": "ab ", "héllo": "hél"}),
    (column("VARCHAR", 10), column("CHAR", 3), {"abcdef": "abc", "a  ": "a", " b ": " b"}),
    (column("CHAR", 6), column("CHAR", 2), {"a b c": "a", "ab": "ab"}),
    (column("ENUM", "a", "b", "c", "D"), column("ENUM", "c", "a", "d"),
     {"a": "a", "b": "", "c": "c", "D": "d"}),
    (column("SET", "x", "y", "z"), column("SET", "z", "x"),
     {"x,y": "x", "y,z": "z", "x,z": "z,x", "z": "z", "": ""}),
]


def test_the_rule_gives_what_the_server_gave():
    for was, new, answers in MEASURED:
        for text, answer in answers.items():
            got = server_value(text, was, new)
            assert (float(got) if isinstance(answer, float) else got) == answer, (text, new)


CREATE = ("CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20), d DOUBLE, n INT, w VARCHAR(10), "
          "q VARCHAR(20)) DEFAULT CHARSET=utf8mb4")
ROWS = [(1, "12.7", 2.5, 12345, "abcdef", "1.235"), (2, "abc", 3.5, -7, "a  ", "12abc"),
        (3, "7", -12.7, 42, " b ", "abc"), (4, "-3.5", 1e20, None, None, "-99999"),
        (5, None, None, 7, "xy", None)]
ALTER = "ALTER TABLE t MODIFY s INT, MODIFY d INT, MODIFY n CHAR(3), MODIFY w CHAR(3), " \
        "MODIFY q DECIMAL(5,2)"


def _server(workdir):
    from binlake.testing.mariadb import MariaDBServer
    return MariaDBServer(workdir)


def _rows(server) -> list[tuple]:
    return sorted(server.query(f"SELECT * FROM {DB}.t"))


def _lake_rows(out) -> list[tuple]:
    table = read_table(str(out / "tables" / f"{DB}.t"))
    return sorted(tuple(row.values()) for row in table.to_pylist())


def _arrived(server, incoming) -> list[str]:
    """The server's closed binlog files, copied into `incoming` (the lake's input)."""
    incoming.mkdir(exist_ok=True)
    for path in server.binlog_files()[:-1]:
        if not (incoming / path.name).exists():
            shutil.copy(path, incoming)
    return [str(incoming)]


def _filled(server) -> None:
    server.execute("SET SESSION sql_mode=''")
    server.execute(f"CREATE DATABASE {DB}")
    server.execute(f"USE {DB}")
    server.execute(CREATE)
    for row in ROWS:
        server.execute("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)", row)
    server.flush_logs()


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_a_lake_holds_what_the_server_made_of_its_values(spark, mariadb, tmp_path, monkeypatch,
                                                        engine):
    """The table carried through the MODIFY (by the driver, or by Spark),
    and a lake built anew from every change, equal the server's rows."""
    if engine == "spark":  # the driver takes no table: Spark carries it
        monkeypatch.setattr(driver_way, "DRIVER_ROWS", -1)
        monkeypatch.setattr(driver_way, "DRIVER_TABLE_ROWS", -1)
    with _server(tmp_path / "server") as server:
        _filled(server)
        out = tmp_path / "lake"
        run_pipeline(spark, _arrived(server, tmp_path / "in"), str(out))
        server.execute(ALTER)
        server.execute("INSERT INTO t VALUES (6, '9x', 0.5, 'abcd', 'hello', '7.777')")
        server.flush_logs()
        expected = _rows(server)
        files = _arrived(server, tmp_path / "in")
    assert [row[1:] for row in expected[:4]] == [
        (12, 2, "123", "abc", Decimal("1.24")), (0, 4, "-7", "a", Decimal("12.00")),
        (7, -13, "42", " b", Decimal("0.00")), (-3, 2147483647, None, None, Decimal("-999.99"))]
    run_pipeline(spark, files, str(out))
    assert _lake_rows(out) == expected
    anew = tmp_path / "anew"
    run_pipeline(spark, files, str(anew))
    assert _lake_rows(anew) == expected


@pytest.mark.parametrize("engine", ["driver", "spark"])
def test_a_modify_that_changes_values_without_row_events_is_mirrored(
        spark, mariadb, tmp_path, monkeypatch, engine):
    """A VARCHAR or CHAR made shorter, an ENUM or SET that lost or respelled
    a member, under a lax sql_mode: the server changes the values in place,
    with no row event; the lake holds what it made of them (issue 46, 9)."""
    if engine == "spark":
        monkeypatch.setattr(driver_way, "DRIVER_ROWS", -1)
        monkeypatch.setattr(driver_way, "DRIVER_TABLE_ROWS", -1)
    with _server(tmp_path / "server") as server:
        server.execute("SET SESSION sql_mode=''")
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"USE {DB}")
        server.execute("CREATE TABLE t (id INT PRIMARY KEY, v ENUM('a','b','c','D'), "
                       "s SET('x','y','z'), w VARCHAR(10), c CHAR(6)) DEFAULT CHARSET=utf8mb4")
        server.execute("INSERT INTO t VALUES (1, 'a', 'x,y', 'hello', 'ab    '), "
                       "(2, 'b', 'y,z', 'abcdefghij', 'abcdef'), (3, 'c', 'x,z', 'é123', "
                       "'a b c '), (4, 'D', 'z', '  sp ', 'ab'), (5, NULL, '', '', NULL)")
        server.flush_logs()
        out = tmp_path / "lake"
        run_pipeline(spark, _arrived(server, tmp_path / "in"), str(out))
        server.execute("ALTER TABLE t MODIFY v ENUM('c','a','d'), MODIFY s SET('z','x'), "
                       "MODIFY w VARCHAR(3), MODIFY c CHAR(2)")
        server.flush_logs()
        expected = _rows(server)
        files = _arrived(server, tmp_path / "in")
    assert expected[1][1:] == ("", "z", "abc", "ab") and expected[3][1] == "d"

    def as_server_gives(rows: list) -> list:  # a SET: the lake's list, the server's text
        return [tuple(",".join(v) if isinstance(v, list) else v for v in row) for row in rows]
    run_pipeline(spark, files, str(out))
    assert as_server_gives(_lake_rows(out)) == expected
    anew = tmp_path / "anew"
    run_pipeline(spark, files, str(anew))
    assert as_server_gives(_lake_rows(anew)) == expected


def test_a_timestamp_made_a_datetime_is_refused(spark, mariadb, tmp_path):
    """The server converted TIMESTAMPs to DATETIMEs in the ALTER's session
    time zone, which the binlog does not keep: the run is refused in one
    line, and the table stays as it was."""
    with _server(tmp_path / "server") as server:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"USE {DB}")
        server.execute("CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMP NULL)")
        server.execute("INSERT INTO t VALUES (1, '2024-05-01 12:00:00')")
        server.flush_logs()
        out = tmp_path / "lake"
        run_pipeline(spark, _arrived(server, tmp_path / "in"), str(out))
        before = _lake_rows(out)
        server.execute("SET SESSION time_zone='+05:00'")
        server.execute("ALTER TABLE t MODIFY ts DATETIME")
        server.flush_logs()
        files = _arrived(server, tmp_path / "in")
    with pytest.raises(ValueError) as refused:
        run_pipeline(spark, files, str(out))
    message = str(refused.value)
    assert "\n" not in message and "column `ts`" in message and "time zone" in message
    assert "nothing was applied" in message
    assert _lake_rows(out) == before


def test_an_alter_ignore_that_deletes_rows_unsaid_is_refused(spark, mariadb, tmp_path):
    """ALTER IGNORE TABLE ... ADD UNIQUE deletes, with no row event, the rows
    its key finds twice but the first (MariaDB 10.11 kept the lowest
    primary key): the run is refused in one line, the lake as it was (it
    held the deleted rows, exit 0)."""
    from binlake.cli.dispatch import main
    import io
    with _server(tmp_path / "server") as server:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, a INT, b INT)")
        server.execute(f"INSERT INTO {DB}.t VALUES (5,1,1), (2,1,1), (9,2,NULL), (3,2,NULL)")
        server.flush_logs()
        out = tmp_path / "lake"
        run_pipeline(spark, _arrived(server, tmp_path / "in"), str(out))
        server.execute(f"ALTER IGNORE TABLE {DB}.t ADD UNIQUE (a, b)")
        server.flush_logs()
        assert _rows(server) == [(2, 1, 1), (3, 2, None), (9, 2, None)]
        files = _arrived(server, tmp_path / "in")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    err = io.StringIO()
    assert main(["pipeline", *files, "--out", str(out)], io.StringIO(), err) == 1
    line = err.getvalue().splitlines()[-1]
    assert "conv.t: an ALTER IGNORE TABLE adding a unique key deleted rows" in line, line
    assert line.endswith(f"-R -h HOST -u USER --rebuild {DB}.t"), line
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
