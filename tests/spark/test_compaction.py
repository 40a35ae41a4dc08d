"""Bounded storage (issue 48, item 1): the small files of events/ and
changes/ merged, no reader ever seeing half of a merge
(binlake.spark.state.compaction).

Strategy: on a lake of small files alone (no server, no Spark): a pass
merges each size tier of a folder, leaves the change files a table has yet
to take in and a snapshot's chunks, and every reader's listing holds each
row once before, during and after, the replaced files deleted only after
their grace; a pass killed (SIGKILL, at random moments, a reader listing
beside it) leaves every row there once. Against a private MariaDB, the
follower's own passes under writes and SIGKILLs are in
tests/spark/test_storage.py.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402

from binlake.spark.state import compaction  # noqa: E402
from binlake.spark.state.compaction import (COMPACT_AT, RETIRED_SECONDS,  # noqa: E402
                                            compact_views, view_files)
from binlake.spark.state.manifest import Manifest  # noqa: E402
from binlake.spark.state.store import (load_compactions, load_manifest,  # noqa: E402
                                       make_state_dir, save_compactions, save_manifest)

DAY = "date=2026-12-03"
TABLE_FOLDER = os.path.join("changes", "database=d", "table=t", DAY)


def small_file(folder, name: str, first: int, rows: int = 3) -> None:
    os.makedirs(folder, exist_ok=True)
    pq.write_table(pa.table({"pos": pa.array(range(first, first + rows), pa.int64()),
                             "v": pa.array([f"r{i}" for i in range(first, first + rows)])}),
                   os.path.join(folder, name))


def fake_lake(tmp_path, files: int = 2 * COMPACT_AT, pending: int = 2):
    """A lake of small files: events/ and one table's changes/ (its last
    `pending` files yet to be taken in), two snapshot chunk files."""
    out = str(tmp_path / "lake")
    make_state_dir(out)
    for n in range(files):
        small_file(os.path.join(out, "events", DAY), f"part-e{n:03d}.parquet", 100 * n)
        small_file(os.path.join(out, TABLE_FOLDER), f"part-c{n:03d}.parquet", 100 * n)
    for n in range(2):
        small_file(os.path.join(out, TABLE_FOLDER), f"part-snapshot-chunk-{n}.parquet", -100 * n)
    names = [os.path.join("database=d", "table=t", DAY, f"part-c{n:03d}.parquet")
             for n in range(files - pending, files)]
    save_manifest(out, Manifest(pending={7: tuple(names)}))
    return out


def rows(out: str, view: str) -> Counter:
    """Every row a reader of the view reads (each file's, with its folder)."""
    found = Counter()
    for path in view_files(out, os.path.join(out, view)):
        folder = os.path.relpath(os.path.dirname(path), out)
        for row in pq.read_table(path).to_pylist():
            found[(folder, row["pos"], row["v"])] += 1
    return found


def test_a_pass_merges_small_files_and_each_row_is_read_once(tmp_path):
    out = fake_lake(tmp_path)
    before = {view: rows(out, view) for view in ("events", "changes")}
    done = compact_views(out, load_manifest(out))
    assert done == {"merged": 2 * COMPACT_AT + 2 * COMPACT_AT - 2, "into": 2, "deleted": 0}
    assert {view: rows(out, view) for view in ("events", "changes")} == before
    listed = [os.path.basename(p) for p in view_files(out, os.path.join(out, TABLE_FOLDER))]
    # what a table has yet to take in, and the snapshot's chunks, are as they were
    assert sorted(n for n in listed if not n.startswith("part-merged-")) == [
        f"part-c{n:03d}.parquet" for n in (2 * COMPACT_AT - 2, 2 * COMPACT_AT - 1)] + [
        "part-snapshot-chunk-0.parquet", "part-snapshot-chunk-1.parquet"]
    assert len(view_files(out, os.path.join(out, "events"))) == 1
    # the replaced files stay for readers that listed them, then go; their records after
    on_disk = len(os.listdir(os.path.join(out, "events", DAY)))
    assert on_disk == 2 * COMPACT_AT + 1
    now = time.time()
    assert compact_views(out, load_manifest(out), now=now + RETIRED_SECONDS / 2)["deleted"] == 0
    assert compact_views(out, load_manifest(out), now=now + RETIRED_SECONDS)["deleted"] == \
        4 * COMPACT_AT - 2
    assert os.listdir(os.path.join(out, "events", DAY))[0].startswith("part-merged-")
    assert len(load_compactions(out)) == 2
    compact_views(out, load_manifest(out), now=now + 2 * RETIRED_SECONDS)
    assert load_compactions(out) == []
    assert {view: rows(out, view) for view in ("events", "changes")} == before


def test_a_runs_files_are_no_readers_until_it_commits(tmp_path):
    """A run moves its files into events/ and changes/ before it knows that
    none of its changes is refused; a refusal or a kill undoes them. A
    reader leaves them out until the run commits; the run reads them."""
    from binlake.spark import lake_files
    from binlake.spark.state.run_undo import RunUndo
    out = fake_lake(tmp_path, files=2, pending=0)
    undo = RunUndo.begin(out)
    added = [os.path.join(out, "events", DAY, "part-run.parquet"),
             os.path.join(out, "events", "date=2026-12-04", "part-run.parquet")]
    undo.adding(added)
    for path in added:
        small_file(os.path.dirname(path), os.path.basename(path), 1000)
    before = sorted(os.path.join(out, "events", DAY, f"part-e{n:03d}.parquet") for n in range(2))
    assert lake_files(out, "events") == before
    assert view_files(out, os.path.join(out, "events"), in_run=True) == sorted(before + added)
    undo.forget()  # the run commits: its files are the lake's
    assert lake_files(out, "events") == sorted(before + added)
    undo = RunUndo.begin(out)
    undo.adding([os.path.join(out, "events", DAY, "part-next.parquet")])
    small_file(os.path.join(out, "events", DAY), "part-next.parquet", 2000)
    undo.roll_back()  # refused, or killed and recovered: they never were
    assert lake_files(out, "events") == sorted(before + added)


def test_tiers_merge_like_sizes_and_few_files_wait(tmp_path):
    out = fake_lake(tmp_path, files=COMPACT_AT - 1, pending=0)
    assert compact_views(out, load_manifest(out))["merged"] == 0  # fewer than COMPACT_AT
    big = os.path.join(out, "events", DAY, "part-big.parquet")
    pq.write_table(pa.table({"pos": pa.array(range(400_000), pa.int64()),
                             "v": pa.array([os.urandom(8).hex() for _ in range(400_000)])}),
                   big, compression="none")
    assert os.path.getsize(big) >= compaction.TIER_BYTES[0]
    small_file(os.path.join(out, "events", DAY), "part-last.parquet", 9000)
    compact_views(out, load_manifest(out))
    names = {os.path.basename(p) for p in view_files(out, os.path.join(out, "events"))}
    assert "part-big.parquet" in names and len(names) == 2  # the large one left alone


def test_a_merge_whose_file_never_arrived_hides_nothing_and_is_dropped(tmp_path):
    out = fake_lake(tmp_path)
    before = rows(out, "changes")
    folder = os.path.join(out, TABLE_FOLDER)
    replaced = [os.path.relpath(os.path.join(folder, f"part-c{n:03d}.parquet"), out)
                for n in range(COMPACT_AT)]
    # a pass killed after its record and before its rename
    save_compactions(out, [{"merged": os.path.join(TABLE_FOLDER, "part-merged-x.parquet"),
                            "replaced": replaced, "at": time.time() - 3 * RETIRED_SECONDS}])
    assert rows(out, "changes") == before
    compact_views(out, load_manifest(out), now=time.time() + 3 * RETIRED_SECONDS)
    assert all(os.path.exists(os.path.join(out, path)) or path not in replaced
               for path in replaced)  # merged again, not deleted
    assert rows(out, "changes") == before
    assert all(r["merged"] != os.path.join(TABLE_FOLDER, "part-merged-x.parquet")
               for r in load_compactions(out))


def test_a_listing_made_before_a_merge_arrived_reads_the_old_files(tmp_path, monkeypatch):
    """The reader lists, then reads the records: a merged file it did not
    list hides nothing, so a merge landing in between costs it nothing."""
    out = fake_lake(tmp_path)
    before = rows(out, "events")
    listed = view_files(out, os.path.join(out, "events"))
    compact_views(out, load_manifest(out))
    monkeypatch.setattr(compaction, "_folders", lambda root: [(root, listed)])
    again = view_files(out, os.path.join(out, "events"))
    assert again == listed
    found = Counter()
    for path in again:
        for row in pq.read_table(path).to_pylist():
            found[(os.path.relpath(os.path.dirname(path), out), row["pos"], row["v"])] += 1
    assert found == before


PASS = """
import sys, time
from binlake.spark.state.compaction import compact_views
from binlake.spark.state.store import load_manifest
print("ready", flush=True)
compact_views(sys.argv[1], load_manifest(sys.argv[1]), now=time.time() + float(sys.argv[2]))
"""


def test_passes_killed_at_random_moments_beside_a_reader_leave_each_row_once(tmp_path):
    out = fake_lake(tmp_path, files=COMPACT_AT)
    rng = random.Random(48)
    expected = {view: rows(out, view) for view in ("events", "changes")}
    failures: list = []
    stop = threading.Event()

    def reader():  # beside the passes that delete nothing (their grace is real time)
        while not stop.is_set():
            try:
                for view in ("events", "changes"):
                    found = rows(out, view)
                    if found != expected[view]:
                        failures.append((view, found - expected[view], expected[view] - found))
            except Exception as exc:  # noqa: BLE001 - a reader error is a failure
                failures.append(repr(exc))
    later, kills, took = 0.0, 0, 0.0
    for round_ in range(16):
        first = 1000 * (round_ + 1) * COMPACT_AT
        for n in range(COMPACT_AT):  # a run's new files (between passes: the lake's lock)
            for view, folder in (("events", os.path.join("events", DAY)),
                                 ("changes", TABLE_FOLDER)):
                name = f"part-r{round_}-{n}.parquet"
                small_file(os.path.join(out, folder), name, first + 10 * n, rows=2)
                for pos in (first + 10 * n, first + 10 * n + 1):
                    expected[view][(folder, pos, f"r{pos}")] += 1
        # odd rounds: the grace past, so that deletes run (no reader beside them)
        later += RETIRED_SECONDS if round_ % 2 else 0.0
        thread = threading.Thread(target=reader, daemon=True)
        stop.clear()
        if not round_ % 2:
            thread.start()
        child = subprocess.Popen([sys.executable, "-c", PASS, out, str(later)],
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout.readline() == "ready\n"
        began = time.monotonic()
        if round_:  # (the first pass whole: how long one takes)
            time.sleep(rng.uniform(0.0, 1.2 * took))
        if child.poll() is None and round_:
            child.send_signal(signal.SIGKILL)
            kills += 1
        child.wait()
        took = took if round_ else time.monotonic() - began
        stop.set()
        if thread.is_alive():
            thread.join()
        assert not failures, failures[:3]
        for view in ("events", "changes"):
            assert rows(out, view) == expected[view], (round_, view)
    assert kills >= 5
    compact_views(out, load_manifest(out), now=time.time() + later + 3 * RETIRED_SECONDS)
    for view in ("events", "changes"):
        assert rows(out, view) == expected[view]
        assert len(view_files(out, os.path.join(out, view))) < 2 * COMPACT_AT + 2
