"""Layer 4: the table rules — how a run's changes become a table's next
version, by Spark's jobs and by the driver. Imports the layers below it
(read, plans, state) only."""
