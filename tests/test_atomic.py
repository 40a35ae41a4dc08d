"""Outputs that are whole or not there (`binlake.atomic`): `dump -r` and
`sql -r` killed with SIGKILL at random moments leave either the whole
result or none (at most `FILE.partial`), and the next run writes exactly the
uninterrupted output; a
full disk (a small tmpfs, `full_disk`) is a one-line error with nothing left.
"""

from __future__ import annotations

import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from binlake.atomic import PARTIAL_SUFFIX, replaced
from corpus.manifest import corpus_dir
from full_disk import on_a_small_disk

ROOT = Path(__file__).resolve().parent.parent
#: The corpus's biggest plain binlog (7 754 events), read several times over:
#: a run long enough to be killed in the middle of its writing.
BIG = "mariadb-10.11.19/std_data/mdev6020-mysql-bin.000001"
COMMANDS = {"dump": ["dump", "-vv", "--skip-gtid-strict-mode"], "sql": ["sql"]}  # (the file repeats)
KILLS = 20


def command(name: str, out: Path) -> list[str]:
    source = corpus_dir() / BIG
    if not source.exists():
        pytest.fail(f"corpus file {source} missing (set BINLAKE_CORPUS)")
    return [sys.executable, "-m", "binlake", *COMMANDS[name], *[str(source)] * 4, "-r", str(out)]


def environment() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TZ": "UTC"}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_killed_runs_leave_no_result_and_the_rerun_is_whole(name, tmp_path):
    reference = tmp_path / "reference.out"
    start = time.perf_counter()
    subprocess.run(command(name, reference), env=environment(), check=True)
    duration = time.perf_counter() - start
    expected = reference.read_bytes()
    assert expected
    rng = random.Random(name)
    target = tmp_path / "killed.out"
    for kill in range(KILLS):
        process = subprocess.Popen(command(name, target), env=environment(),
                                   stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, duration))
        process.send_signal(signal.SIGKILL)
        process.wait()
        if target.exists():  # the kill came after the rename (or the run had ended)
            assert target.read_bytes() == expected, f"kill {kill}: a partial result in place"
            target.unlink()
        else:
            assert process.returncode == -signal.SIGKILL
    # the run after a kill starts its partial file again and ends whole
    subprocess.run(command(name, target), env=environment(), check=True)
    assert target.read_bytes() == expected
    assert not Path(str(target) + PARTIAL_SUFFIX).exists()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_full_disk_is_one_line_and_leaves_nothing(name, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    run = shlex.join(command(name, disk / "full.out"))
    done = on_a_small_disk(disk, 64, f"{run}; echo \"exit $?\"; ls -A \"$DISK\"",
                           env=environment())
    assert done.stdout.startswith("exit 1\n"), (done.stdout, done.stderr)
    assert done.stdout == "exit 1\n", f"left on the full disk: {done.stdout.split()[2:]}"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("binlake: "), done.stderr
    assert lines[0].endswith(f"No space left on device: {disk / 'full.out'}"), lines[0]


def test_replaced_keeps_the_old_file_until_the_new_one_is_whole(tmp_path):
    target = tmp_path / "history.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with replaced(target) as handle:
            handle.write("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old"
    assert not Path(str(target) + PARTIAL_SUFFIX).exists()
    with replaced(target) as handle:
        handle.write("new")
    assert target.read_text() == "new"


def test_fsync_files_syncs_each_file_and_its_folders_up_to_the_root(tmp_path, monkeypatch):
    """`fsync_files`: the bytes, and each folder from the file's own up to
    the root (a new folder is a new name in its parent), none above it; all
    of them by the time it returns (side by side: in no order)."""
    from binlake.atomic import fsync_files
    root = Path(os.path.realpath(tmp_path)) / "root"
    (root / "a=1" / "b=2").mkdir(parents=True)
    files = [root / "a=1" / "b=2" / "x.parquet", root / "top.parquet"]
    for path in files:
        path.write_bytes(b"data")
    synced, fsync = [], os.fsync

    def recorded(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return fsync(fd)
    monkeypatch.setattr(os, "fsync", recorded)
    fsync_files([str(path) for path in files], str(root))
    assert sorted(synced) == sorted([str(path) for path in files] + [
        str(root / "a=1" / "b=2"), str(root / "a=1"), str(root)])
