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

Resuming: a small manifest beside the copies (`PREFIX.binlake-backup.json`
and its journal, a line appended after each fsync: `BackupManifest`)
records the server's identity and how much of each copy is whole and on
disk. A run continues with the last copy:
only its tail after the recorded end is checked (event lengths and CRC32s),
whatever follows its last intact event (a half-written event after a
SIGKILL or a power cut) is cut off, and the dump asks for that copy at that
offset (a copy is the server's file: its offsets are the server's), also
when the copy is closed (the server then moves on to its next binlog). So
the server re-sends the copy's format description first, and a server whose
file of that name is another (a failover to another server, a recreated
binlog) is refused before anything is written, as is one of another
server id or UUID than the manifest's. A backup without a manifest (an
earlier binlake's) is walked from the first copy once. A closed copy
whose file is gone was removed on purpose (old copies rotated away): the
backup goes on after it and the manifest forgets it, so the manifest holds
what the folder holds, and an fsync with nothing new rewrites nothing.

Rule: nothing is ever written but whole events in file order; a reader of a
copy cut short by a crash sees the IN_USE flag and reports the tail as the
event being written, and the next run removes it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import threading
import time
import zlib
from dataclasses import dataclass

from binlake.atomic import fsync_directory, replaced
from binlake.constants import BINLOG_MAGIC, EventType as E, LogEventFlag
from binlake.errors import BinlogError, ChecksumMismatch, CorruptEvent
from binlake.live.source import same_description

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

    local_end: int            #: bytes of the copy that are whole, intact events (4: none)
    last_type: int | None     #: type of the last whole event
    next_file: str | None     #: the file a final ROTATE names

    @property
    def usable(self) -> bool:
        """Whether it holds a whole event (a copy is the server's file: its
        offsets are the server's, so the dump continues at `local_end`)."""
        return self.local_end > 4


def inspect_copy(path: str, start: int = 4) -> CopyState:
    """Walk a copy's events from `start` (an event boundary: the magic's end,
    or where its manifest says it is whole); stop at the first that is cut
    short or fails its CRC32 (what a crash leaves)."""
    description = description_of(path)
    if description is None:
        return CopyState(0, None, None)
    checksums = _fde_checksums(description)
    with open(path, "rb") as handle:
        data_size = os.fstat(handle.fileno()).st_size
        pos = start if 4 < start <= data_size else 4
        state = CopyState(pos, None, None)
        while pos + 19 <= data_size:
            handle.seek(pos)
            head = handle.read(19)
            _, type_code, _, length, _, _ = _HEADER.unpack(head)
            if length < 19 or pos + length > data_size:
                break
            raw = head + handle.read(length - 19)
            intact, checksums = _intact(raw, checksums)
            if not intact:
                break
            pos += length
            next_file = None
            if type_code == _ROTATE:
                body = raw[19:-4] if checksums else raw[19:]
                next_file = body[8:].decode("utf-8", "replace")
            state = CopyState(pos, type_code, next_file)
        return state


def description_of(path: str) -> bytes | None:
    """The format description a copy starts with, as written."""
    with open(path, "rb") as handle:
        head = handle.read(4 + 19)
        if len(head) < 23 or head[:4] != BINLOG_MAGIC or head[4 + 4] != _FDE:
            return None
        return head[4:] + handle.read(int.from_bytes(head[4 + 9:4 + 13], "little") - 19)


def _fde_checksums(raw: bytes) -> bool:
    from binlake.live.source import _fde_has_checksum
    return _fde_has_checksum(raw)


def _intact(event: bytes, checksums: bool) -> tuple[bool, bool]:
    """(whether the event is intact, whether the events from it on carry
    CRC32s: a format description says so for those after it)."""
    if event[4] == _FDE:
        checksums = _fde_checksums(bytes(event))
    return not checksums or _crc_ok(event), checksums


def _crc_ok(raw: bytes) -> bool:
    """An event's CRC32, over its bytes in place (no copy: it runs per
    event); a format description's over its bytes with the IN_USE flag
    clear, as the server computed it."""
    if raw[4] == _FDE:
        body = bytearray(raw[:-4])
        body[17] &= ~_IN_USE & 0xFF
    else:
        body = memoryview(raw)[:-4]
    return zlib.crc32(body) == int.from_bytes(raw[-4:], "little")


class CopyWriter:
    """Appends whole events to one copy; fsyncs; puts the IN_USE flag back.

    A timer thread fsyncs within FSYNC_EVERY of a write, whether or not more
    arrives (a write marks the copy dirty; the timer clears the mark before
    its fsync, so a write during an fsync is synced by the next)."""

    def __init__(self, path: str, keep: int, on_synced=None, on_fsync=None):
        self.path = path
        self.on_synced = on_synced  #: on_synced(size, closed) after each fsync
        self.on_fsync = on_fsync    #: on_fsync(seconds, bytes made durable): a follower's metrics
        self.closed = False
        created = not os.path.exists(path)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if created:
            fsync_directory(path)          # the copy's name, durable before its bytes
        os.ftruncate(self.fd, keep)        # what follows the last whole event goes
        os.lseek(self.fd, keep, os.SEEK_SET)
        self.size = keep
        self._durable = keep
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
            try:
                self.sync()
            except OSError as exc:
                self._failure = exc
                return

    def sync(self) -> None:
        self._dirty.clear()
        size, closed = self.size, self.closed  # what this fsync makes durable
        began = time.monotonic()
        os.fsync(self.fd)
        if self.on_fsync is not None:
            self.on_fsync(time.monotonic() - began, max(0, size - self._durable))
        self._durable = max(self._durable, size)
        if self.on_synced is not None:
            self.on_synced(size, closed)

    def closed_by_server(self) -> None:
        """The ROTATE or STOP arrived: the server's file is closed, its flag
        clear (and that on disk before the next file is begun)."""
        if self.size > IN_USE_AT:
            flags = os.pread(self.fd, 1, IN_USE_AT)
            os.pwrite(self.fd, bytes([flags[0] & ~_IN_USE & 0xFF]), IN_USE_AT)
        self.closed = True
        self.sync()

    def close(self) -> None:
        self._closing.set()
        self._timer.join()
        try:
            self.sync()
        finally:
            os.close(self.fd)


class BackupManifest:
    """`PREFIX.binlake-backup.json`: the server's identity and, per copy, the
    bytes that are whole and fsynced (`end`) and whether the server closed
    it; and `PREFIX.binlake-backup.journal`, what changed since, appended.

    A change (a copy's fsynced end, every second while the server writes; a
    copy forgotten; the server's identity) is one line appended to the
    journal and one fsync, numbered; the snapshot, written atomically
    (binlake.atomic), holds the number of the last line it includes, so a
    kill between writing it and emptying the journal replays nothing twice,
    and a line torn by a kill is the end of the journal. The snapshot is
    written when the backup is new and when the journal has grown to
    JOURNAL_LINES: the manifest's cost per change does not grow with it."""

    FORMAT = 2
    #: Lines the journal grows to before they are folded into the snapshot.
    JOURNAL_LINES = 1000

    def __init__(self, prefix: str):
        self.path = prefix + ".binlake-backup.json"
        self.journal = prefix + ".binlake-backup.journal"
        self.server: dict | None = None
        self.copies: dict = {}
        self._lock = threading.Lock()
        self._number = 0               # of the last change, in the snapshot or the journal
        self._lines = 0                # in the journal
        self._torn = False             # its last line was cut by a kill
        try:
            with open(self.path) as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return
        if data.get("format") not in (1, self.FORMAT):  # (1: before the journal)
            raise ValueError(f"{self.path}: a backup manifest of format {data.get('format')}")
        self.server, self.copies = data.get("server"), data.get("copies") or {}
        self._number = data.get("number", 0)
        self._replay()

    def _replay(self) -> None:
        try:
            with open(self.journal, "rb") as handle:
                lines = handle.read().split(b"\n")
        except FileNotFoundError:
            return
        for line in lines:
            try:
                change = json.loads(line)
            except ValueError:          # torn by a kill (or the empty last piece)
                break
            self._lines += 1
            if change["number"] > self._number:
                self._apply(change)
        # A torn last line is folded away by the writer before it appends
        # (`_change`); a reader (the lake's, beside the copier) never writes.
        self._torn = bool(lines[-1])

    def _apply(self, change: dict) -> None:
        self._number = change["number"]
        if "copy" in change:
            self.copies[change["copy"]] = {"end": change["end"], "closed": change["closed"]}
        elif "forget" in change:
            for name in change["forget"]:
                self.copies.pop(name, None)
        else:
            self.server = change["server"]

    def record(self, name: str, end: int, closed: bool) -> None:
        with self._lock:
            if self.copies.get(name) == {"end": end, "closed": closed}:
                return                    # (an fsync with nothing new: nothing to say)
            if name not in self.copies:   # a new copy: the removed ones go (bounded)
                self._forget(self.removed())
            self._change({"copy": name, "end": end, "closed": closed})

    def removed(self) -> list[str]:
        """Copies the server closed whose files are gone: removed on purpose
        (old copies rotated away), never to be copied again."""
        folder = self.path[:-len(".binlake-backup.json")]
        return [name for name, copy in self.copies.items()
                if copy.get("closed") and not os.path.exists(folder + name)]

    def forget(self, names: list[str]) -> None:
        with self._lock:
            self._forget(names)

    def _forget(self, names: list[str]) -> None:
        if names:
            self._change({"forget": sorted(names)})

    def identify(self, server: dict) -> None:
        """The server this backup is of (refused where it is another's)."""
        with self._lock:
            if self.server is not None:
                for key in ("server_uuid", "server_id"):
                    if self.server.get(key) is not None and server.get(key) is not None \
                            and self.server[key] != server[key]:
                        raise ValueError(
                            f"this backup is of the server with {key} {self.server[key]}, and "
                            f"this server's is {server[key]}: nothing was written; back it up "
                            "into another --result-file")
            merged = {**(self.server or {}), **server}
            if merged != self.server or not os.path.exists(self.path):
                self._change({"server": merged})

    def _change(self, change: dict) -> None:
        """One change, applied, then made durable: the snapshot for a new
        backup (its file names the backup: binlake.spark.read.failover) or
        a full journal, else a line appended and fsynced."""
        self._apply({**change, "number": self._number + 1})
        if not os.path.exists(self.path) or self._lines >= self.JOURNAL_LINES or self._torn:
            self._snapshot()
            return
        line = json.dumps({**change, "number": self._number}, sort_keys=True) + "\n"
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        if self._lines == 0:
            fsync_directory(self.journal)  # the journal's name, durable before its first line
        self._lines += 1

    def _snapshot(self) -> None:
        with replaced(self.path) as handle:
            json.dump({"format": self.FORMAT, "number": self._number, "server": self.server,
                       "copies": self.copies}, handle, indent=1, sort_keys=True)
        if self._lines or self._torn:
            with open(self.journal, "r+b") as handle:  # (its lines are in the snapshot now)
                handle.truncate(0)
                os.fsync(handle.fileno())
            self._lines, self._torn = 0, False


def resume_point(prefix: str, name: str, position: int, manifest: BackupManifest,
                 numbered) -> tuple[str, int, int]:
    """(server file, server position, bytes of its copy to keep): where a
    backup into `prefix` continues, starting from `name` as asked: at the
    end of the whole part of the last copy (closed or not: the server then
    re-sends its format description, checked against the copy's, and moves
    on to the next file). The manifest names that copy and how much of it is
    whole; without one the copies are walked from `name` by their ROTATEs."""
    removed = sorted(manifest.removed(), key=lambda copy: numbered(copy) or -1)
    manifest.forget(removed)
    if removed and not manifest.copies and (numbered(removed[-1]) or -1) >= (numbered(name) or -1):
        # Every copy removed (kept elsewhere): on from the file after the last.
        name, position = following(removed[-1]), 4
    first = numbered(name) or -1
    recorded = sorted((copy for copy in manifest.copies if (numbered(copy) or -1) >= first),
                      key=lambda copy: numbered(copy) or -1)
    # A copy shorter than the manifest says (cut since: a stat each, no read)
    # is where the backup continues, else the last one, checked from its
    # recorded end only.
    short = [copy for copy in recorded if not os.path.exists(prefix + copy)
             or os.path.getsize(prefix + copy) < manifest.copies[copy]["end"]]
    if short:
        name = short[0]
    elif recorded:
        last = recorded[-1]
        state = inspect_copy(prefix + last, manifest.copies[last]["end"])
        begun_after = following(last) if manifest.copies[last].get("closed") else None
        if state.usable and not (begun_after and os.path.exists(prefix + begun_after)):
            return last, state.local_end, state.local_end
        if state.usable:
            # A copy begun after the last one recorded (a kill before its
            # first fsync was recorded): walked on from its start, its whole
            # part kept, never written anew under a reader that has read it.
            name, position = begun_after, 4
    walked = set()
    while True:
        path = prefix + name
        walked.add(name)
        if not os.path.exists(path):
            return name, position, 0
        state = inspect_copy(path)
        if not state.usable:
            return name, position, 0    # nothing usable: write the copy anew
        if state.last_type == _ROTATE and state.next_file not in walked \
                and state.next_file and os.path.exists(prefix + state.next_file):
            name = state.next_file
            continue
        return name, state.local_end, state.local_end


#: A binlog name's number: its last digits (binlog.000042, binlog.000042.gz).
_NUMBER = re.compile(r"\d+(?=\D*$)")


def numbered(name: str, seq: int) -> str:
    """`name` with its number replaced by `seq`, as wide."""
    return _NUMBER.sub(lambda digits: str(seq).zfill(len(digits.group())), name)


def following(name: str) -> str:
    """The binlog the server writes after `name` (binlog.000041 -> binlog.000042)."""
    match = _NUMBER.search(name)
    if not match:
        raise ValueError(f"{name!r}: not a numbered binlog name")
    return numbered(name, int(match.group()) + 1)


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
            intact, self.checksums = _intact(memoryview(data)[pos:pos + length], self.checksums)
            if not intact:
                raise ChecksumMismatch(self.name, offset + pos, "CRC32 checksum mismatch in an "
                                       "event the server sent: nothing of it was written; "
                                       "run again to fetch it anew")
            pos += length
        self._held, self._at = data[pos:], offset + pos
        return offset, data[:pos]


def copy_file(live_file, prefix: str, keep: int, resume_at: int,
              manifest: BackupManifest | None = None, on_fsync=None) -> CopyWriter:
    """Write one LiveFile into its copy: after `keep` bytes already there
    (server bytes before `resume_at` are not written again, and the format
    description the server sends must be the copy's), each event checked
    first; each fsync recorded in `manifest` (and told `on_fsync`: CopyWriter)."""
    path = prefix + live_file.name
    copied = description_of(path) if keep else None
    record = None if manifest is None else (
        lambda end, closed: manifest.record(live_file.name, end, closed))
    check = ArrivalCheck(live_file.name)
    writer = None
    try:
        while True:
            live_file.next_event_at(live_file.offset)
            offset, data = live_file.read_chunk(1 << 20)
            if not data:
                break
            offset, data = check.whole(offset, data)
            if not data:
                continue      # not whole yet
            if keep and offset < resume_at:
                # The magic and format description the copy has: the server's must be it.
                sent = data[4:] if offset == 0 else data
                sent = sent[:int.from_bytes(sent[9:13], "little")] if len(sent) >= 19 else b""
                if copied is not None and sent[4:5] == bytes([_FDE]) \
                        and not same_description(copied, sent):
                    raise AnotherServersFile(live_file.name, 4, (
                        "the server's binlog of this name is not the one this backup copied "
                        "(its format description differs: another server, or a binlog made "
                        "anew): nothing was written; back it up into another --result-file"))
                continue
            if writer is None:
                writer = CopyWriter(path, keep, record, on_fsync)
            writer.write(data)
        if writer is None and (live_file.closed_by_server or not os.path.exists(path)
                               or os.path.getsize(path) != keep):
            # a cut tail goes, an empty file is made
            writer = CopyWriter(path, keep, record, on_fsync)
        if live_file.closed_by_server:
            writer.closed_by_server()
    finally:
        if writer is not None:
            writer.close()
    return writer


def copy_all(source, prefix: str, manifest: BackupManifest, name: str, position: int,
             keep: int, on_fsync=None) -> None:
    """Every binlog `source` (a LiveSource started at `name`, `position`:
    `resume_point`'s) sends, copied in turn; the server checked to be the
    manifest's at the first file and at each reconnect's."""
    for live_file in source:
        if manifest.server is None or name is not None:
            manifest.identify(source.server_identity)
        resumed = live_file.name == name
        copy_file(live_file, prefix, keep if resumed else 0, position if resumed else 4,
                  manifest, on_fsync)
        name = None


class Copier:
    """`copy_all` in a thread of its own, for a reader of the copies beside
    it (the follower, the Spark streaming source): holds the folder's lock
    from its creation to `close()`; `failure` is what ended the copying
    (None while it goes on, or when `close()` ended it); `on_fsync`: CopyWriter's."""

    def __init__(self, source, prefix: str, numbered, on_fsync=None):
        self.source, self.prefix, self.numbered = source, prefix, numbered
        self.on_fsync = on_fsync
        os.makedirs(os.path.dirname(prefix) or ".", exist_ok=True)
        self._guard = lock(prefix)
        self.backup = BackupManifest(prefix)
        self.failure: BaseException | None = None
        self._thread: threading.Thread | None = None

    def first_copy(self) -> str | None:
        """The first binlog the folder holds (where a restart continues from)."""
        names = sorted(self.backup.copies, key=lambda copy: self.numbered(copy) or -1)
        return names[0] if names else None

    def start(self, name: str, on_end=None) -> None:
        """Copy from the binlog `name` on (the manifest's copies decide where);
        `on_end()` is called in the copier's thread when it ends."""
        file, position, keep = resume_point(self.prefix, name, 4, self.backup, self.numbered)
        self.source.options.file, self.source.options.position = file, position

        def copy() -> None:
            try:
                copy_all(self.source, self.prefix, self.backup, file, position, keep,
                         self.on_fsync)
            except BaseException as exc:  # noqa: BLE001 - the reader's to raise
                self.failure = exc
            finally:
                if on_end is not None:
                    on_end()
        self._thread = threading.Thread(target=copy, name="binlake-copier", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop copying (the copies stay whole) and give the folder back."""
        try:
            if self._thread is not None:
                self.source.close()
                self._thread.join()
        finally:
            self._guard.close()


class AnotherServersFile(BinlogError):
    """The server's binlog under a copy's name is not the file copied."""
