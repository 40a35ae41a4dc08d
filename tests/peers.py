"""binlake and the reference decoder (mariadb-binlog) run side by side, for
the tests that compare their text: how each is run, the corpus files they
read, and what a file the reference cannot read must still give.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from binlake.cli.dispatch import main

MARIADB_BINLOG = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
needs_reference = pytest.mark.skipif(MARIADB_BINLOG is None, reason="mariadb-binlog not installed")


# -- running both tools --------------------------------------------------------------------------

def binlake(*args) -> tuple[int, bytes, str]:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.StringIO()
    status = main(list(args), out=out, err=err)
    out.flush()
    return status, raw.getvalue(), err.getvalue()


def reference(*args) -> tuple[int, bytes]:
    """mariadb-binlog's status and output; status 1 also when it printed an
    error but carried on (it does for events it cannot decode)."""
    result = subprocess.run([MARIADB_BINLOG, *args], capture_output=True,
                            env={**os.environ, "TZ": "UTC"})
    failed = result.returncode != 0 or b"ERROR:" in result.stderr
    return int(failed), result.stdout


@pytest.fixture(autouse=True)
def utc():
    """mysqlbinlog prints local time: both tools run with TZ=UTC."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


def corpus_files() -> list[Path]:
    from corpus.manifest import corpus_dir
    root = corpus_dir()
    if not root.exists():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name not in ("MANIFEST.md", "keys.txt"))


def _ids(paths):
    return [str(p).split("binlogs/", 1)[-1] for p in paths]


CORPUS = corpus_files()


def assert_reads_or_reports(path, status: int, err: str) -> None:
    """Where mariadb-binlog (the oracle) fails, binlake must still either read
    the file or stop with `FILE: offset N: reason`: never a silent half-read."""
    if status != 0:
        assert status == 1 and re.match(rf"^{re.escape(str(path))}: offset \d+: .+", err), err


def _without_row_counts(text: bytes) -> bytes:
    return re.sub(rb"^# Number of rows: \d+\n", b"", text, flags=re.M)
