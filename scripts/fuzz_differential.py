#!/usr/bin/env python3
"""Differential mutation fuzzer: the native core against the pure-Python reference.

Real rows events of the corpus (with their table maps) are mutated - row data,
columns-present bitmaps, event type, and the table map's column types,
metadata, signedness, charsets, ENUM/SET names (tests/differential/mutations.py
lists every operator) - and each mutated event is decoded by both cores. They
must give exactly equal values (tests/differential/equality.py) or raise the
same BinlogError class at the same file offset, and neither may let anything
else escape (IndexError, KeyError, struct.error, SystemError, a panic...).
A crash of the process is a failure too: faulthandler prints where.

Run (from the repository root, native core built with scripts/build_native.sh):

    PYTHONPATH=src .venv/bin/python scripts/fuzz_differential.py -n 100000
    PYTHONPATH=src .venv/bin/python scripts/fuzz_differential.py -n 100000 --seed 7 --jobs 2
    PYTHONPATH=src .venv/bin/python scripts/fuzz_differential.py --replay 4711 [--seed 7]

Every case is a pure function of (corpus, --seed, index), so a reported index
replays alone with --replay (which prints the seed event, the operators, and
both cores' results). 100k mutations take about 3-5 minutes per job.
The corpus is $BINLAKE_CORPUS, else ../shared/binlogs beside the repository.
Exit status: 0 when no disagreement was found, 1 otherwise.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import random
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from binlake import core  # noqa: E402

from corpus.manifest import corpus_dir  # noqa: E402
from differential.equality import compare_cores, outcome  # noqa: E402
from differential.mutations import load_seeds, mutate, run_cases  # noqa: E402

_SEEDS = None


def _seeds():
    global _SEEDS
    if _SEEDS is None:
        root = corpus_dir()
        if not (root / "MANIFEST.md").exists():
            sys.exit(f"corpus missing: {root} has no MANIFEST.md (set BINLAKE_CORPUS)")
        _SEEDS = load_seeds(root)
    return _SEEDS


def case(run_seed: int, index: int):
    """(seed, mutated event, operators) of one case."""
    return mutate(_seeds(), random.Random(f"{run_seed}:{index}"))


def limit_memory(megabytes: int) -> None:
    """Cap this process's address space: a decoder that allocates by a corrupt
    length then raises MemoryError (reported as an escape) instead of taking
    the machine down with it."""
    import resource
    limit = megabytes << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_range(run_seed: int, start: int, stop: int, max_failures: int = 50, memory_mb: int = 0):
    """Fuzz cases [start, stop): (counts by result kind, failures [(index, origin, ops, problem)])."""
    if memory_mb:
        limit_memory(memory_mb)
    return run_cases(_seeds(), run_seed, start, stop, max_failures)


def fuzz(run_seed: int, total: int, jobs: int, quiet: bool = False, memory_mb: int = 4096):
    """Run `total` cases over `jobs` processes; returns (counts, failures)."""
    counts, failures = Counter(), []
    chunk = 2000
    ranges = [(run_seed, s, min(s + chunk, total), 50, memory_mb)
              for s in range(0, total, chunk)]
    started = time.monotonic()
    if jobs <= 1:
        results = (run_range(*r) for r in ranges)
    else:
        pool = ProcessPoolExecutor(jobs)
        results = pool.map(run_range, *zip(*ranges))
    done = 0
    for (c, f), r in zip(results, ranges):
        counts += c
        failures += f
        done = r[2]
        if not quiet:
            print(f"  {done}/{total} cases, {counts['disagree']} disagreements, "
                  f"{time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    return counts, failures


def replay(run_seed: int, index: int) -> int:
    seed, event, applied = case(run_seed, index)
    print(f"case {index} (seed {run_seed}): {seed.origin}, operators {applied}")
    print(f"  event type {event.header.type_code}, width {event.width}, present "
          f"{event.columns_present:b}, after {event.columns_present_after}")
    for c in event.table.columns:
        print(f"  column {c.index} {c.key}: type {c.type} meta {c.meta:#x} unsigned {c.unsigned} "
              f"charset {c.charset} enum {c.enum_values and c.enum_values[:3]} "
              f"set {c.set_values and c.set_values[:3]}")
    print(f"  rows data ({len(event.rows_data)} bytes): {event.rows_data[:200].hex()}")
    for pure in (False, True):
        print(f"  {'pure  ' if pure else 'native'}: {outcome(event, pure)!r:.2000}")
    problem = compare_cores(event)
    print(f"  => {problem or 'cores agree'}")
    return 1 if problem else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--cases", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--replay", type=int, metavar="INDEX", help="replay one case verbosely")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="address-space cap per process (default 4096; 0: none)")
    args = parser.parse_args(argv)
    faulthandler.enable()
    if core.native() is None:
        sys.exit("the native core is not available (scripts/build_native.sh; BINLAKE_PURE unset)")
    if args.replay is not None:
        if args.memory_mb:
            limit_memory(args.memory_mb)
        return replay(args.seed, args.replay)
    print(f"{len(_seeds())} seed events; {args.cases} cases, seed {args.seed}, "
          f"{args.jobs} job(s), pid {os.getpid()}", file=sys.stderr)
    counts, failures = fuzz(args.seed, args.cases, args.jobs, memory_mb=args.memory_mb)
    print(f"results: {dict(sorted(counts.items()))}")
    for index, origin, applied, problem in failures[:50]:
        print(f"DISAGREE case {index} ({origin}, {applied}): {problem}")
    return 1 if counts["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main())
