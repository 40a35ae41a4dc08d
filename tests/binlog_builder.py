"""Build small binlog files byte by byte, for formats no public file exists of.

v1 (MySQL 3.23) follows the layout in ../shared/seeds/000: a 13-byte header
(timestamp, type, server_id, length) and a 69-byte START_EVENT_V3.
"""

from __future__ import annotations

import struct
import zlib

MAGIC = b"\xfebin"


def header_v1(type_code: int, body: bytes, timestamp=1000000000, server_id=1) -> bytes:
    return struct.pack("<IBII", timestamp, type_code, server_id, 13 + len(body)) + body


def header_v3(type_code: int, body: bytes, pos: int, timestamp=1100000000, server_id=1,
              flags=0, crc=False) -> bytes:
    length = 19 + len(body) + (4 if crc else 0)
    event = struct.pack("<IBIIIH", timestamp, type_code, server_id, length, pos + length, flags) + body
    if crc:
        event += struct.pack("<I", zlib.crc32(event))
    return event


def start_v3_body(binlog_version: int, server_version: str, created=0) -> bytes:
    return struct.pack("<H", binlog_version) + server_version.encode().ljust(50, b"\0") + \
        struct.pack("<I", created)


def query_body(db: str, query: str, thread_id=7, exec_time=0, error_code=0) -> bytes:
    return struct.pack("<IIBH", thread_id, exec_time, len(db), error_code) + \
        db.encode() + b"\0" + query.encode()


def intvar_body(kind: int, value: int) -> bytes:
    return struct.pack("<BQ", kind, value)


def build_v1() -> bytes:
    """A 3.23 binlog: start, use+insert with INSERT_ID, rotate, stop."""
    out = MAGIC
    out += header_v1(1, start_v3_body(1, "3.23.58-log"))
    out += header_v1(5, intvar_body(2, 42))
    out += header_v1(2, query_body("test", "INSERT INTO t VALUES (NULL, 'v1')"))
    out += header_v1(4, b"mysql-bin.002")
    out += header_v1(3, b"")
    return out


def build_v3_without_start() -> bytes:
    """A 4.0 binlog after a rotation: no start event, first event a QUERY."""
    out = bytearray(MAGIC)
    for type_code, body in [
        (2, query_body("test", "BEGIN")),
        (5, intvar_body(1, 7)),
        (2, query_body("test", "INSERT INTO t VALUES (1)")),
        (2, query_body("test", "COMMIT")),
        (4, struct.pack("<Q", 4) + b"mysql-bin.004"),
    ]:
        out += header_v3(type_code, body, len(out))
    return bytes(out)
