"""A live server's binlogs as one more byte source: each binlog the server
sends becomes a `LiveFile`, a stream of that file's bytes at their offsets.

Strategy: the replica connection (live/protocol.py) hands over events; each real
event knows its place in the server's file (v4 header: `log_pos` is its end),
so the bytes a `LiveFile` gives are the server's file itself from the
requested position on: the magic, the format description at offset 4, then
the events where they are in the file. What the server sends that is not in
the file is recognised and kept out: the artificial rotate that names the
file (a new `LiveFile`), the format description re-sent with `log_pos` 0 on
a mid-file start (placed at offset 4 only when the file is new to us),
MariaDB's artificial GTID list at a GTID start, heartbeats. The reader that
reads files reads these streams (framing, checksums, schema history, every
sink): a `LiveFile` tells it, through `next_event_at`, where the next event
starts when the stream does not start at 4 or resumes after a gap the
server chose (a GTID start).

Rule: the stream never repeats or skips a byte. A lost connection (killed,
stalled past the read timeout, a server restart, clean or not: with
`stop_never` the end of the dump a shutting-down server sends is one too)
is replaced by a new one asking for the same file at the offset already
given (64-bit: counted from event lengths, log_pos being 32 bits), after a
bounded backoff; what the server sends again before that offset is
dropped, a gap after it is an error, and so is another server answering
(positions are one server's). A start point the server no longer has, a
refused login or a replica id another replica uses end the stream with one
ReplicationError; binlake's own registration left by a killed run is taken
over. `close()` from any thread ends the stream at once.

Resume tokens (`ResumeToken`) name the position, the server it is on and
the whole GTID state there (MariaDB's GTID list, MySQL's GTID set: the
file's Previous_gtids and each GTID since): on another server of the same
replication domain a resumed stream starts by GTID. A checkpoint adds the
schema history as of its point.
"""

from __future__ import annotations

import bisect
import os
import socket
import struct
import threading
import time
import warnings
import weakref
from collections import Counter, deque
from dataclasses import dataclass, field, replace

from binlake.constants import BINLOG_MAGIC, EventType as E, LogEventFlag
from binlake.live.protocol import ReplicaConnection, ReplicationError

_HEADER = struct.Struct("<IBIIIH")
_ARTIFICIAL = int(LogEventFlag.LOG_EVENT_ARTIFICIAL_F)
_HEARTBEATS = (int(E.HEARTBEAT_LOG_EVENT), int(E.HEARTBEAT_LOG_EVENT_V2))
_ROTATE = int(E.ROTATE_EVENT)
_FDE = int(E.FORMAT_DESCRIPTION_EVENT)
_STOP = int(E.STOP_EVENT)
_XID = int(E.XID_EVENT)
_PREVIOUS_GTIDS = int(E.PREVIOUS_GTIDS_LOG_EVENT)
#: What a server sends at the start of a file before the events asked for
_POSITIONING_EVENTS = frozenset({_FDE, int(E.GTID_LIST_EVENT), int(E.BINLOG_CHECKPOINT_EVENT),
                                 int(E.PREVIOUS_GTIDS_LOG_EVENT)})

#: Bytes of a live file kept after they were read, for BINLOG statements,
#: beyond the largest event (or run of events) the file has had
RECENT_BYTES = 16 << 20

#: mysqlbinlog's server id for --stop-never (`--stop-never-slave-server-id`'s default)
DEFAULT_SERVER_ID = 65535


@dataclass
class LiveOptions:
    """How to follow the server (the command line's -R options, the API's keywords)."""

    settings: dict                         #: pymysql.connect keywords
    file: str | None = None                #: first binlog; None: the server's first (or GTID start)
    position: int = 4
    mariadb_gtid: str | None = None        #: MariaDB GTID list to start after (@slave_connect_state)
    mysql_gtid_set: str | None = None      #: MySQL: leave out these transactions (COM_BINLOG_DUMP_GTID)
    gtid_strict_mode: bool = False
    to_last_log: bool = False              #: go on past the first file, to the end of the last
    stop_never: bool = False               #: wait for new events, reconnect, never end
    server_id: int = DEFAULT_SERVER_ID
    heartbeat: float = 5.0                 #: seconds between the server's heartbeats (0: none)
    read_timeout: float | None = None      #: default: 3 heartbeats (none without heartbeats)
    max_backoff: float = 10.0              #: seconds between reconnects, at most
    retries: int | None = None             #: reconnects in a row before giving up (None: 5, or forever with stop_never)
    on_progress: object = None             #: callable(file, position, server_time) or None
    on_reconnect: object = None            #: callable(error, attempt) or None
    on_warning: object = None              #: callable(text) or None
    #: A resume token's server: on another server the start is its GTID
    #: state (`resume_gtid`, MariaDB), never its position
    origin_server_id: int | None = None
    resume_gtid: str | None = None
    #: A commit mark fed from the bytes as they arrive (live/boundaries.py),
    #: for readers that do not group transactions themselves (`dump -R`)
    commit_mark: object = None


class ServerChanged(ReplicationError):
    """Another server answers at the address the stream was reading (a
    failover behind one address): its positions are not the ones read."""


class PositionPast4GiB(ReplicationError):
    """A MariaDB binlog read past 4 GiB, where a dump by position cannot
    ask (its 4-byte position): a stream goes on by GTID."""


class LiveSource:
    """The server's binlogs, in order, each a `LiveFile` (iterate once).

    Without `stop_never` the dump ends at the end of the last binlog
    (`to_last_log`) or of the first file; with it, it waits for new events
    and survives lost connections and server restarts."""

    def __init__(self, options: LiveOptions, connection_class=ReplicaConnection):
        self.options = options
        self._connection_class = connection_class   # tests script a server with their own
        self._connection: ReplicaConnection | None = None
        self._connecting: ReplicaConnection | None = None   # being set up
        self._file: LiveFile | None = None
        self._next_name: str | None = None      # the file the server moved on to
        self._ended = False
        self._closed = threading.Event()        # close() was called (from any thread)
        self._first_connect = True
        #: the server may skip ahead (to a mid-file start, a GTID start, past
        #: transactions a MySQL GTID set leaves out); otherwise a gap is an error
        self.positioning = True
        self.server_version = ""
        #: {"server_id", "server_uuid"} of the server first connected to
        self.server_identity: dict | None = None
        #: MariaDB's GTID state where the stream starts (a GTID list), when known
        self.start_gtid_state: str | None = None
        #: MySQL: each binlog's Previous_gtids (a GtidSet: every transaction
        #: before the file), for the files read lately
        self.previous_gtids: dict = {}
        self.last_heartbeat: tuple | None = None  # (file, position) of the last heartbeat
        self.mysql_gtid_dump = False
        self.last_event_time = 0
        #: called before the source waits for the server with nothing at
        #: hand (a follower's output flushed then: it lags no event behind)
        self.on_wait = None
        #: where transactions end, read off the bytes (`LiveOptions.commit_mark`)
        self.commits = None
        if options.commit_mark is not None:
            from binlake.live.boundaries import RawCommits
            self.commits = RawCommits(options.commit_mark)

    def anew(self) -> "LiveSource":
        """A source of the same options (a copy of them), not started yet."""
        return LiveSource(replace(self.options), self._connection_class)

    @property
    def connection_class(self):
        """What its connections are made by (a scripted server's, in tests)."""
        return self._connection_class

    @property
    def where(self) -> str:
        s = self.options.settings
        return s.get("unix_socket") or f"{s.get('host')}:{s.get('port')}"

    # Iterating files --------------------------------------------------------------
    def __iter__(self):
        try:
            self._connect(self.options.file, self.options.position)
            while not self._ended:
                name = self._next_name
                if name is None:
                    # Before the first artificial rotate arrives.
                    self._read_until_file()
                    name = self._next_name
                    if name is None:
                        return
                self._next_name = None
                first = self._file is None and name == self.options.file
                self._file = LiveFile(self, name, self.options.position if first else 4)
                yield self._file
                self._file.drain()
                if self._next_name is not None and not self.options.to_last_log \
                        and not self.options.stop_never:
                    return   # mysqlbinlog -R without -t: the requested file only
        finally:
            self.close()

    def close(self) -> None:
        """End the stream, from any thread: a read blocked on the server
        returns at once, and the iteration ends instead of reconnecting."""
        self._ended = True
        if not self._closed.is_set() and not self._first_connect:
            _OPEN_IDS[self.options.server_id] -= 1
        self._closed.set()
        for connection in (self._connection, self._connecting):
            if connection is not None:
                connection.close()
        self._connection = None

    # Connecting --------------------------------------------------------------------
    def _connect(self, file: str | None, position: int) -> None:
        o = self.options
        # Without heartbeats an idle server sends nothing: no read timeout
        # then, unless one is given (a lost connection is noticed by TCP).
        timeout = o.read_timeout or (3 * o.heartbeat + 5 if o.heartbeat else None)
        connection = self._connection_class(o.settings, server_id=o.server_id, heartbeat=o.heartbeat,
                                            read_timeout=timeout, report_host=report_host())
        self._connecting = connection          # close() wakes its set-up
        try:
            if self._closed.is_set():
                connection.close()
                return
            connection.connect()
            self.server_version = connection.server_version
            identity = connection.identity()
            if self._first_connect:
                self._check_server(connection)
                self.server_identity = identity
                file, position = self._start_on(connection, identity, file, position)
            elif identity != self.server_identity and file is not None:
                # Positions are one server's: continuing by them on another
                # (a failover behind one address) would splice two histories.
                raise ServerChanged(self.where, position, (
                    f"the server now answering is another (server id {identity['server_id']}, "
                    f"was {self.server_identity['server_id']}): its binlog positions do not "
                    "continue the ones read; stopped"), retryable=False)
            gtid = o.mariadb_gtid if (file is None and connection.is_mariadb) else None
            mysql_set = o.mysql_gtid_set if not connection.is_mariadb else None
            connection.prepare(mariadb_gtid=gtid, strict=o.gtid_strict_mode)
            if file is None and gtid is None and mysql_set is None:
                file, position = self._first_binlog(connection), 4
            if self._first_connect and connection.is_mariadb:
                self.start_gtid_state = gtid if gtid is not None else _gtid_at(
                    connection, file, position)
            connection.register()
            non_block = not o.stop_never
            if mysql_set is not None:
                from binlake.live.protocol import encode_gtid_set
                connection.request(file or "", position if file else 4, non_block=non_block,
                                   mysql_gtid_set=encode_gtid_set(mysql_set))
            elif connection.is_mariadb and file and position > 0xFFFFFFFF:
                raise PositionPast4GiB(self.where, position, (
                    f"{file} is read past 4 GiB, where MariaDB's COM_BINLOG_DUMP cannot ask "
                    "by position: go on by GTID (binlake.stream(gtid=...), or a resume token "
                    "with its GTID state)"))
            elif not connection.is_mariadb and position > 0xFFFFFFFF:
                # Past 4 GiB in one binlog: COM_BINLOG_DUMP's position has 4
                # bytes, COM_BINLOG_DUMP_GTID's 8; with no GTID to leave out
                # it goes on exactly there (MySQL needs GTID_MODE=ON for it,
                # else it says so). MariaDB has no such command: a stream
                # there goes on by GTID (`binlake.stream(gtid=...)`).
                from binlake.live.protocol import encode_gtid_set
                connection.request(file, position, non_block=non_block,
                                   mysql_gtid_set=encode_gtid_set(""))
            else:
                connection.request(file or "", position if file else 4, non_block=non_block)
        except BaseException:
            connection.close()
            if self._closed.is_set():  # closed while connecting: the end, not an error
                return None
            raise
        finally:
            self._connecting = None
        if self._closed.is_set():  # closed while connecting
            connection.close()
            return
        self._connection = connection
        if self._first_connect:
            _OPEN_IDS[o.server_id] += 1
        self._first_connect = False
        self.mysql_gtid_dump = mysql_set is not None
        # A first connection may be skipped ahead to its start, as may one
        # by GTID; a new one by position continues exactly where the last
        # left off.
        self.positioning = self.mysql_gtid_dump or gtid is not None or (
            self._file is None and (file is None or position > 4))

    def _check_server(self, connection: ReplicaConnection) -> None:
        """Refuse, in one line each, what would fail later or harm others:
        a server without binlogs, and a replica id another replica uses
        (the server would drop that replica's connection for ours). A
        registration of binlake's own that outlived its process (the server
        has not yet noticed a SIGKILLed run's connection is gone) is taken
        over: binlake registers as `report_host()`, which names its process."""
        if str(connection.variable("log_bin")) not in ("1", "ON"):
            raise ReplicationError(self.where, 0, "the server does not write a binlog "
                                   "(log_bin is OFF): it cannot be read as a primary")
        replicas = connection.registered_replicas()
        if replicas is None:
            self._warn(f"{self.where}: cannot list the server's replicas (no privilege for SHOW "
                       f"SLAVE HOSTS): server id {self.options.server_id} is not checked to be "
                       "free; a replica using it would be disconnected")
            return
        for server_id, host, port in replicas:
            if server_id == self.options.server_id \
                    and not _own_dead_registration(host, server_id):
                raise ReplicationError(self.where, 0, f"server id {server_id} is already used by "
                                       f"the replica {host}:{port} (SHOW SLAVE HOSTS); connecting "
                                       "with it would disconnect that replica: choose another "
                                       "with --connection-server-id")
        readers = connection.dump_threads()
        if readers is not None and readers > len(replicas):
            # A reader that does not register (mysqlbinlog --stop-never) is
            # not listed, nor its server id: if it is ours, the server drops
            # it for us. Said, since it cannot be checked.
            self._warn(f"{self.where}: {readers - len(replicas)} binlog reader(s) connected "
                       "without registering (mysqlbinlog --stop-never?): one using server id "
                       f"{self.options.server_id} would be disconnected by this one; choose "
                       "another with --connection-server-id if so")

    def _start_on(self, connection: ReplicaConnection, identity: dict, file, position):
        """Where a resumed stream starts on this server: the token's position
        on the server it was taken on; on another (a replica, a promoted
        primary of the same replication domain) its GTID state, positions
        being one server's; refused where the token has none to go by."""
        o = self.options
        if o.origin_server_id is None or identity["server_id"] == o.origin_server_id:
            if position > 0xFFFFFFFF and connection.is_mariadb and o.resume_gtid \
                    and ":" not in o.resume_gtid:
                # Past 4 GiB, where MariaDB's COM_BINLOG_DUMP cannot ask: by
                # the token's GTID state, the events placed from its position.
                o.mariadb_gtid = o.resume_gtid
                return None, position
            return file, position
        mysql_state = o.resume_gtid is not None and ":" in o.resume_gtid
        if o.resume_gtid and connection.is_mariadb and not mysql_state:
            # Strict: where this server lacks the token's last transactions
            # (an asynchronous failover), the server refuses (error 1236)
            # instead of going on from its own lower sequence numbers.
            o.mariadb_gtid, o.file, o.position = o.resume_gtid, None, 4
            o.gtid_strict_mode = True
            return None, 4
        if o.resume_gtid and not connection.is_mariadb and mysql_state:
            # COM_BINLOG_DUMP_GTID: every transaction not in the set
            o.mysql_gtid_set, o.file, o.position = o.resume_gtid, None, 4
            return None, 4
        carries = ("carries no GTID state to continue by" if not o.resume_gtid else
                   f"carries a {'MySQL' if mysql_state else 'MariaDB'} GTID state, which this "
                   f"{'MariaDB' if connection.is_mariadb else 'MySQL'} server cannot continue by")
        raise ReplicationError(self.where, 0, (
            f"the resume token was taken on server id {o.origin_server_id}, and this is "
            f"server id {identity['server_id']}: its position is the other server's, and it "
            f"{carries}"), retryable=False)

    def note_previous_gtids(self, name: str, raw: bytes) -> None:
        """A binlog's Previous_gtids event (MySQL), by the reader's decoder."""
        from binlake.gtids import GtidSet
        from binlake.read.cursor import Cursor
        from binlake.read.events.gtid import decode_previous_gtids
        body = self._body(raw)
        event = decode_previous_gtids(None, Cursor(body, 0, len(body), 0, name), None)
        self.previous_gtids[name] = GtidSet.parse(event.gtid_set)
        while len(self.previous_gtids) > 16:   # (a token names a file read lately)
            del self.previous_gtids[next(iter(self.previous_gtids))]

    def _warn(self, text: str) -> None:
        if self.options.on_warning is not None:
            self.options.on_warning(text)

    def _first_binlog(self, connection: ReplicaConnection) -> str:
        rows = connection.query("SHOW BINARY LOGS")
        if not rows:
            raise ReplicationError(self.where, 0, "the server lists no binary logs")
        return str(rows[0][0])

    def _reconnect(self, error: ReplicationError) -> None:
        """A new connection asking for the same file at the offset already given."""
        o = self.options
        limit = o.retries if o.retries is not None else (None if o.stop_never else 5)
        attempt = 0
        delay = 0.1
        while True:
            if self._closed.is_set():
                return
            if not error.retryable or (limit is not None and attempt >= limit):
                raise error
            attempt += 1
            if o.on_reconnect is not None:
                o.on_reconnect(error, attempt)
            connection, self._connection = self._connection, None
            if connection is not None:
                connection.close()
            if self._closed.wait(delay):
                return
            delay = min(delay * 2, o.max_backoff)
            try:
                self._connect(*self._resume_point())
            except ReplicationError as exc:
                error = exc
                continue
            return

    def _resume_point(self) -> tuple[str | None, int]:
        """Where a new connection continues: the next file the server named,
        else the current file after what is queued (the server sends again
        only what is dropped as already had), else the start asked for."""
        file = self._file
        if self._next_name is not None:
            return self._next_name, 4
        if self.positioning and self.options.file is None and self.options.mariadb_gtid:
            # Begun by a MariaDB GTID and still before its first event: the
            # server skips by the GTID again; by file it would give from 4.
            return None, 4
        if file is not None:
            return file.name, file.resume_at
        return self.options.file, self.options.position

    # Events -----------------------------------------------------------------------
    def has_backlog(self) -> bool:
        """Whether a whole event is here already (reading it will not wait)."""
        return self._connection is not None and self._connection.buffered()

    def take_run(self, expected: int):
        """(bytes, count, last type, last timestamp) of the ordinary events
        already here, the first at `expected` (replica.ReplicaConnection.take_run)."""
        return None if self._connection is None else self._connection.take_run(expected)

    def _read_event(self):
        """(pos, bytes, type, flags, timestamp) of the next event for a file,
        None at the end; handles heartbeats, rotates and lost connections."""
        while True:
            connection = self._connection
            if connection is None:
                return None
            try:
                raw = connection.next_event()
            except ReplicationError as error:
                if self._closed.is_set():
                    return None
                self._reconnect(error)
                continue
            if raw is None:  # EOF: the end of the last binlog, without waiting
                if self.options.stop_never:
                    # Asked to wait, the server ended the dump all the same: it
                    # is shutting down (a clean restart). Follow it back.
                    self._reconnect(ReplicationError(
                        self.where, 0, "the server ended the binlog dump (shutting down?)",
                        retryable=True))
                    continue
                self._ended = True
                return None
            if len(raw) < 19:
                raise ReplicationError(self.where, 0, f"an event of {len(raw)} bytes is shorter "
                                       "than its header")
            timestamp, type_code, _, length, log_pos, flags = _HEADER.unpack_from(raw)
            if length != len(raw):
                raise ReplicationError(self.where, 0, f"an event says it has {length} bytes and "
                                       f"came in a packet of {len(raw)}")
            if type_code in _HEARTBEATS:
                # The server has sent everything: nothing is behind.
                self.last_heartbeat = _heartbeat_coordinates(type_code, self._body(raw), log_pos)
                self._progress(self.last_heartbeat[1], caught_up=True)
                continue
            if type_code == _ROTATE and (flags & _ARTIFICIAL or log_pos == 0):
                name = self._body(raw)[8:].decode("utf-8", "replace")
                if self._file is None or name != self._file.name:
                    self._next_name = name
                    return None
                continue          # the same file again, after a reconnect
            if flags & _ARTIFICIAL:
                continue          # MariaDB's GTID list at a GTID start: not in the file
            return (log_pos - length if log_pos else None, raw, type_code, flags, timestamp)

    def _body(self, raw: bytes) -> bytes:
        """The body of an event read here (artificial ones, Previous_gtids):
        after the header, before the checksum the server adds when its binlog
        has them (@master_binlog_checksum)."""
        return raw[19:-4] if self._connection is not None and self._connection.checksums else raw[19:]

    def _progress(self, position: int, caught_up: bool = False) -> None:
        """`on_progress(file, position, server time)`: the time of the last
        event received, or now when a heartbeat says there is nothing newer."""
        callback = self.options.on_progress
        if callback is not None and self._file is not None:
            callback(self._file.name, position, time.time() if caught_up else self.last_event_time)

    def _read_until_file(self) -> None:
        """Before any file: wait for the artificial rotate naming the first one."""
        while self._next_name is None and not self._ended:
            event = self._read_event()
            if event is None:
                return
            raise ReplicationError(self.where, 0, "the server sent an event before naming "
                                   "its binlog file (no artificial rotate)")


#: How binlake registers with the server: COM_REGISTER_SLAVE's report host
#: is this prefix and the process id (`report_host`), so that a
#: registration of binlake's own is recognised by it. (The report port is
#: 16 bits: a process id past 65535, systemd's pid_max is 4194304, does
#: not fit there.)
REPORT_HOST_PREFIX = f"binlake@{socket.gethostname()}/"


def report_host() -> str:
    """This process's report host (made per call: a forked child has its own id)."""
    return f"{REPORT_HOST_PREFIX}{os.getpid()}"


#: Replica ids of the streams of this process that are open (registered).
_OPEN_IDS: Counter = Counter()


def _own_dead_registration(host: str, server_id: int) -> bool:
    """Whether a replica the server lists is binlake's own that outlived
    its reader: a run of this machine whose process is gone (SIGKILLed: the
    server keeps it until it notices), or a stream of this process that was
    closed (the server drops it a moment later)."""
    pid = host[len(REPORT_HOST_PREFIX):]
    if not host.startswith(REPORT_HOST_PREFIX) or not pid.isdigit() or int(pid) <= 0:
        return False
    if int(pid) == os.getpid():
        return not _OPEN_IDS[server_id]
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def _gtid_at(connection: ReplicaConnection, file: str, position: int) -> str | None:
    """MariaDB's GTID state at a binlog position (BINLOG_GTID_POS), or None."""
    try:
        rows = connection.query("SELECT BINLOG_GTID_POS(%s, %s)", (file, position))
    except ReplicationError:
        return None
    return str(rows[0][0]) if rows and rows[0][0] is not None else None


def _heartbeat_coordinates(type_code: int, body: bytes, log_pos: int) -> tuple[str, int]:
    """(file, position) a heartbeat says the server has sent up to, by the
    reader's decoders (a second-kind heartbeat carries them as fields)."""
    from binlake.read.cursor import Cursor
    from binlake.read.events.control import decode_heartbeat, decode_heartbeat_v2
    decode = decode_heartbeat if type_code == int(E.HEARTBEAT_LOG_EVENT) else decode_heartbeat_v2
    event = decode(None, Cursor(body, 0, len(body), 0, "heartbeat"), None)
    return event.log_file, event.log_position if event.log_position is not None else log_pos


#: The LiveFiles being read, by name: the text printer re-reads events by
#: (file, position) for BINLOG statements, and finds a live file's here.
_OPEN_FILES: "weakref.WeakValueDictionary[str, LiveFile]" = weakref.WeakValueDictionary()


def live_file(name: str):
    """The LiveFile of that name being read in this process, or None."""
    return _OPEN_FILES.get(name)


class LiveFile:
    """One server binlog as a binary stream of its bytes at their offsets.

    `read(n)` gives contiguous bytes, blocking only until one event is there;
    `next_event_at(pos)` says where the bytes continue (the reader asks when
    it has used up what it read); `b""` at the end of the file."""

    def __init__(self, source: LiveSource, name: str, start: int = 4):
        self.source = source
        self.name = name
        self.offset = 0            # the next byte to give
        #: where the server's events continue: after the last one received
        #: (the format description re-sent for a mid-file start is not one)
        self.resume_at = start
        self.finished = False      # the file ended (rotate, stop, the end of the dump)
        self.closed_by_server = False  # it ended with ROTATE or STOP: the server closed it
        self._queue: deque = deque()  # (pos, bytes) ready to give
        self._queued_end = 0       # the offset after the last event queued
        self._recent: deque = deque()  # (offset, bytes) given lately (BINLOG blocks re-read them)
        self._recent_bytes = 0
        self._recent_limit = RECENT_BYTES  # grows with the largest event received
        self.format_description: bytes | None = None
        #: end the stream (b"") when no event is waiting and the last one
        #: given was an XID: a consumer that reads ranges (the Arrow batches)
        #: then has whole transactions, and `reopen()` continues
        self.split_on_idle = False
        self._last_type = None
        self._replay: deque = deque()  # (offset, bytes) given again (`reopen`, `replay_kept`)
        self._floor = 0            # where the bytes continue after a replay
        self._kept: _Kept | None = None  # every byte given (`keep_all`)
        _OPEN_FILES[name] = self

    # The reader's side ---------------------------------------------------------------
    def read(self, n: int = -1) -> bytes:
        return self.read_chunk(n)[1]

    def read_chunk(self, n: int = -1) -> tuple[int, bytes]:
        """(offset, bytes): the next contiguous bytes and where they are in the file."""
        if self._replay:
            return self._replayed(n)
        if self.offset < 4:
            self.offset = 4
            if self._kept is not None:
                self._kept.add(0, BINLOG_MAGIC)
            return 0, BINLOG_MAGIC
        if self._idle_after_commit():
            self._last_type = None
            return self.offset, b""
        if not self._queue and not self._fill(block=True):
            return self.offset, b""
        pos, data = self._queue[0]
        if pos != self.offset:     # a gap the reader has not moved past
            return self.offset, b""
        start, chunks, size = self.offset, [], 0
        limit = n if n is not None and n > 0 else 1 << 20
        while self._queue and self._queue[0][0] == self.offset and size < limit:
            pos, data = self._queue[0]
            if size + len(data) > limit:   # never more than asked: the rest waits its turn
                cut = limit - size
                data = memoryview(data)        # a run is cut many times: no copy of the rest
                self._queue[0] = (pos + cut, data[cut:])
                data = data[:cut]
            else:
                self._queue.popleft()
            chunks.append(data)
            size += len(data)
            self.offset += len(data)
            if not self._queue and size < limit and self.source.has_backlog():
                self._fill(block=False)
        data = b"".join(chunks)
        self._remember(start, data)
        return start, data

    def next_event_at(self, pos: int) -> int:
        if self._replay:               # a gap in what is given again
            return max(pos, self._replay[0][0])
        if 4 <= pos < self._floor:     # after what was given again
            return self._floor
        if pos < self.offset or pos < 4 or self._idle_after_commit():
            return pos
        if not self._queue and not self._fill(block=True):
            return pos
        first = self._queue[0][0]
        if first > pos:
            self.offset = first
            return first
        return pos

    def _idle_after_commit(self) -> bool:
        """Whether to end a range here (`split_on_idle`): all given, the last
        event a commit, and nothing more waiting on the connection."""
        return (self.split_on_idle and not self._queue and self._last_type == _XID
                and not self.source.has_backlog())

    @property
    def queued_end(self) -> int:
        """The offset after the last event received for this file."""
        return max(self._queued_end, self.offset)

    def seekable(self) -> bool:
        return False

    def reopen(self) -> None:
        """Read again from the start of the file's stream: its magic and
        format description, then on from where the last reading stopped."""
        self._replay = deque([(0, BINLOG_MAGIC), (4, self.format_description)])
        self._floor = self.offset

    def keep_all(self) -> None:
        """Keep every byte this file gives from now on (before its first
        read), in a temporary file, for `replay_kept` and `raw_event`."""
        self._kept = _Kept()

    def replay_kept(self) -> None:
        """Read again every byte given so far (`keep_all`), then on from where
        the last reading stopped: a reader that takes over from another
        rebuilds its state from the same events."""
        self._replay = deque(self._kept.chunks())
        self._floor = self.offset

    def _replayed(self, n: int) -> tuple[int, bytes]:
        """The next bytes given again, at most `n` (the rest waits its turn)."""
        pos, data = self._replay.popleft()
        if callable(data):
            data = data()
        if n is not None and 0 < n < len(data):
            data = memoryview(data)    # cut many times: no copy of the rest
            self._replay.appendleft((pos + n, data[n:]))
            data = data[:n]
        return pos, bytes(data)

    def raw_event(self, pos: int, length: int) -> bytes | None:
        """The bytes of an event given lately (for BINLOG statements and hex
        dumps), from the chunks that hold it; None once they are dropped."""
        if self._kept is not None:
            return self._kept.read(pos, length)
        end, parts = pos + length, []
        for start, data in self._recent:
            if start + len(data) <= pos or start >= end:
                continue
            if not parts and start > pos:
                return None             # its beginning was dropped
            parts.append(data[max(pos - start, 0):end - start])
        found = b"".join(parts)
        return found if len(found) == length else None

    def close(self) -> None:
        """The reader is done with the file: the bytes kept go."""
        if self._kept is not None:
            self._kept.close()
            self._kept = None

    def drain(self) -> None:
        """Read to the end of this file (what a consumer left unread is dropped)."""
        while not self.finished:
            self._queue.clear()
            self._fill(block=True)
        self._queue.clear()

    # Filling ---------------------------------------------------------------------------
    def _fill(self, *, block: bool) -> bool:
        """Queue the events of this file that are here (waiting for one if
        `block` and none is); False at its end."""
        source = self.source
        queue = self._queue
        had = len(queue)
        while not self.finished:
            if len(queue) > had and not source.has_backlog():
                break
            if not block and not source.has_backlog():
                break
            run = source.take_run(self._queued_end) if self._queued_end > 4 else None
            if run is not None:    # the common case: ordinary events, many at a time
                data, _, last_type, timestamp = run
                queue.append((self._queued_end, data))
                if source.commits is not None:
                    source.commits.feed(self.name, self._queued_end, data)
                self._recent_limit = max(self._recent_limit, RECENT_BYTES + len(data))
                self._last_type = last_type
                self.resume_at = self._queued_end = self._queued_end + len(data)
                if timestamp:
                    source.last_event_time = timestamp
                if source.positioning and not source.mysql_gtid_dump:
                    source.positioning = False
                continue
            if block and len(queue) == had and source.on_wait is not None \
                    and not source.has_backlog():
                source.on_wait()
            event = source._read_event()
            if event is None:
                self.finished = True
                return len(queue) > had
            pos, raw, type_code, flags, timestamp = event
            if timestamp:
                source.last_event_time = timestamp
            if type_code == _FDE:
                if pos is None:     # re-sent for a mid-file start: log_pos 0
                    self._resent_description(raw, queue)
                    continue
                if pos == 4:
                    self.format_description = raw
            if pos is None:
                raise ReplicationError(self.name, self.offset, f"event of type {type_code} "
                                       "without a position (log_pos 0) in the dump")
            queued_end = self.queued_end
            # (near where it started, for a start inside the file: its
            # offset may be past 4 GiB, the 32-bit log_pos wrapped; the
            # format description is at 4 whatever the start)
            if not (type_code == _FDE and pos == 4):
                pos = widened(pos, max(queued_end, self.resume_at))
            if pos != queued_end:
                if pos < queued_end:
                    continue        # sent again after a reconnect: already had
                if not source.positioning and queued_end > 4:
                    raise ReplicationError(self.name, queued_end, "gap in the server's binlog: "
                                           f"the next event the server sent starts at {pos}")
            if source.positioning and type_code not in _POSITIONING_EVENTS \
                    and not source.mysql_gtid_dump:
                source.positioning = False
            if type_code == _PREVIOUS_GTIDS:
                source.note_previous_gtids(self.name, raw)
            queue.append((pos, raw))
            if source.commits is not None:
                source.commits.feed(self.name, pos, raw)
            self._recent_limit = max(self._recent_limit, RECENT_BYTES + len(raw))
            self._last_type = type_code
            self._queued_end = pos + len(raw)
            # (the format description before a start inside the file is not
            # where the server's events continue)
            self.resume_at = max(self.resume_at, self._queued_end)
            if type_code == _ROTATE or type_code == _STOP:
                self.closed_by_server = True
        if len(queue) > had:
            source._progress(self._queued_end)
            return True
        return bool(queue)

    def _resent_description(self, raw: bytes, queue) -> None:
        """The format description a server sends for a start inside the file:
        the file's own where nothing was read yet; else compared with the
        one read (another server of the same id behind the address, or the
        binlog made anew, would splice two histories)."""
        if self.source.commits is not None:
            self.source.commits.describe(self.name, raw)
        if self.offset <= 4 and not queue:
            self.format_description = raw
            queue.append((4, raw))
            self._queued_end = 4 + len(raw)
        elif self.format_description is not None \
                and not same_description(self.format_description, raw):
            raise ServerChanged(self.source.where, self.resume_at, (
                f"the server now answering has another {self.name} (its format description "
                "is not the one read: another server with the same server id, or the binlog "
                "made anew): its positions do not continue the ones read; stopped"),
                retryable=False)

    def _remember(self, start: int, data: bytes) -> None:
        """Keep the bytes given lately: the text printer re-reads each event
        by position for its BINLOG statement just after the reader handed it
        out. Bounded: RECENT_BYTES beyond the largest event received, which
        is in memory whole anyway (as it arrived), so that the reader may
        read ahead of the event being printed without dropping its start."""
        if self._kept is not None:
            self._kept.add(start, data)
            return
        self._recent.append((start, data))
        self._recent_bytes += len(data)
        while self._recent_bytes > self._recent_limit and len(self._recent) > 1:
            self._recent_bytes -= len(self._recent.popleft()[1])


class _Kept:
    """Every chunk a LiveFile gave, by offset, in an unlinked temporary
    file (a binlog may be larger than memory): what a reader that takes over
    mid-file reads again."""

    def __init__(self):
        import tempfile
        self._file = tempfile.TemporaryFile(buffering=0)
        self._chunks: list[tuple[int, int, int]] = []  # (offset in the binlog, in the file, length)
        self._size = 0

    def add(self, offset: int, data) -> None:
        length = len(data)
        if self._chunks:
            last_offset, at, last_length = self._chunks[-1]
            if last_offset + last_length == offset and last_length < 1 << 20:
                # contiguous: one entry (read again a megabyte or so at a time)
                self._chunks[-1] = (last_offset, at, last_length + length)
                length = 0
        if length:
            self._chunks.append((offset, self._size, length))
        view = memoryview(data)
        while view:   # (a regular file takes it whole unless the disk is full)
            view = view[self._file.write(view):]
        self._size += len(data)

    def close(self) -> None:
        self._file.close()

    def chunks(self):
        """(offset, loader of the bytes) for each run of contiguous bytes, in order."""
        fd = self._file.fileno()
        for offset, at, length in self._chunks:
            yield offset, (lambda at=at, length=length: os.pread(fd, length, at))

    def read(self, pos: int, length: int) -> bytes | None:
        """The bytes [pos, pos + length), or None if not all were given."""
        index = bisect.bisect_right(self._chunks, pos, key=lambda chunk: chunk[0]) - 1
        if index < 0:
            return None
        offset, at, held = self._chunks[index]
        # contiguous bytes of the binlog lie contiguous in the file too
        end, stretch = pos + length, offset + held
        while stretch < end and index + 1 < len(self._chunks) \
                and self._chunks[index + 1][0] == stretch:
            index += 1
            stretch += self._chunks[index][2]
        if stretch < end:
            return None
        return os.pread(self._file.fileno(), length, at + pos - offset)


def widened(position: int, near: int) -> int:
    """The 64-bit file offset whose low 32 bits are `position`'s (an event's
    start from its 32-bit log_pos, which wraps past 4 GiB) nearest `near`
    (where the previous event ended)."""
    low = position & 0xFFFFFFFF
    found = (near & ~0xFFFFFFFF) | low
    if found - near > 1 << 31:
        found -= 1 << 32
    elif near - found > 1 << 31:
        found += 1 << 32
    return max(found, 0)


#: The format description's `created` time, in its body (ST_CREATED_OFFSET:
#: after the binlog version and the 50-byte server version)
CREATED_AT = 2 + 50


def same_description(had: bytes, sent: bytes) -> bool:
    """Whether the format description a server sends is that of the file
    read (or copied) before: equal but for what the server changes when it
    re-sends one for a start inside the file (log_pos, the IN_USE flag, the
    `created` time it zeroes so that a replica does not take it for a
    restart) and so the checksum. Its header's time (when the file was
    begun) and server id tell two servers' files of one name apart."""
    def stable(raw: bytes) -> bytes:
        return raw[:13] + raw[19:19 + CREATED_AT] + raw[19 + CREATED_AT + 4:-4]
    return len(had) == len(sent) and stable(had) == stable(sent)


def _fde_has_checksum(raw: bytes) -> bool:
    """Whether a format description announces CRC32 (its algorithm byte is 1).
    Servers before 5.6.1 and 5.3 write no algorithm byte: no checksums."""
    from binlake.read.events.control import has_checksum_field
    version = raw[19 + 2:19 + 52].split(b"\0")[0].decode("ascii", "replace")
    if not has_checksum_field(version):
        return False
    return raw[-5] == 1


@dataclass
class ResumeToken:
    """Where a live read continues: after the last whole transaction given.

    `file`/`position` name the binlog and the offset after that transaction
    on the server `server_id`; `gtid` the GTID state there (MariaDB: a GTID
    list, every domain; MySQL: the GTID set of every transaction up to
    there), by which the read continues on another server of the same
    replication domain. Text: FILE:POSITION[@GTID][#SERVER_ID].
    `schema` (from `LiveStream.checkpoint()`, kept by `to_json()`): the
    schema history as of the point, so that a resumed stream names every
    event as the server did then, whatever DDL ran since."""

    file: str
    position: int
    gtid: str | None = None
    server_id: int | None = None
    schema: dict | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict:
        return {"token": str(self), "schema": self.schema}

    @classmethod
    def from_json(cls, data: dict) -> "ResumeToken":
        return replace(cls.parse(data["token"]), schema=data.get("schema"))

    def __str__(self) -> str:
        return (f"{self.file}:{self.position}" + (f"@{self.gtid}" if self.gtid else "")
                + (f"#{self.server_id}" if self.server_id is not None else ""))

    @classmethod
    def parse(cls, text: str) -> "ResumeToken":
        rest, _, server = str(text).partition("#")
        head, _, gtid = rest.partition("@")
        file, _, position = head.rpartition(":")
        if not file or not position.isdigit() or (server and not server.isdigit()):
            raise ValueError(f"resume token {text!r}: expected FILE:POSITION[@GTID][#SERVER_ID]")
        return cls(file, int(position), gtid or None, int(server) if server else None)


def default_settings(host=None, port=None, user=None, password=None, socket_path=None,
                     defaults_file=None, **tls) -> dict:
    """pymysql keywords as the mysql client would connect (option file, then these)."""
    from binlake.connection.settings import ServerAddress, connection_settings
    return connection_settings(ServerAddress(host, port, user, password, socket_path,
                                             defaults_file, **tls))




# -- the Python API ------------------------------------------------------------------------

@dataclass
class Transaction:
    """The changes of one committed transaction, and where to resume after it."""

    gtid: str | None
    changes: list
    resume_token: ResumeToken


class _CommitMark:
    """Where a stream of changes may resume (the reference of
    `_native.CommitMark`, which the native changes loop writes into with no
    Python call): after the last whole group handed out, each MariaDB
    domain's last GTID there, and the MySQL GTIDs recorded ({"uuid[:tag]":
    [(first, last)]}, intervals joined). Called as `changes` calls
    `on_commit_fields`."""

    def __init__(self):
        self.after: tuple | None = None   # (file, end position)
        self.domains: dict = {}
        self.mysql: dict = {}

    def __call__(self, file, gtid, xid, end_pos, timestamp, complete) -> bool:
        if not complete:
            return False
        if gtid is not None:
            if ":" in gtid:                         # MySQL's UUID[:TAG]:GNO
                sid, _, gno = gtid.rpartition(":")
                self._add(self.mysql.setdefault(sid, []), int(gno))
            else:                                   # MariaDB's DOMAIN-SERVER-SEQ
                self.domains[gtid[:gtid.find("-")]] = gtid
        self.after = (file, end_pos)
        return True

    @staticmethod
    def _add(intervals: list, gno: int) -> None:
        if intervals and intervals[-1][1] + 1 == gno:
            intervals[-1] = (intervals[-1][0], gno)
        elif not (intervals and intervals[-1][0] <= gno <= intervals[-1][1]):
            intervals.append((gno, gno))
            if len(intervals) > 32:   # out of order: joined now and then
                from binlake.gtids import merged_intervals
                intervals[:] = merged_intervals(intervals)


def _commit_mark():
    from binlake import core
    native = core.native()
    return _CommitMark() if native is None else native.CommitMark()


class LiveStream:
    """A live server's events (iterate) or committed transactions
    (`transactions()`) and row changes (`changes()`), read by the same reader
    as files. `resume_token` is where a later `binlake.stream(resume=...)`
    continues: after the last whole transaction handed out."""

    def __init__(self, options: LiveOptions, reader_options: dict,
                 commits_from_bytes: bool = False):
        """`commits_from_bytes`: the resume token moves on as the bytes
        arrive (live/boundaries.py), for a caller that reads the source's
        events itself (`dump -R --stop-never`), not `transactions()`."""
        from binlake.records import _history
        # (file, position) after the last transaction given, and MariaDB's
        # GTID state there, per domain
        self._mark = _commit_mark()
        if commits_from_bytes:
            options = replace(options, commit_mark=self._mark)
        self.source = LiveSource(options)
        # The history the reader follows in place: checkpoints take it as of their point.
        self._schema = _history(reader_options.get("schema"))
        self.reader_options = {**reader_options,
                               "schema": False if self._schema is None else self._schema}
        #: the token the stream resumed from (or went on from after a
        #: failover), without its schema, and the mark's place then
        self._resumed_from: ResumeToken | None = None
        self._after_at_start = None
        #: `keep_history`'s file, and the history's generation saved there
        self._history_path: str | None = None
        self._history_saved = None

    def keep_history(self, path: str) -> None:
        """Keep the schema history in `path` (`binlake.stream(history=)`):
        saved now and whenever a token is taken after DDL, so that every
        token handed out has its point's history there."""
        self._history_path, self._history_saved = path, None
        self._save_history()

    def _save_history(self) -> None:
        # (the history itself too: a failover goes on with a rebased one)
        now = (id(self._schema), self._schema.generation) if self._history_path else None
        if now is not None and now != self._history_saved:
            self._schema.save(self._history_path)
            self._history_saved = now

    @property
    def resume_token(self) -> ResumeToken | None:
        self._save_history()
        after = self._mark.after
        start = self._resumed_from
        identity = self.source.server_identity or {}
        if start is not None and (after == self._after_at_start or (
                identity.get("server_id", start.server_id) == start.server_id
                and after[0] == start.file and after[1] <= start.position)):
            # Nothing past the token resumed from (the format description
            # the server sends first, at offset 4, ends no transaction of
            # ours): a token never moves back.
            return start
        if after is None:
            return None
        return ResumeToken(*after, self._gtid_state(after[0]), identity.get("server_id"))

    def failed_over(self, changed: ReplicationError) -> bool:
        """Go on after a failover behind the address (another server answers
        a reconnect), or past 4 GiB of a MariaDB binlog (a reconnect cannot
        ask there by position): from the resume token, by its GTID state
        (`LiveSource._start_on`; in strict mode on a new server, the schema
        history as of the token carried over, `Schema.rebased`: the new
        server's positions do not continue the old one's). False where the
        stream cannot: not following (stop_never), or no GTID state to go by."""
        token = self.resume_token
        options = self.source.options
        commits = self.source.commits
        if not options.stop_never or token is None or not token.gtid \
                or (commits is not None and commits.unknown_gtids):
            return False
        if options.on_warning is not None and isinstance(changed, ServerChanged):
            options.on_warning(f"{changed}; going on by GTID {token.gtid} from {token}")
        if self._schema is not None and isinstance(changed, ServerChanged):
            self._schema = self._schema.rebased((token.file, token.position))
            self.reader_options["schema"] = self._schema
        self.source.close()
        self.source = LiveSource(replace(
            options, file=token.file, position=token.position, mariadb_gtid=None,
            mysql_gtid_set=None, origin_server_id=token.server_id, resume_gtid=token.gtid),
            self.source.connection_class)
        self._resumed_from, self._after_at_start = token, self._mark.after
        return True

    def _gtid_state(self, file: str) -> str | None:
        """The GTID state after the last transaction given, in `file`.

        MySQL: the file's Previous_gtids (or the GTID set the stream began
        after), and every GTID given since; unknown (None) while the stream
        has not seen the start of a file since it began mid-file by position.
        MariaDB: the state where the stream began, moved on by each GTID
        given (a GTID list, one per domain)."""
        source, mark = self.source, self._mark
        mysql, base = mark.mysql, source.previous_gtids.get(file)
        began_after = source.options.mysql_gtid_set
        if mysql or base is not None or began_after:
            if base is None and not began_after:
                return None
            from binlake.gtids import GtidSet
            state = GtidSet.parse(began_after or "").union(*([base] if base else []), mysql)
            return str(state) or None
        start = source.start_gtid_state or ""
        gtids = {gtid.split("-", 1)[0]: gtid for gtid in start.split(",") if gtid.count("-") == 2}
        gtids.update(mark.domains)
        return ",".join(gtids[d] for d in sorted(gtids, key=int)) or None

    def checkpoint(self) -> ResumeToken | None:
        """`resume_token` with the schema history as of it: saved as
        `to_json()` and given back as `resume=`, the resumed stream names
        every column as the server had it there, not as it has it now."""
        token = self.resume_token
        if token is None or self._schema is None:
            return token
        return replace(token, schema=self._schema.at((token.file, token.position)).to_json())

    def _passed(self, group) -> bool:
        """Move the token past a transaction group that ended (False if it did not)."""
        return self._mark(group.file, group.gtid, None, group.end_pos, None, group.complete)

    def __iter__(self):
        from binlake.read.reader import BinlogReader
        return iter(BinlogReader(self.source, **self.reader_options))

    def transactions(self):
        """Each committed transaction with its changes and resume token.
        Statements and events outside transactions (DDL, rotations) move
        the token past them too, without a Transaction of their own.
        Following (stop_never), it goes on after a failover behind the
        address by the token's GTID state (`failed_over`)."""
        from binlake.records import transaction_groups
        while True:
            try:
                for group in transaction_groups(self.source, **self.reader_options):
                    self._passed(group)
                    if group.changes:
                        yield Transaction(group.gtid, group.changes, self.resume_token)
                return
            except (ServerChanged, PositionPast4GiB) as changed:
                # A transaction cut off there was not handed out: it comes
                # again whole, by the token's GTID state.
                if not self.failed_over(changed):
                    raise

    def changes(self):
        """Every row change, in order, as it is read; `resume_token` moves
        past each transaction once all its changes have been handed out
        (at the next request, before anything more is read). Following
        (stop_never), it goes on after a failover behind the address as
        `transactions()` does when the switch fell between transactions;
        one that cut off a transaction some of whose changes were handed
        out stops with ServerChanged (going on would hand them out twice)."""
        from binlake.records import changes
        if not self.source.options.stop_never:
            return changes(self.source, on_commit_fields=self._mark, **self.reader_options)
        return self._changes_across_failovers()

    def _changes_across_failovers(self):
        from binlake.records import changes
        last = None     # the last change handed out, on this server
        while True:
            try:
                for last in changes(self.source, on_commit_fields=self._mark,
                                    **self.reader_options):
                    yield last
                return
            except (ServerChanged, PositionPast4GiB) as changed:
                if (last is not None and not self._past(last)) or not self.failed_over(changed):
                    raise
                last = None

    def _past(self, change) -> bool:
        """Whether the token is past `change`'s transaction (it was handed out whole)."""
        after = self._mark.after
        if after is None:
            return False
        if after[0] == change.file:
            return after[1] >= change.next_pos
        # (one server's binlogs: a name's number grows, and may grow a digit)
        return (len(after[0]), after[0]) > (len(change.file), change.file)

    def close(self) -> None:
        self.source.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def stream(host: str | None = None, port: int | None = None, user: str | None = None,
           password: str | None = None, *, socket: str | None = None,
           defaults_file: str | None = None, ssl_mode: str | None = None,
           ssl_ca: str | None = None, ssl_cert: str | None = None, ssl_key: str | None = None,
           resume=None, file: str | None = None, position: int = 4, gtid: str | None = None,
           stop_never: bool = True, server_id: int = DEFAULT_SERVER_ID, heartbeat: float = 5.0,
           read_timeout: float | None = None, schema=None, compress: bool = False,
           history: str | None = None, **reader_options) -> LiveStream:
    """Follow a live MySQL or MariaDB server as a replica.

    Where to start: `resume` (a token, its text, or a checkpoint's
    `to_json()` from an earlier stream), else `file`/`position`, else
    `gtid`, else the server's first binlog. `gtid`: a MariaDB GTID list
    (`0-1-100`: the transactions after it) or a MySQL GTID set
    (`uuid:1-100`: the transactions not in it). `stop_never=False` ends at
    the end of the last binlog. Column names: the DDL in the stream, seeded
    by a checkpoint's schema history, else, when the stream does not start
    at the server's first binlog, by the server's tables as they are now
    (`schema=` seeds otherwise; False: none). `history`: a file the stream
    keeps its schema history in (saved whenever a token is taken after DDL):
    given again with a plain token, the resumed stream names every column
    as the server had it at the token, as a checkpoint's does. `compress`:
    the compressed protocol (zlib) when the server offers it, as
    mysqlbinlog -C."""
    token = None
    if resume is not None:
        token = (resume if isinstance(resume, ResumeToken) else ResumeToken.from_json(resume)
                 if isinstance(resume, dict) else ResumeToken.parse(resume))
        file, position, gtid = token.file, token.position, None
        if schema is None and token.schema is not None:  # the history of the token's point
            from binlake.schema.history import Schema
            schema = Schema.from_json(token.schema)
        elif schema is None and history is not None and os.path.exists(history):
            from binlake.schema.history import load_schema
            schema = load_schema(history).at((token.file, token.position))
    settings = default_settings(host, port, user, password, socket, defaults_file,
                                ssl_ca=ssl_ca, ssl_cert=ssl_cert, ssl_key=ssl_key,
                                ssl_mode=ssl_mode, compress=compress or None)
    seeded_from_server = schema is None and (file is not None or gtid is not None)
    if seeded_from_server:
        from binlake.connection.settings import ServerAddress
        from binlake.schema.seeds import schema_from_server
        address = ServerAddress(host, port, user, password, socket, defaults_file, ssl_ca,
                                ssl_cert, ssl_key, ssl_mode, compress=compress or None)
        schema = schema_from_server(address, unless_reading_from=(file, position)
                                    if gtid is None else None)
    mysql_set = gtid if gtid is not None and ":" in gtid else None
    options = LiveOptions(settings, file=file, position=position,
                          mariadb_gtid=None if mysql_set else gtid, mysql_gtid_set=mysql_set,
                          to_last_log=True, stop_never=stop_never, server_id=server_id,
                          heartbeat=heartbeat, read_timeout=read_timeout,
                          on_warning=lambda text: warnings.warn(text, RuntimeWarning, 2),
                          origin_server_id=token.server_id if token else None,
                          resume_gtid=token.gtid if token else None)
    if token is not None and seeded_from_server and schema is not None:
        from binlake.schema.seeds import logs_column_names
        if not logs_column_names(address):
            _refuse_ddl_since(options, token, schema)
    live = LiveStream(options, {"schema": schema, **reader_options})
    if token is not None:
        live._resumed_from = replace(token, schema=None)
    if history is not None and live._schema is not None:
        live.keep_history(history)
    return live


def _refuse_ddl_since(options: LiveOptions, token: ResumeToken, seed) -> None:
    """A token without its schema history, resumed on a server whose binlog
    does not name columns, is named by the server's tables as they are now
    (`seed`). That is exact unless DDL changed one of them since the token's
    point: the rows before it would be named by the later definition, and
    the statement applied again on top of it. So the binlogs from the token
    to the end are read first, their DDL applied to a copy of the seed by
    the history's own rules; the first that changes the column names of a
    table the seed holds refuses the resume, in one line, before anything
    is handed out (a CREATE of a table the seed has as created is none)."""
    from binlake.read.reader import BinlogReader
    from binlake.schema.ddl import might_change_tables
    from binlake.schema.history import Schema
    scratch = Schema.from_json(seed.to_json())
    probe = LiveSource(replace(options, file=token.file, position=token.position,
                               stop_never=False, to_last_log=True, on_warning=None))
    try:
        for event in BinlogReader(probe, schema=False):
            statement = getattr(event, "query", None)
            if not statement or not might_change_tables(statement):
                continue
            # Names are what a seed gives rows (types come with each table map).
            held = {key: scratch.columns(*key) for key in scratch.tables}
            where = (os.path.basename(event.header.file), event.header.pos)
            scratch.apply(statement, getattr(event, "database", None) or None, where)
            changed = sorted(".".join(key) for key, names in held.items()
                             if scratch.columns(*key) != names)
            if changed:
                raise ReplicationError(probe.where, 0, (
                    f"the resume token {token} carries no schema history, this server's binlog "
                    f"does not name columns (binlog_row_metadata is not FULL), and "
                    f"{statement.split()[0].upper()} at {where[0]}:{where[1]} changed "
                    f"{', '.join(changed)} since: rows before it cannot be named as they were. "
                    "Resume with the stream's checkpoint().to_json(), or give schema="),
                    retryable=False)
    finally:
        probe.close()
