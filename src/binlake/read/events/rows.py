"""Rows events of every generation: PRE_GA (5.1.0-5.1.15, types 20-22), v1
(23-25), v2 (30-32, with extra row info), PARTIAL_UPDATE_ROWS (39) and
MariaDB's compressed v1/v2 (166-171).

Rule: the row images stay raw bytes inside the event; `rows()` decodes them
against the table map that was current when the event was read (kept on the
event), so iterating events costs nothing per row until someone asks.
"""

from __future__ import annotations

from binlake.constants import EventType as E
from binlake.read.cursor import Cursor, Fields
from binlake.read.events.base import Event, EventHeader, frozen_dataclass
from binlake.read.events.query import uncompress_mariadb
from binlake.read import rows as row_images
from binlake.read.rows import DELETE, PRE_GA_ROWS_EVENTS, UPDATE, WRITE, LazyRowData

ROWS_OPERATION = {
    E.PRE_GA_WRITE_ROWS_EVENT: WRITE, E.PRE_GA_UPDATE_ROWS_EVENT: UPDATE,
    E.PRE_GA_DELETE_ROWS_EVENT: DELETE,
    E.WRITE_ROWS_EVENT_V1: WRITE, E.UPDATE_ROWS_EVENT_V1: UPDATE, E.DELETE_ROWS_EVENT_V1: DELETE,
    E.WRITE_ROWS_EVENT: WRITE, E.UPDATE_ROWS_EVENT: UPDATE, E.DELETE_ROWS_EVENT: DELETE,
    E.PARTIAL_UPDATE_ROWS_EVENT: UPDATE,
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: WRITE, E.UPDATE_ROWS_COMPRESSED_EVENT_V1: UPDATE,
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: DELETE,
    E.WRITE_ROWS_COMPRESSED_EVENT: WRITE, E.UPDATE_ROWS_COMPRESSED_EVENT: UPDATE,
    E.DELETE_ROWS_COMPRESSED_EVENT: DELETE,
}
_V2 = {E.WRITE_ROWS_EVENT, E.UPDATE_ROWS_EVENT, E.DELETE_ROWS_EVENT, E.PARTIAL_UPDATE_ROWS_EVENT,
       E.WRITE_ROWS_COMPRESSED_EVENT, E.UPDATE_ROWS_COMPRESSED_EVENT,
       E.DELETE_ROWS_COMPRESSED_EVENT}
_COMPRESSED = set(range(166, 172))

#: Extra row info tags (MySQL `enum_extra_row_info_typecode`)
RW_V_EXTRAINFO_TAG = 0   # NDB info: length byte (includes itself and format), format, data
RW_V_TAG_PART_INFO = 1   # partition id(s) of the row


@frozen_dataclass
class RowsEvent(Event):
    table_id: int
    flags: int
    extra_info: dict
    width: int
    columns_present: int           #: bitmap (bit i = column i) of the (before) image
    columns_present_after: int | None
    table: object                  #: the TableMapEvent in force, or None if none was seen
    rows_data: bytes               #: the row images, uncompressed (LazyRowData if huge)
    rows_offset: int               #: file offset of rows_data (of its compressed form)

    @property
    def operation(self) -> str:
        return ROWS_OPERATION[self.header.type_code]

    @property
    def is_partial(self) -> bool:
        return self.header.type_code == E.PARTIAL_UPDATE_ROWS_EVENT

    def rows(self) -> list:
        """[(before, after), ...] with dicts keyed by column name or `@N`;
        before is None for inserts, after is None for deletes."""
        return row_images.decode_rows(self)

    def iter_rows(self):
        """The same pairs one at a time: for huge events, without holding them all."""
        return row_images.iter_rows(self)

    def fields(self) -> dict:
        table = self.table
        return {"table_id": self.table_id, "flags": self.flags,
                "database": table.database if table else None,
                "table": table.table if table else None,
                "extra_info": self.extra_info, "width": self.width,
                "operation": self.operation}


def _extra_info(cur: Cursor) -> dict:
    info: dict = {}
    while not cur.at_end():
        tag = cur.u8()
        if tag == RW_V_EXTRAINFO_TAG:
            length = cur.u8()
            if length < 2:
                raise cur.error(f"extra row info length {length} is shorter than its header")
            info["ndb_format"] = cur.u8()
            info["ndb_data"] = cur.bytes(length - 2)
        elif tag == RW_V_TAG_PART_INFO:
            info["partition_id"] = cur.u16()
            if cur.remaining() >= 2:
                info["source_partition_id"] = cur.u16()
        else:
            raise cur.error(f"unknown extra row info tag {tag}")
    return info


#: table_id (4 bytes when the FDE says a 6-byte post-header, else 6) and flags
_HEAD_SHORT_ID = Fields("<IH")
_HEAD = Fields("<IHH", (6, 2))
_HAS_AFTER_IMAGE = frozenset(code for code, operation in ROWS_OPERATION.items()
                             if operation == UPDATE and code not in PRE_GA_ROWS_EVENTS)


def decode_rows_event(header: EventHeader, cur: Cursor, ctx) -> RowsEvent:
    code = header.type_code
    if ctx.fde.post_header_len(code) == 6:
        table_id, flags = cur.fields(_HEAD_SHORT_ID)
    else:
        low, high, flags = cur.fields(_HEAD)
        table_id = low | high << 32
    extra: dict = {}
    if code in _V2:
        extra_len = cur.u16()
        if extra_len < 2:
            raise cur.error(f"rows event extra data length {extra_len} < 2")
        extra = _extra_info(cur.sub(extra_len - 2))
    width = cur.packed_len()
    present = cur.bitmap(width)
    present_after = None
    if code in _HAS_AFTER_IMAGE:
        present_after = cur.bitmap(width)
    rows_offset = cur.base + cur.pos
    if ctx.large_event_end is not None:  # a huge event: its rows stay in the file
        data = LazyRowData(cur.file, rows_offset, ctx.large_event_end)
        cur.rest()
        table = ctx.table_maps.get(table_id)
        return RowsEvent(header, table_id, flags, extra, width, present, present_after,
                         table, data, rows_offset)
    data = cur.rest()
    if code in _COMPRESSED:
        data = uncompress_mariadb(data, Cursor(data, 0, None, rows_offset, cur.file))
    table = ctx.table_maps.get(table_id)
    return RowsEvent(header, table_id, flags, extra, width, present, present_after,
                     table, data, rows_offset)
