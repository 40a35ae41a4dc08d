"""`binlake pipeline -R --follow` (binlake.spark.run.follow): a live server kept in
the lake through everything that stops a follower, each change in it once.

Strategy: the follower runs as the command, in a process of its own (so it
can be SIGKILLed), against a private MariaDB written to without pause by a
thread of inserts, updates and deletes on a keyed and a keyless table, with
DDL on the way (a column added, a table created). Meanwhile the follower is
SIGKILLed three times and started again, a second follower of the same
lake is started beside it, its dump thread is killed twice and the server
is restarted cleanly and after a SIGKILL. At the end each Delta table must equal
the server's rows, and changes/ must hold each change of the server's
binlogs exactly once.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")


import binlake  # noqa: E402
from binlake.spark.commits.delta import read_table  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402
from .truth import view_table  # noqa: E402

DB = "follow"
ACCOUNTS = 200


class Writer(threading.Thread):
    """Inserts, updates and deletes without pause until stopped; waits out a
    server restart (`paused`) and reconnects."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.done, self.paused = server, threading.Event(), threading.Event()
        self.statements = 0

    def run(self):
        rng, next_id, connection = random.Random(7), ACCOUNTS, None
        while not self.done.is_set():
            if self.paused.is_set():
                connection = None
                time.sleep(0.05)
                continue
            try:
                if connection is None:
                    connection = self.server.connect(DB)
                with connection.cursor() as cursor:
                    pick, choice = rng.randrange(next_id), rng.random()
                    if choice < 0.4:
                        cursor.execute("UPDATE accounts SET balance = balance + 1 WHERE id = %s",
                                       (pick,))
                    elif choice < 0.55:
                        cursor.execute("DELETE FROM accounts WHERE id = %s", (pick,))
                    elif choice < 0.8:
                        cursor.execute("INSERT INTO accounts (id, owner, balance) "
                                       "VALUES (%s, 'new', 1.50)", (next_id,))
                        next_id += 1
                    elif choice < 0.9:
                        cursor.execute("INSERT INTO notes (a, b) VALUES (%s, 'w')", (pick % 7,))
                    else:
                        cursor.execute("DELETE FROM notes WHERE a = %s LIMIT 1", (pick % 7,))
                self.statements += 1
            except Exception:  # noqa: BLE001 - the server going away: try again
                connection = None
                time.sleep(0.1)
            time.sleep(0.002)


def kill_dump_threads(server) -> int:
    threads = [row[0] for row in server.query("SHOW PROCESSLIST") if row[4] == "Binlog Dump"]
    for thread in threads:
        server.execute(f"KILL {thread}")
    return len(threads)


def follower_command(server, lake) -> list[str]:
    return [sys.executable, "-m", "binlake", "pipeline", "-R", "--follow", "--out", str(lake),
            "-h", "127.0.0.1", "-P", str(server.port), "-u", "root",
            "--heartbeat-period", "1", "binlog.000001"]


def start_follower(server, lake, log):
    process = subprocess.Popen(follower_command(server, lake), stdout=log, stderr=log,
                               stdin=subprocess.DEVNULL)
    process.log_path = log.name  # for a failed assertion to show what it printed
    return process


def status(lake) -> dict:
    try:
        return json.loads((lake / "_binlake" / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def wait_for_batches(lake, process, count: int, timeout: float = 180) -> None:
    """Until the follower has committed `count` more micro-batches."""
    deadline = time.monotonic() + timeout
    first = None
    while time.monotonic() < deadline:
        assert process.poll() is None, (
            "the follower ended: " + open(getattr(process, "log_path", os.devnull)).read()[-3000:])
        found = status(lake)
        if found.get("state") == "following":
            first = found["micro_batches"] if first is None else first
            if found["micro_batches"] >= first + count:
                return
        time.sleep(0.05)
    raise AssertionError(f"no micro-batch in {timeout} s: {status(lake)}")


def server_rows(server) -> dict:
    return {table: sorted(server.query(f"SELECT * FROM {DB}.{table}"))
            for table in ("accounts", "notes", "extra")}


def lake_rows(lake, tables=("accounts", "notes", "extra")) -> dict:
    found = {}
    for table in tables:
        try:
            rows = read_table(str(lake / "tables" / f"{DB}.{table}")).to_pylist()
        except Exception:  # noqa: BLE001 - not there yet
            return {}
        found[table] = sorted(tuple(row.values()) for row in rows)
    return found


def replayed_feed(lake, table: str) -> Counter:
    """The rows a table's Delta change data feed adds and removes, summed."""
    from deltalake import DeltaTable
    import pyarrow as pa
    feed = pa.table(DeltaTable(str(lake / "tables" / f"{DB}.{table}")).load_cdf().read_all())
    feed = feed.to_pylist()
    rows = Counter()
    for change in sorted(feed, key=lambda change: change["_commit_version"]):
        kind = change.pop("_change_type")
        for name in ("_commit_version", "_commit_timestamp"):
            change.pop(name)
        rows[tuple(change.values())] += 1 if kind in ("insert", "update_postimage") else -1
    return Counter({row: count for row, count in rows.items() if count})  # a negative stays


@pytest.fixture
def server(mariadb, tmp_path):
    # Crash-safe as a production server is (its redo log written at each
    # commit): a SIGKILLed server then holds every commit its binlog holds.
    with MariaDBServer(tmp_path / "server", server_id=31,
                       extra={"innodb_flush_log_at_trx_commit": 1}) as server:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"CREATE TABLE {DB}.accounts (id INT PRIMARY KEY, owner VARCHAR(40), "
                       "balance DECIMAL(12,2))")
        server.execute(f"CREATE TABLE {DB}.notes (a INT, b VARCHAR(10))")  # no key: a multiset
        with server.connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {DB}.accounts VALUES (%s, %s, %s)",
                               [(i, f"owner {i}", f"{i}.25") for i in range(ACCOUNTS)])
        yield server


def test_the_follower_keeps_the_lake_equal_to_the_server_through_kills_and_a_restart(
        server, tmp_path):
    lake, rng = tmp_path / "lake", random.Random(11)
    log = open(tmp_path / "follower.log", "ab")
    follower = start_follower(server, lake, log)
    writer = Writer(server)
    writer.start()

    def killed_and_restarted(follower):
        wait_for_batches(lake, follower, 1)
        time.sleep(rng.uniform(0.0, 0.5))  # anywhere in a micro-batch
        follower.send_signal(signal.SIGKILL)
        follower.wait()
        return start_follower(server, lake, log)

    try:
        wait_for_batches(lake, follower, 2)
        # a second follower of the same lake, beside the first: refused, the first goes on
        second = subprocess.run(follower_command(server, lake), capture_output=True, text=True,
                                timeout=120)
        assert second.returncode == 1 and second.stderr.count("\n") == 1, second.stderr
        assert "another binlake pipeline run is using this lake" in second.stderr
        follower = killed_and_restarted(follower)
        wait_for_batches(lake, follower, 1)
        assert kill_dump_threads(server)
        server.execute(f"ALTER TABLE {DB}.accounts ADD COLUMN note VARCHAR(10) DEFAULT 'n'")
        server.execute(f"CREATE TABLE {DB}.extra (k INT PRIMARY KEY, v BIGINT)")
        server.execute(f"INSERT INTO {DB}.extra VALUES (1, 10), (2, 20)")
        follower = killed_and_restarted(follower)
        wait_for_batches(lake, follower, 1)
        for how in ("clean", "SIGKILL"):
            writer.paused.set()
            if how == "clean":
                server.stop()
            else:
                server.kill()
            server.start()
            writer.paused.clear()
            server.execute(f"UPDATE {DB}.extra SET v = v + 1")
            wait_for_batches(lake, follower, 2)
        assert kill_dump_threads(server)
        follower = killed_and_restarted(follower)
        wait_for_batches(lake, follower, 2)
    finally:
        writer.done.set()
        writer.join()
    assert writer.statements > 100
    expected = server_rows(server)
    deadline = time.monotonic() + 120
    while lake_rows(lake) != expected and time.monotonic() < deadline:
        assert follower.poll() is None, "the follower ended"
        time.sleep(0.2)
    follower.send_signal(signal.SIGTERM)  # ends after the micro-batch in flight
    assert follower.wait(60) == 0
    log.close()
    assert lake_rows(lake) == expected, (tmp_path / "follower.log").read_text()
    assert status(lake)["state"] == "stopped"

    # each table's change data feed, replayed from its first version, is the table
    for table in ("accounts", "notes", "extra"):
        assert replayed_feed(lake, table) == Counter(lake_rows(lake)[table]), table

    # changes/: each change of the server's binlogs once (none twice, none lost)
    changes = view_table(lake, "changes", ["file", "pos", "row_index"]).to_pylist()
    held = [(row["file"], row["pos"], row["row_index"]) for row in changes]
    assert len(held) == len(set(held))
    files = [str(path) for path in server.binlog_files()]
    sent = [(os.path.basename(c.file), c.pos, c.row_index) for c in binlake.changes(files)
            if c.database == DB]
    assert sorted(held) == sorted(sent)


def test_a_micro_batch_reads_only_copy_bytes_that_are_fsynced(server, tmp_path, monkeypatch):
    """The copier's timer fsyncs up to a second after a write; the lake's
    manifest, fsynced, must name no copy byte a crash of the machine could
    take back. Here the timer never fsyncs (a copy's bytes stay in the page
    cache until the copier closes it), every fsync is recorded with the size
    its file had, and after each micro-batch of a follower in this process no
    copy's end in the manifest may be past its synced size (before: the
    runs read every byte written)."""
    from binlake.live import backup
    from binlake.live.source import LiveOptions, LiveSource
    from binlake.spark.run.follow import Follower
    from binlake.spark.run.session import LazySession
    from binlake.spark.state.store import load_manifest

    synced, real_fsync = {}, os.fsync

    def fsync(descriptor):
        found = os.fstat(descriptor)  # what was written before the fsync is on disk after it
        real_fsync(descriptor)
        key = (found.st_dev, found.st_ino)
        synced[key] = max(synced.get(key, 0), found.st_size)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(backup, "FSYNC_EVERY", 3600.0)
    lake = tmp_path / "lake"
    copies = lake / "_binlake" / "binlogs"
    past_synced, read, failures = [], [], []

    def after_batch(found) -> None:
        for name, entry in load_manifest(str(lake)).files.items():
            where = os.stat(copies / name)
            on_disk = synced.get((where.st_dev, where.st_ino), 0)
            read.append(entry.end)
            if entry.end > on_disk:
                past_synced.append((name, entry.end, on_disk))

    def no_spark():
        raise AssertionError("small increments started a Spark session")

    def follow() -> None:
        try:
            follower.run()
        except BaseException as exc:  # noqa: BLE001 - the test's to raise
            failures.append(exc)
    source = LiveSource(LiveOptions({"host": "127.0.0.1", "port": server.port, "user": "root"},
                                    to_last_log=True, stop_never=True, heartbeat=1.0))
    follower = Follower(LazySession(no_spark, "local[2]"), str(lake), source, "binlog.000001",
                        on_status=after_batch)
    thread, writer = threading.Thread(target=follow, daemon=True), Writer(server)
    thread.start()
    writer.start()
    try:
        deadline = time.monotonic() + 120
        while follower.status.micro_batches < 10 and thread.is_alive() \
                and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        writer.done.set()
        writer.join()
        follower.stop()
        thread.join(120)
    assert not failures, failures
    assert follower.status.micro_batches >= 10 and max(read) > 4, follower.status
    assert not past_synced, f"(copy, manifest's end, bytes fsynced): {past_synced[:5]}"


def test_once_to_the_servers_end_then_another_server_is_refused(server, tmp_path):
    """-R without --follow: the lake holds the server's last commit, and the
    command ends; the same lake pointed at another server, of another
    history (binlake.spark.read.failover), is refused in one line by its GTIDs,
    the lake left as it was."""
    lake = tmp_path / "lake"
    command = [sys.executable, "-m", "binlake", "pipeline", "-R", "--out", str(lake),
               "-h", "127.0.0.1", "-u", "root", "binlog.000001"]
    done = subprocess.run(command + ["-P", str(server.port)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "the lake holds the server's binlogs to binlog.000001" in done.stdout
    assert lake_rows(lake, ["accounts"])["accounts"] == expected_accounts(server)
    assert status(lake)["state"] == "stopped"
    # a lake that has read binlogs is not started again from a snapshot
    again = subprocess.run(command[:-1] + ["--snapshot-from", "-P", str(server.port)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 1 and "--snapshot-from starts a lake" in again.stderr, again.stderr
    with MariaDBServer(tmp_path / "other", server_id=32) as other:
        other.execute(f"CREATE DATABASE {DB}")
        refused = subprocess.run(command + ["-P", str(other.port)], capture_output=True,
                                 text=True, timeout=300)
    assert refused.returncode == 1
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith("binlake pipeline: ") and "not server id 31" in line, refused.stderr
    assert "lacks transactions the lake holds" in line
    assert status(lake)["state"] == "failed" and "not server id 31" in status(lake)["error"]
    assert not list((lake / "_binlake" / "binlogs").glob("failover1~*"))
    assert lake_rows(lake, ["accounts"])["accounts"] == expected_accounts(server)


def test_a_table_created_then_written_takes_no_spark_job(mariadb, tmp_path):
    """A follower's usual start: the first micro-batch holds the CREATE TABLE
    (its plan the DDL's), a later one the first rows (the table map's plan):
    the empty table is carried, and small increments applied, by the driver."""
    from binlake.spark.run.pipeline import run_pipeline
    from binlake.spark.run.session import LazySession

    def no_spark():
        raise AssertionError("a small increment started a Spark session")
    lake = tmp_path / "lake"
    with MariaDBServer(tmp_path / "server", server_id=33) as server:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"CREATE TABLE {DB}.t (id BIGINT PRIMARY KEY, v VARCHAR(8))")

        def run() -> None:
            run_pipeline(LazySession(no_spark, "local[2]"),
                         [str(path) for path in server.binlog_files()], str(lake))
        run()
        server.execute(f"INSERT INTO {DB}.t VALUES (1, 'a'), (2, 'b')")
        run()
        server.execute(f"UPDATE {DB}.t SET v = 'c' WHERE id = 2")
        run()
        rows = read_table(str(lake / "tables" / f"{DB}.t")).to_pylist()
        assert sorted(tuple(row.values()) for row in rows) == sorted(server.query(
            f"SELECT * FROM {DB}.t")) == [(1, "a"), (2, "c")]


def expected_accounts(server) -> list:
    return sorted(server.query(f"SELECT * FROM {DB}.accounts"))


def test_follow_needs_a_server(tmp_path):
    from binlake.cli.dispatch import main
    import io
    err = io.StringIO()
    assert main(["pipeline", "--follow", "--out", str(tmp_path / "lake")], io.StringIO(),
                err) == 2
    assert "--follow follows a live server: add -R" in err.getvalue()


def test_a_snapshot_names_no_binlog(tmp_path):
    from binlake.cli.dispatch import main
    import io
    err = io.StringIO()
    assert main(["pipeline", "-R", "--snapshot-from", "--out", str(tmp_path / "lake"),
                 "binlog.000001"], io.StringIO(), err) == 2
    assert "-R --snapshot-from reads the binlog from the snapshot's position" in err.getvalue()
