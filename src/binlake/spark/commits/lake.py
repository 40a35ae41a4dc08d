"""tables/: each table's rows as a Delta table, kept in step with changes/.

Strategy: a run that appended new changes hands every table only those
(the change files it wrote, listed in the manifest under `pending`):
- a table whose new changes are all inserts gets them appended: its job
  (binlake.spark.commits.table_jobs) types the rows, the driver adds their
  files in one Delta commit (an
  insert never meets a row already there: the server would have refused a
  duplicate key, and a table without a key is a multiset);
- a table with a primary key and updates or deletes gets its net change
  per key (the key's last image, or its deletion; a partial row image
  completed from the row the key held), written the same way and applied
  by one MERGE
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
  snapshot read: by the driver from its chunk files,
  binlake.spark.commits.driver_way).
  The cost of all but the last follows a table's current size and its new
  changes, never its history.
A partial row image that cannot be completed fails the run in one line
before any table is committed: every table is staged first.
`--as-of` builds every table as of that point in a folder of its own
(`tables_dir`), and leaves the lake's tables as they are.

Ways: the driver decides each table's way from the change files alone
(binlake.spark.commits.change_files), without a Spark job: the driver's
(binlake.spark.commits.driver_way) where its changes are few, Spark's
(binlake.spark.commits.spark_way) where they are many. Both stage the
table's next version; binlake.spark.commits.table_commits commits them all,
once every table is staged.

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
import os
import shutil
from collections.abc import Mapping
from typing import NamedTuple

from binlake.spark.commits.change_files import CarriedFrom, ChangeFiles, by_table, sources_of
from binlake.spark.commits.delta import committed_run, plan_of, row_count, through_of
from binlake.spark.commits.delta_tables import exists
from binlake.spark.commits.driver_way import DriverTables
from binlake.spark.commits.replaces import partial_replace
from binlake.spark.commits.spark_way import SparkTables
from binlake.spark.commits.table_commits import HISTORY, TABLES, TableCommits, history_name
from binlake.spark.plans.conversions import refusal_of_plan
from binlake.spark.plans.history import PositionOrder, rows_lost_refusal
from binlake.spark.plans.layouts import qualified
from binlake.spark.plans.refusals import refusal_line
from binlake.spark.plans.typed import spark_type
from binlake.spark.rules.refused import refused
from binlake.spark.rules.table_rows import partition_of
from binlake.spark.state.manifest import Manifest, TablesState
from binlake.spark.state.starts import AsOf


class _Ways(NamedTuple):
    """The two ways of a run's tables, and where both stage them."""
    spark: SparkTables
    driver: DriverTables
    commits: TableCommits


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
                  staged: str, tables_mixed, committing, log,
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
    by_key = by_table(plans)
    signatures = _signatures.of(by_key)
    in_step = as_of is None and tables_in_step(state, tables_dir)
    shutil.rmtree(staged, ignore_errors=True)
    commits = TableCommits(tables_dir, staged, os.path.join(out, HISTORY), run, through, log,
                           manifest.keep_versions)
    changes = ChangeFiles(os.path.join(out, "changes"))
    lake = _Ways(SparkTables(spark, commits, changes), DriverTables(commits, changes), commits)
    pending = _new_files(manifest, out, 0)
    # The tables some pending change file is of: the others, their plan
    # the same, have nothing to take in (a run costs what it changes,
    # not how many tables the lake holds).
    touched = {partition_of(path, changes.root) for path in pending}
    try:
        # (A table committed with its plan and no new change was not refused then.)
        _refuse_before_staging({key: plan for key, plan in by_key.items()
                                if not (in_step and state.plans.get(key) == signatures[key]
                                        and not sources_of(plan) & touched)},
                               changes, pending, os.path.join(out, "events"))
        _stage(lake, manifest, by_key, signatures, in_step, as_of, out, tables_dir,
               tables_mixed, touched, fresh)
        if history and as_of is None:
            _stage_histories(lake, manifest, by_key, signatures, out)
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
    commits.commit()
    commits.maintain()

    def left(folder: str) -> set:  # tables the selection leaves as they are
        return {name for name in (os.listdir(folder) if os.path.isdir(folder) else ())
                if selected is not None and not selected(*name.split(".", 1))}
    commits.drop_all_but(set(by_key) | left(tables_dir))
    if history and as_of is None:
        commits.drop_all_but({key for key, plan in by_key.items() if plan["primary_key"]}
                             | left(commits.history_dir), commits.history_dir)
    shutil.rmtree(staged, ignore_errors=True)
    counts = RowCounts(tables_dir, sorted(by_key))
    kept = left(tables_dir)
    plans = {**{key: signature for key, signature in (state.plans if state else {}).items()
                if key in kept}, **signatures}
    return counts, TablesState(through, plans, as_of.describe() if as_of else None), commits.work


class _Signatures:
    """Each plan's `plan_signature`, made once per plan object: a run reuses
    the plans of the tables it did not change (binlake.spark.run.lake_tables),
    so a follower's micro-batch signs only the others."""

    def __init__(self):
        self._last: dict[int, tuple] = {}  #: id(plan) -> (plan, its signature)

    def of(self, by_key: dict) -> dict:
        found = {}
        for plan in by_key.values():
            known = self._last.get(id(plan))
            found[id(plan)] = known if known is not None and known[0] is plan else (
                plan, plan_signature(plan))
        self._last = found
        return {key: found[id(plan)][1] for key, plan in by_key.items()}


_signatures = _Signatures()


class RowCounts(Mapping):
    """{"db.table": rows} of the tables a run brought in step, each read from
    its log when first asked (a follower asks none; a run's summary all)."""

    def __init__(self, tables_dir: str, keys: list):
        self._tables_dir, self._keys, self._found = tables_dir, list(keys), {}

    def __getitem__(self, key: str) -> int:
        if key not in self._found:
            if key not in self._keys:
                raise KeyError(key)
            self._found[key] = row_count(os.path.join(self._tables_dir, key))
        return self._found[key]

    def __iter__(self):
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def _refuse_before_staging(by_key: dict, changes: ChangeFiles, new: list, events: str) -> None:
    """What no engine could apply exactly, refused (ValueError) before
    anything is staged, each engine would otherwise guess: a type change
    binlake does not convert as the server did, rows an ALTER deleted
    unsaid, a REPLACE whose reset columns the binlog does not hold (in the
    `new` change files: binlake.spark.commits.replaces)."""
    for plan in by_key.values():
        reason = (refusal_of_plan(plan) or rows_lost_refusal(plan)
                  or partial_replace(changes.of(new, sources_of(plan)), plan, changes.root,
                                       events))
        if reason:
            raise ValueError(reason)


def tables_in_step(state: TablesState | None, tables_dir: str) -> bool:
    """tables/ holds tables a run brings in step by their new changes; else
    (none yet, a rebuild killed half-way, tables of an --as-of point) every
    table is rebuilt, in Spark."""
    return (state is not None and not state.mixed and state.as_of is None
            and os.path.isdir(tables_dir))


def _stage(lake: "_Ways", manifest: Manifest, by_key: dict, signatures: dict,
           in_step: bool, as_of, out: str, tables_dir: str, tables_mixed,
           touched: set, fresh: set = frozenset()) -> None:
    """Every table's next version written to the staging folder, none
    committed: a change refused on the way leaves every table as it was."""
    if not in_step:
        # A kill in the middle leaves tables of two points: rebuild all next time.
        tables_mixed()
        plans = list(by_key.values())
        lake.spark.rebuild(lake.driver.rebuild_in_driver(plans, as_of), as_of)
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
            if not sources_of(plan) & touched \
                    and exists(os.path.join(tables_dir, key)):
                continue
            done = committed_run(os.path.join(tables_dir, key), key)
            if done is None:
                rebuild.append(plan)
                continue
            runs = manifest.runs_after(done)
            if runs:
                groups.setdefault(runs, []).append(plan)

        @functools.lru_cache(maxsize=None)   # (most tables ask of one run)
        def new_files(done: int) -> list:
            return _new_files(manifest, out, done)
        for runs, group in groups.items():
            files = new_files(runs[0] - 1)
            group = lake.driver.apply_in_driver(files, group) if files else []
            if group:
                lake.spark.apply(files, group)
        carried = lake.driver.carry_in_driver({key: (plan, source, new_files(source.done))
                                        for key, (plan, source) in carried.items()})
        rebuild += lake.spark.carry(carried)
        lake.spark.rebuild(lake.driver.rebuild_in_driver(rebuild), None)


def _new_files(manifest: Manifest, out: str, done: int) -> list:
    """The change files of the runs after run `done` that are still pending."""
    return [os.path.join(out, "changes", name) for name in manifest.pending_after(done)]


def _stage_histories(lake: "_Ways", manifest: Manifest, by_key: dict, signatures: dict,
                     out: str) -> None:
    """Each keyed table's history (`--history`) staged: its new versions
    and the versions they end, merged; or, where the table's plan changed
    since its history was built (DDL changed its columns, key or name), or
    it has none yet, built from all of the table's changes."""
    keyless = sorted(key for key, plan in by_key.items() if not plan["primary_key"])
    if keyless:
        lake.commits.log(f"history: none for {len(keyless)} table(s) without a primary key "
                 f"({', '.join(keyless)}): their rows have no identity to follow")
    for key, plan in by_key.items():
        if not plan["primary_key"]:
            continue
        uri = os.path.join(lake.commits.history_dir, key)
        whole = plan_of(uri) != signatures[key]
        files = (lake.spark.changes.all_of(sources_of(plan)) if whole else lake.spark.changes.of(
            _new_files(manifest, out, committed_run(uri, history_name(key)) or 0),
            sources_of(plan)))
        if files and not lake.driver.history(plan, files, signatures[key], whole):
            lake.spark.history(plan, files, signatures[key], whole)


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
    if not exists(uri):
        return None
    through = through_of(uri)
    if not through:
        return None
    return max(order((name, end)) for name, end in through.items())
