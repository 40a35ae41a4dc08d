"""`binlake pipeline` killed with SIGKILL at random moments, run after run,
then run once more: its output (events/, changes/, tables/ and the manifest)
equals that of one uninterrupted run. The commit order of pipeline.py
(staging, the staging manifest, the move, the manifest last) is what makes
any moment safe; these runs are whole processes (JVM and all), as a user's.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

from .test_pipeline import dataset  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KILLS = 20


def pipeline(out: Path) -> list[str]:
    return [sys.executable, "-m", "binlake", "pipeline", "--sample", "--out", str(out)]


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable}


def output(out: Path) -> dict:
    """What a run leaves, independent of file names and of the input's path."""
    tables = {name: sorted(json.dumps(row, default=str, sort_keys=True)
                           for row in pq.read_table(out / "tables" / name).to_pylist())
              for name in sorted(os.listdir(out / "tables"))}
    manifest = json.loads((out / "_binlake" / "manifest.json").read_text())
    return {"events": dataset(out, "events"), "changes": dataset(out, "changes"),
            "tables": tables, "files": manifest["files"]}


def test_runs_killed_at_random_moments_end_as_one_run_would(tmp_path):
    reference = tmp_path / "reference"
    start = time.perf_counter()
    subprocess.run(pipeline(reference), env=environment(), check=True, capture_output=True)
    duration = time.perf_counter() - start
    expected = output(reference)
    out = tmp_path / "killed"
    rng = random.Random(7)
    for _ in range(KILLS):
        process = subprocess.Popen(pipeline(out), env=environment(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.2, duration))
        os.killpg(process.pid, signal.SIGKILL)  # the JVM and its Python workers too
        process.wait()
    done = subprocess.run(pipeline(out), env=environment(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert output(out) == expected
