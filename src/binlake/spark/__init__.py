"""binlake on Spark: the `binlog` data source, typed table changes, the pipeline.

    import binlake.spark
    binlake.spark.register(spark)
    events = spark.read.format("binlog").load("/var/lib/mysql/binlog.*")
    changes = spark.read.format("binlog").option("view", "changes").load(folder)
    orders = binlake.spark.table_changes(spark, folder, "shop", "orders")

pyspark is imported by the functions that need it, so `binlake.spark.ranges`
and friends stay usable without it. The schemas are documented in docs/spark.md.
"""

from __future__ import annotations


def register(spark) -> None:
    """Make `spark.read.format("binlog")` and `readStream.format("binlog")` available."""
    from .source import BinlogDataSource
    spark.dataSource.register(BinlogDataSource)


def table_changes(spark, path, db: str, table: str, schema=None, **options):
    """One table's changes with one typed column per table column (see docs/spark.md)."""
    from .tables import table_changes as build
    return build(spark, path, db, table, schema=schema, **options)


__all__ = ["register", "table_changes"]
