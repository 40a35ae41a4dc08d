"""Transaction identity events: MySQL GTID, ANONYMOUS_GTID, GTID_TAGGED,
PREVIOUS_GTIDS, TRANSACTION_CONTEXT, VIEW_CHANGE, XA_PREPARE; MariaDB GTID,
GTID_LIST, BINLOG_CHECKPOINT and START_ENCRYPTION.

GTID_TAGGED (MySQL 8.4+) uses the MySQL serialization library: varlen
integers whose first byte's trailing ones count the extra bytes, zig-zag for
signed values, fields as (id, value) pairs after a (size, last
non-ignorable id) envelope.
"""

from __future__ import annotations

import uuid

from binlake.constants import (FL_COMMIT_ALTER_E1, FL_COMPLETED_XA, FL_EXTRA_MULTI_ENGINE_E1,
                         FL_EXTRA_THREAD_ID, FL_GROUP_COMMIT_ID, FL_PREPARED_XA,
                         FL_ROLLBACK_ALTER_E1, EventType)
from binlake.read.cursor import Cursor, Fields, text
from binlake.read.events.base import Event, EventHeader, frozen_dataclass


@frozen_dataclass
class GtidEvent(Event):
    """MySQL GTID_LOG_EVENT, ANONYMOUS_GTID_LOG_EVENT and GTID_TAGGED_LOG_EVENT."""

    flags: int
    sid: str
    gno: int
    tag: str | None = None
    last_committed: int | None = None
    sequence_number: int | None = None
    immediate_commit_timestamp: int | None = None  #: microseconds since the epoch
    original_commit_timestamp: int | None = None
    transaction_length: int | None = None
    immediate_server_version: int | None = None
    original_server_version: int | None = None
    commit_group_ticket: int | None = None

    @property
    def gtid(self) -> str | None:
        if self.header.type_code == EventType.ANONYMOUS_GTID_LOG_EVENT:
            return None
        return f"{self.sid}:{self.tag}:{self.gno}" if self.tag else f"{self.sid}:{self.gno}"


@frozen_dataclass
class PreviousGtidsEvent(Event):
    #: [(uuid, tag or None, [(start, end_exclusive), ...]), ...]
    sids: list

    @property
    def gtid_set(self) -> str:
        parts = []
        for sid, tag, intervals in self.sids:
            ranges = ":".join(f"{a}" if b == a + 1 else f"{a}-{b - 1}" for a, b in intervals)
            parts.append(f"{sid}{':' + tag if tag else ''}:{ranges}")
        return ",".join(parts)


@frozen_dataclass
class TransactionContextEvent(Event):
    server_uuid: str
    thread_id: int
    gtid_specified: bool
    snapshot_version: bytes
    write_set: list
    read_set: list


@frozen_dataclass
class ViewChangeEvent(Event):
    view_id: str
    seq_number: int
    certification_info: dict


@frozen_dataclass
class XaPrepareEvent(Event):
    one_phase: bool
    format_id: int
    gtrid: bytes
    bqual: bytes

    @property
    def xid(self) -> str:
        return f"X'{self.gtrid.hex()}',X'{self.bqual.hex()}',{self.format_id}"


@frozen_dataclass
class MariadbGtidEvent(Event):
    seq_no: int
    domain_id: int
    flags2: int
    commit_id: int | None = None
    xa_format_id: int | None = None
    xa_gtrid: bytes | None = None
    xa_bqual: bytes | None = None
    flags_extra: int = 0
    extra_engines: int | None = None
    sa_seq_no: int | None = None
    thread_id: int | None = None

    @property
    def gtid(self) -> str:
        return f"{self.domain_id}-{self.header.server_id}-{self.seq_no}"


@frozen_dataclass
class MariadbGtidListEvent(Event):
    flags: int
    #: [(domain_id, server_id, seq_no), ...]
    gtids: list

    @property
    def gtid_list(self) -> str:
        return ",".join(f"{d}-{s}-{n}" for d, s, n in self.gtids)


@frozen_dataclass
class BinlogCheckpointEvent(Event):
    binlog_file: str


@frozen_dataclass
class StartEncryptionEvent(Event):
    scheme: int
    key_version: int
    nonce: bytes


def _uuid(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


def decode_gtid(header: EventHeader, cur: Cursor, ctx) -> GtidEvent:
    flags, sid, gno = cur.u8(), _uuid(cur.bytes(16)), cur.i64()
    fields: dict = {}
    if not cur.at_end() and cur.buf[cur.pos] == 2:  # logical clock typecode (5.7.5+)
        cur.u8()
        fields["last_committed"], fields["sequence_number"] = cur.i64(), cur.i64()
        if cur.remaining() >= 7:
            immediate = cur.uint(7)
            if immediate & (1 << 55):
                immediate &= ~(1 << 55)
                fields["original_commit_timestamp"] = cur.uint(7)
            else:
                fields["original_commit_timestamp"] = immediate
            fields["immediate_commit_timestamp"] = immediate
        if not cur.at_end():
            fields["transaction_length"] = cur.packed_len()
        if cur.remaining() >= 4:
            immediate_version = cur.u32()
            if immediate_version & (1 << 31):
                immediate_version &= ~(1 << 31)
                fields["original_server_version"] = cur.u32()
            else:
                fields["original_server_version"] = immediate_version
            fields["immediate_server_version"] = immediate_version
        if cur.remaining() >= 8:
            fields["commit_group_ticket"] = cur.u64()
    return GtidEvent(header, flags, sid, gno, **fields)


def read_varlen_uint(cur: Cursor) -> int:
    """MySQL serialization library unsigned varlen (libs/mysql/serialization)."""
    first = cur.buf[cur.pos] if not cur.at_end() else cur.u8()
    extra = 0
    while extra < 8 and first & (1 << extra):
        extra += 1
    if extra == 8:
        cur.u8()
        return cur.u64()
    return cur.uint(extra + 1) >> (extra + 1)


def read_varlen_int(cur: Cursor) -> int:
    value = read_varlen_uint(cur)
    return -(value >> 1) - 1 if value & 1 else value >> 1


_TAGGED_FIELDS = {
    0: ("flags", read_varlen_uint), 2: ("gno", read_varlen_int),
    4: ("last_committed", read_varlen_int), 5: ("sequence_number", read_varlen_int),
    6: ("immediate_commit_timestamp", read_varlen_uint),
    7: ("original_commit_timestamp", read_varlen_uint),
    8: ("transaction_length", read_varlen_uint),
    9: ("immediate_server_version", read_varlen_uint),
    10: ("original_server_version", read_varlen_uint),
    11: ("commit_group_ticket", read_varlen_uint),
}


def decode_gtid_tagged(header: EventHeader, cur: Cursor, ctx) -> GtidEvent:
    start = cur.pos
    version = cur.u8()
    if version != 2:
        raise cur.error(f"unsupported serialization format version {version}")
    size = read_varlen_uint(cur)
    last_non_ignorable = read_varlen_uint(cur)
    body = cur.sub(size - (cur.pos - start))
    values: dict = {"flags": 0, "sid": "", "gno": 0}
    while not body.at_end():
        field_id = read_varlen_uint(body)
        if field_id == 1:
            sid = [read_varlen_uint(body) for _ in range(16)]
            if max(sid) > 0xFF:
                raise body.error(f"UUID byte {max(sid)} is not a byte")
            values["sid"] = _uuid(bytes(sid))
        elif field_id == 3:
            values["tag"] = text(body.bytes(read_varlen_uint(body)))
        elif field_id in _TAGGED_FIELDS:
            name, read = _TAGGED_FIELDS[field_id]
            values[name] = read(body)
        elif field_id <= last_non_ignorable:
            raise body.error(f"unknown non-ignorable field {field_id}")
        else:
            body.rest()  # ignorable fields of a newer server come last
    values.setdefault("original_commit_timestamp", values.get("immediate_commit_timestamp"))
    values.setdefault("original_server_version", values.get("immediate_server_version"))
    cur.rest()  # the server may pad the event past the message
    return GtidEvent(header, **values)


def decode_previous_gtids(header: EventHeader, cur: Cursor, ctx) -> PreviousGtidsEvent:
    word = cur.u64()
    tagged = word >> 56 != 0
    count = (word >> 8) & ((1 << 48) - 1) if tagged else word & ((1 << 56) - 1)
    sids = []
    for _ in range(count):
        sid = _uuid(cur.bytes(16))
        tag = None
        if tagged:
            tag = text(cur.bytes(read_varlen_uint(cur))) or None
        intervals = [(cur.i64(), cur.i64()) for _ in range(cur.u64())]
        sids.append((sid, tag, intervals))
    return PreviousGtidsEvent(header, sids)


def decode_transaction_context(header, cur: Cursor, ctx) -> TransactionContextEvent:
    uuid_len, thread_id, gtid_specified = cur.u8(), cur.u32(), bool(cur.u8())
    snapshot_len, write_count, read_count = cur.u32(), cur.u32(), cur.u32()
    server_uuid = text(cur.bytes(uuid_len))
    snapshot = cur.bytes(snapshot_len)
    write_set = [cur.bytes(cur.u16()) for _ in range(write_count)]
    read_set = [cur.bytes(cur.u16()) for _ in range(read_count)]
    return TransactionContextEvent(header, server_uuid, thread_id, gtid_specified,
                                   snapshot, write_set, read_set)


def decode_view_change(header, cur: Cursor, ctx) -> ViewChangeEvent:
    view_id = text(cur.fixed_string(40))
    seq_number = cur.u64()
    count = cur.u32()
    info = {}
    for _ in range(count):
        key = text(cur.bytes(cur.u16()))
        info[key] = cur.bytes(cur.u32())
    return ViewChangeEvent(header, view_id, seq_number, info)


def decode_xa_prepare(header, cur: Cursor, ctx) -> XaPrepareEvent:
    one_phase, format_id = bool(cur.u8()), cur.u32()
    gtrid_len, bqual_len = cur.u32(), cur.u32()
    gtrid, bqual = cur.bytes(gtrid_len), cur.bytes(bqual_len)
    cur.rest()  # XIDDATASIZE buffer may be written in full
    return XaPrepareEvent(header, one_phase, format_id, gtrid, bqual)


_MARIADB_GTID_HEAD = Fields("<QIB")  # seq_no, domain_id, flags2


def decode_mariadb_gtid(header, cur: Cursor, ctx) -> MariadbGtidEvent:
    seq_no, domain_id, flags2 = cur.fields(_MARIADB_GTID_HEAD)
    commit_id = xa_format_id = xa_gtrid = xa_bqual = None
    extra_engines = sa_seq_no = thread_id = None
    flags_extra = 0
    if flags2 & FL_GROUP_COMMIT_ID:
        commit_id = cur.u64()
    if flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA):
        xa_format_id = cur.u32()
        gtrid_len, bqual_len = cur.u8(), cur.u8()
        xa_gtrid, xa_bqual = cur.bytes(gtrid_len), cur.bytes(bqual_len)
    if cur.pos < cur.end:
        # Without the optional parts the post-header is zero padding up to 19 bytes.
        flags_extra = cur.u8()
        if flags_extra & FL_EXTRA_MULTI_ENGINE_E1:
            extra_engines = cur.u8()
        if flags_extra & (FL_COMMIT_ALTER_E1 | FL_ROLLBACK_ALTER_E1):
            sa_seq_no = cur.u64()
        if flags_extra & FL_EXTRA_THREAD_ID:
            thread_id = cur.u32()
        cur.rest()
    return MariadbGtidEvent(header, seq_no, domain_id, flags2, commit_id, xa_format_id,
                            xa_gtrid, xa_bqual, flags_extra, extra_engines, sa_seq_no,
                            thread_id)


def decode_mariadb_gtid_list(header, cur: Cursor, ctx) -> MariadbGtidListEvent:
    word = cur.u32()
    count, flags = word & 0x0FFFFFFF, word >> 28
    gtids = [(cur.u32(), cur.u32(), cur.u64()) for _ in range(count)]
    cur.rest()  # MariaDB pads an empty list with two zero bytes
    return MariadbGtidListEvent(header, flags, gtids)


def decode_binlog_checkpoint(header, cur: Cursor, ctx) -> BinlogCheckpointEvent:
    length = cur.u32()
    return BinlogCheckpointEvent(header, text(cur.bytes(length)))


def decode_start_encryption(header, cur: Cursor, ctx) -> StartEncryptionEvent:
    return StartEncryptionEvent(header, cur.u8(), cur.u32(), cur.bytes(12))
