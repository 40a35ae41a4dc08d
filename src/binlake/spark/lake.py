"""tables/: each table's rows as a Delta table, kept in step with changes/.

Strategy: a run that appended new changes hands every table only those
(the change files it wrote, listed in the manifest under `pending`):
- a table whose new changes are all inserts gets them appended: Spark's
  executors write the typed rows as Parquet, the driver adds the files in
  one Delta commit (an insert never meets a row already there: the server
  would have refused a duplicate key, and a table without a key is a
  multiset);
- a table with a primary key and updates or deletes gets its net change
  per key (the key's last image, or its deletion), written the same way
  and applied by one MERGE (binlake.spark.delta);
- a table without a primary key that had updates or deletes, a table
  whose definition changed (any DDL touching it: its plan differs from
  the one recorded at its last commit), and a table new to the lake are
  rebuilt from all of its changes and committed as its next version whole.
`--as-of` rebuilds every table as of that point; the next run without it
rebuilds them as of the end.

Exactly once: every commit records the run whose changes it holds (the
application transaction binlake.spark.delta sets), so a run killed after
some tables committed is completed by the next one, each table taking the
pending runs it does not hold yet. The manifest says the tables are whole
only after every table committed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import functions as F

from .delta import DELETED, commit_table, committed_run, merge_net_changes, row_count
from .layouts import qualified
from .tables import INSERTS, AsOf, rebuild_states, typed_rows, typed_state

TABLES = "tables"


def plan_signature(plan: dict) -> str:
    """What a table's rows are made from (definition, key, stretches): equal
    signatures let new changes be applied on top of the committed rows."""
    text = json.dumps(plan, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def update_tables(spark, out: str, plans: list, manifest: dict, *, as_of: AsOf | None,
                  staged: str, read_changes, save_state, log) -> tuple[dict, dict, dict]:
    """Bring tables/ in step with the manifest; returns ({"db.table": rows},
    the manifest's new `tables` entry, {"appended"|"merged"|"rebuilt": [tables]}).
    `save_state(entry)` records a state in the manifest before work that
    leaves the tables mixed if killed."""
    tables_dir = os.path.join(out, TABLES)
    state = manifest.get("tables") or {}
    run = manifest.get("run", 0)
    through = {name: entry["end"] for name, entry in sorted(manifest["files"].items())}
    by_key = _by_table(plans)
    signatures = {key: plan_signature(plan) for key, plan in by_key.items()}
    in_step = (as_of is None and state.get("as_of") is None and "plans" in state
               and os.path.isdir(tables_dir))
    shutil.rmtree(staged, ignore_errors=True)
    lake = _Lake(spark, tables_dir, staged, run, through, log)
    if not in_step:
        # A kill in the middle leaves tables of two points: rebuild all next time.
        save_state({"rebuilding": True})
        lake.rebuild(read_changes(), list(by_key.values()), as_of)
    else:
        rebuild, groups = [], {}
        for key, plan in by_key.items():
            done = committed_run(os.path.join(tables_dir, key), key)
            if done is None or state["plans"].get(key) != signatures[key]:
                rebuild.append(plan)
                continue
            runs = tuple(sorted(int(r) for r in manifest.get("pending", {}) if int(r) > done))
            if runs:
                groups.setdefault(runs, []).append(plan)
        for runs, group in groups.items():
            files = [os.path.join(out, "changes", name)
                     for r in runs for name in manifest["pending"][str(r)]]
            if files:
                rebuild += lake.apply(read_changes(files), group)
        if rebuild:
            wanted = {(s["database"], s["table"]) for p in rebuild for s in p["stretches"]}
            lake.rebuild(read_changes(only=wanted), rebuild, None)
    lake.drop_all_but(by_key)
    shutil.rmtree(staged, ignore_errors=True)
    counts = {key: row_count(os.path.join(tables_dir, key)) for key in sorted(by_key)}
    return counts, {"as_of": as_of.describe() if as_of else None, "through": through,
                    "plans": signatures}, lake.work


class _Lake:
    """The Spark and Delta work on tables/ of one run."""

    def __init__(self, spark, tables_dir: str, staged: str, run: int, through: dict, log):
        self.spark, self.tables_dir, self.staged = spark, tables_dir, staged
        self.run, self.through, self.log = run, through, log
        self.work = {"appended": [], "merged": [], "rebuilt": []}

    def rebuild(self, changes, plans: list, as_of: AsOf | None) -> None:
        """Each table's state as of the end (or `as_of`) written whole by
        Spark's executors, then committed as the table's next version. Files
        written but never committed are in no version."""
        if not plans:
            return
        layouts = {key: p["layout"] for key, p in _by_table(plans).items()}
        counts = {key: 0 for key in layouts}
        if changes is not None:
            # Kept: each table is written by a job of its own over all of them.
            states = rebuild_states(changes, plans, as_of).persist()
            try:
                counts.update({qualified(db, table): n for db, table, n in
                               states.groupBy("database", "table").count().collect()})
                self._each(lambda key: self._write(key, typed_state(states, layouts[key],
                                                                    counts[key])),
                           list(layouts))
            finally:
                states.unpersist()
        for key in layouts:
            self._commit(key, layouts[key], "overwrite")
        self.work["rebuilt"] += list(layouts)
        self.log(f"tables: {len(layouts)} rebuilt" + (f" as of {as_of.describe()}" if as_of else ""))

    def apply(self, changes, plans: list) -> list:
        """Add new changes to tables whose definition did not change; returns
        the plans that need a rebuild instead (no key, and more than inserts)."""
        found = changes.groupBy("database", "table").agg(
            F.bool_and(F.col("op").isin(*INSERTS)), F.count(F.lit(1))).collect()
        inserts_only = {(db, table): flag for db, table, flag, _ in found}
        sizes = {(db, table): n for db, table, _, n in found}
        appended, merged, rebuild = [], [], []
        for plan in plans:
            sources = [(s["database"], s["table"]) for s in plan["stretches"]]
            if not any(source in inserts_only for source in sources):
                continue  # nothing new
            if all(inserts_only.get(source, True) for source in sources):
                appended.append(plan)
            elif plan["primary_key"]:
                merged.append(plan)
            else:
                rebuild.append(plan)
        if appended or merged:
            self.log(f"tables: appending to {len(appended)}, merging into {len(merged)}")
        if appended:
            rows = rebuild_states(changes, appended)
            layouts = {key: p["layout"] for key, p in _by_table(appended).items()}
            # At most as many rows as changes: enough to size the files by.
            most = {key: sum(sizes.get((s["database"], s["table"]), 0) for s in p["stretches"])
                    for key, p in _by_table(appended).items()}
            self._each(lambda key: self._write(key, typed_state(rows, layouts[key], most[key])),
                       list(layouts))
            for key, layout in layouts.items():
                self._commit(key, layout, "append")
            self.work["appended"] += list(layouts)
        if merged:
            net = rebuild_states(changes, merged, net=True).persist()
            try:
                by_key = _by_table(merged)
                self._each(lambda key: self._write(key, _net_rows(net, by_key[key])),
                           list(by_key))
            finally:
                net.unpersist()
            for key, plan in by_key.items():
                self._merge(key, plan["layout"])
            self.work["merged"] += list(by_key)
        return rebuild

    def drop_all_but(self, keep) -> None:
        """Tables dropped, or no longer selected, leave the lake whole."""
        if not os.path.isdir(self.tables_dir):
            return
        for name in os.listdir(self.tables_dir):
            if name not in keep:
                gone = os.path.join(os.path.dirname(self.staged), f"dropped-{uuid.uuid4().hex}")
                os.replace(os.path.join(self.tables_dir, name), gone)
                shutil.rmtree(gone)

    # -- steps ------------------------------------------------------------------------
    def _each(self, write, keys: list) -> None:
        concurrently(write, [(key,) for key in keys])

    def _write(self, key: str, frame) -> None:
        frame.write.parquet(os.path.join(self.staged, key))

    def _staged_files(self, key: str, target: str) -> list[str]:
        """Move what Spark wrote for `key` into the table's folder (Spark's
        names are unique: a UUID each); the names, relative to it."""
        folder = os.path.join(self.staged, key)
        names = _parquet_names(folder)
        os.makedirs(target, exist_ok=True)
        for name in names:
            os.replace(os.path.join(folder, name), os.path.join(target, name))
        return names

    def _commit(self, key: str, layout: dict, mode: str) -> None:
        target = os.path.join(self.tables_dir, key)
        names = self._staged_files(key, target)
        schema = _parquet_schema(target, names) or _arrow_schema(layout)
        commit_table(target, key, names, schema, run=self.run, through=self.through, mode=mode)

    def _merge(self, key: str, layout: dict) -> None:
        import pyarrow.dataset as ds
        folder = os.path.join(self.staged, key)
        files = [os.path.join(folder, name) for name in _parquet_names(folder)]
        net = ds.dataset(files, format="parquet")
        merge_net_changes(os.path.join(self.tables_dir, key), key, net.scanner().to_reader(),
                          layout["primary_key"], run=self.run, through=self.through)


def spark_table(spark, out: str, table: str, as_of=None):
    """One lake table as a DataFrame, at its current version or `as_of` (a
    version number, or a datetime: the version current then). delta-rs names
    the version's files; Spark reads them as Parquet (binlake's tables have
    no deletion vectors, so the files are the rows)."""
    import pyarrow as pa
    from deltalake import DeltaTable
    from pyspark.sql.pandas.types import from_arrow_schema
    delta = DeltaTable(os.path.join(out, TABLES, table))
    if as_of is not None:
        delta.load_as_version(as_of)
    schema = from_arrow_schema(pa.schema(delta.schema().to_arrow()))
    files = delta.file_uris()
    if not files:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*map(hadoop_literal, files))


def hadoop_literal(path: str) -> str:
    """A path Spark's readers take as it is: they expand glob patterns, so
    an output directory named like `lake{a,b}` would otherwise match others."""
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", path)


def _by_table(plans: list) -> dict:
    """{"db.table": plan}."""
    return {qualified(p["database"], p["table"]): p for p in plans}


def _parquet_names(folder: str) -> list[str]:
    """The data files Spark wrote in `folder` (none if it wrote nothing)."""
    if not os.path.isdir(folder):
        return []
    return sorted(n for n in os.listdir(folder) if n.endswith(".parquet"))


def concurrently(function, arguments: list, workers: int = 4) -> list:
    """Spark jobs submitted from several threads run side by side; small jobs
    are mostly scheduling latency, which this overlaps."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda args: function(*args), arguments))


def _net_rows(net, plan: dict):
    """One table's net changes, typed, with `DELETED`: a deleted key's row
    holds its key columns alone (what the MERGE matches on)."""
    layout, primary = plan["layout"], plan["primary_key"]
    table = net.where((F.col("database") == plan["database"]) & (F.col("table") == plan["table"]))
    key_only = F.array(*[F.col("key")[primary.index(i)] if i in primary
                         else F.lit(None).cast("string") for i in range(len(layout["columns"]))])
    rows = table.select(F.coalesce("row", key_only).alias("row"),
                        F.col("row").isNull().alias(DELETED))
    return typed_rows(rows, layout, extra=(DELETED,))


def _parquet_schema(folder: str, names: list[str]):
    """The Arrow schema of the files Spark wrote (their exact types), if any."""
    import pyarrow.parquet as pq
    return pq.read_schema(os.path.join(folder, names[0])).remove_metadata() if names else None


def _arrow_schema(layout: dict):
    from pyspark.sql.pandas.types import to_arrow_schema

    from .typed import table_struct
    return to_arrow_schema(table_struct(layout), timezone="UTC")
