"""TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+, binlog_transaction_compression).

Layout: TLV header fields (type, length, value; all net_field_length
integers) ending with field 0, then the payload: the transaction's events,
back to back with their own headers and no checksums, zstd-compressed or not.
The reader walks the inner events right after yielding this one.
"""

from __future__ import annotations

from binlake.constants import NONE, ZSTD
from binlake.read.cursor import Cursor
from binlake.errors import CorruptEvent, UnsupportedFeature
from binlake.read.events.base import Event, EventHeader, frozen_dataclass

OTW_PAYLOAD_HEADER_END_MARK = 0
OTW_PAYLOAD_SIZE_FIELD = 1
OTW_PAYLOAD_COMPRESSION_TYPE_FIELD = 2
OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD = 3

COMPRESSION_NAMES = {ZSTD: "ZSTD", NONE: "NONE"}
#: A payload may claim at most this many uncompressed bytes per stored byte
#: (zstd on binlog events stays far below it), and may not decompress past
#: what it claims: the work of reading a payload is bounded by its own size.
MAX_PAYLOAD_RATIO = 4096


@frozen_dataclass
class TransactionPayloadEvent(Event):
    compression_type: int
    payload_size: int
    uncompressed_size: int
    payload: bytes       #: the compressed bytes, as stored
    payload_offset: int  #: file offset of the payload

    @property
    def compression_name(self) -> str:
        return COMPRESSION_NAMES.get(self.compression_type, str(self.compression_type))

    def fields(self) -> dict:
        return {"compression_type": self.compression_name, "payload_size": self.payload_size,
                "uncompressed_size": self.uncompressed_size}

    @property
    def decompressed_limit(self) -> int:
        """The most bytes the payload may decompress to: the size its header
        claims (at most MAX_PAYLOAD_RATIO times its own; a header that
        claims none gets that bound)."""
        if self.uncompressed_size != self.payload_size:
            return self.uncompressed_size
        return MAX_PAYLOAD_RATIO * self.payload_size

    def open_payload(self):
        """A file-like reader of the uncompressed payload (streamed, not held)."""
        import io
        if self.compression_type == NONE:
            return io.BytesIO(self.payload)
        if self.compression_type != ZSTD:
            raise UnsupportedFeature(self.header.file, self.payload_offset,
                                     f"unknown payload compression {self.compression_type}")
        try:
            import zstandard
        except ImportError:
            raise UnsupportedFeature(self.header.file, self.payload_offset,
                                     "zstd-compressed transaction: install binlake[zstd]") from None
        return _CheckedStream(zstandard.ZstdDecompressor().stream_reader(self.payload),
                              zstandard.ZstdError, self.header, self.decompressed_limit)

    def uncompressed(self) -> bytes:
        """The whole uncompressed payload (open_payload() streams it instead)."""
        stream = self.open_payload()
        chunks = []
        while chunk := stream.read(1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)


class _CheckedStream:
    """A decompressing reader whose failures are the payload event's
    CorruptEvent; it gives no more than the `limit` bytes the header claims."""

    def __init__(self, stream, error_type: type, header: EventHeader, limit: int):
        self._stream, self._error_type, self._header = stream, error_type, header
        self._left = limit

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._stream.read(size)
        except self._error_type as exc:
            # libzstd's own words, as the native core gives them
            reason = str(exc).removeprefix("zstd decompress error: ")
            raise CorruptEvent(self._header.file, self._header.pos,
                               f"transaction payload: zstd: {reason}") from None
        self._left -= len(data)
        if self._left < 0:
            raise CorruptEvent(self._header.file, self._header.pos,
                               "transaction payload: decompresses past the size its header "
                               "claims") from None
        return data

    def close(self) -> None:
        self._stream.close()


def decode_transaction_payload(header: EventHeader, cur: Cursor, ctx) -> TransactionPayloadEvent:
    values = {OTW_PAYLOAD_SIZE_FIELD: 0, OTW_PAYLOAD_COMPRESSION_TYPE_FIELD: NONE,
              OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD: 0}
    while True:
        field = cur.packed_len()
        if field == OTW_PAYLOAD_HEADER_END_MARK:
            break
        value = cur.sub(cur.packed_len())
        values[field] = value.packed_len()
    offset = cur.offset()
    payload = cur.rest()
    size = values[OTW_PAYLOAD_SIZE_FIELD]
    if size and size != len(payload):
        raise cur.error(f"payload is {len(payload)} bytes, header says {size}")
    claimed = values[OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD]
    if claimed > MAX_PAYLOAD_RATIO * max(len(payload), 1):
        raise cur.error(f"payload of {len(payload)} bytes claims {claimed} uncompressed: "
                        f"more than {MAX_PAYLOAD_RATIO} times its size")
    uncompressed = claimed or len(payload)
    return TransactionPayloadEvent(header, values[OTW_PAYLOAD_COMPRESSION_TYPE_FIELD],
                                   len(payload), uncompressed, payload, offset)
