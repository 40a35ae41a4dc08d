"""TRANSACTION_PAYLOAD_EVENT (MySQL 8.0.20+, binlog_transaction_compression).

Layout: TLV header fields (type, length, value; all net_field_length
integers) ending with field 0, then the payload: the transaction's events,
back to back with their own headers and no checksums, zstd-compressed or not.
The reader walks the inner events right after yielding this one.
"""

from __future__ import annotations

from ..constants import NONE, ZSTD
from ..cursor import Cursor
from ..errors import UnsupportedFeature
from .base import Event, EventHeader, frozen_dataclass

OTW_PAYLOAD_HEADER_END_MARK = 0
OTW_PAYLOAD_SIZE_FIELD = 1
OTW_PAYLOAD_COMPRESSION_TYPE_FIELD = 2
OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD = 3

COMPRESSION_NAMES = {ZSTD: "ZSTD", NONE: "NONE"}


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
        return zstandard.ZstdDecompressor().stream_reader(self.payload)

    def uncompressed(self) -> bytes:
        """The whole uncompressed payload (open_payload() streams it instead)."""
        stream = self.open_payload()
        chunks = []
        while chunk := stream.read(1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)

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
    uncompressed = values[OTW_PAYLOAD_UNCOMPRESSED_SIZE_FIELD] or len(payload)
    return TransactionPayloadEvent(header, values[OTW_PAYLOAD_COMPRESSION_TYPE_FIELD],
                                   len(payload), uncompressed, payload, offset)
