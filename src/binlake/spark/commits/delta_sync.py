"""Delta commits that survive a power cut: the files a log entry names are
on disk whenever the entry is.

Strategy: delta-rs writes a table's data files and its log entries without
fsync. Every function of binlake.spark.commits.delta that commits is `durable`:
when it returns, each log entry it added has been read back, the data
files (`add`) and change data files (`cdc`) it names fsynced with their
folders, then the entry itself and `_delta_log/` (and a checkpoint written
beside it). Where binlake hands delta-rs files it did not write
(binlake.spark.commits.delta.commit_table: Spark's files), they are fsynced before
the entry is written (`sync_ahead`), so the order is the safe one: bytes,
then the name. Where delta-rs writes the files and the entry in one call
(a MERGE, an append, compaction), it cannot be: a power cut in the moments
between its write and the fsync that follows can leave an entry naming a
file that lost its bytes. That window is a run's last moments per table,
not a run's whole life as before.
"""

from __future__ import annotations

import functools
import json
import os
from urllib.parse import unquote

from binlake.atomic import fsync_files

LOG_DIR = "_delta_log"
#: The file naming a table's newest checkpoint (Delta's protocol).
LAST_CHECKPOINT = "_last_checkpoint"
#: The files each table's log removed, as this process made its entries
#: durable: table folder -> {path in it: the remove's deletionTimestamp
#: (ms)}. What binlake.spark.commits.delta_upkeep deletes past a short
#: retention, where a checkpoint may drop a remove action (Delta keeps
#: them no longer than the retention) before a lite vacuum reads it.
REMOVED: dict[str, dict[str, int]] = {}


def durable(commit):
    """`commit(uri, ...)`, each Delta log entry it added to the table at
    `uri` made durable with every file it names before it returns."""
    @functools.wraps(commit)
    def committing(uri, *args, **kwargs):
        before = latest_version(uri)
        try:
            return commit(uri, *args, **kwargs)
        finally:  # a commit that raised after its entry was written is made durable too
            sync_versions(uri, after=before)
    return committing


def latest_version(uri: str) -> int:
    """The newest log entry's version of the table at `uri` (-1: none), by
    its name (no snapshot is loaded): from the newest this process saw,
    stat by stat, as entries come one version after another; the log's
    folder is listed only for a table not seen yet (or made anew). A
    follower's table gains an entry a second, and Delta keeps them for a
    month: listing them at every commit would cost more, month by month."""
    log = os.path.join(uri, LOG_DIR)
    key = os.path.abspath(uri)
    version = _newest.get(key)
    if version is None or not os.path.exists(entry_path(uri, version)):
        try:
            names = os.listdir(log)
        except FileNotFoundError:
            return -1
        version = max((int(name[:-5]) for name in names
                       if name.endswith(".json") and name[:-5].isdigit()), default=-1)
    while os.path.exists(entry_path(uri, version + 1)):
        version += 1
    if version >= 0:
        _newest[key] = version
    return version


_newest: dict[str, int] = {}  #: table folder -> the newest version latest_version found


def entry_path(uri: str, version: int) -> str:
    """The log entry of `version` of the table at `uri`."""
    return os.path.join(uri, LOG_DIR, f"{version:020d}.json")


def sync_versions(uri: str, *, after: int) -> None:
    """Make durable the log entries of the table at `uri` newer than version
    `after`: the files each names first, then the entries and their folder
    (and a checkpoint one of them was given, with `_last_checkpoint`)."""
    log = os.path.join(uri, LOG_DIR)
    versions = range(after + 1, latest_version(uri) + 1)
    entries = [entry_path(uri, version) for version in versions]
    if not entries:
        return
    named, removed = [], REMOVED.setdefault(os.path.abspath(uri), {})
    for entry in entries:
        added, gone = _files_of(entry)
        named += [os.path.join(uri, path) for path in added]
        removed.update(gone)
    ahead = [path for path in named if path in _SYNCED_AHEAD]
    _SYNCED_AHEAD.difference_update(ahead)
    fsync_files([path for path in named if os.path.exists(path) and path not in ahead], uri)
    checkpoints = [path for version in versions if os.path.exists(
        path := os.path.join(log, f"{version:020d}.checkpoint.parquet"))]
    if checkpoints:
        checkpoints.append(os.path.join(log, LAST_CHECKPOINT))
    fsync_files(entries + checkpoints, uri)


def sync_ahead(paths: list[str], uri: str) -> None:
    """Make the files `paths` (in the table at `uri`) durable, with their
    folders, before a commit names them: the commit's `durable` then leaves
    them be (they were each fsynced once, not twice)."""
    fsync_files(paths, uri)
    _SYNCED_AHEAD.update(paths)


_SYNCED_AHEAD: set[str] = set()  #: files sync_ahead made durable, until their commit


def _files_of(entry: str) -> tuple[list[str], dict[str, int]]:
    """The data files and change data files a log entry adds (paths relative
    to the table, decoded), and those it removes ({path: deletionTimestamp
    (ms)}): one read of the entry."""
    added, removed = [], {}
    with open(entry, encoding="utf-8") as lines:
        for line in lines:
            action = json.loads(line) if line.strip() else {}
            for kind in ("add", "cdc"):
                if kind in action:
                    added.append(unquote(action[kind]["path"]))
            if "remove" in action:
                remove = action["remove"]
                removed[unquote(remove["path"])] = remove.get("deletionTimestamp") or 0
    return added, removed
