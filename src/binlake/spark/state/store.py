"""The lake's own state under `<out>/_binlake/`: its one writer.

    _binlake/manifest.json               what the lake has read (binlake.spark.state.manifest)
    _binlake/schema.json                 the schema history of everything read
    _binlake/schema-from-snapshot.json   a new lake's history seed: its snapshot's DDL
    _binlake/schema-from-server.json     the seed --schema-from read from a server
    _binlake/staging/manifest.json,
    _binlake/staging/schema.json         a run's next state, staged beside its data
    _binlake/status.json                 where the follower stands
    _binlake/requests/*.json             tables asked to be read anew (--snapshot-tables)
    _binlake/compactions.json            the merges of small files in events/ and changes/
    _binlake/lock                        the lake's lock, held by a run or a follower

Strategy: every file of the lake's state is written here and nowhere else
(tests/spark/test_state_store.py fails where another module of binlake.spark
writes under `_binlake/`), each by one function, whole or not at all
(binlake.atomic.replaced: a partial file fsynced, renamed over the old one,
the folder fsynced). A run's next state is staged beside its data
(`stage_state`) and installed after the data is in place
(`install_staged_state`): a power cut never leaves a manifest naming bytes
the disk does not hold. Callers say what to write; where, and how, is this
module's: the only paths of state files it gives are for reading (a seed's,
a request's).

The folders other writers fill are named here (`folder_path`), and made or
cleared here, their contents being the writers' own: a run's staged views
(staging/: Spark's and the driver's writers, binlake.spark.run.staging),
the snapshot's rows (snapshot/, snapshot-round/:
binlake.spark.snapshot.snapshot), the tables' staging (tables.new/:
binlake.spark.commits.lake), the follower's copies of the server's binlogs
(binlogs/: binlake.live.backup; removed here, `remove_copies`, once the
lake needs them no more: binlake.spark.state.copies), the merged files of
the views before they take their place (compacting/:
binlake.spark.state.compaction). A run's undo record
(undo/) is binlake.spark.state.run_undo's, which puts back the state files it kept.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
import time
from contextlib import contextmanager

from binlake.atomic import fsync_directory, replaced
from binlake.spark.plans.history import load_history
from binlake.spark.read.batches import TableFilter
from binlake.spark.state.manifest import Manifest, read_manifest, write_manifest

STATE_DIR = "_binlake"
#: The lake's state files and the requests' folder, under _binlake/ (and
#: staging/): written by this module only.
MANIFEST, SCHEMA = "manifest.json", "schema.json"
SNAPSHOT_SEED, SERVER_SEED = "schema-from-snapshot.json", "schema-from-server.json"
STATUS, REQUESTS, LOCK = "status.json", "requests", "lock"
COMPACTIONS = "compactions.json"
STATE_FILES = (MANIFEST, SCHEMA, SNAPSHOT_SEED, SERVER_SEED, STATUS, REQUESTS, LOCK,
               COMPACTIONS)
#: The folders under _binlake/ that other writers fill.
STAGING, SNAPSHOT, SNAPSHOT_ROUND = "staging", "snapshot", "snapshot-round"
TABLES_NEW, BINLOGS, COMPACTING = "tables.new", "binlogs", "compacting"
FOLDERS = (STAGING, SNAPSHOT, SNAPSHOT_ROUND, TABLES_NEW, BINLOGS, COMPACTING)


def _path(out: str, *parts: str) -> str:
    return os.path.join(out, STATE_DIR, *parts)


def has_state(out: str) -> bool:
    """Whether `out` has a `_binlake/` folder (a lake's)."""
    return os.path.isdir(_path(out))


def make_state_dir(out: str) -> None:
    """The `_binlake/` folder, made where it is not yet."""
    os.makedirs(_path(out), exist_ok=True)


# -- the folders others fill ---------------------------------------------------------------

def folder_path(out: str, name: str) -> str:
    """The path of the folder `name` (one of FOLDERS) under _binlake/."""
    if name not in FOLDERS:
        raise ValueError(f"_binlake/{name}: not a folder other writers fill")
    return _path(out, name)


def make_folder(out: str, name: str) -> str:
    """The folder `name` (`folder_path`), made where it is not yet."""
    path = folder_path(out, name)
    os.makedirs(path, exist_ok=True)
    return path


def clear_folder(out: str, name: str, *, make: bool = False, strict: bool = False) -> str:
    """The folder `name` (`folder_path`) with nothing in it: removed (a
    failure to remove it raised with `strict`, else ignored), then made
    again with `make`."""
    path = folder_path(out, name)
    shutil.rmtree(path, ignore_errors=not strict)
    if make:
        os.makedirs(path)
    return path


def remove_copies(out: str, manifest: Manifest, names) -> None:
    """The follower's copies `names` (under binlogs/) removed, `manifest`
    (marking them removed: Manifest.copies_removed) saved first: a kill
    between the two leaves copies the manifest says are gone, which the
    next pass removes again (binlake.spark.state.copies), never a copy gone
    that the manifest says is there. A copy gone already is no error; the
    backup's own manifest forgets a closed copy whose file is gone
    (binlake.live.backup.BackupManifest.removed)."""
    save_manifest(out, manifest)
    folder = folder_path(out, BINLOGS)
    for name in names:
        try:
            os.remove(os.path.join(folder, name))
        except FileNotFoundError:
            pass
    if names:
        fsync_directory(os.path.join(folder, names[0]))


# -- the views' merges ---------------------------------------------------------------------

_compactions: dict = {}  #: path -> (the file's stat, its records): readers ask often


def load_compactions(out: str) -> list[dict]:
    """The records of the merges of the views' small files
    (binlake.spark.state.compaction), [] where there are none; read again
    only when the file changed."""
    path = _path(out, COMPACTIONS)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return []
    mark = (found.st_ino, found.st_mtime_ns, found.st_size)
    cached = _compactions.get(path)
    if cached is None or cached[0] != mark:
        with open(path, encoding="utf-8") as handle:
            cached = _compactions[path] = (mark, json.load(handle)["merges"])
    return cached[1]


def save_compactions(out: str, records: list[dict]) -> None:
    """The merges' records, whole (binlake.atomic.replaced)."""
    text = json.dumps({"merges": records}, separators=(",", ":"))
    with replaced(_path(out, COMPACTIONS)) as handle:
        handle.write(text)


# -- the manifest and the schema history ---------------------------------------------------

def load_manifest(out: str) -> Manifest:
    """The lake's state (binlake.spark.state.manifest)."""
    return read_manifest(_path(out, MANIFEST), out)


def save_manifest(out: str, manifest: Manifest) -> None:
    """`manifest` as the lake's (binlake.spark.state.manifest.write_manifest:
    whole, fsynced, renamed over the old one, its folder fsynced)."""
    write_manifest(_path(out, MANIFEST), manifest)


def load_schema_history(out: str, seed: str | None):
    """The schema history of everything the lake has read, else the seed
    (`--schema`: the first run's). The lake's file is parsed once per
    version of it in this process, and each caller given a copy: a
    follower's micro-batch would otherwise parse the history of all of the
    lake's tables, as it would write it out (`stage_state`)."""
    path = _path(out, SCHEMA)
    mark = _file_mark(path)
    if mark is None:
        return load_history(path, seed)
    found = _histories.get(path)
    if found is None or found[0] != mark:
        parsed = load_history(path, seed)
        parsed.json_text()  # made once: each copy has it
        if len(_histories) >= KEPT_HISTORIES:
            _histories.clear()  # (a process running many lakes: tests)
        found = _histories[path] = (mark, parsed)
    history = found[1].copy()
    history.read_from = (path, mark, history.state())
    return history


_histories: dict[str, tuple] = {}  #: the lake's history file -> (its mark, parsed)
#: Lakes whose parsed history a process keeps at most.
KEPT_HISTORIES = 8


def stage_state(out: str, manifest: Manifest, history) -> None:
    """The run's next state, its schema `history` and `manifest`, written
    under staging/ beside the run's staged data (`install_staged_state`
    puts them in place); its manifest last: a staging/ holding one is
    complete. A history the run did not change (no DDL, as a rule) is
    left as the lake's file has it."""
    path = _path(out, SCHEMA)
    if history.read_from != (path, _file_mark(path), history.state()):
        history.save(os.path.join(folder_path(out, STAGING), SCHEMA))
    write_manifest(os.path.join(folder_path(out, STAGING), MANIFEST), manifest)


def _file_mark(path: str) -> tuple | None:
    """Which file `path` is (None: none): another once replaced or written."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size


def has_staged_state(out: str) -> bool:
    """Whether staging/ holds a run's staged manifest (`stage_state`)."""
    return os.path.exists(os.path.join(folder_path(out, STAGING), MANIFEST))


def install_staged_state(out: str) -> None:
    """The staged schema history (where one was staged) and manifest renamed
    into place, the manifest last, and the renames made durable."""
    staging = folder_path(out, STAGING)
    if os.path.exists(os.path.join(staging, SCHEMA)):
        os.replace(os.path.join(staging, SCHEMA), _path(out, SCHEMA))
    os.replace(os.path.join(staging, MANIFEST), _path(out, MANIFEST))
    fsync_directory(_path(out, MANIFEST))


def save_snapshot_seed(out: str, seed) -> str:
    """The history seed of a lake started from a snapshot (its DDL); its path."""
    path = _path(out, SNAPSHOT_SEED)
    seed.save(path)
    return path


def save_server_seed(out: str, seed) -> str:
    """The history seed `--schema-from` read from a server; its path."""
    path = _path(out, SERVER_SEED)
    seed.save(path)
    return path


# -- the follower's status and the requests to it ------------------------------------------

def write_status(out: str, status: dict) -> None:
    """Where the follower stands (binlake.spark.run.follow.FollowStatus)."""
    with replaced(_path(out, STATUS)) as handle:
        json.dump(status, handle, indent=1)


def load_status(out: str) -> dict | None:
    """The follower's last status (`write_status`), None where it has written
    none (written whole or not at all: no half file is read)."""
    try:
        with open(_path(out, STATUS)) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None


def request_snapshot(out: str, patterns: str, option: str = "--snapshot-tables") -> str:
    """Leave a request to read the tables `patterns` selects anew in the lake
    `out`, for its follower (taken between micro-batches, or at its next
    start); the request's path. `option`: what a refusal names."""
    import uuid
    if not os.path.isfile(_path(out, MANIFEST)):
        raise ValueError(f"{option}: {out} is not a lake yet (no _binlake/manifest.json): "
                         "a new lake reads every table it selects (from a snapshot with "
                         "--snapshot-from); ask once it has run")
    if not TableFilter(patterns).patterns:
        raise ValueError(f"{option}: name the tables (db.table patterns)")
    where = _path(out, REQUESTS)
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, f"snapshot-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json")
    with replaced(path) as handle:
        json.dump({"tables": patterns}, handle)
    return path


def requests(out: str) -> list[str]:
    """The paths of the requests left (`request_snapshot`), in the order
    they were made."""
    where = _path(out, REQUESTS)
    names = sorted(n for n in os.listdir(where) if n.endswith(".json")) \
        if os.path.isdir(where) else []
    return [os.path.join(where, name) for name in names]


def read_request(path: str) -> str:
    """The table patterns of the request at `path` (OSError, ValueError or
    KeyError where it is not one binlake made)."""
    with open(path) as handle:
        return json.load(handle)["tables"]


def set_aside_request(path: str) -> None:
    """A request that is not binlake's, renamed out of the way (`.refused`)."""
    os.replace(path, path + ".refused")


def remove_request(path: str) -> None:
    """A request taken: its reading anew is in the manifest."""
    os.remove(path)


# -- the lake's lock -----------------------------------------------------------------------

#: (lake, thread) holding the lake's lock in this process -> holders nested in it.
_HELD_LAKES: dict = {}


@contextmanager
def lake_lock(out: str):
    """An exclusive lock on the lake: a second run is refused (two runs
    would stage and append the same ranges). The lock goes with the process
    however it ends, so a killed run never leaves it held. It nests within
    one thread: a follower holds it for its life, its micro-batch runs
    inside."""
    holder = (os.path.abspath(out), threading.get_ident())
    if holder in _HELD_LAKES:
        _HELD_LAKES[holder] += 1
        try:
            yield
        finally:
            _HELD_LAKES[holder] -= 1
        return
    handle = os.open(_path(out, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"{out}: another binlake pipeline run is using this lake: "
                             "nothing was changed; run again when it has ended") from None
        _HELD_LAKES[holder] = 1
        try:
            yield
        finally:
            del _HELD_LAKES[holder]
    finally:
        os.close(handle)


__all__ = ["FOLDERS", "STAGING", "SNAPSHOT", "SNAPSHOT_ROUND", "TABLES_NEW", "BINLOGS",
           "COMPACTING", "load_compactions", "save_compactions", "has_state", "make_state_dir", "folder_path", "make_folder", "clear_folder",
           "remove_copies", "load_manifest", "save_manifest", "load_schema_history", "stage_state",
           "has_staged_state", "install_staged_state", "save_snapshot_seed", "save_server_seed",
           "write_status", "load_status", "request_snapshot", "requests", "read_request", "set_aside_request",
           "remove_request", "lake_lock"]
