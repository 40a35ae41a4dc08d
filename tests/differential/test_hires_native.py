"""MariaDB's hires TIME/DATETIME/TIMESTAMP(1-6) in both cores: the same values,
the same mysqlbinlog text, and the same error for every cut of the data.

Strategy: the carrier is the real MariaDB 10.0 rows event of the corpus
whose table is `t(id int primary key, d timestamp(3))` (tiflow); its table
map is given the column's precision (`TableMapEvent.with_column_metas`), or
is swapped for synthetic maps of one hires column of each type and fsp
whose rows are every edge value of tests/hires_encoding.py. Those events are
then also seeds of the mutation fuzzer (differential/mutations.py).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from binlake import core
from binlake.constants import ColumnType as T, EventType as E
from binlake.read.events.table_map import Column
from binlake.text.rowtext import _native_text, format_rows

from differential.equality import compare_cores
from differential.mutations import Seed, run_cases
from differential.seeds import rows_events
from hires_encoding import DATETIMES, TIMES, TIMESTAMPS, datetime_hires, time_hires, timestamp_hires

pytestmark = pytest.mark.skipif(not core.available(), reason="native core not built")

TIFLOW = "tiflow/mysql-bin.000001"
ENCODED = {
    T.MYSQL_TYPE_TIMESTAMP: lambda fsp: [timestamp_hires(*v, fsp) for v in TIMESTAMPS],
    T.MYSQL_TYPE_DATETIME: lambda fsp: [datetime_hires(*v, fsp) for v in DATETIMES],
    T.MYSQL_TYPE_TIME: lambda fsp: [time_hires(*v, fsp) for v in TIMES],
}


@pytest.fixture(scope="module")
def carrier(corpus):
    """The tiflow insert into `t` (timestamp(3)): the schema history gives
    its map meta 3 from the file's CREATE TABLE."""
    events = [e for e in rows_events(str(corpus / TIFLOW)) if e.table.table == "t"]
    assert len(events) == 1
    event = events[0]
    assert event.table.with_column_metas({1: 3}) is event.table
    return event


def _event(carrier, column_type: int, fsp: int, operation: str = "insert"):
    """Every edge value of one hires column (plus a NULL), one row each:
    id INT, then the column; an update pairs each value with the next."""
    columns = (Column(0, T.MYSQL_TYPE_LONG, 0, False), Column(1, column_type, fsp, True))
    table = replace(carrier.table, columns=columns, cache={})
    values = ENCODED[column_type](fsp) + [None]
    images = [(b"\x02" + (0).to_bytes(4, "little") if v is None
               else b"\x00" + i.to_bytes(4, "little") + v) for i, v in enumerate(values)]
    code = {"insert": E.WRITE_ROWS_EVENT_V1, "update": E.UPDATE_ROWS_EVENT_V1,
            "delete": E.DELETE_ROWS_EVENT_V1}[operation]
    if operation == "update":
        images = [a + b for a, b in zip(images, images[1:] + images[:1])]
    return replace(carrier, table=table, rows_data=b"".join(images),
                   header=replace(carrier.header, type_code=code),
                   columns_present_after=0b11 if operation == "update" else None)


def _events(carrier):
    return [_event(carrier, t, fsp, op) for t in ENCODED for fsp in range(1, 7)
            for op in ("insert", "update", "delete")]


def _texts(event):
    out = []
    for pure in (False, True):
        core.use_pure(pure)
        try:
            lines, count = format_rows(event, 2)
            out.append(("".join(lines), count))
        except Exception as exc:  # noqa: BLE001 - the same failure on both paths
            out.append((type(exc).__name__, str(exc)))
        finally:
            core.use_pure(False)
    return out


def test_the_tiflow_timestamp_3_row_decodes_alike(carrier):
    assert compare_cores(carrier) is None
    assert carrier.rows() == [(None, {"id": 1, "d": dt.datetime(2022, 5, 16, 14, 53, 10,
                                                                tzinfo=dt.timezone.utc)})]
    native, pure = _texts(carrier)
    assert native == pure and "@2=1652712790.000 /* TIMESTAMP(3) meta=3 " in native[0]


def test_every_type_fsp_and_edge_value_decodes_and_prints_alike(carrier):
    native = core.native()
    for event in _events(carrier):
        where = f"{event.table.columns[1].type}({event.table.columns[1].meta}) {event.operation}"
        assert compare_cores(event) is None, where
        assert len(event.rows()) == len(ENCODED[event.table.columns[1].type](1)) + 1, where
        texts = _texts(event)
        assert texts[0] == texts[1], where
        # printed by the native sink itself, not handed back to the reference
        assert _native_text(native, event, event.table, event.rows_data, 2, None) is not None, where


def test_every_cut_of_hires_data_fails_alike(carrier):
    """A value cut short: the same error class at the same offset in both cores."""
    cuts = 0
    for event in _events(carrier):
        data = event.rows_data
        for end in range(len(data)):
            cut = replace(event, rows_data=data[:end])
            problem = compare_cores(cut)
            assert problem is None, f"{event.table.columns[1]} cut at {end}: {problem}"
            texts = _texts(cut)
            assert texts[0] == texts[1], f"text of {event.table.columns[1]} cut at {end}"
            cuts += 1
    assert cuts > 2000


def test_mutated_hires_events_decode_alike(carrier):
    seeds = [Seed(f"hires {e.table.columns[1].type}({e.table.columns[1].meta}) {e.operation}", e)
             for e in _events(carrier)]
    counts, failures = run_cases(seeds, 7, 0, 3000)
    report = "\n".join(f"case {i} ({origin}, {ops}): {problem}"
                       for i, origin, ops, problem in failures[:10])
    assert not counts["disagree"], report
    assert counts["rows"] > 300 and counts["CorruptEvent"], counts
