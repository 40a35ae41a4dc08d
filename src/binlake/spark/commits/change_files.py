"""What a run's tables are made from: the rows a changed table carries
(`CarriedFrom`), and what the driver learns of changes/ from its files
alone, without a Spark job: rows per table (Parquet footers), whether files hold inserts
only (their `op` column). The lake
decides each table's way from this; Spark or the driver computes the rows.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np
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
            ops = file_ops(path)
            known = found.get(key, TableChanges(0, True))
            found[key] = TableChanges(known.rows + ops.rows,
                                      known.inserts_only and ops.inserts_only)
        return found

    def _folder(self, database: str, table: str) -> str:
        return os.path.join(self.root, f"database={escape_partition_value(database)}",
                            f"table={escape_partition_value(table)}")


@dataclass(frozen=True)
class FileOps:
    """What a change file's `op` column says."""
    rows: int
    updates: np.ndarray  #: per change, whether it is an UPDATE
    deletes: int
    #: every change inserts ("c"; a snapshot's row, "r", may share its key
    #: with an insert before it: a chunk of the lock-free snapshot is read
    #: after changes to its keys, so it is taken by key, never appended)
    inserts_only: bool


def file_ops(path: str) -> FileOps:
    """The `op` column of the change file at `path`, read once per file in
    this process (a run asks it of each of its files for the tables' ways
    and for the refusals; a file of changes/ is never written again)."""
    found = os.stat(path)
    return _file_ops(path, found.st_mtime_ns, found.st_size)


@functools.lru_cache(maxsize=4096)
def _file_ops(path: str, _mtime: int, _size: int) -> FileOps:
    # From the column's dictionary codes (numpy: pyarrow imports pandas to
    # make a Python value an Arrow one or an array numpy's, 0.3 s of a small run).
    updates, deletes, kinds = [], 0, set()
    parquet = pq.ParquetFile(path, read_dictionary=["op"])
    for chunk in parquet.read(columns=["op"]).column("op").chunks:
        names = chunk.dictionary.to_pylist()
        indices = chunk.indices  # (its buffer as it is: to_numpy() imports pandas)
        codes = np.frombuffer(indices.buffers()[1], np.dtype(f"int{indices.type.bit_width}"),
                              len(indices), indices.offset * indices.type.bit_width // 8)
        kinds.update(names[code] for code in np.unique(codes).tolist())
        updates.append(codes == names.index("u") if "u" in names
                       else np.zeros(len(codes), bool))
        deletes += int((codes == names.index("d")).sum()) if "d" in names else 0
    updates = np.concatenate(updates) if updates else np.zeros(0, bool)
    return FileOps(len(updates), updates, deletes, kinds <= {"c"})


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
