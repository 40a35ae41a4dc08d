"""The pipeline's table plans (binlake.spark.history.table_plans): what a
table's rows are made from, whose signature decides whether new changes go
on top of the committed rows or the table is made again."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark")
from binlake.schema.history import Schema  # noqa: E402
from binlake.spark.history import PositionOrder, table_plans  # noqa: E402
from binlake.spark.lake import plan_signature  # noqa: E402

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
