"""`binlake pipeline --snapshot-from`: every selected table of a live server,
read under one consistent read view, with the binlog position it is at.

Strategy: the read view is MariaDB's lock-free one with its own binlog
position, or MySQL's under a moment's global read lock
(binlake.spark.snapshot.read_view). Inside the view, SHOW CREATE TABLE
gives each table's definition (the seed of the schema history) and its
rows are read in chunks by its key (the lake's: the PRIMARY KEY, else the
server's UNIQUE NOT NULL one; keyset pages, one connection: a read view
cannot be shared between connections), a table without one in a single
streamed SELECT (binlake.spark.snapshot.server_rows).

The rows become changes like the binlog's, op "r" (Debezium's "read"),
placed just before the snapshot position, so tables/ and `--as-of` take
them as the rows every table had there; the pipeline reads the binlogs from
that position on. Values are the same exact text the binlog's changes
carry (binlake.spark.snapshot.server_rows).

With `chunked` (the lock-free snapshot, `-R --snapshot-from`) the read
view opens the lake and reads only the tables without a key; the keyed
tables are read in chunks by key afterwards (binlake.spark.snapshot.chunks),
from the progress this returns.

The same chunks read tables anew into a lake that follows already
(`read_anew`: tables newly selected, or asked for): their progress entry
carries `since`, the lake's position then, where the pipeline starts the
table's rows (every change and chunk before is superseded); a table
without a key is one chunk, one read view, its rows starting at that
view's position.
"""

from __future__ import annotations

from binlake.connection.settings import quote_identifier as _quote
from binlake.schema.seeds import SYSTEM_DATABASES, server_ddl
from binlake.spark.snapshot.chunks import CHUNK_ROWS, rows_per_chunk
from binlake.spark.snapshot.read_view import SnapshotPoint, _open_read_view, _session
from binlake.spark.snapshot.server_rows import _ChangeWriter, _chunks
from binlake.spark.state.progress import SnapshotProgress, TableProgress


def take_snapshot(address, wanted, folder: str, *, file_seq_of, chunk_rows: int = CHUNK_ROWS,
                  chunked: bool = False, log=None, progress=None
                  ) -> tuple[SnapshotPoint, str, SnapshotProgress | None]:
    """Read every table `wanted(db, table)` selects into Parquet files of the
    changes view under `folder` (partitioned as changes/); returns the
    point, the tables' DDL text, and with `chunked` the progress of the
    lock-free snapshot of the keyed tables, which this read leaves out.
    `file_seq_of(name)` numbers a binlog file as the pipeline does.
    `progress(estimate, "db.table")`: a bar (binlake.progress) for each
    table read here, given its rows as they are written."""
    log = log or (lambda message: None)
    with _session(address) as connection:
        with connection.cursor() as cursor:
            point = _open_read_view(cursor)
        ddl = server_ddl(connection)
        tables = _tables(connection, wanted)
        keyed = [(db, table, key) for db, table, key in tables if chunked and key]
        estimates = [_estimated_rows(connection, db, table) for db, table, _ in keyed]
        gtid = f" (GTID {point.gtid})" if point.gtid else ""
        log(f"snapshot at {point.file}:{point.pos}{gtid}: {len(tables)} table(s)"
            + (f", {len(keyed)} of them in chunks by key after this" if chunked else ""))
        writer = _ChangeWriter(folder)
        for database, table, key in tables:
            if (database, table, key) in keyed:
                continue
            rows = 0
            bar = (progress(_estimated_rows(connection, database, table),
                            f"snapshot {database}.{table}") if progress else None)
            for names, columns in _chunks(connection, database, table, key, chunk_rows):
                written = writer.write(database, table, names, columns, point,
                                       file_seq_of(point.file), writer.rows)
                rows += written
                if bar is not None:
                    bar.add(written)
            if bar is not None:
                bar.close()
            log(f"snapshot: {database}.{table}: {rows} rows")
        connection.commit()
    progress = None
    if chunked:
        progress = SnapshotProgress().with_tables(
            [_entry(db, table, key, estimate, chunk_rows)
             for (db, table, key), estimate in zip(keyed, estimates)])
    return point, ddl, progress


def _entry(database: str, table: str, key: list, estimate: int, chunk_rows: int,
           since: list | None = None) -> TableProgress:
    """A table's progress before its first chunk; `since` for a table read
    anew into a lake (binlake.spark.state.progress)."""
    return TableProgress(database, table, tuple(key), rows_per_chunk(estimate, chunk_rows),
                         since=tuple(since) if since is not None else None)


def read_anew(address, progress: SnapshotProgress | None, wanted, since: list,
              chunk_rows: int = CHUNK_ROWS) -> tuple[SnapshotProgress, list[str]]:
    """The progress with the server's tables `wanted(db, table)` selects to
    be read again (or for the first time) into a lake that holds the binlog
    up to `since`, lock-free, while it follows the server; and their names.
    A keyed table is read in chunks as a new lake's are, and its rows start
    at `since`, then at its first chunk (every change before is superseded:
    a key's chunk row or a later change is its state); a table without a
    key in one chunk, one read view, its rows starting at that chunk's
    position (binlake.spark.state.progress). (Where a chunk's rows sort:
    `_chunk_view`, MariaDB's and MySQL's.)"""
    with _session(address) as connection:
        found = _tables(connection, wanted)
        entries = [_entry(database, table, key, _estimated_rows(connection, database, table),
                          chunk_rows, since) for database, table, key in found]
    return ((progress or SnapshotProgress()).with_tables(entries),
            [f"{db}.{table}" for db, table, _ in found])


def _tables(connection, wanted) -> list[tuple[str, str, list[str]]]:
    """(database, table, key columns) of the selected base tables: the key
    the server finds rows by, as the lake keys the table (the PRIMARY KEY,
    else the first UNIQUE key of NOT NULL columns without a prefix:
    `TableDef.row_key` over SHOW CREATE TABLE, the rule's one place), by
    which the lock-free snapshot reads it in chunks; none: read in one."""
    with connection.cursor() as cursor:
        marks = ", ".join(["%s"] * len(SYSTEM_DATABASES))
        cursor.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            f"WHERE TABLE_SCHEMA NOT IN ({marks}) AND TABLE_TYPE = 'BASE TABLE' "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME", SYSTEM_DATABASES)
        found = [(db, table) for db, table in cursor.fetchall() if wanted(db, table)]
    return [(db, table, _row_key(connection, db, table)) for db, table in found]


def _row_key(connection, database: str, table: str) -> list[str]:
    from binlake.schema.history import Schema
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION sql_quote_show_create = 1")
        cursor.execute(f"SHOW CREATE TABLE {_quote(database)}.{_quote(table)}")
        schema = Schema()
        schema.run(cursor.fetchone()[1], database)
    definition = next(iter(schema.tables.values()), None)
    return list(definition.row_key) if definition is not None else []


def _estimated_rows(connection, database: str, table: str) -> int:
    """The rows the server's statistics give the table (InnoDB's estimate)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT TABLE_ROWS FROM information_schema.TABLES "
                       "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s", (database, table))
        found = cursor.fetchone()
    return int(found[0] or 0) if found else 0


def estimated_rows(address, tables: list[tuple[str, str]]) -> dict[str, int]:
    """{"db.table": the rows the server's statistics give it} for the
    (database, table) pairs `tables`: what a follower's metrics put a
    table's snapshot progress against."""
    with _session(address) as connection:
        return {f"{db}.{table}": _estimated_rows(connection, db, table) for db, table in tables}
