"""Raw binlog backups from a live server (`dump -R --raw`): byte-exact and resumable.

Strategy: each binlog the server sends (a `LiveFile`) is written under its
server name after the `--result-file` prefix, by appending whole events
(`os.write` of complete events only, each checked against its CRC32 as it
arrives), fsynced by a timer within a second of a write (an idle server's
last commit too) and at the end of each file; a new copy's folder is
fsynced so that the copy's name survives a power cut. The copy is the server's file: the bytes from
offset 0 (the dump sends the events as stored). Two bytes of state differ
on the wire, and are put back as the server's file has them: the format
description's LOG_EVENT_BINLOG_IN_USE_F, which the server clears when it
sends it, is set while the file is being written and cleared once its
ROTATE or STOP event arrives (the server does the same when it closes the
file; the flag is outside the event's checksum).

Resuming: run again, and each existing copy is checked from its start
(event lengths and CRC32s): whatever follows the last complete, intact event
(a half-written event after a SIGKILL or a power cut) is cut off, and the
dump continues at that event's end in server coordinates (its `log_pos`).
A copy that ends with a ROTATE continues with the file it names; one that
ends with a STOP continues with the server's next binlog (SHOW BINARY LOGS).

Rule: nothing is ever written but whole events in file order; a reader of a
copy cut short by a crash sees the IN_USE flag and reports the tail as the
event being written, and the next run removes it.
"""

from __future__ import annotations

import fcntl
import os
import struct
import threading
import zlib
from dataclasses import dataclass

from binlake.atomic import fsync_directory
from binlake.constants import BINLOG_MAGIC, EventType as E, LogEventFlag
from binlake.errors import ChecksumMismatch, CorruptEvent

_HEADER = struct.Struct("<IBIIIH")
#: the format description's flags byte: after the magic, at FLAGS_OFFSET (17) of its header
IN_USE_AT = 4 + 17
_IN_USE = int(LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F)
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_ROTATE = int(E.ROTATE_EVENT)
_STOP = int(E.STOP_EVENT)
FSYNC_EVERY = 1.0  # seconds


@dataclass
class CopyState:
    """What an existing copy holds: its intact part and where the server's file goes on."""

    local_end: int            #: bytes of the copy that are whole, intact events
    server_position: int      #: the server offset after the last whole event (0: none)
    last_type: int | None     #: type of the last whole event
    next_file: str | None     #: the file a final ROTATE names
    checksums: bool


def inspect_copy(path: str) -> CopyState:
    """Walk a copy's events from the start; stop at the first that is cut
    short or fails its CRC32 (what a crash leaves)."""
    with open(path, "rb") as handle:
        data_size = os.fstat(handle.fileno()).st_size
        if handle.read(4) != BINLOG_MAGIC:
            return CopyState(0, 0, None, None, False)
        pos, checksums = 4, False
        state = CopyState(4, 0, None, None, False)
        while pos + 19 <= data_size:
            handle.seek(pos)
            head = handle.read(19)
            _, type_code, _, length, log_pos, _ = _HEADER.unpack(head)
            if length < 19 or pos + length > data_size:
                break
            raw = head + handle.read(length - 19)
            if type_code == _FDE:
                checksums = _fde_checksums(raw)
                if checksums and not _crc_ok(raw, fde=True):
                    break
            elif checksums and not _crc_ok(raw):
                break
            pos += length
            next_file = None
            if type_code == _ROTATE:
                body = raw[19:-4] if checksums else raw[19:]
                next_file = body[8:].decode("utf-8", "replace")
            state = CopyState(pos, log_pos or state.server_position, type_code, next_file, checksums)
        return state


def _fde_checksums(raw: bytes) -> bool:
    from binlake.live.source import _fde_has_checksum
    return _fde_has_checksum(raw)


def _crc_ok(raw: bytes, fde: bool = False) -> bool:
    body = bytearray(raw[:-4])
    if fde:
        body[17] &= ~_IN_USE & 0xFF
    return zlib.crc32(body) == int.from_bytes(raw[-4:], "little")


class CopyWriter:
    """Appends whole events to one copy; fsyncs; puts the IN_USE flag back.

    A timer thread fsyncs within FSYNC_EVERY of a write, whether or not more
    arrives (a write marks the copy dirty; the timer clears the mark before
    its fsync, so a write during an fsync is synced by the next)."""

    def __init__(self, path: str, keep: int):
        self.path = path
        created = not os.path.exists(path)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if created:
            fsync_directory(path)          # the copy's name, durable before its bytes
        os.ftruncate(self.fd, keep)        # what follows the last whole event goes
        os.lseek(self.fd, keep, os.SEEK_SET)
        self.size = keep
        self._dirty = threading.Event()
        self._closing = threading.Event()
        self._failure: OSError | None = None
        self._timer = threading.Thread(target=self._sync_soon, name="binlake-fsync", daemon=True)
        self._timer.start()

    def write(self, data: bytes) -> None:
        if self._failure is not None:  # the timer's fsync failed: the disk is in trouble
            raise self._failure
        if self.size <= IN_USE_AT < self.size + len(data):
            # The format description as the server's open file has it.
            data = bytearray(data)
            data[IN_USE_AT - self.size] |= _IN_USE
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        self.size += len(data)
        self._dirty.set()

    def _sync_soon(self) -> None:
        while not self._closing.is_set():
            if not self._dirty.wait(0.2):
                continue
            self._closing.wait(FSYNC_EVERY / 2)  # writes that follow at once share the fsync
            self._dirty.clear()
            try:
                os.fsync(self.fd)
            except OSError as exc:
                self._failure = exc
                return

    def sync(self) -> None:
        self._dirty.clear()
        os.fsync(self.fd)

    def closed_by_server(self) -> None:
        """The ROTATE or STOP arrived: the server's file is closed, its flag
        clear (and that on disk before the next file is begun)."""
        if self.size > IN_USE_AT:
            flags = os.pread(self.fd, 1, IN_USE_AT)
            os.pwrite(self.fd, bytes([flags[0] & ~_IN_USE & 0xFF]), IN_USE_AT)
            self.sync()

    def close(self) -> None:
        self._closing.set()
        self._timer.join()
        try:
            self.sync()
        finally:
            os.close(self.fd)


def resume_point(prefix: str, name: str, position: int, next_binlog) -> tuple[str, int, int]:
    """(server file, server position, bytes of its copy to keep): where a
    backup into `prefix` continues. `next_binlog(name)` names the server's
    binlog after `name` (None if it has none)."""
    keep = 0
    while True:
        path = prefix + name
        if not os.path.exists(path):
            return name, position, 0
        state = inspect_copy(path)
        keep = state.local_end
        if state.last_type == _ROTATE and state.next_file:
            name, position = state.next_file, 4
            continue
        if state.last_type == _STOP:
            following = next_binlog(name)
            if following is None:
                return name, state.server_position, keep
            name, position = following, 4
            continue
        if state.server_position:
            return name, state.server_position, keep
        return name, position, 0    # nothing usable: write the copy anew


def lock(prefix: str):
    """One backup per prefix at a time: a second run would interleave writes."""
    path = prefix + ".binlake-lock"
    handle = open(path, "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise RuntimeError(f"another backup is writing into {prefix!r} ({path} is locked)") from None
    return handle


class ArrivalCheck:
    """Each event of a copy checked as it arrives, before it is written: its
    length, and its CRC32 when the file has checksums. Chunks may cut events
    anywhere: the bytes of an event not whole yet wait for the next chunk."""

    def __init__(self, name: str):
        self.name = name
        self.checksums = False  #: as the last format description says (one comes first)
        self._held = b""
        self._at = 0  #: file offset of `_held`

    def whole(self, offset: int, data: bytes) -> tuple[int, bytes]:
        """(offset, bytes) of the whole, intact events `data` completes."""
        if self._held:
            if offset != self._at + len(self._held):
                raise CorruptEvent(self.name, self._at, "the server's bytes do not continue the "
                                   "event begun here")
            data, offset = self._held + data, self._at
        pos, end = 0, len(data)
        if offset == 0:  # the magic goes with the first event
            pos = 4
            if end < 4:
                self._held, self._at = data, offset
                return offset, b""
        while pos + 19 <= end:
            length = int.from_bytes(data[pos + 9:pos + 13], "little")
            if length < 19:
                raise CorruptEvent(self.name, offset + pos, f"event length {length} is shorter "
                                   "than its header (sent by the server)")
            if pos + length > end:
                break
            event = data[pos:pos + length]
            if data[pos + 4] == _FDE:
                self.checksums = _fde_checksums(event)
            if self.checksums and not _crc_ok(event, fde=data[pos + 4] == _FDE):
                raise ChecksumMismatch(self.name, offset + pos, "CRC32 checksum mismatch in an "
                                       "event the server sent: nothing of it was written; "
                                       "run again to fetch it anew")
            pos += length
        self._held, self._at = data[pos:], offset + pos
        return offset, data[:pos]


def copy_file(live_file, prefix: str, keep: int, resume_at: int) -> CopyWriter:
    """Write one LiveFile into its copy: after `keep` bytes already there
    (server bytes before `resume_at` are not written again), each event
    checked first."""
    writer = CopyWriter(prefix + live_file.name, keep)
    check = ArrivalCheck(live_file.name)
    try:
        while True:
            live_file.next_event_at(live_file.offset)
            offset, data = live_file.read_chunk(1 << 20)
            if not data:
                break
            offset, data = check.whole(offset, data)
            if not data or (keep and offset < resume_at):
                continue      # not whole yet; the magic and format description the copy has
            writer.write(data)
        if live_file.closed_by_server:
            writer.closed_by_server()
    finally:
        writer.close()
    return writer
