"""A run's tables computed in Spark's tasks: the way of the tables whose
changes are many (the driver's, binlake.spark.commits.driver_way, takes
the small ones).

Strategy: each large table is one job (binlake.spark.commits.table_jobs:
the function the driver runs for a small one), run in a Spark task of its
own, side by side with the others (`parallelize(jobs).map(run_job)`): on a
cluster the tables are computed on its executors, which read the change
files and write the table's files where the lake is. Spark's JVM touches
no row: a task reads its table's change files with pyarrow (converting
their maps to Arrow in the JVM would cost four times the rules). The
rows written are staged for binlake.spark.commits.table_commits, as the
driver's are.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import functions as F

from binlake.spark.commits.change_files import ChangeFiles, by_table, sources_of
from binlake.spark.commits.table_commits import TABLES, TableCommits
from binlake.spark.commits.table_jobs import (APPENDED, CARRIED, MERGED, REBUILT, REWRITTEN,
                                              TableJob, carries, history_job, increment_kind,
                                              new_job, run_job, stage)
from binlake.spark.state.starts import AsOf


class SparkTables:
    """The Spark way of one run's tables."""

    def __init__(self, spark, commits: TableCommits, changes: ChangeFiles):
        self.spark = spark  # a LazySession in a run: started where first used
        self.commits, self.changes = commits, changes

    def rebuild(self, plans: list, as_of: AsOf | None) -> None:
        """Each table's state as of the end (or `as_of`), computed from all
        of its changes, staged to be committed whole as its next version."""
        if not plans:
            return
        self.run([self.job(REBUILT, plan, self.changes.all_of(sources_of(plan)), as_of=as_of)
                  for plan in plans])
        for key, plan in by_table(plans).items():
            self.commits.stage_whole(key, plan, "rebuilt")
        self.commits.log(f"tables: {len(plans)} rebuilt"
                         + (f" as of {as_of.describe()}" if as_of else ""))

    def apply(self, files: list, plans: list) -> None:
        """Add new changes (in `files`) to tables whose definition did not
        change: inserts appended, a keyed table's net changes merged, a
        keyless table's copies merged."""
        found = self.changes.stats(files)
        jobs = []
        for plan in plans:
            sources = sources_of(plan)
            if not any(source in found for source in sources):
                continue  # nothing new
            inserts = all(found[s].inserts_only for s in sources if s in found)
            jobs.append(self.job(increment_kind(plan, inserts), plan,
                                 self.changes.of(files, sources)))
        if jobs:
            kinds = [job.kind for job in jobs]
            self.commits.log(f"tables: appending to {kinds.count(APPENDED)}, merging into "
                             f"{kinds.count(MERGED)}, rewriting {kinds.count(REWRITTEN)}")
        self.run(jobs)
        for job in jobs:
            stage(self.commits, job)

    def carry(self, carried: dict) -> list:
        """Tables whose definition changed (ADD/DROP/RENAME COLUMN, MODIFY, a
        new key, RENAME TABLE, TRUNCATE, a new CREATE), {key: (plan,
        CarriedFrom, new change files)}: the rows they hold carried into the
        new columns, the new changes applied on top, staged whole for one
        overwrite. The cost follows the table's size and its new changes,
        never its history. Returns the plans that need a rebuild instead (a
        type change binlake does not convert, a column whose fractional
        digits changed)."""
        rebuild, jobs = [], []
        for key, (plan, source, files) in carried.items():
            if carries(plan, source, key):
                jobs.append(self.job(CARRIED, plan, self.changes.of(files, sources_of(plan)),
                                     source=source))
            else:
                rebuild.append(plan)
        if jobs:
            self.commits.log(f"tables: carrying {len(jobs)} into their new definitions")
        self.run(jobs)
        for job in jobs:
            stage(self.commits, job)
        return rebuild

    def history(self, plan: dict, files: list, signature: str, whole: bool) -> None:
        """A keyed table's history rows from the changes in `files`
        (binlake.spark.rules.history_rows) staged: `whole`, every version,
        for one overwrite; else the new versions and the versions they end,
        for one MERGE."""
        job = history_job(self.commits, self.changes, plan, files, whole)
        self.run([job])
        self.commits.stage_history(job.key, plan, job.folder, signature, whole)

    def job(self, kind: str, plan: dict, files: list, **how) -> TableJob:
        return new_job(self.commits, self.changes, kind, plan, files, **how)

    def run(self, jobs: list) -> None:
        """Each job in a Spark task of its own, side by side."""
        if jobs:
            context = self.spark.sparkContext
            context.setJobDescription(f"binlake: {len(jobs)} table(s)")
            context.parallelize(jobs, len(jobs)).map(run_job).collect()


def _column(name: str, frame: str | None = None):
    """A column by its name, whatever characters it holds (of the frame
    aliased `frame`)."""
    quoted = "`" + name.replace("`", "``") + "`"
    return F.col(f"{frame}.{quoted}" if frame else quoted)


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
    delta = DeltaTable(uri)  # its own: moved to `as_of`
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


def concurrently(function, arguments: list, workers: int = 4) -> list:
    """Spark jobs submitted from several threads run side by side; small jobs
    are mostly scheduling latency, which this overlaps."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda args: function(*args), arguments))
