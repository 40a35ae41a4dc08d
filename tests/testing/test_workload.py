"""The OLTP generator used by the benchmark: one row per transaction, counts as reported.

Strategy: a small ``generate_oltp`` run on a private MariaDB; the closed binlog is read
with binlake (every change its own GTID, the reported counts, the rows left in the
table) and accepted by ``mariadb-binlog``, the reference decoder.
"""
from __future__ import annotations

import subprocess
from collections import Counter

import pytest

import binlake
from binlake.testing.mariadb import MariaDBServer, ensure_mariadb_installed
from binlake.testing.workload import OLTP_TABLE, generate_oltp

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def mariadbd() -> str:
    try:
        return ensure_mariadb_installed()
    except RuntimeError as error:
        pytest.skip(f"MariaDB server unavailable, server tests skipped: {error}")


def test_oltp_generator_writes_one_row_per_transaction(mariadbd, tmp_path):
    with MariaDBServer(tmp_path) as server:
        stats = generate_oltp(server, "oltp", 1 << 20, seed=5, batch_rows=1000)
        left = server.query(f"SELECT COUNT(*) FROM oltp.{OLTP_TABLE}")[0][0]
        server.flush_logs()
    files = [str(path) for path in server.binlog_files()]
    result = subprocess.run(["mariadb-binlog", "--base64-output=decode-rows", "-v", *files],
                            capture_output=True)
    assert result.returncode == 0, result.stderr.decode(errors="replace")

    changes = [change for change in binlake.changes(files) if change.database == "oltp"]
    assert stats["bytes"] >= 1 << 20
    assert Counter(change.op for change in changes) == Counter(
        insert=stats["inserts"], update=stats["updates"], delete=stats["deletes"])
    assert len({change.gtid for change in changes}) == len(changes)  # one row per transaction
    assert stats["inserts"] - stats["deletes"] == left
