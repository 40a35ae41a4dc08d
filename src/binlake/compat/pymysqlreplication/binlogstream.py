"""`BinLogStreamReader`: python-mysql-replication's stream, read by binlake.

Strategy: one `binlake.live.source.LiveSource` (binlake's replica client:
reconnects, checksums, positions) read by binlake's `BinlogReader` (its one
decoder, native when built); each event it yields is converted
(`_dispatch.convert`) into upstream's class. The reader keeps upstream's
stream state itself: `log_file`/`log_pos` after every event, `table_map`
(cleared at a rotate with a timestamp), the filters (event classes, tables,
schemas, `skip_to_timestamp`, `end_log_pos`). What the server sends that is
not in its files, and binlake's reader therefore does not yield, is made
again from what binlake knows: the artificial rotate that names each file
(its name and start position). Heartbeats are not given (binlake's source
takes them); docs/compat.md lists that and the other differences.

Where to start is decided as upstream decides: `auto_position` (MariaDB
GTID list or MySQL GTID set), else the first binlog (`is_mariadb`), else
`log_file` (from `log_pos` with `resume_stream`, else from 4), else the
server's current binlog from its start. A non-blocking stream ends at the
end of the last binlog; read again, it starts over from `log_file` as
upstream's does.
"""

from __future__ import annotations

import pymysql
from pymysql.cursors import DictCursor

from binlake.compat.pymysqlreplication import _dispatch
from binlake.compat.pymysqlreplication.constants import BINLOG as B
from binlake.compat.pymysqlreplication.event import Context, RotateEvent
from binlake.compat.pymysqlreplication.exceptions import BinLogNotEnabled
from binlake.compat.pymysqlreplication.row_event import RowsEvent, TableMapEvent


class ReportSlave:
    """What to report in SHOW SLAVE HOSTS: a hostname, or (hostname, user, password, port)."""

    hostname = ""
    username = ""
    password = ""
    port = 0

    def __init__(self, value):
        if isinstance(value, (tuple, list)):
            for key, item in zip(("hostname", "username", "password", "port"), value):
                setattr(self, key, int(item) if key == "port" else item)
        elif isinstance(value, dict):
            for key in ("hostname", "username", "password", "port"):
                if key in value:
                    setattr(self, key, value[key])
        else:
            self.hostname = value

    def __repr__(self):
        return (f"<ReportSlave hostname={self.hostname} username={self.username} "
                f"password={self.password} port={self.port}>")


def _connection_class(reader: "BinLogStreamReader"):
    """binlake's replica connection with upstream's session: no check that
    the replica id is free nor warning of other readers (a new dump with an
    id in use takes over, as the server decides), upstream's report values,
    @slave_uuid."""
    from binlake.live.protocol import ReplicaConnection, register_slave_packet

    class Connection(ReplicaConnection):
        def registered_replicas(self):
            return []

        def dump_threads(self):
            return None                 # (nor a word of other readers: upstream says none)

        def prepare(self, **kwargs):
            super().prepare(**kwargs)
            if reader.slave_uuid:
                self.query("SET @slave_uuid = %s, @replica_uuid = %s",
                           (reader.slave_uuid, reader.slave_uuid))

        def register(self):
            report = reader.report_slave
            if report is None:
                return super().register()
            from binlake.live.protocol import COM_REGISTER_SLAVE
            self._command(COM_REGISTER_SLAVE, register_slave_packet(
                self.server_id, report.hostname, report.username, report.password,
                int(report.port or 0)))
            self.connection._read_ok_packet()

    return Connection


class BinLogStreamReader:
    """Connect to replication stream and read event"""

    report_slave = None

    def __init__(self, connection_settings, server_id, ctl_connection_settings=None,
                 resume_stream=False, blocking=False, only_events=None, log_file=None,
                 log_pos=None, end_log_pos=None, filter_non_implemented_events=True,
                 ignored_events=None, auto_position=None, only_tables=None,
                 ignored_tables=None, only_schemas=None, ignored_schemas=None,
                 freeze_schema=False, skip_to_timestamp=None, report_slave=None,
                 slave_uuid=None, pymysql_wrapper=None, slave_heartbeat=None,
                 is_mariadb=False, annotate_rows_event=False, ignore_decode_errors=False,
                 verify_checksum=False, enable_logging=True, use_column_name_cache=False,
                 fail_on_table_metadata_unavailable=False):
        self.__connection_settings = connection_settings
        self.__connection_settings.setdefault("charset", "utf8")
        self.__connected_stream = False
        self.__connected_ctl = False
        self.__resume_stream = resume_stream
        self.__blocking = blocking
        self._ctl_connection_settings = ctl_connection_settings
        if ctl_connection_settings:
            self._ctl_connection_settings.setdefault("charset", "utf8")
        self.__only_tables = only_tables
        self.__ignored_tables = ignored_tables
        self.__only_schemas = only_schemas
        self.__ignored_schemas = ignored_schemas
        self.__freeze_schema = freeze_schema
        self.__allowed_events = self._allowed_event_list(
            only_events, ignored_events, filter_non_implemented_events)
        self.__ignore_decode_errors = ignore_decode_errors
        self.__verify_checksum = verify_checksum
        self.__optional_meta_data = False
        self.__enable_logging = enable_logging
        self.__use_column_name_cache = use_column_name_cache
        self.__allowed_events_in_packet = frozenset(
            [_dispatch.ev.FormatDescriptionEvent, TableMapEvent, RotateEvent]
        ).union(self.__allowed_events)
        self.__server_id = server_id
        self.__use_checksum = False
        self.__post_header_lengths = None
        self.__annotate_rows_event = annotate_rows_event
        self.table_map = {}
        self.log_pos = log_pos
        self.end_log_pos = end_log_pos
        self.log_file = log_file
        self.auto_position = auto_position
        self.skip_to_timestamp = skip_to_timestamp
        self.is_mariadb = is_mariadb
        self.is_past_end_log_pos = False
        if report_slave:
            self.report_slave = ReportSlave(report_slave)
        self.slave_uuid = slave_uuid
        self.slave_heartbeat = slave_heartbeat
        self.pymysql_wrapper = pymysql_wrapper or pymysql.connect
        self.fail_on_table_metadata_unavailable = fail_on_table_metadata_unavailable
        self.mysql_version = (0, 0, 0)
        self.dbms = None
        self._live = None
        self._events = None
        self._file_name = None      # the binlog the events read are in
        self._start = 4             # where the first file was asked from

    # -- connections ----------------------------------------------------------------
    def close(self):
        if self.__connected_stream:
            live, self._live, self._events = self._live, None, None
            if live is not None:
                live.close()
            self.__connected_stream = False
        if self.__connected_ctl:
            self._ctl_connection.close()
            self.__connected_ctl = False

    @property
    def _stream_connection(self):
        """The PyMySQL connection the binlog is being read on (None between connections)."""
        connection = self._live._connection if self._live is not None else None
        return connection.connection if connection is not None else None

    def __connect_to_ctl(self):
        if not self._ctl_connection_settings:
            self._ctl_connection_settings = dict(self.__connection_settings)
        self._ctl_connection_settings["db"] = "information_schema"
        self._ctl_connection_settings["cursorclass"] = DictCursor
        self._ctl_connection_settings["autocommit"] = True
        self._ctl_connection = self.pymysql_wrapper(**self._ctl_connection_settings)
        self._ctl_connection._get_dbms = self.__get_dbms
        self.__connected_ctl = True
        self.__check_optional_meta_data()

    def __check_optional_meta_data(self):
        with self._ctl_connection.cursor() as cur:
            cur.execute("SHOW VARIABLES LIKE 'BINLOG_ROW_METADATA'")
            row = cur.fetchone()
        self.__optional_meta_data = bool(row) and str(row.get("Value", "")).upper() == "FULL"

    def __get_dbms(self):
        if not self.__connected_ctl:
            self.__connect_to_ctl()
        if not self.dbms:
            info = self._ctl_connection.get_server_info()
            self.dbms = "mariadb" if "MariaDB" in info else "mysql"
        return self.dbms

    def __master_status(self):
        with self._ctl_connection.cursor() as cur:
            try:
                cur.execute("SHOW BINARY LOG STATUS")
            except pymysql.err.ProgrammingError as exc:
                if not exc.args or exc.args[0] != 1064:
                    raise
                cur.execute("SHOW MASTER STATUS")
            row = cur.fetchone()
        if row is None:
            raise BinLogNotEnabled()
        values = list(row.values())
        return values[0], values[1]

    def __start_point(self):
        """(file, position, MariaDB GTID list, MySQL GTID set) as upstream starts."""
        if self.auto_position:
            if self.is_mariadb or ":" not in str(self.auto_position):
                return None, 4, str(self.auto_position), None
            return None, 4, None, str(self.auto_position)
        if self.is_mariadb:
            return None, 4, None, None    # an empty file name: the first binlog
        if self.log_file is None or self.log_pos is None:
            self.log_file, self.log_pos = self.__master_status()
        position = self.log_pos if self.__resume_stream else 4
        return self.log_file, max(int(position), 4), None, None

    def __connect_to_stream(self):
        from binlake.live.source import LiveOptions, LiveSource
        from binlake.read.reader import BinlogReader
        if not self.__connected_ctl:
            self.__connect_to_ctl()
        file, position, mariadb_gtid, mysql_set = self.__start_point()
        heartbeat = float(self.slave_heartbeat) if self.slave_heartbeat else 5.0
        options = LiveOptions(
            {k: v for k, v in self.__connection_settings.items() if k != "cursorclass"},
            file=file, position=position, mariadb_gtid=mariadb_gtid, mysql_gtid_set=mysql_set,
            gtid_strict_mode=mariadb_gtid is not None, to_last_log=True,
            stop_never=bool(self.__blocking), server_id=self.__server_id, heartbeat=heartbeat)
        source = LiveSource(options, connection_class=_connection_class(self))
        self._live = source
        self._start = position
        self._file_name = None
        self._pending = None
        self._events = iter(BinlogReader(source, schema=False))
        self.__connected_stream = True
        self.__use_checksum = True
        self._ctx = Context(self.table_map, self._ctl_connection, self.mysql_version,
                            self.__get_dbms(), True, self.__verify_checksum,
                            self.__ignore_decode_errors, _raw_event)

    # -- events -------------------------------------------------------------------------
    def fetchone(self):
        while True:
            if self.end_log_pos and self.is_past_end_log_pos:
                return None
            if not self.__connected_stream:
                self.__connect_to_stream()
            event = self.__next_binlake()
            if event is None:
                self.close()
                return None
            found = self.__handle(event)
            if found is not None:
                return found

    def __next_binlake(self):
        """binlake's next event, after the artificial rotate naming a new file."""
        pending = getattr(self, "_pending", None)
        if pending is not None:
            self._pending = None
            return pending
        try:
            event = next(self._events)
        except StopIteration:
            return None
        name = event.header.file
        if name != self._file_name:
            start = self._start if self._file_name is None else 4
            self._file_name = name
            self._pending = event
            return _artificial_rotate(name, start, self._live)
        return event

    def __handle(self, event):
        """Upstream's per-event state and filters; the event to give, or None."""
        header = event.header
        code = header.type_code
        cls = _dispatch.event_class(code)
        if code == B.ROTATE_EVENT:
            self.log_pos, self.log_file = event.position, event.next_file
            if header.timestamp != 0:
                self.table_map.clear()   # table ids are one server run's
        elif header.log_pos and not self.__resent_fde(event):
            self.log_pos = header.log_pos
        if self.end_log_pos and self.log_pos >= self.end_log_pos:
            self.is_past_end_log_pos = True
        if code == B.FORMAT_DESCRIPTION_EVENT:
            self.__learn_format(event)
        if self.skip_to_timestamp and header.timestamp < self.skip_to_timestamp:
            return None
        if code == B.MARIADB_ANNOTATE_ROWS_EVENT and not (
                self.is_mariadb and self.__annotate_rows_event):
            return None   # binlake asks for them; upstream only when told to
        if cls is TableMapEvent:
            return self.__table_map(event)
        if cls not in self.__allowed_events:
            return None
        if issubclass(cls, RowsEvent) and not self.__table_wanted(event.table_id):
            return None
        if code == B.QUERY_EVENT and event.query.startswith("# Dummy event"):
            return None
        return _dispatch.convert(event, cls, self._ctx)

    def __resent_fde(self, event) -> bool:
        """The format description a mid-file start gets first (not in the file there)."""
        return (event.header.type_code == B.FORMAT_DESCRIPTION_EVENT and event.header.pos == 4
                and self._start > 4 and self.log_file == event.header.file)

    def __learn_format(self, event):
        version = event.server_version.rstrip("\0").split("-")[0]
        self.mysql_version = tuple(int(n) for n in version.split(".") if n.isdigit())
        self.__post_header_lengths = tuple(event.post_header_lengths)
        self._ctx.mysql_version = self.mysql_version

    def __table_wanted(self, table_id) -> bool:
        return table_id in self.table_map

    def __table_map(self, event):
        schema, table = event.database, event.table
        if (self.__only_tables is not None and table not in self.__only_tables) or \
                (self.__ignored_tables is not None and table in self.__ignored_tables) or \
                (self.__only_schemas is not None and schema not in self.__only_schemas) or \
                (self.__ignored_schemas is not None and schema in self.__ignored_schemas):
            self.table_map.pop(event.table_id, None)
            return None
        if self.__freeze_schema and event.table_id in self.table_map:
            return None
        found = _dispatch.convert(event, TableMapEvent, self._ctx)
        self.table_map[event.table_id] = found.get_table()
        return found if TableMapEvent in self.__allowed_events else None

    def _allowed_event_list(self, only_events, ignored_events, filter_non_implemented_events):
        events = set(only_events) if only_events is not None else set(_dispatch.DEFAULT_EVENTS)
        for cls in ignored_events or ():
            events.remove(cls)
        if filter_non_implemented_events:
            events.discard(_dispatch.ev.NotImplementedEvent)
        return frozenset(events)

    def __iter__(self):
        return iter(self.fetchone, None)


def _raw_event(header):
    """The bytes of an event just read (binlake's live file keeps the recent ones)."""
    from binlake.live.source import live_file
    found = live_file(header.file)
    return None if found is None else found.raw_event(header.pos, header.length)


def _artificial_rotate(name: str, position: int, source):
    """The rotate the server sends before a file's events (binlake's reader,
    reading the file's bytes, does not yield it): as binlake's event."""
    from binlake.read.events.base import EventHeader
    from binlake.read.events.control import RotateEvent as BinlakeRotate
    identity = getattr(source, "server_identity", None) or {}
    length = 19 + 8 + len(name.encode()) + 4
    header = EventHeader(name, 0, 0, B.ROTATE_EVENT, identity.get("server_id") or 0,
                         length, 0, 0x20, 0)
    return BinlakeRotate(header, position, name)
