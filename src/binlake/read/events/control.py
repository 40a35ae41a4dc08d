"""Events that describe or steer the stream: start/format description, rotate,
stop, session variables (intvar, rand, user var), commit (xid), incidents,
heartbeats, ignorable and slave events.

Layouts: MySQL `libbinlog_events/src/control_events.cpp`,
`statement_events.cpp`; MariaDB `sql/log_event.cc`.
"""

from __future__ import annotations

import struct

from binlake.constants import LOG_EVENT_MINIMAL_HEADER_LEN, ST_SERVER_VER_LEN, EventType
from binlake.read.cursor import Cursor, text
from binlake.read.decimals import decode_decimal
from binlake.read.events.base import Event, EventHeader, frozen_dataclass


@frozen_dataclass
class FormatDescription:
    """What a reader needs to frame the events that follow a start/FDE event."""

    binlog_version: int
    server_version: str
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int | None         #: None: the server predates checksums
    event_permutation: tuple | None  #: early-5.1 type numbering (wl2325), else None

    def post_header_len(self, type_code: int) -> int:
        lens = self.post_header_lengths
        return lens[type_code - 1] if 0 < type_code <= len(lens) else 0

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()


@frozen_dataclass
class StartEventV3(Event):
    binlog_version: int
    server_version: str
    create_timestamp: int


@frozen_dataclass
class FormatDescriptionEvent(Event):
    binlog_version: int
    server_version: str
    create_timestamp: int
    header_length: int
    post_header_lengths: bytes
    checksum_alg: int | None


@frozen_dataclass
class StopEvent(Event):
    pass


@frozen_dataclass
class RotateEvent(Event):
    position: int
    next_file: str


@frozen_dataclass
class IntvarEvent(Event):
    #: 1 LAST_INSERT_ID_EVENT, 2 INSERT_ID_EVENT
    kind: int
    value: int

    @property
    def kind_name(self) -> str:
        return {1: "LAST_INSERT_ID", 2: "INSERT_ID"}.get(self.kind, "INVALID_INT")


@frozen_dataclass
class RandEvent(Event):
    seed1: int
    seed2: int


@frozen_dataclass
class UserVarEvent(Event):
    name: str
    is_null: bool
    #: Item_result: 0 STRING_RESULT, 1 REAL_RESULT, 2 INT_RESULT, 4 DECIMAL_RESULT
    value_type: int | None = None
    charset: int | None = None
    value: object = None           #: bytes, float, int or Decimal
    is_unsigned: bool = False


@frozen_dataclass
class XidEvent(Event):
    xid: int


@frozen_dataclass
class IncidentEvent(Event):
    incident: int
    message: str


@frozen_dataclass
class HeartbeatEvent(Event):
    log_file: str
    log_position: int | None = None


@frozen_dataclass
class IgnorableEvent(Event):
    raw: bytes


@frozen_dataclass
class SlaveEvent(Event):
    master_pos: int
    master_port: int
    master_host: str
    master_log: str


def server_version_tuple(version: str) -> tuple[int, int, int]:
    parts = []
    for piece in version.split("-")[0].split(".")[:3]:
        digits = "".join(ch for ch in piece if "0" <= ch <= "9") or "0"  # ASCII, as strtoul
        parts.append(int(digits))
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)  # type: ignore[return-value]


def has_checksum_field(server_version: str) -> bool:
    """Whether this server wrote the checksum-algorithm byte into its FDE.

    MySQL added it in 5.6.1, MariaDB in 5.3.0 (`checksum_version_split`).
    """
    version = server_version_tuple(server_version)
    if "mariadb" in server_version.lower():
        return version >= (5, 3, 0)
    return version >= (5, 6, 1)


def decode_start_v3(header: EventHeader, cur: Cursor, ctx) -> StartEventV3:
    binlog_version = cur.u16()
    server_version = text(cur.fixed_string(ST_SERVER_VER_LEN))
    created = cur.u32()
    return StartEventV3(header, binlog_version, server_version, created)


def decode_format_description(header: EventHeader, cur: Cursor, ctx) -> FormatDescriptionEvent:
    """The reader has already split off the checksum-algorithm byte (see reader)."""
    binlog_version = cur.u16()
    server_version = text(cur.fixed_string(ST_SERVER_VER_LEN))
    created = cur.u32()
    header_length = cur.u8()
    if header_length < LOG_EVENT_MINIMAL_HEADER_LEN:
        # every event would then take no bytes: reading on would never end
        raise cur.error(f"event header length {header_length} is shorter than "
                        f"{LOG_EVENT_MINIMAL_HEADER_LEN} bytes")
    post_header = cur.rest()
    return FormatDescriptionEvent(header, binlog_version, server_version, created,
                                  header_length, post_header, ctx.pending_checksum_alg)


def decode_stop(header, cur: Cursor, ctx) -> StopEvent:
    cur.rest()  # some servers pad the stop event; nothing in it is meaningful
    return StopEvent(header)


def decode_rotate(header, cur: Cursor, ctx) -> RotateEvent:
    position = cur.u64() if ctx.fde.post_header_len(EventType.ROTATE_EVENT) >= 8 else 4
    return RotateEvent(header, position, text(cur.rest()))


def decode_intvar(header, cur: Cursor, ctx) -> IntvarEvent:
    kind = cur.u8()
    return IntvarEvent(header, kind, cur.u64())


def decode_rand(header, cur: Cursor, ctx) -> RandEvent:
    return RandEvent(header, cur.u64(), cur.u64())


STRING_RESULT, REAL_RESULT, INT_RESULT, ROW_RESULT, DECIMAL_RESULT = range(5)


def decode_user_var(header, cur: Cursor, ctx) -> UserVarEvent:
    name = text(cur.bytes(cur.u32()))
    if cur.u8():
        return UserVarEvent(header, name, True)
    value_type = cur.u8()
    charset = cur.u32()
    raw_value = cur.bytes(cur.u32())
    is_unsigned = bool(cur.u8() & 1) if not cur.at_end() else False
    value: object = raw_value
    try:
        if value_type == REAL_RESULT:
            value = struct.unpack_from("<d", raw_value)[0]
        elif value_type == INT_RESULT:
            value = int.from_bytes(raw_value[:8], "little", signed=not is_unsigned)
        elif value_type == DECIMAL_RESULT:
            precision, scale = raw_value[0], raw_value[1]
            value = decode_decimal(raw_value, 2, precision, scale)[0]
    except (IndexError, ValueError, struct.error) as exc:
        raise cur.error(f"user variable @{name}: a value of {len(raw_value)} bytes that is "
                        f"not one of type {value_type}: {exc}") from None
    return UserVarEvent(header, name, False, value_type, charset, value, is_unsigned)


def decode_xid(header, cur: Cursor, ctx) -> XidEvent:
    return XidEvent(header, cur.u64())


def decode_incident(header, cur: Cursor, ctx) -> IncidentEvent:
    incident = cur.u16()
    message = text(cur.lstring1()) if not cur.at_end() else ""
    return IncidentEvent(header, incident, message)


def decode_heartbeat(header, cur: Cursor, ctx) -> HeartbeatEvent:
    return HeartbeatEvent(header, text(cur.rest()))


def decode_heartbeat_v2(header, cur: Cursor, ctx) -> HeartbeatEvent:
    """TLV fields: 0 end mark, 1 log filename, 2 log position (packed int)."""
    log_file, position = "", None
    while not cur.at_end():
        field = cur.packed_len()
        if field == 0:
            break
        value = cur.sub(cur.packed_len())
        if field == 1:
            log_file = text(value.rest())
        elif field == 2:
            position = value.packed_len()
    return HeartbeatEvent(header, log_file, position)


def decode_ignorable(header, cur: Cursor, ctx) -> IgnorableEvent:
    return IgnorableEvent(header, cur.rest())


def decode_slave(header, cur: Cursor, ctx) -> SlaveEvent:
    master_pos = cur.u64()
    master_port = cur.u16()
    host = text(cur.cstring())
    return SlaveEvent(header, master_pos, master_port, host, text(cur.rest().rstrip(b"\0")))

