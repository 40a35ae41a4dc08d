"""A quick sample of the differential mutation fuzzer (scripts/fuzz_differential.py
runs the long version): mutated corpus rows events and table maps decode to
the same values or the same error (class, offset) in both cores, and nothing
but a BinlogError ever escapes. A failure names the case index; replay it with
`scripts/fuzz_differential.py --replay INDEX --seed SEED`.
"""

from __future__ import annotations

import pytest

from binlake import core

from differential.mutations import load_seeds, run_cases

SAMPLE = 20000
pytestmark = pytest.mark.skipif(not core.available(),
                                reason="native core not built (scripts/build_native.sh)")


@pytest.fixture(scope="module")
def seeds(corpus):
    seeds = load_seeds(corpus)
    assert len(seeds) > 200, "too few seed events: did the corpus or the reader change?"
    return seeds


@pytest.mark.parametrize("run_seed", [0, 1])
def test_mutated_events_decode_alike_in_both_cores(seeds, run_seed):
    counts, failures = run_cases(seeds, run_seed, 0, SAMPLE // 2)
    report = "\n".join(f"case {i} ({origin}, {ops}): {problem}"
                       for i, origin, ops, problem in failures[:10])
    assert not counts["disagree"], f"replay with --seed {run_seed} --replay INDEX:\n{report}"
    # the sample must reach values, not only errors at the first byte
    assert counts["rows"] > SAMPLE // 2 // 10, counts
    assert counts["CorruptEvent"] and counts["UnsupportedFeature"], counts


def test_the_fuzzer_sees_a_broken_core(seeds, monkeypatch):
    """Break the pure TIME2 decoder by one microsecond: the sample must notice."""
    from binlake.read import values
    real = values._time2

    def off_by_one(fsp):
        decode = real(fsp)

        def wrong(buf, pos):
            value, end = decode(buf, pos)
            return value + values.dt.timedelta(microseconds=1), end
        return wrong
    monkeypatch.setattr(values, "_time2", off_by_one)
    for seed in seeds:
        seed.event.table.cache.clear()  # plans hold the decoders they were built with
    try:
        counts, failures = run_cases(seeds, 0, 0, SAMPLE // 2)
    finally:
        monkeypatch.undo()
        for seed in seeds:
            seed.event.table.cache.clear()
    assert counts["disagree"] > 0
    assert any("values differ" in problem for *_, problem in failures)


def test_images_of_no_columns_with_data_left_are_an_error_in_both_cores(seeds):
    """Found by the fuzzer: both cores looped forever (out of memory) on this."""
    from dataclasses import replace

    from differential.equality import outcome
    event = replace(seeds[0].event, columns_present=0, columns_present_after=None,
                    header=replace(seeds[0].event.header, type_code=30))
    assert event.rows_data
    native, pure = outcome(event, pure=False), outcome(event, pure=True)
    assert native == pure and native[:2] == ("error", "CorruptEvent"), (native, pure)
    assert native[3] == event.rows_offset
