"""events/ and changes/ kept to few files: the small files of each partition
folder merged, with no reader ever seeing a half state.

Strategy. Each run adds a file to each partition folder it wrote to (a
follower several a second). A pass (`compact_views`: the follower's,
between micro-batches, every COMPACT_EVERY_SECONDS; `binlake maintain`'s)
merges, folder by folder, files of like size: a size tier (TIER_BYTES)
holding COMPACT_AT files or more becomes one file, of at most
TARGET_FILE_BYTES. A row is so rewritten once per tier, three times in
all, and a folder holds fewer than COMPACT_AT files per tier besides its
large ones: the count grows with the data, not with the micro-batches.
The unit is the partition folder, the one readers prune by (a day of a
table, a day of events), whatever binlogs its rows came from. Left as they
are: the change files a table has yet to take in (the manifest's pending
ones, which a run reads by name) and the lock-free snapshot's chunk files
(a table is built from them as such). A pass stops starting merges after
PASS_SECONDS, the largest groups first: the follower's next micro-batch
waits for it (a tenth of its time: a follower of 1,000 one-row
transactions a second over 10 tables writes some 30 files a second, each
merged in 2-3 ms).

No half state. A merged file is written under _binlake/compacting/ and
fsynced; a record {merged file: the files it replaces} is saved (the
store's compactions.json); only then is the file renamed into its
folder. Every reader lists through `view_files` (binlake.spark's
read_changes and read_events, the lake's own ChangeFiles and REPLACE
check): it lists the folders first, then reads the records, and a merged
file it found hides the files it replaces, while one it did not find (not
renamed yet, a pass killed before the rename) hides nothing. Either way a
row is read once. A replaced file stays RETIRED_SECONDS (a query that
listed it before may still be opening it), then is deleted; its record is
kept as long again, so that a listing made before the delete is still
read right. A pass first drops the records whose merged file never
arrived, and deletes no replaced file whose merged file is not in place.
Readers that glob the folders themselves (DuckDB, Polars) see a replaced
file beside the merged one until it is deleted: they read `view_files`.
"""

from __future__ import annotations

import os
import time
import uuid

from binlake.atomic import fsync_directory, fsync_files
from binlake.spark.read.partitioned import ROW_GROUP_ROWS, SNAPSHOT_FILES
from binlake.spark.state.manifest import Manifest
from binlake.spark.state.run_undo import RunUndo, uncommitted_files
from binlake.spark.state.store import (COMPACTING, clear_folder, has_staged_state, lake_lock,
                                       load_compactions, load_manifest, save_compactions)

#: The views compacted, each a folder of the lake.
VIEWS = ("events", "changes")
#: A tier of files is merged once it holds this many.
COMPACT_AT = 8
#: The size tiers: a file belongs to the first it is smaller than; files
#: of TARGET_FILE_BYTES and over are left as they are.
TIER_BYTES = (1 << 20, 16 << 20)
TARGET_FILE_BYTES = 128 << 20
#: A replaced file is deleted this long after its merged file took its
#: place (a query of the views running longer may find it gone).
RETIRED_SECONDS = 600.0
#: How often the follower runs a pass, and how long a pass starts merges for.
COMPACT_EVERY_SECONDS = 5.0
PASS_SECONDS = 0.5
#: How a merged file's name begins.
MERGED_FILES = "part-merged-"


def view_files(out: str, folder: str, *, in_run: bool = False) -> list[str]:
    """The Parquet files under `folder` (a view of the lake `out`, or a
    folder in one) that a reader reads: listed, and then left out those a
    merged file it listed replaces, and those a run has added but not
    committed (a refusal or a kill undoes them: binlake.spark.state.run_undo),
    unless the caller is that run (`in_run`: the lake's own readers, under
    its lock). Sorted absolute paths."""
    found = [path for _, files in _folders(os.path.abspath(folder)) for path in files]
    if not found:
        return found
    out, listed, hidden = os.path.abspath(out), set(found), set()
    for record in load_compactions(out):  # read after the listing: see the strategy
        if os.path.join(out, record["merged"]) in listed:
            hidden.update(os.path.join(out, old) for old in record["replaced"])
    if not in_run:  # also after the listing: a run's files are recorded before they move in
        hidden.update(os.path.join(out, path) for path in uncommitted_files(out))
    return [path for path in found if path not in hidden]


def compact_lake_views(out: str, *, seconds: float = PASS_SECONDS, log=None) -> dict:
    """`compact_views` of the lake `out` under its lock (a follower holds it
    already: nested), so never beside a run; nothing while a killed run
    waits to be recovered (its staged manifest names files to come)."""
    with lake_lock(out):
        if has_staged_state(out) or os.path.isdir(RunUndo(out).folder):
            return {"merged": 0, "into": 0, "deleted": 0}
        return compact_views(out, load_manifest(out), seconds=seconds, log=log)


def compact_views(out: str, manifest: Manifest, *, now: float | None = None,
                  seconds: float = PASS_SECONDS, log=None) -> dict:
    """One pass over the lake `out`, whose lock the caller holds (beside no
    run), `manifest` its state: records of merges that never arrived
    dropped, files replaced RETIRED_SECONDS ago deleted, then folders merged
    for up to `seconds`. Returns {"merged": files replaced, "into": files
    written, "deleted": files deleted}."""
    out = os.path.abspath(out)
    given, now = now, time.time() if now is None else now
    # Merges whose file never arrived (a pass killed before its rename):
    # their files were never hidden, and stay.
    records = [r for r in load_compactions(out) if os.path.exists(os.path.join(out, r["merged"]))]
    deleted = _delete_retired(out, records, now)
    kept = [r for r in records if now - r["at"] < 2 * RETIRED_SECONDS]
    staged = clear_folder(out, COMPACTING, make=True)
    left = {os.path.join(out, old) for r in kept for old in r["replaced"]} | {
        os.path.join(out, "changes", name) for names in manifest.pending.values()
        for name in names}  # read by name by the next run's tables
    merges, began = [], time.monotonic()
    for group in _candidates(out, left):
        if time.monotonic() - began >= seconds:
            break
        merged = _merge(out, group, staged)
        if merged is not None:
            merges.append(merged)
    fsync_files([staged_path for staged_path, _, _ in merges], staged)
    # Stamped as the files take their place, not as the pass began: the grace
    # counts from when a reader may first see a merged file.
    placed = time.time() if given is None else now
    save_compactions(out, kept + [{"merged": merged, "replaced": olds, "at": placed}
                                  for _, merged, olds in merges])
    for staged_path, merged, _ in merges:
        os.replace(staged_path, os.path.join(out, merged))
    fsync_files([os.path.join(out, merged) for _, merged, _ in merges], out)
    result = {"merged": sum(len(olds) for _, _, olds in merges), "into": len(merges),
              "deleted": deleted}
    if log and result["merged"]:
        log(f"views: {result['merged']} small files merged into {result['into']}")
    return result


def _delete_retired(out: str, records: list, now: float) -> int:
    """The files replaced RETIRED_SECONDS ago or more deleted (each record
    marked so), their folders fsynced before any record of them is dropped:
    a power cut must not bring back a file whose record is gone."""
    gone = []
    for index, record in enumerate(records):
        if now - record["at"] >= RETIRED_SECONDS and not record.get("deleted"):
            for old in record["replaced"]:
                path = os.path.join(out, old)
                try:
                    os.remove(path)
                except FileNotFoundError:
                    continue
                gone.append(path)
            records[index] = dict(record, deleted=True)
    for path in {os.path.dirname(path): path for path in gone}.values():
        fsync_directory(path)
    return len(gone)


def _candidates(out: str, left: set) -> list:
    """The groups of files to merge, the largest first: a pass that runs out
    of time leaves the folders with the fewest files, not always the same
    ones (the last in name order would never be merged)."""
    groups = [group for view in VIEWS for _, files in _folders(os.path.join(out, view))
              for group in _groups([path for path in files if path not in left])]
    return sorted(groups, key=len, reverse=True)


def _hidden(name: str) -> bool:
    return name.startswith(("_", "."))


def _folders(root: str):
    """(folder, [its Parquet files]) of each folder under `root` holding
    some, as Spark lists them (a name beginning "_" or "." is hidden)."""
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _hidden(d))
        files = sorted(os.path.join(folder, n) for n in names
                       if n.endswith(".parquet") and not _hidden(n))
        if files:
            yield folder, files


def _groups(files: list) -> list:
    """The groups of a folder's `files` to merge: per size tier, once it
    holds COMPACT_AT files, in runs of at most TARGET_FILE_BYTES."""
    tiers: list[list] = [[] for _ in TIER_BYTES]
    for path in files:
        if os.path.basename(path).startswith(SNAPSHOT_FILES):
            continue
        size = os.path.getsize(path)
        tier = next((i for i, limit in enumerate(TIER_BYTES) if size < limit), None)
        if tier is not None:
            tiers[tier].append((path, size))
    groups = []
    for tier in tiers:
        if len(tier) < COMPACT_AT:
            continue
        group, total = [], 0
        for path, size in tier:
            if group and total + size > TARGET_FILE_BYTES:
                groups.append(group)
                group, total = [], 0
            group.append(path)
            total += size
        if len(group) > 1:
            groups.append(group)
    return groups


def _merge(out: str, group: list, staged: str):
    """The files of `group` (one folder's) written as one under `staged`:
    (its staged path, its path in the lake, the replaced files' paths in
    the lake), all relative to `out` but the first; None where their
    schemas do not merge (the files stay as they are)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    try:
        rows = pa.concat_tables([pq.ParquetFile(path).read() for path in group],
                                promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    name = f"{MERGED_FILES}{uuid.uuid4().hex}.snappy.parquet"
    staged_path = os.path.join(staged, name)
    pq.write_table(rows, staged_path, compression="snappy", row_group_size=ROW_GROUP_ROWS)
    folder = os.path.relpath(os.path.dirname(group[0]), out)
    return (staged_path, os.path.join(folder, name),
            [os.path.relpath(path, out) for path in group])


__all__ = ["COMPACT_EVERY_SECONDS", "compact_lake_views", "compact_views", "view_files"]
