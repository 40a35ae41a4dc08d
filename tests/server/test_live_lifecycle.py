"""How a live read starts, lasts and ends (binlake.live.source, the `dump -R`
command line): a clean server restart and a SIGKILLed server are followed,
not taken as the end; a run restarted just after a SIGKILL takes over its
own registration; `close()` from another thread, SIGTERM and a broken pipe
end a run promptly and say so in the exit status; an idle server with
heartbeats costs no reconnect and shows no lag, and one without heartbeats
no read timeout."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import binlake
from binlake.testing.mariadb import MariaDBServer
from server.live_helpers import (connection_args, kill_dump_threads, start_backup,
                                 wait_for_copies, write)

pytestmark = pytest.mark.server

INSERTS = b"### INSERT INTO `shop`.`items`"


@pytest.fixture
def server(mariadbd, tmp_path):
    with MariaDBServer(tmp_path / "primary", server_id=1, max_binlog_size=64 << 10) as primary:
        primary.execute("CREATE DATABASE shop")
        primary.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), "
                        "price DECIMAL(10,2), seen DATETIME(3))")
        yield primary


def follow_text(server, output: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "binlake", "dump", "-R", *connection_args(server),
               "--stop-never", "--heartbeat-period", "0.5", "-v", "--base64-output=decode-rows",
               "-r", str(output), *extra, "binlog.000001"]
    return subprocess.Popen(command, stderr=subprocess.PIPE, env={**os.environ, "TZ": "UTC"})


def wait_until(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def registered(server) -> set:
    """The replica ids the server lists."""
    return {row[0] for row in server.query("SHOW SLAVE HOSTS")}


def stream_ids(server, received: list, **options):
    """A thread taking the ids of inserted rows from binlake.stream."""
    stream = binlake.stream("127.0.0.1", server.port, "root", "", heartbeat=0.5, schema=False,
                            file="binlog.000001", **options)

    def consume():
        for change in stream.changes():
            if change.op == "insert":
                received.append(int(change.after["id"]))
    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    return stream, thread


@pytest.mark.parametrize("how", ["clean", "SIGKILL"])
def test_a_restarted_server_is_followed_by_text_raw_and_stream(server, tmp_path, how):
    """The server restarts, cleanly (its STOP event, then the dump ended)
    or killed: the text follower, the raw backup and the stream go on
    (reconnecting as it comes back), nothing lost or repeated."""
    output, prefix, received = tmp_path / "follow.txt", tmp_path / "backup", []
    # Three replicas at once: three replica ids.
    text = follow_text(server, output, "--connection-server-id", "601")
    backup = start_backup(server, prefix, "--connection-server-id", "602")
    stream, thread = stream_ids(server, received, server_id=603)
    try:
        wait_until(lambda: {601, 602, 603} <= registered(server))
        write(server, 1, 150)
        wait_until(lambda: len(received) == 150)
        if how == "clean":
            server.stop()
        else:
            server.kill()
        time.sleep(1.5)
        for process in (text, backup):
            assert process.poll() is None, process.stderr.read().decode()
        assert thread.is_alive()
        server.start()
        write(server, 151, 150)
        server.flush_logs()
        wait_until(lambda: len(received) == 300)
        wait_for_copies(server, prefix)
        wait_until(lambda: output.exists() and output.read_bytes().count(INSERTS) == 300)
    finally:
        stream.close()
        for process in (text, backup):
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=30)
    assert received == list(range(1, 301))
    assert output.read_bytes().count(INSERTS) == 300
    for path in server.binlog_files()[:-1]:  # the copies: byte for byte
        assert (prefix / path.name).read_bytes() == path.read_bytes(), path.name
    thread.join(5)
    assert not thread.is_alive()


def test_a_run_restarted_just_after_a_sigkill_takes_over_its_registration(server, tmp_path):
    """The server keeps a SIGKILLed run's registration until it notices the
    connection is dead; binlake recognises its own (this machine, a process
    that is gone) and goes on. Another live replica's id is still refused."""
    prefix = tmp_path / "backup"
    backup = start_backup(server, prefix)
    write(server, 1, 50)
    wait_until(lambda: 65535 in registered(server))
    backup.send_signal(signal.SIGKILL)
    backup.wait()
    assert 65535 in registered(server)  # still listed
    again = start_backup(server, prefix)
    try:
        write(server, 51, 50)
        server.flush_logs()
        wait_for_copies(server, prefix)
        assert again.poll() is None
    finally:
        again.send_signal(signal.SIGINT)
        _, err = again.communicate(timeout=30)
    assert again.returncode == 130, err.decode()
    assert b"already used" not in err


def test_close_from_another_thread_ends_the_stream_within_a_second(server):
    received = []
    stream, thread = stream_ids(server, received)
    write(server, 1, 20)
    wait_until(lambda: len(received) == 20)
    started = time.monotonic()
    stream.close()                      # the consumer is blocked reading the server
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - started < 1


def test_sigterm_stops_as_ctrl_c_does_with_everything_received_written(server, tmp_path):
    output = tmp_path / "follow.txt"
    text = follow_text(server, output)
    write(server, 1, 100)
    wait_until(lambda: output.exists() and output.read_bytes().count(INSERTS) == 100)
    text.send_signal(signal.SIGTERM)
    _, err = text.communicate(timeout=30)
    assert text.returncode == 143, err.decode()
    assert output.read_bytes().count(INSERTS) == 100
    assert output.read_bytes().rstrip().endswith(b"DELIMITER ;")  # the closing lines too


def test_a_broken_pipe_ends_the_run_with_the_status_of_the_c_tools(server):
    write(server, 1, 300)
    command = [sys.executable, "-m", "binlake", "dump", "-R", *connection_args(server),
               "--stop-never", "-v", "binlog.000001"]
    follower = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    follower.stdout.read(1000)
    follower.stdout.close()             # `| head -c 1000`
    follower.wait(30)
    assert follower.returncode == 141
    assert b"Traceback" not in follower.stderr.read()


def test_an_idle_server_costs_no_reconnect_and_shows_no_lag(server):
    """Heartbeats every half second for five idle seconds: the connection
    stays, and progress says the stream is caught up (the server's time is
    now). Without heartbeats there is no read timeout to reconnect on."""
    for heartbeat in (0.5, 0):
        progress, reconnects = [], []
        stream = binlake.stream("127.0.0.1", server.port, "root", "", heartbeat=heartbeat,
                                schema=False, file="binlog.000001")
        stream.source.options.on_reconnect = lambda error, attempt: reconnects.append(error)
        stream.source.options.on_progress = lambda f, pos, when: progress.append((time.time(),
                                                                                  when))
        thread = threading.Thread(target=lambda: list(stream), daemon=True)
        thread.start()
        write(server, 1 + int(heartbeat * 1000), 5)  # older than the idle seconds that follow
        time.sleep(9 if not heartbeat else 5)
        stream.close()
        thread.join(5)
        assert not reconnects, reconnects
        if heartbeat:
            assert progress and progress[-1][0] - progress[-1][1] < 1  # caught up: no lag


def test_a_second_backup_beside_the_first_is_refused_and_the_first_goes_on(server, tmp_path):
    """Two runs into one prefix would interleave their writes: the second is
    refused in one line (the prefix's lock) and the first is not disturbed."""
    prefix = tmp_path / "backup"
    first = start_backup(server, prefix, "--connection-server-id", "701")
    try:
        write(server, 1, 50)
        wait_until(lambda: 701 in registered(server))
        second = start_backup(server, prefix, "--connection-server-id", "702")
        _, err = second.communicate(timeout=30)
        assert second.returncode == 1 and err.count(b"\n") == 1, err
        assert b"another backup is writing" in err
        write(server, 51, 50)
        server.flush_logs()
        wait_for_copies(server, prefix)
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=30)
    for path in server.binlog_files()[:-1]:
        assert (prefix / path.name).read_bytes() == path.read_bytes(), path.name


def test_a_gtid_start_reconnected_before_its_first_event_goes_on_by_the_gtid(server):
    """Begun at @@gtid_binlog_pos of a server with history, the dump thread
    killed before any event: the new connection asks by the GTID again (by
    the file it would get every earlier transaction of it from offset 4)."""
    write(server, 1, 12)
    gtid = server.query("SELECT @@gtid_binlog_pos")[0][0]
    stream = binlake.stream("127.0.0.1", server.port, "root", "", gtid=gtid, schema=False,
                            heartbeat=0.5)
    reconnects = []
    stream.source.options.on_reconnect = lambda error, attempt: reconnects.append(error)
    got = []
    thread = threading.Thread(target=lambda: got.extend(stream.transactions()), daemon=True)
    thread.start()
    wait_until(lambda: server.query("SHOW PROCESSLIST") and any(
        row[4] == "Binlog Dump" for row in server.query("SHOW PROCESSLIST")))
    assert kill_dump_threads(server) >= 1
    wait_until(lambda: reconnects)
    server.execute("INSERT INTO shop.items (id, name) VALUES (1000, 'after the reconnect')")
    wait_until(lambda: got)
    time.sleep(1.5)                     # nothing more may come
    stream.close()
    thread.join(10)
    assert [[c.after["id"] for c in t.changes] for t in got] == [[1000]]


def test_a_token_resumed_with_nothing_new_stays_where_it_was(server):
    """A token taken at the end of the binlog, resumed without waiting and
    nothing new: no transaction, and the same token (the format description
    the server sends first ends no transaction: a token never moves back)."""
    write(server, 1, 12)
    stream = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False, schema=False)
    assert list(stream.transactions())
    token = stream.resume_token
    again = binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False, schema=False,
                           resume=token)
    assert list(again.transactions()) == []
    assert again.resume_token == token
    assert [c for c in binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                                      schema=False, resume=str(token)).changes()] == []


def test_a_reader_that_does_not_register_is_warned_of(server):
    """mariadb-binlog --stop-never does not register (SHOW SLAVE HOSTS does
    not list it, nor its server id): binlake cannot check the id it uses,
    so it says a reader is there that it would disconnect if their ids
    were one."""
    import shutil
    import warnings
    tool = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    if tool is None:
        pytest.skip("no mariadb-binlog")
    reader = subprocess.Popen([tool, "-R", "-h", "127.0.0.1", "-P", str(server.port), "-u",
                               "root", "--stop-never", "binlog.000001"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: any(str(row[4]).startswith("Binlog Dump")
                               for row in server.query("SHOW PROCESSLIST")))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            list(binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                                schema=False, server_id=4242).changes())
        said = [str(w.message) for w in caught if "without registering" in str(w.message)]
        assert len(said) == 1 and "server id 4242" in said[0], [str(w.message) for w in caught]
    finally:
        reader.kill()
        reader.wait()
    kill_dump_threads(server)       # (an idle dump outlives its reader until it writes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        list(binlake.stream("127.0.0.1", server.port, "root", "", stop_never=False,
                            schema=False, server_id=4242).changes())
    assert not [w for w in caught if "without registering" in str(w.message)]
