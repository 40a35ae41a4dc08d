"""The replica protocol: a live server's binlog, received as a replica receives it.

Strategy: PyMySQL makes the connection (TCP or Unix socket, TLS, every
authentication plugin it knows, caching_sha2_password among them); this
module then speaks the replication commands on that connection (through
PyMySQL's `_execute_command`, `_read_ok_packet`, `_sock` and `_force_close`,
which are not its public API: pyproject.toml pins the versions that have
every one binlake uses, >=1.2.1,<1.3, and tests/live/test_protocol.py
names them all) and reads the dump's packets itself, straight from the socket into one buffer: each packet
is `00` + one event's bytes, `FE` (end of the last binlog, when the dump was
asked not to wait) or `FF` (the server's error). Nothing here decodes an
event: `binlake.live.source` places the events in the server's files, and the
reader that reads files reads them.

The commands and session variables, as the servers define them:
- COM_REGISTER_SLAVE (0x15): server_id, report host/user/password, port,
  rank, master id (`register_slave` in sql/repl_failsafe.cc);
- COM_BINLOG_DUMP (0x12): position (4 bytes), flags, server_id, file name;
  MariaDB's flag BINLOG_SEND_ANNOTATE_ROWS_EVENT asks for the annotate events
  its files hold; BINLOG_DUMP_NON_BLOCK ends the dump with EOF at the end of
  the last binlog instead of waiting;
- COM_BINLOG_DUMP_GTID (0x1e, MySQL 5.6+): flags, server_id, file name,
  position (8 bytes), the GTID set to leave out, encoded as
  `Gtid_set::encode` (and tagged GTIDs as MySQL 8.3+ encodes them);
- MariaDB's GTID start: `@slave_connect_state`, `@slave_gtid_strict_mode`,
  `@slave_gtid_ignore_duplicates`, then COM_BINLOG_DUMP with no file name;
- `@master_binlog_checksum` (the replica understands the checksums the files
  hold, so events come as stored), `@mariadb_slave_capability` = 4 (GTID
  events as stored, not rewritten for old replicas), `@master_heartbeat_period`
  (nanoseconds).

With -C/--compression-algorithms the connection is compressed
(`binlake.connection.compression`): PyMySQL's part goes through its compressing
connection, and the dump's packets come from the same channel, unwrapped
in bulk into the same buffer.

Rule: every problem is a ReplicationError with one line: the server, the
binlog and position, and the server's own message. Whether it is worth a
reconnect is `ReplicationError.retryable`.
"""

from __future__ import annotations

import os
import socket
import struct
import uuid as uuid_module

from binlake.errors import BinlogError
from binlake.gtids import GtidSet, merged_intervals
from binlake.connection.compression import WireCompressionError

COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
COM_BINLOG_DUMP_GTID = 0x1E

#: COM_BINLOG_DUMP flags
BINLOG_DUMP_NON_BLOCK = 0x01
BINLOG_SEND_ANNOTATE_ROWS_EVENT = 0x02          # MariaDB
#: COM_BINLOG_DUMP_GTID flags (MySQL)
BINLOG_THROUGH_POSITION = 0x02
BINLOG_THROUGH_GTID = 0x04

#: @mariadb_slave_capability: the replica takes every event as stored (GTID events included)
MARIA_SLAVE_CAPABILITY_MINE = 4

#: A packet of this length continues in the next one.
MAX_PACKET_LEN = 0xFFFFFF
#: Seconds the handshake and each set-up query may wait for the server when
#: no read timeout is given (PyMySQL's default is to wait for ever).
SETUP_TIMEOUT = 30.0

#: Client error codes of a lost connection (errmsg.h) and server codes that
#: end a connection which a new one may continue: killed, shutting down,
#: network errors, lock timeouts around a restart.
_RETRYABLE_CODES = {
    2002, 2003, 2006, 2013, 2055,            # CR_CONNECTION_ERROR .. CR_SERVER_LOST_EXTENDED
    1040,                                    # ER_CON_COUNT_ERROR
    1053,                                    # ER_SERVER_SHUTDOWN
    1152, 1158, 1159, 1160, 1161,            # ER_ABORTING_CONNECTION, ER_NET_*
    1317,                                    # ER_QUERY_INTERRUPTED
    1927,                                    # ER_CONNECTION_KILLED (MariaDB)
    3169,                                    # ER_SESSION_WAS_KILLED (MySQL)
}


class ReplicationError(BinlogError):
    """The server refused or ended the dump, or could not be reached."""

    reason = "replication from the server failed"

    def __init__(self, where: str, offset: int, detail: str, *, code: int | None = None,
                 retryable: bool = False):
        super().__init__(where, offset, detail)
        self.code = code
        self.retryable = retryable


# -- the commands' bytes ------------------------------------------------------------

def _short_string(value: str) -> bytes:
    data = value.encode("utf-8")[:255]
    return bytes([len(data)]) + data


def register_slave_packet(server_id: int, report_host: str = "", report_user: str = "",
                          report_password: str = "", report_port: int = 0) -> bytes:
    """COM_REGISTER_SLAVE's arguments (what SHOW SLAVE HOSTS lists)."""
    return (struct.pack("<I", server_id) + _short_string(report_host)
            + _short_string(report_user) + _short_string(report_password)
            + struct.pack("<HII", report_port & 0xFFFF, 0, 0))


def binlog_dump_packet(file: str, position: int, server_id: int, flags: int) -> bytes:
    """COM_BINLOG_DUMP's arguments; the position field is 4 bytes (the server
    reads a binlog of up to 4 GB this way, as every replica before 8.0 did)."""
    if not 0 <= position <= 0xFFFFFFFF:
        raise ReplicationError(file, position, "COM_BINLOG_DUMP takes a 4-byte position: a "
                               "binlog cannot be asked for past 4 GiB by position (start by "
                               "GTID beyond it)")
    return struct.pack("<IHI", position, flags, server_id) + file.encode("utf-8")


def binlog_dump_gtid_packet(file: str, position: int, server_id: int, flags: int,
                            gtid_set: bytes) -> bytes:
    """COM_BINLOG_DUMP_GTID's arguments (MySQL 5.6+): the GTID set is the one
    `encode_gtid_set` makes; the server sends every transaction outside it."""
    name = file.encode("utf-8")
    return (struct.pack("<HII", flags | BINLOG_THROUGH_GTID, server_id, len(name)) + name
            + struct.pack("<QI", position, len(gtid_set)) + gtid_set)


def encode_gtid_set(text: str) -> bytes:
    """A MySQL GTID set (`uuid:1-5:7,uuid2:tag:3`) as `Gtid_set::encode`
    writes it: the layout of PREVIOUS_GTIDS_LOG_EVENT's body, which the
    server's COM_BINLOG_DUMP_GTID reads (events/gtid.py decodes it; the test
    encodes every set the corpus's MySQL servers wrote and compares bytes).

    SIDs in (uuid, tag) order; per SID its 16 bytes, [the tag,] the interval
    count, each interval as [first, last + 1) in 8-byte numbers. Untagged
    sets start with the SID count (8 bytes); a set with any tag (MySQL 8.3+)
    uses the tagged format: the count word is `1 | count << 8 | 1 << 56`
    (the format in its first and last byte) and every SID has a tag, empty
    for untagged ones, as a varlen length then its bytes."""
    gtids = GtidSet.parse(text) if text.strip() else GtidSet()
    entries = sorted(((uuid_module.UUID(sid).bytes, tag or "", merged_intervals(intervals))
                      for (sid, tag), intervals in gtids.intervals.items()),
                     key=lambda entry: (entry[0], entry[1]))
    tagged = any(tag for _, tag, _ in entries)
    out = bytearray()
    count = len(entries)
    out += struct.pack("<Q", GTID_FORMAT_TAGGED | count << 8 | GTID_FORMAT_TAGGED << 56
                       if tagged else count)
    for sid, tag, intervals in entries:
        out += sid
        if tagged:
            out += _varlen(len(tag)) + tag.encode("ascii")
        out += struct.pack("<Q", len(intervals))
        for first, last in intervals:
            out += struct.pack("<QQ", first, last + 1)
    return bytes(out)


#: `Gtid_format::tagged` in the count word of an encoded GTID set
GTID_FORMAT_TAGGED = 1


def _varlen(n: int) -> bytes:
    """An unsigned varlen of MySQL's serialization library (the inverse of
    events/gtid.py `read_varlen_uint`): the first byte's trailing one bits
    count the extra bytes. A tag has at most 32 characters: one byte."""
    if n < 1 << 7:
        return bytes([n << 1])
    return ((n << 2) | 1).to_bytes(2, "little")


# -- the connection -----------------------------------------------------------------

class ReplicaConnection:
    """One dump connection: connect, register, request, then `next_event()`.

    `settings`: pymysql.connect keywords (schema_source.connection_settings).
    `read_timeout`: seconds without a byte (events or heartbeats) before the
    connection counts as stalled."""

    def __init__(self, settings: dict, *, server_id: int, heartbeat: float | None,
                 read_timeout: float | None, report_host: str = ""):
        self.settings = dict(settings)
        self.server_id = server_id
        self.heartbeat = heartbeat
        self.read_timeout = read_timeout
        self.report_host = report_host
        self.where = (settings.get("unix_socket")
                      or f"{settings.get('host')}:{settings.get('port')}")
        self.connection = None
        self.is_mariadb = False
        self.checksums = False
        self.server_version = ""
        self._sock = None
        self._channel = None         # a CompressedChannel, when compressed
        self._buf = b""              # received, from `_at` on not yet parsed
        self._at = 0
        self._chunk = bytearray(1 << 20)

    # Setting up ----------------------------------------------------------------
    def connect(self) -> None:
        try:
            import pymysql
        except ImportError:
            raise ReplicationError(self.where, 0, "reading a live server needs pymysql: "
                                   "pip install 'binlake[server]'") from None
        from binlake.connection.settings import (SchemaSourceError, preferred_tls_context,
                                                 require_tls)
        from binlake.connection.compression import connect
        settings = dict(self.settings)
        requirement = settings.pop("_binlake_tls", None)
        compression = settings.pop("_binlake_compression", None)
        # The handshake and the set-up queries wait for the server no longer
        # than the dump would (a server that accepts and then says nothing
        # must not hang a run for ever); the dump sets its own below.
        for timeout in ("read_timeout", "write_timeout"):
            settings.setdefault(timeout, self.read_timeout or SETUP_TIMEOUT)
        try:
            # Made first, connected after: `close()` from another thread can
            # then wake a handshake that waits.
            self.connection = connect({**settings, "defer_connect": True}, compression,
                                      preferred_tls_context())
            self.connection.connect()
            require_tls(self.connection, requirement)
        except pymysql.err.MySQLError as exc:
            raise self._error(exc, "cannot connect") from None
        except SchemaSourceError as exc:
            self.close()
            raise ReplicationError(self.where, 0, str(exc)) from None
        except OSError as exc:  # TLS set-up and the like
            raise ReplicationError(self.where, 0, f"cannot connect: {exc}", retryable=True) from None
        self.server_version = self.connection.get_server_info() or ""
        self.is_mariadb = "mariadb" in self.server_version.lower()

    def query(self, sql: str, args=None) -> list:
        import pymysql
        try:
            with self.connection.cursor() as cursor:
                cursor.execute(sql, args)
                return list(cursor.fetchall())
        except pymysql.err.MySQLError as exc:
            raise self._error(exc, sql.split()[0]) from None

    def variable(self, name: str):
        rows = self.query(f"SELECT @@GLOBAL.{name}")
        return rows[0][0] if rows else None

    def prepare(self, *, mariadb_gtid: str | None = None, strict: bool = False) -> None:
        """The session variables a replica sets before asking for the binlog."""
        try:
            self.checksums = str(self.variable("binlog_checksum")).upper() == "CRC32"
        except ReplicationError:  # before MySQL 5.6 / MariaDB 5.3: no checksums to negotiate
            self.checksums = None
        if self.checksums is not None:
            self.query("SET @master_binlog_checksum = @@GLOBAL.binlog_checksum")
            # MySQL 8.0.26+ reads the new name; a user variable harms no server.
            self.query("SET @source_binlog_checksum = @@GLOBAL.binlog_checksum")
        if self.is_mariadb:
            self.query("SET @mariadb_slave_capability = %s", (MARIA_SLAVE_CAPABILITY_MINE,))
        if self.heartbeat:
            nanoseconds = int(self.heartbeat * 1_000_000_000)
            self.query(f"SET @master_heartbeat_period = {nanoseconds}")
            self.query(f"SET @source_heartbeat_period = {nanoseconds}")
        if mariadb_gtid is not None:
            self.query("SET @slave_connect_state = %s", (mariadb_gtid,))
            self.query(f"SET @slave_gtid_strict_mode = {1 if strict else 0}")
            self.query("SET @slave_gtid_ignore_duplicates = 0")

    def identity(self) -> dict:
        """{"server_id", "server_uuid"}: who the server is (MariaDB has no
        UUID: None)."""
        found = {"server_id": int(self.variable("server_id")), "server_uuid": None}
        try:
            found["server_uuid"] = str(self.variable("server_uuid"))
        except ReplicationError:  # MariaDB
            pass
        return found

    def registered_replicas(self) -> list[tuple] | None:
        """(server_id, host, port) of the replicas the server knows: SHOW
        SLAVE HOSTS (MariaDB, MySQL before 8.4), else SHOW REPLICAS (MySQL 8.4+);
        None if neither is allowed (no privilege to check with)."""
        for statement in ("SHOW SLAVE HOSTS", "SHOW REPLICAS"):
            try:
                rows = self.query(statement)
            except ReplicationError:
                continue
            return [(int(row[0]), str(row[1]), int(row[2])) for row in rows]
        return None

    def dump_threads(self) -> int | None:
        """The binlog dumps the server runs for its readers that this account
        sees (SHOW PROCESSLIST's "Binlog Dump" commands: all of them with the
        PROCESS privilege, else its own), None where it may not ask."""
        try:
            rows = self.query("SHOW PROCESSLIST")
        except ReplicationError:
            return None
        return sum(1 for row in rows if str(row[4]).startswith("Binlog Dump"))

    def register(self) -> None:
        self._command(COM_REGISTER_SLAVE, register_slave_packet(
            self.server_id, self.report_host, report_port=os.getpid()))
        try:
            self.connection._read_ok_packet()
        except Exception as exc:  # pymysql raises its errors from the packet
            raise self._error(exc, "COM_REGISTER_SLAVE") from None

    def request(self, file: str, position: int, *, non_block: bool,
                mysql_gtid_set: bytes | None = None) -> None:
        """Ask for the binlog from `file`:`position` (or, with `mysql_gtid_set`,
        every transaction outside that set; or MariaDB's @slave_connect_state
        when `file` is empty)."""
        flags = BINLOG_DUMP_NON_BLOCK if non_block else 0
        if mysql_gtid_set is not None:
            packet = binlog_dump_gtid_packet(file, position, self.server_id, flags, mysql_gtid_set)
            self._command(COM_BINLOG_DUMP_GTID, packet)
        else:
            if self.is_mariadb:
                flags |= BINLOG_SEND_ANNOTATE_ROWS_EVENT
            self._command(COM_BINLOG_DUMP, binlog_dump_packet(file, position, self.server_id, flags))
        # From here on the packets are read from the socket (or the compressed
        # channel on it), not through pymysql.
        self._sock = self.connection._sock
        self._channel = getattr(self.connection, "channel", None)
        self._sock.settimeout(self.read_timeout)
        self._buf = b""
        self._at = 0

    def _command(self, command: int, payload: bytes) -> None:
        import pymysql
        try:
            self.connection._execute_command(command, payload)
        except (pymysql.err.MySQLError, OSError) as exc:
            raise self._error(exc, "sending the command") from None

    # Reading -------------------------------------------------------------------
    def next_event(self) -> bytes | None:
        """The next event's bytes, or None at the end (EOF after a non-blocking dump)."""
        payload = self._packet()
        first = payload[0] if payload else 0xFE
        if first == 0:
            return payload[1:]
        if first == 0xFE and len(payload) < 9:
            return None
        if first == 0xFF:
            raise self._server_error(bytes(payload))
        raise ReplicationError(self.where, 0, f"unexpected packet of {len(payload)} bytes "
                               f"starting {bytes(payload[:8]).hex(' ')} in the binlog dump")

    def take_run(self, expected: int, limit: int = 1 << 20):
        """(bytes, count, last type, last timestamp) of the ordinary events
        already received whose first is at file offset `expected` (see
        `ordinary_run`), or None when the next packet is not one or is not here."""
        if len(self._buf) - self._at < 4:
            return None
        found = _run_splitter()(self._buf, self._at, expected, limit)
        if found is None:
            return None
        self._at = found[0]
        return found[1:]

    def buffered(self) -> bool:
        """Whether a whole packet is already here (the next read will not wait)."""
        available = len(self._buf) - self._at
        if available < 4:
            return False
        length = int.from_bytes(self._buf[self._at:self._at + 3], "little")
        return available >= 4 + length

    def _packet(self):
        parts = None
        while True:
            header = self._take(4)
            length = header[0] | header[1] << 8 | header[2] << 16
            data = self._take(length)
            if length < MAX_PACKET_LEN and parts is None:
                return data
            parts = parts or []
            parts.append(data)
            if length < MAX_PACKET_LEN:
                return b"".join(parts)

    def _take(self, n: int) -> bytes:
        available = len(self._buf) - self._at
        if available < n:
            # What is missing is received whole, then joined once: linear in
            # a large packet (appending each piece would copy it again and
            # again). The buffer stays `bytes`: the native run splitter reads
            # it in place.
            parts, have = [self._buf[self._at:]], available
            while have < n:
                data = self._received()
                parts.append(data)
                have += len(data)
            self._buf, self._at = b"".join(parts), 0
        at = self._at
        self._at = at + n
        return self._buf[at:at + n]

    def _received(self) -> bytes:
        """The next bytes from the socket (unwrapped, when compressed)."""
        try:
            if self._channel is not None:
                data = self._channel.receive()
                got = len(data)
            else:
                got = self._sock.recv_into(self._chunk)
                data = bytes(memoryview(self._chunk)[:got])
        except (socket.timeout, TimeoutError):
            raise ReplicationError(self.where, 0, f"no event or heartbeat for "
                                   f"{self.read_timeout:g} s: the connection has stalled",
                                   retryable=True) from None
        except WireCompressionError as exc:
            raise ReplicationError(self.where, 0, "a corrupt compressed packet from the "
                                   f"server: {exc}", code=2027) from None
        except OSError as exc:
            raise ReplicationError(self.where, 0, f"connection lost: {exc}",
                                   retryable=True) from None
        if not got:
            raise ReplicationError(self.where, 0, "the server closed the connection",
                                   code=2013, retryable=True)
        return data

    def close(self) -> None:
        """Close the connection, from any thread: shutting the socket down
        first wakes a read blocked on it (closing alone would not)."""
        connection, self.connection = self.connection, None
        sock = self._sock or getattr(connection, "_sock", None)   # (the latter: connecting)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # not connected any more
                pass
        if connection is not None:
            try:
                connection._force_close()
            except Exception:  # already gone
                pass

    # Errors --------------------------------------------------------------------
    def _server_error(self, payload: bytes) -> ReplicationError:
        code = int.from_bytes(payload[1:3], "little")
        message = payload[3:]
        if message[:1] == b"#":
            message = message[6:]
        text = message.decode("utf-8", "replace").strip()
        return ReplicationError(self.where, 0, f"the server says: {text} (error {code})",
                                code=code, retryable=code in _RETRYABLE_CODES)

    def _error(self, exc: Exception, doing: str) -> ReplicationError:
        args = getattr(exc, "args", ())
        code = args[0] if args and isinstance(args[0], int) else None
        message = str(args[1]) if len(args) >= 2 else str(exc)
        message = " ".join(message.split())
        return ReplicationError(self.where, 0, f"{doing}: {message}" + (f" (error {code})" if code else ""),
                                code=code, retryable=code in _RETRYABLE_CODES)


# -- runs of ordinary events --------------------------------------------------------

#: Events that never join a run: Python decides what each means (binlake.live.source).
_SPECIAL_TYPES = frozenset({4, 3, 15, 27, 41, 163, 161, 35, 1, 26})
_ARTIFICIAL = 0x20


def _ordinary_run(buf: bytes, at: int, expected: int, limit: int):
    """The reference of rust/src/replica.rs `ordinary_run`: the events of the
    whole packets at `buf[at]` that are real events of the file, each where
    the previous one ended (the first at `expected`, a 64-bit offset; an
    event's 32-bit log_pos is compared modulo 2^32), none of the kinds
    Python must see; (next_at, bytes, count, last type, last timestamp) or None."""
    events, size, end = [], 0, len(buf)
    last_type = last_timestamp = 0
    while at + 4 <= end and size < limit:
        length = buf[at] | buf[at + 1] << 8 | buf[at + 2] << 16
        stop = at + 4 + length
        if stop > end or length >= MAX_PACKET_LEN or length < 20 or buf[at + 4]:
            break
        timestamp, event_type, _, event_len, log_pos, flags = _EVENT_HEADER.unpack_from(buf, at + 5)
        if (event_len != length - 1 or flags & _ARTIFICIAL or event_type in _SPECIAL_TYPES
                or log_pos != (expected + event_len) & 0xFFFFFFFF):
            break
        events.append(buf[at + 5:stop])
        size += event_len
        last_type, last_timestamp = event_type, timestamp
        expected, at = expected + event_len, stop
    if not events:
        return None
    return at, b"".join(events), len(events), last_type, last_timestamp


_EVENT_HEADER = struct.Struct("<IBIIIH")


def _run_splitter():
    from binlake import core
    native = core.native()
    return native.ordinary_run if native is not None else _ordinary_run
