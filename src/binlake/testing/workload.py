"""SQL workloads that make a MariaDB server write row-based binlogs worth decoding.

Strategy: ``run_basic_workload`` touches every column type MariaDB can put in a rows
event, at its edge values and as NULL, through multi-row INSERTs, UPDATEs (one of
them changing the primary key), DELETEs, a multi-statement transaction, a rolled
back transaction and a table without a primary key. Afterwards the server's own
``SELECT *`` (``expected_final_state``) is the truth the decoded binlog must rebuild.

Rule: every INSERT names every column, so even ``binlog_row_image=MINIMAL`` logs
complete after images and the final state can be rebuilt from the binlog alone.

``generate_bulk`` is the other half: a lot of realistic binlog, fast, for benchmarks
(``INSERT ... SELECT`` from the sequence engine's ``seq_1_to_N`` tables in batches).

Sessions run with ``sql_mode=''`` (zero dates and invalid ENUM values are accepted)
and ``time_zone='+00:00'`` (TIMESTAMP values are UTC both when written and read).
"""
from __future__ import annotations

import random
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


def generate_bulk(server, database: str, target_bytes: int, seed: int = 0, batch_rows: int = 50000) -> dict[str, int]:
    """Write at least ``target_bytes`` of row-based binlog; returns row counts and bytes written.

    Each batch inserts ``batch_rows`` orders and a quarter as many events, updates 30%
    and deletes 9% of the batch's orders (the mix of the 1 GB benchmark: 3.5M inserts,
    1M updates, 300k deletes). Values depend only on ``seed`` and row ids. Expressions
    are kept cheap (JSON built with CONCAT, updates of small columns; full row images
    are logged anyway), which makes about 40-60 MB/s of binlog.
    """
    rng = random.Random(seed)
    connection = _session(server)
    counts = {"inserts": 0, "updates": 0, "deletes": 0}
    try:
        with connection.cursor() as c:
            c.execute(f"CREATE DATABASE IF NOT EXISTS {database} CHARACTER SET utf8mb4")
            c.execute(f"USE {database}")
            for table, create in BULK_TABLES.items():
                c.execute(f"DROP TABLE IF EXISTS {table}")
                c.execute(create)
            start = _binlog_bytes(c)
            base = 0
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
