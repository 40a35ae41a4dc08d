"""The snapshot's read view: a consistent read of a live server, and the
binlog position it is at; the session the snapshot reads in.

Strategy (as Debezium and `mysqldump --single-transaction --master-data`):
- MariaDB: START TRANSACTION WITH CONSISTENT SNAPSHOT, then the status
  variables Binlog_snapshot_file/_position give the binlog position of that
  very view, with no lock; BINLOG_GTID_POS() its GTID state.
- MySQL: FLUSH TABLES WITH READ LOCK for the moment it takes to open the view
  and read SHOW MASTER STATUS (SHOW BINARY LOG STATUS from 8.4), then UNLOCK.
A read view cannot be shared between connections: what it reads, its one
connection reads. The session's settings (`_session`) are those the rows'
exact text is read with (binlake.spark.snapshot.server_rows).
"""

from __future__ import annotations

import datetime as dt
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from binlake.connection.settings import SchemaSourceError, connect


@dataclass(frozen=True)
class SnapshotPoint:
    """Where the snapshot's read view sits in the binlog."""
    file: str
    pos: int
    gtid: str | None
    time: str  #: UTC, ISO 8601

    def to_json(self) -> dict:
        return asdict(self)


def _is_mariadb(connection) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        return "mariadb" in cursor.fetchone()[0].lower()


@contextmanager
def _session(address):
    """A connection for the snapshot's reads: the text protocol's text as
    is (bytes when binary), time zone UTC, no sql_mode, REPEATABLE READ,
    GROUP_CONCAT as long as a packet (`_pages`); closed at the end, a
    server's error raised as one line."""
    import pymysql
    connection = connect(address, "--snapshot-from")
    connection.decoders = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00', sql_mode = '', "
                           "group_concat_max_len = @@max_allowed_packet")
            cursor.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield connection
    except pymysql.err.MySQLError as exc:
        raise SchemaSourceError(f"--snapshot-from: {exc.args[-1] if exc.args else exc}") from None
    finally:
        connection.close()


def _open_read_view(cursor, mariadb: bool | None = None) -> SnapshotPoint:
    """Open a read view at an exact binlog position, its point: MariaDB's
    own (lock-free), or MySQL's under a moment's global read lock."""
    if mariadb is None:
        mariadb = _is_mariadb(cursor.connection)
    if mariadb:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cursor.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {name.lower(): value for name, value in cursor.fetchall()}
        file, pos = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
        gtid = None
        if file:
            cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, int(pos)))
            gtid = cursor.fetchone()[0] or None
    else:
        cursor.execute("FLUSH TABLES WITH READ LOCK")
        try:
            cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            try:
                cursor.execute("SHOW BINARY LOG STATUS")
            except Exception:  # noqa: BLE001 - before 8.4
                cursor.execute("SHOW MASTER STATUS")
            found = cursor.fetchone()
        finally:
            cursor.execute("UNLOCK TABLES")
        file, pos = (found[0], found[1]) if found else (None, None)
        gtid = (found[4] or None) if found and len(found) > 4 else None
    if not file:
        raise SchemaSourceError("--snapshot-from: the server writes no binary log "
                                "(log_bin is OFF): there is no position to follow from")
    return SnapshotPoint(file, int(pos), gtid, utc_now())


def utc_now() -> str:
    """Now, as the manifest's floors say when they were taken (ISO 8601, UTC)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")
