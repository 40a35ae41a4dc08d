"""Exact, type-aware equality of decoded row values, and running one rows
event through both cores.

Strategy: `==` is too kind for a differential test: 1 == 1.0 == True,
Decimal('1.0') == Decimal('1.00'), Decimal('-0') == Decimal('0'), a
MysqlTemporal equals the plain str of the same text, nan != nan, and
0.0 == -0.0. `first_difference` walks both values and compares the exact
type plus a canonical form (Decimal.as_tuple(), float bits, tzinfo...), and
names the path of the first difference so a failure says where.

`outcome(event, pure)` decodes an event with one core and returns either
("rows", value) or ("error", class name, file, offset); anything other than a
`BinlogError` is caught and returned as ("escaped", class name, text) so a
caller can tell a crash from a disagreement.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from decimal import Decimal

from binlake import core
from binlake.errors import BinlogError


def _canonical_scalar(value):
    """A form whose == is exact for one value of a known type."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"  # payload bits of a NaN are not a value difference
        return struct.pack("<d", value)
    if isinstance(value, Decimal):
        return value.as_tuple()
    if isinstance(value, (dt.datetime, dt.time)):
        # aware and naive must not compare equal, nor two different zones
        return (value.isoformat(), repr(value.tzinfo), getattr(value, "fold", 0))
    return value


def first_difference(a, b, path: str = "") -> str | None:
    """None when a and b are the same value of the same types, else where and how they differ."""
    if type(a) is not type(b):
        return f"{path or '<top>'}: {type(a).__name__} {a!r} != {type(b).__name__} {b!r}"
    if isinstance(a, dict):
        if list(a) != list(b):  # key order is part of a row (it is column order)
            return f"{path}: keys {list(a)} != {list(b)}"
        for key in a:
            diff = first_difference(a[key], b[key], f"{path}[{key!r}]")
            if diff:
                return diff
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            diff = first_difference(x, y, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(a, (set, frozenset)):
        if a != b or any(type(x) is not str for x in (*a, *b)):
            return f"{path}: {sorted(map(repr, a))} != {sorted(map(repr, b))}"
        return None
    if _canonical_scalar(a) != _canonical_scalar(b):
        return f"{path or '<top>'}: {a!r} != {b!r}"
    return None


def outcome(event, pure: bool):
    """Decode `event.rows()` with the pure (True) or native (False) core."""
    core.use_pure(pure)
    try:
        return ("rows", event.rows())
    except BinlogError as exc:
        return ("error", type(exc).__name__, exc.file, exc.offset)
    except Exception as exc:  # noqa: BLE001 - an escape is what we are looking for
        return ("escaped", type(exc).__name__, f"{exc}"[:300])
    finally:
        core.use_pure(False)


def compare_cores(event) -> str | None:
    """None when both cores agree on `event`, else a description of the disagreement
    (an escaped non-BinlogError counts as a disagreement even when both escape)."""
    native = outcome(event, pure=False)
    pure = outcome(event, pure=True)
    for name, result in (("native", native), ("pure", pure)):
        if result[0] == "escaped":
            return f"{name} core let {result[1]} escape: {result[2]}"
    if native[0] != pure[0]:
        return f"native {_short(native)} but pure {_short(pure)}"
    if native[0] == "error":
        return None if native == pure else f"native {_short(native)} but pure {_short(pure)}"
    diff = first_difference(native[1], pure[1], "rows")
    return None if diff is None else f"values differ (native vs pure) at {diff}"


def _short(result) -> str:
    if result[0] == "rows":
        return f"decoded {len(result[1])} rows"
    return f"raised {result[1]} at {result[2]}:{result[3]}"
