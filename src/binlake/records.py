"""Change records: the boundary every consumer (CLI, SQL writer, Spark) uses.

Strategy: walk the events once, carrying the transaction context that rows
events do not repeat (GTID, from GTID events of both flavours), and emit one
`Change` per row image pair. Values are as `values.py` describes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

from .events import Event, GtidEvent, MariadbGtidEvent, RowsEvent
from .reader import BinlogReader


@dataclass(frozen=True, slots=True)
class Change:
    file: str
    pos: int            #: offset of the rows event
    next_pos: int
    row_index: int      #: index of this row within the event
    timestamp: int
    server_id: int
    gtid: str | None
    database: str
    table: str
    op: str             #: 'insert' | 'update' | 'delete'
    before: dict | None
    after: dict | None


def rows_changes(event: RowsEvent, gtid: str | None) -> Iterator[Change]:
    """The changes of one rows event, in its transaction `gtid`."""
    header = event.header
    table = event.table
    database = table.database if table else ""
    name = table.table if table else ""
    for index, (before, after) in enumerate(event.iter_rows()):
        yield Change(header.file, header.pos, header.next_pos, index, header.timestamp,
                     header.server_id, gtid, database, name, event.operation, before, after)


def changes_from_events(events: Iterable[Event]) -> Iterator[Change]:
    gtid = None
    for event in events:
        if isinstance(event, RowsEvent):
            yield from rows_changes(event, gtid)
        elif isinstance(event, GtidEvent):
            gtid = event.gtid
        elif isinstance(event, MariadbGtidEvent):
            gtid = event.gtid


def changes(paths, **reader_options) -> Iterator[Change]:
    """Every row change in the binlog file(s), in order; column names as the
    binlog or the schema history (`schema`, see BinlogReader) knows them."""
    return changes_from_events(BinlogReader(paths, **reader_options))
