"""Layer 7, the top: `binlake pipeline` — one run over binlog files, the
follower of a live server, `--rebuild`. Nothing in binlake.spark imports it."""
