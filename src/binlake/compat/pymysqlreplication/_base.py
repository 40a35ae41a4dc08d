"""The base of python-mysql-replication's event classes (the packet record,
the stream's context, BinLogEvent) and the statement bytes helper: what
event.py's classes and _query.py's statement events both build on (kept
apart so that neither module imports the other back).
"""

from __future__ import annotations

import datetime
import json


class _Packet:
    """The header fields python-mysql-replication keeps on `event.packet`."""

    __slots__ = ("timestamp", "event_type", "server_id", "event_size", "log_pos", "flags",
                 "read_bytes", "raw")

    def __init__(self, header, body_size: int, raw: bytes | None = None):
        self.timestamp = header.timestamp
        self.event_type = header.type_code
        self.server_id = header.server_id
        self.event_size = header.length
        self.log_pos = header.log_pos
        self.flags = header.flags
        self.read_bytes = body_size    # the whole body was decoded
        self.raw = raw


class Context:
    """What events are made with: the stream's state, shared, read-only to events."""

    def __init__(self, table_map=None, ctl_connection=None, mysql_version=(0, 0, 0),
                 dbms="mysql", use_checksum=True, verify_checksum=False,
                 ignore_decode_errors=False, raw_event=None):
        self.table_map = {} if table_map is None else table_map
        self.ctl_connection = ctl_connection
        self.mysql_version = mysql_version
        self.dbms = dbms
        self.use_checksum = use_checksum
        self.verify_checksum = verify_checksum
        self.ignore_decode_errors = ignore_decode_errors
        self.raw_event = raw_event   # callable(header) -> bytes | None


class BinLogEvent:
    """Base of every event: the header fields, `dump()`, `to_dict()`."""

    def __init__(self, from_packet=None, event_size=0, table_map=None, ctl_connection=None,
                 **kwargs):
        # Upstream decodes here; events of this package are made by
        # `_from_binlake` (binlake decodes). Kept for subclassing code.
        self.packet = from_packet
        self.table_map = table_map
        self.event_size = event_size
        self._ctl_connection = ctl_connection
        self.mysql_version = kwargs.get("mysql_version", (0, 0, 0))
        self._processed = True
        self.complete = True
        self._is_event_valid = None

    @classmethod
    def _from_binlake(cls, event, ctx: Context, header=None):
        self = cls.__new__(cls)
        header = event.header if header is None else header
        checksum = 4 if header.checksum is not None else 0
        body = max(header.length - 19 - checksum, 0)
        raw = ctx.raw_event(header) if ctx.raw_event is not None else None
        self.packet = _Packet(header, body, raw)
        self.table_map = ctx.table_map
        self.event_type = header.type_code
        self.timestamp = header.timestamp
        self.event_size = body
        self._post_header_lengths = None
        self._ctl_connection = ctx.ctl_connection
        self.mysql_version = ctx.mysql_version
        self._ignore_decode_errors = ctx.ignore_decode_errors
        self._verify_checksum = ctx.verify_checksum
        # binlake checks every checksum as it reads (a mismatch is an error)
        self._is_event_valid = True if ctx.verify_checksum else None
        self._processed = True
        self.complete = True
        self.dbms = ctx.dbms
        self._binlake = event
        self._fill(event, ctx)
        return self

    def _fill(self, event, ctx: Context) -> None:
        """Set the attributes of this event type from binlake's event."""

    @property
    def formatted_timestamp(self) -> str:
        return datetime.datetime.fromtimestamp(self.timestamp, datetime.timezone.utc) \
            .replace(tzinfo=None).isoformat()

    def dump(self):
        print(f"=== {self.__class__.__name__} ===")
        print(f"Date: {self.formatted_timestamp}")
        print(f"Log position: {self.packet.log_pos}")
        print(f"Event size: {self.event_size}")
        print(f"Read bytes: {self.packet.read_bytes}")
        self._dump()
        print()

    def to_dict(self) -> dict:
        return {"timestamp": self.formatted_timestamp, "log_pos": self.packet.log_pos,
                "event_size": self.event_size, "read_bytes": self.packet.read_bytes}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def _dump(self):
        """Core data dumped for the event"""


def _statement_bytes(text: str, raw: bytes | None) -> bytes:
    """A statement's bytes as the server sent them. binlake gives statements
    as UTF-8 text when they are UTF-8, else Latin-1 (which keeps every
    byte): the raw event (when still at hand) tells the two apart."""
    as_utf8 = text.encode("utf-8")
    try:
        as_latin1 = text.encode("latin-1")
    except UnicodeEncodeError:
        return as_utf8
    if as_latin1 == as_utf8:
        return as_utf8                       # ASCII
    try:
        as_latin1.decode("utf-8")
    except UnicodeDecodeError:
        pass                                  # binlake's Latin-1 case is possible
    else:
        return as_utf8                       # valid UTF-8 bytes would have read as UTF-8
    if raw is not None and _body_without_checksum(raw).endswith(as_utf8):
        return as_utf8
    return as_latin1


def _body_without_checksum(raw: bytes) -> bytes:
    return raw[:-4] if len(raw) > 23 else raw
