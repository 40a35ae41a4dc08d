"""ddl.py: the DDL forms that change a table's columns, read as operations."""
from __future__ import annotations

import pytest

from binlake.schema.ddl import (AlterTable, ColumnSpec, CreateDatabase, CreateTable, DdlError, DropDatabase, DropTables,
                         RenameTables, TableDef, TruncateTable, UseDatabase, altered,
                         might_change_tables, parse, parse_script)


def one(statement: str, database: str | None = "db"):
    operations = parse(statement, database)
    assert len(operations) == 1, operations
    return operations[0]


def test_create_table_with_keys_options_and_comments():
    op = one("CREATE TABLE IF NOT EXISTS `s`.`t1` (\n"
             "  `id` int(10) unsigned NOT NULL AUTO_INCREMENT, -- the key\n"
             "  b enum('x','y''z') CHARACTER SET latin1 DEFAULT 'x' COMMENT 'c',\n"
             "  c datetime(6) DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),\n"
             "  d decimal(10,2) NOT NULL DEFAULT -1.5, /* a comment */\n"
             "  PRIMARY KEY (`id`), KEY k (b(3)), CONSTRAINT fk FOREIGN KEY (d) REFERENCES x (y)\n"
             ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 /*!50100 PARTITION BY HASH (id) */")
    assert isinstance(op, CreateTable) and (op.database, op.table, op.if_not_exists) == ("s", "t1", True)
    assert op.definition == TableDef((
        ColumnSpec("id", "INT", (10,), unsigned=True, nullable=False),
        ColumnSpec("b", "ENUM", ("x", "y'z"), charset="latin1", default="'x'"),
        ColumnSpec("c", "DATETIME", (6,), default="CURRENT_TIMESTAMP(6)"),
        ColumnSpec("d", "DECIMAL", (10, 2), nullable=False, default="-1.5"),
    ), ("id",), charset="utf8mb4")
    assert op.definition.columns[2].fsp == 6


def test_type_aliases_and_inline_primary_key():
    op = one("create table t (a bool, b double precision, c national char(3), d serial, "
             "e integer primary key, f numeric(5), g real, h long varchar, i character varying(4))")
    assert [(c.name, c.type, c.args, c.unsigned) for c in op.definition.columns] == [
        ("a", "TINYINT", (1,), False), ("b", "DOUBLE", (), False), ("c", "CHAR", (3,), False),
        ("d", "BIGINT", (), True), ("e", "INT", (), False), ("f", "DECIMAL", (5,), False),
        ("g", "DOUBLE", (), False), ("h", "MEDIUMTEXT", (), False), ("i", "VARCHAR", (4,), False)]
    assert op.definition.primary_key == ("e",)


def test_key_alone_in_a_column_definition_is_the_primary_key():
    assert one("CREATE TABLE t (id INT KEY, v INT)").definition.primary_key == ("id",)
    assert one("CREATE TABLE t (id INT UNIQUE KEY, v INT)").definition.primary_key == ()
    assert one("CREATE TABLE t (id INT UNIQUE, v INT KEY)").definition.primary_key == ("v",)
    assert one("ALTER TABLE t MODIFY v BIGINT KEY").actions[-1] == ("primary", ("v",))


def test_create_like_and_select_forms():
    assert one("CREATE TABLE a LIKE other.b") == CreateTable("db", "a", None, like=("other", "b"))
    assert one("CREATE TABLE a (LIKE b)").like == ("db", "b")
    assert one("CREATE TABLE a SELECT * FROM b").definition is None
    assert one("CREATE TABLE a (x int) AS SELECT 1 AS y").definition is None


def test_alter_table_every_specification():
    # as MariaDB 10.11 runs it: e, a (DEFAULT 7), c, f, h, x, y with PRIMARY KEY (x)
    op = one("ALTER TABLE t ADD COLUMN c INT UNSIGNED DEFAULT 5 AFTER a, DROP COLUMN b, "
             "CHANGE d e VARCHAR(10) CHARACTER SET latin1 FIRST, MODIFY f DECIMAL(10,2), "
             "RENAME COLUMN g TO h, ADD INDEX (a), ALTER COLUMN a SET DEFAULT 7, "
             "ADD (x INT, y INT), DROP PRIMARY KEY, ADD CONSTRAINT pk PRIMARY KEY (x), "
             "ALGORITHM=INPLACE, LOCK=NONE, RENAME TO other.u")
    assert isinstance(op, AlterTable) and op.rename_to == ("other", "u")
    assert [a[0] for a in op.actions] == ["add", "drop", "change", "change", "rename", "default",
                                          "add", "add", "primary", "primary"]
    before = TableDef(tuple(ColumnSpec(n, "INT") for n in "abdfg"), ("a",))
    after = altered(before, op.actions)
    assert after.names == ["e", "a", "c", "f", "h", "x", "y"]
    assert after.columns[3] == ColumnSpec("f", "DECIMAL", (10, 2))
    assert after.columns[1].default == "7"
    assert after.primary_key == ("x",)


def test_alter_names_the_columns_before_the_statement_as_the_server_does():
    """MariaDB resolves DROP/CHANGE/RENAME COLUMN against the old table, AFTER
    against the new one (results checked on MariaDB 10.11)."""
    start = TableDef((ColumnSpec("a", "INT"), ColumnSpec("b", "VARCHAR", (5,)), ColumnSpec("c", "INT")))

    def after(statement):
        return altered(start, one(statement).actions)
    swapped = after("ALTER TABLE t CHANGE a b INT, CHANGE b a VARCHAR(5)")
    assert [(c.name, c.type) for c in swapped.columns] == [("b", "INT"), ("a", "VARCHAR"), ("c", "INT")]
    assert after("ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a").names == ["b", "a", "c"]
    # AFTER names the column by its new name, even when the rename comes later
    assert after("ALTER TABLE t ADD x INT AFTER z, CHANGE a z INT").names == ["z", "x", "b", "c"]
    assert after("ALTER TABLE t ADD x INT, MODIFY c INT FIRST, ADD w INT").names == [
        "c", "a", "b", "x", "w"]
    assert after("ALTER TABLE t MODIFY c INT AFTER a, MODIFY a INT AFTER b").names == ["c", "b", "a"]
    assert after("ALTER TABLE t DROP a, ADD a BIGINT AFTER c").names == ["b", "c", "a"]
    with pytest.raises(DdlError, match="no column a"):
        after("ALTER TABLE t CHANGE a z INT, ADD x INT AFTER a")


def test_alter_skips_what_if_exists_makes_the_server_skip():
    """The server logs the statement whole, with the skipped specifications."""
    start = TableDef((ColumnSpec("a", "INT"), ColumnSpec("b", "INT")), ("a",))
    op = one("ALTER TABLE t ADD COLUMN IF NOT EXISTS a BIGINT, DROP COLUMN IF EXISTS nope, "
             "CHANGE COLUMN IF EXISTS q r INT, MODIFY IF EXISTS nope2 INT, "
             "ADD COLUMN IF NOT EXISTS x INT, ADD COLUMN IF NOT EXISTS x BIGINT, "
             "ADD IF NOT EXISTS (b INT, y INT), DROP b, DROP COLUMN IF EXISTS b")
    after = altered(start, op.actions)
    assert [(c.name, c.type) for c in after.columns] == [("a", "INT"), ("x", "INT"), ("y", "INT")]
    assert after.primary_key == ("a",)


def test_alter_keeps_keys_renamed_and_drops_dropped_ones():
    start = TableDef((ColumnSpec("a", "INT"), ColumnSpec("b", "INT")), ("a", "b"))
    assert altered(start, one("ALTER TABLE t CHANGE a z BIGINT").actions).primary_key == ("z", "b")
    assert altered(start, one("ALTER TABLE t DROP b").actions).primary_key == ("a",)
    with pytest.raises(DdlError, match="no column nope"):
        altered(start, one("ALTER TABLE t DROP nope").actions)


def test_alter_convert_charset_changes_text_columns_only():
    start = TableDef((ColumnSpec("a", "INT"), ColumnSpec("b", "VARCHAR", (3,))))
    after = altered(start, one("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4").actions)
    assert [c.charset for c in after.columns] == [None, "utf8mb4"]


def test_rename_drop_truncate_and_databases():
    assert one("RENAME TABLE a TO b, x.c TO y.d") == RenameTables(
        ((("db", "a"), ("db", "b")), (("x", "c"), ("y", "d"))))
    assert one("DROP TABLE IF EXISTS a, `x`.`b` CASCADE") == DropTables((("db", "a"), ("x", "b")))
    assert one("drop temporary table t") == DropTables((("db", "t"),))
    assert one("TRUNCATE TABLE x.t") == TruncateTable("x", "t")
    assert one("TRUNCATE t") == TruncateTable("db", "t")
    assert one("DROP DATABASE IF EXISTS x") == DropDatabase("x")
    assert parse("CREATE DATABASE x") == [CreateDatabase("x", None)]
    assert parse("CREATE DATABASE IF NOT EXISTS y DEFAULT CHARACTER SET = latin1") == [
        CreateDatabase("y", "latin1")]


def test_unique_keys_are_followed_and_one_of_not_null_columns_finds_rows():
    """Without a primary key the server finds a row by its first UNIQUE key
    of NOT NULL columns (and logs only it in a MINIMAL before image)."""
    (create,) = parse("CREATE TABLE t (id INT NOT NULL, b INT, c VARCHAR(3) NOT NULL UNIQUE, "
                      "UNIQUE KEY (id), CONSTRAINT u2 UNIQUE (b), KEY plain (b))")
    table = create.definition
    assert table.unique_keys == (("c", ("c",), (0,)), ("id", ("id",), (0,)), ("u2", ("b",), (0,)))
    assert table.primary_key == () and table.row_key == ("c",)
    (alter,) = parse("ALTER TABLE t DROP INDEX c, RENAME COLUMN id TO ident, ADD UNIQUE (b, c)")
    table = altered(table, alter.actions)
    assert table.unique_keys == (("id", ("ident",), (0,)), ("u2", ("b",), (0,)),
                                 ("b", ("b", "c"), (0, 0)))
    assert table.row_key == ("ident",)
    table = altered(table, parse("ALTER TABLE t MODIFY ident INT")[0].actions)  # nullable now
    assert table.row_key == ()
    (index,) = parse("CREATE UNIQUE INDEX ux ON db.t (c)")
    assert index == AlterTable("db", "t", (("unique", "ux", ("c",), (0,)),))
    table = altered(table, index.actions)
    assert table.row_key == ("c",)
    assert parse("DROP INDEX ux ON t", "db") == [AlterTable("db", "t", (("drop_index", "ux"),))]
    table = altered(table, parse("ALTER TABLE t RENAME INDEX ux TO uy")[0].actions)
    assert table.unique_keys[-1] == ("uy", ("c",), (0,))
    table = altered(table, parse("ALTER TABLE t DROP KEY uy, DROP COLUMN b")[0].actions)
    assert table.unique_keys == (("id", ("ident",), (0,)), ("b", ("c",), (0,)))
    assert table.row_key == ("c",)
    table = altered(table, parse("ALTER TABLE t ADD PRIMARY KEY (ident)")[0].actions)
    assert table.row_key == ("ident",)


def test_a_unique_key_over_a_column_prefix_does_not_find_rows():
    """The server keys a table without a primary key by its first UNIQUE
    key of NOT NULL columns none of which it holds a prefix of (issue 46):
    a prefix as long as a CHAR or VARCHAR is the whole column, any prefix
    of a TEXT or BLOB is not."""
    (create,) = parse("CREATE TABLE t (a VARCHAR(100) NOT NULL, b INT NOT NULL, c INT, "
                      "UNIQUE (a(10)), UNIQUE (b))")
    table = create.definition
    assert table.unique_keys == (("a", ("a",), (10,)), ("b", ("b",), (0,)))
    assert table.row_key == ("b",)
    (create,) = parse("CREATE TABLE t (a CHAR(8) NOT NULL, t TEXT NOT NULL, b INT NOT NULL, "
                      "UNIQUE KEY ut (t(8), b), UNIQUE KEY ua (a(8) DESC, b))")
    assert create.definition.row_key == ("a", "b")
    # prefixes follow their columns through ALTERs
    (alter,) = parse("ALTER TABLE t DROP INDEX ua, RENAME COLUMN t TO body, "
                     "ADD UNIQUE ux (a(4)), ADD CONSTRAINT uy UNIQUE (b, a)")
    table = altered(create.definition, alter.actions)
    assert table.unique_keys == (("ut", ("body", "b"), (8, 0)), ("ux", ("a",), (4,)),
                                 ("uy", ("b", "a"), (0, 0)))
    assert table.row_key == ("b", "a")
    table = altered(table, parse("ALTER TABLE t DROP COLUMN b, DROP INDEX uy")[0].actions)
    assert table.unique_keys == (("ut", ("body",), (8,)), ("ux", ("a",), (4,)))
    assert table.row_key == ()
    # a column shortened to its prefix: the server keys the whole column
    assert altered(table, parse("ALTER TABLE t MODIFY a CHAR(4) NOT NULL")[0].actions
                   ).row_key == ("a",)
    (index,) = parse("CREATE UNIQUE INDEX ui ON t (a(2), body(3))", "db")
    assert index == AlterTable("db", "t", (("unique", "ui", ("a", "body"), (2, 3)),))


def test_statements_that_change_no_table():
    for statement in ("BEGIN", "INSERT INTO t VALUES (1)", "CREATE INDEX i ON t (a)",
                      "ALTER DATABASE d CHARACTER SET utf8", "CREATE VIEW v AS SELECT 1",
                      "GRANT ALL ON *.* TO x", "SET @a = 1"):
        assert parse(statement) == [], statement
    assert not might_change_tables("BEGIN")
    assert not might_change_tables("insert into t values (1)")
    assert might_change_tables("/* hi */ alter table t add b int")
    assert might_change_tables("/*!40000 ALTER TABLE t DISABLE KEYS */")


def test_scripts_follow_use_and_version_comments():
    results = list(parse_script("-- dump\n/*!40101 SET NAMES utf8 */;\nUSE `shop`;\n"
                                "/*!40000 CREATE TABLE a (x int) */;\nCREATE TABLE b (y int);"))
    operations = [op for ops, _ in results for op in ops]
    assert operations[0] == UseDatabase("shop")
    assert [(op.database, op.table) for op in operations[1:]] == [("shop", "a"), ("shop", "b")]


def test_unreadable_statements_say_which_table():
    with pytest.raises(DdlError) as info:
        parse("ALTER TABLE t ADD COLUMN", "db")
    assert info.value.tables == (("db", "t"),)
    with pytest.raises(DdlError):
        parse("CREATE TABLE t (a int, 'unterminated")
    # one bad statement in a script leaves the others readable
    results = list(parse_script("CREATE TABLE a (x int); ALTER TABLE a ADD; CREATE TABLE b (y int)"))
    assert [error is not None for _, error in results] == [False, True, False]


def test_mariadb_lock_timeouts_and_rename_forms():
    """WAIT n / NOWAIT after a table name, RENAME TABLE IF EXISTS, RENAME TABLES
    (MariaDB 10.3+; each logged as written)."""
    op = one("ALTER TABLE t WAIT 5 ADD COLUMN w INT")
    assert [a[0] for a in op.actions] == ["add"] and op.actions[0][1].name == "w"
    assert one("ALTER TABLE d.t NOWAIT DROP COLUMN b").actions == (("drop", "b", False),)
    assert one("RENAME TABLE IF EXISTS t WAIT 3 TO t2, nope TO nope2") == RenameTables(
        ((("db", "t"), ("db", "t2")), (("db", "nope"), ("db", "nope2"))))
    assert one("RENAME TABLES t2 NOWAIT TO t3") == RenameTables(((("db", "t2"), ("db", "t3")),))


def test_the_sandbox_line_of_mariadb_dump_is_not_a_statement():
    """`/*M!999999\\- enable the sandbox mode */` (first line of mariadb-dump
    since 10.5.25) is for the client; the statement after it is read."""
    operations = parse("/*M!999999\\- enable the sandbox mode */ \nCREATE TABLE t (a INT);", "db")
    assert [(op.table, op.definition.names) for op in operations] == [("t", ["a"])]


def test_table_charsets_come_from_the_table_then_alter_options():
    create = one("CREATE TABLE t (a TEXT) ENGINE=InnoDB CHARSET = ascii COMMENT 'x'")
    assert create.definition.charset == "ascii"
    assert one("CREATE TABLE t (a TEXT) AS SELECT 'CHARSET x'").definition is None
    start = create.definition
    assert altered(start, one("ALTER TABLE t DEFAULT CHARACTER SET latin1").actions).charset == "latin1"
    converted = altered(start, one("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4").actions)
    assert converted.charset == "utf8mb4" and converted.columns[0].charset == "utf8mb4"


def test_alter_rename_to_an_unqualified_name_goes_to_the_default_database():
    """MariaDB 10.11: `USE p; ALTER TABLE p2.t RENAME TO u` makes p.u."""
    assert one("ALTER TABLE p2.t RENAME TO u", "p").rename_to == ("p", "u")
    assert one("ALTER TABLE p2.t RENAME TO x.u", "p").rename_to == ("x", "u")
    assert one("ALTER TABLE t RENAME u", "p").rename_to == ("p", "u")


def test_partitions_converted_to_tables_and_back():
    """MariaDB 10.7+: a partition becomes a table with the same columns; a
    table becomes a partition and is gone."""
    assert parse("ALTER TABLE p2.pt CONVERT PARTITION p0 TO TABLE pt_p0", "p") == [
        AlterTable("p2", "pt", ()), CreateTable("p", "pt_p0", None, like=("p2", "pt"))]
    assert parse("ALTER TABLE pt CONVERT TABLE x.pt_p0 TO PARTITION p2 VALUES LESS THAN (200)",
                 "p") == [AlterTable("p", "pt", ()), DropTables((("x", "pt_p0"),))]
    assert one("ALTER TABLE t CONVERT TO CHARACTER SET latin1").actions == (("charset", "latin1"),)


@pytest.mark.parametrize("column", ["a DATETIME('\x14')", "a DECIMAL(10, x)", "a VARCHAR(n)"])
def test_a_type_whose_size_is_not_a_number_is_unreadable(column):
    """Found by fuzzing: a damaged CREATE TABLE gave DATETIME a string size,
    and its fractional digits were read as int('\\x14')."""
    with pytest.raises(DdlError, match="takes numbers"):
        parse(f"CREATE TABLE t ({column})")
    assert parse("CREATE TABLE t (a ENUM('x', 'y'), b DATETIME(6))")
