"""The slow exhaustive sweeps: runs killed at random moments, every checkpoint
of a workload. A full test run takes a seeded, rotating share of each; set
BINLAKE_SWEEPS=full to run all of it.

Strategy: each sweep asks for its random generator and its points here. The
seed is BINLAKE_SWEEP_SEED when set, else the day's number, so each day's CI
run covers another share, every run prints its seed at its end, and a
failure is repeated with BINLAKE_SWEEP_SEED=N (the full sweep with the
sweep's own fixed seed is BINLAKE_SWEEPS=full alone). Nothing else changes:
every run still checks its share with the same oracle.
"""

from __future__ import annotations

import math
import os
import random
import time

SHARE = 1 / 3  #: of each sweep's points, in a run that is not full


def full() -> bool:
    return os.environ.get("BINLAKE_SWEEPS", "") == "full"


def seed() -> int:
    given = os.environ.get("BINLAKE_SWEEP_SEED")
    return int(given) if given else int(time.time() // 86400)


def describe() -> str:
    if full():
        return "sweeps: full (BINLAKE_SWEEPS=full)"
    return (f"sweeps: a {SHARE:.0%} share, seed {seed()} (repeat with BINLAKE_SWEEP_SEED={seed()}; "
            "BINLAKE_SWEEPS=full runs all)")


def trials(total: int, fraction: float = SHARE) -> int:
    """How many of a sweep's `total` random trials this run makes (at least
    one): `fraction` of them (SHARE unless the sweep says less)."""
    return total if full() else max(1, math.ceil(total * fraction))


def generator(fixed_seed: int) -> random.Random:
    """The sweep's random moments: its own fixed seed in a full run, else
    that seed moved by the run's rotating one."""
    return random.Random(fixed_seed if full() else fixed_seed * 1_000_003 + seed())


def share(points: list, fraction: float = SHARE) -> list:
    """A share of `points` (`fraction` of them), in their order: the first
    always (a sweep's baseline), the others picked by the run's seed."""
    points = list(points)
    if full() or len(points) <= 1:
        return points
    rest = range(1, len(points))
    picked = sorted(random.Random(seed()).sample(rest, max(0, trials(len(points), fraction) - 1)))
    return [points[0]] + [points[i] for i in picked]
