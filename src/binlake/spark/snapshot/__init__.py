"""Layer 6: the lock-free snapshot of a live server's tables, chunk by
chunk, each chunk placed in the binlog. Imports the layers below it only."""
