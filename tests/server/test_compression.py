"""The compressed client/server protocol (-C, --compression-algorithms)
against a private MariaDB.

Strategy: the server writes small binlogs (many rotations), one of them
holding a row event over 16 MB (several packets, several compressed
packets), with binlog_row_metadata=MINIMAL (the column names come from
--schema-from). `binlake dump -R --compress` must print exactly what it
prints uncompressed and what mariadb-binlog -R prints (MariaDB's
mariadb-binlog 10.11 has no -C: compression changes no output byte, so its
uncompressed output is the reference); `--raw` copies must be the server's
files. That the connection really was compressed shows in the server's own
counters: `Compression` of a session made with the same settings, and the
bytes the server sent (`Bytes_sent`) for the same dump. zstd cannot be
tried: MariaDB offers zlib only, so what is tried is what a client that
asks for zstd alone gets (refused) or with `uncompressed` (uncompressed).
"""
from __future__ import annotations

import signal
import subprocess
import time

import pytest

from binlake.connection import compression as wire_compression
from binlake.connection.settings import SchemaSourceError, ServerAddress, connect
from binlake.testing.mariadb import MariaDBServer
from server.live_helpers import (connection_args, dump_threads, kill_dump_threads,
                                 start_backup, wait_for_copies, write)
from server.replay import run_binlake

pytestmark = pytest.mark.server

#: a row event over 16 MB: its packet is split in two, its compressed packets in more
BIG_ROW = "INSERT INTO shop.blobs VALUES (1, REPEAT('binlake ', 2200000))"


def settled(server) -> list[str]:
    """The binlog names, once the server has stopped writing (MariaDB adds a
    binlog checkpoint event some time after a rotation)."""
    last, same, deadline = None, 0, time.monotonic() + 30
    while same < 3 and time.monotonic() < deadline:
        now = server.query("SHOW BINARY LOGS")
        same = same + 1 if now == last else 0
        last = now
        time.sleep(0.5)
    return [row[0] for row in last]


@pytest.fixture(scope="module")
def server(mariadbd, tmp_path_factory):
    with MariaDBServer(tmp_path_factory.mktemp("compression"), max_binlog_size=64 << 10,
                       binlog_row_metadata="MINIMAL",
                       extra={"max_allowed_packet": "64M"}) as server:
        server.execute("CREATE DATABASE shop")
        server.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(40), "
                       "price DECIMAL(10,2), seen DATETIME(3))")
        server.execute("CREATE TABLE shop.blobs (id INT PRIMARY KEY, data LONGBLOB)")
        write(server, 1, 250)
        server.execute(BIG_ROW)
        write(server, 251, 250)
        server.flush_logs()
        settled(server)
        yield server


def _address(server, **options) -> ServerAddress:
    return ServerAddress(host="127.0.0.1", port=server.port, user="root", password="", **options)


def idle(server) -> None:
    """Until the server has ended the dumps before (a new one with the same
    replica id would be refused while the last is still registered)."""
    deadline = time.monotonic() + 10
    while dump_threads(server) and time.monotonic() < deadline:
        time.sleep(0.05)


def _bytes_sent(server) -> int:
    return int(server.query("SHOW GLOBAL STATUS LIKE 'Bytes_sent'")[0][1])


def _dump(server, *options: str) -> tuple[bytes, int]:
    """binlake dump's output and the bytes the server sent for it."""
    idle(server)
    before = _bytes_sent(server)
    status, out, err = run_binlake("dump", "--no-defaults", *options)
    assert status == 0, err
    return out, _bytes_sent(server) - before


def _mariadb_binlog(server, *options: str) -> bytes:
    result = subprocess.run(["mariadb-binlog", "--no-defaults", "-R", "--host=127.0.0.1",
                             f"--port={server.port}", "--user=root", *options],
                            capture_output=True, env={"TZ": "UTC"})
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout


def _session_compression(connection) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW SESSION STATUS LIKE 'Compression'")
        return cursor.fetchone()[1]


def test_a_connection_made_with_the_options_is_compressed(server, tmp_path):
    for options, expected in (({}, "OFF"), ({"compress": True}, "ON"),
                              ({"compression_algorithms": "zlib"}, "ON"),
                              ({"compression_algorithms": "zstd,zlib,uncompressed"}, "ON"),
                              ({"compression_algorithms": "zstd,uncompressed"}, "OFF")):
        connection = connect(_address(server, **options))
        try:
            assert _session_compression(connection) == expected, options
            # a result larger than the server's buffer comes in several compressed packets
            with connection.cursor() as cursor:
                cursor.execute("SELECT id, name FROM shop.items ORDER BY id")
                assert len(cursor.fetchall()) > 400
        finally:
            connection.close()
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\nhost=127.0.0.1\nport={server.port}\nuser=root\ncompress\n")
    connection = connect(ServerAddress(defaults_file=str(cnf)))
    assert _session_compression(connection) == "ON"
    connection.close()
    connection = connect(ServerAddress(defaults_file=str(cnf), compress=False))  # --skip-compress
    assert _session_compression(connection) == "OFF"
    connection.close()
    with pytest.raises(SchemaSourceError, match="wrongly configured compression algorithm: the "
                       "server offers none of zstd"):
        connect(_address(server, compression_algorithms="zstd"))


def test_dump_R_compressed_prints_what_it_prints_uncompressed_and_what_mariadb_binlog_prints(
        server):
    names = settled(server)
    sizes = {path.name: path.stat().st_size for path in server.binlog_files()}
    assert len(names) >= 5 and max(sizes.values()) > 17_000_000
    sent = {"plain": 0, "compressed": 0}
    for name in names[:-1]:                 # the closed ones: each its own dump
        # binlake prints the BINLOG block of an event over 16 MB from a --raw
        # copy only (rawevents.py): that file's rows decoded instead
        options = ["-vv", "--base64-output=decode-rows"] if sizes[name] > 1 << 24 else []
        plain, sent_plain = _dump(server, "-R", *connection_args(server), *options, name)
        compressed, sent_compressed = _dump(server, "-R", *connection_args(server), "-C",
                                            *options, name)
        assert compressed == plain, name
        assert _mariadb_binlog(server, *options, name) == plain, name
        sent["plain"] += sent_plain
        sent["compressed"] += sent_compressed
    assert sent["plain"] > 17_000_000
    # what the server sent was compressed: the workload's text compresses well
    assert sent["compressed"] < sent["plain"] // 5, sent
    # more of the printer's options, and all the binlogs at once (-t)
    for options in (["-vv", "--base64-output=decode-rows", "--print-table-metadata"],
                    ["-v", "--base64-output=decode-rows", "-t"]):
        plain, _ = _dump(server, "-R", *connection_args(server), *options, names[0])
        compressed, _ = _dump(server, "-R", *connection_args(server), "--compress", *options,
                              names[0])
        assert compressed == plain and len(plain) > 100_000, options


def test_raw_copies_over_a_compressed_connection_are_the_servers_files(server, tmp_path):
    names = settled(server)
    files = {path.name: path.read_bytes() for path in server.binlog_files()}
    copies = {}
    for options in (["--compress"], ["--compression-algorithms=zlib"], []):
        directory = tmp_path / ("raw" + "".join(options).replace("-", "_").replace("=", "_"))
        directory.mkdir()
        idle(server)
        before = _bytes_sent(server)
        status, _, err = run_binlake("dump", "--no-defaults", "-R", *connection_args(server),
                                     *options, "--raw", "-t", "-r", f"{directory}/", names[0])
        assert status == 0, err
        sent = _bytes_sent(server) - before
        copies[tuple(options)] = {path.name: path.read_bytes() for path in directory.iterdir()
                                  if not path.name.startswith(".")}   # binlake's lock file
        if options:
            assert sent < sum(map(len, files.values())) // 5, (options, sent)
    peer = tmp_path / "peer"
    peer.mkdir()
    _mariadb_binlog(server, "--raw", "-t", f"--result-file={peer}/", names[0])
    copies["mariadb-binlog"] = {path.name: path.read_bytes() for path in peer.iterdir()}
    for copy in copies.values():
        assert sorted(copy) == names
        # the closed binlogs as they are; the open one too, but for the in-use
        # flag of its format description, which the server clears in what it sends
        assert {name: copy[name] for name in names[:-1]} == \
            {name: files[name] for name in names[:-1]}
        assert _in_use_cleared(copy[names[-1]]) == _in_use_cleared(files[names[-1]])


def _in_use_cleared(binlog: bytes) -> bytes:
    """The binlog with LOG_EVENT_BINLOG_IN_USE_F off in the format description's flags."""
    flags = 4 + 17          # after the magic: timestamp, type, server id, length, position
    return binlog[:flags] + bytes([binlog[flags] & ~1]) + binlog[flags + 1:]


def test_schema_from_over_a_compressed_connection(server, monkeypatch):
    settled(server)
    files = [str(path) for path in server.binlog_files()][:2]
    channels = []
    opened = wire_compression.CompressedChannel.__init__

    def counted(self, *args, **kwargs):
        opened(self, *args, **kwargs)
        channels.append(self)
    monkeypatch.setattr(wire_compression.CompressedChannel, "__init__", counted)
    outputs = []
    for options in ([], ["--compress"]):
        status, out, err = run_binlake("sql", "--no-defaults", "--schema-from",
                                       *connection_args(server), *options, *files)
        assert status == 0, err
        outputs.append(out)
    # the binlogs do not name the columns (MINIMAL metadata): the server's tables do
    assert outputs[0] == outputs[1] and b"`price`" in outputs[0]
    assert [channel.algorithm for channel in channels] == ["zlib"]
    assert channels[0].received > 0


def test_zstd_alone_is_refused_by_mariadb_as_by_mysqlbinlog(server):
    name = settled(server)[0]
    idle(server)
    status, out, err = run_binlake("dump", "--no-defaults", "-R", *connection_args(server),
                                   "--compression-algorithms=zstd", name)
    assert status == 1
    assert err.count("\n") == 1 and "offers none of zstd" in err and "2066" in err, err
    # with uncompressed allowed: an ordinary connection, which sends the binlog
    # as it is: at least its size (not against the plain run's count: that is
    # the whole server's Bytes_sent, and once, under the full suite's load, it
    # came to twice the binlog)
    plain, _ = _dump(server, "-R", *connection_args(server), name)
    fallback, sent_fallback = _dump(server, "-R", *connection_args(server),
                                    "--compression-algorithms=zstd,uncompressed",
                                    "--zstd-compression-level=7", name)
    size = dict((row[0], int(row[1])) for row in server.query("SHOW BINARY LOGS"))[name]
    assert fallback == plain and sent_fallback >= size


def test_a_compressed_backup_follows_the_server_through_a_killed_dump(server, tmp_path):
    """`--raw --stop-never -C` in its own process: compressed from the first
    byte, and its copies still the server's files through a reconnect."""
    prefix = tmp_path / "backup"
    settled(server)
    idle(server)
    before = _bytes_sent(server)
    backup = start_backup(server, prefix, "--compress")
    try:
        wait_for_copies(server, prefix, backup=backup)
        assert _bytes_sent(server) - before < sum(
            path.stat().st_size for path in server.binlog_files()) // 5
        write(server, 1001, 150)
        time.sleep(1)
        assert kill_dump_threads(server) >= 1
        write(server, 1151, 150)
        server.flush_logs()
        settled(server)
        wait_for_copies(server, prefix)
        for path in server.binlog_files()[:-1]:
            assert (prefix / path.name).read_bytes() == path.read_bytes(), path.name
    finally:
        backup.send_signal(signal.SIGINT)
        _, stderr = backup.communicate(timeout=30)
    # Ctrl-C ends it cleanly; the killed dump was one warning and a reconnect
    assert backup.returncode in (0, 130), stderr.decode(errors="replace")
    assert b"reconnecting (attempt 1)" in stderr and b"Traceback" not in stderr
