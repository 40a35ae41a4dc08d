"""Shared test fixtures: where the real binlog corpus lives, and a private
temporary directory for the whole run."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from corpus.manifest import CORPUS_ENV, corpus_dir


def pytest_configure(config):
    """A run started in the background of a script ignores SIGINT, and so
    would every process it starts: the tests that stop a binlake run as
    Ctrl-C does need the signal at its default (its handler does not
    survive exec, so the children start with SIGINT as they would from a
    terminal)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


def pytest_terminal_summary(terminalreporter):
    """The slow sweeps' share and seed, last, where a quiet run shows it too."""
    import sweeps
    terminalreporter.write_line(sweeps.describe())


#: Under pytest-xdist (scripts/test.sh runs `-n auto`) the work goes to the
#: workers in these units, in this order: all Spark tests as one (one Spark
#: session and one ground-truth server, made on the worker that runs them),
#: then every other module as one (what its module-scoped fixtures make, a
#: private server or a pipeline run, is made once), the folders with the
#: longest modules first so that no worker is left alone with one at the end.
_FIRST = ("tests/spark/", "tests/server/", "tests/differential/")


def _unit(nodeid: str) -> str:
    return "tests/spark" if nodeid.startswith("tests/spark/") else nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    rank = {folder: i for i, folder in enumerate(_FIRST)}
    items.sort(key=lambda item: next((rank[f] for f in _FIRST if item.nodeid.startswith(f)),
                                     len(_FIRST)))


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SharedOnceScheduling(LoadScopeScheduling):
        """xdist's scheduling by scope, with the scopes above, in collection order."""

        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    config.option.loadscopereorder = False
    return SharedOnceScheduling(config, log)
