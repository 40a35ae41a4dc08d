"""Delta commits that survive a power cut: the files a log entry names are
on disk whenever the entry is.

Strategy: delta-rs writes a table's data files and its log entries without
fsync. Every function of binlake.spark.commits.delta that commits is `durable`:
when it returns, each log entry it added has been read back, the data
files (`add`) and change data files (`cdc`) it names fsynced with their
folders, then the entry itself and `_delta_log/` (and a checkpoint written
beside it). Where binlake hands delta-rs files it did not write
(binlake.spark.commits.delta.commit_table: Spark's files), they are fsynced before
the entry is written (`fsync_files`), so the order is the safe one: bytes,
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
    """The newest log entry's version of the table at `uri` (-1: none), by its
    name (no snapshot is loaded)."""
    try:
        names = os.listdir(os.path.join(uri, LOG_DIR))
    except FileNotFoundError:
        return -1
    versions = [int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()]
    return max(versions, default=-1)


def sync_versions(uri: str, *, after: int) -> None:
    """Make durable the log entries of the table at `uri` newer than version
    `after`: the files each names first, then the entries and their folder."""
    log = os.path.join(uri, LOG_DIR)
    entries = [os.path.join(log, f"{version:020d}.json")
               for version in range(after + 1, latest_version(uri) + 1)]
    if not entries:
        return
    named = [os.path.join(uri, path) for entry in entries for path in files_named(entry)]
    removed = REMOVED.setdefault(os.path.abspath(uri), {})
    for entry in entries:
        removed.update(files_removed(entry))
    fsync_files([path for path in named if os.path.exists(path)], uri)
    written = entries + [os.path.join(log, name) for name in os.listdir(log)
                         if name == "_last_checkpoint" or ".checkpoint." in name
                         and int(name.split(".", 1)[0]) > after]
    fsync_files(written, uri)


def files_removed(entry: str) -> dict[str, int]:
    """{path (relative to the table, decoded): deletionTimestamp (ms)} of the
    data files a log entry removes."""
    found = {}
    with open(entry, encoding="utf-8") as lines:
        for line in lines:
            action = json.loads(line) if line.strip() else {}
            if "remove" in action:
                remove = action["remove"]
                found[unquote(remove["path"])] = remove.get("deletionTimestamp") or 0
    return found


def files_named(entry: str) -> list[str]:
    """The paths (relative to the table, decoded) of the data files and change
    data files a log entry adds."""
    paths = []
    with open(entry, encoding="utf-8") as lines:
        for line in lines:
            action = json.loads(line) if line.strip() else {}
            for kind in ("add", "cdc"):
                if kind in action:
                    paths.append(unquote(action[kind]["path"]))
    return paths
