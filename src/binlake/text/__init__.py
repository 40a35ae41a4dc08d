"""Outputs for people: what mysqlbinlog prints, and JSON and SQL.

`mysqlbinlog` writes events as mariadb-binlog's text, `rowtext` the `###`
pseudo-SQL of row images, `rawevents` BINLOG blocks and hexdumps,
`table_metadata` `--print-table-metadata`; `jsonable` events as JSON-ready
data; `sqlgen` executable SQL and its rollback, `flashback` dump's
`--flashback`; `filters` the selection options, `gtid_state` the GTID checks.
"""
