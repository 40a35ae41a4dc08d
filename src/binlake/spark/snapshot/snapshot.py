"""`binlake pipeline --snapshot-from`: every selected table of a live server,
read under one consistent read view, with the binlog position it is at.

Strategy (as Debezium and `mysqldump --single-transaction --master-data`):
- MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT, then the status
  variables Binlog_snapshot_file/_position give the binlog position of that
  very view, with no lock; BINLOG_GTID_POS() its GTID state.
- MySQL: FLUSH TABLES WITH READ LOCK for the moment it takes to open the view
  and read SHOW MASTER STATUS (SHOW BINARY LOG STATUS from 8.4), then UNLOCK.
Inside the view, SHOW CREATE TABLE gives each table's definition (the seed
of the schema history) and its rows are read in chunks by its key (the
lake's: the PRIMARY KEY, else the server's UNIQUE NOT NULL one; keyset pages, one connection: a read view cannot be shared between
connections), a table without one in a single streamed SELECT.

The rows become changes like the binlog's, op "r" (Debezium's "read"),
placed just before the snapshot position, so tables/ and `--as-of` take
them as the rows every table had there; the pipeline reads the binlogs from
that position on. Values are turned into the same exact text the binlog's
changes carry (binlake.spark.read.exact), from the server's text protocol:
integers, DECIMAL, temporals (session time zone UTC) and character strings
are already that text; DOUBLE and FLOAT are parsed and printed as the
binlog's are (FLOAT read through a DOUBLE so no digit is lost); binary
strings, BIT and GEOMETRY arrive as bytes.

The lock-free snapshot (`-R --snapshot-from`, binlake.spark.run.follow), the
DBLog way but exact without reconciliation: the read view above opens the
lake and reads only the tables without a key; a keyed table is read in
chunks by key, in rounds between the follower's micro-batches. Each chunk
is one short transaction of its own, on its own connection (a Spark task
per chunk), that opens a consistent snapshot and reads MariaDB's
Binlog_snapshot_position of that very view: the chunk's rows are the
table's rows in its key range at that binlog position, placed there as
op "r". The micro-batch that appends them reads the binlog past every
chunk's position, so each key takes, in commit order, the changes before
its chunk, its chunk's row, then the changes after: a key's last touch is
its state (a key whose chunk comes later may be touched first; the chunk
overwrites it). Chunk bounds are keys found by a keyset query (the key
`chunk_rows` after the last bound: at most a fiftieth of the table), so an
update that moves a row to another chunk's range is a delete in one and an
insert in the other, each placed by its own chunk's position. A table
still being read stays out of tables/ (a reader never sees half of it):
the run that appends its last chunk builds it from its chunks and
changes, as a table new to the lake (binlake.spark.run.pipeline): in the driver
from the chunk files themselves (binlake.spark.commits.lake). The progress
(each table's last bound, and where its last chunk was read: an `--as-of`
point before it is refused, binlake.spark.state.starts) is committed in the
manifest with the run that holds the chunks' rows: a killed snapshot reads
again at most the round in flight. MySQL has no position of a read view
without a lock: there a keyed chunk is placed by watermarks
(`_chunk_view`): it sorts at the binlog's end read before its view opened,
and the lake takes it once it holds the binlog read after; the changes
between, which its rows may hold already, are applied over them by key to
the same state. A table without a key is read at an exact point under a
moment's global read lock.

The same chunks read tables anew into a lake that follows already
(`read_anew`: tables newly selected, or asked for): their progress entry
carries `since`, the lake's position then, where the pipeline starts the
table's rows (every change and chunk before is superseded); a table
without a key is one chunk, one read view, its rows starting at that
view's position.

A keyed table's pages (`_pages`) are made by the server: each page one
value of QUOTEd values, parsed by pyarrow's CSV reader, so that neither
side spends Python per value; a page it cannot give so is read by the
text protocol, as a table without a key is.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from decimal import Decimal

from binlake.constants import ColumnType as T
from binlake.connection.settings import SchemaSourceError, connect, quote_identifier as _quote
from binlake.schema.seeds import SYSTEM_DATABASES, server_ddl
from binlake.spark.read.exact import decimal_text, float32_text, value_text
from binlake.spark.read.partitioned import SNAPSHOT_FILES, escape_partition_value
from binlake.spark.read.ranges import name_sequence

#: Rows per chunk of the lock-free snapshot (by key), and per batch of a
#: table without a key.
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
                  chunked: bool = False, log=None) -> tuple[SnapshotPoint, str, dict | None]:
    """Read every table `wanted(db, table)` selects into Parquet files of the
    changes view under `folder` (partitioned as changes/); returns the
    point, the tables' DDL text, and with `chunked` the progress of the
    lock-free snapshot of the keyed tables, which this read leaves out.
    `file_seq_of(name)` numbers a binlog file as the pipeline does."""
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
            for names, columns in _chunks(connection, database, table, key, chunk_rows):
                rows += writer.write(database, table, names, columns, point,
                                     file_seq_of(point.file), writer.rows)
            log(f"snapshot: {database}.{table}: {rows} rows")
        connection.commit()
    progress = None
    if chunked:
        progress = {"tables": {f"{db}.{table}": _entry(db, table, key, estimate, chunk_rows)
                               for (db, table, key), estimate in zip(keyed, estimates)},
                    "chunks": 0}
    return point, ddl, progress


def _entry(database: str, table: str, key: list, estimate: int, chunk_rows: int,
           since: list | None = None) -> dict:
    """A table's progress: its key, the last bound read (`after`), whether it
    is done, the rows read, its chunks' rows; `since` for a table read anew
    into a lake (binlake.spark.run.pipeline starts its rows there)."""
    entry = {"database": database, "table": table, "key": key, "after": None, "done": False,
             "rows": 0, "chunk_rows": rows_per_chunk(estimate, chunk_rows)}
    if since is not None:
        entry["since"] = since
    return entry


def read_anew(address, progress: dict | None, wanted, since: list,
              chunk_rows: int = CHUNK_ROWS) -> tuple[dict, list[str]]:
    """The progress with the server's tables `wanted(db, table)` selects to
    be read again (or for the first time) into a lake that holds the binlog
    up to `since`, lock-free, while it follows the server; and their names.
    A keyed table is read in chunks as a new lake's are, and its rows start
    at `since` (every change before is superseded: a key's chunk row or a
    later change is its state); a table without a key in one chunk, one
    read view, its rows starting at that chunk's position (`progressed`).
    (Where a chunk's rows sort: `_chunk_view`, MariaDB's and MySQL's.)"""
    progress = dict(progress or {"tables": {}, "chunks": 0})
    tables = dict(progress["tables"])
    with _session(address) as connection:
        found = _tables(connection, wanted)
        for database, table, key in found:
            estimate = _estimated_rows(connection, database, table)
            tables[f"{database}.{table}"] = _entry(database, table, key, estimate, chunk_rows,
                                                   since)
    return dict(progress, tables=tables), [f"{db}.{table}" for db, table, _ in found]


#: A table's chunks are at most this share of its rows (so that a round, two
#: chunks a core, is a few percent of it: what a killed snapshot reads again).
CHUNK_SHARE = 50
#: ... and at least this many rows (each chunk costs a read view and a query).
MIN_CHUNK_ROWS = 1_000


def rows_per_chunk(estimate: int, most: int) -> int:
    """The rows of a table's chunks: `most`, or fewer for a table of about
    `estimate` rows, that a round stays a small share of it."""
    return max(min(most, MIN_CHUNK_ROWS), min(most, estimate // CHUNK_SHARE))


def _is_mariadb(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        return "mariadb" in cursor.fetchone()[0].lower()


@contextmanager
def _session(address):
    """A connection for the snapshot's reads: the text protocol's text as
    is (bytes when binary), time zone UTC, no sql_mode, REPEATABLE READ,
    GROUP_CONCAT as long as a packet (`_pages`); closed at the end, a
    server's error raised as one line."""
    import pymysql
    connection = connect(address, "--snapshot-from")
    connection.decoders = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00', sql_mode = '', "
                           "group_concat_max_len = @@max_allowed_packet")
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield connection
    except pymysql.err.MySQLError as exc:
        raise SchemaSourceError(f"--snapshot-from: {exc.args[-1] if exc.args else exc}") from None
    finally:
        connection.close()


def _open_read_view(cursor, mariadb: bool | None = None) -> SnapshotPoint:
    """Open a read view at an exact binlog position, its point: MariaDB's
    own (lock-free), or MySQL's under a moment's global read lock."""
    if mariadb is None:
        mariadb = _is_mariadb(cursor.connection)
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
            except Exception:  # noqa: BLE001 - before 8.4
                cursor.execute("SHOW MASTER STATUS")
            found = cursor.fetchone()
        finally:
            cursor.execute("UNLOCK TABLES")
        file, pos = (found[0], found[1]) if found else (None, None)
        gtid = (found[4] or None) if found and len(found) > 4 else None
    if not file:
        raise SchemaSourceError("--snapshot-from: the server writes no binary log "
                                "(log_bin is OFF): there is no position to follow from")
    return SnapshotPoint(file, int(pos), gtid, utc_now())


def utc_now() -> str:
    """Now, as the manifest's floors say when they were taken (ISO 8601, UTC)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")


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


def _chunks(connection, database: str, table: str, key: list[str], chunk_rows: int):
    """(column names, columns of exact text) per page: keyset pages by `key`
    (`_pages`), or one streamed SELECT of a table without a key."""
    import pymysql.cursors
    columns = _columns(connection, database, table)
    if key:
        with connection.cursor() as cursor:
            yield from _pages(cursor, database, table, key, columns, None, None)
        return
    names = [c for c, _ in columns]
    with connection.cursor(pymysql.cursors.SSCursor) as cursor:
        cursor.execute(f"SELECT {_select_list(columns)} FROM {_quote(database)}.{_quote(table)}")
        texts = _texts(cursor.description, columns)
        while rows := cursor.fetchmany(chunk_rows):
            yield names, _text_columns(rows, texts)


#: The bytes a page of a keyed table aims at (one value on the wire).
PAGE_BYTES = 2 << 20
#: Column types whose text is their bytes in base64 (binary strings, geometry).
_BASE64_KINDS = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry",
                 "point", "linestring", "polygon", "multipoint", "multilinestring",
                 "multipolygon", "geometrycollection"}
#: Character columns: converted to the text protocol's character set.
_CHARACTER_KINDS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum",
                    "set", "json"}


def _page_value(column: str, kind: str) -> str:
    """The SQL of a column's value in a page: QUOTE of the text the text
    protocol would send (time zone UTC, UTF-8), or of its bytes in base64."""
    name = f"page.{_quote(column)}"
    if kind == "binary":  # as the binlog holds it: without the zero bytes that pad it
        value = f"TO_BASE64(TRIM(TRAILING X'00' FROM {name}))"
    elif kind in _BASE64_KINDS:
        value = f"TO_BASE64({name})"
    elif kind in _CHARACTER_KINDS:
        value = f"CONVERT({name} USING utf8mb4)"
    elif kind == "float":  # through a DOUBLE: every digit of the FLOAT
        value = f"{name} + 0e0"
    elif kind in ("bit", "year"):  # the integer, as the binlog's value is
        value = f"{name} + 0"
    else:
        value = name
    return f"QUOTE({value})"


def _page_text(kind: str):
    """From a column's page text to its exact text: None where it already is."""
    if kind == "float":
        return lambda v: float32_text(float(v))
    if kind == "double":
        return lambda v: value_text(float(v))
    if kind in _FIXED_BINARY:
        packed = _FIXED_BINARY[kind]
        return lambda v: value_text(packed(v).rstrip(b"\0"))
    return None


def _pages(cursor, database: str, table: str, key: list[str], columns: list, after, through):
    """(names, columns of exact text as Arrow arrays) of the rows after the
    key `after` up to `through`, page by page in key order.

    A page is one value the server makes: its rows as lines of QUOTEd values
    (SQL's escapes: \\, \' and raw bytes otherwise) between tabs, parsed by
    pyarrow's CSV reader, so neither side spends Python per value (the
    server formats the values as its text protocol does). It is
    `PAGE_BYTES` long or so: its rows follow the bytes a row took so far.
    A page the server cut short (group_concat_max_len, max_allowed_packet)
    is read again at half its rows. A page with QUOTE's two escapes the CSV
    reader does not know (\\0 for NUL, \\Z for Ctrl-Z), or not UTF-8, is
    read again by the text protocol, as a row too large for any page is."""
    import pyarrow as pa
    import pyarrow.csv as csv
    names = [c for c, _ in columns]
    line = "CONCAT_WS('\\t', " + ", ".join(_page_value(c, kind) for c, kind in columns) + ")"
    last = (f"MAX(page.{_quote(key[0])})" if len(key) == 1 else "NULL")
    order = "" if len(key) == 1 else " ORDER BY " + ", ".join(f"page.{_quote(c)}" for c in key)
    source = (f"SELECT {', '.join(_quote(c) for c in names)} FROM {_quote(database)}."
              f"{_quote(table)}")
    in_order = " ORDER BY " + ", ".join(_quote(c) for c in key)
    fields = [str(i) for i in range(len(names))]
    read = csv.ReadOptions(column_names=fields, use_threads=False)
    parse = csv.ParseOptions(delimiter="\t", quote_char="'", escape_char="\\",
                             double_quote=False, newlines_in_values=True)
    convert = csv.ConvertOptions(column_types={f: pa.string() for f in fields},
                                 null_values=["NULL"], strings_can_be_null=True,
                                 quoted_strings_can_be_null=False)
    texts = [_page_text(kind) for _, kind in columns]
    keyed = [names.index(c) for c in key]
    cursor.execute("SELECT @@group_concat_max_len")  # as long as a packet (`_session`)
    longest = int(cursor.fetchone()[0])
    rows = 1000
    while True:
        where, params = _key_range(key, after, through)
        cursor.execute(f"SELECT COUNT(*), {last}, CAST(GROUP_CONCAT({line}{order} SEPARATOR "
                       f"'\\n') AS BINARY) FROM ({source}{where}{in_order} LIMIT {rows}) AS page",
                       params)
        count, greatest, data = cursor.fetchone()
        count = int(count)
        if not count:
            return
        page = None
        if data is not None and b"\\0" not in data and b"\\Z" not in data:
            try:
                page = csv.read_csv(pa.py_buffer(data), read_options=read, parse_options=parse,
                                    convert_options=convert)
            except pa.ArrowInvalid:  # cut short, or not UTF-8
                pass
        if page is not None and page.num_rows == count:
            found = [_exact(column.combine_chunks(), kind, text)
                     for column, (_, kind), text in zip(page.columns, columns, texts)]
        elif (data is None or len(data) >= longest) and rows > 1:
            rows //= 2  # cut short by the server: half as many rows
            continue
        else:
            found = _text_protocol_page(cursor, f"{source}{where}{in_order} LIMIT {rows}",
                                        params, columns, key)
        yield names, found
        if count < rows:
            return
        after = (tuple(_key_param(found[i][count - 1].as_py(), columns[i][1]) for i in keyed)
                 if greatest is None else (greatest,))
        rows = max(1, min(50_000, int(PAGE_BYTES * count / max(1, len(data or b"")))))


def _exact(column, kind: str, text):
    """A page's column as exact text (binary columns: TO_BASE64's lines joined)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if kind in _BASE64_KINDS:
        return pc.replace_substring(column, "\n", "")
    if text is None:
        return column
    return pa.array([None if v is None else text(v) for v in column.to_pylist()], pa.string())


def _key_param(text: str, kind: str):
    """A key value of a page, as the next page's query compares it."""
    return base64.b64decode(text) if kind in _BASE64_KINDS else text


def _text_protocol_page(cursor, query: str, params: tuple, columns: list, key: list) -> list:
    """A page's rows (`query`) by the text protocol, as exact text (`_texts`)."""
    import pyarrow as pa
    order = ", ".join(_quote(c) for c in key)
    cursor.execute(f"SELECT {_select_list(columns)} FROM ({query}) AS page ORDER BY {order}",
                   params)
    rows = cursor.fetchall()
    texts = _texts(cursor.description, columns)
    return [pa.array(column, pa.string()) for column in _text_columns(rows, texts)]


def _select_list(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"({_quote(c)} + 0e0)" if kind == "float" else _quote(c)
                     for c, kind in columns)


def _key_range(key: list[str], after, through) -> tuple[str, tuple]:
    """The WHERE clause of the keys after `after` up to `through` (inclusive;
    None: no bound), compared as the index orders them (a row constructor)."""
    columns = "(" + ", ".join(_quote(c) for c in key) + ")"
    marks = "(" + ", ".join(["%s"] * len(key)) + ")"
    terms, params = [], ()
    if after is not None:
        terms.append(f"{columns} > {marks}")
        params += tuple(after)
    if through is not None:
        terms.append(f"{columns} <= {marks}")
        params += tuple(through)
    return (" WHERE " + " AND ".join(terms) if terms else ""), params


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


def _text_columns(rows, texts: list) -> list[list]:
    """The rows' values as columns of exact text (None for NULL)."""
    if not rows:
        return [[] for _ in texts]
    return [[None if value is None else text(value) for value in column]
            for text, column in zip(texts, zip(*rows))]


class _ChangeWriter:
    """Snapshot rows as Parquet files of the changes view, in its partitions:
    each page's rows placed just before `point` (op "r"), numbered from
    `first` within the commit key's `sub`."""

    def __init__(self, folder: str):
        self.folder = folder
        self.rows = 0  #: written so far
        os.makedirs(folder, exist_ok=True)  # there, even with no row

    def write(self, database: str, table: str, names: list[str], columns: list[list],
              point: SnapshotPoint, file_seq: int, first: int, sub: int = 0) -> int:
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        from binlake.spark.read.batches import CHANGES, parquet_options
        n, width = len(columns[0]) if columns else 0, len(names)
        if not n:
            return 0
        columns = [c if isinstance(c, pa.Array) else pa.array(c, pa.string()) for c in columns]
        moment = dt.datetime.fromisoformat(point.time)
        # The after image: each row's columns by name, interleaved row by row.
        entry = np.arange(n * width)
        after = pa.MapArray.from_arrays(
            pa.array(np.arange(0, n * width + 1, width, dtype=np.int32)),
            pa.array(names, pa.string()).take(pa.array(entry % width)),
            pa.concat_arrays(columns).take(pa.array(entry % width * n + entry // width)))
        key = pa.StructArray.from_arrays(
            [pa.repeat(file_seq, n).cast(pa.int64()), pa.repeat(point.pos - 1, n).cast(pa.int64()),
             pa.repeat(sub, n).cast(pa.int32()), pa.array(np.arange(first, first + n,
                                                                    dtype=np.int32))],
            names=["file_seq", "pos", "sub", "row"])
        columns = {
            "path": pa.nulls(n), "file": pa.repeat(point.file, n), "pos": pa.repeat(point.pos, n),
            "row_index": pa.array(np.arange(n, dtype=np.int32)), "commit_key": key,
            "timestamp": pa.repeat(moment, n), "commit_timestamp": pa.repeat(moment, n),
            "commit_pos": pa.repeat(point.pos, n), "gtid": pa.repeat(point.gtid, n),
            "xid": pa.nulls(n), "server_id": pa.nulls(n), "database": pa.repeat(database, n),
            "table": pa.repeat(table, n), "op": pa.repeat("r", n), "before": pa.nulls(n),
            "after": after,
        }
        batch = pa.Table.from_arrays([columns[f.name].cast(f.type) for f in CHANGES],
                                     schema=CHANGES).drop_columns(["database", "table"])
        where = os.path.join(self.folder, f"database={escape_partition_value(database)}",
                             f"table={escape_partition_value(table)}",
                             f"date={moment.date().isoformat()}")
        os.makedirs(where, exist_ok=True)
        # A chunk's file is named by its number: a Spark task run again writes it again.
        name = (f"{SNAPSHOT_FILES}{sub:09d}.parquet" if sub
                else f"part-snapshot-{uuid.uuid4().hex}.parquet")
        pq.write_table(batch, os.path.join(where, f".{name}.tmp"),
                       **parquet_options(batch.schema))
        os.replace(os.path.join(where, f".{name}.tmp"), os.path.join(where, name))
        self.rows += n
        return n


# -- the lock-free snapshot: chunks by key ------------------------------------------------

@dataclass(frozen=True)
class Chunk:
    """The rows of a keyed table after the key `after` up to `through`
    (inclusive; None: no bound), the snapshot's chunk number `number`."""
    database: str
    table: str
    key: tuple[str, ...]
    after: tuple | None
    through: tuple | None
    number: int


@dataclass(frozen=True)
class ChunkRead:
    chunk: Chunk
    rows: int
    point: SnapshotPoint     #: where its rows sort among the changes
    #: (file, pos) the binlog had reached once it was read (MySQL's high
    #: watermark): the lake takes the chunk once it holds the binlog so far,
    #: so that the changes its rows may already hold are applied with it
    high: tuple | None = None

    @property
    def read_through(self) -> tuple[str, int]:
        return self.high or (self.point.file, self.point.pos)


def snapshot_reading(progress: dict | None) -> set[str]:
    """The tables ("db.table") the lock-free snapshot has yet to finish."""
    return {name for name, entry in (progress or {}).get("tables", {}).items()
            if not entry["done"]}


def plan_round(address, progress: dict, count: int) -> list[Chunk]:
    """The next `count` chunks (fewer at the end), in key order table after
    table: each bound is the key its `chunk_rows` rows after the last one, found
    by one index query; the last chunk of a table has no upper bound."""
    number = progress["chunks"]
    found: list[Chunk] = []
    with _session(address) as connection:
        with connection.cursor() as cursor:
            for entry in progress["tables"].values():
                if entry["done"]:
                    continue
                key, after = tuple(entry["key"]), _key_values(entry["after"])
                if not key:  # one chunk: the whole table in one read view
                    found.append(Chunk(entry["database"], entry["table"], key, None, None,
                                       number + len(found)))
                    continue
                chunk_rows = entry["chunk_rows"]
                order = ", ".join(_quote(c) for c in key)
                name = f"{_quote(entry['database'])}.{_quote(entry['table'])}"
                while len(found) < count:
                    where, params = _key_range(list(key), after, None)
                    cursor.execute(f"SELECT {order} FROM {name}{where} ORDER BY {order} "
                                   f"LIMIT 1 OFFSET {chunk_rows - 1}", params)
                    bound = cursor.fetchone()
                    found.append(Chunk(entry["database"], entry["table"], key, after,
                                       tuple(bound) if bound else None, number + len(found)))
                    if bound is None:
                        break
                    after = tuple(bound)
                if len(found) >= count:
                    break
    return found


def read_chunks(address, chunks, folder: str, names_in_lake: str = "") -> list[ChunkRead]:
    """Each chunk in a consistent snapshot of its own, at the binlog position
    MariaDB gives that view, written under `folder` (a Spark task's work).
    The position is in the lake's numbering: the server's binlog name after
    `names_in_lake` (`failover<N>~` on the Nth server after a failover),
    so a chunk sorts after the table's start, not before every change of
    the earlier servers."""
    import pyarrow as pa

    writer, done, columns_of = _ChangeWriter(folder), [], {}
    with _session(address) as connection:
        mariadb = _is_mariadb(connection)
        with connection.cursor() as cursor:
            for chunk in chunks:
                table = (chunk.database, chunk.table)
                if table not in columns_of:
                    columns_of[table] = _columns(connection, *table)
                point, watermarked = _chunk_view(cursor, chunk, mariadb, names_in_lake)
                if chunk.key:
                    pages = list(_pages(cursor, chunk.database, chunk.table, list(chunk.key),
                                        columns_of[table], chunk.after, chunk.through))
                else:
                    pages = [(names, [pa.array(column, pa.string()) for column in columns])
                             for names, columns in _chunks(connection, chunk.database,
                                                           chunk.table, [], CHUNK_ROWS)]
                connection.commit()
                high = None
                if watermarked:  # the high watermark: the binlog's end now
                    file, pos = _binlog_end(cursor)
                    high = (names_in_lake + file, pos)
                names = [c for c, _ in columns_of[table]]
                columns = [pa.chunked_array([page[i] for _, page in pages], pa.string())
                           .combine_chunks() for i in range(len(names))]
                n = writer.write(chunk.database, chunk.table, names, columns, point,
                                 name_sequence(point.file), 0, sub=chunk.number + 1)
                done.append(ChunkRead(chunk, n, point, high))
    return done


def _chunk_view(cursor, chunk: Chunk, mariadb: bool, names_in_lake: str):
    """Open a chunk's read view; (its point in the lake's numbering, and
    whether it is placed by watermarks: the high one is read after it).
    MariaDB names the view's own binlog position. MySQL names none: a keyed chunk sorts at
    the low watermark, the binlog's end read before the view opened (the
    changes after it are applied over its rows, by key: those the view
    already holds, again, to the same state), and is taken once the lake
    holds the binlog to the high watermark, read after (DBLog's, Flink
    CDC's); a keyless one, whose copies no key matches, is read at an exact
    point under a moment's global read lock, as a MySQL snapshot starts."""
    if mariadb:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cursor.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {name.lower(): value for name, value in cursor.fetchall()}
        file, pos, watermarked = (status["binlog_snapshot_file"],
                                  status["binlog_snapshot_position"], False)
    elif chunk.key:
        (file, pos), watermarked = _binlog_end(cursor), True
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    else:
        point = _open_read_view(cursor, mariadb=False)
        file, pos, watermarked = point.file, point.pos, False
    return SnapshotPoint(names_in_lake + file, int(pos), None, utc_now()), watermarked


def _binlog_end(cursor) -> tuple[str, int]:
    """Where the server's binlog ends now (SHOW BINARY LOG STATUS, MySQL
    8.4 on; SHOW MASTER STATUS before it and on MariaDB)."""
    try:
        cursor.execute("SHOW BINARY LOG STATUS")
    except Exception:  # noqa: BLE001 - before 8.4, and MariaDB
        cursor.execute("SHOW MASTER STATUS")
    found = cursor.fetchone()
    if not found:
        raise SchemaSourceError("the server writes no binary log (log_bin is OFF)")
    return found[0], int(found[1])


def read_round(spark, address, chunks: list[Chunk], folder: str,
               names_in_lake: str = "") -> list[ChunkRead]:
    """The chunks read in parallel, each on its own connection: by Spark
    tasks, one per task; without `spark`, by threads of this process (the
    server formats the pages, pyarrow parses and writes them outside the
    GIL). Positions as read_chunks gives them."""
    def read(part) -> list[ChunkRead]:
        return read_chunks(address, list(part), folder, names_in_lake)
    if len(chunks) <= 1:
        return read(chunks)
    if spark is None:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(chunks)) as pool:
            return [done for reads in pool.map(lambda chunk: read([chunk]), chunks)
                    for done in reads]
    tasks = spark.sparkContext.parallelize(chunks, len(chunks))
    return tasks.mapPartitions(read).collect()


def progressed(progress: dict, reads: list[ChunkRead]) -> dict:
    """The progress once these chunks (a round, in key order) are in the lake."""
    tables = {name: dict(entry) for name, entry in progress["tables"].items()}
    for read in reads:
        entry = tables[f"{read.chunk.database}.{read.chunk.table}"]
        entry["after"] = _key_json(read.chunk.through)
        entry["done"] = read.chunk.through is None
        entry["rows"] += read.rows
        # Where its rows are the lake's from (binlake.spark.state.starts: --as-of before it is refused).
        entry["last_chunk"] = {"file": read.point.file, "pos": read.point.pos,
                               "time": read.point.time}
        if not read.chunk.key and "since" in entry:
            # A multiset: the changes before its read view are in its rows.
            entry["since"] = [name_sequence(read.point.file), read.point.pos - 2]
    return dict(progress, tables=tables, chunks=progress["chunks"] + len(reads))


def _key_json(values) -> list | None:
    """Key values as the manifest keeps them: text, bytes as {"base64": ...}."""
    if values is None:
        return None
    return [{"base64": base64.b64encode(v).decode("ascii")} if isinstance(v, bytes) else v
            for v in values]


def _key_values(data) -> tuple | None:
    if data is None:
        return None
    return tuple(base64.b64decode(v["base64"]) if isinstance(v, dict) else v for v in data)
