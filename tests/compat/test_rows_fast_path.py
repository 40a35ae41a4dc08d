"""The drop-in's rows, made a whole rows event at a time from binlake's
native core (`row_event._rows_whole`), are exactly what the row-by-row
conversion of binlake's own rows gives (`_row` over `RowsEvent.rows()`):
same dicts, same key order, same value types and reprs, same none
sources, over every rows event of every real binlog in the corpus."""

from __future__ import annotations

import pytest

from binlake import core
from binlake.compat.pymysqlreplication import _dispatch
from binlake.compat.pymysqlreplication.event import Context
from binlake.compat.pymysqlreplication.row_event import RowsEvent, TableMapEvent, _plan
from binlake.read.events import RowsEvent as BinlakeRowsEvent
from binlake.read.events import TableMapEvent as BinlakeTableMap
from binlake.read.reader import BinlogReader
from corpus.manifest import corpus_files


def _exact(rows) -> list:
    """Rows with each value's type: 1 == 1.0 == True and Decimal('1.0') == Decimal('1.00')."""
    def image(d):
        return [(k, type(v).__name__, repr(v)) for k, v in d.items()]
    return [[(key, image(value)) for key, value in row.items()] for row in rows]


def _outcome(make):
    try:
        return _exact(make())
    except Exception as exc:  # noqa: BLE001 - both ways must fail alike
        return type(exc).__name__


def test_fast_rows_are_the_row_by_row_rows(corpus):
    """One test over the whole corpus: most files hold no rows event of a
    table the drop-in maps, so a test per file would mostly skip."""
    if core.native() is None:
        pytest.skip("no native core: the drop-in has one way only")
    compared = sum(_compared(path) for path in corpus_files())
    assert compared >= 50, compared


def _compared(path) -> int:
    """The rows events of `path` compared both ways (0 for a file binlake's
    own tests hold to be corrupt)."""
    ctx = Context(dbms="mariadb" if "mariadb" in str(path) else "mysql")
    try:
        events = list(BinlogReader(str(path), schema=False))
    except Exception:  # noqa: BLE001 - corrupt files: binlake's own tests hold those
        return 0
    compared = 0
    for event in events:
        if isinstance(event, BinlakeTableMap):
            found = _dispatch.convert(event, TableMapEvent, ctx)
            ctx.table_map[event.table_id] = found.get_table()
        elif isinstance(event, BinlakeRowsEvent):
            cls = _dispatch.event_class(event.header.type_code)
            if not issubclass(cls, RowsEvent) or event.table_id not in ctx.table_map:
                continue
            fast = _dispatch.convert(event, cls, ctx)
            slow = _dispatch.convert(event, cls, ctx)
            plan = _plan(slow._table)
            expected = _outcome(lambda: [slow._row(plan, before, after, False, False)
                                         for before, after in event.rows()])
            assert _outcome(lambda: fast.rows) == expected, (path.name, event.header.pos,
                                                             event.table)
            compared += 1
    return compared
