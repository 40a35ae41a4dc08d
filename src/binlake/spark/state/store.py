"""The lake's own state under `<out>/_binlake/`: where it is, the lock on it.

Strategy: every path under `_binlake/` is named here (`state_path`); the
manifest is read through here (`load_manifest`), and a run or a follower
holds the lake's lock (`lake_lock`, the file `_binlake/lock`) for as long
as it writes to the lake.
"""

from __future__ import annotations

import fcntl
import os
import threading
from contextlib import contextmanager

from binlake.spark.state.manifest import Manifest, read_manifest

STATE_DIR = "_binlake"


def state_path(out: str, *parts: str) -> str:
    return os.path.join(out, STATE_DIR, *parts)


def load_manifest(out: str) -> Manifest:
    """The lake's state (binlake.spark.state.manifest)."""
    return read_manifest(state_path(out, "manifest.json"), out)


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
    handle = os.open(state_path(out, "lock"), os.O_RDWR | os.O_CREAT, 0o644)
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


__all__ = ["STATE_DIR", "state_path", "load_manifest", "lake_lock"]
