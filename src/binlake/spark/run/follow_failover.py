"""The follower's next server: whether the server at its address is the one
the lake's copies are of, and where the lake goes on in another's binlogs.

Strategy: the backup manifest of the newest copies names the server they
are of; a server answering with another server id is the next primary of
the lake's replication domain (binlake.spark.read.failover). Every whole
transaction copied from the old server goes in first (the follower's
`catch_up` run), then the lake's GTID state is looked up in the new
server's binlogs: the binlog it goes on in is asked for (`moved`), and
once the new server's first copy holds what the server had when asked,
the manifest records the floor there (`place`). Anything that would not
go on exactly (no GTIDs, a server of the other flavor than the old one's:
MariaDB after MySQL or MySQL after MariaDB, a lock-free snapshot still
reading the old server, GTIDs the new server does not hold) is refused in
one line, before anything is written.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from binlake.spark.read.failover import (FAILOVER_PREFIX, FailoverRefused, check_holds,
                                         continuation, copies_prefix, current_epoch, gtid_text,
                                         lake_gtid_state, starting_binlog, wait_for_copy)
from binlake.spark.read.ranges import FAILOVER_FILES, name_sequence
from binlake.spark.snapshot.read_view import utc_now
from binlake.spark.state.progress import snapshot_reading
from binlake.spark.state.manifest import SnapshotFloor
from binlake.spark.state.store import load_manifest, save_manifest


@dataclass(frozen=True)
class Placing:
    """A failover's next server: its copies' number, the binlog the lake goes
    on in and its size when asked, the lake's GTID state."""
    epoch: int
    file: str
    size: int
    state: dict


class NextServer:
    """The server changes of the follower of the lake `out`, whose copies
    are under `prefix`: `catch_up()` runs the pipeline over the copies,
    `stop` is set when the follower stops (a server restarting is waited
    for until then)."""

    def __init__(self, out: str, prefix: str, log, stop: threading.Event, catch_up):
        self.out, self.prefix, self.log = out, prefix, log
        self._stop, self._catch_up = stop, catch_up

    def moved(self, source) -> tuple[int, Placing | None]:
        """(the number of the server whose copies the copier writes, where the
        lake goes on in its binlogs when it has yet to be placed there): a
        server that is not the one the newest copies are of is the next one,
        after a failover, refused in one line where its GTIDs say the lake
        would not go on exactly."""
        from binlake.live.backup import BackupManifest
        epoch = current_epoch(self.prefix)
        known = BackupManifest(copies_prefix(self.prefix, epoch)).server
        placed = epoch == 0 or load_manifest(self.out).floor_of(epoch * FAILOVER_FILES)
        if known is None and placed:
            return epoch, None  # a new lake: the server is the one it follows
        identity, mariadb, binlog_pos = self._answering(source)
        moved = known is not None and identity["server_id"] != known.get("server_id")
        if not moved and placed:
            return epoch, None
        where = source.where
        if known is not None and mariadb != (known.get("server_uuid") is None):
            # (MySQL has a server UUID, MariaDB none)
            raise FailoverRefused(
                f"{where} is server id {identity['server_id']}, and the lake's copies are of "
                f"server id {known.get('server_id')}: going on on another server needs GTIDs "
                f"of one kind, and this is {'MariaDB' if mariadb else 'MySQL'} after "
                f"{'MySQL' if mariadb else 'MariaDB'}; nothing was changed")
        if snapshot_reading(load_manifest(self.out).chunks):
            raise FailoverRefused(
                f"{where} is another server than the one the lock-free snapshot reads (its "
                "chunks are positions in that server's binlog): finish the snapshot there, or "
                "start a new lake; nothing was changed")
        if moved:
            # Every whole transaction copied from the old server goes in first.
            self._catch_up()
            epoch += 1
        state = lake_gtid_state(load_manifest(self.out), self.prefix)
        if not state:
            raise FailoverRefused(
                f"{where} is another server than the one the lake's copies are of, and the "
                "lake has no GTID to go on by (its binlogs have none): nothing was changed")
        check_holds(binlog_pos, state, f"{where} is server id {identity['server_id']}" + (
            f", not server id {known.get('server_id')} the lake followed" if moved else ""))
        file, size = starting_binlog(source, state)
        self.log(f"{where} (server id {identity['server_id']}) is another server than the one "
                 f"the lake followed: the lake's GTIDs {gtid_text(state)} go on in its {file}")
        return epoch, Placing(epoch, file, size, state)

    def _answering(self, source) -> tuple[dict, bool, str]:
        """(identity, is MariaDB, the GTIDs in its binlog: MariaDB's
        @@gtid_binlog_pos, MySQL's @@GLOBAL.gtid_executed) of the server at
        the source's address; a server restarting is waited for, as the
        copier waits for one."""
        from binlake.live.protocol import ReplicationError
        options, delay = source.options, 0.5
        while True:
            connection = source.connection_class(options.settings, server_id=options.server_id,
                                                 heartbeat=0, read_timeout=30)
            try:
                connection.connect()
                mariadb = connection.is_mariadb
                position = _gtids_logged(connection)
                return connection.identity(), mariadb, position
            except ReplicationError as exc:
                if not (exc.retryable and options.stop_never) or self._stop.wait(delay):
                    raise
                self.log(f"warning: {exc}; connecting again in {delay:.0f} s")
                delay = min(2 * delay, options.max_backoff)
            finally:
                connection.close()

    def place(self, placing: Placing, copier) -> bool:
        """Record where the lake goes on in the new server's first copy, once
        the copy holds what the server had when asked (False: stopped first)."""
        local = FAILOVER_PREFIX.format(placing.epoch) + placing.file
        path = os.path.join(self.prefix, local)
        if not wait_for_copy(path, placing.size, copier, self._stop):
            return False
        at = continuation(path, placing.size, placing.state)
        manifest = load_manifest(self.out)
        save_manifest(self.out, manifest.failed_over(
            SnapshotFloor(local, at, name_sequence(local), gtid_text(placing.state),
                          utc_now())))
        self.log(f"the lake goes on in {local} at {at}")
        return True


def _gtids_logged(connection) -> str:
    """MariaDB's @@gtid_binlog_pos, MySQL's @@GLOBAL.gtid_executed ("" before
    MySQL 5.6: no GTIDs)."""
    from binlake.live.protocol import ReplicationError
    if connection.is_mariadb:
        return str(connection.variable("gtid_binlog_pos") or "")
    try:
        return str(connection.variable("gtid_executed") or "")
    except ReplicationError as exc:
        if exc.retryable:
            raise
        return ""


__all__ = ["NextServer", "Placing"]
