"""A keyed table's changes folded in commit order, as the server applied
them: the rule for partial row images (binlog_row_image=MINIMAL, NOBLOB),
whose left-out columns come from the row the old key held, which no
aggregate by key knows. binlake.spark.rules.engine takes whole images by
their last touch instead, column by column; it runs this fold where some
image leaves a column out.
"""

from __future__ import annotations

from typing import NamedTuple

from binlake.spark.rules.refused import refused_at


class Change(NamedTuple):
    """A change as the fold takes it: its images as texts in the table's
    column order (ABSENT where a partial image leaves one out), and where
    it is ("FILE at POS", for a refusal's words)."""
    op: str
    before: tuple | None
    after: tuple | None
    at: str


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


#: A column a partial row image leaves out.
ABSENT = _Absent()


class KeyNet(NamedTuple):
    """A key's net change: its row after the changes (None: it holds none),
    ABSENT where only the row `origin` held before them knows the value (a
    partial image; `at` the last one); `origin` None: no row does."""
    row: tuple | None
    origin: tuple | None = None
    at: str | None = None

    @property
    def partial(self) -> bool:
        return self.row is not None and ABSENT in self.row


def net_by_key(changes: list[Change], primary: list[int], table: str, unknown_key: str) -> dict:
    """{key texts: KeyNet}: the changes folded in commit order. An insert
    sets its key's row; a delete clears it; an update clears its old key
    and sets its new one (the same key when it did not change) to the row
    the old one held with the update's columns set (its after image,
    completed by its before image: binlake.spark.rules.engine.images). A
    row no change wrote whole takes the columns left out from the row its
    first key held before the changes (`origin`), which the caller
    completes from the table. An image without its key (the server found
    the row by a key binlake does not know) is refused (`unknown_key`)."""
    net: dict = {}
    for op, before, after, at in changes:
        if op in ("c", "r"):
            net[_key_of(after, primary, at, table, unknown_key)] = _net(after, None, at)
        elif op == "d":
            net[_key_of(before, primary, at, table, unknown_key)] = KeyNet(None)
        else:
            old = _key_of(before, primary, at, table, unknown_key)
            new = tuple(before[i] if after[i] is None or after[i] is ABSENT else after[i]
                        for i in primary)
            held = net.get(old, KeyNet((ABSENT,) * len(after), old))
            base = held.row or (ABSENT,) * len(after)  # cleared: no row completes it
            row = tuple(a if a is not ABSENT else b for a, b in zip(after, base))
            if old != new:
                net[old] = KeyNet(None)
            net[new] = _net(row, held.origin if held.row is not None else None, at)
    return net


def _key_of(image: tuple, primary: list[int], at: str, table: str, unknown_key: str) -> tuple:
    key = tuple(image[i] for i in primary)
    if ABSENT in key:
        raise refused_at(at, table, unknown_key)
    return key


def _net(row: tuple, origin: tuple | None, at: str) -> KeyNet:
    return KeyNet(row, origin, at) if ABSENT in row else KeyNet(row)
