"""wire_compression.py: the compressed protocol's framing, what -C,
--compression-algorithms and --zstd-compression-level ask for, and PyMySQL
and the replica speaking it to a scripted server on a local socket.
(A real MariaDB: tests/server/test_compression.py.)"""
from __future__ import annotations

import functools
import io
import os
import socket
import struct
import threading
import zlib

import pytest

from binlake.cli.dispatch import build_parser, client_syntax
from binlake.cli.commands.common import server_address
from binlake.live.protocol import ReplicaConnection, ReplicationError
from binlake.connection.settings import (SchemaSourceError, ServerAddress, connect,
                                   connection_settings)
from binlake.connection.compression import (CLIENT_COMPRESS, CLIENT_ZSTD_COMPRESSION_ALGORITHM,
                                      CompressedChannel, Compression, WireCompressionError,
                                      codec, unwrap, wrap)

zstandard = pytest.importorskip("zstandard")


@pytest.fixture(autouse=True)
def no_machine_option_files(tmp_path, monkeypatch):
    """The option files of the machine and of whoever runs the tests stay out of them."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr("binlake.connection.option_files.SYSTEM_FILES", ())
    for name in ("MARIADB_HOME", "MYSQL_HOME", "MYSQL_GROUP_SUFFIX", "MYSQL_TEST_LOGIN_FILE"):
        monkeypatch.delenv(name, raising=False)


def packet(payload: bytes, sequence: int = 0) -> bytes:
    """An ordinary packet: 3-byte length, sequence id, payload."""
    return len(payload).to_bytes(3, "little") + bytes([sequence]) + payload


def header(data: bytes) -> tuple[int, int, int]:
    """(body length, sequence id, length uncompressed) of a compressed packet."""
    return (int.from_bytes(data[:3], "little"), data[3], int.from_bytes(data[4:7], "little"))


# -- framing ------------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["zlib", "zstd"])
def test_round_trips(algorithm):
    compress, decompress = codec(algorithm)
    payloads = [b"", b"short", bytes(range(256)) * 40, b"row " * 5000]
    wire, sequence = b"", 250
    for payload in payloads:
        packets, sequence = wrap(payload, sequence, compress)
        wire += packets
    assert sequence == (250 + len(payloads)) & 0xFF          # one packet each, wrapping at 256
    pieces, taken, last = unwrap(wire, decompress)
    assert pieces == payloads and taken == len(wire) and last == 253
    # the repetitive ones travel compressed, much smaller
    big, _ = wrap(b"row " * 5000, 0, compress)
    assert header(big)[2] == 20000 and len(big) < 1000


def test_small_and_incompressible_payloads_travel_as_they_are():
    compress, decompress = codec("zlib")
    small, _ = wrap(b"x" * 49, 7, compress)          # under MIN_COMPRESS_LENGTH
    assert header(small) == (49, 7, 0) and small[7:] == b"x" * 49
    noise = bytes((i * 7919 + 13) * 104729 % 251 for i in range(300))
    noise = zlib.compress(noise)                      # compressed data does not shrink again
    raw, _ = wrap(noise, 0, compress)
    assert header(raw) == (len(noise), 0, 0) and raw[7:] == noise
    assert unwrap(small + raw, decompress)[0] == [b"x" * 49, noise]


def test_a_payload_over_16_mb_takes_two_compressed_packets():
    compress, decompress = codec("zlib")
    data = b"0123456789abcdef" * (1 << 20) + b"tail"       # 16 MiB + 4
    wire, sequence = wrap(data, 0, compress)
    first = header(wire)
    assert sequence == 2 and first[1:] == (0, 0xFFFFFF)
    assert header(wire[7 + first[0]:]) == (5, 1, 0)          # the last 5 bytes, as they are
    pieces, taken, _ = unwrap(wire, decompress)
    assert b"".join(pieces) == data and taken == len(wire)


def test_a_packet_cut_short_waits_for_the_rest():
    compress, decompress = codec("zlib")
    one, _ = wrap(b"a" * 100, 0, compress)
    two, _ = wrap(b"b" * 100, 1, compress)
    for cut in (3, 7, len(two) - 1):
        pieces, taken, last = unwrap(one + two[:cut], decompress)
        assert pieces == [b"a" * 100] and taken == len(one) and last == 0
    assert unwrap(two[:6], decompress) == ([], 0, None)


@pytest.mark.parametrize("algorithm, body, size, reason", [
    ("zlib", b"not a zlib stream at all", 100, "zlib: Error -3"),
    ("zlib", zlib.compress(b"y" * 100)[:-6], 100, "cut or longer"),
    ("zlib", zlib.compress(b"y" * 100), 90, "cut or longer"),
    ("zlib", zlib.compress(b"y" * 100), 120, "100 bytes uncompressed, the header says 120"),
    ("zlib", zlib.compress(b"y" * 100) + b"xx", 100, "2 bytes follow its zlib stream"),
    ("zstd", b"not a zstd frame, not at all", 100, "zstd: "),
    ("zstd", b"\x28\xb5\x2f\xfd garbage garbage", 100, "zstd frame holds 103 bytes"),
    ("zstd", zstandard.ZstdCompressor().compress(b"y" * 100), 80, "holds 100 bytes"),
    ("zstd", zstandard.ZstdCompressor().compress(b"y" * 100)[:-3], 100, "zstd:"),
])
def test_a_corrupt_packet_is_an_error_saying_why(algorithm, body, size, reason):
    _, decompress = codec(algorithm)
    wire = len(body).to_bytes(3, "little") + b"\x05" + size.to_bytes(3, "little") + body
    with pytest.raises(WireCompressionError, match="compressed packet 5") as raised:
        unwrap(wire, decompress)
    assert reason in str(raised.value)


def test_the_channel_reads_packets_split_and_packed_together():
    """Three ordinary packets in one compressed packet, a fourth split over
    three compressed packets (the way a server writes an event larger than
    its buffer), taken by exact reads and in bulk."""
    compress, _ = codec("zlib")
    ordinary = [packet(b"\x00" + bytes([i]) * 60, i) for i in range(3)]
    big = packet(b"\x00" + b"event " * 3000, 3)
    stream = b"".join(ordinary) + big
    cuts = [0, sum(map(len, ordinary)) + 10, sum(map(len, ordinary)) + 5000, len(stream)]
    wire, sequence = b"", 1
    for start, stop in zip(cuts, cuts[1:]):
        packets, sequence = wrap(stream[start:stop], sequence, compress)
        wire += packets
    ours, theirs = socket.socketpair()
    try:
        channel = CompressedChannel(ours, "zlib")
        theirs.sendall(wire)
        assert channel.peek(4) == ordinary[0][:4]
        assert channel.read(len(ordinary[0])) == ordinary[0]
        assert channel.read(4) == ordinary[1][:4]
        rest = channel.receive()
        while len(rest) < len(stream) - len(ordinary[0]) - 4:
            rest += channel.receive()
        assert rest == stream[len(ordinary[0]) + 4:]
        assert channel.sequence == 4 and channel.received == len(wire)   # follows the server's
        theirs.close()
        assert channel.receive() == b""
        with pytest.raises(EOFError):
            channel.read(1)
    finally:
        ours.close()
        theirs.close()


def test_a_command_restarts_the_sequence():
    ours, theirs = socket.socketpair()
    try:
        channel = CompressedChannel(ours, "zlib")
        channel.sequence = 9                  # after the server's packets of the last command
        assert header(channel.pack(b"\x03SELECT 1"))[1] == 9
        channel.start_command()
        assert header(channel.pack(b"\x03SELECT 2"))[1] == 0
        assert header(channel.pack(b"more of the same command"))[1] == 1
    finally:
        ours.close()
        theirs.close()


# -- what the options ask for ---------------------------------------------------------------

def test_what_the_options_ask_for():
    assert Compression.from_options() is None
    assert Compression.from_options(algorithms="uncompressed") is None
    assert Compression.from_options(compress=True) == Compression(("zlib",), True, 3)
    assert Compression.from_options(algorithms="ZSTD, zlib", zstd_level=7) == \
        Compression(("zlib", "zstd"), False, 7)
    assert Compression.from_options(algorithms="zstd,uncompressed") == \
        Compression(("zstd",), True, 3)
    # --compress adds zlib to what the list allows, as mysqlbinlog applies them
    assert Compression.from_options(True, "zstd") == Compression(("zlib", "zstd"), False, 3)
    for wrong in ("lz4", "", "zlib,,zstd"):
        with pytest.raises(ValueError, match="--compression-algorithms"):
            Compression.from_options(algorithms=wrong)
    for level in (0, 23):
        with pytest.raises(ValueError, match="--zstd-compression-level"):
            Compression.from_options(algorithms="zstd", zstd_level=level)


def test_what_is_agreed_with_the_server():
    both = Compression(("zlib", "zstd"), True)
    assert both.agree(CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION_ALGORITHM) == \
        CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION_ALGORITHM        # and zlib is used
    assert both.agree(CLIENT_COMPRESS) == CLIENT_COMPRESS          # MariaDB
    assert Compression(("zstd",), True).agree(CLIENT_COMPRESS) == 0
    with pytest.raises(WireCompressionError, match="offers none of zstd"):
        Compression(("zstd",), False).agree(CLIENT_COMPRESS)


PARSER = build_parser()


def _args(*argv):
    words, files = client_syntax(PARSER, ["dump", "--no-defaults", *argv], io.StringIO())
    args = PARSER.parse_args(words)
    args.option_files = files
    return args


def test_the_command_line_options():
    address = server_address(_args("-R", "-C", "--compression-algorithms=zstd,uncompressed",
                                   "--zstd-compression-level=9"), for_schema=False)
    assert (address.compress, address.compression_algorithms, address.zstd_compression_level) \
        == (True, "zstd,uncompressed", 9)
    assert server_address(_args("-R", "--compress", "--skip-compress"),
                          for_schema=False).compress is False
    assert server_address(_args("-R", "--compress=0"), for_schema=False).compress is False
    assert server_address(_args("-R"), for_schema=False).compress is None
    # without -R: ignored, as mysqlbinlog ignores it (dump warns)
    assert server_address(_args("-C", "binlog.000001")) is None


def test_option_files_and_the_command_line(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\ncompress\ncompression_algorithms=zstd,zlib\n"
                   "zstd-compression-level=5\n")
    settings = connection_settings(ServerAddress(host="h", defaults_file=str(cnf)))
    assert settings["_binlake_compression"] == Compression(("zlib", "zstd"), False, 5)
    settings = connection_settings(ServerAddress(host="h", defaults_file=str(cnf), compress=False,
                                                 compression_algorithms="uncompressed"))
    assert "_binlake_compression" not in settings     # the command line wins
    cnf.write_text("[client]\ncompress\n[client-mariadb]\nskip-compress\n")
    assert "_binlake_compression" not in connection_settings(
        ServerAddress(host="h", defaults_file=str(cnf)))
    cnf.write_text("[client]\ncompress=1\n")
    assert connection_settings(ServerAddress(host="h", defaults_file=str(cnf)))[
        "_binlake_compression"] == Compression(("zlib",), True, 3)
    cnf.write_text("[client]\nzstd-compression-level=x\n")
    with pytest.raises(ValueError, match="--zstd-compression-level x"):
        connection_settings(ServerAddress(host="h", defaults_file=str(cnf)))


def test_zstd_needs_its_package(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "zstandard" else real(name, *a))
    with pytest.raises(SchemaSourceError, match=r"binlake\[zstd\]"):
        connection_settings(ServerAddress(host="h", compression_algorithms="zstd"))
    assert connection_settings(ServerAddress(host="h", compress=True))["_binlake_compression"]


# -- a scripted server ------------------------------------------------------------------

PROTOCOL_41, SECURE_CONNECTION, PLUGIN_AUTH, CONNECT_ATTRS = 1 << 9, 1 << 15, 1 << 19, 1 << 20
LENENC_CLIENT_DATA = 1 << 21
BASE_CAPABILITIES = PROTOCOL_41 | SECURE_CONNECTION | PLUGIN_AUTH | CONNECT_ATTRS \
    | LENENC_CLIENT_DATA
OK = b"\x00\x00\x00\x02\x00\x00\x00"   # OK, autocommit on


def _lenenc(data: bytes) -> bytes:
    return bytes([len(data)]) + data


def result_set(sequence: int, rows: list[str], flush_at: int | None = None) -> list[bytes]:
    """A one-column text result set, as ordinary packets from `sequence` on;
    `flush_at`: the packets after that many number on from 100, as a server
    that flushed mid-result and synced to its compressed sequence id would."""
    column = (_lenenc(b"def") + _lenenc(b"") + _lenenc(b"") + _lenenc(b"") + _lenenc(b"v")
              + _lenenc(b"") + b"\x0c" + struct.pack("<HIBHB", 45, 1024, 253, 0, 0) + b"\0\0")
    eof = b"\xfe\x00\x00\x02\x00"
    payloads = [b"\x01", column, eof] + [_lenenc(row.encode()) for row in rows] + [eof]
    out = []
    for index, payload in enumerate(payloads):
        if flush_at is not None and index >= flush_at:
            sequence = 100 + index - flush_at if index == flush_at else sequence
        out.append(packet(payload, sequence & 0xFF))
        sequence += 1
    return out


class ScriptedServer(threading.Thread):
    """Greets with `capabilities`, takes any login, then answers each
    command through `answer(command) -> [ordinary packets]` compressed with
    `algorithm` (`chunk`: bytes per compressed packet; `corrupt`: the command
    whose answer is a compressed packet that does not decompress)."""

    def __init__(self, capabilities: int, algorithm: str | None = "zlib", chunk: int = 10 ** 9,
                 corrupt: bytes | None = None):
        super().__init__(daemon=True)
        self.capabilities, self.algorithm, self.chunk, self.corrupt = (
            capabilities | BASE_CAPABILITIES, algorithm, chunk, corrupt)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(10)
        self.port = self.listener.getsockname()[1]
        self.response = b""
        self.commands: list[bytes] = []
        self.failure: BaseException | None = None

    def answer(self, command: bytes) -> list[bytes]:
        if command.startswith(b"\x03SELECT"):
            return result_set(1, [f"row {i} " + "x" * 40 for i in range(200)], flush_at=40)
        return [packet(OK, 1)]

    def run(self):
        try:
            sock, _ = self.listener.accept()
            with sock:
                sock.settimeout(10)
                self._serve(sock)
        except BaseException as exc:  # reported by the test
            self.failure = exc
        finally:
            self.listener.close()

    def _serve(self, sock):
        caps = self.capabilities
        greeting = (b"\x0a" + b"8.0.99-scripted\0" + struct.pack("<I", 7) + b"12345678\0"
                    + struct.pack("<HBHHB", caps & 0xFFFF, 45, 2, caps >> 16, 21) + b"\0" * 10
                    + b"123456789012\0" + b"mysql_native_password\0")
        sock.sendall(packet(greeting, 0))
        self.response = self._plain_packet(sock)
        sock.sendall(packet(OK, 2))
        flags = struct.unpack_from("<I", self.response)[0]
        algorithm = self.algorithm if flags & (CLIENT_COMPRESS
                                               | CLIENT_ZSTD_COMPRESSION_ALGORITHM) else None
        compress, decompress = codec(algorithm) if algorithm else (None, None)
        raw = b""
        while True:
            data = sock.recv(1 << 16)
            if not data:
                return
            raw += data
            if compress is None:
                while len(raw) >= 4 and len(raw) >= 4 + int.from_bytes(raw[:3], "little"):
                    length = int.from_bytes(raw[:3], "little")
                    self._command(sock, raw[4:4 + length], None, 0)
                    raw = raw[4 + length:]
                continue
            pieces, taken, sequence = unwrap(raw, decompress)
            raw = raw[taken:]
            plain = b"".join(pieces)
            while plain:
                length = int.from_bytes(plain[:3], "little")
                self._command(sock, plain[4:4 + length], compress, sequence + 1)
                plain = plain[4 + length:]

    def _command(self, sock, command: bytes, compress, sequence: int):
        self.commands.append(command)
        if command[:1] == b"\x01":    # COM_QUIT
            return
        stream = b"".join(self.answer(command))
        if compress is None:
            sock.sendall(stream)
            return
        if command == self.corrupt:
            body = b"\x78\x9c this is not deflate"
            sock.sendall(len(body).to_bytes(3, "little") + bytes([sequence])
                         + len(stream).to_bytes(3, "little") + body)
            return
        for start in range(0, len(stream), self.chunk):
            packets, sequence = wrap(stream[start:start + self.chunk], sequence, compress)
            sock.sendall(packets)

    @staticmethod
    def _plain_packet(sock) -> bytes:
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:3], "little"):
            more = sock.recv(4096)
            if not more:
                raise EOFError("the client left during the handshake")
            data += more
        return data[4:]


def _connect(server: ScriptedServer, **options):
    server.start()
    return connect(ServerAddress(host="127.0.0.1", port=server.port, user="root", password="",
                                 **options))


def _finish(server: ScriptedServer) -> None:
    server.join(10)
    assert not server.is_alive() and server.failure is None, server.failure


@pytest.mark.parametrize("algorithm, options, flag", [
    ("zlib", {"compress": True}, CLIENT_COMPRESS),
    ("zstd", {"compression_algorithms": "zstd", "zstd_compression_level": 19},
     CLIENT_ZSTD_COMPRESSION_ALGORITHM),
])
def test_pymysql_speaks_compressed(algorithm, options, flag):
    server = ScriptedServer(CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION_ALGORITHM, algorithm,
                            chunk=333)   # packets split over compressed packets and packed together
    connection = _connect(server, **options)
    try:
        flags = struct.unpack_from("<I", server.response)[0]
        assert flags & (CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION_ALGORITHM) == flag
        # zstd's level ends the handshake response, after the connection attributes
        pid = str(os.getpid()).encode()
        assert server.response.endswith(pid + b"\x13" if algorithm == "zstd" else pid)
        assert connection.channel.algorithm == algorithm
        with connection.cursor() as cursor:
            # the packets after the server's mid-result flush are numbered on from 100
            cursor.execute("SELECT v FROM t")
            rows = cursor.fetchall()
        assert [row[0] for row in rows] == [f"row {i} " + "x" * 40 for i in range(200)]
        assert connection.channel.received < sum(len(c) for c in rows[0]) * 200
    finally:
        connection.close()
    _finish(server)
    assert server.commands[0] == b"\x03SET NAMES utf8mb4" and server.commands[-1] == b"\x01"


def test_both_offered_and_agreed_means_zlib():
    server = ScriptedServer(CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION_ALGORITHM, "zlib")
    connection = _connect(server, compression_algorithms="zstd,zlib")
    try:
        flags = struct.unpack_from("<I", server.response)[0]
        assert flags & CLIENT_COMPRESS and flags & CLIENT_ZSTD_COMPRESSION_ALGORITHM
        assert server.response.endswith(str(os.getpid()).encode() + b"\x03")  # the level too
        assert connection.channel.algorithm == "zlib"
    finally:
        connection.close()
    _finish(server)


def test_a_server_without_the_algorithm():
    # allowed uncompressed: PyMySQL's plain packets
    server = ScriptedServer(CLIENT_COMPRESS, None)
    connection = _connect(server, compression_algorithms="zstd,uncompressed")
    try:
        assert connection.channel is None
        assert not struct.unpack_from("<I", server.response)[0] & (
            CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION_ALGORITHM)
        connection.ping()
    finally:
        connection.close()
    _finish(server)
    # not allowed: refused as the C client refuses it
    server = ScriptedServer(CLIENT_COMPRESS, None)
    with pytest.raises(SchemaSourceError, match=rf"cannot connect to 127.0.0.1:{server.port}: "
                       "Connection failed due to wrongly configured compression algorithm: "
                       "the server offers none of zstd"):
        _connect(server, compression_algorithms="zstd")
    server.join(10)


def test_a_corrupt_packet_from_the_server_is_a_clean_error():
    server = ScriptedServer(CLIENT_COMPRESS, corrupt=b"\x03SET NAMES utf8mb4")
    with pytest.raises(SchemaSourceError, match=rf"cannot connect to 127.0.0.1:{server.port}: "
                       "a corrupt compressed packet from the server: compressed packet 1 .*zlib"):
        _connect(server, compress=True)
    server.join(10)


def _replica(wire: bytes, close: bool = True):
    ours, theirs = socket.socketpair()
    replica = ReplicaConnection({"host": "db1", "port": 3306}, server_id=9, heartbeat=None,
                                read_timeout=5)
    replica._sock, replica._channel = ours, CompressedChannel(ours, "zlib")
    theirs.sendall(wire)
    if close:
        theirs.close()
    return replica, (ours, theirs)


def test_the_replica_reads_the_dump_through_the_channel():
    compress, _ = codec("zlib")
    events = [b"\x00" + bytes([i]) * 19 + b"event body " * i for i in range(1, 40)]
    stream = b"".join(packet(event, i) for i, event in enumerate(events, 1)) + packet(
        b"\xfe\x00\x00\x02\x00", 40)
    wire = b""
    for start in range(0, len(stream), 700):
        packets, _ = wrap(stream[start:start + 700], 0, compress)
        wire += packets
    replica, sockets = _replica(wire)
    try:
        got = []
        while (event := replica.next_event()) is not None:
            got.append(event)
        assert got == [event[1:] for event in events]
    finally:
        for sock in sockets:
            sock.close()


def test_the_replica_names_the_server_and_the_fault():
    compress, _ = codec("zlib")
    good, sequence = wrap(packet(b"\x00" + b"e" * 80, 1), 1, compress)
    body = zlib.compress(b"z" * 200)[:-4] + b"\0\0\0\0"       # a wrong checksum
    bad = len(body).to_bytes(3, "little") + bytes([sequence]) + (200).to_bytes(3, "little") + body
    replica, sockets = _replica(good + bad)
    try:
        assert replica.next_event() == b"e" * 80
        with pytest.raises(ReplicationError) as raised:
            replica.next_event()
        assert str(raised.value).startswith("db1:3306: ")
        assert "a corrupt compressed packet from the server: compressed packet 2" in str(raised.value)
        assert "incorrect data check" in str(raised.value) and not raised.value.retryable
    finally:
        for sock in sockets:
            sock.close()
    # the server gone in the middle of a compressed packet: a lost connection, retried
    replica, sockets = _replica(good[:10])
    try:
        with pytest.raises(ReplicationError, match="the server closed the connection") as raised:
            replica.next_event()
        assert raised.value.retryable
    finally:
        for sock in sockets:
            sock.close()


def test_connections_that_take_tls_if_offered_share_one_context_without_the_ca_store():
    """PyMySQL's PREFERRED mode verifies nothing, yet loads the system's CA
    store anew for each connection; binlake's connections share a context
    that verifies nothing either."""
    pytest.importorskip("pymysql")
    import ssl

    from binlake.connection.compression import compressing_connection_class, connection_class
    from binlake.connection.settings import preferred_tls_context
    shared = preferred_tls_context()
    assert preferred_tls_context() is shared
    for make in (connection_class(), functools.partial(compressing_connection_class(),
                                                      compression=Compression())):
        connection = make(host="127.0.0.1", port=9, defer_connect=True, preferred_tls=shared)
        assert connection.ctx is shared
        assert connection.ssl and not connection._ssl_required  # TLS if the server offers it
    assert shared.verify_mode == ssl.CERT_NONE and not shared.check_hostname
    assert shared.cert_store_stats()["x509"] == 0
    required = connection_class()(host="127.0.0.1", port=9, defer_connect=True,
                                  preferred_tls=shared, ssl={"verify_mode": "required"})
    assert required.ctx is not shared and required._ssl_required  # asked for: PyMySQL's own
