"""python-mysql-replication's own test suite (1.0.17, from its wheel) on
binlake's drop-in, against a private MariaDB: every test that passes on that
project itself (upstream_passing.txt, measured on the same server setup)
must pass here too."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat import upstream

HERE = Path(__file__).resolve().parent


def expected_passing() -> set:
    lines = (HERE / "upstream_passing.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    try:
        found = upstream.start_server(tmp_path_factory.mktemp("pmr-mariadb"))
    except RuntimeError as exc:
        pytest.skip(f"no MariaDB: {exc}")
    yield found
    found.stop()


def test_upstream_suite_passes_on_the_drop_in(server):
    try:
        upstream.suite_dir()
    except Exception as exc:  # noqa: BLE001 - no network, no PyPI
        pytest.skip(f"cannot fetch mysql-replication {upstream.VERSION}: {exc}")
    result = upstream.run(server.port, dropin=True)
    passed = {test.replace("pymysqlreplication/tests/", "", 1) for test in result["passed"]}
    missing = sorted(expected_passing() - passed)
    assert not missing, f"upstream tests that pass on python-mysql-replication fail here: " \
                        f"{missing}\n{result['output'][-6000:]}"
    assert len(passed) >= len(expected_passing())
