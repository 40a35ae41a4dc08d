"""Bounded storage (issue 48, item 1): the follower's copies of the server's
binlogs removed once the lake needs them no more (binlake.spark.state.copies).

Strategy: the rule first, on a lake made of records alone (each condition
that keeps a copy, one at a time); then against a private MariaDB: a
follower with `--keep-binlogs 0` under writes and FLUSH LOGS, SIGKILLed at
random points (removals among them) and started again, must leave only the
copies not read whole (the newest), its tables equal to the server's rows
and changes/ holding each change once; and with runs of `-R`, a copy whose
tables have not taken it in is kept, a removal killed between its record
and its deletes is finished by `binlake maintain`, `maintain
--keep-binlogs` removes as the follower does, and `--tables` that would
read removed copies again is refused in one line naming --snapshot-tables.
"""
from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from binlake.constants import LogEventFlag
from binlake.live.backup import IN_USE_AT
from binlake.spark.state.copies import parse_duration, removable, remove_old_copies
from binlake.spark.state.manifest import FileRead, Held, Manifest, TablesState
from binlake.spark.state.store import load_manifest, save_manifest

DB = "keep"


# -- the rule, on records alone ---------------------------------------------------------------

def fake_lake(tmp_path, *, closed=(1, 2), read=(1, 2, 3), through=(1, 2, 3), sizes=None,
              held_end=None, age=3600.0):
    """A lake with copies binlog.000001..3 (the third the newest, open), as
    the copies and records say: closed by the server, read by the views,
    taken in by the tables; every copy last written `age` seconds ago."""
    out = tmp_path / "lake"
    folder = out / "_binlake" / "binlogs"
    folder.mkdir(parents=True)
    sizes = sizes or {1: 100, 2: 200, 3: 50}
    files = {}
    for seq, size in sizes.items():
        name = f"binlog.{seq:06d}"
        body = bytearray(size)  # the copier clears the in-use flag as the server closes it
        body[IN_USE_AT] = 0 if seq in closed else int(LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F)
        (folder / name).write_bytes(bytes(body))
        then = time.time() - age
        os.utime(folder / name, (then, then))
        if seq in read:
            files[name] = FileRead(seq, str(folder / name), size, "f",
                                   held=(Held((), held_end or size),))
    tables = TablesState(through={f"binlog.{seq:06d}": sizes[seq] for seq in through},
                         plans={"db.t": "x"})
    save_manifest(str(out), Manifest(files=files, tables=tables))
    return out, folder


def test_the_rule_removes_closed_copies_read_whole_and_old_enough(tmp_path):
    out, folder = fake_lake(tmp_path)
    manifest = load_manifest(str(out))
    assert removable(manifest, str(folder), 0, time.time()) == ["binlog.000001",
                                                                 "binlog.000002"]
    # younger than --keep-binlogs: kept
    assert removable(manifest, str(folder), 7200, time.time()) == []
    assert remove_old_copies(str(out), 0) == ["binlog.000001", "binlog.000002"]
    assert sorted(os.listdir(folder)) == ["binlog.000003"]
    assert [name for name, entry in load_manifest(str(out)).files.items()
            if entry.copy_removed] == ["binlog.000001", "binlog.000002"]


@pytest.mark.parametrize("why, records", [
    ("not closed by the server", {"closed": (1,)}),
    ("not read by the views", {"read": (1, 3)}),
    ("not taken in by the tables", {"through": (1, 3)}),
    ("read short of its end", {"sizes": {1: 100, 2: 200, 3: 50}, "held_end": 10}),
])
def test_a_copy_something_may_still_read_is_kept(tmp_path, why, records):
    out, folder = fake_lake(tmp_path, **records)
    kept = removable(load_manifest(str(out)), str(folder), 0, time.time())
    assert "binlog.000002" not in kept, why
    if why != "read short of its end":
        assert kept == ["binlog.000001"], why


def test_the_newest_copy_is_kept_even_closed(tmp_path):
    out, folder = fake_lake(tmp_path, closed=(1, 2, 3))
    assert removable(load_manifest(str(out)), str(folder), 0, time.time()) == [
        "binlog.000001", "binlog.000002"]


def test_a_rebuild_under_way_keeps_every_copy(tmp_path):
    out, folder = fake_lake(tmp_path)
    save_manifest(str(out), load_manifest(str(out)).tables_mixed({}))
    assert removable(load_manifest(str(out)), str(folder), 0, time.time()) == []


def test_durations():
    assert [parse_duration(text) for text in ("0", "30m", "12h", "1d", "90s")] == [
        0, 1800, 43200, 86400, 90]
    for text in ("5", "1y", "-1d", ""):
        with pytest.raises(ValueError, match="a duration such as 30m"):
            parse_duration(text)


def test_maintain_refuses_a_duration_it_cannot_read(tmp_path):
    from binlake.cli.dispatch import main
    err = io.StringIO()
    assert main(["maintain", "--out", str(tmp_path), "--keep-binlogs", "soon"],
                io.StringIO(), err) == 2
    assert err.getvalue().count("\n") == 1 and "--keep-binlogs soon" in err.getvalue()


# -- against a server ---------------------------------------------------------------------------

class Writer(threading.Thread):
    """Inserts, updates and deletes without pause until stopped."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.done, self.statements = server, threading.Event(), 0

    def run(self):
        rng, next_id, connection = random.Random(5), 100, self.server.connect(DB)
        while not self.done.is_set():
            with connection.cursor() as cursor:
                pick, choice = rng.randrange(next_id), rng.random()
                if choice < 0.4:
                    cursor.execute("UPDATE a SET v = v + 1 WHERE id = %s", (pick,))
                elif choice < 0.55:
                    cursor.execute("DELETE FROM a WHERE id = %s", (pick,))
                elif choice < 0.85:
                    cursor.execute("INSERT INTO a VALUES (%s, 1)", (next_id,))
                    next_id += 1
                else:
                    cursor.execute("INSERT INTO b VALUES (%s)", (pick % 5,))
            self.statements += 1
            time.sleep(0.003)


@pytest.fixture
def server(mariadb, tmp_path):
    pytest.importorskip("pyspark")
    pytest.importorskip("deltalake")
    from binlake.testing.mariadb import MariaDBServer
    with MariaDBServer(tmp_path / "server", server_id=41) as server:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"CREATE TABLE {DB}.a (id INT PRIMARY KEY, v INT)")
        server.execute(f"CREATE TABLE {DB}.b (x INT)")  # no key: a multiset
        server.execute(f"INSERT INTO {DB}.a SELECT seq, 0 FROM {DB}.seq_0_to_99")
        yield server


def pipeline(server, lake, *more) -> list[str]:
    return [sys.executable, "-m", "binlake", "pipeline", "-R", "--out", str(lake),
            "-h", "127.0.0.1", "-P", str(server.port), "-u", "root", *more, "binlog.000001"]


def run(command, code=0) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == code, done.stderr
    return done


def copies(lake) -> list[str]:
    return sorted(name for name in os.listdir(lake / "_binlake" / "binlogs")
                  if name.startswith("binlog."))


def lake_rows(lake, table: str) -> list:
    from binlake.spark.commits.delta import read_table
    try:
        rows = read_table(str(lake / "tables" / f"{DB}.{table}")).to_pylist()
    except Exception:  # noqa: BLE001 - not there yet
        return []
    return sorted(tuple(row.values()) for row in rows)


def server_rows(server, table: str) -> list:
    return sorted(server.query(f"SELECT * FROM {DB}.{table}"))


def assert_each_change_once(server, lake) -> None:
    """changes/ holds each change of the server's binlogs exactly once."""
    import binlake

    from .truth import view_table
    held = [(row["file"], row["pos"], row["row_index"]) for row in view_table(
        lake, "changes", ["file", "pos", "row_index"]).to_pylist()]
    assert len(held) == len(set(held))
    sent = [(os.path.basename(c.file), c.pos, c.row_index)
            for c in binlake.changes([str(p) for p in server.binlog_files()])
            if c.database == DB]
    assert sorted(held) == sorted(sent)


def status(lake) -> dict:
    try:
        return json.loads((lake / "_binlake" / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def wait_for(condition, follower, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert follower.poll() is None, "the follower ended"
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


#: A replaced file's grace in MERGING_OFTEN: deleted that long after.
RETIRED_SECONDS = 3.0
#: The follower, its views merged often and soon (a merge of two files, a
#: replaced file deleted RETIRED_SECONDS after): binlake's command with the
#: constants of binlake.spark.state.compaction set so.
MERGING_OFTEN = f"""
import runpy, sys
import binlake.spark.run.follow as follow
import binlake.spark.state.compaction as compaction
compaction.COMPACT_AT, compaction.RETIRED_SECONDS = 2, {RETIRED_SECONDS}
follow.COMPACT_EVERY_SECONDS = 0.3
sys.argv[0] = "binlake"
runpy.run_module("binlake", run_name="__main__")
"""


class ViewReader(threading.Thread):
    """A reader of changes/ beside the follower: each listing must read
    without error and hold no change twice. A read that took longer than a
    replaced file's grace may find one gone: the documented limit (a loaded
    machine makes a read of hundreds of files slow), not counted."""

    def __init__(self, lake):
        super().__init__(daemon=True)
        self.lake, self.reads, self.failures = lake, 0, []
        self.done = threading.Event()

    def run(self) -> None:
        from .truth import view_table
        while not self.done.is_set():
            if not (self.lake / "changes").is_dir():
                time.sleep(0.1)
                continue
            began = time.monotonic()
            try:
                held = view_table(self.lake, "changes", ["file", "pos", "row_index"]).to_pylist()
            except FileNotFoundError as exc:
                if time.monotonic() - began < RETIRED_SECONDS:
                    self.failures.append(repr(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - a reader's error is a failure
                self.failures.append(repr(exc))
                continue
            keys = [(row["file"], row["pos"], row["row_index"]) for row in held]
            if len(keys) != len(set(keys)):
                self.failures.append(f"{len(keys) - len(set(keys))} changes read twice")
            self.reads += 1


def test_a_follower_keeps_only_the_copies_it_has_yet_to_read_through_kills(server, tmp_path,
                                                                           request):
    """... and merges the views' small files, a reader beside it reading
    each change once throughout."""
    lake, rng = tmp_path / "lake", random.Random(3)
    log = open(tmp_path / "follower.log", "ab")
    command = [sys.executable, "-c", MERGING_OFTEN, *pipeline(
        server, lake, "--follow", "--keep-binlogs", "0", "--heartbeat-period", "1")[3:]]

    def start():
        process = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        # (a failed assertion must not leave a follower running)
        request.addfinalizer(lambda: process.poll() is None and (process.kill(), process.wait()))
        return process

    def batches() -> int:
        found = status(lake)
        return found.get("micro_batches", 0) if found.get("state") == "following" else -1

    follower, writer, reader = start(), Writer(server), ViewReader(lake)
    writer.start()
    reader.start()
    removed_seen = set()
    try:
        def next_batch():
            first = batches()
            wait_for(lambda: batches() > first >= 0 or (first < 0 and batches() > 0), follower,
                     "a micro-batch")
        for round_ in range(5):
            next_batch()
            server.flush_logs()
            if round_ in (1, 3):
                # anywhere: in the second after a copy begins (before its
                # first fsync is recorded), in a micro-batch, in a removal
                time.sleep(rng.uniform(0.0, 1.8))
                follower.send_signal(signal.SIGKILL)
                follower.wait()
                follower = start()
            removed_seen |= {name for name, entry in load_manifest(str(lake)).files.items()
                             if entry.copy_removed}
    finally:
        writer.done.set()
        writer.join()
    assert writer.statements > 50
    time.sleep(4)  # past a replaced file's grace: deleted, beside the reader
    reader.done.set()
    reader.join()
    assert not reader.failures and reader.reads > 10, reader.failures[:3]
    server.flush_logs()
    newest = os.path.basename(str(server.binlog_files()[-1]))
    # every closed copy read whole by every table goes; the newest stays
    wait_for(lambda: copies(lake) == [newest] and lake_rows(lake, "a") == server_rows(server, "a")
             and lake_rows(lake, "b") == server_rows(server, "b"), follower,
             f"copies {copies(lake)} (newest {newest})")
    follower.send_signal(signal.SIGTERM)
    assert follower.wait(60) == 0
    log.close()
    manifest = load_manifest(str(lake))
    assert sorted(name for name, entry in manifest.files.items() if entry.copy_removed) == [
        name for name in sorted(manifest.files) if name != newest]
    assert len(manifest.files) >= 6 and removed_seen  # removals happened while it ran
    assert_each_change_once(server, lake)
    # merges happened, and their replaced files went
    merged = status(lake)["metrics"]
    assert merged["view_files_merged"] > 0 and merged["view_files_deleted"] > 0, merged


def test_runs_keep_what_the_tables_have_not_taken_and_maintain_removes_the_rest(
        server, tmp_path, monkeypatch):
    from binlake.cli.dispatch import main
    from binlake.live.source import LiveOptions, LiveSource
    from binlake.spark.run import pipeline as pipeline_module
    from binlake.spark.run.follow import Follower
    from binlake.spark.run.session import LazySession
    from binlake.spark.state import store

    lake, folder = tmp_path / "lake", tmp_path / "lake" / "_binlake" / "binlogs"
    first = f"{DB}.a,{DB}.b"
    server.flush_logs()
    server.execute(f"UPDATE {DB}.a SET v = 7 WHERE id < 10")
    server.flush_logs()
    run(pipeline(server, lake, "--tables", first))
    assert copies(lake) == ["binlog.000001", "binlog.000002", "binlog.000003"]  # a day's keep

    # a run killed after its views took binlog.000003 whole, before its tables did: kept
    server.execute(f"INSERT INTO {DB}.b VALUES (1), (2)")
    server.flush_logs()
    real = pipeline_module.bring_tables_in_step

    def killed(run_, manifest, *args, **kwargs):
        if "binlog.000004" in manifest.files:  # binlog.000003 read to its end
            raise KeyboardInterrupt  # as a SIGKILL before the tables step leaves the lake
        return real(run_, manifest, *args, **kwargs)

    def no_spark():
        raise AssertionError("a small increment started a Spark session")
    monkeypatch.setattr(pipeline_module, "bring_tables_in_step", killed)
    source = LiveSource(LiveOptions({"host": "127.0.0.1", "port": server.port, "user": "root"},
                                    to_last_log=True, heartbeat=1.0))
    with pytest.raises(KeyboardInterrupt):
        # (removing nothing itself: a micro-batch that read binlog.000003
        # whole just before binlog.000004 was copied would let it go before
        # the kill; the rule is asked of the state the kill leaves, below)
        Follower(LazySession(no_spark, "local[2]"), str(lake), source, "binlog.000001",
                 pipeline_options={"tables": first}, keep_binlogs=None).run()
    monkeypatch.undo()
    manifest = load_manifest(str(lake))
    assert manifest.files["binlog.000003"].end == os.path.getsize(folder / "binlog.000003")
    assert "binlog.000003" not in removable(manifest, str(folder), 0, time.time())
    assert remove_old_copies(str(lake), 0) == []  # (and a killed run waits for its recovery)
    run(pipeline(server, lake, "--tables", first, "--keep-binlogs", "0"))
    assert copies(lake) == ["binlog.000004"]
    assert lake_rows(lake, "b") == server_rows(server, "b")

    # a removal killed between its record and its deletes: finished by maintain
    server.execute(f"DELETE FROM {DB}.a WHERE id = 3")
    server.flush_logs()
    run(pipeline(server, lake, "--tables", first))
    assert copies(lake) == ["binlog.000004", "binlog.000005"]

    def remove(path):
        raise KeyboardInterrupt
    monkeypatch.setattr(store.os, "remove", remove)
    with pytest.raises(KeyboardInterrupt):
        remove_old_copies(str(lake), 0)
    monkeypatch.undo()
    assert load_manifest(str(lake)).files["binlog.000004"].copy_removed
    assert copies(lake) == ["binlog.000004", "binlog.000005"]
    out, err = io.StringIO(), io.StringIO()
    assert main(["maintain", "--out", str(lake)], out, err) == 0, err.getvalue()
    assert "binlog copies: 1 removed (binlog.000004)" in out.getvalue(), out.getvalue()
    assert copies(lake) == ["binlog.000005"]

    # the runs go on after the removed copies: nothing lost, nothing twice
    server.execute(f"UPDATE {DB}.a SET v = 9 WHERE id > 90")
    server.flush_logs()
    run(pipeline(server, lake, "--tables", first))
    assert copies(lake) == ["binlog.000005", "binlog.000006"]
    out = io.StringIO()
    assert main(["maintain", "--out", str(lake), "--keep-binlogs", "1d"], out, err) == 0
    assert "binlog copies" not in out.getvalue() and len(copies(lake)) == 2
    assert main(["maintain", "--out", str(lake), "--keep-binlogs", "0"], out, err) == 0
    assert "binlog copies: 1 removed (binlog.000005)" in out.getvalue(), out.getvalue()
    assert copies(lake) == ["binlog.000006"]
    assert lake_rows(lake, "a") == server_rows(server, "a")
    assert lake_rows(lake, "b") == server_rows(server, "b")
    assert_each_change_once(server, lake)

    # tables newly selected would be read from the copies again: refused
    refused = run([sys.executable, "-m", "binlake", "pipeline", str(folder) + os.sep,
                   "--out", str(lake), "--tables", f"{DB}.*,other.*"], code=1)
    line = refused.stderr.strip()
    assert line.count("\n") == 0 and "whose copies were removed (--keep-binlogs)" in line
    assert "--snapshot-tables" in line, line


def test_keep_versions_is_set_on_every_table_and_kept_by_later_runs(tmp_path):
    """`pipeline --keep-versions 10m`: each table keeps its old versions ten
    minutes (its log and removed files), and a later run that does not say
    keeps the choice."""
    pytest.importorskip("deltalake")
    import shutil

    import deltalake

    from binlake.cli.commands.pipeline import sample_dir
    from binlake.cli.dispatch import main
    incoming, lake = tmp_path / "incoming", tmp_path / "lake"
    incoming.mkdir()
    shutil.copy(os.path.join(sample_dir(), "binlog.000001"), incoming)
    command = ["pipeline", str(incoming), "--out", str(lake), "--temporals", "text"]
    err = io.StringIO()
    assert main(command + ["--keep-versions", "10m"], io.StringIO(), err) == 0, err.getvalue()
    shutil.copy(os.path.join(sample_dir(), "binlog.000002"), incoming)
    assert main(command, io.StringIO(), err) == 0, err.getvalue()
    assert load_manifest(str(lake)).keep_versions == 600
    tables = sorted((lake / "tables").iterdir())
    assert tables
    for table in tables:
        config = deltalake.DeltaTable(str(table)).metadata().configuration
        assert config["delta.logRetentionDuration"] == "interval 600 seconds", table
        assert config["delta.deletedFileRetentionDuration"] == "interval 600 seconds"
    err = io.StringIO()
    assert main(command + ["--keep-versions", "soon"], io.StringIO(), err) == 1
    assert err.getvalue().startswith("binlake pipeline: --keep-versions soon: a duration")
