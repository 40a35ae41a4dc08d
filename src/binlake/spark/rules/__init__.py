"""Layer 4: the table rules — how a run's changes become a table's next
version, written once over Arrow columns, which the driver and Spark's
tasks both run (binlake.spark.commits.table_jobs). Imports the layers below it
(read, plans, state) only."""
