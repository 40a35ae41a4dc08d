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
Partial row images (binlog_row_image=MINIMAL, NOBLOB) complete the row
their key holds; what cannot be completed exactly is refused (REFUSED).

`as_of` is applied to whole transactions: their commit time, or the
position their commit event ends at, must not be past the point.
"""

from __future__ import annotations

import functools
import glob
import json
import operator
import re

from pyspark.sql import Column, DataFrame, functions as F

from binlake.schema.history import Schema
from binlake.spark.read.batches import TableFilter, load_schema_option
from binlake.spark.plans.conversions import fraction_text
from binlake.spark.plans.history import follow_ranges, stretch_width
from binlake.spark.plans.layouts import latest_layouts, qualified
from binlake.spark.read.ranges import Split, expand_inputs, number_files
from binlake.spark.rules.columns import CLOSES, VALID_FROM, VALID_TO
from binlake.spark.plans.refusals import (FULL_IMAGES_THEN_READ_ANEW, NEW_LAKE_WITH_FULL_IMAGES,
                                   READ_ANEW, forward, named_column)
from binlake.spark.state.starts import AsOf
from binlake.spark.plans.typed import (REFUSED, from_text, refuse, retyped_text, typed_columns,
                                 with_temporals)

#: Ops that add a row: an insert ("c"), a snapshot's row ("r", as Debezium's read).
INSERTS = ("c", "r")


# -- one table's changes, typed ----------------------------------------------------

def table_changes(spark, path, db: str, table: str, schema=None, temporals: str = "typed",
                  **options) -> DataFrame:
    """Changes of `db`.`table` like a Delta change data feed: one typed column
    per table column, an update as two rows (update_preimage, update_postimage),
    and `_change_type`, `_op`, `_commit_key`, `_commit_timestamp`, `_timestamp`,
    `_file`, `_pos`, `_row_index`, `_gtid`, `_xid`."""
    from binlake.spark.read.source import register
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
    return typed_change_feed(changes, with_temporals(layout, temporals))


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
                   net: bool = False, inserts_only: bool = False) -> DataFrame:
    """(database, table, row) of every table as of `as_of` (default: the
    end), `row` being the exact text of the row's values in the table's
    column order (arrays: smaller to shuffle than maps, and groupable).
    `net` (tables with a primary key only): what `changes` do to each key,
    (database, table, key, row, present, at), `row` NULL where they delete
    it; `present` NULL where `row` is whole, else which of its columns the
    changes set ("1" or "0" per column: the rest is the row's as the table
    holds it), `at` ("FILE at POS") the last change that left it partial.

    A plan (`history.table_plans`) names a table as it is at that point, its
    primary key (column indexes) and its stretches: the spans of changes its rows
    come from (under other table names before a RENAME), each with the key
    of every column in those changes or, for a column added later, its
    default. Changes outside every stretch (before a TRUNCATE or a re-CREATE,
    of a dropped table) are left out.

    Partial row images (binlog_row_image=MINIMAL or NOBLOB: an UPDATE logs
    the key and the changed columns, an INSERT the columns it names): an
    update sets the columns it holds, its key taken from the before image
    where the after image leaves it out; an insert's missing columns get
    the DEFAULT they had then. A row that stays partial where it cannot be
    completed (no row under its key to complete it, a DEFAULT not known)
    fails the job with `REFUSED` and where it is: never a row with NULLs
    in place of values the binlog did not say.

    `inserts_only` (the caller knows `changes` hold no UPDATE or DELETE):
    each after image is a row of its own, with no aggregate by key (a key
    is inserted once: a second INSERT of it needs a DELETE between)."""
    if as_of is not None:
        changes = changes.where(as_of.condition())
    images = _images(changes, plans)
    if inserts_only and not net:
        return _inserted_rows(images)
    one_column = all(len(plan["primary_key"]) == 1 for plan in plans if plan["primary_key"])
    if net:
        return _states_by_key(images.where("keyed"), one_column, net)
    # Only the branches the plans have: an absent one would scan and
    # project every change again only to keep none of them.
    branches = []
    if any(plan["primary_key"] for plan in plans):
        branches.append(_states_by_key(images.where("keyed"), one_column))
    if not all(plan["primary_key"] for plan in plans):
        branches.append(_states_as_multiset(images.where(~F.col("keyed"))))
    return functools.reduce(DataFrame.unionByName, branches)


def multiset_deltas(changes: DataFrame, plans: list[dict]) -> DataFrame:
    """What `changes` do to tables without a key (plans without one): per
    distinct row, (database, table, row, n), `n` the copies they add
    (negative: remove; never 0)."""
    images = _images(changes, plans)
    return _multiset_counts(images.where(~F.col("keyed")), net=True)


def _images(changes: DataFrame, plans: list[dict]) -> DataFrame:
    """Each change of the plans' stretches: its table, op, commit key and
    place, its images as values in the table's column order (`before`,
    `after_row`; `partial` where the after image sets only some columns),
    its keys, and whether its table has one (`keyed`).

    Every stretch becomes literal expressions (which stretch a change is in,
    its values in column order, its key), so the plan is one scan and one
    projection Spark compiles to code: no join, no per-row lambda."""
    stretches = [(plan, s) for plan in plans for s in plan["stretches"]]
    which = None
    for i, (_, s) in enumerate(stretches):
        which = (F.when if which is None else which.when)(_inside(s), F.lit(i))
    if which is None:
        which = F.lit(None).cast("int")
    located = changes.select("op", "commit_key", "file", "pos", "commit_pos", "commit_timestamp",
                             "before", "after", which.alias("_stretch"))
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
        "op", "commit_key", "file", "pos", "commit_pos", "commit_timestamp", "_stretch",
        F.col("_stretch").isin(keyed).alias("keyed"),
        each(lambda plan, s: _values("before", s, plan)).alias("before"),
        each(lambda plan, s: _values("after", s, plan)).alias("after"),
        each(lambda plan, s: _whole("before", s)).alias("before_whole"),
        each(lambda plan, s: F.when(~_whole("after", s), _parts(s, plan))).alias("parts"))
    # The row an image leaves (whole: its values; partial: what it sets,
    # PART_VALUE per column, NULL where it says nothing) and the keys.
    whole = F.col("parts").isNull() | F.forall("parts", lambda part: part.isNotNull())
    images = images.select(
        "*", F.when(F.col("parts").isNull(), F.col("after"))
              .otherwise(F.transform("parts", lambda part: part["v"])).alias("after_row"),
        F.when(~whole, F.col("parts")).alias("partial"),
        each(lambda plan, s: _key("before", plan)).alias("before_key"),
        each(lambda plan, s: _key("after", plan)).alias("after_key"))
    return images




#: A column's value in a partial row image: NULL where the image does not hold it.
PART_VALUE = "struct<v:string>"


def refused(exc: BaseException) -> str | None:
    """The reason a job failed on a change it refused (REFUSED), if it did."""
    text = str(exc)
    at = text.find(REFUSED)
    if at < 0:
        return None
    reason = text[at + len(REFUSED):].splitlines()[0]
    # Spark 4 ends an error's first line with its SQL state: not binlake's words.
    return re.sub(r"\s*SQLSTATE: \w+\s*$", "", reason).strip()


#: Why a partial row image of a row the table does not hold is refused
#: (its way forward names the table where it says {table}: binlake.spark.plans.refusals).
NOT_HELD = ("a partial row image (binlog_row_image=MINIMAL or NOBLOB) of a row the table "
            "does not hold: the columns it leaves out are not in the binlog"
            + forward(READ_ANEW))
#: Why a keyed table's row left partial by every change of it is refused.
NEVER_WHOLE = ("a partial row image (binlog_row_image=MINIMAL or NOBLOB) of a row no change "
               "before it wrote whole (an UPDATE that moved it to a new key, an INSERT leaving "
               "out a column whose DEFAULT is not known): the columns it leaves out are not in "
               "the binlog" + forward(READ_ANEW))
#: Why a keyless table's partial after image is refused.
KEYLESS_PARTIAL = ("a partial row image of a table without a primary key: the columns it "
                   "leaves out are not in the binlog" + forward(FULL_IMAGES_THEN_READ_ANEW))
#: Why a keyless table's partial before image is refused.
UNKNOWN_KEY = ("the row is identified by a key binlake does not know (a UNIQUE key: binlake "
               "keys tables by their PRIMARY KEY): a partial before image cannot name the row"
               + forward(FULL_IMAGES_THEN_READ_ANEW))
#: Why --history refuses a partial row image.
HISTORY_PARTIAL = ("--history keeps whole rows: a partial row image (binlog_row_image=MINIMAL "
                   "or NOBLOB) leaves columns out" + forward(NEW_LAKE_WITH_FULL_IMAGES))


def said(file: Column, pos: Column, table: Column, reason: str) -> Column:
    """A refusal's words: "FILE at POS: DB.TABLE: reason" (its way forward
    naming the table)."""
    return F.concat(where(file, pos), F.lit(": "), table, F.lit(": "),
                    named_column(reason, table))


def where(file: Column, pos: Column) -> Column:
    """How a refusal names a change: "FILE at POS"."""
    return F.concat(file, F.lit(" at "), pos.cast("string"))


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


def _values(side: str, s: dict, plan: dict) -> Column:
    """An image's values in the table's column order (a column it does not
    have yet: its default); NULL when the change has no such image.
    Where the stretch takes every column as it was, in its order, an image
    with exactly those keys gives its values as they are: a lookup by key
    compares every key before it (each decoded again from the Parquet
    dictionary), a fifth of the rebuild's time on the bench's bulk table."""
    image = F.col(side)
    columns = list(_stretch_columns(s, plan))
    values = F.array(*[_text(image, *column) for column in columns]).cast("array<string>")
    if len(columns) == stretch_width(s) and all(
            key is not None and digits is None and was is None
            for key, _, digits, was, _ in columns):
        keys = F.array(*[F.lit(key) for key, *_ in columns])
        values = F.when(F.map_keys(image) == keys, F.map_values(image)).otherwise(values)
    return F.when(image.isNotNull(), values)


def _stretch_columns(s: dict, plan: dict):
    """Per column of the plan's table, how a stretch's images give its
    text: the column it was there (None: added since), its DEFAULT, its
    fractional digits where a MODIFY changed them, the layout column it was
    where a MODIFY changed its type, and the column now."""
    return zip(s["sources"], s["defaults"], s["fractions"],
               s.get("was") or [None] * len(s["sources"]), plan["layout"]["columns"])


def _text(image: Column, key: str | None, default: str | None, digits: int | None,
          was: dict | None, column: dict) -> Column:
    text = image[key] if key is not None else F.lit(default).cast("string")
    if digits is not None:
        text = _with_fraction(text, digits)
    if was is not None and key is not None:
        text = retyped_text(text, was, column)
    return text


def _whole(side: str, s: dict) -> Column:
    """The image holds every column the table had then (a full row image)."""
    return F.size(F.col(side)) >= stretch_width(s)


def _parts(s: dict, plan: dict) -> Column:
    """What a change with a partial after image sets, PART_VALUE per column
    (NULL: not known): an insert, the values it holds and the DEFAULT of the
    others; an update, the after image's values, then the before image's
    (NOBLOB logs the unchanged columns before and after but leaves out
    BLOBs that did not change; MINIMAL, the key before and changed columns
    after)."""
    def part(side: str, key, default, digits, was, column) -> Column:
        value = F.struct(_text(F.col(side), key, default, digits, was, column).alias("v"))
        if key is None:
            return value
        return F.when(F.map_contains_key(F.col(side), key), value)
    empty = F.lit(None).cast(PART_VALUE)
    inserted, updated = [], []
    for (key, default, digits, was, column), omitted in zip(
            _stretch_columns(s, plan), s.get("omitted") or [None] * len(s["sources"])):
        after = part("after", key, default, digits, was, column)
        filled = (F.struct(F.lit(omitted[0]).cast("string").alias("v"))
                  if omitted is not None else empty)
        inserted.append(F.coalesce(after, filled))
        updated.append(F.coalesce(after, part("before", key, default, digits, was, column)))
    return (F.when(F.col("op").isin(*INSERTS), F.array(*inserted))
             .when(F.col("op") == "u", F.array(*updated)))


def _key(side: str, plan: dict) -> Column:
    """The primary key's texts of an image (of the values in column order);
    the after image's, column by column from the before image where it
    leaves one out (MINIMAL logs only the changed columns after: a key is
    never NULL, so a NULL is a column left out)."""
    image = F.col(side)
    if side == "after":
        return F.array(*[F.coalesce(image[i], F.col("before")[i])
                         for i in plan["primary_key"] or []]).cast("array<string>")
    return F.array(*[image[i] for i in plan["primary_key"] or []]).cast("array<string>")


def _with_fraction(text: Column, digits: int) -> Column:
    """A time's exact text with `digits` fractional digits (a MODIFY to
    another fsp): the driver's rule itself (conversions.fraction_text), run
    by a UDF, so that the two engines cannot differ."""
    def rule(value):  # (no type hints: pyspark would take it for a pandas UDF's)
        return None if value is None else fraction_text(value, digits)
    return F.udf(rule, "string")(text)


def _qualified() -> Column:
    return F.concat(F.col("database"), F.lit("."), F.col("table"))


#: A key's touches: its row cleared, set whole, or set in part (PART_VALUEs).
CLEAR, SET, PART = 0, 1, 2


def _states_by_key(changes: DataFrame, one_column: bool, net: bool = False) -> DataFrame:
    """Each key's row after the changes: its last touch in commit order (the
    greatest commit_key, unique), then, when touches that set only some
    columns follow the last whole one, those applied on top of it in order
    (collected only for such touches: whole images cost no more than the
    last touch). `one_column`: every key is one column, grouped by its text
    alone (a string sorts by its prefix, an array by comparing elements: the
    aggregate's sorts took a fifth of the job)."""
    before_key, after_key = F.col("before_key"), F.col("after_key")
    no_row = F.lit(None).cast("array<string>")
    no_parts = F.lit(None).cast(f"array<{PART_VALUE}>")

    def touch(kind: int, key: Column, row: Column, parts: Column) -> Column:
        return F.struct(F.lit(kind).alias("kind"), key.alias("key"), row.alias("row"),
                        parts.alias("parts"))
    sets = F.when(F.col("partial").isNull(), touch(SET, after_key, F.col("after_row"), no_parts)
                  ).otherwise(touch(PART, after_key, no_row, F.col("partial")))
    clears = touch(CLEAR, before_key, no_row, no_parts)
    touches = (F.when(F.col("op").isin(*INSERTS), F.array(sets))
                .when(F.col("op") == "d", F.array(clears))
                .when(before_key == after_key, F.array(sets))
                .otherwise(F.array(clears, sets)))
    kind = F.col("t.kind")
    # The last touch; the last that is not partial, with its row (a
    # struct's max compiles to code, max_by does not); the partial ones.
    grouped = (changes.select("database", "table", "commit_key", "file", "pos",
                              F.explode(touches).alias("t"))
               .groupBy("database", "table",
                        (F.col("t.key")[0] if one_column else F.col("t.key")).alias("key"))
               .agg(F.max(F.struct("commit_key", kind.alias("kind"))).alias("last"),
                    F.max(F.when(kind != PART, F.struct("commit_key", kind.alias("kind"),
                                                        F.col("t.row").alias("row"))))
                    .alias("base"),
                    F.collect_list(F.when(kind == PART, F.struct(
                        "commit_key", F.col("t.parts").alias("parts"), "file", "pos")))
                    .alias("parts")))
    base = F.col("base")
    later = F.array_sort(F.filter("parts", lambda p: base.isNull()
                                  | (p["commit_key"] > base["commit_key"])))
    start = F.when(base["kind"] == SET, F.transform(base["row"], lambda v: F.struct(v.alias("v")))
                   ).otherwise(F.array_repeat(F.lit(None).cast(PART_VALUE),
                                              F.size(F.element_at(later, 1)["parts"])))
    applied = F.aggregate(later, start, lambda row, p: F.zip_with(
        p["parts"], row, lambda new, old: F.coalesce(new, old)))
    partial = F.size(later) > 0
    incomplete = partial & F.exists(applied, lambda part: part.isNull())
    row = (F.when(F.col("last.kind") == CLEAR, no_row)
            .when(partial, F.transform(applied, lambda part: part["v"]))
            .otherwise(base["row"]))
    last_partial = F.element_at(later, -1)
    # Rows no change of this run completes: known only to the table (net,
    # when no touch before cleared the key), else refused.
    unknown = incomplete & (base.isNotNull() if net else F.lit(True))
    row = refuse(unknown & (F.col("last.kind") != CLEAR), row, said(
        last_partial["file"], last_partial["pos"], _qualified(), NEVER_WHOLE))
    if net:
        present = F.when(incomplete, F.array_join(F.transform(
            applied, lambda part: F.when(part.isNull(), "0").otherwise("1")), ""))
        at = F.when(incomplete, where(last_partial["file"], last_partial["pos"]))
        key = F.array("key") if one_column else F.col("key")
        return grouped.select("database", "table", key.alias("key"), row.alias("row"),
                              present.alias("present"), at.alias("at"))
    states = grouped.select("database", "table", row.alias("row"))
    return states.where(F.col("row").isNotNull())


def _inserted_rows(images: DataFrame) -> DataFrame:
    """(database, table, row) of changes that only insert: each after image,
    completed by its DEFAULTs (`_images`) or refused as `_states_by_key`
    and `_multiset_counts` refuse it."""
    file, pos = F.col("file"), F.col("pos")
    reason = F.when(F.col("keyed"), said(file, pos, _qualified(), NEVER_WHOLE)).otherwise(
        said(file, pos, _qualified(), KEYLESS_PARTIAL))
    row = refuse(F.col("partial").isNotNull(), F.col("after_row"), reason)
    return images.select("database", "table", row.alias("row"))


def history_versions(changes: DataFrame, plan: dict) -> DataFrame:
    """A keyed table's history (`--history`, SCD type 2) from `changes`:
    one row per version of a row a transaction left (the table's columns,
    typed; VALID_FROM its commit: file, end position, time; VALID_TO the
    next commit that changed or deleted the row, NULL while none did), and
    per key touched one CLOSES row (its key, VALID_FROM the first commit
    that touched it: where the version the history held open stops).
    Versions are per transaction: the row as its commit left it. A partial
    row image is refused (a version is a whole row)."""
    from pyspark.sql import Window
    layout = plan["layout"]
    images = _images(changes, [plan])
    row = refuse(F.col("partial").isNotNull(), F.col("after_row"), said(
        F.col("file"), F.col("pos"), _qualified(), HISTORY_PARTIAL))
    commit = F.struct(F.col("commit_key.file_seq").alias("seq"), F.col("commit_pos").alias("pos"),
                      F.col("file").alias("file"), F.col("commit_timestamp").alias("time"))
    before_key, after_key = F.col("before_key"), F.col("after_key")
    no_row = F.lit(None).cast("array<string>")

    def touch(kind: int, key: Column, values: Column) -> Column:
        return F.struct(F.lit(kind).alias("kind"), key.alias("key"), values.alias("row"))
    sets, clears = touch(SET, after_key, row), touch(CLEAR, before_key, no_row)
    touches = (F.when(F.col("op").isin(*INSERTS), F.array(sets))
                .when(F.col("op") == "d", F.array(clears))
                .when(before_key == after_key, F.array(sets))
                .otherwise(F.array(clears, sets)))
    # Each key's last touch in each transaction, then the next transaction's.
    last = (images.select("commit_key", commit.alias("commit"), F.explode(touches).alias("t"))
            .groupBy(F.col("t.key").alias("key"), F.col("commit"))
            .agg(F.max(F.struct("commit_key", F.col("t.kind").alias("kind"),
                                F.col("t.row").alias("row"))).alias("last")))
    following = F.lead("commit").over(Window.partitionBy("key").orderBy("commit.seq",
                                                                        "commit.pos"))
    ends = [F.col(f"next.{part}").alias(name) for part, name in zip(("file", "pos", "time"),
                                                                    VALID_TO)]
    starts = [F.col(f"commit.{part}").alias(name) for part, name in zip(("file", "pos", "time"),
                                                                        VALID_FROM)]
    versions = (last.select("key", "commit", "last", following.alias("next"))
                .where(F.col("last.kind") == SET)
                .select(*typed_columns(layout, F.col("last.row"), by_position=True), *starts, *ends,
                        F.lit(False).alias(CLOSES)))
    table = qualified(layout["database"], layout["table"])
    keys = [from_text(F.col("key")[j], layout["columns"][i], table).alias(layout["columns"][i]["key"])
            for j, i in enumerate(plan["primary_key"])]
    first = (last.groupBy("key").agg(F.min("commit").alias("commit"))
             .select(*keys, *starts, F.lit(True).alias(CLOSES)))
    return versions.unionByName(first, allowMissingColumns=True)


def _states_as_multiset(changes: DataFrame) -> DataFrame:
    """Rows of tables without a key: each distinct row as many times as the
    changes add it."""
    counted = _multiset_counts(changes).where(F.col("n") > 0)
    return counted.select("database", "table",
                          F.explode(F.array_repeat("row", F.col("n").cast("int"))).alias("row"))


def _multiset_counts(changes: DataFrame, net: bool = False) -> DataFrame:
    """A table without a key: +1 per after image, -1 per before image,
    summed per distinct row (with `net`, without the rows that sum to 0).
    Both images must be whole rows: the after image completed by the before
    image (NOBLOB), and a before image that is not whole means the server
    found the row by a key binlake does not know of (a UNIQUE NOT NULL
    key): refused."""
    op = F.col("op")
    file, pos = F.col("file"), F.col("pos")
    after = refuse(F.col("partial").isNotNull(), F.col("after_row"), said(
        file, pos, _qualified(), KEYLESS_PARTIAL))
    before = refuse(op.isin("u", "d") & ~F.col("before_whole"), F.col("before"), said(
        file, pos, _qualified(), UNKNOWN_KEY))
    plus = F.struct(F.lit(1).alias("n"), after.alias("row"))
    minus = F.struct(F.lit(-1).alias("n"), before.alias("row"))
    deltas = (F.when(op.isin(*INSERTS), F.array(plus))
               .when(op == "d", F.array(minus))
               .otherwise(F.array(minus, plus)))
    counted = (changes.select("database", "table", F.explode(deltas).alias("d"))
               .groupBy("database", "table", F.col("d.row").alias("row"))
               .agg(F.sum("d.n").alias("n")))
    return counted.where(F.col("n") != 0) if net else counted


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
