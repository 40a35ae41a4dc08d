"""Typed table changes and table states rebuilt from the changes view.

Strategy for the state of a table as of a point (binlake pipeline's tables/):
- with a primary key, every change *touches* keys: an insert sets its
  after-key, a delete clears its before-key, an update clears its
  before-key and sets its after-key (the same key when it did not change).
  A key's row is its last touch in commit order (`max_by` over commit_key):
  no sequential fold, so Spark spreads it over every core.
- without one, the table is a multiset of full rows: +1 for each after
  image, -1 for each before image, summed per distinct row. Addition does
  not care about order, so this too is one aggregation.
Both need full row images (binlog_row_image=FULL): with MINIMAL or NOBLOB
images the columns a change left out are not carried over.

`as_of` is applied to whole transactions: their commit time, or the
position their commit event ends at, must not be past the point.
"""

from __future__ import annotations

import datetime as dt
import functools
import glob
import json
import operator
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, functions as F

from binlake.schema.history import Schema
from binlake.spark.batches import TableFilter, load_schema_option
from binlake.spark.history import follow_ranges
from binlake.spark.layouts import latest_layouts, qualified
from binlake.spark.ranges import Split, expand_inputs, number_files
from binlake.spark.typed import typed_columns

#: Ops that add a row: an insert ("c"), a snapshot's row ("r", as Debezium's read).
INSERTS = ("c", "r")


@dataclass(frozen=True)
class AsOf:
    """A point in the binlog: a UTC time, or (file_seq, pos)."""

    time: dt.datetime | None = None
    file_seq: int | None = None
    pos: int | None = None

    def condition(self) -> Column:
        if self.time is not None:
            return F.col("commit_timestamp") <= F.lit(self.time)
        seq = F.col("commit_key.file_seq")
        return (seq < self.file_seq) | ((seq == self.file_seq) & (F.col("commit_pos") <= self.pos))

    def describe(self) -> str:
        if self.time is not None:
            return self.time.isoformat()
        return f"file_seq {self.file_seq}, pos {self.pos}"


# -- one table's changes, typed ----------------------------------------------------

def table_changes(spark, path, db: str, table: str, schema=None, **options) -> DataFrame:
    """Changes of `db`.`table` like a Delta change data feed: one typed column
    per table column, an update as two rows (update_preimage, update_postimage),
    and `_change_type`, `_op`, `_commit_key`, `_commit_timestamp`, `_timestamp`,
    `_file`, `_pos`, `_row_index`, `_gtid`, `_xid`."""
    from binlake.spark.source import register
    register(spark)
    paths = expand_inputs(path)
    options = {k: str(v) for k, v in options.items()}
    if schema is not None:
        options["schema"] = str(schema)
    pattern = glob.escape(qualified(db, table))  # names, not patterns
    wanted = TableFilter(pattern)
    splits = [Split(p, seq) for p, seq in number_files(paths)]
    # The schema history of every file, so that each task knows the tables at its start.
    history = load_schema_option(options) or Schema()
    follow_ranges(history, splits)
    options["schema"] = json.dumps(history.to_json())
    layouts = latest_layouts(splits, history=history, wanted=wanted)
    layout = layouts.get(qualified(db, table))
    if layout is None:
        raise LookupError(f"no table map of {db}.{table} in {path}")
    changes = (spark.read.format("binlog").options(**options).option("view", "changes")
               .option("tables", pattern).load(paths))
    return typed_change_feed(changes, layout)


def typed_change_feed(changes: DataFrame, layout: dict) -> DataFrame:
    images = F.explode(
        F.when(F.col("op").isin(*INSERTS), F.array(_image("insert", "after")))
         .when(F.col("op") == "d", F.array(_image("delete", "before")))
         .otherwise(F.array(_image("update_preimage", "before"),
                            _image("update_postimage", "after"))))
    exploded = changes.select("*", images.alias("_image"))
    meta = [F.col("_image.change_type").alias("_change_type"), F.col("op").alias("_op"),
            F.col("commit_key").alias("_commit_key"),
            F.col("commit_timestamp").alias("_commit_timestamp"),
            F.col("timestamp").alias("_timestamp"), F.col("file").alias("_file"),
            F.col("pos").alias("_pos"), F.col("row_index").alias("_row_index"),
            F.col("gtid").alias("_gtid"), F.col("xid").alias("_xid")]
    return exploded.select(*typed_columns(layout, F.col("_image.row")), *meta)


def _image(change_type: str, side: str) -> Column:
    return F.struct(F.lit(change_type).alias("change_type"), F.col(side).alias("row"))


# -- table states -------------------------------------------------------------------

def rebuild_states(changes: DataFrame, plans: list[dict], as_of: AsOf | None = None,
                   net: bool = False) -> DataFrame:
    """(database, table, row) of every table as of `as_of` (default: the
    end), `row` being the exact text of the row's values in the table's
    column order (arrays: smaller to shuffle than maps, and groupable).
    `net` (tables with a primary key only): what `changes` do to each key,
    (database, table, key, row), `row` NULL where they delete it.

    A plan (`history.table_plans`) names a table as it is at that point, its
    primary key (column indexes) and its stretches: the spans of changes its rows
    come from (under other table names before a RENAME), each with the key
    of every column in those changes or, for a column added later, its
    default. Changes outside every stretch (before a TRUNCATE or a re-CREATE,
    of a dropped table) are left out.

    Every stretch becomes literal expressions (which stretch a change is in,
    its values in column order, its key), so the plan is one scan and one
    projection Spark compiles to code: no join, no per-row lambda."""
    if as_of is not None:
        changes = changes.where(as_of.condition())
    stretches = [(plan, s) for plan in plans for s in plan["stretches"]]
    which = None
    for i, (_, s) in enumerate(stretches):
        which = (F.when if which is None else which.when)(_inside(s), F.lit(i))
    if which is None:
        which = F.lit(None).cast("int")
    located = changes.select("op", "commit_key", "before", "after", which.alias("_stretch"))
    located = located.where(F.col("_stretch").isNotNull())

    def each(value) -> Column:  # CASE _stretch WHEN i THEN value(plan, stretch) ...
        found = None
        for i, (plan, s) in enumerate(stretches):
            found = (F.when if found is None else found.when)(F.col("_stretch") == i, value(plan, s))
        return found
    keyed = [i for i, (plan, _) in enumerate(stretches) if plan["primary_key"]]
    images = located.select(
        each(lambda plan, s: F.lit(plan["database"])).alias("database"),
        each(lambda plan, s: F.lit(plan["table"])).alias("table"),
        "op", "commit_key", "_stretch", F.col("_stretch").isin(keyed).alias("keyed"),
        each(lambda plan, s: _values("before", s)).alias("before"),
        each(lambda plan, s: _values("after", s)).alias("after"))
    # Keys from the images in column order (the select above made them).
    images = images.select("*", each(lambda plan, s: _key("before", plan)).alias("before_key"),
                           each(lambda plan, s: _key("after", plan)).alias("after_key"))
    by_key = _states_by_key(images.where("keyed"), net)
    if net:
        return by_key
    return by_key.unionByName(_states_as_multiset(images.where(~F.col("keyed"))))


def _inside(s: dict) -> Column:
    """A change is in stretch `s`: of its source table, after its start,
    before its end."""
    seq, pos = F.col("commit_key.file_seq"), F.col("commit_key.pos")
    (lo_seq, lo_pos), (hi_seq, hi_pos) = s["after"], s["before"]
    inside = ((F.col("database") == s["database"]) & (F.col("table") == s["table"])
              & ((seq > lo_seq) | ((seq == lo_seq) & (pos > lo_pos))))
    if hi_seq is not None:
        inside &= (seq < hi_seq) | ((seq == hi_seq) & (pos < hi_pos))
    return inside


def _values(side: str, s: dict) -> Column:
    """An image's values in the table's column order (a column it does not
    have yet: its default); NULL when the change has no such image."""
    image = F.col(side)
    values = []
    for key, default, digits in zip(s["sources"], s["defaults"], s["fractions"]):
        text = image[key] if key is not None else F.lit(default).cast("string")
        if digits is not None:
            text = F.when(text.isNull(), text).otherwise(_with_fraction(text, F.lit(digits)))
        values.append(text)
    return F.when(image.isNotNull(), F.array(*values).cast("array<string>"))


def _key(side: str, plan: dict) -> Column:
    """The primary key's texts of an image (of the values in column order)."""
    return F.array(*[F.col(side)[i] for i in plan["primary_key"] or []]).cast("array<string>")


def _with_fraction(text: Column, digits: Column) -> Column:
    """A time's exact text with `digits` fractional digits (a MODIFY to another fsp)."""
    whole = F.substring_index(text, ".", 1)
    fraction = F.when(text.contains("."), F.substring_index(text, ".", -1)).otherwise(F.lit(""))
    return F.when(digits == 0, whole).otherwise(
        F.concat(whole, F.lit("."), F.rpad(fraction, digits, "0")))


def _states_by_key(changes: DataFrame, net: bool = False) -> DataFrame:
    before_key, after_key = F.col("before_key"), F.col("after_key")
    no_row = F.lit(None).cast("array<string>")
    sets = F.struct(after_key.alias("key"), F.col("after").alias("row"))
    clears = F.struct(before_key.alias("key"), no_row.alias("row"))
    touches = (F.when(F.col("op").isin(*INSERTS), F.array(sets))
                .when(F.col("op") == "d", F.array(clears))
                .when(before_key == after_key, F.array(sets))
                .otherwise(F.array(clears, sets)))
    # The last touch of each key: the greatest (commit_key, row), commit keys
    # being unique (max of a struct compiles to code; max_by does not).
    last = (changes.select("database", "table", "commit_key", F.explode(touches).alias("t"))
            .groupBy("database", "table", F.col("t.key").alias("key"))
            .agg(F.max(F.struct("commit_key", "t.row")).alias("last"))
            .select("database", "table", "key", F.col("last.row").alias("row")))
    if net:
        return last
    return last.where(F.col("row").isNotNull()).select("database", "table", "row")


def _states_as_multiset(changes: DataFrame) -> DataFrame:
    plus = F.struct(F.lit(1).alias("n"), F.col("after").alias("row"))
    minus = F.struct(F.lit(-1).alias("n"), F.col("before").alias("row"))
    deltas = (F.when(F.col("op").isin(*INSERTS), F.array(plus))
               .when(F.col("op") == "d", F.array(minus))
               .otherwise(F.array(minus, plus)))
    counted = (changes.select("database", "table", F.explode(deltas).alias("d"))
               .groupBy("database", "table", F.col("d.row").alias("row"))
               .agg(F.sum("d.n").alias("n"))
               .where(F.col("n") > 0))
    return counted.select("database", "table",
                          F.explode(F.array_repeat("row", F.col("n").cast("int"))).alias("row"))


ROWS_PER_FILE = 1_000_000


def typed_rows(frame: DataFrame, layout: dict, extra: tuple = ()) -> DataFrame:
    """`frame`'s `row` (exact text in column order) as the table's typed
    columns, then the columns named in `extra`."""
    return frame.select(*typed_columns(layout, F.col("row"), by_position=True), *extra)


def one_of(tables: set) -> Column:
    """A condition on rows with `database` and `table` columns: of one of
    these (database, table) pairs (plain comparisons, by which Spark prunes
    partitions of changes/)."""
    return functools.reduce(operator.or_, [
        (F.col("database") == db) & (F.col("table") == table) for db, table in sorted(tables)])


def typed_state(states: DataFrame, layout: dict, rows: int) -> DataFrame:
    """One table's `rows` rows, typed, sorted by primary key (else by every
    column) into files of about ROWS_PER_FILE rows."""
    table = states.where(one_of({(layout["database"], layout["table"])}))
    typed = typed_rows(table, layout)
    order = [F.col(f"`{key}`") for key in layout["primary_key"] or
             [c["key"] for c in layout["columns"]]]
    files = max(1, -(-rows // ROWS_PER_FILE))
    # One file: repartition(1), not coalesce(1), which would pull the
    # aggregation and the casts into the one task that writes the file.
    # More: ranges of the key (range sampling costs a job of its own).
    spread = typed.repartition(1) if files == 1 else typed.repartitionByRange(files, *order)
    return spread.sortWithinPartitions(*order)
