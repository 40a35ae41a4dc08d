"""A scripted replication server for tests without one: replica connections
(binlake.live.protocol.ReplicaConnection) whose dumps play scripts of
events cut from real binlogs, through the real packet reading; and the
helpers to cut them (events_of, artificial_rotate, heartbeat, ...)."""
from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

from binlake.live.protocol import ReplicaConnection


def events_of(path: Path) -> list[tuple[int, bytes]]:
    """(offset, bytes) of every event of a file, by its headers."""
    data, pos, out = path.read_bytes(), 4, []
    while pos < len(data):
        length = struct.unpack_from("<I", data, pos + 9)[0]
        out.append((pos, data[pos:pos + length]))
        pos += length
    return out


def with_crc(event: bytearray) -> bytes:
    struct.pack_into("<I", event, 9, len(event) + 4)
    return bytes(event) + struct.pack("<I", zlib.crc32(event))


def artificial_rotate(name: str, position: int = 4) -> bytes:
    """What the server sends first: a ROTATE with the artificial flag, log_pos 0."""
    event = bytearray(struct.pack("<IBIIIH", 0, 4, 1, 0, 0, 0x20))
    event += struct.pack("<Q", position) + name.encode()
    return with_crc(event)


def heartbeat(name: str, position: int) -> bytes:
    event = bytearray(struct.pack("<IBIIIH", 0, 27, 1, 0, position, 0)) + name.encode()
    return with_crc(event)


def resent_description(fde: bytes) -> bytes:
    """The format description as sent for a mid-file start: log_pos 0."""
    event = bytearray(fde[:-4])
    struct.pack_into("<I", event, 13, 0)
    return with_crc(event)


class RawPacket(bytes):
    """A packet whose payload is sent as it is (EOF, ERR), not as an event."""


#: What a dump that was asked not to wait sends at the end of the last binlog
EOF_PACKET = RawPacket(b"\xfe\0\0\0\0")


def packet(item: bytes) -> bytes:
    payload = bytes(item) if isinstance(item, RawPacket) else b"\0" + item
    return len(payload).to_bytes(3, "little") + b"\1" + payload


class ScriptedSocket:
    """A dump connection's socket: the script's events as packets, handed out
    in pieces of random sizes (partial packets included); an exception in the
    script is raised when the reader reaches it."""

    def __init__(self, script, rng):
        self.items, self.rng, self.pending = list(script), rng, b""

    def settimeout(self, _):
        pass

    def recv_into(self, buffer) -> int:
        while not self.pending:
            if not self.items:
                return 0                       # the server closed the connection
            item = self.items.pop(0)
            if isinstance(item, Exception):
                raise OSError(str(item))
            self.pending = packet(item)
            while self.items and not isinstance(self.items[0], Exception) \
                    and self.rng.random() < 0.8:
                self.pending += packet(self.items.pop(0))
        size = min(len(self.pending), self.rng.randint(1, 3000), len(buffer))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        return size


class ScriptedServer:
    """Connections that play one script each through the real packet reading
    (a dump request takes the next script); `variables` answer SELECT
    @@GLOBAL.name (default "ON"), `binary_logs` SHOW BINARY LOGS."""

    def __init__(self, *scripts, seed: int = 16, server_ids=None, mariadb: bool = True,
                 variables=None, binary_logs=None):
        self.scripts = list(scripts)
        self.mariadb = mariadb
        self.variables = dict(variables or {})
        self.binary_logs = list(binary_logs or [])  #: [(name, size)]
        self.requests = []
        self.gtid_sets = []     #: the MySQL GTID set of each request (None: by position)
        self.rng = random.Random(seed)
        self.server_ids = list(server_ids or [])  #: of each connection in turn (default 1)

    def connection_class(self, *args, **kwargs):
        server = self

        class Connection(ReplicaConnection):
            def connect(self):
                self.is_mariadb, self.checksums = server.mariadb, True

            def variable(self, name):
                return server.variables.get(name, "ON")

            def registered_replicas(self):
                return []

            def dump_threads(self):
                return 0

            def query(self, sql, args=None):
                if sql.strip().upper() == "SHOW BINARY LOGS":
                    return list(server.binary_logs)
                return [(None,)]  # BINLOG_GTID_POS: not known

            def identity(self):
                server_id = server.server_ids.pop(0) if server.server_ids else 1
                # (MariaDB has no server UUID; a MySQL server's is made of its id)
                return {"server_id": server_id, "server_uuid": None if server.mariadb
                        else f"00000000-0000-0000-0000-{server_id:012d}"}

            def prepare(self, **_):
                pass

            def register(self):
                pass

            def request(self, file, position, mysql_gtid_set=None, **_):
                server.requests.append((file, position))
                server.gtid_sets.append(mysql_gtid_set)
                self._sock = ScriptedSocket(server.scripts.pop(0) + [EOF_PACKET],
                                            server.rng)
                self._buf, self._at = b"", 0

            def close(self):
                pass
        return Connection(*args, **kwargs)
