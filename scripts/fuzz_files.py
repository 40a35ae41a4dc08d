"""Whole-file fuzzer: mutated binlogs through every entry point, on both cores,
with a clock and a memory meter.

    PYTHONPATH=src .venv/bin/python scripts/fuzz_files.py -n 20000 [--seed 1]
    PYTHONPATH=src .venv/bin/python scripts/fuzz_files.py --replay FILE|DIR ...
    PYTHONPATH=src .venv/bin/python scripts/fuzz_files.py --write-seeds DIR

Strategy: each case is a small corpus file changed the way damaged and
hostile binlogs are (fuzz/README.md: bits flipped, an event length or a
post-header overwritten with 0, tiny or huge values, the format
description's header length and post-header lengths, table-map metadata and
column bitmaps rewritten, the file cut, events spliced in from another file or
repeated). A worker process reads it through `binlake.open` + every row,
`binlake.changes`, `dump -vv` and `sql`, first on the native core then on the
pure-Python reference, and reports how each ended. The parent gives each case
a time budget (1 s per MB plus 50 ms, per entry point and core, and a floor
for process noise) and kills a worker that overruns it.

A failure is anything but a clean end or a `BinlogError`: another exception,
a crash, a hang (the budget exceeded), or a peak RSS beyond twice the input
plus 100 MB. Each failing input is written to `--out` (default
`fuzz/found/`), named by its case, with a line saying why, so that it can be
replayed and then kept as a regression input in `tests/regressions/`.
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import sys
import time
from pathlib import Path

from binlake.testing.hostile import ENTRY_POINTS, Worker, check

ROOT = Path(__file__).resolve().parent.parent
#: Seed files larger than this are cut to it (at an event boundary): small
#: inputs make fast cases and a hang stands out.
MAX_SEED_BYTES = 16 << 10
INTERESTING = (0, 1, 2, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF)
#: A v4 format description's header-length byte, from its event's start: the
#: common header (19), binlog version (2), server version (50), timestamp (4).
#: The post-header lengths of the event types follow it.
FDE_HEADER_LENGTH_AT = 19 + 2 + 50 + 4


def corpus_dir() -> Path:
    return Path(os.environ.get("BINLAKE_CORPUS", ROOT.parent / "shared" / "binlogs"))


def event_positions(data: bytes) -> list[int]:
    """Event starts by the v4 header lengths (enough for choosing where to cut)."""
    positions, pos = [], 4
    while pos + 19 <= len(data):
        length = struct.unpack_from("<I", data, pos + 9)[0]
        if length < 19:
            break
        positions.append(pos)
        pos += length
    return positions


def load_seeds() -> list[tuple[bytes, list[int]]]:
    """Every corpus binlog (its head, when big): each event family, format
    version and server generation the corpus has."""
    seeds = []
    for path in sorted(corpus_dir().rglob("*")):
        if not path.is_file() or path.suffix == ".md":
            continue
        with open(path, "rb") as f:
            data = f.read(MAX_SEED_BYTES * 4)
        if data[:4] != b"\xfebin":
            continue
        positions = event_positions(data)
        if len(data) > MAX_SEED_BYTES:
            cut = max((p for p in positions if p <= MAX_SEED_BYTES), default=len(data))
            data, positions = data[:cut], [p for p in positions if p < cut]
        if positions:
            seeds.append((data, positions))
    if not seeds:
        sys.exit(f"no seed files under {corpus_dir()} (set BINLAKE_CORPUS)")
    return seeds


def mutate(seeds, rng: random.Random) -> bytes:
    data, positions = rng.choice(seeds)
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        kind = rng.random()
        pos = rng.choice(positions)
        nxt = next((p for p in positions if p > pos), len(out))
        if kind < 0.25:                                   # bits and bytes inside an event
            at = rng.randrange(pos, min(nxt, len(out))) if pos < len(out) else len(out) - 1
            if rng.random() < 0.5:
                out[at] ^= 1 << rng.randrange(8)
            else:
                out[at] = rng.choice((0, 1, 0x7F, 0x80, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF))
        elif kind < 0.40 and pos + 13 <= len(out):        # the event's length field
            struct.pack_into("<I", out, pos + 9, rng.choice(
                (*INTERESTING, 19, 20, nxt - pos + rng.randint(-8, 8))) & 0xFFFFFFFF)
        elif kind < 0.60:                                 # a little-endian field in the body
            start = min(pos + 19 + rng.randrange(0, 24), len(out))
            width = rng.choice((1, 2, 4, 8))
            if start + width <= len(out):
                value = rng.choice(INTERESTING) if rng.random() < 0.7 else rng.getrandbits(64)
                out[start:start + width] = (value & ((1 << 8 * width) - 1)).to_bytes(width,
                                                                                    "little")
        elif kind < 0.70:                                 # cut
            out = out[:rng.randrange(4, len(out))]
            break
        elif kind < 0.85:                                 # splice an event from any seed
            other, other_positions = rng.choice(seeds)
            src = rng.choice(other_positions)
            src_end = next((p for p in other_positions if p > src), len(other))
            out[pos:pos] = other[src:src_end]
        elif kind < 0.92 and positions[0] == 4:          # a description's lengths
            # The first description, or a copy of it further on (relay logs and
            # rotated files carry several): its header length or one event
            # type's post-header length.
            fde, end = positions[0], next((p for p in positions if p > 4), len(out))
            if rng.random() < 0.5:
                out[end:end] = out[fde:end]
                fde = end
            at = fde + FDE_HEADER_LENGTH_AT + rng.choice((0, 0, rng.randrange(1, 40)))
            if at < len(out):
                out[at] = rng.choice((0, 1, 2, 8, 13, 18, 19, 20, 0x7F, 0xFF, rng.randrange(256)))
        else:                                             # repeat an event
            out[nxt:nxt] = out[pos:nxt]
    return bytes(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", type=int, default=0, help="first case number")
    parser.add_argument("--out", default=str(ROOT / "fuzz" / "found"))
    parser.add_argument("--replay", nargs="+", metavar="PATH",
                        help="run these inputs (files, or every file of a directory, such "
                             "as another fuzzer's corpus) and say how each ends")
    parser.add_argument("--write-seeds", metavar="DIR",
                        help="write the seed inputs (the corpus files' heads) to DIR, as the "
                             "coverage-guided fuzzers' seed corpus, and stop")
    args = parser.parse_args()
    if args.write_seeds:
        target = Path(args.write_seeds)
        target.mkdir(parents=True, exist_ok=True)
        for number, (data, _) in enumerate(load_seeds()):
            (target / f"seed-{number:03d}.bin").write_bytes(data)
        return 0
    w = Worker()
    if args.replay:
        return replay(w, args.replay)
    seeds = load_seeds()
    out = Path(args.out)
    scratch = out / f".case-{os.getpid()}.bin"
    out.mkdir(parents=True, exist_ok=True)
    found = 0
    slowest: dict = {}
    started = time.perf_counter()
    try:
        for case in range(args.first, args.first + args.cases):
            rng = random.Random(f"{args.seed}:{case}")
            data = mutate(seeds, rng)
            scratch.write_bytes(data)
            w, problems = check(w, str(scratch), len(data), slowest)
            if problems:
                found += 1
                target = out / f"seed{args.seed}-case{case}.bin"
                target.write_bytes(data)
                target.with_suffix(".txt").write_text("\n".join(problems) + "\n")
                print(f"case {case}: {'; '.join(problems)}", flush=True)
            if case % 500 == 0:
                print(f"[{case - args.first + 1} cases, {found} found, "
                      f"{time.perf_counter() - started:.0f} s]", flush=True)
    finally:
        scratch.unlink(missing_ok=True)
        w.conn.send(None)
    print(f"{args.cases} cases ({len(ENTRY_POINTS) * 2} runs each) in "
          f"{time.perf_counter() - started:.0f} s: {found} failing inputs in {out}")
    print_slowest(slowest)
    return 1 if found else 0


def replay(w: Worker, paths: list[str]) -> int:
    files = [str(p) for path in map(Path, paths)
             for p in (sorted(path.iterdir()) if path.is_dir() else [path]) if p.is_file()]
    failing = 0
    slowest: dict = {}
    for path in files:
        w, problems = check(w, path, os.path.getsize(path), slowest)
        if problems or len(files) == 1:
            print(f"{path}: {'; '.join(problems) or 'clean'}", flush=True)
        failing += bool(problems)
    print(f"{len(files)} inputs, {failing} failing")
    print_slowest(slowest)
    return 1 if failing else 0


def print_slowest(slowest: dict) -> None:
    print("slowest run of each entry point: " + ", ".join(
        f"{name} {seconds * 1000:.0f} ms ({size} B)"
        for name, (seconds, size) in sorted(slowest.items())))


if __name__ == "__main__":
    sys.exit(main())
