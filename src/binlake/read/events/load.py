"""LOAD DATA INFILE events of every generation.

3.23-4.x: LOAD_EVENT / NEW_LOAD_EVENT (statement and file name), or
CREATE_FILE_EVENT + APPEND_BLOCK_EVENT* + EXEC_LOAD_EVENT (the file's bytes
travel in the log). 5.0+: BEGIN_LOAD_QUERY_EVENT + APPEND_BLOCK_EVENT* +
EXECUTE_LOAD_QUERY_EVENT (decoded in query.py). DELETE_FILE_EVENT cancels.
Layout: `Load_event`/`Create_file_event` in MySQL `load_data_events.cpp`.
"""

from __future__ import annotations

from binlake.constants import EventType
from binlake.read.cursor import Cursor, text
from binlake.read.events.base import Event, EventHeader, frozen_dataclass


@frozen_dataclass
class LoadEvent(Event):
    """LOAD_EVENT, NEW_LOAD_EVENT and CREATE_FILE_EVENT (which adds file_id and block)."""

    thread_id: int
    exec_time: int
    skip_lines: int
    field_term: bytes
    enclosed: bytes
    line_term: bytes
    line_start: bytes
    escaped: bytes
    opt_flags: int
    empty_flags: int
    field_names: list
    table: str
    database: str
    file_name: str
    file_id: int | None = None
    block: bytes | None = None


@frozen_dataclass
class FileBlockEvent(Event):
    """APPEND_BLOCK, BEGIN_LOAD_QUERY (with data), EXEC_LOAD and DELETE_FILE (without)."""

    file_id: int
    data: bytes | None = None


def decode_load(header: EventHeader, cur: Cursor, ctx) -> LoadEvent:
    fde = ctx.fde
    is_create_file = header.type_code == EventType.CREATE_FILE_EVENT
    post = cur.sub(fde.post_header_len(EventType.LOAD_EVENT) if is_create_file
                   else fde.post_header_len(header.type_code))
    thread_id, exec_time, skip_lines = post.u32(), post.u32(), post.u32()
    table_len, db_len, num_fields = post.u8(), post.u8(), post.u32()
    file_id = None
    if is_create_file and fde.binlog_version != 1:
        file_id = cur.sub(fde.post_header_len(EventType.CREATE_FILE_EVENT)).u32()
    if header.type_code == EventType.LOAD_EVENT:  # old sql_ex: one byte each
        field_term, enclosed, line_term, line_start, escaped = (
            cur.bytes(1), cur.bytes(1), cur.bytes(1), cur.bytes(1), cur.bytes(1))
        opt_flags, empty_flags = cur.u8(), cur.u8()
    else:
        field_term, enclosed, line_term, line_start, escaped = (
            cur.lstring1(), cur.lstring1(), cur.lstring1(), cur.lstring1(), cur.lstring1())
        opt_flags, empty_flags = cur.u8(), 0
    lengths = [cur.u8() for _ in range(num_fields)]
    fields = []
    for length in lengths:
        fields.append(text(cur.bytes(length)))
        cur.u8()
    table = text(cur.bytes(table_len)); cur.u8()
    database = text(cur.bytes(db_len)); cur.u8()
    if is_create_file:
        file_name = text(cur.cstring())
        block = cur.rest()
    else:
        file_name = text(cur.rest().rstrip(b"\0"))
        block = None
    return LoadEvent(header, thread_id, exec_time, skip_lines, field_term, enclosed,
                     line_term, line_start, escaped, opt_flags, empty_flags, fields,
                     table, database, file_name, file_id, block)


def decode_file_block(header: EventHeader, cur: Cursor, ctx) -> FileBlockEvent:
    post = cur.sub(ctx.fde.post_header_len(header.type_code) or 4)
    file_id = post.u32()
    if header.type_code in (EventType.APPEND_BLOCK_EVENT, EventType.BEGIN_LOAD_QUERY_EVENT):
        return FileBlockEvent(header, file_id, cur.rest())
    return FileBlockEvent(header, file_id)
