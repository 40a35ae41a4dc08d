"""The follower moved to another server of its replication domain
(binlake.spark.read.failover): MariaDB GTIDs place the lake in the new server's
binlogs, without a gap or a repeat.

Strategy: two private MariaDB servers, a primary and its GTID replica (its
binlog holds the primary's transactions under their GTIDs, in files of the
same names). The follower follows the primary under a writer; the primary
is SIGKILLed once the replica has everything, and so is the follower; the
replica is promoted and written to (DDL too), and the follower started on
it, on the same lake. At the end the tables equal the new primary's rows,
and changes/ holds each change of its binlog exactly once, with its GTID.
The old primary, back without the new one's transactions, is refused in
one line with the lake left as it was.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")


import binlake  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402

from .test_follow import DB, Writer, lake_rows, server_rows, status, wait_for_batches  # noqa: E402
from .truth import view_table  # noqa: E402

GTID_SERVER = {"gtid_strict_mode": 1, "log_slave_updates": 1,
               "innodb_flush_log_at_trx_commit": 1}


def follower_command(server, lake) -> list[str]:
    return [sys.executable, "-m", "binlake", "pipeline", "-R", "--out", str(lake),
            "-h", "127.0.0.1", "-P", str(server.port), "-u", "root", "--heartbeat-period", "1",
            "binlog.000001"]


def follower(server, lake, log):
    return subprocess.Popen(follower_command(server, lake) + ["--follow"], stdout=log,
                            stderr=log, stdin=subprocess.DEVNULL)


def caught_up(replica, primary) -> None:
    position = primary.query("SELECT @@gtid_binlog_pos")[0][0]
    assert replica.query("SELECT MASTER_GTID_WAIT(%s, 60)", (position,))[0][0] == 0


@pytest.fixture
def pair(mariadb, tmp_path):
    with MariaDBServer(tmp_path / "a", server_id=41, extra=GTID_SERVER) as primary, \
            MariaDBServer(tmp_path / "b", server_id=42, extra=GTID_SERVER) as replica:
        replica.execute(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primary.port}, "
                        "MASTER_USER='root', MASTER_USE_GTID=slave_pos")
        replica.execute("START SLAVE")
        primary.execute(f"CREATE DATABASE {DB}")
        primary.execute(f"CREATE TABLE {DB}.accounts (id INT PRIMARY KEY, owner VARCHAR(40), "
                        "balance DECIMAL(12,2))")
        primary.execute(f"CREATE TABLE {DB}.notes (a INT, b VARCHAR(10))")
        primary.execute(f"INSERT INTO {DB}.accounts SELECT seq, 'first', seq "
                        f"FROM {DB}.seq_0_to_199")
        caught_up(replica, primary)
        yield primary, replica


def test_the_follower_goes_on_on_the_promoted_replica_without_a_gap_or_a_repeat(pair, tmp_path):
    primary, replica = pair
    lake = tmp_path / "lake"
    log = open(tmp_path / "follower.log", "ab")
    promoted_after_a_kill(primary, replica, followed_under_writes(primary, lake, log,
                                                                   rotated=True))

    # The replica promoted, written to; the follower started on it, same lake.
    text = followed_on(replica, lake, follower(replica, lake, log), log, [
        f"ALTER TABLE {DB}.accounts ADD COLUMN note VARCHAR(10) DEFAULT 'n'"])
    assert "is another server than the one the lake followed" in text

    assert_each_change_once(lake, replica)

    # The old primary back, without the new one's transactions: refused in
    # one line, nothing changed.
    manifest = (lake / "_binlake" / "manifest.json").read_bytes()
    primary.start()
    refused = subprocess.run(follower_command(primary, lake), capture_output=True, text=True,
                             timeout=300)
    assert refused.returncode == 1, refused.stderr
    line = refused.stderr.strip().splitlines()[-1]
    assert "lacks transactions the lake holds" in line, refused.stderr
    assert (lake / "_binlake" / "manifest.json").read_bytes() == manifest
    assert not list((lake / "_binlake" / "binlogs").glob("failover2~*"))


def promoted_after_a_kill(primary, replica, process) -> None:
    """The primary dies with everything on its replica, the follower is
    SIGKILLed, and the replica is promoted."""
    caught_up(replica, primary)
    primary.kill()
    time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    replica.execute("STOP SLAVE")
    replica.execute("RESET SLAVE ALL")


def followed_under_writes(primary, lake, log, rotated: bool):
    """The follower started on the primary and its micro-batches taking a
    writer's transactions (the primary's binlog rotated midway, with
    `rotated`); the writer stopped: the follower's process."""
    process = follower(primary, lake, log)
    writer = Writer(primary)
    writer.start()
    try:
        wait_for_batches(lake, process, 2)
        if rotated:
            primary.flush_logs()
            wait_for_batches(lake, process, 2)
    finally:
        writer.done.set()
        writer.join()
    return process


def followed_on(promoted, lake, process, log, ddl: list) -> str:
    """The promoted replica written to, `ddl` and a new table among the
    writes, while the follower runs; the follower stopped once the lake
    holds every row: its log."""
    writer = Writer(promoted)
    writer.start()
    try:
        wait_for_batches(lake, process, 2)
        for statement in ddl + [f"CREATE TABLE {DB}.extra (k INT PRIMARY KEY, v BIGINT)",
                                f"INSERT INTO {DB}.extra VALUES (1, 10), (2, 20)"]:
            promoted.execute(statement)
        wait_for_batches(lake, process, 2)
    finally:
        writer.done.set()
        writer.join()
    expected = server_rows(promoted)
    deadline = time.monotonic() + 120
    while lake_rows(lake) != expected and time.monotonic() < deadline:
        assert process.poll() is None, open(log.name).read()
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0
    log.close()
    text = open(log.name).read()
    assert lake_rows(lake) == expected, text
    return text


def assert_each_change_once(lake, promoted) -> None:
    """changes/ holds each change of the promoted replica's binlog (which
    holds the old primary's transactions too) once, under its GTID: none
    lost, none twice; read from both servers' copies."""
    changes = view_table(lake, "changes", ["gtid", "table", "file"]).to_pylist()
    held = Counter((row["gtid"], row["table"]) for row in changes)
    sent = Counter((c.gtid, c.table) for c in binlake.changes(
        [str(path) for path in promoted.binlog_files()]) if c.database == DB)
    assert held == sent
    servers = Counter(row["file"].startswith("failover1~") for row in changes)
    assert servers[True] and servers[False], servers


def test_another_server_behind_the_followed_address_is_followed_on(pair, tmp_path):
    """A failover behind one address (a virtual IP moved): the primary
    SIGKILLed, its replica promoted and started again on the primary's
    port. The running follower finds another server there and goes on in
    its binlog by GTID, without a restart."""
    primary, replica = pair
    lake = tmp_path / "lake"
    log = open(tmp_path / "follower.log", "ab")
    process = followed_under_writes(primary, lake, log, rotated=False)
    caught_up(replica, primary)
    port = primary.port
    primary.kill()
    replica.execute("STOP SLAVE")
    replica.execute("RESET SLAVE ALL")
    replica.stop()
    replica.port = port
    replica.start()
    text = followed_on(replica, lake, process, log, [])
    assert "another server answers: following it on" in text
    assert_each_change_once(lake, replica)


# -- where the lake goes on, on one server's binlog ------------------------------------

@pytest.fixture(scope="module")
def two_domains(mariadb, tmp_path_factory):
    """A binlog of 0-51-1..4 with 1-51-1 between 0-51-3 and 0-51-4: the
    row transactions' GTIDs, and where each ends."""
    with MariaDBServer(tmp_path_factory.mktemp("domains"), server_id=51) as server:
        server.execute("CREATE DATABASE d")   # 0-51-1
        server.execute("CREATE TABLE d.t (id INT PRIMARY KEY)")  # 0-51-2
        server.execute("INSERT INTO d.t VALUES (1)")  # 0-51-3
        with server.connect() as connection, connection.cursor() as cursor:
            cursor.execute("SET SESSION gtid_domain_id = 1")
            cursor.execute("INSERT INTO d.t VALUES (2)")  # 1-51-1
        server.execute("INSERT INTO d.t VALUES (3)")  # 0-51-4
        path = str(server.binlog_files()[0])
        ends = {txn.gtid: txn.end_pos for txn in binlake.transactions(path)}
        yield path, ends, server


def test_the_lake_goes_on_after_the_last_transaction_it_holds(two_domains):
    from binlake.spark.read.failover import continuation
    path, ends, _ = two_domains
    assert list(ends) == ["0-51-3", "1-51-1", "0-51-4"]
    size = os.path.getsize(path)
    assert continuation(path, size, {}) == 4
    assert continuation(path, size, {0: (51, 3)}) == ends["0-51-3"]
    assert continuation(path, size, {0: (51, 4), 1: (51, 1)}) == ends["0-51-4"]
    # the lake holding 0-51-4 but not 1-51-1, written before it: refused
    with pytest.raises(ValueError, match="1-51-1 the lake does not hold comes before 0-51-4"):
        continuation(path, size, {0: (51, 4)})


def test_the_lakes_gtid_state_is_that_of_its_last_position(two_domains):
    from binlake.spark.read.failover import gtid_text, lake_gtid_state
    from binlake.spark.state.manifest import FileRead, Manifest, SnapshotFloor
    path, ends, _ = two_domains
    folder, name = os.path.split(path)

    def state(end: int) -> str:
        return gtid_text(lake_gtid_state(Manifest(files={name: FileRead(1, path, end, "")}),
                                         folder))
    assert state(ends["0-51-3"]) == "0-51-3"
    assert state(ends["1-51-1"]) == "0-51-3,1-51-1"
    assert state(os.path.getsize(path)) == "0-51-4,1-51-1"
    # a lake started from a snapshot that has read nothing since: the snapshot's
    floor = SnapshotFloor(name, 4, 1, gtid="0-51-7")
    assert gtid_text(lake_gtid_state(Manifest(snapshot=floor), folder)) == "0-51-7"


def test_the_streaming_sources_offsets_carry_the_gtid_state(two_domains):
    """The `binlog` source's offset names the GTID state at its position, as
    the server's BINLOG_GTID_POS() does."""
    from binlake.gtids import parse_gtid_list
    from binlake.spark.read.source import BinlogStreamReader
    path, _, server = two_domains
    reader = BinlogStreamReader({"path": os.path.dirname(path)})
    offset = reader.latestOffset()
    told = server.query("SELECT BINLOG_GTID_POS(%s, %s)", (offset["file"], offset["pos"]))
    assert parse_gtid_list(offset["gtid"]) == parse_gtid_list(told[0][0]) == {
        0: (51, 4), 1: (51, 1)}
    server.execute("INSERT INTO d.t VALUES (4)")  # 0-51-5: carried from the last offset
    assert reader.latestOffset(offset)["gtid"] == "0-51-5,1-51-1"


def test_tables_read_anew_on_the_promoted_replica_keep_their_rows(pair, tmp_path):
    """After a failover, tables read anew on request (--snapshot-tables), a
    keyed one in several chunks and a keyless one: their chunks are placed in
    the lake's numbering of the new server's binlogs (failover1~...), after
    the tables' start, so the tables equal the new primary's rows, those
    written outside its binlog too. (The chunks were numbered by the
    server's own names and sorted before every change: the keyed table lost
    its rows, the keyless one held them twice.)"""
    primary, replica = pair
    lake = tmp_path / "lake"
    log = open(tmp_path / "follower.log", "ab")
    promoted_after_a_kill(primary, replica, followed_under_writes(primary, lake, log,
                                                                   rotated=False))
    process = subprocess.Popen(follower_command(replica, lake) + ["--follow", "--chunk-rows", "40"],
                               stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    try:
        replica.execute(f"INSERT INTO {DB}.notes VALUES (1, 'one'), (1, 'one'), (2, 'two')")
        deadline = time.monotonic() + 180
        while status(lake).get("micro_batches", 0) < 1 and time.monotonic() < deadline:
            assert process.poll() is None, open(log.name).read()
            time.sleep(0.1)
        with replica.connect(DB) as hidden, hidden.cursor() as cursor:
            cursor.execute("SET SESSION sql_log_bin = 0")
            cursor.execute("UPDATE accounts SET owner = 'not in the binlog' WHERE id < 50")
            cursor.execute("INSERT INTO notes VALUES (3, 'hidden')")
        asked = subprocess.run([sys.executable, "-m", "binlake", "pipeline", "--out", str(lake),
                                "--snapshot-tables", f"{DB}.accounts,{DB}.notes"],
                               capture_output=True, text=True, timeout=60)
        assert asked.returncode == 0, asked.stderr
        expected = {table: sorted(replica.query(f"SELECT * FROM {DB}.{table}"))
                    for table in ("accounts", "notes")}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and (
                lake_rows(lake, ("accounts", "notes")) != expected
                or not (lake / "_binlake" / "requests").is_dir()
                or list((lake / "_binlake" / "requests").iterdir())):
            assert process.poll() is None, open(log.name).read()
            time.sleep(0.2)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0
    assert lake_rows(lake, ("accounts", "notes")) == expected, open(log.name).read()
