"""The follower moved to another server of the lake's replication domain:
GTIDs (MariaDB's GTID lists, MySQL's GTID sets) say where the lake goes on
in that server's binlogs.

Strategy: binlog positions are one server's, GTIDs the domain's. One
function per step, for both flavors: a state is MariaDB's {domain:
(server_id, seq_no)} or MySQL's set of GTIDs executed (binlake.gtids.GtidSet).
- Each server the follower has copied from has copies of its own in the
  lake's `_binlake/binlogs/`: the first server's under their own names,
  the server after the Nth failover's as `failover<N>~<name>` (two servers
  often name their binlogs alike). Their numbers follow every earlier
  server's: N * FAILOVER_FILES + the server's own (binlake.spark.read.ranges.
  name_sequence), so the changes views keep one order by (file_seq, pos).
- A follower started on a server that is not the one its copies are of
  first reads every whole transaction copied from the old one. The lake's
  GTID state is then that of its last position: the GTID list (MySQL: the
  Previous_gtids) its last binlog starts with, and each GTID read after it
  (`lake_gtid_state`).
- The new server must hold that state (`check_holds`): MariaDB's, for each
  of its domains, a binlog that reaches the lake's sequence number, and the
  lake's very GTIDs (MariaDB's own strict-mode check when a replica
  connects by GTID); MySQL's, every GTID of the lake's set in its
  @@GLOBAL.gtid_executed. `starting_binlog` connects as a replica at the
  lake's state (MySQL: COM_BINLOG_DUMP_GTID with the lake's set, as GTID
  auto-positioning does) and names the file the server starts it in
  (MySQL's: the first binlog holding a transaction outside the set).
- The new server's copies start at that file's beginning, byte for byte
  as ever; the lake goes on in it after the last transaction it holds
  already (`continuation`: every transaction before it held, none after),
  recorded in the lake's manifest as the failover's floor before any run
  reads the new copies (binlake.spark.state.manifest.Manifest.failed_over).

Rule: what would leave a gap or a repeat is refused in one line with
nothing changed: a lake without a GTID state (a binlog without GTIDs), a
server of the other flavor, a server lacking transactions the lake holds
(one missing interval named), GTIDs the lake holds interleaved with ones
it does not, a lock-free snapshot still reading (its chunks are positions
on the old server).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace

from binlake.constants import EventType as E
from binlake.gtids import GtidSet, parse_gtid_list
from binlake.spark.read.ranges import FAILOVER_FILES, FIRST_EVENT

#: How a later server's copies are named: `failover<N>~` + the server's name.
FAILOVER_PREFIX = "failover{}~"
_BACKUP_MANIFEST = re.compile(r"^failover(\d+)~\.binlake-backup\.json$")
_GTID = int(E.GTID_EVENT)           # MariaDB's GTID event (a transaction's first)
_GTID_LIST = int(E.GTID_LIST_EVENT)
#: MySQL's: a transaction's first event (with a GTID, tagged, or anonymous),
#: and the set of GTIDs executed before the binlog, at its start
_MYSQL_GTIDS = (int(E.GTID_LOG_EVENT), int(E.GTID_TAGGED_LOG_EVENT),
                int(E.ANONYMOUS_GTID_LOG_EVENT))
_PREVIOUS_GTIDS = int(E.PREVIOUS_GTIDS_LOG_EVENT)


class FailoverRefused(ValueError):
    """The lake cannot go on exactly on this server."""


def copies_prefix(folder: str, epoch: int) -> str:
    """The prefix of the copies of the server after the `epoch`th failover (0: the first server)."""
    return os.path.join(folder, FAILOVER_PREFIX.format(epoch) if epoch else "")


def current_epoch(folder: str) -> int:
    """How many failovers the copies in `folder` have seen (the newest server's number)."""
    found = [int(m.group(1)) for m in map(_BACKUP_MANIFEST.match, _listing(folder)) if m]
    return max(found, default=0)


def _listing(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


# -- the lake's GTID state ---------------------------------------------------------------

def lake_gtid_state(manifest, folder: str) -> dict[int, tuple[int, int]] | GtidSet:
    """The GTIDs the lake holds: MariaDB's {domain: (server_id, seq_no)} of
    the last transaction in each domain, MySQL's set of every GTID executed
    (a GtidSet): from the newest binlog it has read whose read part holds a
    GTID list (MySQL: Previous_gtids), that and every GTID after it; the
    snapshot's GTID state for a lake that has read none since. {}: none."""
    files = sorted(manifest.files.items(), key=lambda item: item[1].file_seq)
    for index in range(len(files) - 1, -1, -1):
        name, entry = files[index]
        if not os.path.exists(os.path.join(folder, name)):
            # (the newest copy is never removed: binlake.spark.state.copies)
            raise FailoverRefused(
                f"the lake's GTID state is read from its copy of {name}, which was removed "
                "(--keep-binlogs): start a new lake from the new server with binlake pipeline "
                "-R --snapshot-from --out NEWDIR; nothing was changed")
        state, listed = gtids_in(os.path.join(folder, name), entry.end)
        if not listed:
            continue  # no GTID list in its read part: the one before it says more
        for name, entry in files[index + 1:]:
            state, _ = gtids_in(os.path.join(folder, name), entry.end, state)
        return state if _any_gtid(state) else {}
    if manifest.snapshot is not None and manifest.snapshot.gtid:
        return parse_gtid_state(manifest.snapshot.gtid)
    return {}


def parse_gtid_state(text: str) -> dict[int, tuple[int, int]] | GtidSet:
    """A GTID state as `gtid_text` writes it: a MySQL GTID set (`uuid:1-5`)
    or a MariaDB GTID list (`0-1-5`)."""
    return GtidSet.parse(text) if ":" in text else parse_gtid_list(text)


def _any_gtid(state) -> bool:
    return bool(state.intervals if isinstance(state, GtidSet) else state)


def gtids_in(path: str, end: int, state: dict | GtidSet | None = None,
             start: int = FIRST_EVENT) -> tuple[dict | GtidSet, bool]:
    """(the GTID state `state` carried through `path` from `start` to `end`
    (MariaDB's: the last GTID of each domain; MySQL's: the set of GTIDs
    executed), whether that part holds a GTID list (MySQL: Previous_gtids):
    the state where the file begins)."""
    state = state if isinstance(state, GtidSet) else dict(state or {})
    listed = False
    for _, is_list, gtids in _gtid_events(path, end, start):
        listed = listed or is_list
        if isinstance(gtids, GtidSet):  # MySQL: the set grows by each
            state = gtids.union(state) if isinstance(state, GtidSet) else gtids
            continue
        for domain, server, seq in gtids:
            if not is_list or domain not in state or seq >= state[domain][1]:
                state[domain] = (server, seq)
    return state, listed


def _gtid_events(path: str, end: int, start: int = FIRST_EVENT):
    """(position, whether a GTID list, its GTIDs) of each GTID event and
    GTID list of `path` in [start, end): MariaDB's as [(domain, server,
    seq)] (a GTID event: one), MySQL's as a GtidSet (Previous_gtids; a GTID
    event: one GTID, an anonymous one: none). A header walk finds them, the
    reader's decoders decode them alone."""
    from binlake.read.cursor import Cursor
    from binlake.read.events.gtid import (decode_gtid, decode_gtid_tagged, decode_mariadb_gtid,
                                          decode_mariadb_gtid_list, decode_previous_gtids)
    from binlake.read.scan import scan
    mysql = {int(E.GTID_LOG_EVENT): decode_gtid, int(E.GTID_TAGGED_LOG_EVENT): decode_gtid_tagged}
    found = scan(path, start=start, stop=end)
    if found.framing is None:
        return
    header, checksum = found.framing.header_length, found.framing.checksum_len
    with open(path, "rb") as handle:
        for pos, code in zip(found.positions, found.types):
            if code not in (_GTID, _GTID_LIST, _PREVIOUS_GTIDS, *_MYSQL_GTIDS):
                continue
            head = os.pread(handle.fileno(), header, pos)
            server, length = int.from_bytes(head[5:9], "little"), int.from_bytes(head[9:13], "little")
            body = os.pread(handle.fileno(), length - header - checksum, pos + header)
            cursor = Cursor(body, 0, len(body), pos + header, path)
            if code == _GTID:
                event = decode_mariadb_gtid(None, cursor, None)
                yield pos, False, [(event.domain_id, server, event.seq_no)]
            elif code == _GTID_LIST:
                yield pos, True, decode_mariadb_gtid_list(None, cursor, None).gtids
            elif code == _PREVIOUS_GTIDS:
                yield pos, True, GtidSet.parse(decode_previous_gtids(None, cursor, None).gtid_set)
            elif code in mysql:
                event = mysql[code](None, cursor, None)
                yield pos, False, GtidSet({(event.sid, (event.tag or "").lower() or None):
                                        [(event.gno, event.gno)]})
            else:  # anonymous: a transaction without a GTID
                yield pos, False, GtidSet()


def gtid_text(state) -> str:
    """A GTID state as the server writes it: MySQL's set, MariaDB's list."""
    if isinstance(state, GtidSet):
        return str(state)
    return ",".join(f"{domain}-{server}-{seq}" for domain, (server, seq) in sorted(state.items()))


# -- the new server ----------------------------------------------------------------------

def check_holds(binlog_pos: str, state, who: str) -> None:
    """Refuse a server (`who`) whose binlog (`binlog_pos`: MariaDB's
    @@gtid_binlog_pos, MySQL's @@GLOBAL.gtid_executed) does not reach the
    lake's GTIDs: in every domain (MariaDB), every one of its set (MySQL: a
    replica behind, another domain's server)."""
    if isinstance(state, GtidSet):
        executed = GtidSet.parse(binlog_pos) if binlog_pos.strip() else GtidSet()
        missing = state.difference(executed)
        if missing.intervals:
            (sid, tag), intervals = min(missing.intervals.items(), key=lambda item: item[0][0])
            first, last = intervals[0]
            lacked = f"{sid}{':' + tag if tag else ''}:{first}" + (f"-{last}" if last > first
                                                                     else "")
            raise FailoverRefused(
                f"{who}, and its gtid_executed lacks {lacked} while the lake holds "
                f"{gtid_text(state)}: it lacks transactions the lake holds (a replica "
                "behind, or another topology's server); nothing was changed")
        return
    reached = parse_gtid_list(binlog_pos) if binlog_pos.strip() else {}
    for domain, (server, seq) in sorted(state.items()):
        if domain not in reached or reached[domain][1] < seq:
            ends = (f"ends at {'-'.join(map(str, (domain, *reached[domain])))}"
                    if domain in reached else "has no transaction")
            raise FailoverRefused(
                f"{who}, and its binlog {ends} in GTID domain {domain} while the lake holds "
                f"{domain}-{server}-{seq}: it lacks transactions the lake holds (a replica "
                "behind, or another domain's server); nothing was changed")


def starting_binlog(source, state) -> tuple[str, int]:
    """(binlog, its size now) where the server at the address of `source`
    (a LiveSource) starts a replica whose GTID state is the lake's,
    connecting as one: MariaDB's in strict mode (the server refuses a state
    its binlog does not hold), MySQL's by GTID auto-positioning (the
    server's first binlog holding a transaction outside the set;
    binlake.live.source)."""
    from binlake.live.protocol import ReplicationError
    from binlake.live.source import LiveSource
    mysql = isinstance(state, GtidSet)
    probe = LiveSource(replace(source.options, file=None, position=FIRST_EVENT,
                               mariadb_gtid=None if mysql else gtid_text(state),
                               gtid_strict_mode=not mysql,
                               mysql_gtid_set=gtid_text(state) if mysql else None,
                               to_last_log=False, stop_never=False,
                               retries=0, on_progress=None, origin_server_id=None,
                               resume_gtid=None), source.connection_class)
    try:
        name = next((live_file.name for live_file in probe), None)
    except ReplicationError as exc:
        raise FailoverRefused(f"the lake cannot go on from its GTIDs {gtid_text(state)} on "
                              f"{probe.where}: {exc.detail if hasattr(exc, 'detail') else exc}; "
                              "nothing was changed") from None
    finally:
        probe.close()
    if name is None:
        raise FailoverRefused(f"{probe.where} named no binlog to start the lake's GTID state "
                              f"{gtid_text(state)} in; nothing was changed")
    sizes = dict(_binary_logs(source))
    return name, sizes.get(name, FIRST_EVENT)


def _binary_logs(source) -> list[tuple[str, int]]:
    options = source.options
    connection = source.connection_class(options.settings, server_id=options.server_id,
                                         heartbeat=0, read_timeout=30)
    try:
        connection.connect()
        return [(str(row[0]), int(row[1])) for row in connection.query("SHOW BINARY LOGS")]
    finally:
        connection.close()


def continuation(path: str, size: int, state) -> int:
    """Where the lake goes on in the new server's copy `path`, whole up to
    `size`: after the last transaction of it the lake holds (FIRST_EVENT
    where it holds none of it; `state` as `lake_gtid_state` gives it).
    Refused where a transaction it holds follows one it does not (another
    history, not a replica's)."""
    from binlake.read.scan import scan
    found = scan(path, stop=size)
    starts = sorted(set(found.boundaries))
    after, unheld = FIRST_EVENT, None
    for pos, is_list, gtids in _gtid_events(path, size):
        if is_list:
            continue
        gtid, held = _held(gtids, state, pos)
        if held:
            if unheld is not None:
                raise FailoverRefused(
                    f"{os.path.basename(path)}: the transaction {unheld} the lake does not "
                    f"hold comes before {gtid}, which it holds: this server's history is not "
                    "the lake's; nothing was changed")
            later = [start for start in starts if start > pos]
            after = later[0] if later else found.closed_end
        elif unheld is None:
            unheld = gtid
    return after


def _held(gtids, state, pos: int) -> tuple[str, bool]:
    """(the GTID of a transaction as the server writes it, whether the lake
    holds it): MySQL's by its set, MariaDB's by the domain's last."""
    if isinstance(gtids, GtidSet):
        if not gtids.intervals:
            return f"without a GTID at {pos}", False
        return str(gtids), isinstance(state, GtidSet) and not gtids.difference(state).intervals
    (domain, server, seq), = gtids
    held = isinstance(state, dict) and domain in state and seq <= state[domain][1]
    return f"{domain}-{server}-{seq}", held


def wait_for_copy(path: str, size: int, copier, stopped, timeout: float = 600.0) -> bool:
    """Until the copy at `path` is `size` bytes long (False: the follower was
    stopped first); the copier's failure is raised. (A copier that ends at
    the server's last binlog, without --follow, stops the follower as it
    ends: the copy may be whole then.)"""
    deadline = time.monotonic() + timeout

    def copied() -> bool:
        return os.path.exists(path) and os.path.getsize(path) >= size
    while not copied():
        if copier.failure is not None:
            raise copier.failure
        if stopped.wait(0.05):
            return copied()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not reach {size} bytes in {timeout:.0f} s")
    return True


__all__ = ["FailoverRefused", "copies_prefix", "current_epoch", "lake_gtid_state", "gtids_in",
           "gtid_text", "parse_gtid_state", "check_holds",
           "starting_binlog", "continuation", "wait_for_copy", "FAILOVER_FILES"]
