"""SQL workloads that make a MariaDB server write row-based binlogs worth decoding.

Strategy: ``run_basic_workload`` touches every column type MariaDB can put in a rows
event, at its edge values and as NULL, through multi-row INSERTs, UPDATEs (one of
them changing the primary key), DELETEs, a multi-statement transaction, a rolled
back transaction and a table without a primary key. Afterwards the server's own
``SELECT *`` (``expected_final_state``) is the truth the decoded binlog must rebuild.

Rule: every INSERT names every column, so even ``binlog_row_image=MINIMAL`` logs
complete after images and the final state can be rebuilt from the binlog alone.

``run_schema_workload`` changes columns instead of values: every kind of DDL a
schema history must follow (ADD/DROP/CHANGE/MODIFY/RENAME COLUMN, keys, RENAME
TABLE across databases, LIKE, CREATE ... SELECT, TRUNCATE, DROP and CREATE again,
databases dropped), rows changed after each step, and a ``Checkpoint`` (binlog
position, every table) per step; ``prepare_schema_workload`` makes the backup
(``mariadb-dump``, with and without rows) and the new binlog it starts from.

``generate_bulk`` is the other half: a lot of realistic binlog, fast, for benchmarks
(``INSERT ... SELECT`` from the sequence engine's ``seq_1_to_N`` tables in batches).

Sessions run with ``sql_mode=''`` (zero dates and invalid ENUM values are accepted)
and ``time_zone='+00:00'`` (TIMESTAMP values are UTC both when written and read).
"""
from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass
from typing import Any

DATABASE = "binlake_test"
SESSION_SETUP = ("SET SESSION sql_mode=''", "SET SESSION time_zone='+00:00'")

E_BIG = [f"v{i}" for i in range(300)]  # more than 255 members: stored in 2 bytes
S64 = [f"m{i}" for i in range(64)]  # 64 members: stored in 8 bytes


def _members(names: list[str]) -> str:
    return ",".join(f"'{name}'" for name in names)


TABLES: dict[str, str] = {
    "ints": """CREATE TABLE ints (
        id INT PRIMARY KEY,
        ti TINYINT, ti_u TINYINT UNSIGNED,
        si SMALLINT, si_u SMALLINT UNSIGNED,
        mi MEDIUMINT, mi_u MEDIUMINT UNSIGNED,
        i INT, i_u INT UNSIGNED,
        bi BIGINT, bi_u BIGINT UNSIGNED)""",
    "numbers": """CREATE TABLE numbers (
        id INT PRIMARY KEY,
        d65_30 DECIMAL(65,30), d18_9 DECIMAL(18,9), d10_2 DECIMAL(10,2), d5_0 DECIMAL(5,0),
        f FLOAT, dbl DOUBLE)""",
    "bits": """CREATE TABLE bits (
        id INT PRIMARY KEY, b1 BIT(1), b13 BIT(13), b64 BIT(64))""",
    "temporal": """CREATE TABLE temporal (
        id INT PRIMARY KEY,
        y YEAR, d DATE,
        t TIME, t1 TIME(1), t2 TIME(2), t3 TIME(3), t4 TIME(4), t5 TIME(5), t6 TIME(6),
        dt DATETIME, dt1 DATETIME(1), dt2 DATETIME(2), dt3 DATETIME(3),
        dt4 DATETIME(4), dt5 DATETIME(5), dt6 DATETIME(6),
        ts TIMESTAMP NULL DEFAULT NULL, ts6 TIMESTAMP(6) NULL DEFAULT NULL)""",
    "strings": """CREATE TABLE strings (
        id INT PRIMARY KEY,
        c_utf8 CHAR(10) CHARACTER SET utf8mb4,
        c100_utf8 CHAR(100) CHARACTER SET utf8mb4,
        vc_utf8 VARCHAR(10) CHARACTER SET utf8mb4,
        vc300_utf8 VARCHAR(300) CHARACTER SET utf8mb4,
        c_latin1 CHAR(10) CHARACTER SET latin1,
        vc_latin1 VARCHAR(10) CHARACTER SET latin1,
        vc300_latin1 VARCHAR(300) CHARACTER SET latin1,
        c_bin CHAR(10) CHARACTER SET binary,
        vc_bin VARCHAR(10) CHARACTER SET binary,
        vc300_bin VARCHAR(300) CHARACTER SET binary,
        bin4 BINARY(4), varbin VARBINARY(500)) DEFAULT CHARSET=utf8mb4""",
    "lobs": """CREATE TABLE lobs (
        id INT PRIMARY KEY, label VARCHAR(20),
        tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
        tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
        j JSON) DEFAULT CHARSET=utf8mb4""",
    "enums": f"""CREATE TABLE enums (
        id INT PRIMARY KEY,
        e ENUM('a','b','café','x y'), e_big ENUM({_members(E_BIG)}),
        s SET('x','y','z'), s64 SET({_members(S64)})) DEFAULT CHARSET=utf8mb4""",
    "geo": """CREATE TABLE geo (id INT PRIMARY KEY, g GEOMETRY, p POINT)""",
    "net": """CREATE TABLE net (id INT PRIMARY KEY, ip INET6, u UUID)""",
    "no_pk": """CREATE TABLE no_pk (a INT, b VARCHAR(20), c DOUBLE) DEFAULT CHARSET=utf8mb4""",
    "probe": """CREATE TABLE probe (id INT PRIMARY KEY, label VARCHAR(20), amount DECIMAL(10,2))
        DEFAULT CHARSET=utf8mb4""",
}

# -- rows: one tuple per row, in the column order of TABLES ---------------------------

INT_ROWS = [
    (1, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -(2**63), 0),
    (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 2**32 - 1, 2**63 - 1, 2**64 - 1),
    (3, -1, 128, -1, 32768, -1, 8388608, -1, 2**31, -1, 2**63),
    (4, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1),
    (5, None, None, None, None, None, None, None, None, None, None),
]

D65_MAX = "9" * 35 + "." + "9" * 30
# FLOAT values have at most 6 significant digits: the server prints FLOAT with 6, so
# float32(printed value) is exactly the stored single and tests can compare exactly.
NUMBER_ROWS = [
    (1, D65_MAX, "999999999.999999999", "99999999.99", "99999", 3.40282e38, 1.7976931348623157e308),
    (2, "-" + D65_MAX, "-999999999.999999999", "-99999999.99", "-99999", -1.17549e-38, -2.2250738585072014e-308),
    (3, "0", "0", "0", "0", 0.0, 0.0),
    (4, "-0.000000000000000000000000000001", "-0.000000001", "-0.01", "-1", 3.14159, 5e-324),
    (5, "12345678901234567890123456789012345.678901234567890123456789012345", "123456789.123456789",
     "1.5", "12345", -2.5, 3.141592653589793),
    (6, None, None, None, None, None, None),
]

BIT_ROWS = [
    (1, 0, 0, 0),
    (2, 1, 2**13 - 1, 2**64 - 1),
    (3, 1, 0b1010101010101, 0x8000000000000001),
    (4, None, None, None),
]


def _frac(digits: str, n: int) -> str:
    return f".{digits[:n]}" if n else ""


def _temporal_row(row_id, year, date, time, time_frac, datetime, datetime_frac, ts, ts6):
    """One temporal row; TIME(n)/DATETIME(n) get the first n digits of the given fraction."""
    times = [f"{time}{_frac(time_frac, n)}" for n in range(1, 7)]
    datetimes = [f"{datetime}{_frac(datetime_frac, n)}" for n in range(1, 7)]
    return (row_id, year, date, time, *times, datetime, *datetimes, ts, ts6)


TEMPORAL_ROWS = [
    _temporal_row(1, 1901, "1000-01-01", "-838:59:59", "999999", "1000-01-01 00:00:00", "000001",
                  "1970-01-01 00:00:01", "1970-01-01 00:00:01.000001"),
    _temporal_row(2, 2155, "9999-12-31", "838:59:59", "999999", "9999-12-31 23:59:59", "999999",
                  "2038-01-19 03:14:07", "2038-01-19 03:14:07.999999"),
    # Zero values; TIME(n) here is minus one unit of its last digit (-00:00:00.000001 ...).
    (3, 0, "0000-00-00", "00:00:00", *[f"-00:00:00.{'0' * (n - 1)}1" for n in range(1, 7)],
     "0000-00-00 00:00:00", *[f"0000-00-00 00:00:00.{'0' * n}" for n in range(1, 7)],
     "0000-00-00 00:00:00", "0000-00-00 00:00:00.000000"),
    # Dates Python cannot hold: zero day, zero month, year 0.
    _temporal_row(4, 2000, "2020-00-15", "-12:34:56", "123456", "2020-02-00 10:00:00", "500000",
                  "2001-02-03 04:05:06", "2001-02-03 04:05:06.5"),
    _temporal_row(5, 2024, "0000-01-01", "24:00:01", "654321", "0000-01-01 12:34:56", "654321",
                  "2024-02-29 23:59:59", "2024-02-29 23:59:59.123456"),
    (6, *[None] * 18),
]

EMOJI = "\U0001F600"
STRING_ROWS = [
    (1, "hi  ", "x" * 100, "ñandú", "€" * 300, "café", "€uro", "ÿ" * 300,
     b"ab", b"a\x00b", b"\xff" * 300, b"\x00\x01", bytes(range(256)) * 2),
    (2, EMOJI * 10, EMOJI * 100, EMOJI * 10, EMOJI * 300, "", "", "",
     b"", b"", b"", b"", b""),
    (3, "日本語", "trailing   ", "sp  ", "a" * 255 + "  ", "Ü", "x" * 10, "y " * 150,
     b"\x00" * 10, b"\xff" * 10, bytes(range(200, 256)), b"\xff\xff\xff\xff", b"\x00"),
    (4, *[None] * 12),
]

LOB_ROWS = [
    (1, "sizes", "t" * 255, "x" * 65535, "ü" * 35000, "L" * 70000,
     bytes(range(255)), bytes(range(256)) * 256, b"\x01" * 70000, b"\xfe" * 70000,
     '{"k": [1, 2.5, "x", null, true], "nested": {"a": {}}}'),
    (2, "empty", "", "", "", "", b"", b"", b"", b"", "[]"),
    (3, "unicode", EMOJI, "naïve " + EMOJI, "中文", "Ελληνικά", b"\x00", b"\x00\xff", b"z", b"y",
     '"just a string"'),
    (4, None, None, None, None, None, None, None, None, None, None),
]

ENUM_ROWS = [
    (1, "a", "v0", "", ""),
    (2, "café", "v299", "x,z", "m0,m63"),
    (3, "not a member", "v255", "x,y,z", ",".join(S64)),  # invalid ENUM value is stored as 0 ('')
    (4, "x y", "v256", "y", "m31,m32"),
    (5, None, None, None, None),
]

# (id, geometry SQL, point SQL): geometry goes in as SQL so the SRID is set by the server.
GEO_ROWS = [
    (1, "ST_GeomFromText('POINT(1 2)')", "ST_GeomFromText('POINT(-1.5 1e10)', 4326)"),
    (2, "ST_GeomFromText('LINESTRING(0 0, 1 1, 2 0.5)', 3857)", "ST_GeomFromText('POINT(0 0)')"),
    (3, "ST_GeomFromText('POLYGON((0 0, 4 0, 4 4, 0 4, 0 0), (1 1, 2 1, 2 2, 1 1))')", "NULL"),
    (4, "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1), LINESTRING(0 0, 3 3))')",
     "ST_GeomFromText('POINT(180 -90)')"),
    (5, "NULL", "NULL"),
]

NET_ROWS = [
    (1, "::", "00000000-0000-0000-0000-000000000000"),
    (2, "::1", "123e4567-e89b-12d3-a456-426614174000"),
    (3, "2001:db8::ff00:42:8329", "550e8400-e29b-41d4-a716-446655440000"),
    (4, "::ffff:192.0.2.1", "ffffffff-ffff-ffff-ffff-ffffffffffff"),
    (5, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "01890a5d-ac96-774b-bcce-b302099a8057"),
    (6, None, None),
]

NO_PK_ROWS = [(1, "dup", 1.5), (1, "dup", 1.5), (2, "x", None), (None, None, None)]

# The probe statements are few and exact, so tests can check each change record.
PROBE_STATEMENTS = [
    "INSERT INTO probe (id, label, amount) VALUES (1, 'one', 1.50), (2, 'two', -2), (3, 'three', NULL)",
    "UPDATE probe SET label = 'TWO', amount = 20.25 WHERE id = 2",
    "UPDATE probe SET id = 30 WHERE id = 3",
    "DELETE FROM probe WHERE id = 1",
]


# -- running it ----------------------------------------------------------------------

def _session(server, database: str | None = None):
    connection = server.connect(database)
    with connection.cursor() as cursor:
        for statement in SESSION_SETUP:
            cursor.execute(statement)
    return connection


def _insert(cursor, table: str, rows: list[tuple]) -> None:
    """One multi-row INSERT naming every column of ``table``."""
    cursor.execute(f"SELECT * FROM {table} LIMIT 0")
    columns = ", ".join(d[0] for d in cursor.description)
    placeholders = ", ".join(["(" + ", ".join(["%s"] * len(rows[0])) + ")"] * len(rows))
    cursor.execute(f"INSERT INTO {table} ({columns}) VALUES {placeholders}", [v for row in rows for v in row])


def run_basic_workload(server, database: str = DATABASE) -> None:
    """Create ``database`` afresh, create ``TABLES`` and run the edge-value workload."""
    connection = _session(server)
    try:
        with connection.cursor() as c:
            c.execute(f"DROP DATABASE IF EXISTS {database}")
            c.execute(f"CREATE DATABASE {database} CHARACTER SET utf8mb4")
            c.execute(f"USE {database}")
            for create in TABLES.values():
                c.execute(create)
            _basic_statements(c)
    finally:
        connection.close()


def _basic_statements(c) -> None:
    _insert(c, "ints", INT_ROWS)
    # 500 rows from one statement: several rows events of many rows each.
    c.execute("""INSERT INTO ints (id, ti, ti_u, si, si_u, mi, mi_u, i, i_u, bi, bi_u)
        SELECT 1000 + seq, seq % 128, seq % 256, -n, seq, n * 1000, seq * 1000,
               -n * 100000, seq * 100000, n * -1000000000000, seq * 1000000000000
        FROM (SELECT seq, CAST(seq AS SIGNED) AS n FROM seq_1_to_500) AS s""")
    c.execute("UPDATE ints SET ti = 42, bi_u = 18446744073709551614 WHERE id = 4")
    c.execute("UPDATE ints SET id = 50 WHERE id = 5")  # primary key change
    c.execute("UPDATE ints SET i_u = i_u + 1 WHERE id BETWEEN 1001 AND 1100")  # one event, many rows
    c.execute("DELETE FROM ints WHERE id > 1400")

    _insert(c, "numbers", NUMBER_ROWS)
    c.execute("UPDATE numbers SET d10_2 = d10_2 + 0.01, f = 0.5, dbl = -0.1 WHERE id = 5")
    c.execute("UPDATE numbers SET id = 60, d5_0 = -42 WHERE id = 6")
    c.execute("DELETE FROM numbers WHERE id = 3")

    _insert(c, "bits", BIT_ROWS)
    c.execute("UPDATE bits SET b13 = b'1000000000001', b64 = 0 WHERE id = 2")
    c.execute("UPDATE bits SET id = 40 WHERE id = 4")

    _insert(c, "temporal", TEMPORAL_ROWS)
    c.execute("UPDATE temporal SET d = '0000-00-00', dt6 = '2000-01-01 00:00:00.000001', "
              "t6 = '-838:59:59.999999', ts6 = '1999-12-31 23:59:59.999999' WHERE id = 5")
    c.execute("UPDATE temporal SET id = 60, y = 1999 WHERE id = 6")
    c.execute("DELETE FROM temporal WHERE id = 1")

    _insert(c, "strings", STRING_ROWS)
    c.execute("UPDATE strings SET vc_utf8 = 'changed', c_latin1 = 'ß', bin4 = 'ab' WHERE id = 1")
    c.execute("UPDATE strings SET id = 40, vc300_utf8 = 'now set' WHERE id = 4")

    _insert(c, "lobs", LOB_ROWS)
    # Only a non-blob column changes: NOBLOB row images leave the blobs out.
    c.execute("UPDATE lobs SET label = 'relabelled' WHERE id = 1")
    c.execute("UPDATE lobs SET tx = 'new text', lb = x'00ff00', j = '{\"v\": 2}' WHERE id = 2")
    c.execute("UPDATE lobs SET id = 30 WHERE id = 3")
    c.execute("DELETE FROM lobs WHERE id = 4")

    _insert(c, "enums", ENUM_ROWS)
    c.execute("UPDATE enums SET e = 'b', s = 'z', s64 = 'm5' WHERE id = 1")
    c.execute("UPDATE enums SET id = 50 WHERE id = 5")

    c.execute("INSERT INTO geo (id, g, p) VALUES " + ", ".join(f"({r}, {g}, {p})" for r, g, p in GEO_ROWS))
    c.execute("UPDATE geo SET g = ST_GeomFromText('POINT(7 8)', 4326) WHERE id = 5")
    c.execute("UPDATE geo SET id = 20 WHERE id = 2")

    _insert(c, "net", NET_ROWS)
    c.execute("UPDATE net SET ip = '10.0.0.1', u = '00000000-0000-0000-0000-000000000001' WHERE id = 6")
    c.execute("UPDATE net SET id = 10 WHERE id = 1")

    _insert(c, "no_pk", NO_PK_ROWS)
    c.execute("UPDATE no_pk SET b = 'changed' WHERE a = 2")
    c.execute("DELETE FROM no_pk WHERE a = 1 LIMIT 1")  # one of two identical rows
    c.execute("UPDATE no_pk SET c = c + 1 WHERE b = 'dup'")

    # One transaction over several tables; then one that is rolled back (never logged).
    c.execute("START TRANSACTION")
    _insert(c, "ints", [(7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7)])
    c.execute("UPDATE strings SET vc_latin1 = 'in txn' WHERE id = 2")
    c.execute("DELETE FROM numbers WHERE id = 4")
    c.execute("UPDATE temporal SET ts = '2030-01-01 00:00:00' WHERE id = 2")
    c.execute("COMMIT")
    c.execute("START TRANSACTION")
    _insert(c, "ints", [(8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8)])
    c.execute("DELETE FROM bits")
    c.execute("ROLLBACK")

    for statement in PROBE_STATEMENTS:
        c.execute(statement)


def expected_final_state(server, database: str = DATABASE) -> dict[str, list[dict[str, Any]]]:
    """``{table: [row dict]}`` from ``SELECT *`` on the server, values as pymysql returns them.

    The session runs with ``time_zone='+00:00'`` so TIMESTAMPs come back as naive UTC.
    Differences from the decoder's representation, which a comparison must convert:

    - TIMESTAMP: naive datetime here, aware (UTC) from the decoder.
    - DATE/DATETIME/TIMESTAMP values Python cannot hold: str here (MySQL text, e.g.
      '0000-00-00 00:00:00.000'), ``MysqlTemporal`` (a str subclass) from the decoder.
    - FLOAT: the server prints 6 significant digits; round-trip through a 4-byte float.
    - BIT: big-endian bytes here, int from the decoder.
    - ENUM / SET: str here ('a', 'x,z'); str / frozenset, or index / bitmask, decoded.
    - BINARY(n), INET6, UUID: padded to n bytes here (INET6/UUID even as text); the
      binlog stores fixed binary strings with trailing zero bytes stripped.
    - CHAR/VARCHAR/TEXT/JSON: str here; bytes from the decoder when the binlog has no charset.
    - Integers: unsigned values here; signed two's complement decoded when the binlog
      does not say the column is unsigned.
    """
    connection = _session(server, database)
    try:
        with connection.cursor() as c:
            c.execute("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'")
            tables = [row[0] for row in c.fetchall()]
            state = {}
            for table in tables:
                c.execute(f"SELECT * FROM `{table}`")
                names = [d[0] for d in c.description]
                state[table] = [dict(zip(names, row)) for row in c.fetchall()]
            return state
    finally:
        connection.close()


# -- bulk ------------------------------------------------------------------------------

BULK_TABLES: dict[str, str] = {
    "bulk_orders": """CREATE TABLE bulk_orders (
        id BIGINT UNSIGNED PRIMARY KEY,
        customer_id INT NOT NULL,
        status TINYINT UNSIGNED NOT NULL,
        amount DECIMAL(12,2) NOT NULL,
        discount DECIMAL(5,2) NULL,
        note VARCHAR(200) NULL,
        created DATETIME(6) NOT NULL,
        body TEXT NULL,
        attrs JSON NULL) DEFAULT CHARSET=utf8mb4""",
    "bulk_events": """CREATE TABLE bulk_events (
        id BIGINT UNSIGNED PRIMARY KEY,
        order_id BIGINT UNSIGNED NOT NULL,
        kind VARCHAR(16) NOT NULL,
        qty SMALLINT NULL,
        at DATETIME(6) NOT NULL) DEFAULT CHARSET=utf8mb4""",
}


def generate_bulk(server, database: str, target_bytes: int, seed: int = 0, batch_rows: int = 50000,
                  more: bool = False) -> dict[str, int]:
    """Write at least ``target_bytes`` of row-based binlog; returns row counts and bytes written.

    Each batch inserts ``batch_rows`` orders and a quarter as many events, updates 30%
    and deletes 9% of the batch's orders (the mix of the 1 GB benchmark: 3.5M inserts,
    1M updates, 300k deletes). Values depend only on ``seed`` and row ids. Expressions
    are kept cheap (JSON built with CONCAT, updates of small columns; full row images
    are logged anyway), which makes about 40-60 MB/s of binlog. ``more``: keep the
    tables and their rows, and go on after the highest id (a second batch of the
    same tables).
    """
    rng = random.Random(seed)
    connection = _session(server)
    counts = {"inserts": 0, "updates": 0, "deletes": 0}
    try:
        with connection.cursor() as c:
            c.execute(f"CREATE DATABASE IF NOT EXISTS {database} CHARACTER SET utf8mb4")
            c.execute(f"USE {database}")
            base = 0
            for table, create in BULK_TABLES.items():
                if not more:
                    c.execute(f"DROP TABLE IF EXISTS {table}")
                c.execute(create.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))
            if more:
                c.execute("SELECT COALESCE(MAX(id), 0) FROM bulk_orders")
                base = -(-int(c.fetchone()[0]) // batch_rows) * batch_rows  # a DECIMAL
            start = _binlog_bytes(c)
            while _binlog_bytes(c) - start < target_bytes:
                counts["inserts"] += _bulk_insert(c, base, batch_rows, seed)
                first = base + 1 + rng.randrange(batch_rows // 10)
                last = first + batch_rows * 3 // 10 - 1
                counts["updates"] += c.execute(f"""UPDATE bulk_orders
                    SET status = (status + 1) % 5, amount = amount + 1.25,
                        note = IF(id % 10 = 0, CONCAT(LEFT(COALESCE(note, ''), 150), ' (updated)'), note)
                    WHERE id BETWEEN {first} AND {last}""")
                counts["deletes"] += c.execute(
                    f"DELETE FROM bulk_orders WHERE id > {base + batch_rows - batch_rows * 9 // 100} "
                    f"AND id <= {base + batch_rows}")
                base += batch_rows
            counts["bytes"] = _binlog_bytes(c) - start
    finally:
        connection.close()
    return counts


def _bulk_insert(c, base: int, rows: int, seed: int) -> int:
    """Insert ``rows`` orders and ``rows // 4`` events with ids after ``base``."""
    inserted = c.execute(f"""INSERT INTO bulk_orders
        SELECT {base} + seq,
               (seq * 7919 + {seed}) % 100000,
               seq % 5,
               ((seq * 104729 + {seed}) % 10000000) / 100,
               IF(seq % 3 = 0, NULL, (seq % 5000) / 100),
               IF(seq % 7 = 0, NULL, CONCAT('order ', {base} + seq, ' for customer ', (seq * 7919) % 100000)),
               TIMESTAMP'2024-01-01 00:00:00' + INTERVAL ({base} + seq) * 1000003 + {seed} MICROSECOND,
               IF(seq % 11 = 0, NULL, REPEAT('lorem ipsum dolor sit amet ', 1 + (seq + {seed}) % 8)),
               IF(seq % 13 = 0, NULL, CONCAT('{{"sku": ', seq % 9973, ', "qty": ', seq % 10,
                                             ', "tags": ["red", "blue"], "gift": ', IF(seq % 2, 'true', 'false'), '}}'))
        FROM seq_1_to_{rows}""")
    inserted += c.execute(f"""INSERT INTO bulk_events
        SELECT {base // 4} + seq, {base} + seq * 4,
               ELT(1 + (seq + {seed}) % 4, 'created', 'paid', 'shipped', 'returned'),
               IF(seq % 5 = 0, NULL, seq % 1000),
               TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq * 7 SECOND
        FROM seq_1_to_{rows // 4}""")
    return inserted


def _binlog_bytes(cursor) -> int:
    cursor.execute("SHOW BINARY LOGS")
    return sum(int(row[1]) for row in cursor.fetchall())


# -- OLTP ------------------------------------------------------------------------------

OLTP_TABLE = "oltp_orders"

# One autocommit statement per loop step: every INSERT, UPDATE and DELETE is its own
# transaction (GTID, ANNOTATE_ROWS, TABLE_MAP, one-row rows event, XID), written by the
# server itself so no client round trip is paid per row. Values are computed into
# user variables first (a SET is not logged in row format) and the statements name
# only user variables: the procedure's locals would be logged in the annotate event as
# NAME_CONST('i',1) at each use, tripling its size.
OLTP_PROCEDURE = f"""CREATE PROCEDURE oltp_fill(IN first_id BIGINT, IN n INT, IN seed INT)
BEGIN
  SET @i = first_id, @s = seed;
  WHILE @i < first_id + n DO
    SET @c = (@i*7919+@s)%100000, @a = ((@i*104729+@s)%10000000)/100,
        @d = IF(@i%3=0, NULL, (@i%5000)/100),
        @n = IF(@i%7=0, NULL, CONCAT('order ', @i, ' for customer ', (@i*7919)%100000)),
        @t = TIMESTAMP'2024-01-01 00:00:00' + INTERVAL @i*1000003+@s MICROSECOND,
        @b = IF(@i%11=0, NULL, REPEAT('lorem ipsum ', 1+(@i+@s)%4)),
        @j = IF(@i%13=0, NULL, CONCAT('{{"sku": ', @i%9973, ', "qty": ', @i%10, '}}'));
    INSERT INTO {OLTP_TABLE} VALUES (@i, @c, @i%5, @a, @d, @n, @t, @b, @j);
    IF @i % 4 = 0 THEN
      UPDATE {OLTP_TABLE} SET status = (status+1)%5, amount = amount+1.25 WHERE id = @i-2;
    END IF;
    IF @i % 16 = 0 THEN
      DELETE FROM {OLTP_TABLE} WHERE id = @i-9;
    END IF;
    SET @i = @i + 1;
  END WHILE;
END"""


def generate_oltp(server, database: str, target_bytes: int, seed: int = 0,
                  batch_rows: int = 20000) -> dict[str, int]:
    """Write at least ``target_bytes`` of OLTP-shaped row binlog: one row per transaction.

    A stored procedure loops over ids: each step inserts one order (the columns of
    ``bulk_orders``), every 4th step updates one earlier order and every 16th deletes
    one (76% inserts, 19% updates, 5% deletes), each statement autocommitted, so the
    binlog is GTID / ANNOTATE_ROWS / TABLE_MAP / one-row rows event / XID over and
    over (about 450 bytes per transaction). The procedure is called for ``batch_rows``
    steps at a time until the binlog has grown by ``target_bytes``. Returns row counts
    and bytes written, like ``generate_bulk``.
    """
    connection = _session(server)
    counts = {"inserts": 0, "updates": 0, "deletes": 0}
    try:
        with connection.cursor() as c:
            c.execute(f"CREATE DATABASE IF NOT EXISTS {database} CHARACTER SET utf8mb4")
            c.execute(f"USE {database}")
            c.execute(f"DROP TABLE IF EXISTS {OLTP_TABLE}")
            c.execute(BULK_TABLES["bulk_orders"].replace("bulk_orders", OLTP_TABLE, 1))
            c.execute("DROP PROCEDURE IF EXISTS oltp_fill")
            c.execute(OLTP_PROCEDURE)
            start = _binlog_bytes(c)
            first = 1
            while _binlog_bytes(c) - start < target_bytes:
                c.execute("CALL oltp_fill(%s, %s, %s)", (first, batch_rows, seed))
                last = first + batch_rows - 1
                counts["inserts"] += batch_rows
                counts["updates"] += _multiples_between(4, first, last)
                counts["deletes"] += _multiples_between(16, first, last)
                first += batch_rows
            counts["bytes"] = _binlog_bytes(c) - start
            c.execute("DROP PROCEDURE oltp_fill")
    finally:
        connection.close()
    return counts


def _multiples_between(k: int, first: int, last: int) -> int:
    """How many multiples of k lie in [first, last]."""
    return last // k - (first - 1) // k


# -- schema changes ----------------------------------------------------------------------

@dataclass(frozen=True)
class TableState:
    """One table as the server shows it."""
    columns: tuple[str, ...]      #: column names, in ordinal order
    types: tuple[str, ...]        #: information_schema COLUMN_TYPE of each column
    rows: tuple[tuple, ...]       #: sorted by repr; values as pymysql returns them (UTC session)
    primary_key: tuple[str, ...] = ()  #: its columns in key order; () without one


@dataclass(frozen=True)
class Checkpoint:
    """The server after one step of the schema workload."""
    file: str                     #: binlog file name (no directory), from SHOW MASTER STATUS
    pos: int                      #: the binlog position after the step's last event
    label: str                    #: what the step did
    tables: dict[str, TableState]  #: "db.table" -> state, every table of the workload's databases


@dataclass(frozen=True)
class SchemaBaseline:
    """What exists before the first binlog the schema workload is read from."""
    first_binlog: str             #: file name of the first binlog after the backup
    schema_sql: str               #: `mariadb-dump --no-data`: the --schema seed
    backup_sql: str               #: `mariadb-dump` with rows: the backup to restore
    databases: tuple[str, ...]    #: every database the workload touches


def schema_workload_databases(database: str = DATABASE) -> tuple[str, str, str]:
    """The main database, one that tables are renamed into and out of, and one
    that is dropped and created again."""
    return database, f"{database}_other", f"{database}_scratch"


def prepare_schema_workload(server, database: str = DATABASE) -> SchemaBaseline:
    """One table with rows, backed up (schema and data), then a new binlog:
    what a DBA has before the binlogs are replayed."""
    databases = schema_workload_databases(database)
    connection = _session(server)
    try:
        with connection.cursor() as c:
            for name in databases:
                c.execute(f"DROP DATABASE IF EXISTS `{name}`")
            c.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
            c.execute(f"""CREATE TABLE `{database}`.customers (
                id INT NOT NULL, name VARCHAR(40) NOT NULL, email VARCHAR(80),
                Score INT, joined DATE, PRIMARY KEY (id)) DEFAULT CHARSET=utf8mb4""")
            c.execute(f"INSERT INTO `{database}`.customers (id, name, email, Score, joined) VALUES "
                      "(1, 'Ada', 'ada@example.com', 10, '2020-01-01'), "
                      "(2, 'Bob', NULL, -5, '2020-02-02'), (3, 'Cé', 'ce@example.com', NULL, NULL), "
                      "(4, 'Dan', 'dan@example.com', 7, '2021-04-04'), "
                      "(5, 'Eve', 'eve@example.com', 0, '2022-05-05')")
            schema_sql = _dump(server, "--no-data", "--databases", database)
            backup_sql = _dump(server, "--databases", database)
            c.execute("FLUSH BINARY LOGS")
            c.execute("SHOW MASTER STATUS")
            first_binlog = c.fetchone()[0]
    finally:
        connection.close()
    return SchemaBaseline(first_binlog, schema_sql, backup_sql, databases)


def _dump(server, *options: str) -> str:
    result = subprocess.run(["mariadb-dump", f"--defaults-file={server.defaults_file}", *options],
                            capture_output=True, text=True, check=True)
    return result.stdout


def run_schema_workload(server, database: str = DATABASE) -> list[Checkpoint]:
    """Every kind of DDL that changes columns, each step followed by row changes
    of the tables it touched (rows written before an ALTER are updated and
    deleted after it). Run after `prepare_schema_workload`. The first
    checkpoint is the start (nothing done yet), then one per step. Some
    INSERTs leave columns to their defaults: read it with binlog_row_image=FULL."""
    databases = schema_workload_databases(database)
    with_default = _session(server, database)
    without_default = _session(server)  # statements with fully qualified names
    checkpoints = [_checkpoint(server, "start", databases)]
    try:
        with with_default.cursor() as c, without_default.cursor() as q:
            for label in _schema_steps(c, q, *databases):
                checkpoints.append(_checkpoint(server, label, databases))
    finally:
        with_default.close()
        without_default.close()
    return checkpoints


def _checkpoint(server, label: str, databases) -> Checkpoint:
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return Checkpoint(file, int(pos), label, tables_state(server, databases))


def tables_state(server, databases) -> dict[str, TableState]:
    """{"db.table": TableState} of every base table in these databases."""
    connection = _session(server)
    try:
        with connection.cursor() as c:
            marks = ", ".join(["%s"] * len(databases))
            c.execute("SELECT c.TABLE_SCHEMA, c.TABLE_NAME, c.COLUMN_NAME, c.COLUMN_TYPE "
                      "FROM information_schema.COLUMNS c JOIN information_schema.TABLES t "
                      "USING (TABLE_SCHEMA, TABLE_NAME) "
                      f"WHERE c.TABLE_SCHEMA IN ({marks}) AND t.TABLE_TYPE = 'BASE TABLE' "
                      "ORDER BY c.TABLE_SCHEMA, c.TABLE_NAME, c.ORDINAL_POSITION", list(databases))
            columns: dict = {}
            for db, table, column, column_type in c.fetchall():
                columns.setdefault((db, table), []).append((column, column_type))
            c.execute("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME "
                      "FROM information_schema.KEY_COLUMN_USAGE "
                      f"WHERE TABLE_SCHEMA IN ({marks}) AND CONSTRAINT_NAME = 'PRIMARY' "
                      "ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION", list(databases))
            keys: dict = {}
            for db, table, column in c.fetchall():
                keys.setdefault((db, table), []).append(column)
            state = {}
            for (db, table), named in columns.items():
                names = tuple(name for name, _ in named)
                quoted = ", ".join(_quote(name) for name in names)
                c.execute(f"SELECT {quoted} FROM {_quote(db)}.{_quote(table)}")
                rows = tuple(sorted(c.fetchall(), key=repr))
                state[f"{db}.{table}"] = TableState(names, tuple(t for _, t in named), rows,
                                                    tuple(keys.get((db, table), ())))
            return state
    finally:
        connection.close()


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _schema_steps(c, q, d: str, o: str, s: str):
    """The workload, step by step: `c` has `d` as its default database, `q`
    none (every name qualified). Yields a label after each step."""
    c.execute("UPDATE customers SET Score = Score + 1 WHERE id IN (1, 2)")
    c.execute("DELETE FROM customers WHERE id = 5")
    c.execute("INSERT INTO customers (id, name, email, Score, joined) "
              "VALUES (6, 'Fay', 'fay@example.com', 3, '2023-06-06')")
    yield "rows of the backed-up table, before any DDL"

    c.execute("ALTER TABLE customers ADD COLUMN tier VARCHAR(10) NOT NULL DEFAULT 'basic' AFTER name")
    c.execute("ALTER TABLE customers ADD visits INT NOT NULL")
    c.execute("ALTER TABLE customers ADD COLUMN region CHAR(2) FIRST")
    c.execute("UPDATE customers SET tier = 'gold', visits = visits + 3 WHERE id = 1")
    c.execute("UPDATE customers SET region = 'EU' WHERE id IN (2, 3)")
    c.execute("DELETE FROM customers WHERE id = 4")
    c.execute("INSERT INTO customers (region, id, name, tier, email, Score, joined, visits) "
              "VALUES ('US', 7, 'Gus', 'basic', NULL, 1, '2024-07-07', 2)")
    yield "ADD COLUMN with DEFAULT, NOT NULL without one, FIRST and AFTER"

    c.execute("""CREATE TABLE orders (
        customer_id INT NOT NULL, order_no SMALLINT UNSIGNED NOT NULL,
        qty TINYINT UNSIGNED, big BIGINT UNSIGNED, amount DECIMAL(12,3), ratio DOUBLE,
        placed DATETIME(6), stamped TIMESTAMP(3) NULL DEFAULT NULL, day DATE, at TIME(2),
        yr YEAR, code CHAR(3), note VARCHAR(100), body TEXT, raw BLOB, tag BINARY(6),
        vb VARBINARY(20), state ENUM('new','paid','sent'), flags SET('a','b','c'), bits BIT(5),
        doc JSON, ip INET6,
        PRIMARY KEY (customer_id, order_no)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""")
    _insert(c, "orders", [
        (1, 1, 255, 18446744073709551615, "12.345", 0.5, "2024-01-02 03:04:05.123456",
         "2024-01-02 03:04:05.123", "2024-01-02", "-12:34:56.78", 2024, "abc", "first", "body",
         b"\x00\x01\xff", b"ab\x00\x00", b"v\x00", "new", "a,c", 5, '{"k": [1, 2]}', "::1"),
        (1, 2, 0, 9223372036854775808, "-0.001", -1e300, "1999-12-31 23:59:59", None,
         "1999-12-31", "00:00:00", 1999, "x", "it's", None, None, b"\x00" * 6, b"", "paid",
         "", 0, None, "192.0.2.1"),
        (2, 1, 7, 7, "7", 7.0, None, "2038-01-19 03:14:07.999", None, None, None, None, None,
         "long " * 50, b"\x00", b"tag", None, None, "b", 31, '"s"', None),
        (3, 1, 1, 1, "1", 1.0, "2001-01-01 00:00:00", None, "2001-01-01", "01:00:00", 2001,
         "c", "c", "c", b"c", b"c", b"c", "sent", "a", 1, "{}", "2001:db8::1"),
    ])
    c.execute("UPDATE orders SET state = 'paid', note = CONCAT(note, '!') WHERE customer_id = 1")
    c.execute("DELETE FROM orders WHERE customer_id = 3")
    yield "CREATE TABLE: many column types, composite primary key"

    q.execute(f"""CREATE TABLE `{d}`.`audit` (
        who VARCHAR(20), what VARCHAR(50), n INT, at DATETIME) -- no primary key""")
    q.execute(f"INSERT INTO `{d}`.audit (who, what, n, at) VALUES "
              "('x', 'dup', 1, '2024-01-01 00:00:00'), ('x', 'dup', 1, '2024-01-01 00:00:00'), "
              "('y', 'gone', NULL, NULL), ('z', 'kept', 3, '2024-03-03 03:03:03')")
    q.execute(f"UPDATE {d}.audit SET n = n + 10 WHERE what = 'dup' LIMIT 1")
    q.execute(f"DELETE FROM {d}.audit WHERE what = 'gone'")
    yield "CREATE TABLE without a primary key, qualified names"

    c.execute("CREATE TABLE computed (id INT PRIMARY KEY, a INT, twice INT AS (a * 2) VIRTUAL, "
              "next INT AS (a + 1) STORED, hidden INT INVISIBLE)")
    c.execute("INSERT INTO computed (id, a, hidden) VALUES (1, 10, 5), (2, 20, 6), (3, 30, 7)")
    c.execute("ALTER TABLE computed ADD COLUMN label VARCHAR(20) AS (CONCAT('n', a)) VIRTUAL AFTER a")
    c.execute("UPDATE computed SET a = 11 WHERE id = 1")
    c.execute("DELETE FROM computed WHERE id = 2")
    yield "generated (VIRTUAL, STORED) and INVISIBLE columns"

    c.execute("ALTER TABLE audit ADD (source VARCHAR(10) DEFAULT 'app', weight INT)")
    c.execute("UPDATE audit SET weight = n * 2")
    c.execute("INSERT INTO audit (who, what, n, at, source, weight) "
              "VALUES ('w', 'new', 5, '2024-05-05 05:05:05', 'cli', 50)")
    c.execute("DELETE FROM audit WHERE who = 'z'")
    yield "ADD (a INT, b INT): several columns in one specification"

    c.execute("ALTER TABLE orders DROP COLUMN ratio")
    c.execute("ALTER TABLE orders DROP body")
    c.execute("UPDATE orders SET amount = amount * 2 WHERE customer_id = 1 AND order_no = 2")
    c.execute("DELETE FROM orders WHERE customer_id = 2")
    c.execute("INSERT INTO orders (customer_id, order_no, note, tag) VALUES (4, 1, 'after drop', 'z')")
    yield "DROP COLUMN"

    c.execute("ALTER TABLE orders CHANGE COLUMN note remark VARCHAR(200) NOT NULL DEFAULT ''")
    c.execute("ALTER TABLE orders CHANGE qty quantity SMALLINT UNSIGNED")
    c.execute("ALTER TABLE customers CHANGE `score` points BIGINT")  # the old name in another case
    c.execute("UPDATE orders SET quantity = 65535, remark = 'changed' WHERE order_no = 1")
    c.execute("UPDATE customers SET points = 5000000000 WHERE id = 2")
    c.execute("INSERT INTO orders (customer_id, order_no, quantity, remark) VALUES (5, 1, 300, 'r')")
    yield "CHANGE COLUMN: renamed, type changed"

    c.execute("ALTER TABLE audit MODIFY n BIGINT")
    c.execute("ALTER TABLE customers MODIFY COLUMN name VARCHAR(120) NOT NULL")
    c.execute("ALTER TABLE customers MODIFY visits INT UNSIGNED NOT NULL")
    c.execute("ALTER TABLE audit MODIFY COLUMN at DATETIME(3) FIRST")
    c.execute("UPDATE customers SET visits = 4000000000, name = REPEAT('n', 120) WHERE id = 1")
    c.execute("UPDATE audit SET n = -9000000000000 WHERE who = 'w'")
    c.execute("INSERT INTO audit (at, who, what, n, source, weight) "
              "VALUES ('2024-06-06 06:06:06.666', 'v', 'modify', 1, 'x', 1)")
    yield "MODIFY COLUMN: INT to BIGINT, longer VARCHAR, to UNSIGNED, moved FIRST"

    c.execute("ALTER TABLE orders RENAME COLUMN vb TO payload")
    q.execute(f"ALTER TABLE `{d}`.audit RENAME COLUMN who TO actor")
    c.execute("UPDATE orders SET payload = x'00ff' WHERE customer_id = 1 AND order_no = 1")
    c.execute("UPDATE audit SET actor = 'renamed' WHERE actor = 'x'")
    c.execute("DELETE FROM audit WHERE actor = 'v'")
    yield "RENAME COLUMN"

    c.execute("ALTER TABLE customers ALTER COLUMN tier SET DEFAULT 'silver'")
    c.execute("ALTER TABLE audit ALTER source DROP DEFAULT")
    c.execute("INSERT INTO customers (id, name, visits) VALUES (8, 'Hal', 1)")
    c.execute("INSERT INTO audit (actor, what) VALUES ('d', 'defaults')")
    c.execute("UPDATE customers SET tier = DEFAULT WHERE id = 2")
    yield "ALTER COLUMN SET DEFAULT, DROP DEFAULT"

    c.execute("ALTER TABLE audit CONVERT TO CHARACTER SET latin1")
    c.execute("UPDATE audit SET what = 'café' WHERE what = 'dup'")
    c.execute("INSERT INTO audit (actor, what, n) VALUES ('é', 'latin1 ÿ', 2)")
    yield "CONVERT TO CHARACTER SET"

    c.execute("ALTER TABLE customers ADD COLUMN note TEXT AFTER contact, DROP COLUMN joined, "
              "CHANGE email contact VARCHAR(100), MODIFY region CHAR(2) AFTER id, "
              "RENAME COLUMN tier TO level, ADD INDEX idx_contact (contact), ALGORITHM=COPY")
    # two columns swap their names in one statement: each name means the old column
    c.execute("ALTER TABLE audit CHANGE source weight VARCHAR(10), CHANGE weight source INT")
    c.execute("UPDATE customers SET note = 'multi', contact = 'c@example.com' WHERE id IN (1, 6)")
    c.execute("UPDATE audit SET weight = 'swapped', source = 99 WHERE actor = 'renamed'")
    c.execute("DELETE FROM customers WHERE id = 7")
    c.execute("INSERT INTO audit (actor, what, weight, source) VALUES ('s', 'swap', 'w', 1)")
    yield "several specifications in one ALTER, two columns swapping names"

    c.execute("ALTER TABLE orders DROP PRIMARY KEY")
    c.execute("UPDATE orders SET remark = 'no key' WHERE customer_id = 1 AND order_no = 2")
    c.execute("DELETE FROM orders WHERE customer_id = 5")
    c.execute("ALTER TABLE orders ADD PRIMARY KEY (order_no, customer_id)")
    c.execute("ALTER TABLE audit ADD COLUMN seq INT NOT NULL DEFAULT 0 FIRST")
    c.execute("SET @seq = 0")
    c.execute("UPDATE audit SET seq = (@seq := @seq + 1)")
    c.execute("ALTER TABLE audit ADD CONSTRAINT PRIMARY KEY (seq)")
    c.execute("UPDATE audit SET what = 'by key' WHERE seq = 1")
    c.execute("DELETE FROM audit WHERE seq = 2")
    c.execute("UPDATE orders SET yr = 2000 WHERE order_no = 1")
    yield "DROP PRIMARY KEY, ADD PRIMARY KEY"

    c.execute("ALTER TABLE orders ADD INDEX by_state (state), ADD KEY (placed, day)")
    c.execute("""CREATE TABLE metrics (id INT NOT NULL, ts DATETIME NOT NULL, v DOUBLE,
        PRIMARY KEY (id, ts), KEY k_v (v))
        PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (100),
                                 PARTITION p1 VALUES LESS THAN MAXVALUE)""")
    c.execute("INSERT INTO metrics (id, ts, v) VALUES (1, '2024-01-01', 1.5), (200, '2024-01-02', 2.5)")
    c.execute("ALTER TABLE metrics ADD COLUMN src INT AFTER ts PARTITION BY KEY (id) PARTITIONS 2")
    c.execute("ALTER TABLE metrics ADD COLUMN unit VARCHAR(8) AFTER ts, "
              "ADD CONSTRAINT chk_v CHECK (v >= 0)")
    c.execute("UPDATE metrics SET unit = 'ms', src = 1 WHERE id = 1")
    c.execute("INSERT INTO metrics (id, ts, unit, src, v) VALUES (3, '2024-01-03', 's', 2, 0)")
    c.execute("UPDATE orders SET state = 'sent' WHERE order_no = 2")
    yield "ADD INDEX, CHECK and partitioning clauses (no column change)"

    c.execute(f"CREATE DATABASE `{o}`")
    c.execute(f"RENAME TABLE metrics TO measurements, audit TO `{o}`.audit_log")
    c.execute("UPDATE measurements SET v = 9 WHERE id = 200")
    q.execute(f"UPDATE {o}.audit_log SET n = 77 WHERE seq = 1")
    q.execute(f"INSERT INTO {o}.audit_log (seq, actor, what) VALUES (100, 'moved', 'other db')")
    c.execute("CREATE TABLE pair_a (x INT PRIMARY KEY, label VARCHAR(10))")
    c.execute("CREATE TABLE pair_b (label VARCHAR(10), x BIGINT, extra DATE)")
    c.execute("INSERT INTO pair_a (x, label) VALUES (1, 'a1'), (2, 'a2')")
    c.execute("INSERT INTO pair_b (label, x, extra) VALUES ('b1', 10, '2020-01-01')")
    c.execute("RENAME TABLE pair_a TO pair_tmp, pair_b TO pair_a, pair_tmp TO pair_b")
    c.execute("UPDATE pair_a SET extra = '2021-01-01' WHERE x = 10")
    c.execute("UPDATE pair_b SET label = 'now b' WHERE x = 1")
    c.execute("DELETE FROM pair_b WHERE x = 2")
    c.execute("INSERT INTO pair_a (label, x, extra) VALUES ('a?', 11, NULL)")
    yield "RENAME TABLE: several pairs, across databases, a swap"

    q.execute(f"ALTER TABLE `{o}`.`audit_log` ADD COLUMN note2 VARCHAR(5), RENAME TO `{d}`.audit")
    c.execute("ALTER TABLE measurements RENAME metrics2")
    c.execute("UPDATE audit SET note2 = 'back' WHERE seq = 100")
    c.execute("DELETE FROM metrics2 WHERE id = 3")
    c.execute("INSERT INTO metrics2 (id, ts, unit, src, v) VALUES (4, '2024-01-04', 'h', 3, 4)")
    yield "ALTER TABLE ... RENAME TO, with a column change, across databases"

    # an unqualified new name is in the default database, not the altered table's
    c.execute(f"CREATE TABLE `{o}`.moving (k INT PRIMARY KEY, v VARCHAR(5))")
    c.execute(f"INSERT INTO `{o}`.moving (k, v) VALUES (1, 'a'), (2, 'b')")
    c.execute(f"ALTER TABLE `{o}`.moving RENAME TO moved")
    c.execute("UPDATE moved SET v = 'moved' WHERE k = 1")
    c.execute("""CREATE TABLE readings (id INT NOT NULL, v VARCHAR(5), PRIMARY KEY (id))
        PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10),
                                 PARTITION p1 VALUES LESS THAN (100))""")
    c.execute("INSERT INTO readings (id, v) VALUES (1, 'p0'), (2, 'p0'), (50, 'p1')")
    c.execute("ALTER TABLE readings CONVERT PARTITION p0 TO TABLE readings_old")
    c.execute("UPDATE readings_old SET id = id + 1000, v = 'back'")
    c.execute("DELETE FROM readings_old WHERE id = 1002")
    c.execute("ALTER TABLE readings CONVERT TABLE readings_old TO PARTITION p3 "
              "VALUES LESS THAN (2000)")
    c.execute("UPDATE readings SET v = 'p3!' WHERE id = 1001")
    yield "ALTER TABLE: RENAME TO an unqualified name, CONVERT PARTITION to a table and back"

    c.execute("CREATE TABLE orders_archive LIKE orders")
    c.execute("INSERT INTO orders_archive SELECT * FROM orders WHERE customer_id = 1")
    c.execute("UPDATE orders_archive SET remark = 'archived'")
    q.execute(f"CREATE TABLE `{o}`.customers_copy LIKE `{d}`.customers")
    q.execute(f"INSERT INTO {o}.customers_copy SELECT * FROM {d}.customers")
    q.execute(f"DELETE FROM {o}.customers_copy WHERE id = 1")
    q.execute(f"UPDATE {o}.customers_copy SET level = 'copy'")
    yield "CREATE TABLE ... LIKE, in the same and in another database"

    c.execute("CREATE TABLE top_customers (rank_no INT AUTO_INCREMENT PRIMARY KEY) "
              "SELECT id, name, points FROM customers WHERE points IS NOT NULL ORDER BY id")
    q.execute(f"CREATE TABLE {o}.summary AS SELECT state, COUNT(*) AS n, SUM(amount) AS total "
              f"FROM {d}.orders GROUP BY state")
    c.execute("UPDATE top_customers SET name = 'top' WHERE rank_no = 1")
    c.execute("DELETE FROM top_customers WHERE rank_no = 2")
    q.execute(f"UPDATE {o}.summary SET n = n + 100 WHERE state = 'paid'")
    q.execute(f"DELETE FROM {o}.summary WHERE state IS NULL")
    yield "CREATE TABLE ... SELECT"

    c.execute("TRUNCATE TABLE orders_archive")
    q.execute(f"TRUNCATE {o}.customers_copy")
    c.execute("INSERT INTO orders_archive (customer_id, order_no, remark) VALUES (9, 9, 'after truncate')")
    q.execute(f"INSERT INTO {o}.customers_copy (id, name, visits) VALUES (1, 'fresh', 0)")
    yield "TRUNCATE TABLE"

    c.execute(f"DROP TABLE IF EXISTS orders_archive, missing_table, `{o}`.summary")
    c.execute("DROP TABLE metrics2")
    c.execute("CREATE TABLE metrics2 (name VARCHAR(20) KEY, value DECIMAL(8,2))")
    c.execute("INSERT INTO metrics2 (name, value) VALUES ('cpu', 1.25), ('mem', 2.50)")
    c.execute("UPDATE metrics2 SET value = 3 WHERE name = 'cpu'")
    c.execute("CREATE OR REPLACE TABLE pair_b (id CHAR(4) NOT NULL, n DOUBLE, PRIMARY KEY (id))")
    c.execute("INSERT INTO pair_b (id, n) VALUES ('new', 1), ('old', 2)")
    c.execute("DELETE FROM pair_b WHERE id = 'old'")
    yield "DROP TABLE, and tables created again with other columns"

    c.execute(f"CREATE DATABASE IF NOT EXISTS `{s}`")
    q.execute(f"CREATE TABLE `{s}`.t1 (a INT PRIMARY KEY, b VARCHAR(5))")
    q.execute(f"INSERT INTO {s}.t1 (a, b) VALUES (1, 'one'), (2, 'two')")
    q.execute(f"UPDATE {s}.t1 SET b = 'uno' WHERE a = 1")
    c.execute(f"DROP DATABASE `{s}`")
    c.execute(f"CREATE DATABASE `{s}`")
    q.execute(f"CREATE TABLE `{s}`.t1 (b DATE, a VARCHAR(3) NOT NULL PRIMARY KEY, c INT)")
    q.execute(f"INSERT INTO {s}.t1 (b, a, c) VALUES ('2020-02-02', 'x', 1), (NULL, 'y', 2)")
    q.execute(f"DELETE FROM {s}.t1 WHERE a = 'y'")
    yield "CREATE and DROP DATABASE, a table created again in it"

    c.execute("CREATE TABLE IF NOT EXISTS `we``ird name` (`select` INT NOT NULL, "
              "`col with space` VARCHAR(10), `from` DATE, PRIMARY KEY (`select`)) /* comment */")
    c.execute("INSERT INTO `we``ird name` (`select`, `col with space`, `from`) "
              "VALUES (1, 'a b', '2020-01-01'), (2, NULL, NULL)")
    c.execute("/* leading */ ALTER TABLE `we``ird name` ADD COLUMN IF NOT EXISTS `select` INT, "
              "ADD COLUMN IF NOT EXISTS `new col` INT -- trailing\n")
    c.execute("ALTER TABLE `we``ird name` DROP COLUMN IF EXISTS `nope`, "
              "MODIFY COLUMN IF EXISTS `nope2` INT, CHANGE COLUMN IF EXISTS `from` `to` DATETIME")
    c.execute("ALTER TABLE customers /*M!100301 ADD COLUMN IF NOT EXISTS vip TINYINT(1) NOT NULL DEFAULT 0 */")
    c.execute("ALTER TABLE customers /*!50100 ADD COLUMN legacy INT */")
    c.execute("CREATE TABLE IF NOT EXISTS customers (zzz INT)")  # exists: not even logged
    c.execute("ALTER TABLE IF EXISTS no_such_table ADD x INT")
    c.execute("ALTER TABLE orders # a hash comment\n ADD COLUMN hc INT")
    q.execute(f"ALTER ONLINE TABLE `{d}`.`orders` ADD COLUMN `on` INT DEFAULT 1")
    c.execute("UPDATE `we``ird name` SET `new col` = 5, `to` = '2020-01-01 12:00:00' WHERE `select` = 1")
    c.execute("DELETE FROM `we``ird name` WHERE `select` = 2")
    c.execute("UPDATE customers SET vip = 1, legacy = 42 WHERE id = 1")
    c.execute("UPDATE orders SET hc = 1, `on` = 2 WHERE order_no = 1")
    yield "quoted names, comments, version comments, IF [NOT] EXISTS"

    c.execute("ALTER TABLE metrics2 WAIT 30 ADD COLUMN unit VARCHAR(8) AFTER name, "
              "ADD COLUMN x INT FIRST, ADD COLUMN y INT FIRST")
    # NOWAIT fails at once if a background thread (statistics after an ALTER) holds
    # the table's lock for a moment: the tests use long waits (NOWAIT: tests/schema/test_ddl.py)
    c.execute("ALTER TABLE top_customers WAIT 30 DROP COLUMN points")
    c.execute("RENAME TABLE IF EXISTS metrics2 WAIT 30 TO gauges, no_such_table TO still_none")
    c.execute("RENAME TABLES gauges WAIT 30 TO metrics3")
    c.execute("UPDATE metrics3 SET unit = 'pct', x = 1, y = 2 WHERE name = 'cpu'")
    c.execute("INSERT INTO metrics3 (y, x, name, unit, value) VALUES (0, 0, 'disk', 'GB', 7)")
    c.execute("UPDATE top_customers SET name = 'no points' WHERE rank_no = 3")
    yield "MariaDB's WAIT n, RENAME TABLE IF EXISTS, RENAME TABLES"
