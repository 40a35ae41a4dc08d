"""Which decoding core runs: the native one (Rust, `binlake._native`) or the
pure-Python reference.

Strategy: both cores decode the same format to the same results (the
differential tests hold them equal); the native one is used whenever it was
built, unless `BINLAKE_PURE=1` is set or `use_pure()` is called. A missing
native core is said once on stderr, so a slow run is never a silent surprise.
"""

from __future__ import annotations

import os
import sys

try:
    from binlake import _native
except ImportError as exc:  # no Rust toolchain when installed, or a broken build
    _native = None
    _MISSING = str(exc)
else:
    _MISSING = ""

_pure = os.environ.get("BINLAKE_PURE", "") not in ("", "0")
_warned = False


def native():
    """The native module, or None when the pure-Python reference is in use."""
    global _warned
    if _pure:
        return None
    if _native is None and not _warned:
        _warned = True
        print(f"binlake: native core not available ({_MISSING}); using the pure-Python "
              "decoder, which is much slower", file=sys.stderr)
    return _native


def use_pure(pure: bool = True) -> None:
    """Select the pure-Python reference (True) or the native core (False) for
    what is decoded from now on."""
    global _pure
    _pure = pure


def name() -> str:
    """Which core decodes, as `binlake --version` reports it."""
    if _pure:
        return "pure-Python core" + (" (BINLAKE_PURE=1)" if os.environ.get("BINLAKE_PURE") else "")
    return "native core" if _native is not None else "pure-Python core (native core not built)"


def available() -> bool:
    return _native is not None
