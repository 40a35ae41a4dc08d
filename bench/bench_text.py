"""`binlake dump --base64-output=decode-rows -v` against mariadb-binlog on given files.

    .venv/bin/python bench/bench_text.py FILE... [--runs 3] [--pure]

Each command runs --runs times in its own process; the best wall time and
the best CPU time (user + system) are kept, with peak RSS; the last column
is CPU time against mariadb-binlog's. CPU time is printed next to wall
time because these machines are shared: wall time follows the neighbours'
load, CPU time much less. `--pure` adds the pure-Python text path
(BINLAKE_PURE=1). Both tools run with TZ=UTC. Nothing here is a unit test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def measured(argv: list[str], env: dict) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MB) of one child process, output to /dev/null."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[:3]} failed: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pure", action="store_true")
    args = parser.parse_args()
    env = {**os.environ, "TZ": "UTC", "PYTHONPATH": str(SRC)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports from .pyc
    tools = {"mariadb-binlog": (["mariadb-binlog"], env),
             "binlake native": ([sys.executable, "-m", "binlake", "dump"], env)}
    if args.pure:
        tools["binlake pure"] = ([sys.executable, "-m", "binlake", "dump"], {**env, "BINLAKE_PURE": "1"})
    print(f"{'file':40} {'MB':>6} {'tool':15} {'wall s':>7} {'cpu s':>7} {'peak MB':>8} {'cpu/C':>6}")
    for path in args.files:
        size = os.path.getsize(path) / 1e6
        reference = None
        for tool, (command, tool_env) in tools.items():
            argv = [*command, "--base64-output=decode-rows", "-v", path]
            runs = [measured(argv, tool_env) for _ in range(args.runs)]
            wall, cpu, peak = (min(r[i] for r in runs) for i in range(3))
            reference = reference or cpu
            print(f"{Path(path).name[-40:]:40} {size:6.1f} {tool:15} {wall:7.2f} {cpu:7.2f} "
                  f"{peak:8.0f} {cpu / reference:5.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
