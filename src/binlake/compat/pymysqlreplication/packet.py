"""`BinLogPacketWrapper`: one replication packet as an event, upstream's way.

Strategy: the packet (`00` + an event's bytes) is decoded by binlake's
decoder for its type (binlake.read.events.DECODERS) with a format
description made of what the caller passes (post-header lengths, checksum
use), then converted as a stream's events are. Only the header's six fields
are unpacked here, to build binlake's `EventHeader`; the checksum is
compared with zlib's CRC32 when `verify_checksum` is asked.
"""

from __future__ import annotations

import struct
import zlib

from binlake.compat.pymysqlreplication import _dispatch
from binlake.compat.pymysqlreplication.event import Context
from binlake.compat.pymysqlreplication.exceptions import MalformedBinLogEvent

#: v4 post-header lengths by type code - 1 (MySQL 8.0's format description),
#: when the caller gives none
_DEFAULT_POST_HEADER = bytes([56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 98, 0, 4, 26, 8,
                              0, 0, 0, 8, 8, 8, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0,
                              10, 40, 0])


#: the post-header each type needs at least (upstream's `_advance_to_payload`)
_MIN_POST_HEADER = {2: 13, 4: 8, 19: 8, 23: 8, 24: 8, 25: 8, 30: 10, 31: 10, 32: 10, 39: 10}
FORMAT_DESCRIPTION_EVENT = 15


class BinLogPacketWrapper:
    """One packet's event (`.event`, None when filtered) and header fields."""

    def __init__(self, from_packet, table_map, ctl_connection, mysql_version, use_checksum,
                 allowed_events, only_tables, ignored_tables, only_schemas, ignored_schemas,
                 freeze_schema, ignore_decode_errors, verify_checksum, optional_meta_data,
                 enable_logging, use_column_name_cache=False, post_header_lengths=None):
        data = from_packet.get_all_data() if hasattr(from_packet, "get_all_data") \
            else bytes(from_packet)
        self.packet = from_packet
        self.read_bytes = 0
        self.charset = getattr(ctl_connection, "charset", "utf8")
        (_, self.timestamp, self.event_type, self.server_id, self.event_size, self.log_pos,
         self.flags) = struct.unpack_from("<cIBIIIH", data)
        raw = data[1:]
        self.event = None
        cls = _dispatch.event_class(self.event_type)
        if cls not in allowed_events:
            return
        valid = None
        if use_checksum and verify_checksum:
            valid = zlib.crc32(raw[:-4]).to_bytes(4, "little") == raw[-4:]
        dbms = ctl_connection._get_dbms() if hasattr(ctl_connection, "_get_dbms") else "mysql"
        event = _decode(raw, self, use_checksum, mysql_version, post_header_lengths, dbms)
        ctx = Context(table_map, ctl_connection, mysql_version, dbms, use_checksum,
                      verify_checksum, ignore_decode_errors)
        self.event = _dispatch.convert(event, cls, ctx)
        self.event._is_event_valid = valid
        self.read_bytes = self.event.packet.read_bytes


def _decode(raw: bytes, wrapper, use_checksum, mysql_version, post_header_lengths, dbms):
    from binlake.errors import BinlogError
    from binlake.read.cursor import Cursor
    from binlake.read.events import DECODERS
    from binlake.read.events.base import EventHeader
    from binlake.read.events.control import FormatDescription
    from binlake.read.reader import DecodeContext
    lengths = bytes(post_header_lengths) if post_header_lengths else _DEFAULT_POST_HEADER
    version = ".".join(str(n) for n in mysql_version) + ("-MariaDB" if dbms == "mariadb" else "")
    fde = FormatDescription(4, version, 19, lengths, 1 if use_checksum else 0, None)
    end = len(raw) - (4 if use_checksum else 0)
    header = EventHeader("packet", 0, wrapper.timestamp, wrapper.event_type, wrapper.server_id,
                         wrapper.event_size, wrapper.log_pos, wrapper.flags,
                         int.from_bytes(raw[-4:], "little") if use_checksum else None)
    decoder = DECODERS.get(wrapper.event_type)
    if decoder is None:
        return None
    ctx = DecodeContext("packet", fde)
    known = _MIN_POST_HEADER.get(wrapper.event_type)
    if known is not None and post_header_lengths and 0 < wrapper.event_type <= len(lengths) \
            and lengths[wrapper.event_type - 1] < known:
        raise MalformedBinLogEvent(
            f"Event type {wrapper.event_type} declares post-header length "
            f"{lengths[wrapper.event_type - 1]}, shorter than the supported minimum {known}")
    if wrapper.event_type == FORMAT_DESCRIPTION_EVENT and (
            use_checksum or tuple(mysql_version) >= (5, 6) or mysql_version[0] >= 10):
        # the reader splits off the checksum algorithm byte before the decoder runs
        end -= 1
        ctx.pending_checksum_alg = raw[end]
    try:
        return decoder(header, Cursor(raw, 19, end, 0, "packet"), ctx)
    except BinlogError as exc:
        raise MalformedBinLogEvent(str(exc)) from None
