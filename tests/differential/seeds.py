"""Rows events of real binlogs, with their table maps, as differential inputs.

Strategy: every file is read once with the normal reader; each rows event
that has a table map and whose images are in memory is kept. A file that
stops with a BinlogError (corrupt or truncated corpus files) gives the rows
events before the error: that is where row decoding can be compared.
"""

from __future__ import annotations

from pathlib import Path

import binlake
from binlake.errors import BinlogError
from binlake.read.events import RowsEvent
from binlake.read.rows import LazyRowData


def binlog_files(root: Path) -> list[str]:
    """Corpus files relative to `root`, sorted (MANIFEST.md excluded)."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and p.name != "MANIFEST.md")


def rows_events(path: str) -> list[RowsEvent]:
    """The decodable-in-memory rows events of one binlog file, in file order."""
    events = []
    try:
        for event in binlake.open(path):
            if (isinstance(event, RowsEvent) and event.table is not None
                    and not isinstance(event.rows_data, LazyRowData)):
                events.append(event)
    except BinlogError:
        pass  # the events read before a corrupt spot are still good inputs
    return events
