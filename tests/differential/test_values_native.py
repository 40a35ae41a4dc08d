"""The native core and the pure-Python reference give the same row values.

For every rows event of every corpus file (and, with a MariaDB server, of the
binlogs the server tests write), `rows()` decoded by the native core must be
exactly the pure reference's result (same types, Decimal exponents, float
bits, tz-aware datetimes, MysqlTemporal vs str, ...), or both must raise the
same BinlogError class at the same file offset. `equality.py` says what
"exactly" means; the self-tests at the bottom prove it catches differences.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from binlake import core
from binlake.errors import BinlogError
from binlake.read.values import MysqlTemporal

from corpus.manifest import corpus_dir
from differential.equality import compare_cores, first_difference
from differential.seeds import binlog_files, rows_events

needs_native = pytest.mark.skipif(
    not core.available(), reason="native core not built (scripts/build_native.sh)")


@needs_native
@pytest.mark.parametrize("relpath", binlog_files(corpus_dir()) or ["<corpus missing>"])
def test_corpus_rows_equal_across_cores(corpus, relpath):
    disagreements = []
    for event in rows_events(str(corpus / relpath)):
        problem = compare_cores(event)
        if problem:
            disagreements.append(f"event at {event.header.pos}: {problem}")
    assert not disagreements, "\n".join(disagreements[:10])


@needs_native
def test_corpus_has_rows_to_compare(corpus):
    """Guard against a reader change that silently leaves nothing to compare."""
    rows = 0
    for relpath in binlog_files(corpus):
        for event in rows_events(str(corpus / relpath)):
            try:
                rows += len(event.rows())
            except BinlogError:
                pass  # a corrupt event: compared as an error above
    assert rows > 50_000


@needs_native
@pytest.mark.server
def test_server_binlogs_equal_across_cores(server_binlogs):
    events = [e for path in server_binlogs for e in rows_events(path)]
    assert events, f"no rows events in {server_binlogs}"
    disagreements = [f"{e.header.file}@{e.header.pos}: {p}"
                     for e in events if (p := compare_cores(e))]
    assert not disagreements, "\n".join(disagreements[:10])


# -- the comparison itself must catch what == lets through ---------------------

@pytest.mark.parametrize("a, b", [
    (1, 1.0), (1, True), (Decimal("1.0"), Decimal("1.00")), (Decimal("0"), Decimal("-0")),
    (0.0, -0.0), (MysqlTemporal("0000-00-00"), "0000-00-00"), (b"a", "a"),
    (dt.datetime(2020, 1, 1), dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)),
    (frozenset({"a"}), {"a"}), ({"a": 1, "b": 2}, {"b": 2, "a": 1}), ([1.5], (1.5,)),
    (dt.timedelta(0), dt.timedelta(microseconds=1)),
])
def test_equality_sees_differences_that_eq_hides(a, b):
    assert first_difference(a, b) is not None
    assert first_difference(b, a) is not None


def test_equality_accepts_equal_values():
    row = {"a": Decimal("1.50"), "b": float("nan"), "c": MysqlTemporal("0000-00-00"),
           "d": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), "e": frozenset({"x"}),
           "f": None, "g": [1.0, 2.0], "h": b"\x00", "i": dt.timedelta(hours=-1)}
    copy = {k: (frozenset(v) if isinstance(v, frozenset) else v) for k, v in row.items()}
    assert first_difference([(None, row)], [(None, copy)]) is None


@needs_native
def test_a_broken_value_in_one_core_is_caught(corpus, monkeypatch):
    """Break the pure DECIMAL decoder's exponent and see the corpus comparison fail."""
    from binlake.read import decimals
    files = binlog_files(corpus)
    event = next(e for f in files for e in rows_events(str(corpus / f))
                 if any(isinstance(v, Decimal) for _, after in e.rows()[:1]
                        for v in (after or {}).values()))
    assert compare_cores(event) is None
    real = decimals._newdecimal

    def wrong(meta):
        decode = real(meta)

        def skewed(buf, pos):
            value, end = decode(buf, pos)
            sign, digits, exponent = value.as_tuple()
            # the same number with one more fraction digit: only the exponent differs
            return Decimal((sign, digits + (0,), exponent - 1)), end
        skewed.cache = {}
        return skewed
    monkeypatch.setattr(decimals, "_newdecimal", wrong)
    decimals.decimal_decoder.cache_clear()
    event.table.cache.clear()
    try:
        problem = compare_cores(event)
        assert problem is not None and "values differ" in problem
    finally:
        monkeypatch.undo()
        decimals.decimal_decoder.cache_clear()
        event.table.cache.clear()
