"""The event envelope shared by every event family.

Strategy: an event is a frozen, slotted dataclass whose first field is the
common `EventHeader`; the remaining fields are the decoded post-header and
body, grouped in wire order. Decoders are pure functions
`decode(header, cursor, ctx) -> Event` over a cursor bounded to the body with
the checksum already removed; `ctx` is the read-only stream state (format
description and table maps) that only `reader.py` changes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

from ..constants import EVENT_TYPE_STR, event_type_name


@dataclass(frozen=True, slots=True)
class EventHeader:
    """The common header (v1: 13 bytes; v3/v4: 19 bytes plus any extra bytes)."""

    file: str
    pos: int            #: offset of the event in its file
    timestamp: int      #: seconds since the epoch, when the statement started
    type_code: int      #: the type as this server numbers it (early 5.1 codes remapped)
    server_id: int
    length: int         #: whole event, header and checksum included
    log_pos: int        #: next_position as written (0 in v1; relative in some relay logs)
    flags: int
    checksum: int | None = None  #: the stored CRC32, when the file has checksums

    @property
    def next_pos(self) -> int:
        return self.pos + self.length

    @property
    def type_name(self) -> str:
        return event_type_name(self.type_code)

    @property
    def type_str(self) -> str:
        return EVENT_TYPE_STR.get(self.type_code, f"Unknown({self.type_code})")


@dataclass(frozen=True, slots=True)
class Event:
    header: EventHeader

    @property
    def type_name(self) -> str:
        return self.header.type_name

    def fields(self) -> dict[str, Any]:
        """The decoded fields (everything but the header), in wire order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "header"}


@dataclass(frozen=True, slots=True)
class UnknownEvent(Event):
    """An event binlake has no decoder for, or could not decode: its bytes, kept."""

    raw: bytes
    reason: str


Decoder = Callable[[EventHeader, Any, Any], Event]
