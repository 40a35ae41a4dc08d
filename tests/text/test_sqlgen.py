"""`binlake sql`: value literals, schema files, the flashback spool, and the
statements written for corpus files. (Replaying them into a server is in
tests/server/test_dba_vs_mariadb_binlog.py.)"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pytest

from binlake.schema.history import load_schema
from binlake.text.sqlgen import ColumnInfo, ReverseSpool, sql_literal
from binlake.read.values import MysqlTemporal
from peers import binlake

UTF8 = ColumnInfo("t", charset=45)       # utf8mb4_general_ci
LATIN1 = ColumnInfo("t", charset=8)      # latin1_swedish_ci


# -- literals ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value, column, expected", [
    (None, None, "NULL"),
    (-5, None, "-5"),
    (Decimal("0E-30"), None, "0." + "0" * 30),
    (Decimal("-1.50"), None, "-1.50"),
    (0.1, None, "0.1"),
    (3.4028234663852886e38, None, "3.4028234663852886e+38"),
    ("it's", UTF8, "'it''s'"),
    ("a\\b", UTF8, "_utf8mb4 X'615C62'"),
    ("a\x00b", UTF8, "_utf8mb4 X'610062'"),
    ("line\nbreak", UTF8, "_utf8mb4 X'6C696E650A627265616B'"),
    ("é", LATIN1, "'é'"),
    ("é\\", LATIN1, "_latin1 X'E95C'"),
    ("bad \udcff byte", UTF8, "_utf8mb4 X'6261642000FF2062797465'".replace("00FF", "FF")),
    (b"\x00'\\", None, "X'00275C'"),
    (b"", None, "X''"),
    (b"\x01", ColumnInfo("b", binary_length=4), "X'01000000'"),
    (dt.date(1000, 1, 1), None, "'1000-01-01'"),
    (dt.datetime(2020, 2, 3, 4, 5, 6, 7), None, "'2020-02-03 04:05:06.000007'"),
    (dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), None, "'1970-01-01 00:00:00'"),
    (MysqlTemporal("0000-00-00 00:00:00"), None, "'0000-00-00 00:00:00'"),
    (-dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999999), None, "'-838:59:59.999999'"),
    (frozenset({"b", "a"}), UTF8, "'a,b'"),
    (-1, ColumnInfo("u", unsigned_bits=64), "18446744073709551615"),
])
def test_literals(value, column, expected):
    assert sql_literal(value, column) == expected


def test_no_literal_carries_a_backslash_or_control_character():
    """Whatever the text, the literal means the same with or without
    NO_BACKSLASH_ESCAPES: it never has a backslash or control byte inside quotes."""
    rng = random.Random(7)
    alphabet = "ab'\"\\\x00\n\r\t\x1a;`%_é€😀\udc80"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(8)))
        literal = sql_literal(text, UTF8)
        if literal.startswith("'"):
            inside = literal[1:-1]
            assert "\\" not in inside and all(ord(c) >= 0x20 for c in inside)
            assert inside.replace("''", "") .count("'") == 0
        else:
            assert literal.startswith("_utf8mb4 X'") and set(literal[11:-1]) <= set("0123456789ABCDEF")
            assert bytes.fromhex(literal[11:-1]) == text.encode("utf-8", "surrogateescape")


# -- schema files ----------------------------------------------------------------------------------

DUMP = """
/*!40101 SET NAMES utf8mb4 */;
CREATE DATABASE /*!32312 IF NOT EXISTS*/ `shop` /*!40100 DEFAULT CHARACTER SET utf8mb4 */;
USE `shop`;
DROP TABLE IF EXISTS `orders`;
CREATE TABLE `orders` (
  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  `note` varchar(20) DEFAULT 'a,b (c)',
  `code` binary(4) DEFAULT NULL,
  PRIMARY KEY (`id`),
  KEY `k_note` (`note`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE `places` (
  `ip` inet6 NOT NULL,
  `where` point DEFAULT NULL,
  `n` int unsigned,
  PRIMARY KEY (`ip`)
);
CREATE TABLE other.`t` (a INT, `b c` TEXT, CONSTRAINT pk PRIMARY KEY (`b c`(10), a));
"""


def test_schema_from_a_dump():
    schema = load_schema(DUMP)
    assert schema.columns("shop", "orders") == ["id", "note", "code"]
    assert schema.primary_key("shop", "orders") == ["id"]
    assert schema.unsigned_columns("shop", "orders") == {"id"}
    assert schema.fixed_binary_columns("shop", "orders") == {"code"}
    # sqlglot keeps this one as an opaque command (INET6, POINT): read from its tokens
    assert schema.columns("shop", "places") == ["ip", "where", "n"]
    assert schema.primary_key("shop", "places") == ["ip"]
    assert schema.unsigned_columns("shop", "places") == {"n"}
    assert schema.fixed_binary_columns("shop", "places") == {"ip"}
    assert schema.columns("other", "t") == ["a", "b c"]
    assert schema.primary_key("other", "t") == ["b c", "a"]
    assert schema.columns("shop", "ORDERS") == ["id", "note", "code"]
    assert schema.columns("shop", "missing") is None


def test_schema_file_path(tmp_path):
    path = tmp_path / "schema.sql"
    path.write_text(DUMP)
    assert load_schema(str(path)).columns("shop", "orders") == ["id", "note", "code"]


# -- the flashback spool ----------------------------------------------------------------------------

def test_spool_reads_back_transaction_by_transaction_on_disk():
    spool = ReverseSpool(memory_limit=64)  # tiny: goes to a temporary file at once
    for t in range(3):
        spool.begin()
        for s in range(4):
            spool.add(f"statement {t}.{s} ü")
        spool.commit()
    assert list(spool.transactions()) == [
        [f"statement {t}.{s} ü" for s in reversed(range(4))] for t in reversed(range(3))]
    spool.close()


# -- corpus files --------------------------------------------------------------------------------------

def _statements(out: bytes) -> list[str]:
    return [line for line in out.decode("utf-8", "surrogateescape").splitlines()
            if line.startswith(("INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT"))]


def test_statements_with_names_from_the_binlog(corpus):
    path = corpus / "mysql-8.0.40" / "std_data" / "rpl_binlog_with_gipk_info_full_metadata.000001"
    status, out, err = binlake("sql", str(path))
    assert status == 0, err
    assert _statements(out) == [
        "BEGIN;", "INSERT INTO `test`.`t1` (`c1`, `c2`) VALUES (1, '1');", "COMMIT;",
        "BEGIN;", "INSERT INTO `test`.`t2` (`my_row_id`, `f1`, `really_unique_column_name`) "
        "VALUES (1, 1, 1);", "COMMIT;"]
    assert "CREATE TABLE t1 (c1 BIGINT, c2 TEXT, PRIMARY KEY(c1))\n;\n" in out.decode()
    status, out, err = binlake("sql", "--flashback", str(path))
    assert status == 0
    assert _statements(out) == [
        "BEGIN;", "DELETE FROM `test`.`t2` WHERE `my_row_id`=1 LIMIT 1;", "COMMIT;",
        "BEGIN;", "DELETE FROM `test`.`t1` WHERE `c1`=1 LIMIT 1;", "COMMIT;"]
    assert "cannot be rolled back from the binlog" in err  # the CREATE TABLEs


def test_updates_need_names_or_a_schema(corpus, tmp_path):
    path = corpus / "MyFlash" / "haha.000008"  # an UPDATE, no column names in the binlog
    status, out, err = binlake("sql", str(path))
    assert status == 1
    assert "pass --schema" in err
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE test.test4 (id INT PRIMARY KEY);")
    status, out, err = binlake("sql", "--schema", str(schema), str(path))
    assert status == 0, err
    assert "UPDATE `test`.`test4` SET `id`=13 WHERE `id`=3 LIMIT 1;" in _statements(out)
    status, out, err = binlake("sql", "--flashback", "--schema", str(schema), str(path))
    assert status == 0, err
    assert "UPDATE `test`.`test4` SET `id`=3 WHERE `id`=13 LIMIT 1;" in _statements(out)


def test_flashback_order_is_last_change_first(corpus, tmp_path):
    path = corpus / "MyFlash" / "haha.000041"  # inserts only: positional without names
    status, out, err = binlake("sql", str(path))
    assert status == 0, err
    assert "INSERT INTO `test`.`testFlashback` VALUES (1, 1);" in out.decode()
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE test.testFlashback (id INT PRIMARY KEY, v INT);")
    status, out, err = binlake("sql", "--schema", str(schema), str(path))
    statements = _statements(out)
    assert "INSERT INTO `test`.`testFlashback` (`id`, `v`) VALUES (1, 1);" in statements
    status, undo, err = binlake("sql", "--flashback", "--schema", str(schema), str(path))
    assert status == 0, err
    forward = [s for s in statements if s.startswith("INSERT")]
    backward = [s for s in _statements(undo) if s.startswith("DELETE")]
    assert len(forward) == len(backward)
    # The last insert is undone first, and so on back to the first.
    for insert, delete in zip(reversed(forward), backward):
        row_id = insert.split("VALUES (")[1].split(",")[0]
        assert delete == f"DELETE FROM `test`.`testFlashback` WHERE `id`={row_id} LIMIT 1;"


def test_selection_and_rewrite(corpus):
    path = corpus / "mysql-8.0.40" / "std_data" / "rpl_binlog_with_gipk_info_full_metadata.000001"
    status, out, _ = binlake("sql", "-T", "t2", "--rewrite-db", "test->copy", str(path))
    assert status == 0
    rows = [s for s in _statements(out) if not s.startswith(("BEGIN", "COMMIT"))]
    assert rows == ["INSERT INTO `copy`.`t2` (`my_row_id`, `f1`, `really_unique_column_name`) "
                    "VALUES (1, 1, 1);"]


def test_statements_pass_through_with_their_session(corpus, tmp_path):
    """Statement-format events (4.1 here): user variables, RAND seeds,
    LAST_INSERT_ID, the timestamp and the database come along, and LOAD DATA
    reads the file rebuilt from the binlog."""
    path = corpus / "mysql-5.5.62" / "suite" / "binlog" / "std_data" / "binlog_old_version_4_1.000001"
    status, out, err = binlake("sql", "--local-load", f"{tmp_path}/", str(path))
    assert status == 0, err
    text = out.decode()
    for piece in ["use `test`;\nSET TIMESTAMP=1201690912;\n", "SET @`x`:=4;\n",
                  "INSERT INTO t1 VALUES (@x, 'four')\n;\n",
                  "SET @@RAND_SEED1=410306692, @@RAND_SEED2=47093669;\n",
                  "SET LAST_INSERT_ID=0;\n",
                  f"LOAD DATA LOCAL INFILE '{tmp_path}/big_file.dat-2-0' INTO TABLE `t3`"]:
        assert piece in text
    assert (tmp_path / "big_file.dat-2-0").stat().st_size == 131072 + 17664
    status, _, err = binlake("sql", "--local-load", f"{tmp_path}/missing/", str(path))
    assert status == 1 and "cannot write the LOAD DATA file" in err


def test_huge_rows_events_read_through_the_window(corpus, monkeypatch):
    """Rows events over the reader's size limit stay in the file (rows.LazyRowData):
    text and SQL come out the same as from memory."""
    from binlake.read import reader
    from binlake.read.rows import LazyRowData
    path = str(corpus / "mysql-binlog-connector-java" / "mysql-bin.checksum-crc32")
    expected = [binlake(*args)[1] for args in (("dump", "-vv", path), ("sql", path),
                                               ("sql", "--flashback", path))]
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)
    got = [binlake(*args)[1] for args in (("dump", "-vv", path), ("sql", path),
                                          ("sql", "--flashback", path))]
    assert got == expected
