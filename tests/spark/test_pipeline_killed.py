"""`binlake pipeline` stopped hard: killed with SIGKILL at random moments,
run after run, or out of disk, then run once more, its output (events/,
changes/, tables/ and the manifest) equals that of one uninterrupted run.
The commit order of pipeline.py (staging, the staging manifest, the move,
the manifest last) is what makes any moment safe; these runs are whole
processes (JVM and all), as a user's.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

from binlake.spark.run.pipeline import read_table  # noqa: E402
import sweeps  # noqa: E402
from full_disk import on_a_small_disk  # noqa: E402

from .test_pipeline import dataset  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KILLS = 20  #: in a full sweep (tests/sweeps.py)


def pipeline(out: Path) -> list[str]:
    return [sys.executable, "-m", "binlake", "pipeline", "--sample", "--temporals", "text", "--out", str(out)]


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable}


def output(out: Path) -> dict:
    """What a run leaves, independent of file names and of the input's path."""
    tables = {name: sorted(json.dumps(row, default=str, sort_keys=True)
                           for row in read_table(str(out), name).to_pylist())
              for name in sorted(os.listdir(out / "tables"))}
    manifest = json.loads((out / "_binlake" / "manifest.json").read_text())
    return {"events": dataset(out, "events"), "changes": dataset(out, "changes"),
            "tables": tables, "files": manifest["files"]}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """One whole run: its output and how long it took."""
    reference = tmp_path_factory.mktemp("pipeline") / "reference"
    start = time.perf_counter()
    subprocess.run(pipeline(reference), env=environment(), check=True, capture_output=True)
    return output(reference), time.perf_counter() - start


def test_runs_killed_at_random_moments_end_as_one_run_would(uninterrupted, tmp_path):
    expected, duration = uninterrupted
    out = tmp_path / "killed"
    rng = sweeps.generator(7)
    for _ in range(sweeps.trials(KILLS)):
        process = subprocess.Popen(pipeline(out), env=environment(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.2, duration))
        os.killpg(process.pid, signal.SIGKILL)  # the JVM and its Python workers too
        process.wait()
    done = subprocess.run(pipeline(out), env=environment(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert output(out) == expected


def test_a_full_disk_is_one_line_leaves_nothing_complete_and_the_rerun_is_whole(
        uninterrupted, tmp_path):
    expected, _ = uninterrupted
    disk, kept = tmp_path / "disk", tmp_path / "kept"
    disk.mkdir()
    run = shlex.join(pipeline(disk / "out"))
    # The whole output takes about 600 KB: 256 KB fill up half-way. Then room
    # is made, and the next run must finish the work (the tmpfs goes with
    # the script: the result is copied out).
    script = (f"{run} 2>\"$DISK/../full.err\"; echo \"exit $?\"\n"
              "test -e \"$DISK/out/_binlake/manifest.json\" && echo 'manifest written'\n"
              f"grow 65536 && {run} >/dev/null 2>\"$DISK/../rerun.err\"; echo \"exit $?\"\n"
              f"cp -a \"$DISK/out\" {shlex.quote(str(kept))}")
    done = on_a_small_disk(disk, 256, script, env=environment())
    assert done.stdout.splitlines() == ["exit 1", "exit 0"], (
        done.stdout, done.stderr, (tmp_path / "rerun.err").read_text()[-2000:])
    lines = (tmp_path / "full.err").read_text().strip().splitlines()
    # The driver writes the views (Python's words), Spark's executors the tables (the JVM's).
    assert re.fullmatch(r"binlake pipeline: (java\.io\.IOException: )?No space left on device"
                        r"(: \S.*)?", lines[-1]), lines
    assert output(kept) == expected
