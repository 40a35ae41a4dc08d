"""The schema history: every table's columns at every binlog position.

`ddl` reads DDL statements as schema operations, `history` keeps the versions
by position (and saves them as JSON), `seeds` gives the tables that existed
before the first binlog, from a schema dump or a live server.
"""
