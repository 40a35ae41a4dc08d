"""Layer 3: the lake's state under `_binlake/` — the manifest, its one
writer (store), a run's undo record, where each table starts and which
points the lake holds. Imports the layers below it (read, plans) only."""
