"""The Spark streaming source follows a live server, exactly once: the server's
binlogs are kept by `binlake dump -R --raw --stop-never` in a folder, and the
`binlog` streaming source tails that folder (it reads a file the server is
still writing up to its last whole transaction, and takes the rest later).

The dump connection is killed from the server's side and the query is
stopped and restarted while the server writes; at the end the sink holds the
same changes as a batch read of the server's own binlog files.
"""
from __future__ import annotations

import signal

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
    from server.live_helpers import kill_dump_threads, start_backup, wait_for_copies, write
    folder, sink, checkpoint = tmp_path / "binlogs", tmp_path / "sink", tmp_path / "checkpoint"
    backup = start_backup(primary, folder)
    stream = (spark.readStream.format("binlog").option("view", "changes").load(str(folder))
              .writeStream.format("parquet").option("path", str(sink))
              .option("checkpointLocation", str(checkpoint))
              .trigger(processingTime="200 milliseconds"))
    try:
        write(primary, 1, 200)
        wait_for_copies(primary, folder)
        query = stream.start()
        try:
            query.processAllAvailable()
            write(primary, 201, 200)
            kill_dump_threads(primary)
            write(primary, 401, 200)
            wait_for_copies(primary, folder)
            query.processAllAvailable()
        finally:
            query.stop()
        write(primary, 601, 200)            # written while no query runs
        query = stream.start()
        try:
            write(primary, 801, 200)
            primary.flush_logs()
            wait_for_copies(primary, folder)
            query.processAllAvailable()
        finally:
            query.stop()
    finally:
        backup.send_signal(signal.SIGINT)
        backup.communicate(timeout=30)
    files = [str(path) for path in primary.binlog_files()]
    expected = [row.asDict(recursive=True) for row in
                spark.read.format("binlog").option("view", "changes").load(files).collect()]
    got = pq.read_table(sink).to_pylist()
    assert len(expected) > 1000
    assert change_keys(got) == change_keys(expected)
