"""The pipeline's table plans (binlake.spark.plans.history.table_plans): what a
table's rows are made from, whose signature decides whether new changes go
on top of the committed rows or the table is made again."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
from binlake.schema.history import Schema  # noqa: E402
from binlake.spark.plans.history import PositionOrder, table_plans  # noqa: E402
from binlake.spark.plans.layouts import ddl_layout_column  # noqa: E402
from binlake.spark.commits.lake import plan_signature  # noqa: E402

ORDER = PositionOrder({"binlog.000001": 1})


def signature(statements: list[str]) -> str:
    schema = Schema()
    for pos, statement in enumerate(statements, 1):
        schema.apply(statement, "db", ("binlog.000001", 100 * pos))
    [plan] = table_plans(schema, {}, ORDER)
    return plan_signature(plan)


CREATED = ["CREATE TABLE t (id INT PRIMARY KEY, v INT, note VARCHAR(10))"]


@pytest.mark.parametrize("statement", [
    "ALTER TABLE t ADD INDEX by_v (v)",
    "ALTER TABLE t COMMENT 'orders of the day'",
    "ALTER TABLE t ENGINE=InnoDB",
    "ALTER TABLE t DROP INDEX by_v, ADD INDEX by_note (note)",
])
def test_a_statement_that_changes_no_column_leaves_the_plan_as_it_was(statement):
    assert signature(CREATED + [statement]) == signature(CREATED)


@pytest.mark.parametrize("statement", [
    "ALTER TABLE t ADD COLUMN w INT DEFAULT 5",
    "ALTER TABLE t DROP COLUMN note",
    "ALTER TABLE t CHANGE note remark VARCHAR(10)",
    "ALTER TABLE t MODIFY v BIGINT",
    "TRUNCATE TABLE t",
    "ALTER TABLE t DROP PRIMARY KEY",
])
def test_a_statement_that_changes_columns_rows_or_key_changes_the_plan(statement):
    assert signature(CREATED + [statement]) != signature(CREATED)


def test_stretches_apart_stay_apart_and_alike_ones_join():
    schema = Schema()
    for pos, statement in enumerate(CREATED + ["ALTER TABLE t ADD INDEX by_v (v)",
                                               "ALTER TABLE t ADD COLUMN w INT DEFAULT 5",
                                               "ALTER TABLE t COMMENT 'x'"], 1):
        schema.apply(statement, "db", ("binlog.000001", 100 * pos))
    [plan] = table_plans(schema, {}, ORDER)
    assert [(s["after"], s["before"], s["sources"]) for s in plan["stretches"]] == [
        ((1, 300), (None, None), ["id", "v", "note", "w"]),
        ((1, 100), (1, 300), ["id", "v", "note", None]),
    ]


def keyed_by(statements: list[str], named: list[str], written: int, schema=None) -> tuple:
    """The key of the plan of table t, whose last table map, written at
    `written`, names `named` as its primary key; and its stretches' key_then."""
    schema = schema or Schema()
    for pos, statement in enumerate(statements, 1):
        schema.apply(statement, "db", ("binlog.000001", 100 * pos))
    layout = {"database": "db", "table": "t", "primary_key": named,
              "columns": [ddl_layout_column(c) for c in schema.table("db", "t").columns]}
    [plan] = table_plans(schema, {"db.t": {"order": [1, written], "layout": layout}}, ORDER)
    return plan["layout"]["primary_key"], [s.get("key_then") for s in plan["stretches"]]


PREFIXED = ("CREATE TABLE t (a VARCHAR(100) NOT NULL, b INT NOT NULL, c INT, "
            "UNIQUE (a(10)), UNIQUE (b))")


def test_the_table_maps_key_wins_when_written_under_the_definition_of_now():
    """The server keys a table without a primary key by its first UNIQUE
    key of NOT NULL whole columns (issue 46), and a FULL-metadata table map
    names it: a history saved before prefix lengths were kept takes a(10)
    for the key, the map's b wins; a map written before the keys changed
    says nothing of them now."""
    old = Schema.from_json({**Schema().to_json(), "tables": [{
        "database": "db", "table": "t", "versions": [{
            "file": "binlog.000001", "pos": 100, "statement": "CREATE TABLE",
            "columns": [{"name": "a", "type": "VARCHAR", "args": [100], "nullable": False},
                        {"name": "b", "type": "INT", "nullable": False},
                        {"name": "c", "type": "INT"}],
            "unique_keys": [["a", ["a"]], ["b", ["b"]]]}]}]})
    assert old.table("db", "t").row_key == ("a",)
    assert keyed_by([], ["b"], 150, old) == (["b"], [None])
    assert keyed_by([], [], 150, old) == (["a"], [None])  # the map names none
    assert keyed_by([PREFIXED], [], 150) == (["b"], [None])
    # the map was written before the keys changed: the definition's key
    assert keyed_by([PREFIXED, "ALTER TABLE t DROP INDEX b, MODIFY c INT NOT NULL, "
                               "ADD UNIQUE (c)"], ["b"], 150) == (["c"], [None, ["b"]])


def test_an_alter_ignore_adding_a_unique_key_refuses_the_rows_from_before_it():
    """ALTER IGNORE ... ADD UNIQUE deletes the rows the key finds twice but
    the first, with no row event: a plan that carries rows from before it
    is refused in one line naming the way forward; a table read anew after
    it (its stretches start there, binlake.spark.state.starts.starting_anew) is
    not; a plain ALTER, or ALTER IGNORE adding no unique key, is not."""
    from binlake.spark.plans.history import rows_lost_refusal
    from binlake.spark.state.progress import SnapshotProgress, TableProgress
    from binlake.spark.state.starts import starting_anew

    def plan(statements: list[str]) -> dict:
        schema = Schema()
        for pos, statement in enumerate(statements, 1):
            schema.apply(statement, "db", ("binlog.000001", 100 * pos))
        [found] = table_plans(schema, {}, ORDER)
        return found
    refused = plan(CREATED + ["ALTER IGNORE TABLE t ADD UNIQUE (v)"])
    line = rows_lost_refusal(refused)
    assert line.startswith("db.t: an ALTER IGNORE TABLE adding a unique key deleted rows")
    assert line.endswith("--rebuild db.t")
    assert rows_lost_refusal(plan(CREATED + ["ALTER IGNORE TABLE t DROP PRIMARY KEY, "
                                             "ADD PRIMARY KEY (v)"]))
    for statements in (["ALTER TABLE t ADD UNIQUE (v)"], ["ALTER IGNORE TABLE t ADD INDEX (v)"],
                       ["ALTER IGNORE TABLE t ADD COLUMN w INT"]):
        assert rows_lost_refusal(plan(CREATED + statements)) is None, statements
    progress = SnapshotProgress().with_tables([TableProgress("db", "t", ("id",), 100,
                                                             since=(1, 250))])
    [anew], _ = starting_anew([refused], progress)
    assert rows_lost_refusal(anew) is None


def test_a_not_null_column_added_without_a_default_gives_the_servers_implicit_one():
    """What MariaDB 10.11 gave the rows a NOT NULL column without DEFAULT
    was added to (randomized check, R3: a BLOB's rows held NULL, the
    server's b''): empty bytes and text, a BINARY's zero bytes, the zero
    date, datetime and time; a TIMESTAMP's is not known here."""
    schema = Schema()
    for pos, statement in enumerate(CREATED + [
            "ALTER TABLE t ADD b BLOB NOT NULL, ADD vb VARBINARY(4) NOT NULL, "
            "ADD bn BINARY(3) NOT NULL, ADD st SET('a','b') NOT NULL, ADD tx TEXT NOT NULL, "
            "ADD dd DATE NOT NULL, ADD dt DATETIME(3) NOT NULL, ADD tm TIME(2) NOT NULL, "
            "ADD ts TIMESTAMP NOT NULL, ADD nb BLOB NULL"], 1):
        schema.apply(statement, "db", ("binlog.000001", 100 * pos))
    [plan] = table_plans(schema, {}, ORDER)
    before = plan["stretches"][-1]  # the rows from before the ALTER
    added = dict(zip([c["key"] for c in plan["layout"]["columns"]], before["defaults"]))
    assert {name: added[name] for name in ("b", "vb", "bn", "st", "tx", "dd", "dt", "tm",
                                           "ts", "nb")} == {
        "b": "", "vb": "", "bn": "AAAA", "st": "", "tx": "", "dd": "0000-00-00",
        "dt": "0000-00-00 00:00:00.000", "tm": "00:00:00.00", "ts": None, "nb": None}


def test_known_plans_come_back_unmade_while_their_inputs_are_equal():
    """`known` plans of the same history come back as they were (the same
    objects: their signatures are not made again either); a table whose
    last table map changed has its plan made anew."""
    from binlake.spark.plans.history import keyed_table_plans
    schema = Schema()
    for pos, name in enumerate(("t", "u"), 1):
        schema.apply(f"CREATE TABLE {name} (id INT PRIMARY KEY, v INT)", "db",
                     ("binlog.000001", 100 * pos))
    first = {key: (inputs, plan) for key, inputs, plan in keyed_table_plans(schema, {}, ORDER)}
    assert sorted(first) == [("db", "t"), ("db", "u")]
    again = {key: plan for key, _, plan in keyed_table_plans(schema, {}, ORDER, known=first)}
    assert all(again[key] is first[key][1] for key in first)
    layout = {"database": "db", "table": "t", "primary_key": ["id"],
              "columns": [ddl_layout_column(c) for c in schema.table("db", "t").columns]}
    mapped = {key: plan for key, _, plan in keyed_table_plans(
        schema, {"db.t": {"order": [1, 500], "layout": layout}}, ORDER, known=first)}
    assert mapped[("db", "t")] is not first[("db", "t")][1]
    assert mapped[("db", "u")] is first[("db", "u")][1]
    assert mapped[("db", "t")] == first[("db", "t")][1]  # (the same columns, typed alike)


def test_an_order_extends_another_that_orders_every_position_alike():
    earlier = PositionOrder({"binlog.000002": 1, "binlog.000003": 2})
    assert PositionOrder({"binlog.000002": 1, "binlog.000003": 2, "binlog.000004": 3}).extends(
        earlier)
    assert not PositionOrder({"binlog.000002": 1, "binlog.000003": 5}).extends(earlier)
    # a file sorting first now: a seed history's binlog.000001 would be after it, not before
    assert not PositionOrder({"binlog.000000": 0, "binlog.000002": 1,
                              "binlog.000003": 2}).extends(earlier)
