"""ENUM and SET member names in 8-bit charsets: `--print-table-metadata`
prints the bytes the table map logs, as mariadb-binlog does.

Strategy: a private server (binlog_row_metadata=FULL) writes rows of tables
whose ENUM/SET members are not ASCII, in latin1, cp1251 and utf8mb4; both
tools print the binlog with the table metadata, byte for byte.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from binlake.testing.mariadb import MariaDBServer

from .replay import run_binlake

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def binlog(mariadbd, tmp_path_factory):
    with MariaDBServer(tmp_path_factory.mktemp("enum-members")) as server:
        connection = server.connect()
        with connection.cursor() as c:
            c.execute("CREATE DATABASE em")
            c.execute("CREATE TABLE em.t (id INT PRIMARY KEY, "
                      "e ENUM('x', 'é', 'ü') CHARACTER SET latin1, "
                      "s SET('ж', 'я') CHARACTER SET cp1251, "
                      "u ENUM('€', 'ok') CHARACTER SET utf8mb4)")
            c.execute("INSERT INTO em.t VALUES (1, 'é', 'ж,я', '€'), (2, 'x', '', 'ok')")
            c.execute("UPDATE em.t SET e = 'ü' WHERE id = 2")
        connection.commit()
        server.flush_logs()
        files = [str(path) for path in server.binlog_files()]
    return files


@pytest.mark.parametrize("options", [["--print-table-metadata"],
                                     ["--print-table-metadata", "-vv"]], ids=" ".join)
def test_members_print_as_their_bytes(binlog, options):
    theirs = subprocess.run(["mariadb-binlog", "--no-defaults", *options, *binlog],
                            capture_output=True, env={**os.environ, "TZ": "UTC"})
    status, ours, err = run_binlake("dump", "--no-defaults", *options, *binlog)
    assert (status, ours) == (theirs.returncode, theirs.stdout), err
    assert b"'\xe9'" in ours  # latin1's é, as logged
