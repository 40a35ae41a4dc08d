"""What a run's tables are made from: the rows a changed table carries
(`CarriedFrom`), and what the driver learns of changes/ from its files
alone, without a Spark job: rows per table (Parquet footers), whether files hold inserts
only (their `op` column). The lake
decides each table's way from this; Spark or the driver computes the rows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow.compute as pc
import pyarrow.parquet as pq

from binlake.spark.plans.layouts import qualified
from binlake.spark.read.partitioned import escape_partition_value, parquet_rows
from binlake.spark.rules.table_rows import partition_of
from binlake.spark.state.compaction import view_files


@dataclass(frozen=True)
class CarriedFrom:
    """Where a table whose definition changed takes its rows from: the Delta
    table at `uri` (None: no row of it lives on, as after a TRUNCATE), as
    of run `done`, its columns named as `stretch` has them."""
    uri: str | None
    done: int
    stretch: dict | None


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
        self.root = os.path.abspath(root)
        #: files of changes/ by (database, table), per file list asked of
        #: (`of`: a run asks it once per table, of the same few lists)
        self._grouped: dict = {}

    def rows(self, tables: set) -> int:
        """Change rows of these (database, table) pairs (at least their rows)."""
        return sum(parquet_rows(path) for path in self.all_of(tables))

    def of(self, files: list[str], tables: set) -> list[str]:
        """The `files` of changes/ that hold these (database, table) pairs,
        in their order."""
        listed = tuple(files)
        grouped = self._grouped.get(listed)
        if grouped is None:
            if len(self._grouped) > 8:
                self._grouped.clear()
            grouped = self._grouped[listed] = {}
            for index, path in enumerate(listed):
                grouped.setdefault(partition_of(path, self.root), []).append(index)
        found = sorted(index for table in tables for index in grouped.get(table, ()))
        return [listed[index] for index in found]

    def all_of(self, tables: set) -> list[str]:
        """Every file of changes/ holding these (database, table) pairs (as a
        reader lists them: binlake.spark.state.compaction)."""
        lake = os.path.dirname(self.root)
        return [path for db, table in tables for path in view_files(lake, self._folder(db, table), in_run=True)]

    def inserts_only(self, tables: set) -> bool:
        """Every change of these (database, table) pairs inserts."""
        return all(found.inserts_only for found in self.stats(self.all_of(tables)).values())

    def stats(self, files: list[str]) -> dict:
        """{(database, table): TableChanges} of these files of changes/."""
        found = {}
        for path in files:
            key = partition_of(path, self.root)
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


def by_table(plans: list) -> dict:
    """{"db.table": plan}."""
    return {qualified(p["database"], p["table"]): p for p in plans}


def sources_of(plan: dict) -> set:
    """The (database, table) names a plan's rows come from in changes/."""
    return {(s["database"], s["table"]) for s in plan["stretches"]}


def parquet_names(folder: str) -> list[str]:
    """The data files Spark wrote in `folder` (none if it wrote nothing),
    relative to it (a partitioned table's in their partition folders)."""
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, _, names in os.walk(folder) for name in names
                  if name.endswith(".parquet"))
