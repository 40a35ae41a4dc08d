#!/usr/bin/env python3
"""The lake's tables as the state (issue 29's targets): what a run costs
when a table with a long history changes a little, against a run with
nothing new, each a fresh `binlake pipeline` process as a user runs it.

    .venv/bin/python bench/bench_lake_state.py [--history-rows 2500000] [--repeat 3]

Strategy: a private MariaDB writes binlog.000001 once (cached under
bench/data/state-<N>/): a keyed table `hist` and a keyless one `bag` of
10 000 rows each, every row updated until each table's changes/ holds N
rows of history, and a keyed table `big` of N rows inserted. Then one file
per increment: ADD COLUMN on `hist`; an UPDATE of 10 rows of `hist`, of
`bag`, and of `big`; DROP COLUMN on `hist`; MODIFY of a column's type on
`hist` (its values converted in place, as the server converted them). The lake is built over binlog.000001 once, then each
round starts from a copy of it and times a run with nothing new and each
increment in turn. Each figure is the median of the rounds.

Peers, same run: the run with nothing new (it starts no Spark session),
and the floor of any increment computed in Spark (bench_lake.py's): a Spark
session reading the new change files of one increment with one aggregate.
Small increments are computed in the driver (binlake.spark.rules.table_rows)
and start no Spark session either.

Targets: ADD COLUMN <= 1.5x nothing new; DROP COLUMN and a type change at
most the cost of rewriting the 10 000 rows (DROP COLUMN is that rewrite:
the type change is held to it); UPDATE of 10 rows, keyed or
keyless, <= 1.5x nothing new; the 10-row MERGE into `big` reads only the
files its keys' statistics name (the count is printed: files rewritten of
files in the table).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench_lake import DATA, PYTHON, READ_NEW_CHANGES, SHORT_RUN_JVM, bulk_server, timed

DATABASE = "state"
ROWS = 10_000

#: One binlog file each, applied in this order.
INCREMENTS = [
    ("ADD COLUMN (hist)", "ALTER TABLE hist ADD COLUMN extra INT NOT NULL DEFAULT 5"),
    ("UPDATE 10 rows (hist, keyed)", "UPDATE hist SET v = -1 WHERE id <= 10"),
    ("UPDATE 10 rows (bag, keyless)", "UPDATE bag SET v = -1 WHERE id <= 10"),
    ("UPDATE 10 rows (big, MERGE)", "UPDATE big SET v = -1 WHERE id BETWEEN 1000 AND 1009"),
    ("DROP COLUMN (hist)", "ALTER TABLE hist DROP COLUMN note"),
    ("type change (hist)", "ALTER TABLE hist MODIFY v BIGINT"),
]


#: DDL whose target is the cost of rewriting the table's current rows.
REWRITES = (INCREMENTS[4][0], INCREMENTS[5][0])
#: The increment whose floor is timed: a Spark session reading its new
#: change files with one aggregate, what any run that computes an increment
#: in Spark pays before it types, merges or commits anything.
FLOORED = INCREMENTS[1][0]
FLOOR = "floor: Spark reading its changes"


def binlogs(history_rows: int) -> list[Path]:
    """binlog.000001 (the history), then one file per increment."""
    folder = DATA / f"state-{history_rows}"
    done = folder / "state.json"
    if not done.exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        with tempfile.TemporaryDirectory(prefix="binlake-bench-") as work:
            with bulk_server(work) as server:
                _history(server, history_rows)
                server.flush_logs()
                for _name, statement in INCREMENTS:
                    server.execute(statement)
                    server.flush_logs()
                files = server.binlog_files()[:1 + len(INCREMENTS)]
            for path in files:
                shutil.copyfile(path, folder / path.name)
        done.write_text(json.dumps({"history_rows": history_rows}))
    return sorted(folder.glob("binlog.[0-9]*"))


def _history(server, history_rows: int) -> None:
    server.execute(f"CREATE DATABASE {DATABASE}")
    server.execute(f"USE {DATABASE}")
    for table, key in (("hist", "PRIMARY KEY"), ("bag", "")):
        server.execute(f"CREATE TABLE {DATABASE}.{table} (id INT NOT NULL {key}, v INT, "
                       "note VARCHAR(20))")
        server.execute(f"INSERT INTO {DATABASE}.{table} SELECT seq, 0, CONCAT('row ', seq) "
                       f"FROM seq_1_to_{ROWS}")
        for _ in range(history_rows // ROWS - 1):  # each UPDATE: ROWS changes
            server.execute(f"UPDATE {DATABASE}.{table} SET v = v + 1")
    server.execute(f"CREATE TABLE {DATABASE}.big (id INT PRIMARY KEY, v INT, note VARCHAR(20))")
    chunk = 100_000
    for start in range(0, history_rows, chunk):
        server.execute(f"INSERT INTO {DATABASE}.big SELECT seq, 0, CONCAT('row ', seq) "
                       f"FROM seq_{start + 1}_to_{min(start + chunk, history_rows)}")


def pipeline(files: list[Path], out: Path, master: str) -> float:
    return timed([PYTHON, "-m", "binlake", "pipeline", *map(str, files), "--out", str(out),
                  "--master", master])


def merge_files(lake: Path) -> tuple[int, int]:
    """(files the last MERGE into `big` rewrote, files the table held
    before it): what its keys' statistics let it leave alone."""
    from deltalake import DeltaTable
    uri = str(lake / "tables" / f"{DATABASE}.big")
    table = DeltaTable(uri)
    merge = next(h for h in table.history() if h.get("operation") == "MERGE")
    before = DeltaTable(uri, version=merge["version"] - 1)
    return merge["operationMetrics"]["num_target_files_removed"], len(before.file_uris())


def change_files(lake: Path) -> set[str]:
    return {str(p) for p in (lake / "changes").rglob("*.parquet")}


def one_round(lake: Path, files: list[Path], master: str) -> dict:
    figures = {"nothing new": pipeline(files[:1], lake, master)}
    for number, (name, _statement) in enumerate(INCREMENTS, start=2):
        before = change_files(lake)
        figures[name] = pipeline(files[:number], lake, master)
        if name == FLOORED:  # Spark's part alone of such an increment (bench_lake.py)
            figures[FLOOR] = timed([PYTHON, "-c", READ_NEW_CHANGES, str(lake / "changes"),
                                    master, *sorted(change_files(lake) - before)],
                                   SHORT_RUN_JVM)
        if "MERGE" in name:
            figures["MERGE files rewritten"], figures["MERGE files held"] = merge_files(lake)
    figures["nothing new, after"] = pipeline(files, lake, master)
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--history-rows", type=int, default=2_500_000,
                        help="rows of changes/ history of `hist` and `bag`, and rows of `big`")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of the increments; each figure is the median")
    args = parser.parse_args(argv)
    files = binlogs(args.history_rows)
    print(f"binlogs: { {p.name: p.stat().st_size for p in files} }", flush=True)
    with tempfile.TemporaryDirectory(prefix="binlake-state-") as scratch:
        built = Path(scratch) / "built"
        first = pipeline(files[:1], built, args.master)
        print(f"{'first run: the history':32} {first:7.1f} s", flush=True)
        rounds = []
        for number in range(args.repeat):
            lake = Path(scratch) / f"round-{number}"
            shutil.copytree(built, lake)
            rounds.append(one_round(lake, files, args.master))
            shutil.rmtree(lake)
    figures = {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}
    for name, value in figures.items():
        spread = ", ".join(f"{r[name]:.1f}" for r in rounds)
        unit = "" if "files " in name else " s"
        print(f"{name:32} {value:7.1f}{unit}   ({spread})", flush=True)
    noop = figures["nothing new"]
    ratios = {f"{name} / nothing new" + ("" if name in REWRITES else " (<= 1.5)"):
              figures[name] / noop for name, _ in INCREMENTS}
    # DROP COLUMN rewrites the 10 000 rows: the cost a type change may have.
    ratios[f"{REWRITES[1]} / {REWRITES[0]} (<= 1, noise aside)"] = \
        figures[REWRITES[1]] / figures[REWRITES[0]]
    ratios[f"floor ({FLOORED}) / nothing new"] = figures[FLOOR] / noop
    for name, _ in INCREMENTS:
        ratios[f"{name} / floor"] = figures[name] / figures[FLOOR]
    for name, ratio in ratios.items():
        print(f"{name:52} {ratio:5.2f}x", flush=True)
    print(f"{'MERGE: files rewritten / files held':52} "
          f"{figures['MERGE files rewritten']:.0f} / {figures['MERGE files held']:.0f}", flush=True)
    (DATA / "lake_state_results.json").write_text(json.dumps(
        {"first": first, "figures": figures, "ratios": ratios, "rounds": rounds}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
