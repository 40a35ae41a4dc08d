"""`--as-of` on a lake whose tables have starts (binlake.spark.state.starts): each
table as of the point equals the server's SELECT * captured there, or the
point is refused in one line naming the table, nothing written.

Against a private MariaDB: (a) a table without a key read anew on request
(--snapshot-tables) after the lake followed it: its changes before its
start are not counted besides its chunk's rows; (b) a keyed table
selected again (--tables) after a gap in which rows of it were deleted:
those rows stay deleted; (c) a point inside a lock-free snapshot (a table
still being read; a point before its last chunk; before the snapshot the
lake started from) is refused, a point after it is exact.
"""
from __future__ import annotations

import io
import json

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")

from binlake.cli.dispatch import main  # noqa: E402
from binlake.connection.settings import ServerAddress  # noqa: E402
from binlake.spark.commits.delta import read_table  # noqa: E402
from binlake.spark.run.pipeline import load_manifest, run_pipeline  # noqa: E402
from binlake.spark.state.store import request_snapshot  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402


def follow_once(server, lake, tables: str) -> None:
    """`pipeline -R --tables TABLES`: the server's binlogs to their end (and
    the requests and snapshots under way done)."""
    err = io.StringIO()
    command = ["pipeline", "-R", "--temporals", "text", "--out", str(lake), "-h", "127.0.0.1",
               "-P", str(server.port), "-u", "root", "--tables", tables, "binlog.000001"]
    assert main(command, io.StringIO(), err) == 0, err.getvalue()


def captured(server, tables: list) -> tuple[str, dict]:
    """The server's binlog position now (FILE:POS) and its tables' rows."""
    file, pos = server.query("SHOW MASTER STATUS")[0][:2]
    return f"{file}:{pos}", {name: sorted(server.query(f"SELECT * FROM {name}"))
                             for name in tables}


def as_of(spark, lake, point: str, then, inputs=None, **options) -> dict:
    """The lake's tables as of `point` (FILE:POS), built from `inputs` (its
    binlog copies unless named)."""
    inputs = inputs or sorted(str(path) for path in (lake / "_binlake" / "binlogs").iterdir()
                              if path.name.startswith("binlog."))
    run_pipeline(spark, inputs, str(lake), as_of=point, as_of_out=str(then),
                 temporals="text", **options)
    return {name.name: sorted(tuple(row.values()) for row in read_table(str(name)).to_pylist())
            for name in (then / "tables").iterdir()}


def test_a_keyless_table_read_anew_on_request_counts_its_rows_once(spark, mariadb, tmp_path):
    with MariaDBServer(tmp_path / "server", server_id=31) as server:
        server.execute("CREATE DATABASE ao")
        server.execute("CREATE TABLE ao.t (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute("CREATE TABLE ao.k (a INT, b VARCHAR(20))")
        server.execute("INSERT INTO ao.t VALUES (1, 'a'), (2, 'b')")
        server.execute("INSERT INTO ao.k VALUES (1, 'x'), (2, 'y'), (2, 'y')")
        lake = tmp_path / "lake"
        follow_once(server, lake, "ao.*")
        server.execute("INSERT INTO ao.k VALUES (3, 'z')")
        server.execute("DELETE FROM ao.k WHERE a = 1")
        request_snapshot(str(lake), "ao.k")
        follow_once(server, lake, "ao.*")
        assert load_manifest(str(lake)).chunks.tables["ao.k"].done
        server.execute("INSERT INTO ao.k VALUES (4, 'w')")
        server.execute("UPDATE ao.t SET v = 'c' WHERE id = 1")
        point, then = captured(server, ["ao.t", "ao.k"])
        server.execute("INSERT INTO ao.k VALUES (5, 'late')")
        server.execute("DELETE FROM ao.k WHERE a = 2 LIMIT 1")
        follow_once(server, lake, "ao.*")
        assert as_of(spark, lake, point, tmp_path / "then", tables="ao.*") == then


def test_a_table_selected_again_after_a_gap_keeps_its_deletes(spark, mariadb, tmp_path):
    with MariaDBServer(tmp_path / "server", server_id=32) as server:
        server.execute("CREATE DATABASE ao")
        server.execute("CREATE TABLE ao.t (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute("CREATE TABLE ao.o (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute("INSERT INTO ao.t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')")
        server.execute("INSERT INTO ao.o VALUES (1, 'a')")
        lake = tmp_path / "lake"
        follow_once(server, lake, "ao.t,ao.o")
        # The gap: ao.t not selected while rows of it are deleted.
        server.execute("DELETE FROM ao.t WHERE id IN (2, 3)")
        server.execute("INSERT INTO ao.o VALUES (2, 'b')")
        follow_once(server, lake, "ao.o")
        follow_once(server, lake, "ao.t,ao.o")  # selected again: read anew
        assert load_manifest(str(lake)).chunks.tables["ao.t"].done
        server.execute("INSERT INTO ao.t VALUES (5, 'e')")
        server.execute("UPDATE ao.t SET v = 'A' WHERE id = 1")
        point, then = captured(server, ["ao.t", "ao.o"])
        server.execute("DELETE FROM ao.t WHERE id = 4")
        follow_once(server, lake, "ao.t,ao.o")
        assert as_of(spark, lake, point, tmp_path / "then", tables="ao.t,ao.o") == then


def test_a_point_inside_a_lock_free_snapshot_is_refused(spark, mariadb, tmp_path):
    from binlake.spark.snapshot.chunks import plan_round, progressed, read_round
    with MariaDBServer(tmp_path / "server", server_id=33) as server:
        server.execute("CREATE DATABASE ao")
        server.execute("CREATE TABLE ao.t (id INT PRIMARY KEY, v VARCHAR(20))")
        server.execute("INSERT INTO ao.t SELECT seq, CONCAT('v', seq) FROM ao.seq_1_to_3000")
        address = ServerAddress("127.0.0.1", server.port, "root", "")
        lake = tmp_path / "lake"

        def run(**options):
            return run_pipeline(spark, [str(p) for p in server.binlog_files()], str(lake),
                                temporals="text", **options)

        def refused(point: str, folder: str) -> str:
            manifest = (lake / "_binlake" / "manifest.json").read_bytes()
            with pytest.raises(ValueError) as refusal:
                run(as_of=point, as_of_out=str(tmp_path / folder))
            assert not (tmp_path / folder / "tables").exists()
            assert (lake / "_binlake" / "manifest.json").read_bytes() == manifest
            assert "\n" not in str(refusal.value)
            return str(refusal.value)
        before_floor, _ = captured(server, [])
        server.execute("UPDATE ao.t SET v = 'before' WHERE id = 1")
        run(snapshot=address, snapshot_chunked=True, snapshot_chunk_rows=1000)
        rounds = 0
        inside = None
        while not (progress := load_manifest(str(lake)).chunks).tables["ao.t"].done:
            server.execute(f"UPDATE ao.t SET v = 'round {rounds}' WHERE id IN (5, 2500)")
            server.execute(f"DELETE FROM ao.t WHERE id = {1500 + rounds}")
            reads = read_round(None, address, plan_round(address, progress, 1),
                               str(tmp_path / f"round{rounds}"))
            run(snapshot_round=(str(tmp_path / f"round{rounds}"), progressed(progress, reads)))
            rounds += 1
            if rounds == 1:
                server.execute("UPDATE ao.t SET v = 'inside' WHERE id = 2999")
                inside, _ = captured(server, [])
                message = refused(inside, "unfinished")
                assert "ao.t is still being read by the lock-free snapshot" in message
        assert rounds == 3
        message = refused(inside, "inside")
        assert "ao.t" in message and "last chunk" in message and "at or after it" in message
        # A lake whose progress does not record its last chunk: found in its chunk files.
        manifest = lake / "_binlake" / "manifest.json"
        state = json.loads(manifest.read_text())
        last = state["chunks"]["tables"]["ao.t"].pop("last_chunk")
        manifest.write_text(json.dumps(state))
        message = refused(inside, "inside-files")
        assert f"last chunk at {last['file']}:{last['pos']}" in message
        assert "before the snapshot this lake started from" in refused(before_floor, "early")
        server.execute("UPDATE ao.t SET v = 'after' WHERE id = 7")
        point, then = captured(server, ["ao.t"])
        server.execute("DELETE FROM ao.t WHERE id < 100")
        run()
        assert as_of(spark, lake, point, tmp_path / "then",
                     [str(p) for p in server.binlog_files()]) == then
