"""`binlake pipeline --snapshot-from` (binlake.spark.snapshot): a lake started
from a consistent snapshot of a server whose tables predate its first binlog,
while writes keep running, ends equal to the server: no row lost, none
applied twice."""
from __future__ import annotations

import os
import random
import threading

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")

import pyarrow.parquet as pq  # noqa: E402

from binlake.connection.settings import ServerAddress  # noqa: E402
from binlake.spark.run.pipeline import load_manifest, run_pipeline  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402
from binlake.testing.workload import (DATABASE, SESSION_SETUP,  # noqa: E402
                                      expected_final_state, run_basic_workload)

from .test_follow import kill_dump_threads, status  # noqa: E402
from .test_pipeline import assert_tables_equal, table_rows  # noqa: E402
from .truth import _columns  # noqa: E402

ACCOUNTS = 3000


@pytest.fixture(scope="module")
def server(mariadb, tmp_path_factory):
    with MariaDBServer(tmp_path_factory.mktemp("snapshot"), server_id=21) as server:
        run_basic_workload(server, DATABASE)
        server.execute(f"CREATE TABLE {DATABASE}.accounts (id INT PRIMARY KEY, "
                       "owner VARCHAR(40), balance DECIMAL(12,2), rate FLOAT, score DOUBLE)")
        rows = [(i, f"owner {i}", f"{i * 1.25:.2f}", i / 7, i / 3) for i in range(ACCOUNTS)]
        with server.connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {DATABASE}.accounts VALUES (%s, %s, %s, %s, %s)", rows)
        server.execute("RESET MASTER")  # every table and row predates the first binlog
        yield server


class Writer(threading.Thread):
    """Inserts, updates and deletes, without pause, until stopped."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.done, self.statements = server, threading.Event(), 0

    def run(self):
        rng = random.Random(3)
        connection = self.server.connect(DATABASE)
        with connection.cursor() as cursor:
            for setup in SESSION_SETUP:
                cursor.execute(setup)
            next_id = ACCOUNTS
            while not self.done.is_set():
                pick = rng.randrange(ACCOUNTS)
                choice = rng.random()
                if choice < 0.4:
                    cursor.execute("UPDATE accounts SET balance = balance + 1, rate = rate * 2 "
                                   "WHERE id = %s", (pick,))
                elif choice < 0.6:
                    cursor.execute("DELETE FROM accounts WHERE id = %s", (pick,))
                elif choice < 0.8:
                    cursor.execute("INSERT INTO accounts VALUES (%s, 'new', 1.00, 0.5, 0.25)",
                                   (next_id,))
                    next_id += 1
                elif choice < 0.9:
                    cursor.execute("INSERT INTO no_pk (a, b, c) VALUES (%s, 'w', 0.5)", (pick,))
                else:
                    cursor.execute("DELETE FROM no_pk WHERE a IS NOT NULL LIMIT 1")
                self.statements += 1
        connection.close()


def test_a_snapshot_under_writes_then_the_binlogs_equal_the_server(spark, server, tmp_path):
    out = tmp_path / "out"
    address = ServerAddress("127.0.0.1", server.port, "root", "")
    writer = Writer(server)
    writer.start()
    try:
        while writer.statements < 50:  # writes before the snapshot, then during it
            threading.Event().wait(0.05)
        # the basic workload's zero dates: DATE/DATETIME/TIMESTAMP kept as text
        first = run_pipeline(spark, [str(p) for p in server.binlog_files()], str(out),
                             snapshot=address, snapshot_chunk_rows=200, temporals="text")
        during = writer.statements
    finally:
        writer.done.set()
        writer.join()
    assert writer.statements > during > 50
    point = load_manifest(str(out)).snapshot
    assert point.file.startswith("binlog.") and point.gtid
    assert first.changes >= ACCOUNTS  # the snapshot's rows are changes too
    server.flush_logs()
    run_pipeline(spark, [str(p) for p in server.binlog_files()], str(out))
    assert_lake_equals_server(out, server)


def assert_lake_equals_server(out, server) -> None:
    """Every table of the lake holds the server's rows (SELECT * prints a
    FLOAT with 6 digits: that column compared exactly on its own)."""
    expected = expected_final_state(server, DATABASE)
    exact = dict(server.query(f"SELECT id, rate + 0e0 FROM {DATABASE}.accounts"))
    got = {row["id"]: row["rate"] for row in table_rows(out, "accounts")}
    assert got == exact
    for row in expected["accounts"]:
        row["rate"] = exact[row["id"]]
    assert_tables_equal(out, expected, _columns(server))


def test_a_snapshot_starts_a_lake_only(spark, server, tmp_path):
    out = tmp_path / "out"
    run_pipeline(spark, [str(p) for p in server.binlog_files()], str(out), temporals="text")
    with pytest.raises(ValueError, match="starts a lake"):
        run_pipeline(spark, [str(p) for p in server.binlog_files()], str(out),
                     snapshot=ServerAddress("127.0.0.1", server.port, "root", ""))


# -- the lock-free snapshot: -R --snapshot-from --follow ----------------------------------

CHUNK_ROWS = 300


class MovingWriter(Writer):
    """The writer's mix, and updates that move a row's key 1,500 ids up or
    down: from one chunk's range to another's, read before or after it."""

    def run(self):
        rng = random.Random(5)
        while not self.done.is_set():
            try:
                self.write(rng)
            except Exception:  # noqa: BLE001 - the server restarting: again
                self.done.wait(0.1)

    def write(self, rng):
        connection = self.server.connect(DATABASE)
        with connection.cursor() as cursor:
            for setup in SESSION_SETUP:
                cursor.execute(setup)
            while not self.done.is_set():
                pick, choice = rng.randrange(2 * ACCOUNTS), rng.random()
                if choice < 0.3:
                    cursor.execute("UPDATE IGNORE accounts SET id = id + %s WHERE id = %s",
                                   (rng.choice((-1500, 1500)), pick))
                elif choice < 0.6:
                    cursor.execute("UPDATE accounts SET balance = balance + 1, rate = rate * 2 "
                                   "WHERE id = %s", (pick,))
                elif choice < 0.7:
                    cursor.execute("DELETE FROM accounts WHERE id = %s", (pick,))
                elif choice < 0.9:
                    cursor.execute("INSERT IGNORE INTO accounts VALUES (%s, 'new', 1.00, 0.5, "
                                   "0.25)", (pick,))
                else:
                    cursor.execute("INSERT INTO no_pk (a, b, c) VALUES (%s, 'w', 0.5)", (pick,))
                self.statements += 1
                self.done.wait(0.002)  # a busy server, not a flood: small micro-batches
        connection.close()


def _wait(condition, process, what: str, timeout: float = 180) -> None:
    import time
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"the follower ended while waiting for {what}"
        assert time.monotonic() < deadline, f"{what}: not in {timeout} s"
        time.sleep(0.05)


def test_the_lock_free_snapshot_under_moving_keys_killed_and_resumed(mariadb, tmp_path):
    """Chunks of 300 rows read (by the driver while the JVM starts) while rows
    are updated, deleted, inserted and moved between chunks; the follower
    SIGKILLed after its
    first rounds, started again, a second follower beside it refused, its
    dump thread killed, the server restarted under it cleanly and after a
    SIGKILL: the tables equal the server, the rows read again are at most
    the round the kill cut short."""
    import signal
    import subprocess
    import sys
    with MariaDBServer(tmp_path / "server", server_id=22,
                       extra={"innodb_flush_log_at_trx_commit": 1}) as server:
        run_basic_workload(server, DATABASE)
        server.execute(f"CREATE TABLE {DATABASE}.accounts (id INT PRIMARY KEY, "
                       "owner VARCHAR(40), balance DECIMAL(12,2), rate FLOAT, score DOUBLE)")
        rows = [(i, f"owner {i}", f"{i * 1.25:.2f}", i / 7, i / 3) for i in range(ACCOUNTS)]
        with server.connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {DATABASE}.accounts VALUES (%s, %s, %s, %s, %s)",
                               rows)
        lake = tmp_path / "lake"
        command = [sys.executable, "-m", "binlake", "pipeline", "-R", "--snapshot-from",
                   "--follow", "--chunk-rows", str(CHUNK_ROWS), "--temporals", "text",
                   "--out", str(lake), "-h", "127.0.0.1", "-P", str(server.port), "-u", "root"]
        log = open(tmp_path / "follower.log", "ab")
        writer = MovingWriter(server)
        writer.start()
        follower = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        try:
            _wait(lambda: status(lake).get("snapshot_rows", 0) >= 3 * CHUNK_ROWS, follower,
                  "the first rounds")
            follower.send_signal(signal.SIGKILL)
            follower.wait()
            killed = status(lake)
            assert killed["snapshot_tables_left"], killed  # killed in the middle
            follower = subprocess.Popen(command, stdout=log, stderr=log,
                                        stdin=subprocess.DEVNULL)
            _wait(lambda: status(lake).get("snapshot_rows", 0) > killed["snapshot_rows"],
                  follower, "a round after the restart")
            # a second follower of the same lake, beside it: refused, the first goes on
            second = subprocess.run(command, capture_output=True, text=True, timeout=120)
            assert second.returncode == 1, second.stderr
            assert "another binlake pipeline run is using this lake" in second.stderr
            assert kill_dump_threads(server)
            server.stop()  # a round meets no server, the copier loses its connection
            server.start()
            server.kill()  # and a SIGKILLed one (its redo log written at each commit)
            server.start()
            _wait(lambda: (status(lake).get("micro_batches", 0) > 0
                           and not status(lake).get("snapshot_tables_left")), follower,
                  "the snapshot")
            writer.done.set()
            writer.join()
            end = server.query("SHOW MASTER STATUS")[0][:2]
            _wait(lambda: status(lake).get("lake") == [end[0], int(end[1])], follower,
                  "the last commit")
        finally:
            writer.done.set()
            follower.send_signal(signal.SIGTERM)
            assert follower.wait(timeout=60) == 0, (tmp_path / "follower.log").read_text()
        done = status(lake)
        read_again = killed["snapshot_read"] + done["snapshot_read"] - done["snapshot_rows"]
        rounds = load_manifest(str(lake)).chunks
        assert rounds.tables[f"{DATABASE}.accounts"].done
        # One round: two chunks a core, each its bound's 300 rows and those
        # inserted into its range since.
        assert 0 <= read_again <= 1.25 * 2 * (os.cpu_count() or 1) * CHUNK_ROWS, (killed, done)
        assert writer.statements > 200
        assert_lake_equals_server(lake, server)


def test_tables_read_anew_while_the_lake_follows(mariadb, tmp_path):
    """A follower of `accounts` alone, started again with --tables selecting
    `no_pk` too (a table without a key, newly selected: read in one read
    view); then `accounts` changed on the server outside its binlog
    (sql_log_bin=0) and read anew on request (`--snapshot-tables`, the
    follower running), in chunks, under the moving writer: both tables equal
    the server's, and the old table stays whole in tables/ meanwhile."""
    import signal
    import subprocess
    import sys
    with MariaDBServer(tmp_path / "server", server_id=24) as server:
        run_basic_workload(server, DATABASE)
        server.execute(f"CREATE TABLE {DATABASE}.accounts (id INT PRIMARY KEY, "
                       "owner VARCHAR(40), balance DECIMAL(12,2), rate FLOAT, score DOUBLE)")
        server.execute(f"INSERT INTO {DATABASE}.accounts SELECT seq, CONCAT('owner ', seq), "
                       f"seq * 1.25, seq / 7, seq / 3 FROM {DATABASE}.seq_0_to_{ACCOUNTS - 1}")
        lake = tmp_path / "lake"
        command = [sys.executable, "-m", "binlake", "pipeline", "-R", "--follow",
                   "--chunk-rows", str(CHUNK_ROWS), "--temporals", "text", "--out", str(lake),
                   "-h", "127.0.0.1", "-P", str(server.port), "-u", "root", "binlog.000001"]
        log = open(tmp_path / "follower.log", "ab")

        def follower(tables: str):
            return subprocess.Popen(command + ["--tables", tables], stdout=log, stderr=log,
                                    stdin=subprocess.DEVNULL)

        def logged(text: str) -> bool:
            return text in (tmp_path / "follower.log").read_text()
        writer = MovingWriter(server)
        writer.start()
        process = follower(f"{DATABASE}.accounts")
        try:
            _wait(lambda: status(lake).get("micro_batches", 0) >= 2, process, "two batches")
            process.send_signal(signal.SIGTERM)
            assert process.wait(60) == 0
            process = follower(f"{DATABASE}.accounts,{DATABASE}.no_pk")
            _wait(lambda: logged(f"newly selected by --tables: {DATABASE}.no_pk")
                  and status(lake).get("state") == "following"
                  and not status(lake).get("snapshot_tables_left"), process, "no_pk")
            with server.connect(DATABASE) as hidden, hidden.cursor() as cursor:
                cursor.execute("SET SESSION sql_log_bin = 0")
                cursor.execute("UPDATE accounts SET owner = 'not in the binlog' WHERE id < 700")
            before = table_rows_of(lake, f"{DATABASE}.accounts")
            asked = subprocess.run([sys.executable, "-m", "binlake", "pipeline", "--out",
                                    str(lake), "--snapshot-tables", f"{DATABASE}.accounts"],
                                   capture_output=True, text=True, timeout=60)
            assert asked.returncode == 0 and "requested" in asked.stdout, asked.stderr
            _wait(lambda: status(lake).get("snapshot_tables_left"), process, "the request")
            # while it is read, tables/ keeps the table as it was (whole)
            assert len(table_rows_of(lake, f"{DATABASE}.accounts")) >= len(before) - 50
            _wait(lambda: not status(lake).get("snapshot_tables_left"), process, "accounts")
            writer.done.set()
            writer.join()
            end = server.query("SHOW MASTER STATUS")[0][:2]
            _wait(lambda: status(lake).get("lake") == [end[0], int(end[1])], process,
                  "the last commit")
        finally:
            writer.done.set()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=60) == 0, (tmp_path / "follower.log").read_text()
        assert logged(f"asked for ({DATABASE}.accounts): {DATABASE}.accounts")
        assert not list((lake / "_binlake" / "requests").iterdir())
        expected = expected_final_state(server, DATABASE)
        exact = dict(server.query(f"SELECT id, rate + 0e0 FROM {DATABASE}.accounts"))
        for row in expected["accounts"]:
            row["rate"] = exact[row["id"]]
        assert_tables_equal(lake, {table: expected[table] for table in ("accounts", "no_pk")},
                            _columns(server))
        assert sum(row[1] == "not in the binlog"
                   for row in table_rows_of(lake, f"{DATABASE}.accounts")) > 500


def test_a_table_of_many_chunks_is_built_without_spark(mariadb, tmp_path):
    """The lock-free snapshot's rounds run by hand: 60,000 rows (more than the
    driver rebuilds a table from) in chunks of a fiftieth, written to
    between rounds, keys moved across chunks: the table is built from its
    chunk files in the driver, no Spark session started, equal to the server."""
    rows = snapshot_by_hand(tmp_path, [
        "UPDATE many.t SET v = 'early' WHERE id IN (5, 45000)",   # read next, read later
        "UPDATE many.t SET id = 70001 WHERE id = 10",             # out of a chunk just read
        "DELETE FROM many.t WHERE id IN (30000, 59999)",           # not read yet
        "UPDATE many.t SET id = 10 WHERE id = 50000",              # into a chunk read before
    ])
    assert len(rows) == 60_000 - 2


def test_a_chunk_from_before_a_truncate_is_left_out(mariadb, tmp_path):
    """TRUNCATE between two rounds: the chunks read before it hold rows the
    table no longer has; the table built holds only those after it."""
    rows = snapshot_by_hand(tmp_path, [
        "UPDATE many.t SET v = 'before' WHERE id = 5",
        "SELECT 1",
        "TRUNCATE TABLE many.t",
        "INSERT INTO many.t VALUES (7, 'after', 1.00, '2024-01-01 00:00:00'), "
        "(59000, 'after', 2.00, '2024-01-02 00:00:00')",
    ])
    assert sorted(rows) == [7, 59000]


def test_a_table_keyed_by_a_unique_key_is_read_in_chunks(mariadb, tmp_path):
    """No primary key, a UNIQUE key of NOT NULL columns (the server's
    clustered index, the lake's key): read in chunks by it, keys moved
    across chunks, as a primary-keyed table is (it was read in one long
    read view)."""
    rows = snapshot_by_hand(tmp_path, [
        "UPDATE many.t SET id = 70001 WHERE id = 10",
        "DELETE FROM many.t WHERE id IN (30000, 59999)",
        "UPDATE many.t SET id = 10 WHERE id = 50000",
    ], create="CREATE TABLE many.t (id INT NOT NULL, v VARCHAR(20), amount DECIMAL(10,2), "
              "at DATETIME(6), note VARCHAR(10) NULL, UNIQUE KEY by_note (note), "
              "UNIQUE KEY by_id (id))")
    assert len(rows) == 60_000 - 2


def test_mysqls_chunks_placed_by_watermarks_equal_the_server(mariadb, tmp_path, monkeypatch):
    """MySQL names no binlog position of a read view: each keyed chunk sorts
    at the binlog's end read before its view opens (low watermark) and is
    taken once the lake holds the binlog read after it (high). Run on
    MariaDB as MySQL (its position unasked), with writes between the low
    watermark and the view (in the chunk's rows and applied again over
    them) and between the view and the high watermark (applied over them):
    the table equals the server's."""
    from binlake.spark.snapshot import chunks, read_view
    for module in (read_view, chunks):  # the lake's start too, and each chunk's view
        monkeypatch.setattr(module, "_is_mariadb", lambda connection: False)
    real_end, calls = chunks._binlog_end, []
    edits = ["UPDATE many.t SET v = 'in the view too' WHERE id = {}",
             "UPDATE many.t SET id = id + 100000 WHERE id = {}",
             "DELETE FROM many.t WHERE id = {}",
             "INSERT INTO many.t VALUES ({} + 200000, 'new', 1.00, '2024-01-01 00:00:00')"]

    def write_at_each_watermark(cursor):
        end = real_end(cursor)
        calls.append(end)
        # after the low watermark a chunk's view opens, after the high one
        # the lake reads to: a write by another session lands between
        _write_elsewhere(cursor, edits[len(calls) % len(edits)].format(1200 * len(calls) + 7))
        return end
    monkeypatch.setattr(chunks, "_binlog_end", write_at_each_watermark)
    rows = snapshot_by_hand(tmp_path, ["SELECT 1"] * 2)
    assert len(calls) >= 8 and any(row[1] == "new" for row in rows.values())


def _write_elsewhere(cursor, statement: str) -> None:
    """`statement` committed by a connection of its own, to the server the
    cursor's connection reads."""
    import pymysql
    own = cursor.connection
    with pymysql.connect(host=own.host, port=own.port, user=own.user, password="",
                         autocommit=True) as other, other.cursor() as writing:
        writing.execute(statement)


def snapshot_by_hand(tmp_path, edits: list, create: str = None) -> dict:
    """A keyed table of 60,000 rows snapshotted in rounds of two chunks
    (1,200 rows: a fiftieth), the edits run in turn before and after each
    round's read, the binlog read by the same runs (a LazySession that
    refuses to start): the table built equals the server's, whose rows
    ({id: row}) are returned."""
    from binlake.spark.run.session import LazySession
    from binlake.spark.snapshot.chunks import plan_round, progressed, read_round

    def no_spark():
        raise AssertionError("the snapshot's table was built by Spark")
    spark = LazySession(no_spark, "local[2]")
    lake = tmp_path / "lake"
    with MariaDBServer(tmp_path / "server", server_id=23) as server:
        server.execute("CREATE DATABASE many")
        server.execute(create or "CREATE TABLE many.t (id INT PRIMARY KEY, v VARCHAR(20), "
                       "amount DECIMAL(10,2), at DATETIME(6))")
        server.execute("INSERT INTO many.t (id, v, amount, at) SELECT seq, CONCAT('v', seq), "
                       "seq / 100, '2024-01-01 00:00:00' + INTERVAL seq SECOND "
                       "FROM many.seq_1_to_60000")
        address = ServerAddress("127.0.0.1", server.port, "root", "")

        def run(**options):
            run_pipeline(spark, [str(p) for p in server.binlog_files()], str(lake), **options)
        run(snapshot=address, snapshot_chunked=True, snapshot_chunk_rows=20_000)
        assert load_manifest(str(lake)).chunks.tables["many.t"].key == ("id",)
        edits = iter(edits)
        while progress := load_manifest(str(lake)).chunks:
            if all(entry.done for entry in progress.tables.values()):
                break
            server.execute(next(edits, "UPDATE many.t SET v = 'later' WHERE id = 7"))
            chunks = plan_round(address, progress, 2)
            reads = read_round(None, address, chunks, str(tmp_path / "round"))
            server.execute(next(edits, "UPDATE many.t SET v = 'last' WHERE id = 8"))
            run(snapshot_round=(str(tmp_path / "round"), progressed(progress, reads)))
        rows = {row[0]: row for row in table_rows_of(lake, "many.t")}
        assert rows == {row[0]: row for row in server.query("SELECT * FROM many.t")}
    return rows


def table_rows_of(lake, table: str) -> list:
    from binlake.spark.commits.delta import read_table
    return [tuple(row.values()) for row in read_table(str(lake / "tables" / table)).to_pylist()]


def test_spark_tasks_read_a_round_as_the_driver_does(spark, server, tmp_path):
    """A round's chunks read by Spark tasks, each on its own connection, give
    the files the driver's read of the same chunks gives."""
    from binlake.spark.snapshot.chunks import Chunk, read_round
    address = ServerAddress("127.0.0.1", server.port, "root", "")
    ids = [row[0] for row in server.query(f"SELECT id FROM {DATABASE}.accounts ORDER BY id")]
    bounds = [None, (str(ids[999]),), (str(ids[1999]),), None]
    chunks = [Chunk(DATABASE, "accounts", ("id",), after, through, number)
              for number, (after, through) in enumerate(zip(bounds, bounds[1:]))]

    def rows(folder) -> list:
        return sorted((tuple(sorted(row["after"])) for row in pq.read_table(folder).to_pylist()),
                      key=repr)
    by_tasks = read_round(spark, address, chunks, str(tmp_path / "tasks"))
    by_driver = read_round(None, address, chunks, str(tmp_path / "driver"))
    assert [read.rows for read in by_tasks] == [read.rows for read in by_driver]
    assert sum(read.rows for read in by_tasks) == len(ids)
    assert rows(tmp_path / "tasks") == rows(tmp_path / "driver")


@pytest.mark.parametrize("left_by", ["staged manifest", "undo record"])
def test_a_request_taken_after_a_killed_run_is_kept(mariadb, tmp_path, monkeypatch, left_by):
    """A run killed before its tables committed (an earlier version left its
    staged manifest; this one its undo record), then a --snapshot-tables
    request, taken by a follower killed in its first micro-batch: the next
    follower reads the table anew. (The request's chunks were recorded, the
    request file removed, then the killed run's recovery put its manifest
    back over them: the table was never read.)"""
    import io
    import shutil
    from binlake.cli.dispatch import main
    from binlake.spark.run import pipeline
    from binlake.spark.state.run_undo import RunUndo
    with MariaDBServer(tmp_path / "server", server_id=25) as server:
        server.execute("CREATE DATABASE asked")
        server.execute("CREATE TABLE asked.t (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute("INSERT INTO asked.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        lake = tmp_path / "lake"
        command = ["pipeline", "-R", "--temporals", "text", "--out", str(lake), "-h",
                   "127.0.0.1", "-P", str(server.port), "-u", "root", "binlog.000001"]
        err = io.StringIO()
        assert main(command, io.StringIO(), err) == 0, err.getvalue()
        state = lake / "_binlake"
        if left_by == "staged manifest":
            (state / "staging").mkdir()
            shutil.copy(state / "manifest.json", state / "staging" / "manifest.json")
        else:
            RunUndo.begin(str(lake)).adding([])
        with server.connect("asked") as hidden, hidden.cursor() as cursor:
            cursor.execute("SET SESSION sql_log_bin = 0")
            cursor.execute("UPDATE t SET v = 'not in the binlog' WHERE id = 2")
        assert main(["pipeline", "--out", str(lake), "--snapshot-tables", "asked.t"],
                    io.StringIO(), err) == 0, err.getvalue()

        def killed(*args, **options):
            raise KeyboardInterrupt  # as a SIGKILL would: nothing after it runs
        with monkeypatch.context() as patched:
            patched.setattr(pipeline, "stage_and_commit", killed)
            assert main(command, io.StringIO(), io.StringIO()) != 0
        assert not list((state / "requests").iterdir())  # taken
        said = io.StringIO()
        assert main(command, said, err) == 0, err.getvalue()
        assert sorted(table_rows_of(lake, "asked.t")) == [
            (1, "a"), (2, "not in the binlog"), (3, "c")], said.getvalue()


@pytest.mark.parametrize("create", ["CREATE TABLE again.t (n INT, s VARCHAR(10))",
                                    "CREATE TABLE again.t (n INT PRIMARY KEY, s VARCHAR(10))"])
def test_a_table_read_anew_twice_at_one_binlog_position_holds_the_second_read(
        spark, mariadb, tmp_path, create):
    """Found by the randomized check (a follower SIGKILLed after it read a
    table anew, the request then made again): no write between the two
    reads, so both chunks sort at one binlog position, and a keyless
    table held every row twice. Now a read anew starts after the chunks
    of earlier reads (ChunkPlace.start): the table holds the second read's
    rows, a row deleted unlogged between the reads gone with them."""
    from binlake.testing.randomized import run_pipeline_once
    with MariaDBServer(tmp_path / "server", server_id=47) as server:
        server.execute("CREATE DATABASE again")
        server.execute(create)
        server.execute("INSERT INTO again.t VALUES (1, 'a'), (2, 'b')")
        lake = tmp_path / "lake"
        assert run_pipeline_once(server, lake, options=["--tables", "again.*"])[0] == 0
        server.execute("INSERT INTO again.t VALUES (3, 'c')")
        options = ["--tables", "again.*", "--snapshot-tables", "again.t"]
        assert run_pipeline_once(server, lake, options=options)[0] == 0
        connection = server.connect("again")  # unlogged: the binlog position stays
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION sql_log_bin = 0")
            cursor.execute("DELETE FROM again.t WHERE n = 2")
        connection.close()
        status, error = run_pipeline_once(server, lake, options=options)
        assert status == 0, error
        assert sorted(table_rows_of(lake, "again.t")) == [(1, "a"), (3, "c")]
