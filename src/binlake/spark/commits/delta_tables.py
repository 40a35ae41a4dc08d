"""Each lake table's Delta log loaded once, not at every question a run
asks of it.

Strategy: loading a table (delta-rs reads its last checkpoint and the log
entries after it) costs some 2.5 ms however small the table, and a run
asked it some six times per table it changed (its last run, its schema,
its properties, the commit, the upkeep after it): a follower's micro-batch
of a hundred tables spent 1.5 s on that alone. `opened` keeps one
DeltaTable per folder for the process, and before handing it out checks,
by two stats, that its version is still the newest: the entry of its
version is the same file (not a table deleted and made again under that
name) and no next entry is there. A table a commit moved on is brought up
to date from the entries since (1 ms); one that changed otherwise is loaded
anew. So a caller sees the table as a fresh load would, whoever wrote it.
At most OPEN_TABLES are kept, the least recently used let go.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from binlake.spark.commits.delta_sync import LAST_CHECKPOINT, LOG_DIR, entry_path

#: Tables kept loaded at most (a lake of more reloads the least recent).
OPEN_TABLES = 2048

_opened: OrderedDict[str, tuple] = OrderedDict()  #: folder -> (DeltaTable, its entry's mark)
_lock = threading.Lock()


def opened(uri: str):
    """The Delta table at `uri` at its newest version (deltalake's
    TableNotFoundError where there is none)."""
    from deltalake import DeltaTable
    uri = os.path.abspath(uri)
    with _lock:
        found = _opened.pop(uri, None)
    table = None
    if found is not None:
        table, mark = found
        if _mark(uri, table.version()) != mark:
            table = None  # deleted, or replaced: loaded anew
        elif os.path.exists(entry_path(uri, table.version() + 1)):
            table.update_incremental()
    if table is None:
        table = DeltaTable(uri)
    mark = _mark(uri, table.version())
    with _lock:
        _opened[uri] = (table, mark)
        while len(_opened) > OPEN_TABLES:
            _opened.popitem(last=False)
    return table


def exists(uri: str) -> bool:
    """Whether a Delta table is at `uri`: its first log entry, or the
    checkpoint that let the log's first entries go. Not the `_delta_log/`
    folder: a run killed as it created the table leaves that folder with
    no entry in it, and no table. Two stats, not a load of the log."""
    return os.path.isfile(entry_path(uri, 0)) \
        or os.path.isfile(os.path.join(uri, LOG_DIR, LAST_CHECKPOINT))


def first_entry_mark(uri: str) -> tuple | None:
    """Which file the table's first log entry is (None: cleaned by a
    checkpoint, or no table): a table deleted and made again has another."""
    return _mark(uri, 0)


def _mark(uri: str, version: int) -> tuple | None:
    """Which file the log entry of `version` is (None: not there)."""
    try:
        found = os.stat(entry_path(uri, version))
    except OSError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size
