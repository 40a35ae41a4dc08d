"""The event envelope shared by every event family.

Strategy: an event is a frozen, slotted dataclass whose first field is the
common `EventHeader`; the remaining fields are the decoded post-header and
body, grouped in wire order. Decoders are pure functions
`decode(header, cursor, ctx) -> Event` over a cursor bounded to the body with
the checksum already removed; `ctx` is the read-only stream state (format
description and table maps) that only `read/reader.py` changes.

Construction is on the hot path (a million small events make a million
headers and events), so the classes are made with `frozen_dataclass`: the
same frozen, slotted dataclass, with an `__init__` that fills the slots at
the speed of a mutable class (see there).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, Callable

from binlake.constants import EVENT_TYPE_STR, event_type_name


def frozen_dataclass(cls):
    """`@dataclass(frozen=True, slots=True)`, with a faster `__init__`.

    A frozen dataclass's `__init__` sets each field through
    `object.__setattr__` (a call with a type lookup per field): 0.7 µs for
    a 9-field header, as much as decoding a small event. This one switches
    the instance for the duration of `__init__` to a layout-identical
    subclass that has the ordinary `__setattr__` (so each field is one slot
    store), then back: 3x faster. Everything else is the dataclass's own:
    fields, repr, eq, hash, `replace()`, and FrozenInstanceError after
    construction. A subclass of the class is initialised the dataclass way.
    """
    cls = dataclass(frozen=True, slots=True)(cls)
    frozen_init = cls.__init__
    builder = type(cls.__name__, (cls,), {
        "__slots__": (), "__module__": cls.__module__,
        # both, as they share one type slot: either one alone keeps the slow path
        "__setattr__": object.__setattr__, "__delattr__": object.__delattr__})
    env = {"_cls": cls, "_builder": builder, "_frozen_init": frozen_init,
           "_set": object.__setattr__, "_MISSING": dataclasses.MISSING}
    params, stores, factories = [], [], []
    for f in fields(cls):
        assert f.init and not f.kw_only, f"{cls.__name__}.{f.name}: not supported here"
        if f.default is not dataclasses.MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            factories.append(f"    if {f.name} is _MISSING: {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
        stores.append(f"        self.{f.name} = {f.name}")
    names = ", ".join(f.name for f in fields(cls))
    source = "\n".join([
        f"def __init__(self, {', '.join(params)}):",
        *factories,
        "    if self.__class__ is _cls:  # (a field may be called `type`)",
        "        _set(self, '__class__', _builder)",
        *stores,
        "        self.__class__ = _cls",
        "    else:",
        f"        _frozen_init(self, {names})"])
    exec(source, env)  # noqa: S102 - generated from the dataclass's own fields, like dataclass does
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = frozen_init.__doc__
    cls.__init__ = init
    return cls


@frozen_dataclass
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


@frozen_dataclass
class Event:
    header: EventHeader

    @property
    def type_name(self) -> str:
        return self.header.type_name

    def fields(self) -> dict[str, Any]:
        """The decoded fields (everything but the header), in wire order."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "header"}


@frozen_dataclass
class UnknownEvent(Event):
    """An event binlake has no decoder for, or could not decode: its bytes, kept."""

    raw: bytes
    reason: str


Decoder = Callable[[EventHeader, Any, Any], Event]
