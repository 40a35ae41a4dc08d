"""schema.py: the schema history followed through DDL, by position, saved and loaded."""
from __future__ import annotations

import json
from types import SimpleNamespace

from binlake.constants import ColumnType as T
from binlake.schema.history import SEED, Schema, load_schema


def history(*statements, seed: str = "") -> Schema:
    """Statements run at positions ("binlog.000001", 100), (..., 200), ..."""
    schema = load_schema(seed) if seed else Schema()
    for n, statement in enumerate(statements, 1):
        schema.apply(statement, "db", ("binlog.000001", 100 * n))
    return schema


def table_map(database, table, *types, names=None, pos=1000):
    columns = [SimpleNamespace(real_type=t, name=(names[i] if names else None))
               for i, t in enumerate(types)]
    return SimpleNamespace(database=database, table=table, columns=columns,
                           header=SimpleNamespace(file="/x/binlog.000001", pos=pos))


def test_columns_follow_every_change_and_positions_give_earlier_ones():
    schema = history("CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(5))",
                     "ALTER TABLE t ADD c INT FIRST",
                     "ALTER TABLE t RENAME COLUMN b TO bb, DROP a",
                     "RENAME TABLE t TO u",
                     "TRUNCATE TABLE u",
                     "DROP TABLE u")
    assert schema.columns("db", "t") is None and schema.columns("db", "u") is None
    at = lambda pos: schema.at(("binlog.000001", pos))  # noqa: E731
    assert at(150).columns("db", "t") == ["a", "b"]
    assert at(150).primary_key("db", "t") == ["a"]
    assert at(250).columns("db", "t") == ["c", "a", "b"]
    assert at(350).columns("db", "t") == ["c", "bb"]
    assert at(350).primary_key("db", "t") == []
    assert at(450).columns("db", "t") is None and at(450).columns("db", "u") == ["c", "bb"]
    assert at(550).columns("db", "u") == ["c", "bb"]
    assert [v.statement for v in schema.versions[("db", "u")]] == [
        "RENAME TABLE FROM db.t", "TRUNCATE TABLE", "DROP TABLE"]
    assert at(100).columns("db", "t") is None  # the statement at 100 applies after it


def test_seeds_come_first_and_a_recreate_starts_fresh():
    schema = history("DROP TABLE s.old", "CREATE TABLE s.old (z INT)",
                     seed="USE s;\nCREATE TABLE old (a INT, b INT);")
    assert schema.at(("binlog.000001", 1)).columns("s", "old") == ["a", "b"]
    assert schema.at(("binlog.000001", 150)).columns("s", "old") is None
    assert schema.columns("s", "old") == ["z"]
    assert schema.versions[("s", "old")][0].position == SEED


def test_like_copies_and_select_leaves_columns_unknown_with_a_warning():
    schema = history("CREATE TABLE a (x INT, y TEXT)", "CREATE TABLE b LIKE a",
                     "CREATE TABLE c SELECT * FROM a", "CREATE TABLE d LIKE nowhere")
    assert schema.columns("db", "b") == ["x", "y"]
    assert schema.columns("db", "c") is None and schema.columns("db", "d") is None
    assert schema.warnings == [
        "binlog.000001: offset 300: CREATE TABLE db.c ... SELECT: its columns are not in the "
        "statement (positional names until the next CREATE)",
        "binlog.000001: offset 400: CREATE TABLE db.d LIKE db.nowhere: the columns of "
        "db.nowhere are not known"]


def test_unreadable_ddl_warns_and_forgets_the_table():
    schema = history("CREATE TABLE t (a INT)", "ALTER TABLE t ADD COLUMN")
    assert schema.columns("db", "t") is None
    assert len(schema.warnings) == 1 and schema.warnings[0].startswith(
        "binlog.000001: offset 200: cannot read 'ALTER TABLE t ADD COLUMN'")
    # an ALTER of a column the history does not have: forgotten too, never guessed
    schema = history("CREATE TABLE t (a INT)", "ALTER TABLE t DROP b")
    assert schema.columns("db", "t") is None and "no column b" in schema.warnings[0]


def test_drop_database_drops_its_tables():
    schema = history("CREATE TABLE x.a (i INT)", "CREATE TABLE y.b (i INT)", "DROP DATABASE x")
    assert schema.columns("x", "a") is None and schema.columns("y", "b") == ["i"]


def test_names_compare_case_insensitively():
    schema = history("CREATE TABLE Shop.Orders (Id INT)", "ALTER TABLE shop.orders ADD note TEXT")
    assert schema.columns("shop", "ORDERS") == ["Id", "note"]


def test_table_maps_must_agree():
    schema = history("CREATE TABLE t (a INT UNSIGNED, b DATETIME(3), c VARCHAR(4))")
    good = table_map("db", "t", T.MYSQL_TYPE_LONG, T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_VARCHAR)
    assert schema.for_table_map(good).names == ["a", "b", "c"]
    assert schema.unsigned_columns("db", "t") == {"a"}
    short = table_map("db", "t", T.MYSQL_TYPE_LONG, T.MYSQL_TYPE_DATETIME2)
    wrong_type = table_map("db", "t", T.MYSQL_TYPE_LONG, T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_VARCHAR)
    wrong_name = table_map("db", "t", T.MYSQL_TYPE_LONG, T.MYSQL_TYPE_DATETIME2,
                           T.MYSQL_TYPE_VARCHAR, names=["a", "b", "z"])
    for bad in (short, wrong_type, wrong_name, short):
        assert schema.for_table_map(bad) is None
    assert [w.split(" (")[1] for w in schema.warnings] == [
        "3 columns against 2); positional names are used",
        "column b is DATETIME, the table map has type 252); positional names are used",
        "column c is named z in the table map); positional names are used"]  # each once


def test_save_and_load_keep_every_version(tmp_path):
    schema = history("CREATE TABLE t (a INT NOT NULL DEFAULT 3, b ENUM('x','y'))",
                     "ALTER TABLE t ADD c DECIMAL(5,2) UNSIGNED AFTER a", "DROP TABLE t",
                     seed="CREATE TABLE s.q (k BINARY(4) PRIMARY KEY)")
    path = tmp_path / "history.json"
    schema.save(str(path))
    loaded = load_schema(str(path))
    assert loaded.versions == schema.versions
    assert loaded.tables == schema.tables
    assert loaded.at(("binlog.000001", 250)).table("db", "t") == \
        schema.at(("binlog.000001", 250)).table("db", "t")
    assert loaded.fixed_binary_columns("s", "q") == {"k"}
    assert not list(tmp_path.glob("*.tmp*"))


PREFIXED = ("CREATE TABLE t (a VARCHAR(100) NOT NULL, b INT NOT NULL, c INT, "
            "UNIQUE (a(10)), UNIQUE (b))")


def test_save_and_load_keep_prefix_lengths_and_older_histories_load(tmp_path):
    """A UNIQUE key over a prefix does not key the table (issue 46): the
    saved history keeps the prefix; one saved before prefixes were kept
    still loads, its keys whole (as they were taken then)."""
    schema = history(PREFIXED)
    path = tmp_path / "history.json"
    schema.save(str(path))
    loaded = load_schema(str(path))
    assert loaded.versions == schema.versions
    assert loaded.table("db", "t").row_key == ("b",)
    saved = json.loads(path.read_text())
    [version] = saved["tables"][0]["versions"]
    assert version["unique_keys"] == [["a", ["a"], [10]], ["b", ["b"]]]
    version["unique_keys"] = [["a", ["a"]], ["b", ["b"]]]  # as saved before
    older = Schema.from_json(saved)
    assert older.table("db", "t").unique_keys == (("a", ("a",), (0,)), ("b", ("b",), (0,)))


def test_annotate_names_the_key_the_server_finds_rows_by_where_the_map_names_none():
    """binlog_row_metadata below FULL: the table map names no key; the
    history fills in the server's, a promoted UNIQUE key too. A key the map
    names is kept."""
    from binlake.read.events import TableMapEvent
    from binlake.read.events.table_map import Column
    schema = history(PREFIXED)
    columns = (Column(0, T.MYSQL_TYPE_VARCHAR, 400, False), Column(1, T.MYSQL_TYPE_LONG, 0, False),
               Column(2, T.MYSQL_TYPE_LONG, 0, True))
    table_map = TableMapEvent(None, 1, 0, "db", "t", columns)
    annotated = schema.annotate(table_map)
    assert annotated.primary_key == ((1, 0),)
    assert [c.primary_key for c in annotated.columns] == [False, True, False]
    named = TableMapEvent(None, 1, 0, "db", "t", columns, primary_key=((0, 0),))
    assert schema.annotate(named).primary_key == ((0, 0),)


def test_save_and_load_keep_origins_renames_and_times(tmp_path):
    schema = Schema()
    for n, statement in enumerate(["CREATE TABLE t (a INT, b INT)",
                                   "ALTER TABLE t CHANGE a aa INT, ADD c INT",
                                   "RENAME TABLE t TO u"], 1):
        schema.follow(SimpleNamespace(query=statement, database="db",
                                      header=SimpleNamespace(file="/x/binlog.000001",
                                                             pos=100 * n, timestamp=1000 + n)))
    schema.save(str(tmp_path / "h.json"))
    loaded = load_schema(str(tmp_path / "h.json"))
    assert loaded.versions == schema.versions
    alter = loaded.versions[("db", "t")][1]
    assert alter.origins == ("a", "b", None) and alter.timestamp == 1002
    assert loaded.versions[("db", "u")][0].renamed_from == ("db", "t")


def test_lineage_carries_rows_over_alters_and_renames_and_stops_at_truncate():
    schema = history("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(5))",
                     "ALTER TABLE t ADD c INT NOT NULL DEFAULT 7, CHANGE a a2 BIGINT, DROP b",
                     "RENAME TABLE t TO u",
                     "ALTER TABLE u RENAME COLUMN c TO c2, ADD d INT")
    at = lambda n: (lambda v: v.position < ("binlog.000001", n))  # noqa: E731
    stretches = schema.lineage(("db", "u"))
    assert [(s.key, s.start[1], s.end and s.end[1], s.sources, s.defaults) for s in stretches] == [
        (("db", "u"), 400, None, ("id", "a2", "c2", "d"), (None,) * 4),
        (("db", "u"), 300, 400, ("id", "a2", "c", None), (None,) * 4),
        (("db", "t"), 200, 300, ("id", "a2", "c", None), (None,) * 4),
        (("db", "t"), 100, 200, ("id", "a", None, None), (None, None, "7", None)),
    ]
    assert schema.lineage(("db", "t")) is None  # renamed away
    assert [s.sources for s in schema.lineage(("db", "t"), at(250))] == [
        ("id", "a2", "c"), ("id", "a", None)]
    assert schema.lineage(("db", "u"), at(250)) is None  # not there yet
    schema.apply("TRUNCATE u", "db", ("binlog.000001", 500))
    assert [(s.start[1], s.end) for s in schema.lineage(("db", "u"))] == [(500, None)]
    schema.apply("DROP TABLE u", "db", ("binlog.000001", 600))
    assert schema.lineage(("db", "u")) is None
    assert [s.sources for s in schema.lineage(("db", "never"))] == [None]
    # names in one ALTER are those before it: two columns can swap values' names
    swap = history("CREATE TABLE t (a INT, b INT)", "ALTER TABLE t CHANGE a b INT, CHANGE b a INT")
    assert swap.tables[("db", "t")].names == ["b", "a"]
    assert swap.versions[("db", "t")][-1].origins == ("a", "b")
    assert [s.sources for s in swap.lineage(("db", "t"))] == [("b", "a"), ("a", "b")]


def test_annotate_completes_table_maps_with_names_unsigned_and_hires_precision(corpus):
    import binlake
    from binlake.read.events import TableMapEvent
    path = corpus / "tiflow/mysql-bin.000001"
    raw = [e for e in binlake.open(path, schema=False) if isinstance(e, TableMapEvent)]
    named = [e for e in binlake.open(path) if isinstance(e, TableMapEvent)]
    assert all(c.name is None for e in raw for c in e.columns)
    raw, named = ([e for e in maps if e.table == "t"][0] for maps in (raw, named))
    assert [c.name for c in named.columns] == ["id", "d"]
    # create table t(id int primary key,d timestamp(3)) on MariaDB 10.0: logged as
    # TIMESTAMP with no metadata
    assert (raw.columns[1].type, raw.columns[1].meta) == (T.MYSQL_TYPE_TIMESTAMP, 0)
    assert named.columns[1].meta == 3
    assert named.primary_key == ((0, 0),)


# -- binlake schema ------------------------------------------------------------------------

def run_cli(*args) -> tuple[int, str, str]:
    import io

    from binlake.cli.dispatch import main
    out, err = io.StringIO(), io.StringIO()
    return main(list(args), out=out, err=err), out.getvalue(), err.getvalue()


def test_schema_command_prints_each_version_and_saves_the_history(corpus, tmp_path):
    path = str(corpus / "tiflow" / "mysql-bin.000001")
    saved = tmp_path / "history.json"
    status, text, err = run_cli("schema", "--save", str(saved), path)
    assert status == 0, err
    assert ("# mysql-bin.000001 at 1624: CREATE TABLE\nCREATE TABLE `steven`.`t` (\n"
            "  `id` INT NOT NULL,\n  `d` TIMESTAMP(3),\n  PRIMARY KEY (`id`)\n);\n") in text
    status, as_json, _ = run_cli("schema", "--format", "json", path)
    assert status == 0 and load_schema(as_json).versions == load_schema(str(saved)).versions
    # a saved history seeds a later run: nothing is lost, versions are not doubled
    status, again, _ = run_cli("schema", "--schema", str(saved), path)
    assert status == 0 and again == text


def test_a_statement_that_cannot_be_tokenized_forgets_the_tables_it_names():
    schema = history("CREATE TABLE t (a INT)", "CREATE TABLE tt (a INT)",
                     "ALTER TABLE tt ADD b TEXT DEFAULT 'unterminated")
    assert schema.columns("db", "tt") is None
    assert schema.columns("db", "t") == ["a"]  # not a word of the statement


def test_dump_json_names_columns_from_the_schema_and_the_stream(corpus, tmp_path):
    import json
    path = corpus / "zalora-binlog-parser/mysql-bin.03"  # no names, no DDL in the file
    ddl = tmp_path / "schema.sql"
    ddl.write_text("CREATE TABLE test_db.buildings (id INT, name VARCHAR(255), "
                   "addr VARCHAR(355) CHARACTER SET utf8);")
    status, out, err = run_cli("dump", "--format", "json", "--schema", str(ddl), str(path))
    assert status == 0, err
    rows = [r for line in out.splitlines() for e in [json.loads(line)] for r in e.get("rows", ())]
    assert rows and all(set(r["after"] or r["before"]) == {"id", "name", "addr"} for r in rows)
    status, out, _ = run_cli("dump", "--format", "json", str(path))
    rows = [r for line in out.splitlines() for e in [json.loads(line)] for r in e.get("rows", ())]
    assert all(set(r["after"] or r["before"]) == {"@1", "@2", "@3"} for r in rows)


def test_rebased_holds_the_tables_as_of_a_point_each_at_seed():
    """What a stream goes on with on another server: the tables as they were,
    none of its versions placed at one of this server's positions."""
    schema = history("CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(5))",
                     "ALTER TABLE t ADD c INT FIRST",
                     "CREATE TABLE gone (x INT)",
                     "DROP TABLE gone",
                     "ALTER TABLE t DROP b")
    rebased = schema.rebased(("binlog.000001", 450))
    assert rebased.columns("db", "t") == ["c", "a", "b"] and rebased.primary_key("db", "t") == ["a"]
    assert rebased.columns("db", "gone") is None
    assert [v.position for versions in rebased.versions.values() for v in versions] == [SEED]
    # the new server's statements follow, whatever their positions
    rebased.apply("ALTER TABLE t DROP c", "db", ("binlog.000001", 120))
    assert rebased.columns("db", "t") == ["a", "b"]
    assert rebased.at(("binlog.000001", 130)).columns("db", "t") == ["a", "b"]
