"""binlake on Spark: the `binlog` data source, typed table changes, the pipeline.

    import binlake.spark
    binlake.spark.register(spark)
    events = spark.read.format("binlog").load("/var/lib/mysql/binlog.*")
    changes = spark.read.format("binlog").option("view", "changes").load(folder)
    orders = binlake.spark.table_changes(spark, folder, "shop", "orders")
    state = binlake.spark.read_table(spark, "lake", "shop.orders")  # binlake pipeline's tables/

pyspark is imported by the functions that need it, so `binlake.spark.read.ranges`
and friends stay usable without it. The schemas are documented in docs/spark.md.
"""

from __future__ import annotations


def register(spark) -> None:
    """Make `spark.read.format("binlog")` and `readStream.format("binlog")` available."""
    from binlake.spark.read.source import register as register_source
    register_source(spark)


def table_changes(spark, path, db: str, table: str, schema=None, temporals: str = "typed",
                  **options):
    """One table's changes with one typed column per table column (see
    docs/spark.md); `temporals="text"` keeps DATE, DATETIME and TIMESTAMP
    columns as MySQL's exact text (typed, a zero date fails the job)."""
    from binlake.spark.rules.tables import table_changes as build
    return build(spark, path, db, table, schema=schema, temporals=temporals, **options)


def read_table(spark, out: str, table: str, as_of=None):
    """A lake table (`table`: "db.table") of `binlake pipeline --out out` as a
    DataFrame: its current version, or `as_of` a Delta version number or a
    datetime. Spark needs no Delta Lake jars: delta-rs names the version's files."""
    from binlake.spark.commits.spark_way import spark_table
    return spark_table(spark, out, table, as_of)


def read_changes(spark, out: str):
    """changes/ of `binlake pipeline --out out` as a DataFrame (its partition
    columns typed): its files as `lake_files` lists them."""
    from binlake.spark.run.lake_tables import read_changes as read
    return read(spark, out)


def read_events(spark, out: str):
    """events/ of `binlake pipeline --out out` as a DataFrame, listed as `read_changes`."""
    from binlake.spark.run.lake_tables import read_events as read
    return read(spark, out)


def lake_files(out: str, view: str) -> list[str]:
    """The Parquet files of the lake's `view` ("events" or "changes") a
    reader reads, for any Parquet reader (DuckDB's read_parquet, Polars'
    scan_parquet: `hive_partitioning`): never a small file a merged one
    replaces beside it (binlake.spark.state.compaction), which a glob of
    the folder may see for some minutes after a merge."""
    import os
    from binlake.spark.state.compaction import VIEWS, view_files
    if view not in VIEWS:
        raise ValueError(f"view {view!r}: one of {', '.join(VIEWS)}")
    return view_files(out, os.path.join(out, view))


__all__ = ["register", "table_changes", "read_table", "read_changes", "read_events",
           "lake_files"]
