"""The bytes of events, as mysqlbinlog writes them into BINLOG statements and hexdumps.

Strategy: the reader keeps no raw bytes, so an event of a file is re-read
from the file by position (one open handle per file; a gzip file is unpacked
once to a spool); events inside a MySQL transaction payload are cut from the
decompressed payload in the order the reader hands them out. Where
mysqlbinlog re-encodes an event (MariaDB compressed rows events written
uncompressed, payload events given a checksum, a table map renamed by
--rewrite-db) the new bytes get a correct length and CRC32.
"""

from __future__ import annotations

import zlib

from binlake.constants import EventType as E
from binlake.read.events import Event, QueryEvent, RowsEvent, RowsQueryEvent, TransactionPayloadEvent
from binlake.read.gzipped import GzipBinlog, is_gzip
from binlake.text.rowtext import raw_text

#: Compressed MariaDB rows events and the plain type their base64 is rewritten to.
_UNCOMPRESSED_TYPE = {166: 23, 167: 24, 168: 25, 169: 30, 170: 31, 171: 32}


def rewrite_table_map_db(raw: bytes, header_length: int, fde, database: str,
                         has_crc: bool) -> bytes:
    """The table map with another database name (mysqlbinlog --rewrite-db), CRC fixed."""
    header_len = min(header_length, 19)
    post = 8
    if fde is not None and len(fde.post_header_lengths) >= E.TABLE_MAP_EVENT:
        post = fde.post_header_lengths[E.TABLE_MAP_EVENT - 1]
    start = header_len + post
    old_len = raw[start]
    new_name = database.encode("utf-8")
    body_end = len(raw) - (4 if has_crc else 0)
    new = bytearray(raw[:start]) + bytes([len(new_name)]) + new_name + raw[start + 1 + old_len:body_end]
    new[9:13] = (len(new) + (4 if has_crc else 0)).to_bytes(4, "little")
    if has_crc:
        new += zlib.crc32(bytes(new)).to_bytes(4, "little")
    return bytes(new)


def with_crc32(raw: bytes) -> bytes:
    """An event without a checksum given one (its length field grows by 4)."""
    new = bytearray(raw)
    new[9:13] = (len(raw) + 4).to_bytes(4, "little")
    return bytes(new) + zlib.crc32(bytes(new)).to_bytes(4, "little")


class RawEvents:
    """The bytes of each event, for BINLOG blocks and hexdumps.

    Events of a file are re-read from it by position (the reader keeps no raw
    bytes); events inside a MySQL transaction payload are cut from the
    decompressed payload, in the order the reader hands them out.
    """

    def __init__(self):
        self._files: dict[str, object] = {}
        self._payload_event = None     # the TransactionPayloadEvent being walked
        self._payload_stream = None    # its uncompressed bytes, read as inner events come
        self._lookahead = b""
        self._payload_raw = b""
        self.payload_end = 0
        self._last_raw: tuple | None = None

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()

    def note(self, event: Event) -> None:
        """Follow the stream (every event, printed or not): a payload's inner
        events take their bytes from its uncompressed stream, in order."""
        if isinstance(event, TransactionPayloadEvent):
            self._payload_event = event
            self._payload_stream = event.open_payload()
            self._lookahead = b""
            self.payload_end = event.header.next_pos
        elif self._payload_event is not None:
            if self.inside_payload(event):
                raw = self._read_payload(event.header.length)
                if self._payload_event.header.checksum is not None:
                    # As MySQL's mysqlbinlog does: inner events get the checksum
                    # the format description promises, so BINLOG statements verify.
                    raw = with_crc32(raw)
                self._payload_raw = raw
            else:
                self._payload_event = self._payload_stream = None

    def _read_payload(self, size: int) -> bytes:
        data = self._lookahead
        self._lookahead = b""
        while len(data) < size:
            more = self._payload_stream.read(size - len(data))
            if not more:
                break
            data += more
        return data

    def inside_payload(self, event: Event) -> bool:
        p = self._payload_event
        return (p is not None and event is not p and event.header.file == p.header.file
                and event.header.pos == p.header.pos)

    def payload_finished(self, event: Event) -> bool:
        """Whether `event` was the last event inside its payload."""
        if not self.inside_payload(event):
            return False
        if not self._lookahead:
            self._lookahead = self._payload_stream.read(1)
        return not self._lookahead

    def get(self, event: Event) -> bytes:
        if self.inside_payload(event):
            return self._payload_raw
        key = (event.header.file, event.header.pos)
        if self._last_raw is not None and self._last_raw[0] == key:
            return self._last_raw[1]
        handle = self._files.get(event.header.file)
        if handle is None:
            handle = self._open(event.header.file)
            self._files[event.header.file] = handle
        if hasattr(handle, "raw_event"):  # a live server's binlog keeps its recent events
            raw = handle.raw_event(event.header.pos, event.header.length)
            if raw is None:
                from binlake.errors import CorruptEvent
                raise CorruptEvent(event.header.file, event.header.pos,
                                   "the event's bytes are no longer held (read from a live "
                                   "server: print it from a --raw copy)")
        else:
            handle.seek(event.header.pos)
            raw = handle.read(event.header.length)
        self._last_raw = (key, raw)
        return raw

    def verbatim(self, event: RowsEvent) -> bool:
        """Whether `rows_raw` is the event's bytes in its file, as they are."""
        return not self.inside_payload(event) and event.header.type_code not in _UNCOMPRESSED_TYPE

    def chunks(self, event: Event, size: int):
        """The event's bytes from its file, `size` bytes at a time (a huge
        event is never read whole)."""
        handle = self._files.get(event.header.file)
        if handle is None:
            handle = self._files[event.header.file] = self._open(event.header.file)
        pos, left = event.header.pos, event.header.length
        while left > 0:
            handle.seek(pos)
            data = handle.read(min(size, left))
            if not data:
                break
            yield data
            pos += len(data)
            left -= len(data)

    @staticmethod
    def _open(path: str):
        from binlake.live.source import live_file
        stream = live_file(path)
        if stream is not None:  # a live server's binlog: its recent events' bytes
            return stream
        if is_gzip(path):  # a gzip stream cannot seek cheaply; unpack once to a spool file
            import shutil
            import tempfile
            spool = tempfile.TemporaryFile()
            with GzipBinlog(path) as src:
                shutil.copyfileobj(src, spool)
            return spool
        return open(path, "rb")

    def rows_raw(self, event: RowsEvent) -> bytes:
        """The event as mysqlbinlog re-encodes it: compressed rows events are
        written uncompressed, with the plain type code and a new CRC."""
        raw = self.get(event)
        code = event.header.type_code
        if code not in _UNCOMPRESSED_TYPE:
            return raw
        has_crc = event.header.checksum is not None
        prefix_len = event.rows_offset - event.header.pos
        rows = event.rows_data
        if not isinstance(rows, (bytes, bytearray, memoryview)):
            rows = rows.read(0, len(rows))
        new = bytearray(raw[:prefix_len]) + rows
        new[4] = _UNCOMPRESSED_TYPE[code]
        new[9:13] = (len(new) + (4 if has_crc else 0)).to_bytes(4, "little")
        if has_crc:
            new += zlib.crc32(bytes(new)).to_bytes(4, "little")
        return bytes(new)

    def query_text(self, event: QueryEvent, state) -> str:
        """The statement exactly as stored (bytes that are not UTF-8 kept)."""
        raw = self.get(event)
        code = event.header.type_code
        if not raw or code == E.QUERY_COMPRESSED_EVENT:
            return event.query
        fde = state.fde
        # the FDE's lengths are in the file's own numbering (early 5.1 trees
        # numbered events differently: read/reader.py `_permutation`), as is raw[4]
        stored_code = raw[4]
        if fde is not None and 0 < stored_code <= len(fde.post_header_lengths):
            post = fde.post_header_lengths[stored_code - 1]
        else:
            post = 11  # binlog v1/v3: no status variables
        base = state.header_length
        db_len = raw[base + 8]
        status_len = int.from_bytes(raw[base + 11:base + 13], "little") if post >= 13 else 0
        start = base + post + status_len + db_len + 1
        end = len(raw) - (4 if event.header.checksum is not None else 0)
        return raw_text(raw[start:end])

    def annotate_text(self, event: RowsQueryEvent) -> str:
        raw = self.get(event)
        if not raw:
            return event.query
        end = len(raw) - (4 if event.header.checksum is not None else 0)
        return raw_text(raw[19:end]) if len(raw) >= 19 else event.query

    def rows_query_text(self, event: RowsQueryEvent) -> str:
        return event.query
