"""Errors of binlake: every one names the file, the byte offset and the reason.

Rule: a reader that meets bad input stops with one of these *after* it has
handed out every good event before the offset, so nothing already read is lost.
"""

from __future__ import annotations


class BinlogError(Exception):
    """Bad or unreadable binlog input at a known place."""

    reason = "binlog error"

    def __init__(self, file: str, offset: int, detail: str | None = None):
        self.file = file
        self.offset = offset
        self.detail = detail or self.reason
        super().__init__(f"{file}: offset {offset}: {self.detail}")


class NotABinlog(BinlogError):
    reason = "not a binlog file (bad magic number)"


class EncryptedBinlog(BinlogError):
    reason = "binlog is encrypted; decrypt it with the server's keyring first"


class TruncatedEvent(BinlogError):
    reason = "event is cut short (file truncated)"


class PartialEvent(TruncatedEvent):
    """The last event of a file the server still had open (IN_USE flag set)."""

    reason = "partial last event of a binlog still being written"


class ChecksumMismatch(BinlogError):
    reason = "CRC32 checksum mismatch"


class CorruptEvent(BinlogError):
    reason = "event is malformed"


class UnsupportedFeature(BinlogError):
    reason = "a feature needed to decode this event is not available"
