"""The Spark streaming source follows a live server, exactly once: the server's
binlogs are kept by `binlake dump -R --raw --stop-never` in a folder, and the
`binlog` streaming source tails that folder (it reads a file the server is
still writing up to its last whole transaction, and takes the rest later).

The same with the source following the server itself (connection options:
its own copier into the folder it loads).

The dump connection is killed from the server's side and the query is
stopped and restarted while the server writes; at the end the sink holds the
same changes as a batch read of the server's own binlog files.
"""
from __future__ import annotations

import signal
import time

import pytest

from .test_streaming import change_keys

pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture
def primary(tmp_path):
    from binlake.testing.mariadb import MariaDBServer, ensure_mariadb_installed
    try:
        ensure_mariadb_installed()
    except RuntimeError as error:
        pytest.skip(f"MariaDB server unavailable: {error}")
    with MariaDBServer(tmp_path / "primary", max_binlog_size=32 << 10) as server:
        server.execute("CREATE DATABASE shop")
        server.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), "
                       "price DECIMAL(10,2), seen DATETIME(3))")
        yield server


def test_a_live_server_through_a_raw_backup_folder_exactly_once(spark, primary, tmp_path):
    from server.live_helpers import start_backup, wait_for_copies
    folder, sink, checkpoint = tmp_path / "binlogs", tmp_path / "sink", tmp_path / "checkpoint"
    backup = start_backup(primary, folder)
    stream = (spark.readStream.format("binlog").option("view", "changes").load(str(folder))
              .writeStream.format("parquet").option("path", str(sink))
              .option("checkpointLocation", str(checkpoint))
              .trigger(processingTime="200 milliseconds"))

    def caught_up(query) -> None:
        wait_for_copies(primary, folder)
        query.processAllAvailable()
    try:
        stopped_and_started(primary, stream, caught_up)
    finally:
        backup.send_signal(signal.SIGINT)
        backup.communicate(timeout=30)
    assert_sink_holds_the_servers_changes(spark, primary, sink)


def test_a_live_server_named_by_options_exactly_once(spark, primary, tmp_path):
    """The source follows the server itself (connection options): its dump
    thread killed, the query stopped and started again while the server
    writes, the server rotating its binlog: the sink holds each change of the
    server's binlogs once."""
    folder, sink, checkpoint = tmp_path / "binlogs", tmp_path / "sink", tmp_path / "checkpoint"
    stream = (spark.readStream.format("binlog").option("view", "changes")
              .options(host="127.0.0.1", port=str(primary.port), user="root", heartbeat="0.5")
              .load(str(folder))
              .writeStream.format("parquet").option("path", str(sink))
              .option("checkpointLocation", str(checkpoint))
              .trigger(processingTime="200 milliseconds"))

    def caught_up(query) -> None:
        """Until the copies hold the server's last commit and the query has read it."""
        end = primary.query("SHOW MASTER STATUS")[0][:2]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            copy = folder / end[0]
            if copy.exists() and copy.stat().st_size >= int(end[1]):
                query.processAllAvailable()
                return
            time.sleep(0.05)
        raise AssertionError(f"the copies did not reach {end}")

    stopped_and_started(primary, stream, caught_up)
    assert_sink_holds_the_servers_changes(spark, primary, sink)
    # a second query copying into the same folder, beside the first (its
    # copier started: the first offset asked for starts it): refused
    query = stream.start()
    try:
        caught_up(query)
        second = (spark.readStream.format("binlog")
                  .options(host="127.0.0.1", port=str(primary.port), user="root")
                  .load(str(folder)).writeStream.format("noop")
                  .option("checkpointLocation", str(tmp_path / "second")).start())
        with pytest.raises(Exception, match="another backup is writing into"):
            second.awaitTermination(60)
        assert query.isActive
    finally:
        query.stop()


def stopped_and_started(primary, stream, caught_up) -> None:
    """The server written to while the query reads, its dump thread killed,
    the server restarted cleanly and after a SIGKILL; the query stopped
    while the server writes, started again, the server rotating its binlog. `caught_up(query)`: until the query has read the
    server's last commit."""
    from server.live_helpers import kill_dump_threads, write
    write(primary, 1, 200)
    query = stream.start()
    try:
        caught_up(query)
        write(primary, 201, 200)
        kill_dump_threads(primary)
        write(primary, 401, 200)
        caught_up(query)
        primary.stop()   # restarted cleanly, then after a SIGKILL, while the query runs
        primary.start()
        write(primary, 601, 100)
        primary.kill()
        primary.start()
        caught_up(query)
    finally:
        query.stop()
    write(primary, 701, 100)            # written while no query runs
    query = stream.start()
    try:
        write(primary, 801, 200)
        primary.flush_logs()
        write(primary, 1001, 100)
        caught_up(query)
    finally:
        query.stop()


def assert_sink_holds_the_servers_changes(spark, primary, sink) -> None:
    """Each change of the server's binlog files (a batch read of them) is
    in the sink once."""
    files = [str(path) for path in primary.binlog_files()]
    expected = [row.asDict(recursive=True) for row in
                spark.read.format("binlog").option("view", "changes").load(files).collect()]
    got = pq.read_table(sink).to_pylist()
    assert len(expected) > 1000
    assert change_keys(got) == change_keys(expected)
