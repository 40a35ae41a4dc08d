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


def pytest_report_header(config):
    import sweeps
    return sweeps.describe()


#: Fixtures that cost seconds and are made once per test process: the tests
#: that use them share a pytest-xdist worker.
_SHARED_ONCE = {"spark": "spark", "truth": "spark", "server_binlogs": "server-binlogs"}


def _group(item) -> str | None:
    """The xdist group of a test: the Spark session's, the server binlogs',
    its module's when it uses a module-scoped fixture (a private server, a
    pipeline run), or none (any worker)."""
    info = getattr(item, "_fixtureinfo", None)
    fixtures = info.name2fixturedefs if info is not None else {}
    if item.path.parent.name == "spark":
        return "spark"
    for name, group in _SHARED_ONCE.items():
        if name in fixtures:
            return group
    if any(defs[-1].scope == "module" for defs in fixtures.values()):
        return item.module.__name__
    return None


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist's `--dist loadgroup` (scripts/test.sh runs `-n 2`),
    what a group shares is made once, on one worker, and the groups that
    take longest start first so that no worker is left alone at the end:
    the Spark tests, then the other groups, then the rest in their order."""
    groups = {}
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            groups[item.nodeid] = group
    rank = {"spark": 0}
    items.sort(key=lambda item: rank.get(groups.get(item.nodeid), 1 if item.nodeid in groups else 2))
