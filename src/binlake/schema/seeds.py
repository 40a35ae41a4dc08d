"""Seed schemas: the tables before the first binlog, from a file (`--schema`),
from a live server (`--schema-from`), or both.

Strategy: the server is asked for `SHOW CREATE TABLE` of every table outside
the system databases, and that DDL text goes through `parse_schema` like a
`mysqldump --no-data` file: one place (ddl.py) knows what a definition says.
The connection is made as the mysql client makes it (`binlake.connection`).

Rule: a file names tables exactly; the server fills in the tables the file
does not name. The server's tables are those of now: the seed is right for
binlogs written since each table last changed its columns, and the DDL in
the binlogs is followed from there as with any seed (a definition that
disagrees with a table map is never used).
"""

from __future__ import annotations

from binlake.connection.settings import (SchemaSourceError, ServerAddress, connect, error_message,
                                         quote_identifier)
from binlake.schema.history import Schema, load_schema, parse_schema

SYSTEM_DATABASES = ("mysql", "information_schema", "performance_schema", "sys")


def server_ddl(connection) -> str:
    """`USE db; CREATE TABLE ...;` for every table outside the system databases."""
    with connection.cursor() as cursor:
        # backquoted names whatever the server's sql_mode (ANSI_QUOTES would use ")
        cursor.execute("SET SESSION sql_mode = '', sql_quote_show_create = 1")
        marks = ", ".join(["%s"] * len(SYSTEM_DATABASES))
        cursor.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                       f"WHERE TABLE_SCHEMA NOT IN ({marks}) "
                       "AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') "
                       "ORDER BY TABLE_SCHEMA, TABLE_NAME", SYSTEM_DATABASES)
        tables = cursor.fetchall()
        parts, current = [], None
        for database, table in tables:
            try:
                name = f"{quote_identifier(database)}.{quote_identifier(table)}"
                cursor.execute(f"SHOW CREATE TABLE {name}")
            except Exception as exc:  # dropped since the listing, or no privilege on it
                if _error_code(exc) in (1146, 1142, 1044):
                    continue
                raise
            if database != current:
                parts.append(f"USE {quote_identifier(database)};\n")
                current = database
            parts.append(cursor.fetchone()[1] + ";\n")
    return "".join(parts)


def _first_binlog(connection) -> str | None:
    """The name of the server's first binlog (None: not known, e.g. no privilege)."""
    import pymysql
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW BINARY LOGS")
            row = cursor.fetchone()
    except pymysql.err.MySQLError:
        return None
    return str(row[0]) if row else None


def _error_code(exc: Exception) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def schema_from_server(address: ServerAddress, *,
                       unless_reading_from: tuple | None = None) -> Schema | None:
    """Seeds from a live server's tables. `unless_reading_from`: the (binlog,
    position) a stream reads from; None (no seed) when that is the start of
    the server's first binlog: the stream follows every DDL the server has
    logged, as a stream from its first binlog does."""
    connection = connect(address)
    import pymysql  # present: connect() says what to install otherwise
    try:
        if unless_reading_from is not None and unless_reading_from[1] <= 4 \
                and _first_binlog(connection) == unless_reading_from[0]:
            return None
        text = server_ddl(connection)
    except pymysql.err.MySQLError as exc:
        raise SchemaSourceError(f"{connection.host_info}: {error_message(exc)}") from None
    finally:
        connection.close()
    return parse_schema(text)


def logs_column_names(address: ServerAddress) -> bool:
    """Whether the server's table maps carry column names
    (binlog_row_metadata=FULL: MySQL 8.0+, MariaDB 10.5+), so that rows are
    named by the binlog itself, whatever a seed says."""
    connection = connect(address)
    import pymysql
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@GLOBAL.binlog_row_metadata")
            return str(cursor.fetchone()[0]).upper() == "FULL"
    except pymysql.err.MySQLError:  # older servers: no such variable, no names
        return False
    finally:
        connection.close()


def load_seed(path: str | None = None, address: ServerAddress | None = None) -> Schema | None:
    """The seed schema of `--schema PATH` and/or `--schema-from` (None: neither):
    the file's tables as it names them, the server's for every other table."""
    if address is None:
        return load_schema(path) if path else None
    from_server = schema_from_server(address)
    if not path:
        return from_server
    return filled_in(load_schema(path), from_server)


def filled_in(schema: Schema, seeds: Schema) -> Schema:
    """`schema` with the tables of `seeds` it does not name (a name without a
    database, as a dump without USE gives, names the table in every database)."""
    named = {((db or "").lower(), table.lower()) for db, table in schema.versions}
    anywhere = {table for db, table in named if not db}
    for key, versions in seeds.versions.items():
        db, table = (key[0] or "").lower(), key[1].lower()
        if (db, table) in named or table in anywhere:
            continue
        schema.versions[key] = list(versions)
        if key in seeds.tables:
            schema.tables[key] = seeds.tables[key]
    return schema
