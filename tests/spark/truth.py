"""The ground truth for the Spark tests: a MariaDB workload and the server's own answers.

`run_phases` runs the edge-value workload of binlake.testing (every column
type, multi-row inserts, key-changing updates, deletes, a multi-statement and
a rolled-back transaction, a table without a primary key), then more
changes over several binlog files. In the middle of the second file it
captures `SELECT *`, the binlog position (SHOW MASTER STATUS) and a UTC
time with a clear second on each side, so `--as-of` either of them must
give back exactly that state.

`typed_row` turns a server row (pymysql values) into what tables/ must hold
(binlake.spark.plans.typed), column by column.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import re
import struct
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from binlake.spark.read.exact import time_text
from binlake.testing.mariadb import MariaDBServer
from binlake.testing.workload import DATABASE, SESSION_SETUP, expected_final_state, run_basic_workload

SERVER_ID = 7

#: Each phase after the basic workload; "ROTATE" closes the file (FLUSH BINARY LOGS).
SECOND_FILE = [
    "UPDATE probe SET amount = amount * 2 WHERE id <= 2",
    "UPDATE ints SET id = 9000 WHERE id = 1001",
    "UPDATE ints SET id = 1001 WHERE id = 1002",  # takes the key the row above left
    "DELETE FROM strings WHERE id = 40",
    "START TRANSACTION",
    "INSERT INTO probe (id, label, amount) VALUES (100, 'in txn', 1.25), (101, 'also', -3.50)",
    "UPDATE no_pk SET c = -1 WHERE b = 'dup' LIMIT 1",
    "DELETE FROM ints WHERE id BETWEEN 1300 AND 1310",
    "UPDATE temporal SET dt6 = '2001-01-01 01:01:01.5', t3 = '-00:00:01.250' WHERE id = 2",
    "COMMIT",
]
AFTER_CAPTURE = [
    "UPDATE probe SET label = CONCAT(label, '!') WHERE id >= 100",
    "INSERT INTO no_pk (a, b, c) VALUES (7, 'late', 0.5), (7, 'late', 0.5)",
    "DELETE FROM probe WHERE id = 101",
    "UPDATE ints SET id = id + 100000 WHERE id BETWEEN 1050 AND 1060",
    "ROTATE",
    "START TRANSACTION",
    "DELETE FROM no_pk WHERE a = 7 LIMIT 1",
    "INSERT INTO numbers (id, d65_30, d18_9, d10_2, d5_0, f, dbl) VALUES "
    "(70, '-1.5', '0.000000001', '-0.10', '7', 0.25, -0.125)",
    "UPDATE enums SET s = '', e = 'x y' WHERE id = 1",
    "COMMIT",
    "UPDATE lobs SET bl = NULL, j = '{\"v\": 3}' WHERE id = 2",
    "DELETE FROM geo WHERE id = 20",
]


@dataclass
class Truth:
    files: list[str]                 #: the closed binlog files, in order
    final: dict[str, list[dict]]     #: SELECT * at the end
    middle: dict[str, list[dict]]    #: SELECT * at the capture point
    middle_position: str             #: FILE:POS at the capture point
    middle_time: dt.datetime         #: UTC, a second clear of every event on both sides
    columns: dict[str, list[dict]]   #: information_schema facts per table


def run_phases(workdir: Path) -> Truth:
    with MariaDBServer(workdir, server_id=SERVER_ID) as server:
        run_basic_workload(server, DATABASE)
        server.flush_logs()
        connection = server.connect(DATABASE)
        cursor = connection.cursor()
        for statement in SESSION_SETUP:
            cursor.execute(statement)
        _run(server, cursor, SECOND_FILE)
        middle = expected_final_state(server, DATABASE)
        file, pos = server.query("SHOW MASTER STATUS")[0][:2]
        # Event timestamps are whole seconds: leave one clear on each side.
        time.sleep(1.2)
        middle_time = dt.datetime.now(dt.timezone.utc)
        time.sleep(1.2)
        _run(server, cursor, AFTER_CAPTURE)
        connection.close()
        final = expected_final_state(server, DATABASE)
        columns = _columns(server)
        server.flush_logs()
    files = [str(p) for p in server.binlog_files()]
    return Truth(files, final, middle, f"{file}:{pos}", middle_time, columns)


def _run(server, cursor, statements: list[str]) -> None:
    for statement in statements:
        if statement == "ROTATE":
            server.flush_logs()
        else:
            cursor.execute(statement)


def _columns(server) -> dict[str, list[dict]]:
    rows = server.query(
        """SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS
           WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME, ORDINAL_POSITION""", (DATABASE,))
    columns: dict[str, list[dict]] = {}
    for table, name, data_type, column_type in rows:
        columns.setdefault(table, []).append(
            {"name": name, "data_type": data_type, "column_type": column_type})
    return columns


# -- the server's values as tables/ holds them ---------------------------------------

FIXED_BINARY = {"binary", "inet6", "uuid"}  # trailing zero bytes are not logged
TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum"}


def typed_value(value: Any, column: dict, temporals: str = "typed") -> Any:
    """What tables/ holds for a server value (pymysql's) of `column`; a
    lake of `temporals="text"` keeps DATE/DATETIME/TIMESTAMP as MySQL's text."""
    if value is None:
        return None
    kind, full = column["data_type"], column["column_type"]
    if kind in ("date", "datetime", "timestamp") and temporals == "text":
        if isinstance(value, str):  # zero parts or year 0: the server's own text
            return value
        if kind == "date":
            return value.isoformat()
        fsp = re.search(r"\((\d)\)", full)
        digits = int(fsp.group(1)) if fsp else 0
        fraction = f".{value.microsecond:06d}"[:1 + digits] if digits else ""
        return f"{value.year:04d}-{value:%m-%d %H:%M:%S}{fraction}"
    if kind == "bigint" and "unsigned" in full:
        return Decimal(value)  # decimal(20,0)
    if kind == "float":
        return struct.unpack("<f", struct.pack("<f", value))[0]
    if kind == "decimal":
        precision = int(re.search(r"\((\d+)", full).group(1))
        return value if precision <= 38 else format(value, "f")
    if kind == "bit":
        number = int.from_bytes(value, "big")
        return Decimal(number) if full == "bit(64)" else number  # decimal(20,0)
    if kind in ("date", "datetime", "timestamp"):
        assert not isinstance(value, str), f"{value}: no Spark value (a typed lake refuses it)"
        return value.replace(tzinfo=dt.timezone.utc) if kind == "timestamp" else value
    if kind == "time":
        fsp = re.search(r"\((\d)\)", full)
        return time_text(value, int(fsp.group(1)) if fsp else 0)
    if kind == "set":
        return value.split(",") if value else []
    if kind == "inet6":
        value = ipaddress.IPv6Address(value).packed
    elif kind == "uuid":
        value = uuid.UUID(value).bytes
    if kind in FIXED_BINARY:
        return value.rstrip(b"\x00")
    return value


def typed_rows(rows: list[dict], columns: list[dict], temporals: str = "typed") -> list[dict]:
    by_name = {c["name"]: c for c in columns}
    return [{name: typed_value(value, by_name[name], temporals) for name, value in row.items()}
            for row in rows]


def canonical(value: Any) -> Any:
    """Equal only for equal values of the same kind (Decimal scale and time zones count)."""
    if isinstance(value, Decimal):
        return ("Decimal", str(value))
    if isinstance(value, dt.datetime):  # pyarrow may hand out pandas.Timestamp, a subclass
        return ("datetime", dt.datetime.isoformat(value))
    if isinstance(value, dt.date):
        return ("date", value.isoformat())
    if isinstance(value, list):
        return ("list", tuple(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", value)
    return (type(value).__name__, value)


def canonical_rows(rows: list[dict]) -> list:
    return sorted((tuple(sorted((k, canonical(v)) for k, v in row.items())) for row in rows),
                  key=repr)


def view_table(lake, view: str, columns=None):
    """A view of the lake (events/ or changes/) as a pyarrow Table, its
    files as a reader lists them (binlake.spark.lake_files: never a small
    file beside the merged one that replaced it), partition columns included."""
    import pyarrow.dataset as ds
    from binlake.spark import lake_files
    files = lake_files(str(lake), view)
    if not files:  # (nothing committed yet: a run's first files are not the lake's)
        from binlake.spark.read.batches import VIEWS
        schema = VIEWS[view]
        return schema.empty_table().select(columns) if columns else schema.empty_table()
    dataset = ds.dataset(files, format="parquet", partitioning="hive",
                         partition_base_dir=str(Path(lake) / view))
    return dataset.to_table(columns=columns)
