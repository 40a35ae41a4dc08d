"""MariaDB's own TIME/DATETIME/TIMESTAMP(1-6) ("hires") against a real server.

Strategy: a private MariaDB 10.11 with mysql56_temporal_format=OFF creates
its tables' fractional temporals in the 5.3-10.0 format, which the table map
logs as the plain types 11/12/7 with no metadata. The test gives those
columns their precision from its own DDL (`TableMapEvent.with_column_metas`,
as the schema history will), replays the row changes into a table of its
own and compares it with the server's `SELECT`, as exact text: every
precision, negative times, fractions of .000001 and .999999, the largest
values, zero dates, NULLs, in inserts, updates and deletes. Both cores must
give the same values and the same mysqlbinlog -v text.
"""
from __future__ import annotations

import random
from dataclasses import replace

import pytest

import binlake
from binlake import core
from binlake.constants import ColumnType as T
from binlake.read.events import RowsEvent
from binlake.text.rowtext import format_rows
from binlake.spark.read.exact import column_text
from binlake.testing.mariadb import MariaDBServer

from differential.equality import compare_cores

pytestmark = pytest.mark.server

FSPS = range(1, 7)
#: (column, SQL type, fsp): the hires columns, then the classic ones (fsp 0).
COLUMNS = ([(f"t{n}", f"TIME({n})", n) for n in FSPS]
           + [(f"dt{n}", f"DATETIME({n})", n) for n in FSPS]
           + [(f"ts{n}", f"TIMESTAMP({n})", n) for n in FSPS]
           + [("t0", "TIME", 0), ("dt0", "DATETIME", 0), ("ts0", "TIMESTAMP", 0)])
PLAIN_TYPE = {"TIME": T.MYSQL_TYPE_TIME, "DATETIME": T.MYSQL_TYPE_DATETIME,
              "TIMESTAMP": T.MYSQL_TYPE_TIMESTAMP}

TIMES = ["00:00:00", "00:00:00.000001", "-00:00:00.000001", "-00:00:00.5", "00:00:00.999999",
         "838:59:59.999999", "-838:59:59.999999", "838:59:59", "-838:59:59", "12:34:56.123456",
         "-12:34:56.654321", "-1:00:00", "100:00:00.1", "-0:59:59.9", "23:59:59.999999"]
DATETIMES = ["0000-00-00 00:00:00", "1000-01-01 00:00:00", "1000-01-01 00:00:00.000001",
             "9999-12-31 23:59:59.999999", "9999-12-31 23:59:59", "2024-02-29 12:34:56.5",
             "2020-00-00 00:00:00", "2020-05-00 10:00:00.25", "1970-01-01 00:00:00.999999",
             "2038-01-19 03:14:07.000001"]
TIMESTAMPS = ["0000-00-00 00:00:00", "1970-01-01 00:00:01", "1970-01-01 00:00:01.000001",
              "1970-01-01 00:00:00.5", "2038-01-19 03:14:07.999999", "2022-05-16 14:53:10.123",
              "2000-02-29 23:59:59.999999", "2001-09-09 01:46:40.1"]


def _random_values(rng: random.Random) -> tuple[str, str, str]:
    seconds = rng.randrange(-3020399, 3020400)
    sign, magnitude = ("-" if seconds < 0 else ""), abs(seconds)
    micro = rng.randrange(1000000)
    time = f"{sign}{magnitude // 3600}:{magnitude // 60 % 60:02d}:{magnitude % 60:02d}.{micro:06d}"
    datetime = (f"{rng.randrange(1000, 10000):04d}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d} "
                f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
                f".{rng.randrange(1000000):06d}")
    epoch = rng.randrange(1, 2**31 - 1)
    timestamp = f"FROM_UNIXTIME({epoch}.{rng.randrange(1000000):06d})"
    return time, datetime, timestamp


def _rows() -> list[dict]:
    """Values (SQL literals) of every column, row by row: each edge value in
    every column of its type, then random ones, then NULLs."""
    rng = random.Random(20240229)
    rows = []
    edges = max(len(TIMES), len(DATETIMES), len(TIMESTAMPS))
    for i in range(edges):
        values = ("'" + TIMES[i % len(TIMES)] + "'", "'" + DATETIMES[i % len(DATETIMES)] + "'",
                  "'" + TIMESTAMPS[i % len(TIMESTAMPS)] + "'")
        rows.append(values)
    for _ in range(150):
        time, datetime, timestamp = _random_values(rng)
        rows.append(("'" + time + "'", "'" + datetime + "'", timestamp))
    rows.append(("NULL", "NULL", "NULL"))
    out = []
    for time, datetime, timestamp in rows:
        row = {}
        for name, sql_type, _ in COLUMNS:
            row[name] = {"TIME": time, "DATETIME": datetime}.get(sql_type.split("(")[0], timestamp)
        out.append(row)
    return out


@pytest.fixture(scope="module")
def hires(mariadbd, tmp_path_factory):
    """(binlog files, the table's final rows as the server prints them)."""
    workdir = tmp_path_factory.mktemp("hires")
    with MariaDBServer(workdir, server_id=11, extra={"mysql56_temporal_format": "OFF"}) as server:
        server.execute("SET SESSION time_zone = '+00:00', sql_mode = ''")
        server.execute("CREATE DATABASE h")
        definitions = ", ".join(f"{name} {sql_type} NULL DEFAULT NULL" for name, sql_type, _ in COLUMNS)
        server.execute(f"CREATE TABLE h.t (id INT PRIMARY KEY, {definitions})")
        names = ", ".join(name for name, _, _ in COLUMNS)
        for i, row in enumerate(_rows()):
            server.execute(f"INSERT INTO h.t (id, {names}) VALUES ({i}, {', '.join(row.values())})")
        # before images: updates shift values across precisions, deletes drop some rows
        server.execute("UPDATE h.t SET t3 = t6, dt2 = dt6, ts5 = ts1, t0 = '-838:59:59' WHERE id % 7 = 1")
        server.execute("UPDATE h.t SET ts6 = '2038-01-19 03:14:07.999999', t1 = NULL WHERE id % 11 = 2")
        server.execute("DELETE FROM h.t WHERE id % 13 = 3")
        texts = ", ".join(f"CAST({name} AS CHAR)" for name, _, _ in COLUMNS)
        final = {row[0]: dict(zip([n for n, _, _ in COLUMNS], row[1:]))
                 for row in server.query(f"SELECT id, {texts} FROM h.t")}
        fsp = {name: int(f) for name, f in server.query(
            "SELECT COLUMN_NAME, DATETIME_PRECISION FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = 'h' AND TABLE_NAME = 't' AND COLUMN_NAME <> 'id'")}
        server.flush_logs()
    assert fsp == {name: n for name, _, n in COLUMNS}
    return [str(p) for p in server.binlog_files()], final


def _hires_events(files):
    """The table's rows events, their table maps given the DDL's precisions."""
    metas = {index + 1: fsp for index, (_, _, fsp) in enumerate(COLUMNS)}
    events = []
    for path in files:
        for event in binlake.open(path):
            if isinstance(event, RowsEvent) and event.table.table == "t":
                events.append(replace(event, table=event.table.with_column_metas(metas)))
    return events


def test_the_table_map_logs_plain_types_without_metadata(hires):
    files, _ = hires
    events = [e for path in files for e in binlake.open(path, schema=False)
              if isinstance(e, RowsEvent) and e.table.table == "t"]
    assert events
    logged = [(c.type, c.meta) for c in events[0].table.columns[1:]]
    assert logged == [(PLAIN_TYPE[sql_type.split("(")[0]], 0) for _, sql_type, _ in COLUMNS]


def test_replayed_rows_equal_the_servers_select(hires):
    files, final = hires
    events = _hires_events(files)
    table = events[0].table
    texts = {c.key: column_text(c) for c in table.columns}

    def as_text(image):
        return {k: (None if v is None else texts[k](v)) for k, v in image.items() if k != "id"}

    state = {}
    for event in events:
        for before, after in event.rows():
            if before is not None:
                assert state.pop(before["id"]) == as_text(before), f"before image of {before['id']}"
            if after is not None:
                state[after["id"]] = as_text(after)
    assert len(state) == len(final) > 150
    for key in final:
        assert state[key] == final[key], f"row {key}"


@pytest.mark.skipif(not core.available(), reason="native core not built")
def test_both_cores_decode_and_print_hires_rows_alike(hires):
    files, _ = hires
    events = _hires_events(files)
    for event in events:
        assert compare_cores(event) is None
        printed = []
        for pure in (False, True):
            core.use_pure(pure)
            try:
                lines, count = format_rows(event, 2)
                printed.append(("".join(lines), count))
            finally:
                core.use_pure(False)
        assert printed[0] == printed[1]
    lines = "".join(format_rows(events[0], 2)[0])
    assert "/* TIME(6) meta=6 " in lines and "/* TIMESTAMP meta=0 " in lines
