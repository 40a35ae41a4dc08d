#!/usr/bin/env python3
"""Randomized workloads against the lake (binlake.testing.randomized): N seeds
of M steps each, every seed on a fresh private MariaDB, the lake checked
after every few steps by the tests' oracle (tests/spark/randomized_oracle.py).

    PYTHONPATH=src .venv/bin/python bench/bench_randomized.py [--seeds 20] [--steps 100]
        [--first-seed 1] [--seed S] [--keep-going] [--workdir DIR] [--engine driver|spark]
    ... bench/bench_randomized.py --script repro.sql  # a minimized finding: one statement a
                                                    # line, `-- check` after each action

Strategy: the seeds are --first-seed, --first-seed + 1, ... (or --seed S
alone: a finding's repetition, with --steps its step). One Spark session
(local[2]) serves every pipeline run, as in the tests. A seed stops at its
first finding unless --keep-going (then a failed run continues from a fresh
lake, and a difference stays in the lake's later checks). The known
defects (randomized.KNOWN) are not generated unless --known-too. Printed: each
seed's steps, checks, statements and findings (each reported in full), then
the totals and the time. Exit status 1 when anything was found.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the oracle is the tests' own (spark.truth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--seed", type=int, help="this seed alone")
    parser.add_argument("--keep-going", action="store_true")
    parser.add_argument("--workdir", help="kept after the run (default: a temporary one)")
    parser.add_argument("--engine", choices=("random", "driver", "spark"), default="random",
                        help="who computes the tables at each check (default: drawn per check)")
    parser.add_argument("--known-too", action="store_true",
                        help="generate what reproduces the known defects too "
                             "(binlake.testing.randomized.KNOWN; left out by default)")
    parser.add_argument("--write-script", action="store_true",
                        help="print the --seed's statements as a --script (--steps of them)")
    parser.add_argument("--script", help="run this file's statements instead (no CREATE of "
                                         "the workload's own), a check at each `-- check`")
    parser.add_argument("--history", choices=("odd", "all", "none"), default="odd",
                        help="seeds that keep --history (whole row images only) and read "
                             "earlier checks back with --as-of (default: odd seeds); the "
                             "others run a replica and fail over to it")
    args = parser.parse_args()

    from binlake.testing.randomized import KNOWN
    if args.write_script:
        from binlake.testing.randomized import write_script
        seed = args.seed or 0
        sys.stdout.write(write_script(seed, args.steps, avoid=() if args.known_too else KNOWN,
                                      history=args.history == "all" or (
                                          args.history == "odd" and seed % 2 == 1)))
        return 0
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import binlake.spark
    from binlake.testing.randomized import Outcome, Run, read_script
    from spark.randomized_oracle import capture, compare, compare_captured

    spark = (SparkSession.builder.master("local[2]").appName("bench_randomized")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    binlake.spark.register(spark)

    seeds = [args.seed or 0] if args.seed is not None or args.script else list(
        range(args.first_seed, args.first_seed + args.seeds))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-randomized-"))
    started = time.monotonic()
    total = Outcome(0)
    for seed in seeds:
        folder = workdir / f"seed-{seed}"
        shutil.rmtree(folder, ignore_errors=True)
        history = args.history == "all" or (args.history == "odd" and seed % 2 == 1)
        run = Run(seed, folder, compare, keep_going=args.keep_going, engine=args.engine,
                  avoid=() if args.known_too else KNOWN, history=history,
                  as_of=(capture, compare_captured) if history else None,
                  failover=not history)
        if args.script:
            outcome = run.run(0, script=read_script(Path(args.script).read_text()), setup=False)
        else:
            outcome = run.run(args.steps)
        total.add(outcome)
        print(f"seed {seed}{' (--history, --as-of)' if history else ''}: {outcome.summary()}, "
              f"{len(outcome.findings)} finding(s), {outcome.seconds:.1f} s", flush=True)
        for finding in outcome.findings:
            print(finding.report(), flush=True)
        if not args.workdir and not outcome.findings:
            shutil.rmtree(folder, ignore_errors=True)
    seconds = time.monotonic() - started
    findings = total.findings
    print(f"\n{len(seeds)} seeds, {total.summary()}: {len(findings)} finding(s) "
          f"({len({f.seed for f in findings})} seed(s)) in {seconds:.0f} s "
          f"({seconds / max(total.steps, 1):.2f} s a step); work in {workdir}")
    spark.stop()
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
