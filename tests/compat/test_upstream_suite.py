"""python-mysql-replication's own test suite (1.0.17, from its wheel) on
binlake's drop-in, against a private MariaDB: every test that passes on that
project itself (upstream_passing.txt, measured on the same server setup)
must pass here too.

Skipped only where the project's other server tests skip (no mariadbd and
none installable: the `mariadbd` check of tests/server); a suite that cannot
be fetched (no network, no cached wheel) fails, so that CI never passes a
check it did not run."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat import upstream

HERE = Path(__file__).resolve().parent


def expected_passing() -> set:
    lines = (HERE / "upstream_passing.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from binlake.testing.mariadb import ensure_mariadb_installed
    try:
        ensure_mariadb_installed()
    except RuntimeError as exc:
        pytest.skip(f"MariaDB server unavailable, server tests skipped: {exc}")
    found = upstream.start_server(tmp_path_factory.mktemp("pmr-mariadb"))
    yield found
    found.stop()


def test_upstream_suite_passes_on_the_drop_in(server):
    try:
        upstream.suite_dir()
    except Exception as exc:  # noqa: BLE001 - no network, no PyPI: a failure, not a skip
        pytest.fail(f"cannot get python-mysql-replication's suite: mysql-replication "
                    f"{upstream.VERSION} is neither cached in {upstream.CACHE} nor downloadable "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                    pytrace=False)
    result = upstream.run(server.port, dropin=True)
    passed = {test.replace("pymysqlreplication/tests/", "", 1) for test in result["passed"]}
    missing = sorted(expected_passing() - passed)
    assert not missing, f"upstream tests that pass on python-mysql-replication fail here: " \
                        f"{missing}\n{result['output'][-6000:]}"
    assert len(passed) >= len(expected_passing())
