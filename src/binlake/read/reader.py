"""Framing and stream state: the only module that changes what later events mean.

Strategy:
1. Magic, then version detection from the first event (seed 000 and the
   server's `Format_description_log_event`): START_EVENT_V3 shorter than 75
   bytes -> v1 (13-byte headers); START_EVENT_V3 of 75+ bytes, or a first
   event that is neither a start event nor an FDE -> v3; an FDE -> v4, whose
   header length and post-header lengths then frame everything after it.
   Early 5.1/5.2 trees (wl2325) numbered events differently: their codes are
   remapped by server version as the server does.
2. Each event is cut to `length` bytes; with CRC32 on, the last 4 bytes are
   checked and removed before any decoder sees the body.
3. State changes happen here and nowhere else: a new FDE (relay logs hold
   several), a new table map (completed by the schema history, which follows
   the DDL of the QUERY events passed), the unpacking of a TRANSACTION_PAYLOAD.

Rule: a problem raises a BinlogError naming file and offset only *after*
every good event before it has been yielded.
"""

from __future__ import annotations

import os
import re
import struct
import sys
import zlib
from collections import Counter, _count_elements
from itertools import chain
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from binlake import core
from binlake.constants import (BINLOG_CHECKSUM_ALG_DESC_LEN, BINLOG_CHECKSUM_LEN, BINLOG_MAGIC,
                        ENCRYPTED_BINLOG_MAGIC, EVENT_LEN_OFFSET, EVENT_TYPE_OFFSET,
                        LOG_EVENT_MINIMAL_HEADER_LEN, OLD_HEADER_LEN, START_V3_HEADER_LEN,
                        WL2325_EVENT_PERMUTATION, ChecksumAlg, EventType as E, LogEventFlag,
                        event_type_name)
from binlake.read.cursor import Cursor, text
from binlake.errors import (BinlogError, ChecksumMismatch, CorruptEvent, EncryptedBinlog,
                     NotABinlog, PartialEvent, TruncatedEvent)
from binlake.read.events import (DECODERS, Event, EventHeader, FormatDescription, MariadbGtidEvent,
                     QueryEvent, RowsEvent, RowsQueryEvent, TableMapEvent, TransactionPayloadEvent,
                     UnknownEvent, XidEvent)
from binlake.read.events.control import has_checksum_field
from binlake.read.gzipped import GzipBinlog, is_gzip

_HEADER = struct.Struct("<IBIIIH")
_HEADER_V1 = struct.Struct("<IBII")

#: Post-header lengths of binlog v1 and v3, which carry no FDE to say them
#: (Format_description_log_event's constructor for binlog_ver 1 and 3).
_OLD_POST_HEADER = {E.START_EVENT_V3: START_V3_HEADER_LEN, E.QUERY_EVENT: 11,
                    E.LOAD_EVENT: 18, E.CREATE_FILE_EVENT: 4, E.APPEND_BLOCK_EVENT: 4,
                    E.EXEC_LOAD_EVENT: 4, E.DELETE_FILE_EVENT: 4, E.NEW_LOAD_EVENT: 18}


def old_format(binlog_version: int, server_version: str = "") -> FormatDescription:
    lengths = bytearray(E.NEW_LOAD_EVENT)
    for code, length in _OLD_POST_HEADER.items():
        lengths[code - 1] = length
    if binlog_version == 3:
        lengths[E.ROTATE_EVENT - 1] = 8
    header = OLD_HEADER_LEN if binlog_version == 1 else LOG_EVENT_MINIMAL_HEADER_LEN
    return FormatDescription(binlog_version, server_version, header, bytes(lengths), None, None)


_WL2325 = re.compile(r"5\.1\.[1-5]-a_drop5|5\.1\.4-a_drop6|5\.2\.[0-2]-a_drop6")


def _permutation(server_version: str, post_header: bytes):
    """The wl2325 trees' numbering, and their post-header lengths re-ordered."""
    if not _WL2325.match(server_version):
        return None, post_header
    permuted = bytearray(len(post_header))
    for old_code in range(1, min(len(post_header) + 1, len(WL2325_EVENT_PERMUTATION))):
        new = WL2325_EVENT_PERMUTATION[old_code] - 1
        if 0 <= new < len(permuted):  # a short table has no room for the later codes
            permuted[new] = post_header[old_code - 1]
    return WL2325_EVENT_PERMUTATION, bytes(permuted)


@dataclass
class DecodeContext:
    """What decoders may read (never write): the stream state."""

    file: str
    fde: FormatDescription
    table_maps: dict = field(default_factory=dict)
    pending_checksum_alg: int | None = None
    #: set while decoding a huge rows event whose row images stay in the file
    large_event_end: int | None = None
    #: caches of derived data keyed by a table map's (server is MariaDB, bytes
    #: after its post-header), shared by equal maps
    table_caches: dict = field(default_factory=dict)

    def shared_cache(self, signature: tuple) -> dict:
        cache = self.table_caches.get(signature)
        if cache is None:
            if len(self.table_caches) > 4096:  # bounded: schema churn must not grow it
                self.table_caches.clear()
            cache = self.table_caches[signature] = {}
        return cache


@dataclass
class ReadStats:
    """What a read found: counts by type name, events kept undecoded, warnings."""

    events: Counter = field(default_factory=Counter)
    undecoded: Counter = field(default_factory=Counter)
    warnings: list = field(default_factory=list)


# -- sources -------------------------------------------------------------------

class _FileSource:
    """A regular file read through a window of a few MB.

    Not mmap: pages of a mapped file count in the process's resident memory
    until unmapped, so reading a 1 GB binlog would look like holding it all.
    A window keeps memory at (window + largest event) and costs one read per
    window, not per event."""

    WINDOW = 4 << 20

    def __init__(self, path: str):
        self.path = path
        self._file = open(path, "rb", buffering=0)
        self.size = os.fstat(self._file.fileno()).st_size
        self._buf = b""
        self._start = 0

    def read_at(self, pos: int, n: int) -> bytes:
        lo = pos - self._start
        if lo < 0 or lo + n > len(self._buf):
            self._buf = os.pread(self._file.fileno(), max(n, self.WINDOW), pos)
            self._start, lo = pos, 0
        return self._buf[lo:lo + n]

    def close(self) -> None:
        self._buf = b""
        self._file.close()


class _StreamSource:
    """A pipe (standard input): a forward-only window over what was read."""

    def __init__(self, stream, name: str = "-"):
        self.path = name
        self._stream = stream
        self._buf = bytearray()
        self._start = 0       # file offset of _buf[0]
        self.size = None

    def read_at(self, pos: int, n: int) -> bytes:
        if pos > self._start + (1 << 20):  # drop what the reader has moved past
            drop = pos - self._start
            del self._buf[:drop]
            self._start = pos
        while self._start + len(self._buf) < pos + n:
            chunk = self._stream.read(max(1 << 16, pos + n - self._start - len(self._buf)))
            if not chunk:
                break
            self._buf += chunk
        lo = pos - self._start
        return bytes(self._buf[lo:lo + n])

    def close(self) -> None:
        if self._stream is not sys.stdin.buffer:
            self._stream.close()


class _SparseStreamSource(_StreamSource):
    """A stream whose bytes may continue past a gap (a live server's binlog
    sent from a requested position: binlake.live.source.LiveFile says where)."""

    def next_event_at(self, pos: int) -> int:
        if pos < self._start + len(self._buf):
            return pos
        at = self._stream.next_event_at(pos)
        if at > pos:
            self._buf = bytearray()
            self._start = at
        return at


def open_source(path):
    """Standard input, a gzip-compressed binlog (read as a stream), a file,
    or a named binary stream (a live server's binlog)."""
    if hasattr(path, "read"):
        if hasattr(path, "next_event_at"):
            return _SparseStreamSource(path, path.name)
        return _StreamSource(path, getattr(path, "name", "-"))
    if path == "-":
        return _StreamSource(sys.stdin.buffer)
    if is_gzip(path):
        return _StreamSource(GzipBinlog(path), path)
    return _FileSource(path)


# -- the reader ------------------------------------------------------------------

class BinlogReader:
    """Iterate the events of one or more binlog files, in order, as one stream.

    `verify_checksums`: check CRC32 where the file has it. `force`: on a
    checksum mismatch or an event that fails to decode, keep going (the event
    is kept as UnknownEvent and the problem recorded in `stats.warnings`)
    instead of stopping with the error, like mysqlbinlog --force-read.

    `schema`: the schema history (binlake.schema.history) the reader follows through
    the DDL it passes and uses to complete table maps that lack column names,
    signedness, charsets, ENUM/SET members, the primary key or MariaDB's hires
    precision (`Schema.annotate`). Default: a new, empty history; a
    `Schema`, or a file `load_schema` reads, seeds it; False: table maps
    exactly as the binlog wrote them.
    """

    def __init__(self, paths: str | os.PathLike | Iterable, *, verify_checksums: bool = True,
                 force: bool = False, start_position: int | None = None,
                 unpack_payloads: bool = True, schema=None):
        if isinstance(paths, (str, os.PathLike)) or hasattr(paths, "read"):
            paths = [paths]
        # Files by path, or binary streams with a `name` (a live server's
        # binlogs, binlake.live.source); a lazy iterable (a LiveSource) stays lazy.
        self.paths = ([p if hasattr(p, "read") else os.fspath(p) for p in paths]
                      if isinstance(paths, (list, tuple)) else paths)
        self.verify_checksums = verify_checksums
        self.force = force
        self.start_position = start_position
        self.unpack_payloads = unpack_payloads
        self.stats = ReadStats()
        self.files: list[FileInfo] = []
        self._pending_alg: int | None = None
        self._table_caches: dict = {}
        self.schema = _history(schema)

    def __iter__(self) -> Iterator[Event]:
        # each file's generator handed to the caller through `chain`: no
        # generator frame of ours between every event and the caller
        return chain.from_iterable(self._file_events(index, path)
                                   for index, path in enumerate(self.paths))

    def _file_events(self, index: int, path) -> Iterator[Event]:
        start = self.start_position if index == 0 else None
        native = core.native()
        if native is not None:
            return self._native_events(native, path, start)
        return self._read_file(path, start)

    # One file --------------------------------------------------------------
    def _read_file(self, path, start_position: int | None) -> Iterator[Event]:
        source = open_source(path)
        info = FileInfo(source.path)
        self.files.append(info)
        try:
            yield from self._events(source, info, start_position)
        finally:
            source.close()

    def _events(self, source, info: "FileInfo", start_position: int | None) -> Iterator[Event]:
        path = source.path
        magic = source.read_at(0, 4)
        if magic == ENCRYPTED_BINLOG_MAGIC:
            info.encrypted = True
            raise EncryptedBinlog(path, 0, "MySQL encrypted binlog (magic fd 62 69 6e): "
                                  "decrypt it with the server's keyring first")
        if magic != BINLOG_MAGIC:
            raise NotABinlog(path, 0, f"bad magic number {magic.hex(' ') or '(empty file)'}")
        ctx = DecodeContext(path, self._detect_format(source, info), table_caches=self._table_caches)
        pos = 4
        locate = getattr(source, "next_event_at", None)
        while True:
            if locate is not None:
                pos = locate(pos)
            head = source.read_at(pos, LOG_EVENT_MINIMAL_HEADER_LEN)
            if not head:
                info.end_pos = pos
                return
            fde = ctx.fde
            header_len = fde.header_length
            min_len = OLD_HEADER_LEN if fde.binlog_version == 1 else LOG_EVENT_MINIMAL_HEADER_LEN
            if len(head) < min_len:
                self._truncated(info, path, pos, f"event header cut short: {len(head)} of {min_len} bytes")
            if fde.binlog_version == 1:
                timestamp, raw_type, server_id, length = _HEADER_V1.unpack_from(head)
                log_pos, flags = 0, 0
            else:
                timestamp, raw_type, server_id, length, log_pos, flags = _HEADER.unpack_from(head)
            is_description = raw_type in (E.FORMAT_DESCRIPTION_EVENT, E.START_EVENT_V3)
            if is_description:  # its own header is always the minimal one
                header_len = min_len
            if length < header_len:
                raise CorruptEvent(path, pos, f"event length {length} is shorter than its "
                                   f"{header_len}-byte header")
            if (length > LARGE_EVENT_BYTES and raw_type in _LAZY_ROWS_TYPES
                    and isinstance(source, _FileSource) and fde.event_permutation is None):
                if pos + length > source.size:
                    self._truncated(info, path, pos, f"event of {length} bytes cut short at "
                                    f"{source.size - pos} bytes (type {raw_type})")
                yield self._large_rows_event(source, ctx, info, pos, length, header_len,
                                             (timestamp, raw_type, server_id, log_pos, flags))
                pos += length
                continue
            raw = source.read_at(pos, length)
            if len(raw) < length:
                self._truncated(info, path, pos, f"event of {length} bytes cut short at "
                                f"{len(raw)} bytes (type {raw_type})")
            type_code = raw_type
            if fde.event_permutation is not None and raw_type < len(fde.event_permutation):
                type_code = int(fde.event_permutation[raw_type])
            body_end = length
            checksum = None
            error = None
            if raw_type == E.FORMAT_DESCRIPTION_EVENT:
                body_end, checksum, error = self._fde_checksum(raw, path, pos)
            elif fde.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32:
                if length < header_len + BINLOG_CHECKSUM_LEN:
                    raise CorruptEvent(path, pos, f"event length {length} leaves no room for its checksum")
                body_end = length - BINLOG_CHECKSUM_LEN
                checksum = int.from_bytes(raw[body_end:], "little")
                if self.verify_checksums and zlib.crc32(raw[:body_end]) != checksum:
                    error = ChecksumMismatch(path, pos, "CRC32 checksum mismatch: stored "
                                             f"0x{checksum:08x}, computed 0x{zlib.crc32(raw[:body_end]):08x}")
            header = EventHeader(path, pos, timestamp, type_code, server_id, length,
                                 log_pos, flags, checksum)
            if error is not None:
                if not self.force:
                    raise error
                self.stats.warnings.append(str(error))
            event = self._decode(header, raw, header_len, body_end, ctx)
            if self.schema is not None and type_code in _SCHEMA_CODES:
                event = self._learn(event)
            info.note(event)
            yield event
            self._update_state(event, ctx, info)
            if isinstance(event, TransactionPayloadEvent) and self.unpack_payloads:
                yield from self._payload_events(event, ctx, info)
            pos += length
            if start_position is not None and pos < start_position:
                # Like mysqlbinlog --start-position: the first event (the format
                # description) frames the file, then jump to the caller's event.
                pos = start_position

    def _native_events(self, native, path: str, start_position: int | None) -> Iterator[Event]:
        """`_events` with the framing done by the native core: the same events,
        decoded by the same Python decoders, with the same facts and errors."""
        stream = None
        if hasattr(path, "read"):
            stream, path = path, path.name
        elif path == "-":
            stream = sys.stdin.buffer
        else:
            if is_gzip(path):
                stream = GzipBinlog(path)
        info = FileInfo(path)
        self.files.append(info)
        # The framer makes the headers, and the commonest small events whole
        # (rust/src/python/reader.rs `Makers`), with the table maps in force;
        # it hands those out alone and notes every event (`FileInfo.note`'s
        # counts, timestamps and last type), merged into `info` at the end.
        table_maps: dict = {}
        framer = native.Framer(path, stream, self.verify_checksums, self.force, start_position,
                               self.unpack_payloads, LARGE_EVENT_BYTES, self._pending_alg,
                               EventHeader, (MariadbGtidEvent, XidEvent, RowsEvent), table_maps,
                               (RowsQueryEvent, TableMapEvent, self._table_caches), True)
        decode, update = self._decode, self._update_state
        learn = self._learn if self.schema is not None else None
        # The common event's path, inlined (a million small events make the
        # calls count): `_decode` does the same for the others.
        decoders, must_consume = DECODERS, _MUST_CONSUME
        count, one_of = _count_elements, _ONE_NAME
        read_counts = self.stats.events
        try:
            framer.start()
            version = info.binlog_version = framer.binlog_version
            info.no_start_event = framer.no_start_event
            fde = (old_format(version) if version in (1, 3) else
                   FormatDescription(4, "", LOG_EVENT_MINIMAL_HEADER_LEN, b"", None, None))
            ctx = DecodeContext(path, fde, table_maps, table_caches=self._table_caches)
            for item in framer:
                if item.__class__ is not tuple:  # made and noted by the framer
                    yield item
                    continue
                header, type_code, timestamp, header_len, raw, special, event = item
                rare = large = False
                try:
                    if event is None:  # not made by the framer: decoded here
                        decoder = decoders.get(type_code)
                        rare = bool(special) or decoder is None or type_code in _RARE_CODES
                        if rare:
                            if special & _N_WARNING:
                                self.stats.warnings.append(framer.warning)
                            if special & _N_FDE:
                                self._pending_alg = framer.pending_alg
                            large = bool(special & _N_LARGE)
                            if large:
                                ctx.large_event_end = framer.large_end
                            try:
                                event = decode(header, raw, header_len, len(raw), ctx)
                            finally:
                                ctx.large_event_end = None
                            if type_code == _START_V3:
                                info.note_server_version(event)
                        else:
                            count(read_counts, one_of[type_code])
                            cur = Cursor(raw, header_len, len(raw), header.pos, path)
                            try:
                                event = decoder(header, cur, ctx)
                            except BinlogError as exc:
                                event = self._failed(exc, header, raw, header_len, len(raw))
                            else:
                                if cur.pos < cur.end and type_code in must_consume:
                                    self._unread(cur, header)
                    else:
                        count(read_counts, one_of[type_code])
                    if learn is not None and not large and type_code in _SCHEMA_CODES:
                        event = learn(event)
                except BaseException:
                    framer.unnote()  # not read after all
                    raise
                yield event
                if rare:
                    if not large:
                        update(event, ctx, info)
                elif type_code == _TABLE_MAP and event.__class__ is TableMapEvent:
                    table_maps[event.table_id] = event
            info.end_pos = framer.end_pos
        except EncryptedBinlog:
            info.encrypted = True
            raise
        except PartialEvent:
            info.partial_tail = True
            raise
        finally:
            info.add_notes(*framer.notes(), read_counts)
            # Freed in this thread, the only one the native framer may be
            # freed by (not when a generator left suspended is collected).
            framer = None
            if stream is not None and stream is not sys.stdin.buffer:
                stream.close()

    def _large_rows_event(self, source: "_FileSource", ctx: DecodeContext, info: "FileInfo",
                          pos: int, length: int, header_len: int, fields: tuple) -> Event:
        """A rows event too big to hold: checksum it in windows, decode its
        post-header and bitmaps, and leave the row images in the file."""
        timestamp, type_code, server_id, log_pos, flags = fields
        body_end, checksum = length, None
        if ctx.fde.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32:
            body_end = length - BINLOG_CHECKSUM_LEN
            checksum = int.from_bytes(source.read_at(pos + body_end, 4), "little")
            if self.verify_checksums:
                crc = 0
                for offset in range(0, body_end, _FileSource.WINDOW):
                    crc = zlib.crc32(source.read_at(pos + offset, min(_FileSource.WINDOW,
                                                                       body_end - offset)), crc)
                if crc != checksum:
                    error = ChecksumMismatch(source.path, pos, "CRC32 checksum mismatch: stored "
                                             f"0x{checksum:08x}, computed 0x{crc:08x}")
                    if not self.force:
                        raise error
                    self.stats.warnings.append(str(error))
        header = EventHeader(source.path, pos, timestamp, type_code, server_id, length,
                             log_pos, flags, checksum)
        head = source.read_at(pos, min(body_end, _LARGE_EVENT_HEAD))
        ctx.large_event_end = pos + body_end
        try:
            event = self._decode(header, head, header_len, len(head), ctx)
        finally:
            ctx.large_event_end = None
        info.note(event)
        return event

    def _truncated(self, info: "FileInfo", path: str, pos: int, detail: str):
        if info.in_use:
            info.partial_tail = True
            raise PartialEvent(path, pos, detail + "; the server still had this file open "
                               "(LOG_EVENT_BINLOG_IN_USE_F), so this is the event being written")
        raise TruncatedEvent(path, pos, detail)

    def _fde_checksum(self, raw: bytes, path: str, pos: int):
        """The FDE says its own checksum algorithm in the byte before the
        checksum, which exists only from the versions that write it."""
        version = text(raw[LOG_EVENT_MINIMAL_HEADER_LEN + 2:LOG_EVENT_MINIMAL_HEADER_LEN + 52].split(b"\0")[0])
        if not has_checksum_field(version):
            self._pending_alg = None
            return len(raw), None, None
        alg_at = len(raw) - BINLOG_CHECKSUM_LEN - BINLOG_CHECKSUM_ALG_DESC_LEN
        self._pending_alg = raw[alg_at]
        checksum = int.from_bytes(raw[-4:], "little")
        error = None
        # With checksums OFF some servers (MariaDB 10.6) leave the FDE's own CRC zero.
        if self.verify_checksums and self._pending_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32:
            flags = raw[17] & ~LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F
            computed = zlib.crc32(raw[:17] + bytes([flags]) + raw[18:-4])
            if computed != checksum:
                error = ChecksumMismatch(path, pos, f"CRC32 checksum mismatch in the format description: "
                                         f"stored 0x{checksum:08x}, computed 0x{computed:08x}")
        return alg_at, checksum, error

    def _decode(self, header: EventHeader, raw: bytes, header_len: int, body_end: int,
                ctx: DecodeContext) -> Event:
        code = header.type_code
        self.stats.events[_TYPE_NAMES[code]] += 1
        decoder = DECODERS.get(code)
        if decoder is None:
            self.stats.undecoded[header.type_name] += 1
            return UnknownEvent(header, raw[header_len:body_end],
                                f"no decoder for event type {code}")
        if code == _FDE:
            ctx.pending_checksum_alg = self._pending_alg
        cur = Cursor(raw, header_len, body_end, header.pos, header.file)
        try:
            event = decoder(header, cur, ctx)
        except BinlogError as exc:
            return self._failed(exc, header, raw, header_len, body_end)
        if cur.pos < cur.end and code in _MUST_CONSUME:
            self._unread(cur, header)
        return event

    def _failed(self, exc: BinlogError, header: EventHeader, raw: bytes, header_len: int,
                body_end: int) -> Event:
        """A decoder's error, said with the event's type and position: raised,
        or under `force` recorded and the event kept raw."""
        exc = type(exc)(exc.file, exc.offset,
                        f"{header.type_name} at {header.pos}: {exc.detail}")
        if not self.force:
            raise exc from None
        self.stats.undecoded[header.type_name] += 1
        self.stats.warnings.append(str(exc))
        return UnknownEvent(header, raw[header_len:body_end], exc.detail)

    def _unread(self, cur: Cursor, header: EventHeader) -> None:
        error = cur.error(f"{cur.remaining()} unread bytes after the {header.type_name} body")
        if not self.force:
            raise error
        self.stats.warnings.append(str(error))

    def _learn(self, event: Event) -> Event:
        """A QUERY event's DDL goes into the schema history; a table map comes
        out completed by it."""
        if event.__class__ is TableMapEvent:
            return self.schema.annotate(event)
        if isinstance(event, QueryEvent):
            self.schema.follow(event)
        return event

    def _update_state(self, event: Event, ctx: DecodeContext, info: "FileInfo") -> None:
        code = event.header.type_code
        if code == E.FORMAT_DESCRIPTION_EVENT and not isinstance(event, UnknownEvent):
            permutation, post_header = _permutation(event.server_version, event.post_header_lengths)
            ctx.fde = FormatDescription(event.binlog_version, event.server_version,
                                        event.header_length, post_header,
                                        event.checksum_alg, permutation)
            if info.server_version is None:
                info.set_format(ctx.fde, event.header.flags)
        elif code == E.TABLE_MAP_EVENT and not isinstance(event, UnknownEvent):
            ctx.table_maps[event.table_id] = event
        elif code == E.START_ENCRYPTION_EVENT:
            info.encrypted = True
            raise EncryptedBinlog(event.header.file, event.header.next_pos,
                                  "events after START_ENCRYPTION_EVENT are encrypted "
                                  "(MariaDB encrypt_binlog); decrypt with the server's key file first")

    def _payload_events(self, event, ctx: DecodeContext, info: "FileInfo") -> Iterator[Event]:
        """The payload's events, decompressed as a stream: a big compressed
        transaction is never held uncompressed."""
        data = _StreamSource(event.open_payload(), event.header.file)
        pos = 0
        while True:
            head = data.read_at(pos, LOG_EVENT_MINIMAL_HEADER_LEN)
            if not head:
                break
            if len(head) < LOG_EVENT_MINIMAL_HEADER_LEN:
                raise CorruptEvent(event.header.file, event.header.pos,
                                   f"transaction payload: {len(head)} stray bytes at its end")
            timestamp, type_code, server_id, length, log_pos, flags = _HEADER.unpack_from(head)
            raw = data.read_at(pos, length) if length >= LOG_EVENT_MINIMAL_HEADER_LEN else b""
            if len(raw) < max(length, LOG_EVENT_MINIMAL_HEADER_LEN):
                raise CorruptEvent(event.header.file, event.header.pos,
                                   f"transaction payload: inner event at {pos} has bad length {length}")
            # Inner events live in no file position of their own: they carry the
            # payload event's position, and their own log_pos.
            header = EventHeader(event.header.file, event.header.pos, timestamp, type_code,
                                 server_id, length, log_pos, flags, None)
            inner = self._decode(header, raw, ctx.fde.header_length, length, ctx)
            if self.schema is not None and type_code in _SCHEMA_CODES:
                inner = self._learn(inner)
            info.note(inner)
            yield inner
            self._update_state(inner, ctx, info)
            pos += length

    # Version detection ---------------------------------------------------------
    def _detect_format(self, source, info: "FileInfo") -> FormatDescription:
        first = source.read_at(4, LOG_EVENT_MINIMAL_HEADER_LEN)
        if len(first) < LOG_EVENT_MINIMAL_HEADER_LEN:
            info.binlog_version = 4
            return FormatDescription(4, "", LOG_EVENT_MINIMAL_HEADER_LEN, b"", None, None)
        type_code = first[EVENT_TYPE_OFFSET]
        length = int.from_bytes(first[EVENT_LEN_OFFSET:EVENT_LEN_OFFSET + 4], "little")
        if type_code == E.START_EVENT_V3:
            version = 1 if length < LOG_EVENT_MINIMAL_HEADER_LEN + START_V3_HEADER_LEN else 3
        elif type_code == E.FORMAT_DESCRIPTION_EVENT:
            version = 4
        elif type_code <= E.USER_VAR_EVENT:
            # 4.0/4.1 wrote a start event only in the first file after startup
            version = 3
            info.no_start_event = True
        else:
            raise CorruptEvent(source.path, 4, f"the first event has type {type_code}: neither a "
                               "start event, a format description, nor an event a 4.x server "
                               "could start a file with; nothing says how to read this file")
        info.binlog_version = version
        if version == 4:
            # Until the FDE is read: enough to frame the FDE itself.
            return FormatDescription(4, "", LOG_EVENT_MINIMAL_HEADER_LEN, b"", None, None)
        return old_format(version)


# Plain ints and a bound lookup for the per-event paths (IntEnum members cost
# a descriptor call each time they are read).
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_START_V3 = int(E.START_EVENT_V3)
_TABLE_MAP = int(E.TABLE_MAP_EVENT)
#: The events the schema history reads (DDL) or completes (table maps).
_SCHEMA_CODES = frozenset({_TABLE_MAP, int(E.QUERY_EVENT), int(E.QUERY_COMPRESSED_EVENT)})
_type_name = event_type_name
#: every type code's name (a code is one byte)
_TYPE_NAMES = tuple(event_type_name(code) for code in range(256))
#: ... each alone in a tuple, for `_count_elements`: Counter's own counting
#: helper (C in CPython) adds one in a call, where `counter[name] += 1` goes
#: through Counter's Python-level item assignment
_ONE_NAME = tuple((name,) for name in _TYPE_NAMES)
#: codes the native reader's inlined path leaves to `_decode`, `note` and
#: `_update_state`: they change the stream state or the file's facts
_RARE_CODES = frozenset({_FDE, _START_V3, int(E.START_ENCRYPTION_EVENT)})

#: Rows events bigger than this keep their row images in the file (read lazily).
LARGE_EVENT_BYTES = 64 << 20
_LARGE_EVENT_HEAD = 1 << 16  # post-header, extra info and bitmaps fit in this
_LAZY_ROWS_TYPES = {E.WRITE_ROWS_EVENT_V1, E.UPDATE_ROWS_EVENT_V1, E.DELETE_ROWS_EVENT_V1,
                    E.WRITE_ROWS_EVENT, E.UPDATE_ROWS_EVENT, E.DELETE_ROWS_EVENT,
                    E.PARTIAL_UPDATE_ROWS_EVENT}

#: Flags of the native framer's `special` item (rust/src/python/reader.rs).
_N_WARNING, _N_LARGE, _N_FDE, _N_INNER = 1, 2, 4, 8

#: Decoders that must account for every byte of the body (the others pad).
_MUST_CONSUME = set(DECODERS) - {E.STOP_EVENT}


@dataclass
class FileInfo:
    """Facts about one file gathered while reading it (for `binlake info`)."""

    path: str
    binlog_version: int | None = None
    server_version: str | None = None
    checksum_alg: int | None = None
    header_length: int | None = None
    in_use: bool = False
    no_start_event: bool = False
    encrypted: bool = False
    partial_tail: bool = False
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    last_type: str | None = None
    end_pos: int | None = None
    counts: Counter = field(default_factory=Counter)

    def set_format(self, fde: FormatDescription, flags: int) -> None:
        self.server_version = fde.server_version
        self.checksum_alg = fde.checksum_alg
        self.header_length = fde.header_length
        self.in_use = bool(flags & LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F)

    def note_server_version(self, event: Event) -> None:
        """What `note` learns of a START_EVENT_V3 besides the counts."""
        if self.server_version is None:
            self.server_version = getattr(event, "server_version", None)

    def add_notes(self, counts, made, first_timestamp, last_timestamp, last_type,
                  read_counts) -> None:
        """The native framer's notes of the events it handed out (`note` for
        each, in bulk); those it made are counted as read too."""
        for code, n in counts:
            self.counts[_TYPE_NAMES[code]] += n
        for code, n in made:
            read_counts[_TYPE_NAMES[code]] += n
        if first_timestamp is not None and self.first_timestamp is None:
            self.first_timestamp = first_timestamp
        if last_timestamp is not None:
            self.last_timestamp = last_timestamp
        if last_type is not None:
            self.last_type = _TYPE_NAMES[last_type]

    def note(self, event: Event) -> None:
        header = event.header
        name = _TYPE_NAMES[header.type_code]
        self.counts[name] += 1
        if header.type_code == _START_V3 and self.server_version is None:
            self.server_version = getattr(event, "server_version", None)
        if header.timestamp:
            if self.first_timestamp is None:
                self.first_timestamp = header.timestamp
            self.last_timestamp = header.timestamp
        self.last_type = name

    @property
    def closed_cleanly(self) -> bool:
        if self.binlog_version == 4 and self.server_version:
            return not self.in_use and not self.partial_tail
        return self.last_type in ("STOP_EVENT", "ROTATE_EVENT")


def _history(schema):
    """The reader's schema history from its `schema` argument."""
    if schema is False:
        return None
    from binlake.schema.history import Schema, load_schema
    if schema is None:
        return Schema()
    return schema if isinstance(schema, Schema) else load_schema(schema)


class EventChecker:
    """The reference decoders for the events the native loops leave to them
    (QUERY, format descriptions, ROTATE, LOAD, ...): their errors are raised
    as the reader raises them, and under `force` an event that fails comes
    back as None. The reader's own decode step is reused, so the rules
    (error wording, unread bytes, the FDE's checksum byte) are its own; so
    is its schema history, which follows the QUERY events checked here and
    completes the table maps given (the changes loop's `follow_schema`)."""

    def __init__(self, path: str, *, verify_checksums: bool, force: bool, schema=False):
        self.path = path
        self.reader = BinlogReader([path], verify_checksums=verify_checksums, force=force,
                                   schema=schema)
        self.info = FileInfo(path)
        self.ctx: DecodeContext | None = None

    def __call__(self, *frame):
        event = self.decode(*frame)
        return None if isinstance(event, UnknownEvent) else event

    def decode(self, type_code, pos, timestamp, server_id, length, log_pos, flags, checksum,
               header_len, raw, pending_alg, binlog_version):
        """The event as the reader makes it (an UnknownEvent when it failed under `force`)."""
        ctx = self.ctx
        if ctx is None:  # as `_events` frames a file before its first FDE
            fde = (old_format(binlog_version) if binlog_version in (1, 3) else
                   FormatDescription(4, "", LOG_EVENT_MINIMAL_HEADER_LEN, b"", None, None))
            ctx = self.ctx = DecodeContext(self.path, fde)
        header = EventHeader(self.path, pos, timestamp, type_code, server_id, length, log_pos,
                             flags, checksum)
        description = type_code == E.FORMAT_DESCRIPTION_EVENT
        if description:
            self.reader._pending_alg = pending_alg
        event = self.reader._decode(header, raw, header_len, len(raw), ctx)
        if description and not isinstance(event, UnknownEvent):
            self.reader._update_state(event, ctx, self.info)
        if self.reader.schema is not None:
            event = self.reader._learn(event)
        return event


def read_events(paths, **options) -> Iterator[Event]:
    """Events of one or more binlog files, in order."""
    return iter(BinlogReader(paths, **options))
