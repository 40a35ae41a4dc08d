"""A real full disk for the tests: a small tmpfs mounted in a private mount
namespace (`unshare --user --map-root-user --mount`: no root needed where
user namespaces are allowed, and nothing mounted outside the test).

A tmpfs answers a write past its size with ENOSPC, exactly as a full disk
does, and `mount -o remount,size=` makes room again, so one script can fill
the disk, look at what is left, free it and run again. The tmpfs is gone
when the script ends: it copies out what the test must see.
"""

from __future__ import annotations

import functools
import shlex
import subprocess

import pytest


@functools.cache
def _unshare_works() -> str | None:
    """None when a private tmpfs can be mounted here, else why not."""
    try:
        probe = subprocess.run(
            ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
             "mount -t tmpfs -o size=64k tmpfs /tmp"],
            capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if probe.returncode == 0 else (probe.stderr or probe.stdout).strip()


def on_a_small_disk(mount, size_kb: int, script: str, env: dict,
                    timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the shell `script` with a tmpfs of `size_kb` KB mounted at `mount`
    (an existing directory); `$DISK` names it, `grow KB` resizes it."""
    why = _unshare_works()
    if why is not None:
        pytest.skip(f"cannot mount a private tmpfs for a full-disk test (unshare: {why})")
    disk = shlex.quote(str(mount))
    prelude = (f"set -u; DISK={disk}; mount -t tmpfs -o size={size_kb}k tmpfs \"$DISK\" || exit 99\n"
               "grow() { mount -o remount,size=\"$1\"k \"$DISK\"; }\n")
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                           prelude + script],
                          env=env, capture_output=True, text=True, timeout=timeout)
