"""`binlake.spark.table_changes`: one table's changes with one typed column per table column."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

pytest.importorskip("pyspark")
from pyspark.sql import types as S  # noqa: E402

import binlake.spark  # noqa: E402
from binlake.spark.rules.refused import refused  # noqa: E402

from .truth import canonical_rows, typed_rows  # noqa: E402

DB = "binlake_test"


def collect(feed) -> list[dict]:
    """Rows as dicts; Spark hands TIMESTAMPs out as naive local times: made UTC."""
    instants = [f.name for f in feed.schema.fields if f.dataType == S.TimestampType()]
    rows = [r.asDict(recursive=True) for r in feed.collect()]
    for row in rows:
        for name in instants:
            if row[name] is not None:
                row[name] = row[name].astimezone(dt.timezone.utc)
    return rows


def replay(rows, key: str) -> dict:
    """Apply a change feed in commit order: the table's rows by primary key."""
    state = {}
    for row in sorted(rows, key=lambda r: (tuple(r["_commit_key"].values()),
                                           r["_change_type"] == "update_postimage")):
        values = {k: v for k, v in row.items() if not k.startswith("_")}
        if row["_change_type"] in ("delete", "update_preimage"):
            del state[values[key]]
        else:
            state[values[key]] = values
    return state


def test_typed_columns_and_a_feed_that_replays_to_the_server_state(spark, truth):
    feed = binlake.spark.table_changes(spark, truth.files, DB, "probe")
    types = {f.name: f.dataType for f in feed.schema.fields}
    assert types["id"] == S.IntegerType()
    assert types["label"] == S.StringType()
    assert types["amount"] == S.DecimalType(10, 2)
    assert types["_commit_timestamp"] == S.TimestampType()
    rows = collect(feed)
    kinds = {r["_change_type"] for r in rows}
    assert kinds == {"insert", "update_preimage", "update_postimage", "delete"}
    pre = sum(r["_change_type"] == "update_preimage" for r in rows)
    assert pre == sum(r["_change_type"] == "update_postimage" for r in rows) > 0
    state = replay(rows, "id")
    expected = typed_rows(truth.final["probe"], truth.columns["probe"])
    assert canonical_rows(list(state.values())) == canonical_rows(expected)


def test_every_column_type_of_the_workload(spark, truth):
    for table in ("temporal", "numbers", "bits", "enums", "net"):
        # The temporal table holds zero dates: as text, every value is held.
        temporals = "text" if table == "temporal" else "typed"
        feed = binlake.spark.table_changes(spark, truth.files, DB, table, temporals=temporals)
        state = replay(collect(feed), "id")
        expected = typed_rows(truth.final[table], truth.columns[table], temporals)
        assert canonical_rows(list(state.values())) == canonical_rows(expected), table
    temporal = dict(binlake.spark.table_changes(spark, truth.files, DB, "temporal")
                    .where("id = 2").select("dt6", "ts6", "t3").first().asDict())
    assert isinstance(temporal["dt6"], dt.datetime) and isinstance(temporal["t3"], str)


def test_temporals_spark_cannot_hold_are_refused_never_null(spark, truth):
    feed = binlake.spark.table_changes(spark, truth.files, DB, "temporal")
    # The rows whose dates Spark holds read back typed ...
    held = feed.where("id IN (2, 6, 60)")
    expected = [r for r in truth.final["temporal"] if r["id"] in (2, 60)]
    assert canonical_rows(list(replay(collect(held), "id").values())) == canonical_rows(
        typed_rows(expected, truth.columns["temporal"]))
    # ... a zero date fails the job in one line naming table, column and value.
    with pytest.raises(Exception) as failure:
        feed.collect()
    reason = refused(failure.value)
    assert reason and reason.startswith(f"{DB}.temporal: column `")
    assert "'0000-00-00" in reason and "--temporals text" in reason
    assert isinstance(dict(binlake.spark.table_changes(spark, truth.files, DB, "ints")
                           .select("bi_u").first().asDict())["bi_u"], Decimal)


def test_an_unknown_table_is_an_error(spark, truth):
    with pytest.raises(LookupError):
        binlake.spark.table_changes(spark, truth.files, DB, "nope")


def test_a_schema_names_the_columns_a_binlog_leaves_unnamed(spark, corpus, tmp_path):
    pytest.importorskip("sqlglot")
    path = corpus / "rust_mysql_common" / "binlog_transaction_with_GTID_TAG.000001"
    ddl = tmp_path / "schema.sql"
    ddl.write_text("CREATE TABLE test.orders (id INT PRIMARY KEY, qty INT, price DECIMAL(10,2));\n")
    unnamed = binlake.spark.table_changes(spark, str(path), "test", "orders")
    assert [c for c in unnamed.columns if not c.startswith("_")] == ["@1", "@2", "@3"]
    feed = binlake.spark.table_changes(spark, str(path), "test", "orders", schema=str(ddl))
    assert [c for c in feed.columns if not c.startswith("_")] == ["id", "qty", "price"]
    row = feed.where("id = 3").first()
    assert (row.qty, row.price, row._change_type) == (100, Decimal("250.00"), "insert")
    changes = (spark.read.format("binlog").option("view", "changes").option("schema", str(ddl))
               .load(str(path)).where("table = 'orders'").first())
    assert set(changes.after) == {"id", "qty", "price"}
