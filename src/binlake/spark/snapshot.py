"""`binlake pipeline --snapshot-from`: every selected table of a live server,
read under one consistent read view, with the binlog position it is at.

Strategy (as Debezium and `mysqldump --single-transaction --master-data`):
- MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT, then the status
  variables Binlog_snapshot_file/_position give the binlog position of that
  very view, with no lock; BINLOG_GTID_POS() its GTID state.
- MySQL: FLUSH TABLES WITH READ LOCK for the moment it takes to open the view
  and read SHOW MASTER STATUS (SHOW BINARY LOG STATUS from 8.4), then UNLOCK.
Inside the view, SHOW CREATE TABLE gives each table's definition (the seed
of the schema history) and its rows are read in chunks by primary key
(keyset pages, one connection: a read view cannot be shared between
connections), a table without one in a single streamed SELECT.

The rows become changes like the binlog's, op "r" (Debezium's "read"),
placed just before the snapshot position, so tables/ and `--as-of` take
them as the rows every table had there; the pipeline reads the binlogs from
that position on. Values are turned into the same exact text the binlog's
changes carry (binlake.spark.exact), from the server's text protocol:
integers, DECIMAL, temporals (session time zone UTC) and character strings
are already that text; DOUBLE and FLOAT are parsed and printed as the
binlog's are (FLOAT read through a DOUBLE so no digit is lost); binary
strings, BIT and GEOMETRY arrive as bytes.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import uuid
from dataclasses import asdict, dataclass
from decimal import Decimal

from binlake.constants import ColumnType as T
from binlake.connection.settings import SchemaSourceError, connect, quote_identifier as _quote
from binlake.schema.seeds import SYSTEM_DATABASES, server_ddl
from binlake.spark.exact import decimal_text, float32_text, value_text

#: Rows per keyset page, and per Parquet file written.
CHUNK_ROWS = 50_000
#: Field types of the text protocol's result metadata whose text is a number.
_INTEGERS = {T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_LONG, T.MYSQL_TYPE_LONGLONG,
             T.MYSQL_TYPE_INT24, T.MYSQL_TYPE_YEAR}
_DECIMALS = {T.MYSQL_TYPE_DECIMAL, T.MYSQL_TYPE_NEWDECIMAL}
#: Columns stored as fixed binary strings: the bytes of the server's value.
_FIXED_BINARY = {
    "binary": bytes,
    "inet6": lambda text: ipaddress.IPv6Address(text).packed,
    "inet4": lambda text: ipaddress.IPv4Address(text).packed,
    "uuid": lambda text: uuid.UUID(text).bytes,
}


@dataclass(frozen=True)
class SnapshotPoint:
    """Where the snapshot's read view sits in the binlog."""
    file: str
    pos: int
    gtid: str | None
    time: str  #: UTC, ISO 8601

    def to_json(self) -> dict:
        return asdict(self)


def take_snapshot(address, wanted, folder: str, *, file_seq_of, chunk_rows: int = CHUNK_ROWS,
                  log=None) -> tuple[SnapshotPoint, str]:
    """Read every table `wanted(db, table)` selects into Parquet files of the
    changes view under `folder` (partitioned as changes/); returns the
    point and the tables' DDL text. `file_seq_of(name)` numbers a binlog
    file as the pipeline does."""
    import pymysql
    log = log or (lambda message: None)
    connection = connect(address, "--snapshot-from")
    connection.decoders = {}  # the text protocol's text as is (bytes when binary)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00', sql_mode = ''")
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            point = _open_read_view(cursor)
        ddl = server_ddl(connection)
        tables = _tables(connection, wanted)
        log(f"snapshot at {point.file}:{point.pos}" + (f" (GTID {point.gtid})" if point.gtid else "")
            + f": {len(tables)} table(s)")
        writer = _ChangeWriter(folder, point, file_seq_of(point.file))
        for database, table, key in tables:
            rows = 0
            for chunk in _chunks(connection, database, table, key, chunk_rows):
                rows += writer.write(database, table, chunk)
            log(f"snapshot: {database}.{table}: {rows} rows")
        connection.commit()
    except pymysql.err.MySQLError as exc:
        raise SchemaSourceError(f"--snapshot-from: {exc.args[-1] if exc.args else exc}") from None
    finally:
        connection.close()
    return point, ddl


def _open_read_view(cursor) -> SnapshotPoint:
    cursor.execute("SELECT VERSION()")
    mariadb = "mariadb" in cursor.fetchone()[0].lower()
    if mariadb:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cursor.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {name.lower(): value for name, value in cursor.fetchall()}
        file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
        gtid = None
        if file:
            cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, int(pos)))
            gtid = cursor.fetchone()[0] or None
    else:
        cursor.execute("FLUSH TABLES WITH READ LOCK")
        try:
            cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            try:
                cursor.execute("SHOW BINARY LOG STATUS")
            except Exception:  # before 8.4
                cursor.execute("SHOW MASTER STATUS")
            found = cursor.fetchone()
        finally:
            cursor.execute("UNLOCK TABLES")
        file, pos = (found[0], found[1]) if found else (None, None)
        gtid = (found[4] or None) if found and len(found) > 4 else None
    if not file:
        raise SchemaSourceError("--snapshot-from: the server writes no binary log "
                                "(log_bin is OFF): there is no position to follow from")
    return SnapshotPoint(file, int(pos), gtid,
                         dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds"))


def _tables(connection, wanted) -> list[tuple[str, str, list[str]]]:
    """(database, table, primary key columns) of the selected base tables."""
    with connection.cursor() as cursor:
        marks = ", ".join(["%s"] * len(SYSTEM_DATABASES))
        cursor.execute(
            "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, k.COLUMN_NAME FROM information_schema.TABLES t "
            "LEFT JOIN information_schema.KEY_COLUMN_USAGE k ON k.TABLE_SCHEMA = t.TABLE_SCHEMA "
            "AND k.TABLE_NAME = t.TABLE_NAME AND k.CONSTRAINT_NAME = 'PRIMARY' "
            f"WHERE t.TABLE_SCHEMA NOT IN ({marks}) AND t.TABLE_TYPE = 'BASE TABLE' "
            "ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME, k.ORDINAL_POSITION", SYSTEM_DATABASES)
        found: dict = {}
        for database, table, column in cursor.fetchall():
            if wanted(database, table):
                found.setdefault((database, table), [])
                if column is not None:
                    found[(database, table)].append(column)
    return [(db, table, key) for (db, table), key in found.items()]


def _chunks(connection, database: str, table: str, key: list[str], chunk_rows: int):
    """Lists of {column: exact text} rows: keyset pages by `key`, or one
    streamed SELECT of a table without a key."""
    import pymysql.cursors
    name = f"{_quote(database)}.{_quote(table)}"
    columns = _columns(connection, database, table)
    select = ", ".join(f"({_quote(c)} + 0e0)" if kind == "float" else _quote(c)
                       for c, kind in columns)
    names = [c for c, _ in columns]
    if not key:
        with connection.cursor(pymysql.cursors.SSCursor) as cursor:
            cursor.execute(f"SELECT {select} FROM {name}")
            texts = _texts(cursor.description, columns)
            while rows := cursor.fetchmany(chunk_rows):
                yield [_row(names, texts, row) for row in rows]
        return
    order = ", ".join(_quote(c) for c in key)
    positions = [names.index(c) for c in key]
    last = None
    with connection.cursor() as cursor:
        while True:
            where, params = "", ()
            if last is not None:
                where = f" WHERE ({order}) > ({', '.join(['%s'] * len(key))})"
                params = tuple(last)
            cursor.execute(f"SELECT {select} FROM {name}{where} ORDER BY {order} LIMIT {chunk_rows}",
                           params)
            rows = cursor.fetchall()
            if not rows:
                return
            texts = _texts(cursor.description, columns)
            yield [_row(names, texts, row) for row in rows]
            if len(rows) < chunk_rows:
                return
            last = [rows[-1][i] for i in positions]


def _columns(connection, database: str, table: str) -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
                       "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                       (database, table))
        return [(name, kind.lower()) for name, kind in cursor.fetchall()]


def _texts(description, columns) -> list:
    """Per column, the function from the server's value to the exact text."""
    return [_text_function(field[1], kind) for field, (_, kind) in zip(description, columns)]


def _text_function(field_type: int, kind: str):
    """`field_type` as the result metadata says; `kind` the column's DATA_TYPE."""
    if kind == "float":
        return lambda v: float32_text(float(v))
    if field_type == T.MYSQL_TYPE_DOUBLE:
        return lambda v: value_text(float(v))
    if field_type in _DECIMALS:
        return lambda v: decimal_text(Decimal(v))
    if field_type in _INTEGERS:
        return lambda v: str(int(v))
    if field_type == T.MYSQL_TYPE_BIT:
        return lambda v: str(int.from_bytes(v, "big"))
    if kind in _FIXED_BINARY:
        # The binlog holds these as fixed binary strings without their
        # trailing zero bytes; the server prints INET6, INET4 and UUID as text.
        packed = _FIXED_BINARY[kind]
        return lambda v: value_text(packed(v).rstrip(b"\0"))
    return value_text  # text as is; bytes (binary strings, GEOMETRY) as base64


def _row(names: list[str], texts: list, row) -> dict:
    return {name: (None if value is None else text(value))
            for name, text, value in zip(names, texts, row)}


class _ChangeWriter:
    """Snapshot rows as Parquet files of the changes view, in its partitions."""

    def __init__(self, folder: str, point: SnapshotPoint, file_seq: int):
        self.folder, self.point, self.file_seq = folder, point, file_seq
        self.moment = dt.datetime.fromisoformat(point.time)
        self.index = 0

    def write(self, database: str, table: str, rows: list[dict]) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from binlake.spark.batches import CHANGES
        point, n = self.point, len(rows)
        first = self.index
        self.index += n
        key = {"file_seq": self.file_seq, "pos": point.pos - 1, "sub": 0}
        columns = {
            "path": [None] * n, "file": [point.file] * n, "pos": [point.pos] * n,
            "row_index": list(range(n)),
            "commit_key": [dict(key, row=first + i) for i in range(n)],
            "timestamp": [self.moment] * n, "commit_timestamp": [self.moment] * n,
            "commit_pos": [point.pos] * n, "gtid": [point.gtid] * n, "xid": [None] * n,
            "server_id": [None] * n, "database": [database] * n, "table": [table] * n,
            "op": ["r"] * n, "before": [None] * n,
            "after": [list(row.items()) for row in rows],
        }
        batch = pa.table(columns, schema=CHANGES).drop_columns(["database", "table"])
        where = os.path.join(self.folder, f"database={escape_partition(database)}",
                             f"table={escape_partition(table)}",
                             f"date={self.moment.date().isoformat()}")
        os.makedirs(where, exist_ok=True)
        pq.write_table(batch, os.path.join(where, f"part-snapshot-{uuid.uuid4().hex}.parquet"))
        return n


#: The characters Spark escapes in a partition directory's value (%XX).
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(0x20)}


def escape_partition(value: str) -> str:
    """A partition value as Spark writes it in a directory name."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)
