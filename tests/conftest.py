"""Shared test fixtures: where the real binlog corpus lives, and a private
temporary directory for the whole run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from corpus.manifest import CORPUS_ENV, corpus_dir


@pytest.fixture(scope="session", autouse=True)
def private_tmpdir(tmp_path_factory):
    """LOAD DATA files that `binlake dump`/`sql` and `mariadb-binlog` write
    without --local-load go to the temporary directory, and both give up
    after 1000 of one name: each run gets its own (pytest keeps the last
    three), so repeated runs on one machine never fill /tmp."""
    path = tmp_path_factory.mktemp("tmpdir")
    old = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = str(path)
    tempfile.tempdir = None
    yield path
    if old is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = old
    tempfile.tempdir = None


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = corpus_dir()
    if not (path / "MANIFEST.md").exists():
        pytest.fail(f"binlog corpus missing: {path} has no MANIFEST.md "
                    f"(set {CORPUS_ENV} to the folder holding the shared binlogs)")
    return path
