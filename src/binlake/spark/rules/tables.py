"""One table's changes, typed, as a DataFrame shaped like a Delta change
data feed (`binlake.spark.table_changes`), and the Spark helpers the lake's
jobs share. What changes make of a table is binlake.spark.rules.table_rows'.
"""

from __future__ import annotations

import glob

from pyspark.sql import Column, DataFrame, functions as F

from binlake.schema.history import Schema
from binlake.spark.read.batches import TableFilter, load_schema_option
from binlake.spark.plans.history import follow_ranges
from binlake.spark.plans.layouts import latest_layouts, qualified
from binlake.spark.read.ranges import Split, expand_inputs, number_files
from binlake.spark.plans.typed import spark_type, with_temporals

#: Ops that add a row: an insert ("c"), a snapshot's row ("r", as Debezium's read).
INSERTS = ("c", "r")


# -- one table's changes, typed ----------------------------------------------------

def table_changes(spark, path, db: str, table: str, schema=None, temporals: str = "typed",
                  **options) -> DataFrame:
    """Changes of `db`.`table` like a Delta change data feed: one typed column
    per table column, an update as two rows (update_preimage, update_postimage),
    and `_change_type`, `_op`, `_commit_key`, `_commit_timestamp`, `_timestamp`,
    `_file`, `_pos`, `_row_index`, `_gtid`, `_xid`."""
    from binlake.spark.read.source import register
    register(spark)
    paths = expand_inputs(path)
    options = {k: str(v) for k, v in options.items()}
    if schema is not None:
        options["schema"] = str(schema)
    pattern = glob.escape(qualified(db, table))  # names, not patterns
    wanted = TableFilter(pattern)
    splits = [Split(p, seq) for p, seq in number_files(paths)]
    # The schema history of every file, so that each task knows the tables at its start.
    history = load_schema_option(options) or Schema()
    follow_ranges(history, splits)
    options["schema"] = history.json_text()
    layouts = latest_layouts(splits, history=history, wanted=wanted)
    layout = layouts.get(qualified(db, table))
    if layout is None:
        raise LookupError(f"no table map of {db}.{table} in {path}")
    changes = (spark.read.format("binlog").options(**options).option("view", "changes")
               .option("tables", pattern).load(paths))
    return typed_change_feed(changes, with_temporals(layout, temporals))


def typed_change_feed(changes: DataFrame, layout: dict) -> DataFrame:
    """The changes view's rows of one table as its change data feed: each
    image a row, each column typed by the lake's own typing
    (binlake.spark.rules.typed_arrow.typed_column) in a scalar Arrow UDF,
    which Spark evaluates where the column is read: a query's filter on
    other columns runs before it, so a value no Spark type holds (a zero
    date) fails only the queries that read it, in one line."""
    images = F.explode(
        F.when(F.col("op").isin(*INSERTS), F.array(_image("insert", "after")))
         .when(F.col("op") == "d", F.array(_image("delete", "before")))
         .otherwise(F.array(_image("update_preimage", "before"),
                            _image("update_postimage", "after"))))
    exploded = changes.select("*", images.alias("_image"))
    meta = [F.col("_image.change_type").alias("_change_type"), F.col("op").alias("_op"),
            F.col("commit_key").alias("_commit_key"),
            F.col("commit_timestamp").alias("_commit_timestamp"),
            F.col("timestamp").alias("_timestamp"), F.col("file").alias("_file"),
            F.col("pos").alias("_pos"), F.col("row_index").alias("_row_index"),
            F.col("gtid").alias("_gtid"), F.col("xid").alias("_xid")]
    return exploded.select(*typed_columns(layout, F.col("_image.row")), *meta)


def typed_columns(layout: dict, image: Column) -> list[Column]:
    """One typed column per table column, from a map of exact text by
    column key: a text column as it is, any other typed by `typing`."""
    from pyspark.sql import types as S
    table = f"{layout['database']}.{layout['table']}"
    return [(image[c["key"]] if isinstance(spark_type(c), S.StringType)
             else typing(c, table)(image[c["key"]])).alias(c["key"])
            for c in layout["columns"]]


def typing(column: dict, table: str):
    """A scalar Arrow UDF typing a column's texts as the lake does."""
    def typed(texts):
        from binlake.spark.rules.typed_arrow import typed_column
        return typed_column(texts, column, table)
    return F.arrow_udf(typed, spark_type(column))


def _image(change_type: str, side: str) -> Column:
    return F.struct(F.lit(change_type).alias("change_type"), F.col(side).alias("row"))

