"""The native text sink (rust/src/sink/text.rs) against the pure reference
(`binlake/text/rowtext.py`): every rows event of every corpus file, -v and -vv,
the same lines and row count, or the same RowFormatError.

The native path hands back to the reference what it will not print itself
(corrupt images, types mysqlbinlog cannot show); corrupted copies of the
corpus images check that hand-back, and the last test keeps it rare on the
real images, so the comparison really exercises the sink.
"""

from __future__ import annotations

import dataclasses
import random
import struct

import pytest

from binlake import core
from corpus.manifest import corpus_files
from binlake.errors import BinlogError
from binlake.read.events.rows import RowsEvent
from binlake.read.rows import PRE_GA_ROWS_EVENTS
from binlake.read.reader import BinlogReader
from binlake.text.rowtext import _native_text, format_rows

pytestmark = pytest.mark.skipif(not core.available(), reason="native core not built")


FILES = corpus_files()


def _rows_events(path):
    """The printable rows events of a file, up to where it can be read."""
    reader = BinlogReader(path, verify_checksums=False, force=True)
    try:
        for event in reader:
            if (isinstance(event, RowsEvent) and event.table is not None
                    and event.header.type_code not in PRE_GA_ROWS_EVENTS):
                yield event
    except (BinlogError, OSError, ValueError):
        return


def _printed(event, verbose: int, pure: bool, database: str | None = None):
    core.use_pure(pure)
    try:
        lines, count = format_rows(event, verbose, database)
        return "".join(lines), count
    except Exception as exc:  # the same failure, text included, on both paths
        return type(exc).__name__, str(exc)
    finally:
        core.use_pure(False)


_handed_back = {"native": 0, "reference": 0}


@pytest.mark.parametrize("path", FILES, ids=[str(p).split("binlogs/", 1)[-1] for p in FILES])
def test_native_text_equals_reference(path):
    native = core.native()
    for event in _rows_events(path):
        for verbose in (1, 2):
            assert _printed(event, verbose, pure=False) == _printed(event, verbose, pure=True), \
                f"{path} at {event.header.pos}, -{'v' * verbose}"
        printed = _native_text(native, event, event.table, event.rows_data, 1, None)
        _handed_back["native" if printed is not None else "reference"] += 1


def test_rewritten_name_with_surrogates_and_many_v():
    """--rewrite-db names come from argv (surrogate escapes for non-UTF-8
    bytes) and -v may be given any number of times."""
    events = [e for path in FILES[:20] for e in _rows_events(path)][:50]
    if not events:
        pytest.skip("no corpus")
    for event in events:
        native = _printed(event, 4, False, "d\udcffb")
        assert native == _printed(event, 4, True, "d\udcffb")


def test_corrupted_images_print_or_fail_alike():
    """Row images with bytes changed, cut short or inserted (seeded): the
    native path hands each failure back, so text and errors stay the reference's."""
    rng = random.Random(5)
    events = [e for path in FILES for e in _rows_events(path)
              if isinstance(e.rows_data, bytes) and e.rows_data]
    if not events:
        pytest.skip("no corpus")
    for event in events:
        data = bytearray(event.rows_data)
        cut = rng.randrange(len(data))
        mode = rng.randrange(3)
        if mode == 0:
            data[cut] = rng.randrange(256)
        elif mode == 1:
            del data[cut:]
        else:
            data[cut:cut] = bytes([rng.randrange(256)])
        mutated = dataclasses.replace(event, rows_data=bytes(data))
        verbose = rng.choice((1, 2))
        assert _printed(mutated, verbose, False) == _printed(mutated, verbose, True), \
            f"{event.header.file} at {event.header.pos}, mode {mode} at {cut}"


def _random_value(rng, size: int, float_format: str | None = None) -> bytes:
    """Random stored bytes; for FLOAT/DOUBLE mostly the values %g rounds
    tricky (ties, exponent edges, inf, nan)."""
    if float_format is None or rng.randrange(4) == 3:
        return bytes(rng.randrange(256) for _ in range(size))
    value = rng.choice([
        rng.choice([0.0, -0.0, 1e-5, 0.0001, 123456.5, 999999.5, 1234567.0, 0.1, 1e38,
                    float("inf"), float("-inf"), float("nan"), 1e-45]),
        rng.uniform(-1e7, 1e7),
        rng.randrange(-10**9, 10**9) / 10**rng.randrange(0, 12)])
    return struct.pack(float_format, value)


def test_random_values_of_types_the_corpus_lacks():
    """FLOAT/DOUBLE %g, VECTOR, out-of-range temporals, overflowing DECIMAL
    groups, BIT: seeded random images of one table, -vv."""
    from binlake.constants import ColumnType as T
    from binlake.read.events.base import EventHeader
    from binlake.read.events.table_map import Column, TableMapEvent
    rng = random.Random(11)
    columns = [(T.MYSQL_TYPE_FLOAT, 4, 4, "<f"), (T.MYSQL_TYPE_DOUBLE, 8, 8, "<d"),
               (T.MYSQL_TYPE_DATETIME2, 6, 8, None), (T.MYSQL_TYPE_TIME2, 3, 5, None),
               (T.MYSQL_TYPE_NEWDECIMAL, 40 << 8 | 10, 19, None), (T.MYSQL_TYPE_TIMESTAMP2, 4, 6, None),
               (T.MYSQL_TYPE_BIT, 3 << 8 | 2, 3, None), (T.MYSQL_TYPE_YEAR, 0, 1, None),
               (T.MYSQL_TYPE_VECTOR, 2, None, "<f"), (T.MYSQL_TYPE_TIME, 0, 3, None),
               (T.MYSQL_TYPE_DATETIME, 0, 8, None), (T.MYSQL_TYPE_NEWDATE, 0, 3, None)]
    table = TableMapEvent(None, 1, 0, "db", "t", tuple(
        Column(i, code, meta, True) for i, (code, meta, _, _) in enumerate(columns)))
    rows = bytearray()
    for _ in range(3000):
        nulls = rng.randrange(1 << 16) & 0x0E7C  # a few columns NULL: no bytes of theirs
        rows += nulls.to_bytes(2, "little")
        for index, (_, _, size, float_format) in enumerate(columns):
            if nulls >> index & 1:
                continue
            if size is None:  # VECTOR: a 2-byte length, then float32s
                n = 4 * rng.randrange(4)
                rows += n.to_bytes(2, "little")
                rows += b"".join(_random_value(rng, 4, float_format) for _ in range(n // 4))
            else:
                rows += _random_value(rng, size, float_format)
    header = EventHeader("random", 4, 0, 30, 1, 0, 0, 0)  # WRITE_ROWS_EVENT
    event = RowsEvent(header, 1, 0, {}, len(columns), (1 << len(columns)) - 1, None, table,
                      bytes(rows), 0)
    assert _native_text(core.native(), event, table, event.rows_data, 2, None) is not None
    native = _printed(event, 2, False)
    assert native[1] == 3000
    assert native == _printed(event, 2, True)


def test_native_text_prints_nearly_everything():
    """Run after the corpus test (file order): the reference prints only the odd event."""
    if not FILES or not sum(_handed_back.values()):
        pytest.skip("the corpus comparison did not run")
    assert _handed_back["native"] > 20 * _handed_back["reference"], _handed_back
