"""Layer 1 of binlake on Spark: binlog byte ranges read into the `events`
and `changes` views (Arrow batches, Parquet, the `binlog` data source).
Imports no other layer."""
