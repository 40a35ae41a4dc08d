"""The table rules over Arrow columns: one implementation, which the driver
runs in-process when a run's work is small (binlake.spark.commits.
driver_way) and Spark's tasks run when it is large (binlake.spark.commits.
spark_way: each a table's job, binlake.spark.commits.table_jobs).

Strategy: a table's changes (rows of changes/: commit_key, file, pos, op,
before, after, and their database and table) are taken column by column,
never row by row, where the rule allows it:
- `images`: each change of the plan's stretches, its images as one text
  column per table column (`pc.map_lookup` per stretch and column; a
  column added since takes its DEFAULT, a partial INSERT's left-out column
  the DEFAULT it took where the history knows it, a partial UPDATE's the
  before image's; a MODIFY's conversions are binlake.spark.plans.
  conversions' functions, value by value, for those columns only), and
  where a partial row image (binlog_row_image=MINIMAL, NOBLOB) still leaves
  a column out (`absent`);
- a keyed table's net change per key is its last touch (an insert sets its
  key, a delete clears it, an update clears its old key and sets its new
  one): a sort by key and commit order, the last of each key taken
  (`last_touches`). Where partial images leave columns out, the fold in
  commit order (binlake.spark.rules.fold) completes them;
- a keyless table is a multiset: +1 per after image, -1 per before image,
  summed per distinct row (`multiset`).
The driver's runs are small and their time is mostly fixed cost: nothing
here makes pyarrow import pandas (binlake.spark.rules.arrow_buffers).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from binlake.spark.plans.conversions import fraction_text, server_value
from binlake.spark.plans.history import stretch_width
from binlake.spark.rules.arrow_buffers import (equal_to, flags, ints, nulls_of, numbers, one,
                                               texts, truths)
from binlake.spark.rules.fold import ABSENT, Change

#: The columns of changes/ the rules read (with `database` and `table`).
CHANGE_COLUMNS = ["commit_key", "file", "pos", "commit_pos", "commit_timestamp", "op",
                  "before", "after"]
#: Ops that add a row: an insert ("c"), a snapshot's row ("r", as Debezium's read).
INSERTS = ("c", "r")


# -- images --------------------------------------------------------------------------------

class Images:
    """A table's changes (in no order: `rank` is each one's place in commit
    order), each image as texts per column of the plan's table: `before[i]`,
    `after[i]` (Arrow strings), and `before_absent[i]`, `after_absent[i]`
    (numpy) where a partial image leaves column i out."""

    def __init__(self, rows, before, after, before_absent, after_absent, nulls):
        self.rows = rows  # the changes themselves, in no order
        self.rank = commit_rank(rows)  # each one's place in commit order
        self.op = _plain(rows.column("op"))
        #: which changes add a row (INSERTS), which delete one: the rules ask often
        self.inserts = truths(pc.is_in(self.op, value_set=texts(list(INSERTS))))
        self.deletes = equal_to(self.op, "d")
        self.file, self.pos = _plain(rows.column("file")), _plain(rows.column("pos"))
        self.before, self.after = before, after
        self.before_absent, self.after_absent = before_absent, after_absent
        self.nulls = nulls  # {side: where the change has no such image}

    def __len__(self) -> int:
        return len(self.op)

    def absent(self, side: str) -> np.ndarray:
        """Per change, whether its `side` image leaves some column out."""
        found = self.before_absent if side == "before" else self.after_absent
        out = np.zeros(len(self), dtype=bool)
        for column in found:
            out |= column
        return out

    def first(self, where: np.ndarray) -> int:
        """The index of the first change in commit order where `where` holds."""
        return int(np.flatnonzero(where)[np.argmin(self.rank[where])])

    def where(self, index: int) -> str:
        """How a refusal names change `index`: "FILE at POS"."""
        return f"{self.file[index].as_py()} at {self.pos[index].as_py()}"

    def changes(self) -> list[Change]:
        """The changes as the fold takes them (binlake.spark.rules.fold):
        texts per column in order, ABSENT where an image leaves one out."""
        sides = []
        for side, columns, absent in (("before", self.before, self.before_absent),
                                      ("after", self.after, self.after_absent)):
            columns = [c.to_pylist() for c in columns]
            for values, gone in zip(columns, absent):
                for i in np.flatnonzero(gone):
                    values[i] = ABSENT
            nulls = self.nulls[side]
            sides.append([None if null else row for row, null in zip(zip(*columns), nulls)]
                         if columns else [None] * len(self))
        found = [Change(op, before, after, f"{file} at {pos}") for op, before, after, file, pos in
                 zip(self.op.to_pylist(), *sides, self.file.to_pylist(), self.pos.to_pylist())]
        return [found[i] for i in np.argsort(self.rank)]


def commit_rank(changes: pa.Table) -> np.ndarray:
    """Each change's place in commit order (commit_key's parts: unique per
    change), as a rank: the rules sort touches by it, never the changes."""
    key = changes.column("commit_key").combine_chunks()
    order = np.lexsort([numbers(key.field(part)) for part in ("row", "sub", "pos", "file_seq")])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def stretch_index(changes: pa.Table, plan: dict) -> np.ndarray:
    """Per change, the index of the plan's stretch it is of (-1: none): the
    rule of binlake.spark.plans.history.inside, on whole columns."""
    key = changes.column("commit_key").combine_chunks()
    seq, pos = numbers(key.field("file_seq")), numbers(key.field("pos"))
    database = changes.column("database").combine_chunks()
    table = changes.column("table").combine_chunks()
    found = np.full(len(seq), -1, dtype=np.int64)
    for i, s in enumerate(plan["stretches"]):
        hi_seq, hi_pos = s["before"]
        mine = (equal_to(database, s["database"]) & equal_to(table, s["table"])
                & after_start(key, s["after"]))
        if hi_seq is not None:
            mine &= (seq < hi_seq) | ((seq == hi_seq) & (pos < hi_pos))
        found[mine & (found < 0)] = i
    return found


def after_start(key: pa.StructArray, after) -> np.ndarray:
    """Which changes (their commit_key) come after a stretch's start
    `after`: (file_seq, pos), or (file_seq, pos, sub) where a table read
    anew starts among chunks at one place, after those of an earlier read
    (binlake.spark.state.progress.ChunkPlace.start; plans.history.inside
    is the rule for one change)."""
    seq, pos = numbers(key.field("file_seq")), numbers(key.field("pos"))
    lo_seq, lo_pos = after[0], after[1]
    later = (seq > lo_seq) | ((seq == lo_seq) & (pos > lo_pos))
    if len(after) > 2:
        later |= (seq == lo_seq) & (pos == lo_pos) & (numbers(key.field("sub")) > after[2])
    return later


def images(changes: pa.Table, plan: dict, *, before_images: bool = True) -> Images:
    """The changes of the plan's stretches (`changes` in any order) as
    `Images`, each with its rank in commit order (`Images.rank`). Without
    `before_images` (changes that only insert, whose before images are all
    NULL) only the after images are taken: `before` holds no column."""
    at = stretch_index(changes, plan)
    if (at < 0).any():
        changes, at = changes.take(ints(np.flatnonzero(at >= 0))), at[at >= 0]
    op = _plain(changes.column("op"))
    inserts = truths(pc.is_in(op, value_set=texts(list(INSERTS))))
    updates = equal_to(op, "u")
    before, before_absent, before_null = (_side(changes.column("before"), at, plan, None)
                                          if before_images else ([], [], nulls_of(
                                              _plain(changes.column("before")))))
    after, after_absent, after_null = _side(changes.column("after"), at, plan, inserts)
    # An update's after image leaves out what did not change (NOBLOB: BLOBs;
    # MINIMAL: all but the changed columns): the before image's, where it has it.
    for i, (gone, was_gone) in enumerate(zip(after_absent, before_absent)):
        fill = gone & updates & ~was_gone
        if fill.any():
            after[i] = pc.if_else(flags(fill), before[i], after[i])
            gone &= ~fill
    return Images(changes, before, after, before_absent, after_absent,
                  {"before": before_null, "after": after_null})


def _plain(values) -> pa.Array:
    """A column as one array, not dictionary-encoded."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return values.dictionary_decode() if isinstance(values, pa.DictionaryArray) else values


def _side(maps, at: np.ndarray, plan: dict, inserts):
    """One side's texts per column of the table, where a partial image
    leaves each out, and where the image is NULL."""
    maps = maps.combine_chunks() if isinstance(maps, pa.ChunkedArray) else maps
    n, width = len(maps), len(plan["layout"]["columns"])
    null = nulls_of(maps)
    lengths = np.diff(numbers(maps.offsets))
    parts: list = [[] for _ in range(width)]
    absent = [np.zeros(n, dtype=bool) for _ in range(width)]
    order = []
    for i, s in enumerate(plan["stretches"]):
        rows = np.flatnonzero(at == i)
        if not len(rows):
            continue
        order.append(rows)
        mine = maps if len(rows) == n else maps.take(ints(rows))
        short = (lengths[rows] < stretch_width(s)) & ~null[rows]
        omitted = s.get("omitted") or [None] * width
        looked_up = _lookup(mine, [key for key in s["sources"] if key is not None])
        for c, (key, default, digits, was, column) in enumerate(zip(
                s["sources"], s["defaults"], s["fractions"], s.get("was") or [None] * width,
                plan["layout"]["columns"])):
            if key is None:
                values = texts([default] * len(rows))
            else:
                values = looked_up[key]
                if short.any():
                    missing = short & ~_holds(mine, key)
                    if inserts is not None and omitted[c] is not None:
                        filled = missing & inserts[rows]
                        values = pc.if_else(flags(filled), texts([omitted[c][0]] * len(rows)),
                                            values)
                        missing &= ~filled
                    absent[c][rows] = missing
                if digits is not None or was is not None:
                    values = _converted(values, digits, was, column)
            parts[c].append(values)
    if len(order) == 1:
        columns = [p[0] for p in parts]
    elif order:
        back = ints(np.argsort(np.concatenate(order), kind="stable"))
        columns = [pa.concat_arrays(p).take(back) for p in parts]
    else:
        columns = [pa.nulls(0, pa.string()) for _ in range(width)]
    return columns, absent, null


def _lookup(maps: pa.MapArray, names: list[str]) -> dict:
    """{name: each map's value of it (NULL: none)}. Where every map holds
    the same keys in the same order (whole images: the binlog's columns, as
    the decoder writes them), each column is every width-th item, taken at
    once; else looked up map by map."""
    offsets = numbers(maps.offsets)
    lengths = np.diff(offsets)
    valid = ~nulls_of(maps)
    width = int(lengths[valid][0]) if valid.any() else 0
    keys, items = maps.keys, maps.items
    if (valid.any() and (lengths[valid] == width).all() and (lengths[~valid] == 0).all()
            and len(keys) == offsets[-1] and offsets[0] == 0):
        first = keys.slice(int(offsets[np.argmax(valid)]), width)
        tiled = first.take(ints(np.tile(np.arange(width), int(valid.sum()))))
        if truths(pc.equal(keys, tiled)).all():
            names_at = {name: i for i, name in enumerate(first.to_pylist())}
            starts = offsets[:-1]
            out = {}
            for name in names:
                if name not in names_at:
                    out[name] = pa.nulls(len(maps), pa.string())
                    continue
                at = starts + names_at[name]
                out[name] = items.take(pa.Array.from_buffers(
                    pa.int64(), len(at), [flags(valid).buffers()[1] if not valid.all() else None,
                                          pa.py_buffer(np.ascontiguousarray(at, np.int64))]))
            return out
    return {name: pc.map_lookup(maps, one(name), "first") for name in names}


def _holds(maps: pa.MapArray, key: str) -> np.ndarray:
    """Per map, whether it holds `key` (a NULL value is held)."""
    offsets = numbers(maps.offsets)
    parents = np.repeat(np.arange(len(maps)), np.diff(offsets))
    keys = maps.keys
    if len(keys) != len(parents):  # a slice: its keys are the parent's
        keys = keys.slice(offsets[0], len(parents))
    held = np.zeros(len(maps), dtype=bool)
    held[parents[equal_to(keys, key)]] = True
    return held


def _converted(values: pa.Array, digits: int | None, was: dict | None, column: dict) -> pa.Array:
    """Texts from before a MODIFY as the server made them: the new
    fractional digits, then the new type (binlake.spark.plans.conversions)."""
    out = []
    for text in values.to_pylist():
        if text is not None:
            if digits is not None:
                text = fraction_text(text, digits)
            if was is not None:
                text = server_value(text, was, column)
        out.append(text)
    return texts(out)


# -- keyed tables: each key's last touch ---------------------------------------------------

def touches(found: Images, primary: list[int]):
    """The key touches of whole images: (the key's texts per key column,
    whether the touch sets the key, the change it is of, its order: a
    change's clear before its set), in no particular order."""
    n = len(found)
    inserts, deletes = found.inserts, found.deletes
    old = [found.before[i] for i in primary]
    new = [pc.coalesce(found.after[i], found.before[i]) for i in primary]
    moved = np.zeros(n, dtype=bool)
    for was, now in zip(old, new):
        moved |= ~truths(pc.equal(was, now)) & ~(nulls_of(was) & nulls_of(now))
    clears = np.flatnonzero(deletes | (~inserts & moved))
    sets = np.flatnonzero(~deletes)
    keys = [pa.concat_arrays([was.take(ints(clears)), now.take(ints(sets))])
            for was, now in zip(old, new)]
    rank = found.rank
    return (keys, np.arange(len(clears) + len(sets)) >= len(clears),
            np.concatenate([clears, sets]), np.concatenate([2 * rank[clears], 2 * rank[sets] + 1]))


def codes(values: pa.Array) -> np.ndarray:
    """Equal values (NULLs too) as equal integers."""
    return numbers(pc.dictionary_encode(values, null_encoding="encode").indices)


def last_of(groups: list[np.ndarray], order: np.ndarray) -> np.ndarray:
    """The index of the greatest `order` of each group of equal `groups`
    codes, the groups in code order."""
    sort = np.lexsort([order] + groups[::-1])
    last = np.ones(len(sort), dtype=bool)
    if len(sort) > 1:
        same = np.ones(len(sort) - 1, dtype=bool)
        for group in groups:
            same &= group[sort][1:] == group[sort][:-1]
        last[:-1] = ~same
    return sort[last]


def last_touches(found: Images, primary: list[int]):
    """Each key's last touch (whole images): (the key's texts per key
    column, whether the touch set the key, the change whose after image it
    set it to), the keys in no particular order."""
    keys, sets, change, order = touches(found, primary)
    chosen = last_of([codes(k) for k in keys], order)
    return [k.take(ints(chosen)) for k in keys], sets[chosen], change[chosen]


# -- keyless tables: a multiset ------------------------------------------------------------

def multiset(found: Images) -> tuple[list[pa.Array], np.ndarray]:
    """A keyless table's changes per distinct row: its texts per column and
    the copies added (negative: removed), without the rows they leave as
    they were."""
    minus = np.flatnonzero(~found.inserts)
    plus = np.flatnonzero(~found.deletes)
    columns = [pa.concat_arrays([found.before[i].take(ints(minus)),
                                 found.after[i].take(ints(plus))])
               for i in range(len(found.after))]
    signs = np.concatenate([np.full(len(minus), -1), np.ones(len(plus), dtype=np.int64)])
    if not len(signs):
        return [c.slice(0, 0) for c in columns], signs
    rows = [codes(c) for c in columns]
    sort = np.lexsort(rows[::-1])
    first = np.ones(len(sort), dtype=bool)
    same = np.ones(len(sort) - 1, dtype=bool)
    for code in rows:
        same &= code[sort][1:] == code[sort][:-1]
    first[1:] = ~same
    starts = np.flatnonzero(first)
    counts = np.add.reduceat(signs[sort], starts)
    kept = counts != 0
    return [c.take(ints(sort[starts[kept]])) for c in columns], counts[kept]
