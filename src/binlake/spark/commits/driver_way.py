"""A run's tables computed in the driver, without a Spark job: the way of
the tables whose changes are few, a lock-free snapshot's chunks, and
inserts-only tables of any size.

Strategy: when a run's new changes to a table are few, Spark's fixed cost
(a fresh JVM's first query loads and compiles the SQL engine: 3.8 s on the
bench machine, bench/README.md) is most of what applying them costs, so
the driver runs the table rules (binlake.spark.rules.table_rows) itself
on the change files: the functions Spark's tasks run on larger tables
(binlake.spark.commits.spark_way), the same refusals. A table of inserts
only, and one the lock-free snapshot read, is typed as Arrow columns file
by file (no Python per value), whatever its size. Rows are staged for
binlake.spark.commits.table_commits to commit, as Spark's are.
"""

from __future__ import annotations

import functools
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.spark.commits.change_files import ChangeFiles, sources_of
from binlake.spark.commits.delta import row_count
from binlake.spark.commits.table_commits import (RowFiles, TableCommits, partition_by,
                                                 side_by_side, sorted_by)
from binlake.spark.commits.table_jobs import (APPENDED, CARRIED, MERGED, REBUILT, REWRITTEN,
                                              carries, history_job, increment_kind, new_job,
                                              run_job, stage)
from binlake.spark.plans.history import inside
from binlake.spark.plans.layouts import qualified
from binlake.spark.read.partitioned import SNAPSHOT_FILES, parquet_rows
from binlake.spark.rules import table_rows
from binlake.spark.rules.arrow_buffers import flags, ints
from binlake.spark.rules.engine import after_start, images, last_touches
from binlake.spark.rules.table_rows import read_changes
from binlake.spark.state.starts import AsOf

#: A table's new change rows the driver computes at most; more go to Spark.
DRIVER_ROWS = 50_000
#: A table's rows the driver rewrites at most (a keyless table's update,
#: DDL carried); more go to Spark.
DRIVER_TABLE_ROWS = 250_000


def takes(rows: int) -> bool:
    """The driver computes a table's increment of `rows` new change rows
    (DRIVER_ROWS < 0: never, so that tests can hold either way to the other)."""
    return 0 <= rows <= DRIVER_ROWS


class DriverTables:
    """The driver's way of one run's tables."""

    def __init__(self, commits: TableCommits, changes: ChangeFiles):
        self.commits, self.changes = commits, changes

    def apply_in_driver(self, files: list, plans: list) -> list:
        """`apply` for the tables whose new changes are few (a keyless
        table's also the rows it holds); returns the plans left to Spark."""
        found = self.changes.stats(files)
        left, jobs = [], []
        for plan in plans:
            sources = sources_of(plan)
            new = sum(found[s].rows for s in sources if s in found)
            if not new:
                continue  # nothing new
            mine = self.changes.of(files, sources)
            inserts_only = all(found[s].inserts_only for s in sources if s in found)
            key = qualified(plan["database"], plan["table"])
            if not takes(new) or (not inserts_only and not plan["primary_key"] and row_count(
                    os.path.join(self.commits.tables_dir, key)) > DRIVER_TABLE_ROWS):
                if not (inserts_only and self._staged_inserts(plan, mine, "appended")):
                    left.append(plan)
                continue
            jobs.append(new_job(self.commits, self.changes, increment_kind(plan, inserts_only),
                                plan, mine))
        side_by_side([functools.partial(run_job, job) for job in jobs])
        for job in jobs:  # in order: the commits' order, run to run
            stage(self.commits, job)
        if jobs:
            kinds = [job.kind for job in jobs]
            self.commits.log(f"tables: appending to {kinds.count(APPENDED)}, merging into "
                             f"{kinds.count(MERGED)}, rewriting {kinds.count(REWRITTEN)} "
                             "(in the driver)")
        return left

    def rebuild_in_driver(self, plans: list, as_of: AsOf | None = None) -> list:
        """`rebuild` for the tables whose changes are few (a small lake's
        first run, a table created since: a follower then needs no Spark
        job), one the lock-free snapshot read (`_built_from_chunks`), and
        one of inserts only (`_built_from_inserts`); returns the plans left
        to Spark."""
        if as_of is None:
            plans = [plan for plan in plans if not self._built_from_chunks(plan)
                     and not self._built_from_inserts(plan)]
        left, jobs = [], []
        for plan in plans:
            files = self.changes.all_of(sources_of(plan))
            if takes(sum(map(parquet_rows, files))):
                jobs.append(new_job(self.commits, self.changes, REBUILT, plan, files,
                                    as_of=as_of))
            else:
                left.append(plan)
        side_by_side([functools.partial(run_job, job) for job in jobs])
        for job in jobs:  # in order: the commits' order, run to run
            stage(self.commits, job)
        if jobs:
            self.commits.log(f"tables: {len(jobs)} rebuilt (in the driver)"
                             + (f" as of {as_of.describe()}" if as_of else ""))
        return left

    def history(self, plan: dict, files: list, signature: str, whole: bool) -> bool:
        """`history` where the changes in `files` are few; False where not."""
        if not takes(sum(map(parquet_rows, files))):
            return False
        job = history_job(self.commits, self.changes, plan, files, whole)
        run_job(job)
        self.commits.stage_history(job.key, plan, job.folder, signature, whole)
        return True

    def _built_from_inserts(self, plan: dict) -> bool:
        """A table whose every change inserts, more than the driver computes
        row by row (a large INSERT ... SELECT into a new table): built from
        its change files one by one, typed as Arrow columns (as
        `_built_from_chunks` types a snapshot's), without a JVM."""
        sources = sources_of(plan)
        files = self.changes.all_of(sources)
        if (len(plan["stretches"]) != 1 or not files
                or takes(sum(map(parquet_rows, files)))
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
            later = after_start(read.column("commit_key").combine_chunks(), stretch["after"])
            after = read.column("after").combine_chunks().filter(flags(later))
            if not len(after):
                return None  # (changes of the table before its CREATE: another table)
            if np.diff(after.offsets.to_numpy()).min() < len(stretch["sources"]):
                raise _NotArrowTyped()
            return _typed_rows(_chunk_columns(after, stretch["sources"]), plan)
        try:
            self._stage_typed(plan, typed, files)
        except _NotArrowTyped:
            shutil.rmtree(self.commits.folder(key), ignore_errors=True)
            return False
        self.commits.stage_whole(key, plan, how)
        return True

    def _stage_typed(self, plan: dict, typed, paths: list, last=None) -> None:
        """`typed(path)` of each path (a table's typed rows, or None), then
        `last`, staged as the table's files. Arrow reads and casts outside
        the GIL: files are typed side by side."""
        with RowFiles(self.commits.folder(qualified(plan["database"], plan["table"])),
                       partition_by(plan)) as out:
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
        sources, primary = sources_of(plan), plan["primary_key"]
        files = self.changes.all_of(sources)
        chunks = [path for path in files if os.path.basename(path).startswith(SNAPSHOT_FILES)]
        stretch = _arrow_stretch(plan)
        if not chunks or len(primary) != 1 or stretch is None:
            return False
        binlog = sorted(set(files) - set(chunks))
        if not takes(sum(map(parquet_rows, binlog))):
            return False
        changes = read_changes(binlog, self.changes.root, sources)
        found = None if changes is None else images(changes, plan)
        if found is not None and (found.absent("before").any() or found.absent("after").any()):
            return False  # partial row images: the table is rebuilt as any other
        if found is None:
            touched, present = pa.nulls(0, pa.string()), None
        else:
            keys, sets, change = last_touches(found, primary)
            touched = keys[0]
            present = table_rows.typed([c.take(ints(change[sets])) for c in found.after],
                                       layout, key)

        def typed_chunk(path: str):
            """A chunk's rows, typed, but the touched keys' (None: none in the stretch)."""
            read = pq.read_table(path, columns=["commit_key", "after"])
            first = read.column("commit_key")[0].as_py() if read.num_rows else None
            if first is None or not inside(stretch, (first["file_seq"], first["pos"],
                                                      first["sub"])):
                return None  # a chunk from before a TRUNCATE: its rows are gone
            texts = _chunk_columns(read.column("after").combine_chunks(), stretch["sources"])
            if len(touched):
                kept = pc.invert(pc.is_in(texts[primary[0]], value_set=touched))
                texts = [column.filter(kept) for column in texts]
            return _typed_rows(texts, plan)
        self._stage_typed(plan, typed_chunk, chunks, sorted_by(present, layout["primary_key"])
                          if present is not None and present.num_rows else None)
        self.commits.stage_whole(key, plan, "rebuilt")
        self.commits.log(f"tables: {key} built from {len(chunks)} chunk(s) of the snapshot "
                 f"and {len(touched)} key(s) the binlog changed (in the driver)")
        return True

    def carry_in_driver(self, carried: dict) -> dict:
        """`carry` for the tables whose rows and new changes the driver
        computes; returns those left to Spark."""
        left, done = self._rewrite_in_driver(carried, "carried")
        if done:
            self.commits.log(f"tables: carrying {done} into their new definitions (in the driver)")
        # A table whose every change inserts (rows into a table just created,
        # whose plan the first table map changed) is its inserts, however many.
        return {key: entry for key, entry in left.items()
                if not self._built_from_inserts(entry[0])}

    def _rewrite_in_driver(self, tables: dict, how: str) -> tuple[dict, int]:
        """{key: (plan, CarriedFrom, change files)} staged whole where the
        driver computes them (few changes, a small table; the rows carried
        convert): (those left to Spark, how many were staged)."""
        left = {}
        for key, (plan, source, files) in tables.items():
            mine = self.changes.of(files, sources_of(plan))
            held = 0 if source.uri is None else row_count(source.uri)
            if (not takes(sum(map(parquet_rows, mine))) or held > DRIVER_TABLE_ROWS
                    or not carries(plan, source, key)):
                left[key] = (plan, source, files)
                continue
            job = new_job(self.commits, self.changes, CARRIED, plan, mine, source=source)
            run_job(job)
            self.commits.stage_whole(key, plan, how)
        return left, len(tables) - len(left)


#: Threads that read and type the chunk files of a snapshotted table.
CHUNK_WORKERS = 2


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


class _NotArrowTyped(Exception):
    """Inserts-only changes whose images leave columns out (MINIMAL)."""


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
    return sorted_by(table_rows.typed(texts, layout, key),
                     layout["primary_key"] or [c["key"] for c in layout["columns"]])
