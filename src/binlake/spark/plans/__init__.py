"""Layer 2: what each table is — its layouts and schema history, its
columns' types and the server's conversions between them, and the words
of every refusal's way forward. Imports binlake.spark.read only."""
