"""Gzip-compressed binlogs (`binlog.000042.gz`, as backup scripts keep them):
told apart by their magic number and read as a stream of the inflated bytes,
the offsets of which are the binlog's own.

One place for both facts, so that every reader (events, changes, the
commands' printers, the scanner, the Spark ranges) treats such a file alike,
and a damaged or cut compressed stream is a `BinlogError` naming the file
and the inflated offset it reached, not gzip's own exception.
"""

from __future__ import annotations

import gzip
import os
import zlib

from binlake.errors import CorruptEvent, TruncatedEvent

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path) -> bool:
    """Whether the file at `path` starts with the gzip magic number (False
    when it cannot be read: opening it for real says why)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == GZIP_MAGIC
    except OSError:
        return False


class GzipBinlog:
    """A gzip-compressed file read as a stream of its inflated bytes."""

    def __init__(self, path):
        self.name = os.fspath(path)
        self._file = gzip.open(path, "rb")
        self._offset = 0

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._file.read(size)
        except EOFError as exc:   # the compressed stream was cut
            raise TruncatedEvent(self.name, self._offset,
                                 f"the gzip stream ends early ({exc})") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise CorruptEvent(self.name, self._offset, f"damaged gzip stream: {exc}") from None
        self._offset += len(data)
        return data

    def close(self) -> None:
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
