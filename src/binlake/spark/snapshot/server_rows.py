"""A server's rows as the exact text the binlog's changes carry, written as
changes of the changes view (op "r").

Strategy: values are turned into the same exact text the binlog's changes
carry (binlake.spark.read.exact), from the server's text protocol:
integers, DECIMAL, temporals (session time zone UTC) and character strings
are already that text; DOUBLE and FLOAT are parsed and printed as the
binlog's are (FLOAT read through a DOUBLE so no digit is lost); binary
strings, BIT and GEOMETRY arrive as bytes.

A keyed table's pages (`_pages`) are made by the server: each page one
value of QUOTEd values, parsed by pyarrow's CSV reader, so that neither
side spends Python per value; a page it cannot give so is read by the
text protocol, as a table without a key is (one streamed SELECT).

The rows become changes like the binlog's, op "r" (Debezium's "read"),
placed just before the point of the read view they were read in
(binlake.spark.snapshot.read_view), as Parquet files in the changes
view's partitions (`_ChangeWriter`).
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import uuid
from decimal import Decimal

from binlake.constants import ColumnType as T
from binlake.connection.settings import quote_identifier as _quote
from binlake.spark.read.exact import decimal_text, float32_text, value_text
from binlake.spark.read.partitioned import SNAPSHOT_FILES, escape_partition_value
from binlake.spark.snapshot.read_view import SnapshotPoint

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
