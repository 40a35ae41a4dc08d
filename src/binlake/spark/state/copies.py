"""The follower's copies of the server's binlogs (`_binlake/binlogs/`),
removed once the lake needs them no more: `--keep-binlogs DURATION`.

Strategy: the lake's views and tables hold what was read from a copy, so
a copy is only needed while something may still read it. The rule, each
condition read from a record on disk, never guessed: a copy is removed
when
- the server closed it: the copier clears the in-use flag of a copy's
  format description when its ROTATE or STOP arrives (binlake.live.backup),
  so the copy itself says so; not a byte more will be appended. (Read
  from the copy, not the backup's manifest: that is the copier's, a
  journal another reader must not replay beside it. A binlog the server
  never closed, a crash's, is kept.)
- it is not the newest copy of its server: the copier goes on from the
  newest (binlake.live.backup.resume_point), and a failover reads the
  lake's GTID state from the newest copy read
  (binlake.spark.read.failover.lake_gtid_state);
- the lake has read all of it: the manifest's end for it is the copy's
  size (events/ and changes/), changes/ holds it to that end for some
  selection (`--tables`), and tables/ has taken it in (their state's
  `through` reaches that end: a run refused, or killed before its tables
  committed, leaves it behind, and a rebuild under way records none);
- it was last written `keep` seconds ago or more (its mtime: when the
  server closed it, give or take the copier's last fsync).
After that, what would read a removed copy refuses in one line naming the
way on: `--tables` newly selecting tables that a batch lake reads the
copies again for (binlake.spark.run.binlogs.catch_up: --snapshot-tables),
a failover whose GTID state is in a copy gone. `--as-of` and `--rebuild`
read changes/ and tables/, never the copies.

Rule: the decision is recorded before the files go (FileRead.copy_removed,
through binlake.spark.state.store.remove_copies, the state's one writer),
so a kill between the two leaves copies recorded removed and still there,
which the next pass removes whatever their age; a copy gone but recorded
as there (deleted by hand) is a copy not given, as to any run. A pass
costs a listing of binlogs/, a stat per copy and two bytes of each one
read whole.
"""

from __future__ import annotations

import os
import re
import time

from binlake.constants import LogEventFlag
from binlake.live.backup import IN_USE_AT
from binlake.spark.read.ranges import FAILOVER_FILES, name_sequence
from binlake.spark.state.manifest import Manifest
from binlake.spark.state.run_undo import RunUndo
from binlake.spark.state.store import (BINLOGS, folder_path, has_staged_state, has_state,
                                       lake_lock, load_manifest, remove_copies)

#: How long a copy read whole is kept by default (`--keep-binlogs`).
DEFAULT_KEEP = "1d"
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_duration(text: str, option: str = "--keep-binlogs") -> float:
    """Seconds of a duration: 90s, 30m, 12h, 1d, 2w, 1.5h; 0 alone: none
    (a copy goes as soon as the lake has read it). A ValueError in one line
    otherwise."""
    match = _DURATION.match(text or "")
    if not match or (not match.group(2) and float(match.group(1)) != 0):
        raise ValueError(f"{option} {text}: a duration such as 30m, 12h or 1d (s, m, h, d, w); "
                         "0: as soon as the lake has read a copy")
    return float(match.group(1)) * _UNITS[match.group(2) or "s"]


def removable(manifest: Manifest, folder: str, keep: float, now: float) -> list[str]:
    """The copies in `folder` (binlogs/) the module's rule removes, oldest
    first, with those the manifest records removed and still there."""
    copies = {}
    for name in os.listdir(folder):
        seq = name_sequence(name)
        if seq is not None and not name.startswith("."):
            copies[name] = (seq, os.stat(os.path.join(folder, name)))
    newest = {}
    for seq, _ in copies.values():
        server = seq // FAILOVER_FILES
        newest[server] = max(newest.get(server, seq), seq)
    state = manifest.tables
    through = state.through if state is not None and not state.mixed \
        and state.as_of is None else {}
    found = []
    for name, (seq, stat) in copies.items():
        entry = manifest.files.get(name)
        if entry is None:
            continue  # not read: needed
        if entry.copy_removed:
            found.append((seq, name))  # decided before a kill
            continue
        if (seq < newest[seq // FAILOVER_FILES] and entry.end >= stat.st_size
                and (entry.held is None or any(h.end >= entry.end for h in entry.held))
                and through.get(name, -1) >= entry.end
                and now - stat.st_mtime >= keep and _closed(os.path.join(folder, name))):
            found.append((seq, name))
    return [name for _, name in sorted(found)]


def _closed(path: str) -> bool:
    """Whether the server closed the copy at `path`: its format
    description's LOG_EVENT_BINLOG_IN_USE_F is clear."""
    with open(path, "rb") as handle:
        handle.seek(IN_USE_AT)
        flags = handle.read(2)
    return len(flags) == 2 and not int.from_bytes(flags, "little") & int(
        LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F)


def remove_old_copies(out: str, keep: float, now: float | None = None) -> list[str]:
    """The copies of the lake `out` its rule removes, removed (recorded in
    the manifest first); their names. Holds the lake's lock (a follower
    holds it already: nested), so never beside a run; none while a killed
    run waits to be recovered."""
    if not has_state(out) or not os.path.isdir(folder_path(out, BINLOGS)):
        return []
    with lake_lock(out):
        if has_staged_state(out) or os.path.isdir(RunUndo(out).folder):
            # A killed run's manifest is in flight: its recovery (the next
            # run's) decides what the lake holds first.
            return []
        manifest = load_manifest(out)
        names = removable(manifest, folder_path(out, BINLOGS), keep,
                          time.time() if now is None else now)
        if names:
            recorded = [name for name in names if not manifest.files[name].copy_removed]
            remove_copies(out, manifest.copies_removed(recorded) if recorded else manifest,
                          names)
        return names


__all__ = ["DEFAULT_KEEP", "parse_duration", "removable", "remove_old_copies"]
