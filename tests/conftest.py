"""Shared test fixtures: where the real binlog corpus lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus.manifest import CORPUS_ENV, corpus_dir


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = corpus_dir()
    if not (path / "MANIFEST.md").exists():
        pytest.fail(f"binlog corpus missing: {path} has no MANIFEST.md "
                    f"(set {CORPUS_ENV} to the folder holding the shared binlogs)")
    return path
