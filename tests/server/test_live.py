"""Live capture from a private MariaDB (binlake.live.source, binlake.live.backup, `dump -R`).

Strategy: one server per test, with small binlogs (many rotations). The
backups are checked byte for byte against the server's own files: every
closed binlog identical, the open one equal as far as the copy goes. The
stream is disturbed the ways the peers' trackers report: the dump thread
killed from the server side, a server restart, binlake itself SIGKILLed.
"""
from __future__ import annotations

import json
import random
import signal
import threading
import time
from pathlib import Path

import pytest

import binlake
from binlake.testing.mariadb import MariaDBServer
from server.live_helpers import (connection_args, gtid_replica, kill_dump_threads, start_backup,
                                 wait_for_copies, write)
from server.replay import replay, run_binlake, snapshot

pytestmark = pytest.mark.server


@pytest.fixture
def server(mariadbd, tmp_path):
    with MariaDBServer(tmp_path / "primary", server_id=1, max_binlog_size=64 << 10,
                       extra={"binlog_row_metadata": "MINIMAL"}) as primary:
        primary.execute("CREATE DATABASE shop")
        primary.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), "
                        "price DECIMAL(10,2), seen DATETIME(3))")
        yield primary


def assert_byte_identical(server, prefix: Path) -> int:
    files = server.binlog_files()
    for path in files[:-1]:
        assert (prefix / path.name).read_bytes() == path.read_bytes(), path.name
    last = files[-1].read_bytes()
    copy = (prefix / files[-1].name).read_bytes()
    assert last.startswith(copy) or copy == last, files[-1].name
    return len(files)


def test_raw_backup_survives_killed_dumps_a_restart_and_sigkills(server, tmp_path):
    prefix = tmp_path / "backup"
    backup = start_backup(server, prefix)
    try:
        write(server, 1, 300)
        time.sleep(1)
        assert kill_dump_threads(server) >= 1          # the server drops us, twice
        write(server, 301, 300)
        time.sleep(1)
        assert kill_dump_threads(server) >= 1
        write(server, 601, 300)
        server.stop()                                   # a clean restart
        server.start()
        write(server, 901, 300)
        time.sleep(1)
        backup.send_signal(signal.SIGKILL)              # binlake itself killed, twice
        backup.wait()
        write(server, 1201, 200)
        backup = start_backup(server, prefix)
        write(server, 1401, 200)
        time.sleep(0.5)
        backup.send_signal(signal.SIGKILL)
        backup.wait()
        write(server, 1601, 200)
        backup = start_backup(server, prefix)
        server.flush_logs()
        wait_for_copies(server, prefix)
        rotations = assert_byte_identical(server, prefix)
        assert rotations >= 5
    finally:
        backup.send_signal(signal.SIGINT)
        _, stderr = backup.communicate(timeout=30)
    # Ctrl-C ends cleanly, with everything received written.
    assert backup.returncode in (0, 130), stderr.decode()
    assert_byte_identical(server, prefix)


def test_a_copy_cut_mid_event_resumes_after_its_last_whole_event(server, tmp_path):
    write(server, 1, 200)
    server.flush_logs()
    prefix = tmp_path / "backup"
    args = ["dump", "-R", *connection_args(server), "--raw", "-t", "-r", f"{prefix}/",
            "binlog.000001"]
    status, _, err = run_binlake(*args)
    assert status == 0, err
    files = server.binlog_files()
    cut = prefix / files[-2].name
    data = cut.read_bytes()
    cut.write_bytes(data[:len(data) // 2 + 3])          # half an event, as a crash leaves it
    assert run_binlake(*args)[0] == 0
    assert_byte_identical(server, prefix)


def test_dump_R_prints_the_rows_of_the_servers_files(server):
    write(server, 1, 300)
    server.execute("ALTER TABLE shop.items ADD COLUMN note VARCHAR(10) DEFAULT 'n'")
    write(server, 301, 50)
    server.flush_logs()
    files = [str(f) for f in server.binlog_files()]
    live = run_binlake("dump", "-R", *connection_args(server), "-t", "-vv",
                       "--base64-output=decode-rows", "binlog.000001")
    local = run_binlake("dump", "-vv", "--base64-output=decode-rows", *files)
    assert live[0] == 0 and local[0] == 0, live[2] + local[2]
    rows = [line for line in live[1].splitlines() if line.startswith(b"###")]
    assert len(rows) > 1000
    assert rows == [line for line in local[1].splitlines() if line.startswith(b"###")]
    # The same with BINLOG blocks, JSON and the event listing, byte for byte, of
    # a closed binlog (the server clears the IN_USE flag of the format description
    # it sends, so of the open one only the file's copy says it is in use).
    for args in (["dump"], ["dump", "--format", "json"], ["events", "--format", "json"]):
        live = run_binlake(*args, "-R", *connection_args(server), "binlog.000001")
        local = run_binlake(*args, files[0])
        assert live[0] == local[0] == 0, live[2] + local[2]
        assert live[1] == local[1].replace(files[0].encode(), b"binlog.000001")


def test_sql_R_replayed_gives_the_servers_tables(server, mariadbd, tmp_path):
    write(server, 1, 400)
    status, sql, err = run_binlake("sql", "-R", *connection_args(server), "-t", "binlog.000001")
    assert status == 0, err
    with MariaDBServer(tmp_path / "replica", server_id=2) as replica:
        replay(replica, sql)
        assert snapshot(replica, "shop") == snapshot(server, "shop")


def test_mariadb_gtid_start_gives_exactly_the_later_transactions(server):
    write(server, 1, 50)
    gtids = [t.gtid for t in binlake.stream("127.0.0.1", server.port, "root", "",
                                            stop_never=False).transactions()]
    middle = gtids[len(gtids) // 2]
    later = [t.gtid for t in binlake.stream("127.0.0.1", server.port, "root", "",
                                            gtid=middle, stop_never=False).transactions()]
    assert later == gtids[gtids.index(middle) + 1:]
    status, out, err = run_binlake("dump", "-R", *connection_args(server), "-t",
                                   "--start-gtid", middle, "-v", "--base64-output=decode-rows")
    assert status == 0, err
    assert out.count(b"### INSERT INTO `shop`.`items`") == sum(
        1 for t in binlake.stream("127.0.0.1", server.port, "root", "", gtid=middle,
                                  stop_never=False).transactions()
        for c in t.changes if c.op == "insert")


def test_resume_tokens_give_every_change_exactly_once(server):
    write(server, 1, 400)
    everything = [(c.pos, c.row_index, c.op, c.before, c.after) for c in binlake.stream(
        "127.0.0.1", server.port, "root", "", stop_never=False).changes()]
    rng = random.Random(16)
    collected, token, rounds = [], None, 0
    while True:
        stream = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                                resume=token)
        take, taken = rng.randint(1, 60), 0
        with stream:
            for transaction in stream.transactions():
                collected += [(c.pos, c.row_index, c.op, c.before, c.after)
                              for c in transaction.changes]
                token = str(transaction.resume_token)
                taken += 1
                if taken == take:
                    break
        rounds += 1
        if taken < take:
            break
    assert rounds > 10
    assert collected == everything


def test_the_stream_follows_a_server_that_writes_and_rotates(server):
    """Changes arrive while they are written; kills and rotations leave no gap."""
    received = []
    stream = binlake.stream("127.0.0.1", server.port, "root", "", heartbeat=0.5)

    def consume():
        for change in stream.changes():
            received.append(change.after["id"] if change.op == "insert" else None)
            if change.op == "insert" and change.after["id"] == 500:
                return
    thread = threading.Thread(target=consume)
    thread.start()
    write(server, 1, 250)
    kill_dump_threads(server)
    write(server, 251, 250)
    thread.join(60)
    stream.close()
    assert not thread.is_alive()
    assert [i for i in received if i is not None] == list(range(1, 501))


@pytest.mark.parametrize("case", ["purged", "duplicate id", "password", "unreachable"])
def test_problems_are_one_line_errors(server, case):
    args = connection_args(server)
    if case == "purged":
        write(server, 1, 20)
        server.flush_logs()
        server.flush_logs()
        deadline = time.monotonic() + 30
        while server.query("SHOW BINARY LOGS")[0][0] != "binlog.000003":
            # MariaDB keeps a binlog until its binlog checkpoint has passed it
            assert time.monotonic() < deadline, "the server did not purge its binlogs"
            server.execute("PURGE BINARY LOGS TO 'binlog.000003'")
            time.sleep(0.2)
        hint = "Could not find first log file"
    elif case == "duplicate id":
        holder = binlake.stream("127.0.0.1", server.port, "root", "", server_id=4242)
        events = iter(holder)
        next(events)                         # connected and registered
        args += ["--connection-server-id", "4242"]
        hint = "4242"
    elif case == "password":
        server.execute("CREATE USER repl@'%' IDENTIFIED BY 'right'")
        args = ["-h", "127.0.0.1", "-P", str(server.port), "-u", "repl", "--password=wrong"]
        hint = "Access denied"
    else:
        from binlake.testing.mariadb import free_port
        args = ["-h", "127.0.0.1", "-P", str(free_port()), "-u", "root", "--password="]
        hint = "connect"
    status, _, err = run_binlake("dump", "-R", *args, "binlog.000001")
    if case == "duplicate id":
        holder.close()
    assert status == 1
    assert err.count("\n") == 1 and hint in err, err


def test_a_stalled_connection_is_noticed_and_replaced(server):
    """A server that stops answering (SIGSTOP: no events, no heartbeats, no
    error) is noticed by the read timeout; the new connection continues
    where the old one stopped."""
    reconnects, received = [], []
    stream = binlake.stream("127.0.0.1", server.port, "root", "", heartbeat=0.5,
                            read_timeout=2)
    stream.source.options.on_reconnect = lambda error, attempt: reconnects.append(str(error))

    def consume():
        for change in stream.changes():
            if change.op == "insert":
                received.append(change.after["id"])
                if change.after["id"] == 200:
                    return
    thread = threading.Thread(target=consume)
    thread.start()
    write(server, 1, 100)
    # stop the server only once the stream is connected and reading (on a
    # busy machine the connect itself may come later than the writes)
    deadline = time.monotonic() + 60
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert received, "the stream never started"
    server._process.send_signal(signal.SIGSTOP)
    time.sleep(4)
    server._process.send_signal(signal.SIGCONT)
    write(server, 101, 100)
    thread.join(90)
    stream.close()
    assert not thread.is_alive()
    assert any("stalled" in message for message in reconnects), reconnects
    assert received == list(range(1, 201))


def test_arrow_changes_of_a_live_server_equal_those_of_its_files(server):
    pytest.importorskip("pyarrow")
    write(server, 1, 300)
    server.flush_logs()
    live = binlake.arrow_changes(binlake.stream("127.0.0.1", server.port, "root", "",
                                                stop_never=False)).read_all()
    files = binlake.arrow_changes([str(f) for f in server.binlog_files()]).read_all()
    assert live.num_rows == files.num_rows > 300
    assert live.drop_columns(["path"]).to_pylist() == files.drop_columns(["path"]).to_pylist()


def test_arrow_batches_of_a_followed_server_come_soon_after_each_commit(server):
    pyarrow = pytest.importorskip("pyarrow")
    write(server, 1, 10)
    stream = binlake.stream("127.0.0.1", server.port, "root", "", heartbeat=0.5)
    batches = iter(binlake.arrow_changes(stream))
    seen = []
    while len(seen) < 10:
        seen += [row["after"] for row in next(batches).to_pylist() if row["op"] == "c"]
    write(server, 12, 1)                   # one commit: its batch comes without waiting for more
    batch = next(batches)
    stream.close()
    assert isinstance(batch, pyarrow.RecordBatch)
    assert [(row["op"], dict(row["after"])["id"]) for row in batch.to_pylist()] == [("c", "12")]


def test_dump_R_stop_never_follows_writes_and_stops_cleanly_on_ctrl_c(server, tmp_path):
    import os
    import subprocess
    import sys
    output = tmp_path / "follow.txt"
    command = [sys.executable, "-m", "binlake", "dump", "-R", *connection_args(server),
               "--stop-never", "--heartbeat-period", "0.5", "-v",
               "--base64-output=decode-rows", "-r", str(output), "binlog.000001"]
    follower = subprocess.Popen(command, stderr=subprocess.PIPE, env={**os.environ, "TZ": "UTC"})
    try:
        write(server, 1, 50)
        server.flush_logs()
        write(server, 51, 50)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                output.exists() and output.read_bytes().count(b"### INSERT INTO") >= 56):
            time.sleep(0.2)
        time.sleep(1)
    finally:
        follower.send_signal(signal.SIGINT)
        _, err = follower.communicate(timeout=30)
    assert follower.returncode == 130, err.decode()
    # everything received is written: the rows of all 100 inserts
    assert output.read_bytes().count(b"### INSERT INTO `shop`.`items`") == 100


def test_schema_R_follows_the_ddl_of_the_stream(server):
    server.execute("ALTER TABLE shop.items ADD COLUMN note VARCHAR(10)")
    status, out, err = run_binlake("schema", "-R", *connection_args(server), "-t",
                                   "binlog.000001")
    assert status == 0, err
    assert b"CREATE TABLE `shop`.`items`" in out and b"`note` varchar(10)" in out.lower()


def test_a_resume_pointed_at_another_server_is_refused(server, tmp_path, mariadbd):
    """A backup of one server, resumed against another whose binlogs carry
    the same names (a failover behind one address): refused before a byte
    is written, by the format description the other server sends for the
    copy's file; the backup stays as it was. Its own server continues it."""
    write(server, 1, 100)
    server.flush_logs()
    prefix = tmp_path / "backup"
    args = ["--raw", "-t", "-r", f"{prefix}/", "binlog.000001"]
    status, _, err = run_binlake("dump", "-R", *connection_args(server), *args)
    assert status == 0, err
    before = {p.name: p.read_bytes() for p in prefix.iterdir()}
    time.sleep(1.1)  # another server's binlog: begun at another second
    with MariaDBServer(tmp_path / "other", server_id=1) as other:
        other.execute("CREATE DATABASE shop")
        while other.binlog_files()[-1].name < server.binlog_files()[-1].name:
            other.flush_logs()  # the same names as the first server's
        status, _, err = run_binlake("dump", "-R", *connection_args(other), *args)
    assert status == 1 and err.count("\n") == 1, err
    assert "not the one this backup copied" in err
    assert {p.name: p.read_bytes() for p in prefix.iterdir()} == before
    write(server, 101, 100)
    server.flush_logs()
    status, _, err = run_binlake("dump", "-R", *connection_args(server), *args)
    assert status == 0, err
    assert_byte_identical(server, prefix)


def test_a_token_taken_on_a_primary_continues_on_its_replica(server, tmp_path):
    """The token carries the server it was taken on and MariaDB's GTID state
    (every domain, from BINLOG_GTID_POS where the stream began): on the
    primary it continues by position, on a replica of the same replication
    domain by GTID; no transaction lost, none repeated."""
    with gtid_replica(server, tmp_path / "replica") as replica:
        write(server, 1, 100)
        taken, token = [], None
        stream = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                                file="binlog.000001")
        with stream:
            for transaction in stream.transactions():
                taken += [int(c.after["id"]) for c in transaction.changes if c.op == "insert"]
                token = transaction.resume_token
                if len(taken) == 40:
                    break
        assert token.server_id == 1 and token.gtid.startswith("0-1-")
        write(server, 101, 50)
        deadline = time.monotonic() + 60
        while replica.query("SELECT COUNT(*) FROM shop.items")[0][0] \
                != server.query("SELECT COUNT(*) FROM shop.items")[0][0]:
            assert time.monotonic() < deadline, "the replica did not catch up"
            time.sleep(0.2)
        for other in (server, replica):  # by position, then by GTID
            rest = [int(c.after["id"]) for c in binlake.stream(
                "127.0.0.1", other.port, "root", "", stop_never=False, resume=str(token)
            ).changes() if c.op == "insert"]
            assert taken + rest == list(range(1, 151)), other.settings


def test_a_token_on_a_server_lacking_its_last_transactions_is_refused(server, tmp_path):
    """An asynchronous failover: the promoted replica lacks the token's last
    transactions and has written its own since, their sequence numbers
    below the token's. Continued by GTID (in strict mode, so that no case
    the server's lax mode lets through skips a transaction), the server
    refuses in one error (1236) instead of skipping its own."""
    with gtid_replica(server, tmp_path / "replica") as replica:
        write(server, 1, 20)
        gtid = server.query("SELECT @@gtid_binlog_pos")[0][0]
        replica.execute(f"SELECT MASTER_GTID_WAIT('{gtid}', 60)")
        replica.execute("STOP SLAVE")
        write(server, 21, 5)                 # never reaches the replica
        stream = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                                file="binlog.000001", schema=False)
        assert list(stream.transactions())
        token = stream.resume_token
        replica.execute("RESET SLAVE ALL")
        write(replica, 100, 2)               # the promoted replica's own: seq below the token's
        with pytest.raises(binlake.ReplicationError) as raised:
            list(binlake.stream("127.0.0.1", replica.port, "root", "", stop_never=False,
                                schema=False, resume=str(token)).changes())
    assert "\n" not in str(raised.value) and "1236" in str(raised.value), raised.value


@pytest.mark.parametrize("read", ["transactions", "changes"])
def test_a_stream_goes_on_after_a_failover_behind_the_address(server, tmp_path, read):
    """The address the stream follows moves from the primary to its
    replica, promoted (a virtual IP): `transactions()` goes on by the
    token's GTID state on the new server, each transaction once, the one
    cut off by the switch given whole; its tokens then name the new server.
    `changes()` too, the switch falling between transactions."""
    from server.live_helpers import SwitchingProxy
    with gtid_replica(server, tmp_path / "replica") as replica:
        proxy = SwitchingProxy(server.port)
        stream = binlake.stream("127.0.0.1", proxy.port, "root", "", file="binlog.000001",
                                heartbeat=0.5)
        got, tokens = [], []

        def consume():
            if read == "changes":
                for change in stream.changes():
                    if change.op == "insert":
                        got.append(int(change.after["id"]))
                        tokens.append(stream.resume_token)
                return
            for transaction in stream.transactions():
                got.extend(int(c.after["id"]) for c in transaction.changes if c.op == "insert")
                tokens.append(transaction.resume_token)
        thread = threading.Thread(target=consume, daemon=True)
        with pytest.warns(RuntimeWarning, match="going on by GTID"):
            thread.start()
            write(server, 1, 40)
            gtid = server.query("SELECT @@gtid_binlog_pos")[0][0]
            replica.execute(f"SELECT MASTER_GTID_WAIT('{gtid}', 60)")
            deadline = time.monotonic() + 30
            while len(got) < 10:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            replica.execute("STOP SLAVE")
            replica.execute("RESET SLAVE ALL")
            proxy.switch(replica.port)          # the primary is gone from the address
            write(replica, 41, 10)
            deadline = time.monotonic() + 60
            while len(got) < 50 and time.monotonic() < deadline:
                time.sleep(0.1)
            stream.close()
            thread.join(10)
        proxy.close()
    assert got == list(range(1, 51))
    assert tokens[0].server_id == 1 and tokens[-1].server_id == 2


def test_dump_R_stop_never_goes_on_after_a_failover_rolling_back_the_cut_transaction(
        server, mariadbd, tmp_path):
    """`dump -R --stop-never` through an address that moves from the
    primary to its promoted replica while a large transaction is half
    received: the half printed is closed by a ROLLBACK, the dump goes on by
    the GTID state after the last whole transaction, the cut one comes again
    whole; the text replayed into a new server gives the replica's tables."""
    import os
    import subprocess
    import sys
    from server.live_helpers import SwitchingProxy
    output = tmp_path / "follow.sql"
    with gtid_replica(server, tmp_path / "replica") as replica:
        proxy = SwitchingProxy(server.port)
        command = [sys.executable, "-m", "binlake", "dump", "-R", "-h", "127.0.0.1",
                   "-P", str(proxy.port), "-u", "root", "--password=", "--stop-never",
                   "--heartbeat-period", "0.5", "-r", str(output), "binlog.000001"]
        follower = subprocess.Popen(command, stderr=subprocess.PIPE,
                                    env={**os.environ, "TZ": "UTC"})

        def printed(text: bytes, timeout: float = 30) -> None:
            deadline = time.monotonic() + timeout
            while not (output.exists() and text in output.read_bytes()):
                if follower.poll() is not None:
                    raise AssertionError(follower.communicate()[1].decode())
                assert time.monotonic() < deadline, text
                time.sleep(0.1)
        try:
            write(server, 1, 20)
            last = server.query("SELECT @@gtid_binlog_pos")[0][0]
            printed(f"GTID {last} trans".encode())
            proxy.hold_after(6000)                  # the server is lost inside the next one
            connection = server.connect("shop")
            with connection.cursor() as cursor:
                cursor.execute("BEGIN")
                for part in range(20):
                    cursor.executemany("INSERT INTO items (id, name) VALUES (%s, %s)",
                                       [(1000 + 50 * part + i, "y" * 30) for i in range(50)])
                cursor.execute("COMMIT")
            connection.close()
            cut = server.query("SELECT @@gtid_binlog_pos")[0][0]
            replica.execute(f"SELECT MASTER_GTID_WAIT('{cut}', 60)")
            printed(f"GTID {cut} trans".encode())   # its start, and some of its rows
            time.sleep(0.5)
            assert b"ROLLBACK /* added by binlake */" not in output.read_bytes()
            replica.execute("STOP SLAVE")
            replica.execute("RESET SLAVE ALL")
            proxy.switch(replica.port)
            write(replica, 2000, 10)
            printed(f"GTID {replica.query('SELECT @@gtid_binlog_pos')[0][0]} trans".encode())
            time.sleep(0.5)
        finally:
            follower.send_signal(signal.SIGINT)
            _, err = follower.communicate(timeout=30)
            proxy.close()
        expected = snapshot(replica, "shop")
    assert follower.returncode == 130, err.decode()
    assert b"going on by GTID" in err, err.decode()
    text = output.read_bytes()
    assert text.count(f"GTID {cut} trans".encode()) == 2      # cut, then again whole
    assert text.count(b"ROLLBACK /* added by binlake */") == 1
    with MariaDBServer(tmp_path / "replayed", server_id=3) as target:
        replay(target, text)
        assert snapshot(target, "shop") == expected
    assert len(expected["items"]) == 19 + 1000 + 9   # (each write() deletes one)


@pytest.mark.parametrize("metadata", ["FULL", "MINIMAL"])
def test_a_plain_token_after_ddl_is_named_right_or_refused(mariadbd, tmp_path, metadata):
    """A token without its schema history names rows by the server's tables
    as they are now. With column names in the binlog (FULL metadata) that
    does not matter; without them, DDL since the token (two columns swapped
    by RENAME COLUMN: the same count and types) would misname every row,
    so the resume is refused in one line, and a new table is no reason to."""
    with MariaDBServer(tmp_path / metadata, binlog_row_metadata=metadata) as server:
        server.execute("CREATE DATABASE d")
        server.execute("CREATE TABLE d.t (id INT PRIMARY KEY, a INT, b INT)")
        stream = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False)
        assert list(stream.transactions()) == []
        token = str(stream.resume_token)
        server.execute("CREATE TABLE d.other (x INT)")
        server.execute("INSERT INTO d.t VALUES (1, 10, 20)")

        def resumed():
            return [dict(c.after) for c in binlake.stream(
                "127.0.0.1", server.port, "root", "", stop_never=False, resume=token).changes()]
        assert resumed() == [{"id": 1, "a": 10, "b": 20}]
        server.execute("ALTER TABLE d.t RENAME COLUMN a TO z, RENAME COLUMN b TO a")
        server.execute("ALTER TABLE d.t RENAME COLUMN z TO b")
        server.execute("INSERT INTO d.t VALUES (2, 30, 40)")
        if metadata == "FULL":
            assert resumed() == [{"id": 1, "a": 10, "b": 20}, {"id": 2, "b": 30, "a": 40}]
        else:
            with pytest.raises(binlake.ReplicationError, match="ALTER at binlog.000001:[0-9]+ "
                               "changed d.t since") as refused:
                resumed()
            assert "\n" not in str(refused.value) and "checkpoint()" in str(refused.value)


def test_a_plain_token_with_the_streams_history_file_names_rows_as_they_were(mariadbd,
                                                                            tmp_path):
    """`history=`: the stream keeps its schema history in a file; a plain
    token resumed with it names each row as the server had its table then,
    across a column swap, on a server whose binlog names no columns."""
    with MariaDBServer(tmp_path / "server", binlog_row_metadata="MINIMAL") as server:
        server.execute("CREATE DATABASE d")
        server.execute("CREATE TABLE d.t (id INT PRIMARY KEY, a INT, b INT)")
        kept = str(tmp_path / "history.json")
        stream = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                                history=kept)
        assert list(stream.transactions()) == []
        token = str(stream.resume_token)
        server.execute("INSERT INTO d.t VALUES (1, 10, 20)")
        server.execute("ALTER TABLE d.t RENAME COLUMN a TO z, RENAME COLUMN b TO a")
        server.execute("ALTER TABLE d.t RENAME COLUMN z TO b")
        server.execute("INSERT INTO d.t VALUES (2, 30, 40)")
        resumed = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                                 resume=token, history=kept)
        rows = [dict(c.after) for c in resumed.changes()]
        assert rows == [{"id": 1, "a": 10, "b": 20}, {"id": 2, "b": 30, "a": 40}]
        later = str(resumed.resume_token)            # the history saved through the swap
        server.execute("INSERT INTO d.t VALUES (3, 50, 60)")
        assert [dict(c.after) for c in binlake.stream(
            "127.0.0.1", server.port, "root", "", stop_never=False, resume=later,
            history=kept).changes()] == [{"id": 3, "b": 50, "a": 60}]


def test_a_rows_event_over_16_mb_prints_from_the_server_as_from_the_file(mariadbd, tmp_path):
    """Default output (BINLOG blocks) of a 20 MB rows event, read over the
    wire (packets of 16 MB continued), equals the file's, byte for byte."""
    with MariaDBServer(tmp_path / "big", server_id=1,
                       extra={"max_allowed_packet": "64M"}) as big:
        big.execute("CREATE DATABASE shop")
        big.execute("CREATE TABLE shop.blobs (id INT PRIMARY KEY, b LONGBLOB)")
        big.execute("INSERT INTO shop.blobs VALUES (1, REPEAT('x', 20 * 1024 * 1024))")
        big.flush_logs()
        status, wire, err = run_binlake("dump", "-R", *connection_args(big), "binlog.000001")
        assert status == 0, err
        status, file, err = run_binlake("dump", str(big.binlog_files()[0]))
    assert status == 0, err
    assert len(wire) > 20 << 20
    assert wire == file


def test_a_checkpoint_names_the_columns_as_they_were_at_its_point(server):
    """Under MINIMAL metadata the binlog names no column: a stream resumed
    from a checkpoint (its token and the schema history there) names the
    rows written before a later ALTER by the columns they had, where the
    server's tables as they are now would misname them."""
    write(server, 1, 10)
    stream = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                            file="binlog.000001")
    with stream:
        for _ in stream.transactions():
            pass
        saved = json.loads(json.dumps(stream.checkpoint().to_json()))
    server.execute("INSERT INTO shop.items (id, name, price, seen) VALUES (11, 'eleven', 1.5, "
                   "'2024-01-02 03:04:05')")
    server.execute("ALTER TABLE shop.items DROP COLUMN name, ADD COLUMN note VARCHAR(10) FIRST")
    server.execute("INSERT INTO shop.items (note, id, price, seen) VALUES ('new', 12, 2.5, "
                   "'2024-01-02 03:04:05')")
    rows = [dict(c.after) for c in binlake.stream(
        "127.0.0.1", server.port, "root", "", stop_never=False, resume=saved).changes()]
    assert rows[0]["name"] == "eleven" and rows[0]["id"] == 11
    assert rows[1]["note"] == "new" and rows[1]["id"] == 12
    assert [str(rows[0]["price"]), str(rows[1]["price"])] == ["1.50", "2.50"]


@pytest.mark.parametrize("start", ["file", "gtid", "token"])
def test_dump_threads_killed_at_random_moments_under_load_lose_and_repeat_nothing(server, start):
    """A writer keeps committing while the server's dump thread is killed at
    random moments; the stream, started at a file, at a GTID or from a
    token, hands out exactly the transactions one uninterrupted read does."""
    write(server, 1, 40)
    first = list(binlake.stream("127.0.0.1", server.port, "root", "",
                                stop_never=False).transactions())
    origin = {"file": {"file": "binlog.000001"}, "gtid": {"gtid": first[20].gtid},
              "token": {"resume": str(first[20].resume_token)}}[start]
    received = []
    stream = binlake.stream("127.0.0.1", server.port, "root", "", heartbeat=0.5, **origin)

    def consume():
        for transaction in stream.transactions():
            received.append(transaction.gtid)
            if transaction.changes and transaction.changes[-1].after is not None \
                    and transaction.changes[-1].after["id"] == 1500:
                return
    thread = threading.Thread(target=consume)
    thread.start()
    killed = [0]

    def writes():  # in four parts, each after one more kill (a loaded machine's
        for part in range(4):  # writer would otherwise finish before the kills)
            deadline = time.monotonic() + 30
            while killed[0] < part and time.monotonic() < deadline:
                time.sleep(0.01)
            write(server, 41 + part * 365, 365)
    writer = threading.Thread(target=writes)
    writer.start()
    rng = random.Random(start)
    while thread.is_alive() and killed[0] < 8:  # while the writes come and are delivered
        time.sleep(rng.uniform(0.01, 0.1))
        killed[0] += kill_dump_threads(server)
    kills = killed[0]
    writer.join()
    thread.join(90)
    stream.close()
    assert not thread.is_alive()
    whole = [t.gtid for t in binlake.stream("127.0.0.1", server.port, "root", "",
                                            stop_never=False, **origin).transactions()]
    assert received == whole[:len(received)] and len(received) >= 1460
    assert kills >= 3
