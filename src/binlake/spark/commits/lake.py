"""tables/: each table's rows as a Delta table, kept in step with changes/.

Strategy: a run that appended new changes hands every table only those
(the change files it wrote, listed in the manifest under `pending`):
- a table whose new changes are all inserts gets them appended: Spark
  types the rows, the driver adds their files in one Delta commit (an
  insert never meets a row already there: the server would have refused a
  duplicate key, and a table without a key is a multiset);
- a table with a primary key and updates or deletes gets its net change
  per key (the key's last image, its deletion, or the columns a partial row
  image sets), written the same way and applied by one MERGE
  (binlake.spark.commits.delta);
- a table without a primary key that had updates or deletes (a multiset)
  has its rows now counted, and one MERGE removes every copy of each row
  that loses copies and adds the copies it keeps and those added
  (binlake.spark.commits.delta.merge_copies: only the files holding rows removed
  are rewritten, and the change data feed says each copy removed and
  added);
- a table whose columns, key, name or rows a DDL statement changed (its
  plan differs from the one recorded at its last commit) has its rows
  carried into the new definition (`carried_from`: each column from the
  one it was, an added one its DEFAULT, none after a TRUNCATE, one whose
  type a MODIFY changed converted as the server converted it:
  binlake.spark.plans.conversions; one it does not convert refuses the run),
  the new changes applied on top, committed whole; a table new to the
  lake is rebuilt from all of its changes (one the lock-free
  snapshot read: by the driver from its chunk files, `_built_from_chunks`).
  The cost of all but the last follows a table's current size and its new
  changes, never its history.
A partial row image that cannot be completed fails the run in one line
before any table is committed: every table is staged first.
`--as-of` builds every table as of that point in a folder of its own
(`tables_dir`), and leaves the lake's tables as they are.

Jobs: the driver decides each table's way from the change files alone
(`ChangeFiles`: footers, and the `op` column of new files), without a Spark
job. A table with many changes gets a job of its own, whose executors write
its files; small tables are computed together in one job per group and
collected to the driver, which writes their files (Spark's fixed cost per
job, per stage and per output file is what small tables would otherwise
spend their time on). Nothing is cached: each job reads its tables'
partitions of changes/ only.

Exactly once: every commit records the run whose changes it holds (the
application transaction binlake.spark.commits.delta sets), so a run killed after
some tables committed is completed by the next one, each table taking the
pending runs it does not hold yet. The manifest says the tables are whole
only after every table committed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import operator
import os
import re
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, functions as F

from binlake.spark.rules import driver_tables as driver
from binlake.spark.commits.delta import (AT, CLOSES, COPIES_REMOVED, COPY_ADDED, COPY_OP, DELETED,
                                 NET_COLUMNS, PRESENT, VALID_FROM, VALID_TO, commit_table,
                                 committed_run, key_bounds, merge_copies,
                                 merge_history, merge_net_changes, partition_folder, plan_of,
                                 read_table, row_count, rows_not_held, rows_under_keys,
                                 through_of)
from binlake.spark.plans.conversions import refusal_of_plan
from binlake.spark.commits.delta_upkeep import after_run
from binlake.spark.plans.history import PositionOrder, rows_lost_refusal, stretch_width
from binlake.spark.plans.layouts import qualified
from binlake.spark.state.manifest import Manifest, TablesState
from binlake.spark.read.partitioned import SNAPSHOT_FILES, escape_partition_value, parquet_rows
from binlake.spark.plans.refusals import named, refusal_line
from binlake.spark.rules.tables import (NOT_HELD, ROWS_PER_FILE, AsOf, history_versions,
                                  multiset_deltas, one_of, rebuild_states, refused, typed_rows,
                                  typed_state)
from binlake.spark.plans.typed import (arrow_type, converted, from_text, refuse, spark_type,
                                 table_struct, typed_columns)

TABLES = "tables"
#: The folder of the history tables (`--history`), one per keyed table.
HISTORY = "history"


def plan_signature(plan: dict) -> str:
    """What a table's rows are made from (its columns' names and types, key,
    stretches): equal signatures let new changes be applied on top of the
    committed rows. Of each column, only what types its values: a table
    map written after a DDL says more of a column than the DDL did (a
    VARCHAR's length, a collation, ENUM members) and changes no value."""
    columns = [[c["key"], c["type"], spark_type(c).simpleString()]
               for c in plan["layout"]["columns"]]
    shape = dict(plan, layout=dict(plan["layout"], columns=columns))
    text = json.dumps(shape, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def update_tables(spark, out: str, plans: list, manifest: Manifest, *, as_of: AsOf | None,
                  staged: str, read_changes, tables_mixed, committing, log,
                  tables_dir: str | None = None, history: bool = False, selected=None,
                  fresh: set = frozenset()) -> tuple[dict, TablesState, dict]:
    """Bring tables/ (or `tables_dir`) in step with the manifest, and with
    `history` history/ too; returns ({"db.table": rows}, the state of the
    tables now, {"appended"|"merged"|...|"history": [tables]}). `spark`: the
    run's session, used only where a table needs Spark.
    `tables_mixed()` records in the manifest, before work that leaves the
    tables of two points if killed, that they are; `committing()` is called
    once every refusal is decided, before the first commit. Tables
    `selected(db, table)` does not select (--tables) are left as they are;
    those named in `fresh` ("db.table": read anew by the lock-free
    snapshot) are built again from their changes where their plan changed,
    never carried from their rows."""
    tables_dir = tables_dir or os.path.join(out, TABLES)
    state = manifest.tables
    run = manifest.run
    through = manifest.through()
    by_key = _by_table(plans)
    signatures = {key: plan_signature(plan) for key, plan in by_key.items()}
    in_step = as_of is None and tables_in_step(state, tables_dir)
    shutil.rmtree(staged, ignore_errors=True)
    lake = _Lake(spark, tables_dir, staged, run, through, log,
                 ChangeFiles(os.path.join(out, "changes")), os.path.join(out, HISTORY))
    try:
        # A type change binlake does not convert as the server did, rows an
        # ALTER deleted unsaid: refused before anything is staged (each
        # engine would otherwise guess).
        reason = next((found for plan in by_key.values()
                       for found in (refusal_of_plan(plan), rows_lost_refusal(plan)) if found),
                      None)
        if reason is not None:
            raise ValueError(reason)
        _stage(lake, manifest, by_key, signatures, in_step, as_of, out, tables_dir,
               read_changes, tables_mixed, fresh)
        if history and as_of is None:
            _stage_histories(lake, manifest, by_key, signatures, out, read_changes)
    except Exception as exc:
        # Nothing was committed: what the jobs staged (those beside a job that
        # failed finish their files) goes.
        shutil.rmtree(staged, ignore_errors=True)
        # A change a Spark job refused, or the driver did: one line, nothing committed.
        reason = refused(exc) or (str(exc) if isinstance(exc, ValueError) else None)
        if reason is None:
            raise
        raise ValueError(refusal_line(reason, out)) from None
    committing()
    lake.commit()
    lake.maintain()

    def left(folder: str) -> set:  # tables the selection leaves as they are
        return {name for name in (os.listdir(folder) if os.path.isdir(folder) else ())
                if selected is not None and not selected(*name.split(".", 1))}
    lake.drop_all_but(set(by_key) | left(tables_dir))
    if history and as_of is None:
        lake.drop_all_but({key for key, plan in by_key.items() if plan["primary_key"]}
                          | left(lake.history_dir), lake.history_dir)
    shutil.rmtree(staged, ignore_errors=True)
    counts = {key: row_count(os.path.join(tables_dir, key)) for key in sorted(by_key)}
    kept = left(tables_dir)
    plans = {**{key: signature for key, signature in (state.plans if state else {}).items()
                if key in kept}, **signatures}
    return counts, TablesState(through, plans, as_of.describe() if as_of else None), lake.work


def tables_in_step(state: TablesState | None, tables_dir: str) -> bool:
    """tables/ holds tables a run brings in step by their new changes; else
    (none yet, a rebuild killed half-way, tables of an --as-of point) every
    table is rebuilt, in Spark."""
    return (state is not None and not state.mixed and state.as_of is None
            and os.path.isdir(tables_dir))


def _stage(lake: "_Lake", manifest: Manifest, by_key: dict, signatures: dict,
           in_step: bool, as_of, out: str, tables_dir: str, read_changes, tables_mixed,
           fresh: set = frozenset()) -> None:
    """Every table's next version written to the staging folder, none
    committed: a change refused on the way leaves every table as it was."""
    if not in_step:
        # A kill in the middle leaves tables of two points: rebuild all next time.
        tables_mixed()
        plans = list(by_key.values())
        lake.rebuild(read_changes, plans if as_of else lake.rebuild_in_driver(plans), as_of)
    else:
        rebuild, groups, carried = [], {}, {}
        order = PositionOrder(manifest.file_seqs())
        for key, plan in by_key.items():
            if manifest.tables.plans.get(key) != signatures[key]:
                source = None if key in fresh else carried_from(plan, tables_dir, order)
                if source is None:
                    rebuild.append(plan)
                else:
                    carried[key] = (plan, source)
                continue
            done = committed_run(os.path.join(tables_dir, key), key)
            if done is None:
                rebuild.append(plan)
                continue
            runs = manifest.runs_after(done)
            if runs:
                groups.setdefault(runs, []).append(plan)

        def new_files(done: int) -> list:
            return _new_files(manifest, out, done)
        for runs, group in groups.items():
            files = new_files(runs[0] - 1)
            group = lake.apply_in_driver(files, group) if files else []
            if group:
                lake.apply(read_changes(files), files, group)
        carried = lake.carry_in_driver({key: (plan, source, new_files(source.done))
                                        for key, (plan, source) in carried.items()})
        rebuild += lake.carry(read_changes, carried)
        lake.rebuild(read_changes, lake.rebuild_in_driver(rebuild), None)


def _new_files(manifest: Manifest, out: str, done: int) -> list:
    """The change files of the runs after run `done` that are still pending."""
    return [os.path.join(out, "changes", name) for name in manifest.pending_after(done)]


def _stage_histories(lake: "_Lake", manifest: Manifest, by_key: dict, signatures: dict, out: str,
                     read_changes) -> None:
    """Each keyed table's history (`--history`) staged: its new versions
    and the versions they end, merged; or, where the table's plan changed
    since its history was built (DDL changed its columns, key or name), or
    it has none yet, built from all of the table's changes."""
    keyless = sorted(key for key, plan in by_key.items() if not plan["primary_key"])
    if keyless:
        lake.log(f"history: none for {len(keyless)} table(s) without a primary key "
                 f"({', '.join(keyless)}): their rows have no identity to follow")
    for key, plan in by_key.items():
        if not plan["primary_key"]:
            continue
        uri = os.path.join(lake.history_dir, key)
        if plan_of(uri) != signatures[key]:
            changes = read_changes(only=_sources(plan))
            if changes is not None:
                lake.history(key, plan, changes, signatures[key], whole=True)
            continue
        files = lake.changes.of(_new_files(manifest, out, committed_run(uri, _history_name(key))
                                           or 0), _sources(plan))
        if files:
            lake.history(key, plan, read_changes(files), signatures[key], whole=False)


def _history_name(key: str) -> str:
    """A history table's name in its commits' application transaction."""
    return f"history:{key}"


@dataclass(frozen=True)
class CarriedFrom:
    """Where a table whose definition changed takes its rows from: the Delta
    table at `uri` (None: no row of it lives on, as after a TRUNCATE), as
    of run `done`, its columns named as `stretch` has them."""
    uri: str | None
    done: int
    stretch: dict | None


def carried_from(plan: dict, tables_dir: str, order) -> CarriedFrom | None:
    """How a table whose plan changed since its last commit (a DDL statement
    changed its columns, key or name, or emptied it) is brought in step
    from the rows it holds, or None: it is rebuilt from changes/. Its rows
    live on in the stretch of the new plan that holds the point the table
    was last committed at, under that stretch's table name (the one before
    a RENAME); no stretch holds it when a TRUNCATE or a new CREATE came
    since, and the rows start empty."""
    own = os.path.join(tables_dir, qualified(plan["database"], plan["table"]))
    points = {}  # uri -> its committed point (stretches share table names)
    for stretch in plan["stretches"]:
        uri = os.path.join(tables_dir, qualified(stretch["database"], stretch["table"]))
        if uri not in points:
            points[uri] = _committed_point(uri, order)
        point = points[uri]
        if point is None:
            continue
        after, before = tuple(stretch["after"]), tuple(stretch["before"])
        if after < point and (before[0] is None or point < before):
            done = committed_run(uri, qualified(stretch["database"], stretch["table"]))
            return CarriedFrom(uri, done, stretch) if done is not None else None
    point = points[own] if own in points else _committed_point(own, order)
    done = committed_run(own, qualified(plan["database"], plan["table"])) if point else None
    if done is None:
        return None
    if any(tuple(stretch["after"]) < point for stretch in plan["stretches"]):
        return None  # rows of before the point the table does not hold: rebuild
    return CarriedFrom(None, done, None)


def _committed_point(uri: str, order) -> tuple | None:
    """(file_seq, pos) the Delta table at `uri` was last committed at."""
    if not os.path.isdir(uri):
        return None
    through = through_of(uri)
    if not through:
        return None
    return max(order((name, end)) for name, end in through.items())


#: A table with at most this many change rows is computed in a job with
#: others and collected to the driver (Spark's cost per job and per file is
#: then paid once for many small tables); a larger one has a job of its own
#: whose executors write its files.
SMALL_TABLE_ROWS = 250_000
#: At most this many change rows, and tables, in one collected job.
COLLECTED_ROWS = 500_000
COLLECTED_TABLES = 8
#: Spark jobs of a step over at most this many rows run interpreted: a
#: fresh JVM compiling their generated code (Janino, whole-stage and per
#: expression) takes seconds, far more than running a few rows through
#: Catalyst's interpreted expressions (bench/README.md, issue 29).
INTERPRETED_ROWS = 50_000
#: The session settings that make a job interpreted, and their values then.
INTERPRETED = {"spark.sql.codegen.wholeStage": "false",
               "spark.sql.codegen.factoryMode": "NO_CODEGEN"}


class _Lake:
    """The Spark and Delta work on tables/ of one run."""

    def __init__(self, spark, tables_dir: str, staged: str, run: int, through: dict, log,
                 changes: "ChangeFiles", history_dir: str):
        self.spark = spark  # a LazySession in a run: started where first used
        self.tables_dir, self.staged, self.history_dir = tables_dir, staged, history_dir
        self.changes = changes
        self.run, self.through, self.log = run, through, log
        self.work = {"appended": [], "merged": [], "rewritten": [], "carried": [],
                     "rebuilt": [], "history": []}
        self.commits: list = []  #: (function, arguments) run by `commit`, in order

    def commit(self) -> None:
        """Each staged table's next version committed (a table at a time:
        each commit is atomic, and a rerun completes the ones a kill left)."""
        for function, arguments in self.commits:
            function(*arguments)
        self.commits = []

    def maintain(self) -> None:
        """The tables this run committed to, compacted when their files are
        many, and lite-vacuumed (binlake.spark.commits.delta_upkeep.after_run: the
        full vacuum is `binlake maintain`'s)."""
        touched = [os.path.join(self.history_dir if how == "history" else self.tables_dir, key)
                   for how, keys in self.work.items() for key in keys]
        done = [after_run(uri) for uri in touched]
        compacted = sum(d["compacted"] for d in done)
        if compacted:
            self.log(f"tables: {compacted} small files compacted")

    def rebuild(self, read_changes, plans: list, as_of: AsOf | None) -> None:
        """Each table's state as of the end (or `as_of`), computed from its
        partitions of changes/ and committed whole as the table's next
        version. Files written but never committed are in no version."""
        if not plans:
            return
        by_key = _by_table(plans)
        sizes = {key: self.changes.rows(_sources(plan)) for key, plan in by_key.items()}
        # A key added since the table began: the changes of its days without
        # it are copies added and removed (`_rewrite`), then the rest by key.
        rekeyed = [key for key, plan in by_key.items() if _days_keyed_otherwise(plan)]
        for key in rekeyed:
            plan = by_key.pop(key)
            changes = read_changes(only=_sources(plan))
            if as_of is not None and changes is not None:
                changes = changes.where(as_of.condition())
            empty = self.spark.createDataFrame([], table_struct(plan["layout"]))
            self._rewrite(changes, plan, empty, sizes.pop(key))
            self.commits.append((self._commit, (key, plan, "overwrite", "rebuilt")))

        # Tables whose every change inserts (an event log) need no aggregate by key.
        inserts = {key: self.changes.inserts_only(_sources(plan)) for key, plan in by_key.items()}

        def job(keys: list) -> None:
            group = [by_key[key] for key in keys]
            changes = read_changes(only=set().union(*map(_sources, group)))
            if changes is not None:
                self._write(rebuild_states(changes, group, as_of, inserts_only=inserts[keys[0]]),
                            group, sizes)
        self._each(job, self._jobs(sizes, inserts), sum(sizes.values()))
        for key, plan in by_key.items():
            self.commits.append((self._commit, (key, plan, "overwrite", "rebuilt")))
        self.work["rebuilt"] += list(by_key) + rekeyed
        self.log(f"tables: {len(by_key) + len(rekeyed)} rebuilt"
                 + (f" as of {as_of.describe()}" if as_of else ""))

    def apply(self, changes, files: list, plans: list) -> None:
        """Add new changes (`changes`, read from `files`) to tables whose
        definition did not change: inserts appended, a keyed table's net
        changes merged, a keyless table's rows rewritten."""
        found = self.changes.stats(files)
        appended, merged, rewritten = [], [], []
        for plan in plans:
            sources = _sources(plan)
            if not any(source in found for source in sources):
                continue  # nothing new
            if all(found[source].inserts_only for source in sources if source in found):
                appended.append(plan)
            elif plan["primary_key"]:
                merged.append(plan)
            else:
                rewritten.append(plan)
        if appended or merged or rewritten:
            self.log(f"tables: appending to {len(appended)}, merging into {len(merged)}, "
                     f"rewriting {len(rewritten)}")
        kinds = {**{key: "rows" for key in _by_table(appended)},
                 **{key: "net" for key in _by_table(merged)}}
        by_key = _by_table(appended + merged)
        sizes = {key: sum(found[s].rows for s in _sources(plan) if s in found)
                 for key, plan in by_key.items()}

        def job(keys: list) -> None:
            group = [by_key[key] for key in keys]
            mine = changes.where(one_of(set().union(*map(_sources, group))))
            net = kinds[keys[0]] == "net"
            self._write(rebuild_states(mine, group, net=net, inserts_only=not net), group, sizes,
                        net=net)
        self._each(job, self._jobs(sizes, kinds), sum(sizes.values()))
        for key, plan in by_key.items():
            if kinds[key] == "rows":
                self.commits.append((self._commit, (key, plan, "append")))
            else:
                net = self._net_changes(key)
                self._refuse_rows_not_held(key, net, plan["layout"]["primary_key"])
                self.commits.append((self._merge, (key, net, plan["layout"])))
        self.work["appended"] += [key for key in by_key if kinds[key] == "rows"]
        self.work["merged"] += [key for key in by_key if kinds[key] == "net"]

        def rewrite(plan: dict) -> None:
            key = qualified(plan["database"], plan["table"])
            current = delta_frame(changes.sparkSession, os.path.join(self.tables_dir, key))
            self._copies(changes, plan, current.select(
                *[_column(c["key"]) for c in plan["layout"]["columns"]]))
        held = sum(row_count(os.path.join(self.tables_dir, key)) for key in _by_table(rewritten))
        self._each(rewrite, rewritten, held + sum(found[s].rows for plan in rewritten
                                                  for s in _sources(plan) if s in found))
        for key in _by_table(rewritten):
            self.commits.append((self._merge_copies, (key, self._net_changes(key))))
        self.work["rewritten"] += list(_by_table(rewritten))

    def apply_in_driver(self, files: list, plans: list) -> list:
        """`apply` for the tables whose new changes the driver computes
        (binlake.spark.rules.driver_tables); returns the plans left to Spark."""
        found = self.changes.stats(files)
        left, done = [], {"appended": [], "merged": [], "rewritten": []}
        for plan in plans:
            sources = _sources(plan)
            new = sum(found[s].rows for s in sources if s in found)
            if not new:
                continue  # nothing new
            key, layout = qualified(plan["database"], plan["table"]), plan["layout"]
            mine = self.changes.of(files, sources)
            if not driver.takes(new) and not self.changes.moves_partially(mine, plan):
                if not (all(found[s].inserts_only for s in sources if s in found)
                        and self._staged_inserts(plan, mine, "appended")):
                    left.append(plan)
                continue
            uri = os.path.join(self.tables_dir, key)
            inserts_only = all(found[s].inserts_only for s in sources if s in found)
            try:
                changes = driver.images(driver.read_changes(files, self.changes.root, sources),
                                        plan, partial=bool(plan["primary_key"]) and not inserts_only)
                if inserts_only:
                    rows, how = driver.appended(changes, layout, key), "appended"
                    if layout["primary_key"]:
                        rows = _sorted_by(rows, layout["primary_key"])
                elif plan["primary_key"]:
                    rows = driver.net_changes(changes, plan, key,
                                              functools.partial(rows_under_keys, uri))
                    how = "merged"
                else:
                    current = read_table(uri).select([c["key"] for c in layout["columns"]])
                    rows, how = driver.copies(current, changes, plan, key), "rewritten"
            except driver.InSpark:
                left.append(plan)
                continue
            if how != "rewritten":  # the table's own types (a list's item name, say)
                rows = rows.cast(_with_table_types(rows.schema, uri))
            self._stage_rows(key, rows, plan, how)
            done[how].append(key)
        if any(done.values()):
            self.log(f"tables: appending to {len(done['appended'])}, merging into "
                     f"{len(done['merged'])}, rewriting {len(done['rewritten'])} (in the driver)")
        return left

    def rebuild_in_driver(self, plans: list) -> list:
        """`rebuild` for the tables whose every change the driver computes
        (small ones: a small lake's first run, a table created since; a
        follower then needs no Spark job; one the lock-free snapshot read,
        `_built_from_chunks`); returns the plans left to Spark."""
        plans = [plan for plan in plans if not self._built_from_chunks(plan)
                 and not self._built_from_inserts(plan)]
        whole = {qualified(plan["database"], plan["table"]):
                 (plan, CarriedFrom(None, 0, None), self.changes.all_of(_sources(plan)))
                 for plan in plans if not _days_keyed_otherwise(plan)}
        left, done = self._rewrite_in_driver(whole, "rebuilt")
        if done:
            self.log(f"tables: {done} rebuilt (in the driver)")
        staged = whole.keys() - left.keys()
        return [plan for plan in plans if qualified(plan["database"], plan["table"]) not in staged]

    def _built_from_inserts(self, plan: dict) -> bool:
        """A table whose every change inserts, more than the driver computes
        row by row (a large INSERT ... SELECT into a new table): built from
        its change files one by one, typed as Arrow columns (as
        `_built_from_chunks` types a snapshot's), without a JVM."""
        sources = _sources(plan)
        files = self.changes.all_of(sources)
        if (len(plan["stretches"]) != 1 or not files
                or driver.takes(sum(map(parquet_rows, files)))
                or not all(found.inserts_only for found in self.changes.stats(files).values())):
            return False
        return self._staged_inserts(plan, files, "rebuilt")

    def _staged_inserts(self, plan: dict, files: list, how: str) -> bool:
        """The rows inserts-only change `files` add to the plan's table,
        typed as Arrow columns file by file and staged (`how`: "appended" to
        the table, or "rebuilt" whole); False where the table is not of one
        stretch Arrow types so (DDL since its CREATE, partial images)."""
        stretch = _arrow_stretch(plan)
        if stretch is None:
            return False
        import numpy as np
        key = qualified(plan["database"], plan["table"])

        def typed(path: str):
            read = pq.read_table(path, columns=["commit_key", "after"])
            at = read.column("commit_key").combine_chunks()
            seq, pos = at.field("file_seq"), at.field("pos")
            lo_seq, lo_pos = stretch["after"]
            inside = pc.or_(pc.greater(seq, lo_seq),
                            pc.and_(pc.equal(seq, lo_seq), pc.greater(pos, lo_pos)))
            after = read.column("after").combine_chunks().filter(inside)
            if not len(after):
                return None  # (changes of the table before its CREATE: another table)
            if np.diff(after.offsets.to_numpy()).min() < len(stretch["sources"]):
                raise driver.InSpark("a partial row image (binlog_row_image=MINIMAL)")
            return _typed_rows(_chunk_columns(after, stretch["sources"]), plan)
        try:
            self._stage_typed(plan, typed, files)
        except driver.InSpark:
            shutil.rmtree(os.path.join(self.staged, key), ignore_errors=True)
            return False
        self.work[how].append(key)
        self.commits.append((self._commit, (key, plan, "append" if how == "appended"
                                            else "overwrite", None if how == "appended"
                                            else how)))
        return True

    def _stage_typed(self, plan: dict, typed, paths: list, last=None) -> None:
        """`typed(path)` of each path (a table's typed rows, or None), then
        `last`, staged as the table's files. Arrow reads and casts outside
        the GIL: files are typed side by side."""
        with _RowFiles(os.path.join(self.staged, qualified(plan["database"], plan["table"])),
                       _partition_by(plan)) as out:
            with ThreadPoolExecutor(CHUNK_WORKERS) as pool:
                for rows in pool.map(typed, paths):
                    if rows is not None:
                        out.write(rows)
            if last is not None:
                out.write(last)

    def _built_from_chunks(self, plan: dict) -> bool:
        """A table the lock-free snapshot read (binlake.spark.snapshot.chunks),
        staged from its chunk files one by one, by the driver: each chunk's
        rows typed as they are (Arrow columns: no Python per number or
        text), but those of the keys the binlog's changes touched, which take
        their net change instead. With whole row images a touched key's last
        change is its state, whatever its chunk says (a chunk row is the
        key's state at its position, between two changes). False where this
        does not apply (not such a table, a key of more than one column, DDL
        since the snapshot): the table is rebuilt as any other."""
        key, layout = qualified(plan["database"], plan["table"]), plan["layout"]
        sources, primary = _sources(plan), plan["primary_key"]
        files = self.changes.all_of(sources)
        chunks = [path for path in files if os.path.basename(path).startswith(SNAPSHOT_FILES)]
        stretch = _arrow_stretch(plan)
        if not chunks or len(primary) != 1 or stretch is None:
            return False
        binlog = sorted(set(files) - set(chunks))
        if not driver.takes(sum(map(parquet_rows, binlog))):
            return False
        try:
            net = driver.net_by_key(driver.images(driver.read_changes(
                binlog, self.changes.root, sources), plan), primary)
        except driver.InSpark:
            return False
        touched = pa.array([k[0] for k in net], pa.string())

        def typed_chunk(path: str):
            """A chunk's rows, typed, but the touched keys' (None: none in the stretch)."""
            read = pq.read_table(path, columns=["commit_key", "after"])
            if not read.num_rows or not _inside(read.column("commit_key")[0].as_py(), stretch):
                return None  # a chunk from before a TRUNCATE: its rows are gone
            texts = _chunk_columns(read.column("after").combine_chunks(), stretch["sources"])
            if len(touched):
                kept = pc.invert(pc.is_in(texts[primary[0]], value_set=touched))
                texts = [column.filter(kept) for column in texts]
            return _typed_rows(texts, plan)
        present = [found.row for found in net.values() if found.row is not None]
        self._stage_typed(plan, typed_chunk, chunks, _sorted_by(
            driver.typed_table(present, layout, key), layout["primary_key"]) if present else None)
        self.work["rebuilt"].append(key)
        self.commits.append((self._commit, (key, plan, "overwrite", "rebuilt")))
        self.log(f"tables: {key} built from {len(chunks)} chunk(s) of the snapshot "
                 f"and {len(net)} key(s) the binlog changed (in the driver)")
        return True

    def carry_in_driver(self, carried: dict) -> dict:
        """`carry` for the tables whose rows and new changes the driver
        computes; returns those left to Spark."""
        left, done = self._rewrite_in_driver(carried, "carried")
        if done:
            self.log(f"tables: carrying {done} into their new definitions (in the driver)")
        # A table whose every change inserts (rows into a table just created,
        # whose plan the first table map changed) is its inserts, however many.
        return {key: entry for key, entry in left.items()
                if not self._built_from_inserts(entry[0])}

    def _rewrite_in_driver(self, tables: dict, how: str) -> tuple[dict, int]:
        """{key: (plan, CarriedFrom, change files)} staged whole where the
        driver computes them; (those left to Spark, how many were staged)."""
        left = {}
        for key, (plan, source, files) in tables.items():
            try:
                rows = self._rewritten_in_driver(plan, source, files)
            except driver.InSpark:
                left[key] = (plan, source, files)
                continue
            self._stage_rows(key, rows, plan, how)
        return left, len(tables) - len(left)

    def _rewritten_in_driver(self, plan: dict, source: "CarriedFrom", files: list):
        """The table's rows carried from `source` with its changes in
        `files` applied, computed by the driver (InSpark where it does not)."""
        sources = _sources(plan)
        mine = self.changes.of(files, sources)
        # A key moved by a partial image: only the driver's fold in commit
        # order completes it (`apply` sends such runs here too), any size.
        # Its change files are read for that only where a size would send
        # the table to Spark.
        many = not driver.takes(sum(map(parquet_rows, mine)))
        held = 0 if source.uri is None else row_count(source.uri)
        moves = ((many or held > driver.DRIVER_TABLE_ROWS)
                 and self.changes.moves_partially(mine, plan))
        if many and not moves:
            raise driver.InSpark("many changes")
        current = self._carried_in_driver(plan, source, any_size=moves)
        changes = driver.images(driver.read_changes(mine, self.changes.root, sources), plan,
                                partial=bool(plan["primary_key"]))
        return driver.rewritten(current, changes, plan, qualified(plan["database"], plan["table"]),
                                any_size=moves)

    def _carried_in_driver(self, plan: dict, source: "CarriedFrom", any_size: bool = False):
        """`_carried_rows` as an Arrow table (InSpark where that is None, or
        the table is large and not `any_size`)."""
        layout = plan["layout"]
        key = qualified(plan["database"], plan["table"])
        types = driver.arrow_types(layout)
        names = [c["key"] for c in layout["columns"]]
        held = 0 if source.uri is None else row_count(source.uri)
        if not held:  # no row to carry (a table whose first rows come now: its layout was the DDL's)
            return pa.schema([pa.field(n, kind) for n, kind in zip(names, types)]).empty_table()
        if held > driver.DRIVER_TABLE_ROWS and not any_size:
            raise driver.InSpark("a large table")
        current = read_table(source.uri)
        columns = []
        for column, name, default, digits, was in _carried_columns(layout, source.stretch):
            if name is None:
                columns.append(driver.typed_column([default] * current.num_rows, column, key))
            elif digits is not None:
                raise driver.InSpark("a column's fractional digits changed")
            else:
                columns.append(driver.converted(current.column(name), was, column))
        return pa.Table.from_arrays(columns, names=names)

    def _stage_rows(self, key: str, rows, plan: dict, how: str) -> None:
        """Rows the driver computed, staged and committed as Spark's are."""
        layout = plan["layout"]
        self.work[how].append(key)
        if how == "merged":  # the MERGE takes them as they are
            self.commits.append((self._merge, (key, rows, layout)))
            return
        if how == "rewritten":  # a keyless table's copies, merged
            self.commits.append((self._merge_copies, (key, rows)))
            return
        if how in ("carried", "rebuilt"):  # whole: in key order, as Spark writes them
            rows = _sorted_by(rows, layout["primary_key"] or [c["key"] for c in layout["columns"]])
        _write_rows(os.path.join(self.staged, key), rows, _partition_by(plan))
        mode = "append" if how == "appended" else "overwrite"
        self.commits.append((self._commit, (key, plan, mode, None if how == "appended" else how)))

    def carry(self, read_changes, carried: dict) -> list:
        """Tables whose definition changed (ADD/DROP/RENAME COLUMN, MODIFY, a
        new key, RENAME TABLE, TRUNCATE, a new CREATE), {key: (plan,
        CarriedFrom, new change files)}: the rows they hold carried into the
        new columns (each from the column it was, converted where its type
        changed; an added one its DEFAULT), the new changes applied on top,
        staged whole for one overwrite. The cost follows the table's size
        and its new changes, never its history. Returns the plans that need
        a rebuild instead (a type change binlake does not convert, a column
        whose fractional digits changed)."""
        rebuild, jobs = [], []
        for key, (plan, source, files) in carried.items():
            current = self._carried_rows(plan, source)
            if current is None:
                rebuild.append(plan)
                continue
            held = row_count(source.uri) if source.uri else 0
            jobs.append((plan, current, files, held + sum(map(parquet_rows, files))))
        if jobs:
            self.log(f"tables: carrying {len(jobs)} into their new definitions")

        def job(plan, current, files, size) -> None:
            self._rewrite(read_changes(files) if files else None, plan, current, size)
        self._each(lambda one: job(*one), jobs, sum(size for *_, size in jobs))
        for plan, *_ in jobs:
            key = qualified(plan["database"], plan["table"])
            self.commits.append((self._commit, (key, plan, "overwrite", "carried")))
            self.work["carried"].append(key)
        return rebuild

    def _carried_rows(self, plan: dict, source: "CarriedFrom"):
        """The rows `source` holds, in the plan's columns (none after a
        TRUNCATE), or None where a column's type or fractional digits
        changed in a way binlake does not convert."""
        layout = plan["layout"]
        key = qualified(plan["database"], plan["table"])
        if source.uri is None:
            return self.spark.createDataFrame([], table_struct(layout))
        current = delta_frame(self.spark, source.uri)
        held = {field.name: field.dataType for field in current.schema.fields}
        columns = []
        for column, name, default, digits, was in _carried_columns(layout, source.stretch):
            if name is None:
                value = from_text(F.lit(default).cast("string"), column, key)
            elif digits is not None:
                return None
            else:
                value = converted(_column(name), was, held.get(name), column)
                if value is None:
                    return None
            columns.append(value.alias(column["key"]))
        return current.select(*columns)

    def _rewrite(self, changes, plan: dict, current, size: int) -> None:
        """`current` (a table's rows, typed) with `changes` (None: none)
        applied, staged whole for one overwrite (readers see the old version
        or the new): a keyed table's net changes replace, delete or complete
        (partial images) the rows of their keys; a table without a key is a
        multiset, each distinct row's copies added or removed. A copy
        removed that the table does not hold changes nothing, as a rebuild
        from the changes has it, and as a keyed table's DELETE of a key it
        does not hold does; a partial image of a key it does not hold is
        refused."""
        key, layout = qualified(plan["database"], plan["table"]), plan["layout"]
        names = [_column(c["key"]) for c in layout["columns"]]
        rows = current
        if changes is not None:
            mine = changes.where(one_of(_sources(plan)))
            if plan["primary_key"]:
                # Changes from when the table had no key, or another (a key
                # added by this run's DDL), are what they were then: copies
                # added and removed (one of two equal rows deleted before
                # the key was added leaves the other).
                then = _days_keyed_otherwise(plan)
                if then:
                    rows = _with_copies(rows, mine, dict(plan, primary_key=[], stretches=then),
                                        names)
                    plan = dict(plan, stretches=[s for s in plan["stretches"] if s not in then])
                net = _net_rows(rebuild_states(mine, [plan], net=True), plan)
                rows = _merged(rows, net, layout)
            else:
                rows = _with_copies(rows, mine, plan, names)
        order = [_column(k) for k in layout["primary_key"]] or names
        files = max(1, -(-size // ROWS_PER_FILE))  # `size`: at most the rows written
        spread = rows.repartition(1) if files == 1 else rows.repartitionByRange(files, *order)
        _partitioned_writer(spread.sortWithinPartitions(*order), plan).parquet(
            os.path.join(self.staged, key))

    def drop_all_but(self, keep, folder: str | None = None) -> None:
        """Tables dropped, or no longer selected, leave the lake (or the
        history, `folder`) whole."""
        folder = folder or self.tables_dir
        if not os.path.isdir(folder):
            return
        for name in os.listdir(folder):
            if name not in keep:
                gone = os.path.join(os.path.dirname(self.staged), f"dropped-{uuid.uuid4().hex}")
                os.replace(os.path.join(folder, name), gone)
                shutil.rmtree(gone)

    def history(self, key: str, plan: dict, changes, signature: str, whole: bool) -> None:
        """A keyed table's history rows from `changes` (binlake.spark.rules.tables.
        history_versions) staged: `whole`, every version, for one overwrite;
        else the new versions and the versions they end, for one MERGE."""
        rows = history_versions(changes.where(one_of(_sources(plan))), plan)
        if whole:
            rows = rows.where(~F.col(CLOSES)).drop(CLOSES)
        folder = os.path.join(self.staged, HISTORY, key)
        files = max(1, -(-self.changes.rows(_sources(plan)) // ROWS_PER_FILE)) if whole else 1
        rows.repartition(files).write.parquet(folder)
        self.commits.append((self._commit_history, (key, plan, folder, signature, whole)))
        self.work["history"].append(key)

    def _commit_history(self, key: str, plan: dict, folder: str, signature: str,
                        whole: bool) -> None:
        import pyarrow.dataset as ds
        uri = os.path.join(self.history_dir, key)
        names = _parquet_names(folder)
        if not whole:
            if names:
                rows = ds.dataset([os.path.join(folder, n) for n in names], format="parquet")
                merge_history(uri, _history_name(key), rows.scanner().to_reader(),
                              plan["layout"]["primary_key"], run=self.run,
                              through=self.through, plan=signature)
            return
        os.makedirs(uri, exist_ok=True)
        for name in names:
            os.replace(os.path.join(folder, name), os.path.join(uri, name))
        schema = _parquet_schema(uri, names) or _history_schema(plan["layout"])
        commit_table(uri, _history_name(key), names, schema, run=self.run,
                     through=self.through, mode="overwrite", plan=signature)

    # -- steps ------------------------------------------------------------------------
    def _jobs(self, sizes: dict, kinds: dict) -> list[list[str]]:
        """Tables in jobs: a large one alone, small ones of one kind
        (`kinds[key]`: how its rows are computed) together."""
        jobs, groups = [], {}  # kind -> (keys, rows) of the job being filled
        for key in sorted(sizes, key=lambda k: (sizes[k], k)):
            if sizes[key] > SMALL_TABLE_ROWS:
                jobs.append([key])
                continue
            group, rows = groups.get(kinds[key], ([], 0))
            if group and (rows + sizes[key] > COLLECTED_ROWS or len(group) == COLLECTED_TABLES):
                jobs.append(group)
                group, rows = [], 0
            groups[kinds[key]] = (group + [key], rows + sizes[key])
        return jobs + [group for group, _ in groups.values()]

    def _each(self, function, jobs: list, rows: int) -> None:
        """`function(job)` for each of `jobs`, side by side; interpreted
        where the step's jobs are over `rows` <= INTERPRETED_ROWS."""
        if not jobs:
            return
        with _interpreted(self.spark, rows <= INTERPRETED_ROWS):
            concurrently(function, [(job,) for job in jobs])

    def _write(self, states, plans: list, sizes: dict, net: bool = False) -> None:
        """Stage the typed rows of `plans` from their `states` (net changes
        with `net`): a large table by Spark's executors, small ones
        collected in one job and written here."""
        keys = list(_by_table(plans))
        if len(plans) == 1 and sizes[keys[0]] > SMALL_TABLE_ROWS:
            plan = plans[0]
            if net:  # a MERGE's source
                _net_rows(states, plan).write.parquet(os.path.join(self.staged, keys[0]))
            else:
                _partitioned_writer(typed_state(states, plan["layout"], sizes[keys[0]]),
                                    plan).parquet(os.path.join(self.staged, keys[0]))
            return
        # Each table's columns side by side, set on its own rows only.
        names = [[c["key"] for c in plan["layout"]["columns"]] + (list(NET_COLUMNS) if net else [])
                 for plan in plans]
        packed = [F.when(one_of({(plan["database"], plan["table"])}), column).alias(f"t{i}_{j}")
                  for i, plan in enumerate(plans)
                  for j, column in enumerate(_typed_columns(plan, net))]
        collected = states.select("database", "table", *packed).toArrow()
        for i, (key, plan) in enumerate(zip(keys, plans)):
            mine = pc.and_(pc.equal(collected["database"], plan["database"]),
                           pc.equal(collected["table"], plan["table"]))
            rows = (collected.select([f"t{i}_{j}" for j in range(len(names[i]))]).filter(mine)
                    .rename_columns(names[i]))
            if rows.num_rows == 0:
                continue
            if plan["layout"]["primary_key"] and not net:
                rows = _sorted_by(rows, plan["layout"]["primary_key"])
            _write_rows(os.path.join(self.staged, key), rows,
                        () if net else _partition_by(plan))

    def _staged_files(self, key: str, target: str) -> list[str]:
        """Move what Spark wrote for `key` into the table's folder (Spark's
        names are unique: a UUID each); the names, relative to it."""
        folder = os.path.join(self.staged, key)
        names = _parquet_names(folder)
        for name in names:
            os.makedirs(os.path.dirname(os.path.join(target, name)), exist_ok=True)
            os.replace(os.path.join(folder, name), os.path.join(target, name))
        return names

    def _commit(self, key: str, plan: dict, mode: str, rewritten: str | None = None) -> None:
        target = os.path.join(self.tables_dir, key)
        names = self._staged_files(key, target)
        layout, partition_by = plan["layout"], _partition_by(plan)
        written = _parquet_schema(target, names)
        schema = _arrow_schema(layout) if written is None else pa.schema(
            [written.field(f.name) if f.name in written.names else f
             for f in _arrow_schema(layout)])  # a partition column is in no file
        commit_table(target, key, names, schema, run=self.run, through=self.through, mode=mode,
                     partition_by=partition_by, rewritten=rewritten)

    def _net_changes(self, key: str):
        """The staged net changes of `key` (a pyarrow Dataset)."""
        import pyarrow.dataset as ds
        folder = os.path.join(self.staged, key)
        return ds.dataset([os.path.join(folder, name) for name in _parquet_names(folder)],
                          format="parquet")

    def _refuse_rows_not_held(self, key: str, net, primary_key: list) -> None:
        """Partial row images complete the rows their keys hold: a key the
        table does not hold is refused, before any table is committed."""
        import pyarrow.dataset as ds
        partial = net.to_table(filter=ds.field(PRESENT).is_valid(),
                               columns=[*primary_key, PRESENT, AT])
        missing = rows_not_held(os.path.join(self.tables_dir, key), partial, primary_key)
        if missing:
            raise ValueError(f"{missing[0]}: {key}: {named(NOT_HELD, key)}")

    def _merge_copies(self, key: str, rows) -> None:
        """MERGE a keyless table's copies removed and added (a pyarrow
        Dataset of staged files, or a Table the driver computed)."""
        reader = rows.to_reader() if isinstance(rows, pa.Table) else rows.scanner().to_reader()
        merge_copies(os.path.join(self.tables_dir, key), key, reader, run=self.run,
                     through=self.through)

    def _copies(self, changes, plan: dict, current) -> None:
        """What the changes do to a keyless table's copies (`current`: its
        rows), staged as `merge_copies` takes them: for each distinct row
        that loses copies, the row marked COPIES_REMOVED and the copies it
        keeps; for one that gains, the copies added."""
        key, layout = qualified(plan["database"], plan["table"]), plan["layout"]
        names = [_column(c["key"]) for c in layout["columns"]]
        mine = changes.where(one_of(_sources(plan)))
        deltas = _typed_deltas(mine, plan).alias("d")
        held = current.groupBy(*names).agg(F.count(F.lit(1)).alias(_HELD)).alias("h")
        keys = [c["key"] for c in layout["columns"]]
        same = functools.reduce(operator.and_, [_column(k, "d").eqNullSafe(_column(k, "h"))
                                                for k in keys])
        n, copies = F.col(_COPIES), F.coalesce(F.col(_HELD), F.lit(0))
        counted = deltas.join(held, same, "left").select(
            *[_column(k, "d").alias(k) for k in keys], n, copies.alias(_HELD))
        row = F.struct(*names)

        def marked(op: str, count) -> Column:
            return F.array_repeat(F.struct(row.alias("r"), F.lit(op).alias("op")),
                                  count.cast("int"))
        held_now = F.col(_HELD)
        removed = marked(COPIES_REMOVED, F.when((n < 0) & (held_now > 0), 1).otherwise(0))
        added = marked(COPY_ADDED, F.when(n > 0, n).when(held_now > 0,
                                                         F.greatest(held_now + n, F.lit(0)))
                       .otherwise(0))
        ops = counted.select(F.explode(F.concat(removed, added)).alias("o"))
        ops.select("o.r.*", F.col("o.op").alias(COPY_OP)).write.parquet(
            os.path.join(self.staged, key))

    def _merge(self, key: str, net, layout: dict) -> None:
        """MERGE `net` (a pyarrow Dataset of staged files, or a Table the
        driver computed) into the table."""
        keys = layout["primary_key"]
        whole = isinstance(net, pa.Table)
        bounds = key_bounds(net.select(keys) if whole else net.to_table(columns=keys))
        rows = net.to_reader() if whole else net.scanner().to_reader()
        merge_net_changes(os.path.join(self.tables_dir, key), key, rows, keys, run=self.run,
                          through=self.through, bounds=bounds)


def spark_table(spark, out: str, table: str, as_of=None):
    """One lake table as a DataFrame, at its current version or `as_of` (a
    version number, or a datetime: the version current then). delta-rs names
    the version's files; Spark reads them as Parquet (binlake's tables have
    no deletion vectors, so the files are the rows)."""
    return delta_frame(spark, os.path.join(out, TABLES, table), as_of)


def delta_frame(spark, uri: str, as_of=None):
    """The Delta table at `uri` as a DataFrame (see `spark_table`)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from pyspark.sql.pandas.types import from_arrow_schema
    delta = DeltaTable(uri)
    if as_of is not None:
        delta.load_as_version(as_of)
    schema = from_arrow_schema(pa.schema(delta.schema().to_arrow()))
    files = delta.file_uris()
    if not files:
        return spark.createDataFrame([], schema)
    reader = spark.read.schema(schema)
    if delta.metadata().partition_columns:
        # A partition column's value is in the file's folder name (Hive's
        # layout, as delta-rs and Spark write it), typed as the schema says.
        reader = reader.option("basePath", uri)
    return reader.parquet(*map(hadoop_literal, files)).select(*map(_column, schema.names))


def hadoop_literal(path: str) -> str:
    """A path Spark's readers take as it is: they expand glob patterns, so
    an output directory named like `lake{a,b}` would otherwise match others."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


@contextmanager
def _interpreted(spark, interpreted: bool):
    """The session's jobs interpreted (INTERPRETED) within, if `interpreted`;
    its settings as they were after."""
    if not interpreted:
        yield
        return
    conf = spark.conf
    was = {name: conf.get(name) for name in INTERPRETED}
    for name, value in INTERPRETED.items():
        conf.set(name, value)
    try:
        yield
    finally:
        for name, value in was.items():
            conf.set(name, value)


def _merged(current, net, layout: dict):
    """A keyed table's rows (`current`) with its net changes (`net`, as
    `_net_rows` types them) applied: a key's net change replaces its row,
    deletes it, or sets the columns a partial one holds (PRESENT) in it; a
    partial one whose key the table does not hold is refused. One full
    outer join on the key."""
    names = [c["key"] for c in layout["columns"]]
    held = current.select(*[_column(n).alias(f"c{i}") for i, n in enumerate(names)],
                          F.lit(True).alias("c_held"))
    new = net.select(*[_column(n).alias(f"n{i}") for i, n in enumerate(names)],
                     _column(DELETED).alias("n_deleted"), _column(PRESENT).alias("n_present"),
                     _column(AT).alias("n_at"))
    # NULL-safe: changes from before a key was added may carry NULLs in it
    keys = [names.index(k) for k in layout["primary_key"]]
    joined = held.join(new, functools.reduce(operator.and_, [
        held[f"c{i}"].eqNullSafe(new[f"n{i}"]) for i in keys]), "full_outer")
    changed, present = F.col("n_deleted").isNotNull(), F.col("n_present")
    unheld = changed & present.isNotNull() & F.col("c_held").isNull()
    key = qualified(layout["database"], layout["table"])
    kept = refuse(unheld, ~F.coalesce(F.col("n_deleted"), F.lit(False)),
                  F.concat(F.col("n_at"), F.lit(f": {key}: {named(NOT_HELD, key)}")), "boolean")
    values = [F.when(~changed | (present.isNotNull() & (F.substring(present, i + 1, 1) == "0")),
                     F.col(f"c{i}")).otherwise(F.col(f"n{i}")).alias(name)
              for i, name in enumerate(names)]
    return joined.where(kept).select(*values)


def _column(name: str, frame: str | None = None):
    """A column by its name, whatever characters it holds (of the frame
    aliased `frame`)."""
    quoted = "`" + name.replace("`", "``") + "`"
    return F.col(f"{frame}.{quoted}" if frame else quoted)


def _with_table_types(schema: pa.Schema, uri: str) -> pa.Schema:
    """`schema` with the types the Delta table at `uri` has for its columns."""
    from deltalake import DeltaTable
    held = pa.schema(DeltaTable(uri).schema().to_arrow())
    return pa.schema([held.field(f.name).with_nullable(f.nullable)
                      if f.name in held.names else f for f in schema])


def _days_keyed_otherwise(plan: dict) -> list:
    """The stretches of a keyed table from before its key was added (found
    by no key or another, `key_then`), where they are its oldest: their
    changes are copies added and removed, before the rest by key. Where a
    key was dropped and added again in between, none (all by key)."""
    if not plan["primary_key"]:
        return []
    stretches = plan["stretches"]  # latest first
    then = [i for i, s in enumerate(stretches) if "key_then" in s]
    if not then or then != list(range(len(stretches) - len(then), len(stretches))) \
            or len(then) == len(stretches):
        return []
    return [stretches[i] for i in then]


#: Columns of a keyless table's counts, named apart from any of its own.
_COPIES, _HELD = "_binlake_copies", "_binlake_held"


def _typed_deltas(changes, plan: dict):
    """The copies the changes add (negative: remove) per distinct row of a
    keyless table, typed: the table's columns and _COPIES."""
    deltas = multiset_deltas(changes, [plan]).withColumnRenamed("n", _COPIES)
    return typed_rows(deltas, plan["layout"], extra=(_COPIES,))


def _with_copies(rows, changes, plan: dict, names: list):
    """`rows` (a multiset) with the copies `changes` add and remove, by the
    plan's stretches read as a table without a key: a copy removed that
    the rows do not hold changes nothing."""
    n = F.col(_COPIES)
    counted = (rows.select(*names, F.lit(1).cast("long").alias(_COPIES))
               .unionByName(_typed_deltas(changes, plan))
               .groupBy(*names).agg(F.sum(n).alias(_COPIES)).where(n > 0))
    return counted.select(F.explode(F.array_repeat(F.struct(*names), n.cast("int")))
                          .alias("r")).select("r.*")


def _carried_columns(layout: dict, stretch: dict):
    """Per column of the layout: the column, and of the stretch the table's
    rows are carried from, the column it was (None: added since), its
    DEFAULT, its fractional digits where they changed, the type it was
    declared with where that changed."""
    return zip(layout["columns"], stretch["sources"], stretch["defaults"], stretch["fractions"],
               stretch.get("was") or [None] * len(stretch["sources"]))


def _sorted_by(rows, key: list[str]):
    """`rows` in key order, as a large table's files are (a key Arrow
    cannot sort, such as a SET's list, leaves them as they came)."""
    try:
        return rows.sort_by([(name, "ascending") for name in key])
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return rows


def _sources(plan: dict) -> set:
    """The (database, table) names a plan's rows come from in changes/."""
    return {(s["database"], s["table"]) for s in plan["stretches"]}


@dataclass(frozen=True)
class TableChanges:
    rows: int
    inserts_only: bool


class ChangeFiles:
    """What the driver learns of changes/ from its files alone, without a
    Spark job: rows per table (Parquet footers) and whether files hold
    inserts only (their `op` column). It decides how each table is brought
    in step; Spark computes the rows."""

    def __init__(self, root: str):
        self.root = root

    def rows(self, tables: set) -> int:
        """Change rows of these (database, table) pairs (at least their rows)."""
        return sum(parquet_rows(self._folder(db, table)) for db, table in tables)

    def of(self, files: list[str], tables: set) -> list[str]:
        """The `files` of changes/ that hold these (database, table) pairs."""
        return [path for path in files if driver.partition_of(path, self.root) in tables]

    def all_of(self, tables: set) -> list[str]:
        """Every file of changes/ holding these (database, table) pairs."""
        folders = [self._folder(db, table) for db, table in tables]
        return [os.path.join(folder, name) for folder in folders
                for name in _parquet_names(folder)]

    def inserts_only(self, tables: set) -> bool:
        """Every change of these (database, table) pairs inserts."""
        return all(found.inserts_only for found in self.stats(self.all_of(tables)).values())

    def moves_partially(self, files: list[str], plan: dict) -> bool:
        """Some change in `files` moves a row of the plan's table to a new
        key by a partial after image: only the row its old key held completes
        it, which the driver's fold in commit order finds
        (binlake.spark.rules.driver_tables.net_by_key), and Spark's aggregate by
        key does not. (Conservative: an after image shorter than the widest
        stretch of the table counts as partial.)"""
        primary = plan["primary_key"]
        if not primary:
            return False
        width = max(stretch_width(s) for s in plan["stretches"])
        names = {s["sources"][i] for s in plan["stretches"] for i in primary
                 if s["sources"][i] is not None}
        for path in files:
            read = pq.read_table(path, columns=["op", "before", "after"])
            read = read.filter(pc.equal(read.column("op"), "u"))
            if not read.num_rows:
                continue
            before, after = (read.column(side).combine_chunks() for side in ("before", "after"))
            offsets = after.offsets  # a map's lengths (list_value_length takes no map)
            short = pc.less(pc.subtract(offsets[1:], offsets[:-1]), width)
            for name in names:
                new = pc.map_lookup(after, name, "first")
                moved = pc.and_(pc.not_equal(new, pc.map_lookup(before, name, "first")), short)
                if pc.any(moved).as_py():
                    return True
        return False

    def stats(self, files: list[str]) -> dict:
        """{(database, table): TableChanges} of these files of changes/."""
        found = {}
        for path in files:
            key = driver.partition_of(path, self.root)
            ops = pq.ParquetFile(path).read(columns=["op"]).column("op")
            # A snapshot's row ("r") may share its key with an insert before
            # it (a chunk of the lock-free snapshot is read after changes to
            # its keys): taken by key, never appended.
            inserts = set(pc.unique(ops).to_pylist()) <= {"c"}
            known = found.get(key, TableChanges(0, True))
            found[key] = TableChanges(known.rows + len(ops), known.inserts_only and inserts)
        return found

    def _folder(self, database: str, table: str) -> str:
        return os.path.join(self.root, f"database={escape_partition_value(database)}",
                            f"table={escape_partition_value(table)}")


def _by_table(plans: list) -> dict:
    """{"db.table": plan}."""
    return {qualified(p["database"], p["table"]): p for p in plans}


def _parquet_names(folder: str) -> list[str]:
    """The data files Spark wrote in `folder` (none if it wrote nothing),
    relative to it (a partitioned table's in their partition folders)."""
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, _, names in os.walk(folder) for name in names
                  if name.endswith(".parquet"))


def _partition_by(plan: dict) -> tuple:
    """The columns the table is partitioned by (--partition-by)."""
    return tuple(plan.get("partition_by") or ())


def _partitioned_writer(frame, plan: dict):
    """A Spark writer of a whole table's rows, in its partition folders."""
    partition_by = _partition_by(plan)
    return frame.write.partitionBy(*partition_by) if partition_by else frame.write


def _inside(commit_key: dict, stretch: dict) -> bool:
    """A change at `commit_key` is of the stretch (its span of the binlog)."""
    at, (hi_seq, hi_pos) = (commit_key["file_seq"], commit_key["pos"]), stretch["before"]
    return at > tuple(stretch["after"]) and (hi_seq is None or at < (hi_seq, hi_pos))


def _chunk_columns(after: pa.MapArray, names: list[str]) -> list:
    """The columns `names` of a snapshot chunk's after images. A chunk's
    file holds every row's columns in one order (binlake.spark.snapshot.server_rows
    writes it so): each column is every width-th value, taken at once; a
    file that is not so has its columns looked up row by row by Arrow."""
    import numpy as np
    width, rows = len(names), len(after)
    keys = after.keys
    if (len(keys) == rows * width and after.offsets.equals(
            pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32)))
            and pc.all(pc.equal(keys, pa.array(names).take(
                pa.array(np.arange(rows * width) % width)))).as_py()):
        return [after.items.take(pa.array(np.arange(i, rows * width, width)))
                for i in range(width)]
    return [pc.map_lookup(after, name, "first") for name in names]


def _write_rows(folder: str, rows, partition_by: tuple) -> None:
    """Rows the driver computed written to `folder` as Spark would: a file
    per partition value, in its folder, without the column."""
    if not partition_by:
        os.makedirs(folder, exist_ok=True)
        pq.write_table(rows, os.path.join(folder, f"part-{uuid.uuid4().hex}.parquet"))
        return
    column, = partition_by
    values = rows.column(column)
    for value in pc.unique(values).to_pylist():
        mine = pc.is_null(values) if value is None else pc.equal(values, value)
        _write_rows(os.path.join(folder, partition_folder(column, value)),
                    rows.filter(mine).drop_columns([column]), ())


def _arrow_stretch(plan: dict) -> dict | None:
    """The one stretch of a table whose after images Arrow types as they
    are (no DDL since its CREATE that the plan follows); else None."""
    if len(plan["stretches"]) != 1:
        return None
    stretch, = plan["stretches"]
    if (stretch["before"][0] is not None or stretch.get("was") or "key_then" in stretch
            or None in stretch["sources"]
            or any(digits is not None for digits in stretch["fractions"])):
        return None
    return stretch


def _typed_rows(texts: list, plan: dict) -> pa.Table:
    """A table's columns of exact text typed as its layout says, in key
    order (every column's, keyless), as Spark writes a whole table."""
    layout, key = plan["layout"], qualified(plan["database"], plan["table"])
    names = [c["key"] for c in layout["columns"]]
    return _sorted_by(pa.Table.from_arrays(
        [driver.typed_column(column, c, key) for column, c in zip(texts, layout["columns"])],
        names=names), layout["primary_key"] or names)


class _RowFiles:
    """Rows the driver computed for a table, written as Spark would: row
    groups in files of about ROWS_PER_FILE rows each (so that the table
    needs no compaction after), one file set per partition value."""

    def __init__(self, folder: str, partition_by: tuple):
        self.folder, self.partition_by = folder, partition_by
        self._writer, self._rows = None, 0

    def __enter__(self) -> "_RowFiles":
        return self

    def write(self, rows) -> None:
        if self.partition_by:  # (rare: a file per partition value and write)
            _write_rows(self.folder, rows, self.partition_by)
            return
        if self._writer is not None and self._writer.schema != rows.schema:
            self.close()
        if self._writer is None:
            os.makedirs(self.folder, exist_ok=True)
            self._writer = pq.ParquetWriter(
                os.path.join(self.folder, f"part-{uuid.uuid4().hex}.parquet"), rows.schema)
        self._writer.write_table(rows)
        self._rows += rows.num_rows
        if self._rows >= ROWS_PER_FILE:
            self.close()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._writer, self._rows = None, 0

    def __exit__(self, *exc_info) -> None:
        self.close()


#: Threads that read and type the chunk files of a snapshotted table.
CHUNK_WORKERS = 2


def concurrently(function, arguments: list, workers: int = 4) -> list:
    """Spark jobs submitted from several threads run side by side; small jobs
    are mostly scheduling latency, which this overlaps."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda args: function(*args), arguments))


def _typed_columns(plan: dict, net: bool) -> list:
    """A state row's typed columns (`row`: exact texts in column order);
    with `net`, a net change's: a deleted key's row holds its key columns
    alone (what the MERGE matches on), and `DELETED` says so."""
    layout = plan["layout"]
    if not net:
        return typed_columns(layout, F.col("row"), by_position=True)
    primary = plan["primary_key"]
    key_only = F.array(*[F.col("key")[primary.index(i)] if i in primary
                         else F.lit(None).cast("string") for i in range(len(layout["columns"]))])
    return [*typed_columns(layout, F.coalesce("row", key_only), by_position=True),
            F.col("row").isNull().alias(DELETED), F.col("present").alias(PRESENT),
            F.col("at").alias(AT)]


def _net_rows(net, plan: dict):
    """One table's net changes, typed, with `DELETED`."""
    mine = net.where(one_of({(plan["database"], plan["table"])}))
    return mine.select(*_typed_columns(plan, net=True))


def _parquet_schema(folder: str, names: list[str]):
    """The Arrow schema of the files Spark wrote (their exact types), if any."""
    import pyarrow.parquet as pq
    return pq.read_schema(os.path.join(folder, names[0])).remove_metadata() if names else None


def _history_schema(layout: dict):
    """A history table's Arrow schema: the table's columns, then where and
    when each version started and ended."""
    stamps = [pa.string(), pa.int64(), pa.timestamp("us", tz="UTC")]
    return pa.schema(list(_arrow_schema(layout)) + [
        pa.field(name, kind) for names in (VALID_FROM, VALID_TO)
        for name, kind in zip(names, stamps)])


def _arrow_schema(layout: dict):
    return pa.schema([pa.field(c["key"], arrow_type(c)) for c in layout["columns"]])
