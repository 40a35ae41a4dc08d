"""Statement events: QUERY (and MariaDB's compressed QUERY), EXECUTE_LOAD_QUERY,
ROWS_QUERY and MariaDB's ANNOTATE_ROWS.

Status variables are decoded one by one into a dict keyed by their `Q_*`
name. A code this module does not know ends the walk (its length is not
self-described); the bytes from there are kept under `unknown_status_vars`
and the event is still decoded, because db and query follow at known offsets.
"""

from __future__ import annotations

import zlib
from dataclasses import field

from binlake.constants import EventType, QueryStatusVar as Q
from binlake.read.cursor import Cursor, text
from binlake.read.events.base import Event, EventHeader, frozen_dataclass


@frozen_dataclass
class QueryEvent(Event):
    thread_id: int
    exec_time: int
    database: str
    error_code: int
    status_vars: dict = field(default_factory=dict)
    query: str = ""
    unknown_status_vars: bytes = b""
    #: EXECUTE_LOAD_QUERY only: the file id and where the file name sits in the query
    file_id: int | None = None
    fn_pos_start: int | None = None
    fn_pos_end: int | None = None
    dup_handling: int | None = None


@frozen_dataclass
class RowsQueryEvent(Event):
    """ROWS_QUERY_LOG_EVENT (MySQL) and ANNOTATE_ROWS_EVENT (MariaDB)."""

    query: str


def _status_var(code: int, cur: Cursor):
    if code == Q.Q_FLAGS2_CODE:
        return cur.u32()
    if code == Q.Q_SQL_MODE_CODE:
        return cur.u64()
    if code == Q.Q_CATALOG_CODE:  # 5.0.0-5.0.3: length, string, NUL
        value = text(cur.lstring1())
        cur.u8()
        return value
    if code == Q.Q_AUTO_INCREMENT:
        return {"increment": cur.u16(), "offset": cur.u16()}
    if code == Q.Q_CHARSET_CODE:
        return {"character_set_client": cur.u16(), "collation_connection": cur.u16(),
                "collation_server": cur.u16()}
    if code in (Q.Q_TIME_ZONE_CODE, Q.Q_CATALOG_NZ_CODE):
        return text(cur.lstring1())
    if code in (Q.Q_LC_TIME_NAMES_CODE, Q.Q_CHARSET_DATABASE_CODE,
                Q.Q_DEFAULT_COLLATION_FOR_UTF8MB4):
        return cur.u16()
    if code in (Q.Q_TABLE_MAP_FOR_UPDATE_CODE, Q.Q_DDL_LOGGED_WITH_XID, Q.Q_XID):
        return cur.u64()
    if code == Q.Q_MASTER_DATA_WRITTEN_CODE:
        return cur.u32()
    if code == Q.Q_INVOKER:
        user = text(cur.lstring1())
        return {"user": user, "host": text(cur.lstring1())}
    if code == Q.Q_UPDATED_DB_NAMES:
        count = cur.u8()
        if count == 254:  # OVER_MAX_DBS_IN_EVENT_MTS: too many to list
            return None
        return [text(cur.cstring()) for _ in range(count)]
    if code in (Q.Q_MICROSECONDS, Q.Q_HRNOW):
        return cur.u24()
    if code in (Q.Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP, Q.Q_SQL_REQUIRE_PRIMARY_KEY,
                Q.Q_DEFAULT_TABLE_ENCRYPTION, Q.Q_GTID_FLAGS3):
        return cur.u8()
    if code == Q.Q_CHARACTER_SET_COLLATIONS:
        count = cur.u8()
        return [(cur.u16(), cur.u16()) for _ in range(count)]
    return NotImplemented


def decode_status_vars(cur: Cursor) -> tuple[dict, bytes]:
    values: dict = {}
    while not cur.at_end():
        start = cur.pos
        code = cur.u8()
        value = _status_var(code, cur)
        if value is NotImplemented:
            cur.pos = start
            return values, cur.rest()
        values[Q(code).name] = value
    return values, b""


#: deflate's best case is about 1032:1; a header claiming more is corrupt.
MAX_DEFLATE_RATIO = 1032


def uncompress_mariadb(raw: bytes, cur: Cursor) -> bytes:
    """MariaDB `binlog_buf_uncompress`: 1 header byte (0x80 | alg << 4 | lenlen),
    the uncompressed length big-endian in lenlen bytes, then zlib data."""
    if not raw or not raw[0] & 0x80:
        raise cur.error("compressed event without its compression header")
    lenlen = raw[0] & 0x07
    alg = (raw[0] & 0x70) >> 4
    if alg != 0:
        raise cur.error(f"unknown MariaDB compression algorithm {alg}")
    expected = int.from_bytes(raw[1:1 + lenlen], "big")
    compressed = raw[1 + lenlen:]
    if expected > MAX_DEFLATE_RATIO * len(compressed) + 64:
        raise cur.error(f"{len(compressed)} compressed bytes cannot hold the {expected} "
                        "the header says")
    stream = zlib.decompressobj()
    try:  # never more than the header says, plus one byte to tell
        data = stream.decompress(compressed, expected + 1)
    except zlib.error as exc:
        raise cur.error(f"zlib: {exc}") from None
    if len(data) > expected:
        raise cur.error(f"uncompresses past the {expected} bytes the header says")
    if not stream.eof:
        raise cur.error("zlib: incomplete or truncated stream")
    if len(data) != expected:
        raise cur.error(f"uncompressed {len(data)} bytes, header says {expected}")
    return data


def decode_query(header: EventHeader, cur: Cursor, ctx) -> QueryEvent:
    post = cur.sub(ctx.fde.post_header_len(header.type_code))
    thread_id = post.u32()
    exec_time = post.u32()
    db_len = post.u8()
    error_code = post.u16()
    status_len = post.u16() if post.remaining() >= 2 else 0
    extra = {}
    if header.type_code == EventType.EXECUTE_LOAD_QUERY_EVENT:
        extra = dict(file_id=post.u32(), fn_pos_start=post.u32(), fn_pos_end=post.u32(),
                     dup_handling=post.u8())
    status_vars, unknown = decode_status_vars(cur.sub(status_len))
    database = text(cur.bytes(db_len))
    cur.u8()  # NUL after the database name
    raw_query = cur.rest()
    if header.type_code == EventType.QUERY_COMPRESSED_EVENT:
        raw_query = uncompress_mariadb(raw_query, cur)
    return QueryEvent(header, thread_id, exec_time, database, error_code, status_vars,
                      text(raw_query), unknown, **extra)


def decode_rows_query(header, cur: Cursor, ctx) -> RowsQueryEvent:
    cur.u8()  # a length byte the server ignores (it truncates at 255)
    return RowsQueryEvent(header, text(cur.rest()))


def decode_annotate_rows(header, cur: Cursor, ctx) -> RowsQueryEvent:
    return RowsQueryEvent(header, text(cur.rest()))
