"""mariadb-binlog's server-id and domain-id filters, --offset and positions
left out, against mariadb-binlog.

Strategy: one private server writes transactions of three GTID domains from
two server ids (SET SESSION gtid_domain_id, server_id) over two binlogs;
`binlake dump` and `mariadb-binlog` then print them under each filter, alone
and with the options users pair them with, one file and both: stdout and
exit status equal, line for line.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from binlake.testing.mariadb import MariaDBServer

from .replay import run_binlake

pytestmark = pytest.mark.server

FILTERS = [
    [], ["--do-domain-ids=1"], ["--ignore-domain-ids=0,2"], ["--do-server-ids=11"],
    ["--ignore-server-ids=11"], ["--server-id=1"], ["--do-domain-ids=1", "--do-server-ids=11"],
    ["--ignore-domain-ids=1", "-v", "--base64-output=decode-rows"],
    ["--do-server-ids=1", "--ignore-domain-ids=2", "-vv", "--base64-output=decode-rows"],
    ["--do-domain-ids=2", "-s"], ["--ignore-server-ids=1", "--do-domain-ids=0,1", "-H"],
    ["--do-domain-ids=0", "--start-position=0-1-3"],
    ["--ignore-domain-ids=2", "--stop-position=0-1-6"],
    ["--skip-print-row-event-positions", "--do-domain-ids=1", "-v"],
    ["--print-row-event-positions=0", "-H"],
    ["--offset=5"], ["--offset=3", "--do-domain-ids=1"], ["-o", "60", "-v"],
    # GTID windows and mariadb-binlog's GTID state checks (--gtid-strict-mode, on by default)
    ["--start-position=0-1-3,1-11-2", "--stop-position=0-1-9"], ["--stop-position=1-11-1"],
    ["--stop-position=2-1-3,0-1-4"], ["--start-position=0-1-3", "--stop-position=0-1-2"],
    ["--skip-gtid-strict-mode", "--start-position=0-1-5", "--stop-position=0-1-2"],
    ["--start-position=0-1-99"], ["--skip-gtid-strict-mode", "-vvv", "--start-position=0-1-99"],
    ["--start-position=0-1-3,1-11-1,2-1-1"], ["--start-position=0-1-2"],
    ["--stop-position=0-1-1"], ["--stop-position=0-1-99", "--do-domain-ids=0"],
    ["--stop-position=0-1-9"], ["--stop-position=1000000"], ["-vvv", "--skip-gtid-strict-mode"],
]


@pytest.fixture(scope="module")
def binlogs(mariadbd, tmp_path_factory):
    work = tmp_path_factory.mktemp("gtid_filters")
    with MariaDBServer(work / "server", server_id=1) as server:
        connection = server.connect()
        with connection.cursor() as c:
            c.execute("CREATE DATABASE d1")
            c.execute("CREATE TABLE d1.t (id INT PRIMARY KEY, v VARCHAR(10))")
            for i in range(12):
                c.execute(f"SET SESSION gtid_domain_id={i % 3}")
                c.execute(f"SET SESSION server_id={1 + i % 2 * 10}")
                c.execute(f"INSERT INTO d1.t VALUES ({i}, 'v{i}')")
                if i % 4 == 3:
                    c.execute(f"UPDATE d1.t SET v='u' WHERE id={i}")
        connection.commit()
        server.flush_logs()
        files = []
        for path in server.binlog_files()[:2]:
            files.append(str(shutil.copy(path, work / path.name)))
    return files


def _messages(err: str) -> list:
    """The ERROR:/WARNING: lines both tools write for the GTID checks."""
    return [line for line in err.splitlines() if line.startswith(("ERROR: ", "WARNING: "))]


@pytest.mark.parametrize("options", FILTERS, ids=" ".join)
def test_filters_print_as_mariadb_binlog_prints_them(binlogs, options):
    for files in ([binlogs[0]], binlogs, [binlogs[1]]):
        theirs = subprocess.run(["mariadb-binlog", "--no-defaults", *options, *files],
                                capture_output=True, env={**os.environ, "TZ": "UTC"})
        status, ours, err = run_binlake("dump", "--no-defaults", *options, *files)
        assert (status, ours) == (theirs.returncode, theirs.stdout), (options, files)
        assert _messages(err) == _messages(theirs.stderr.decode()), (options, files)


@pytest.fixture(scope="module")
def out_of_order(mariadbd, tmp_path_factory):
    """A binlog whose domain 0 goes back (gtid_seq_no set lower), then on."""
    work = tmp_path_factory.mktemp("gtid_order")
    with MariaDBServer(work / "server", server_id=1) as server:
        connection = server.connect()
        with connection.cursor() as c:
            c.execute("CREATE DATABASE d2")
            c.execute("CREATE TABLE d2.t (id INT PRIMARY KEY)")
            for i in range(3):
                c.execute(f"INSERT INTO d2.t VALUES ({i})")
            c.execute("SET SESSION gtid_seq_no=2")
            c.execute("INSERT INTO d2.t VALUES (10)")
            c.execute("SET SESSION gtid_domain_id=5")
            c.execute("INSERT INTO d2.t VALUES (11)")
        connection.commit()
        server.flush_logs()
        path = server.binlog_files()[0]
        return str(shutil.copy(path, work / path.name))


@pytest.mark.parametrize("options", [[], ["-v"], ["--skip-gtid-strict-mode"],
                                     ["--skip-gtid-strict-mode", "-vvv"], ["--gtid-strict-mode=0"],
                                     ["--do-domain-ids=5"], ["--start-position=0-1-4"]],
                         ids=" ".join)
def test_gtids_out_of_order_as_mariadb_binlog_checks_them(out_of_order, options):
    theirs = subprocess.run(["mariadb-binlog", "--no-defaults", *options, out_of_order],
                            capture_output=True, env={**os.environ, "TZ": "UTC"})
    status, ours, err = run_binlake("dump", "--no-defaults", *options, out_of_order)
    assert (status, ours) == (theirs.returncode, theirs.stdout), options
    assert _messages(err) == _messages(theirs.stderr.decode()), options
    if not options:
        assert status == 1 and _messages(err)[0].startswith("ERROR: Found out of order GTID.")


def test_do_and_ignore_together_are_refused():
    for options in (["--do-server-ids=1", "--ignore-server-ids=2"],
                    ["--do-domain-ids=1", "--ignore-domain-ids=2"]):
        status, _, err = run_binlake("dump", "--no-defaults", *options, "f")
        assert status == 1 and "because do rule already exists" in err  # mariadb-binlog's 1
