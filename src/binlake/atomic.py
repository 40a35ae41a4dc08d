"""Output files that are whole or not there: what a killed run leaves behind.

Strategy: the output is written to `FILE.partial` beside its final name,
flushed and fsynced, then renamed over FILE (and the directory fsynced, so
the rename itself survives a power cut). A run killed at any moment leaves
at most `FILE.partial`, which says what it is, and FILE as it was before;
the next run writes `FILE.partial` again from the start. A run that fails
while writing (a full disk, an interrupt) removes its partial file: nothing
half-written is left in place. A run that ends, even after reporting bad
input, puts what it wrote in place, as mysqlbinlog does.

Files written another way (by Spark's tasks, by delta-rs) are made durable
by `fsync_files` before anything durable names them (a manifest, a Delta
log entry): otherwise a power cut can keep the name and lose the bytes.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

PARTIAL_SUFFIX = ".partial"


@contextlib.contextmanager
def replaced(path, mode: str = "w", **open_options):
    """An open file whose contents become `path` when the block ends."""
    path = os.fspath(path)
    partial = path + PARTIAL_SUFFIX
    handle = open(partial, mode, **open_options)
    try:
        yield handle
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        os.replace(partial, path)
        fsync_directory(path)
    except BaseException as exc:
        if isinstance(exc, OSError) and exc.filename is None:
            exc.filename = path  # a failed write names no file: the user's is this one
        with contextlib.suppress(OSError):
            handle.close()  # its last flush may fail again (the disk is still full)
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


def fsync_directory(path: str) -> None:
    """Make a rename or a new file in `path`'s directory durable."""
    _fsync(os.path.dirname(os.path.abspath(path)))


def fsync_files(paths, root) -> None:
    """Make the files `paths` (under the folder `root`) durable, bytes and
    names: each file fsynced, and each folder from a file's own up to
    `root` (a folder made for the file is itself a new name in its parent).
    All are durable when it returns, which is all the order a caller needs
    (nothing durable names them yet), so they are fsynced side by side
    (SYNC_THREADS): each fsync waits on the disk, not the CPU, and the file
    system commits concurrent ones together (a follower's micro-batch of a
    hundred tables moves some 300 files and folders into place)."""
    root = os.path.abspath(root)
    paths = list(paths)
    folders = set()
    for path in paths:
        folder = os.path.dirname(os.path.abspath(path))
        while folder not in folders:
            folders.add(folder)
            parent = os.path.dirname(folder)
            if folder == root or parent == folder or not folder.startswith(root + os.sep):
                break
            folder = parent
    _fsync_all(paths + list(folders))  # (side by side: no order among them)


#: fsyncs made side by side at most (`fsync_files`).
SYNC_THREADS = 8
_sync_pool: ThreadPoolExecutor | None = None
_sync_pool_lock = threading.Lock()


def _fsync_all(paths: list) -> None:
    """fsync each of `paths`; the first error raised once all have ended."""
    global _sync_pool
    if len(paths) <= 2:
        for path in paths:
            _fsync(path)
        return
    with _sync_pool_lock:
        if _sync_pool is None:
            _sync_pool = ThreadPoolExecutor(SYNC_THREADS, thread_name_prefix="fsync")
    futures = [_sync_pool.submit(_fsync, path) for path in paths]
    wait(futures)
    for future in futures:
        future.result()


def _forget_sync_pool() -> None:
    global _sync_pool
    _sync_pool = None  # a forked child has none of its threads


os.register_at_fork(after_in_child=_forget_sync_pool)


def durable_size(path: str) -> int:
    """How many bytes of the file `path`, which another writer appends to,
    are on disk for sure: its size, taken before it is fsynced (what is
    appended meanwhile may not be)."""
    size = os.path.getsize(path)
    _fsync(path)
    return size


def _fsync(path: str) -> None:
    """fsync a file or a folder by its path (Linux syncs the inode, whichever
    descriptor asks)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
