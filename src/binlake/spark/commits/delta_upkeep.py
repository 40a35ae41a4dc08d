"""A lake table's files kept few and its old versions bounded: compaction
and vacuum, after each run and by `binlake maintain`.

Strategy: after a run that committed to a table, `after_run` compacts it
by size tiers, and runs a lite vacuum: it deletes only the files
the log's own remove actions name, once removed longer ago than the
table's retention (its delta.deletedFileRetentionDuration, which
--keep-versions sets; Delta's week by default), so its cost follows the log
since the last checkpoint, not the table's folder, and a version inside
the retention stays readable. A process vacuums a table at most every
VACUUM_EVERY_SECONDS (a follower commits to a table every second or so),
a follower's first vacuums of its tables spread over that interval.
A checkpoint drops the remove actions older than the retention, so under a
short one (--keep-versions) a lite vacuum would leave behind the files
they named: those are deleted by what the process's own commits removed
(delta_sync.REMOVED), once past the retention. What a process never saw
removed (before a restart) is `maintain`'s.
Compaction by tiers (as events/ and changes/ are: binlake.spark.state.
compaction). A follower adds a small file to each table it commits to,
every second or so. Compacting a table whole once it holds more than
COMPACT_AT_FILES files rewrote all of it every 16 commits: a table of
60 MB was written again every 15 s, and a micro-batch that did it took
seconds more, later in a follower's life the more. Instead a table's
files fall in size tiers (below the first bound of TIER_BYTES, below the
next...), and a tier of more than COMPACT_AT_FILES files is merged, smallest
tier first: delta-rs's compaction with the tier's total size as its target
(it takes only files up to its target, and packs neighbours, newest first,
into bins up to it: the tier's files, the newest, fill the first). So small
files become a file of the next tier, and those one of the tier after; a
row is rewritten a few times in all, and a compaction rewrites what one
tier holds, not the table.
Files no log entry names (written by a run killed before its commit) are
left to `maintain` (`binlake maintain`): a full vacuum, which lists the
whole folder and deletes, besides, every file no version holds that is
older than the retention. Run beside no pipeline run (the lake's lock): a
file being written for a commit is named by no version yet.
"""

from __future__ import annotations

import os
import random
import time

from binlake.spark.commits.delta import add_actions
from binlake.spark.commits.delta_sync import REMOVED, durable
from binlake.spark.commits.delta_tables import opened

#: A tier holding more files than this is compacted after a run that
#: committed to the table (appends and merges add files, run after run).
COMPACT_AT_FILES = 16
#: The size compaction writes files of, at most.
TARGET_FILE_BYTES = 128 << 20
#: The size tiers' upper bounds: a file belongs to the first it is smaller
#: than; files of TARGET_FILE_BYTES and over are left as they are.
TIER_BYTES = (1 << 20, 16 << 20, TARGET_FILE_BYTES)
#: Old versions stay readable (time travel) this long; then the files no
#: later version holds are deleted (Delta's own default: a week).
RETENTION_HOURS = 7 * 24
#: A table is vacuumed after a run at most this often by one process.
VACUUM_EVERY_SECONDS = 600.0

_vacuumed: dict[str, float] = {}  #: table folder -> when this process last vacuumed it
#: Whether a table first seen counts as vacuumed at a random point of the
#: last `every` seconds (`spread_vacuums`), not as never vacuumed.
_spread = False


def spread_vacuums(on: bool) -> None:
    """While a follower runs (`on`), its first commits to each table do not
    all vacuum it at once (a lake of 1,000 tables would pay 1,000 vacuums
    in its first minute, then none for ten): the vacuums spread evenly over
    the interval instead. A run on its own vacuums each table it commits to."""
    global _spread
    _spread = on


@durable
def after_run(uri: str, every: float = VACUUM_EVERY_SECONDS,
              keep: float | None = None) -> dict:
    """The table compacted by tiers (`_compacted`), and lite-vacuumed with the retention it declares (RETENTION_HOURS when
    it declares none) unless this process did less than `every` seconds
    ago; with `keep` (--keep-versions, seconds), the files its log removed
    that long ago deleted too. Returns {"compacted": files replaced,
    "vacuumed": files deleted}."""
    table = opened(uri)
    compacted = _compacted(table, compact=False)
    if keep is None:  # the week's remove actions outlive any checkpoint: the vacuum's
        REMOVED.pop(os.path.abspath(uri), None)
    deleted = _removed_past(uri, keep) if keep is not None else 0
    now = time.monotonic()
    if _spread and uri not in _vacuumed:
        _vacuumed[uri] = now - random.uniform(0, every)
    if uri in _vacuumed and now - _vacuumed[uri] < every:
        return {"compacted": compacted, "vacuumed": deleted}
    _vacuumed[uri] = now
    vacuumed = table.vacuum(retention_hours=None, dry_run=False,
                            enforce_retention_duration=False, full=False)
    return {"compacted": compacted, "vacuumed": deleted + len(vacuumed)}


def _removed_past(uri: str, keep: float) -> int:
    """The files the table's log removed more than `keep` seconds ago, as
    this process committed them (delta_sync.REMOVED), deleted: a short
    retention's checkpoints drop remove actions a lite vacuum would need."""
    removed = REMOVED.get(os.path.abspath(uri), {})
    cutoff = (time.time() - keep) * 1000
    deleted = 0
    for path, when in list(removed.items()):
        if when <= cutoff:
            try:
                os.remove(os.path.join(uri, path))
                deleted += 1
            except FileNotFoundError:
                pass
            del removed[path]
    return deleted


@durable
def maintain(uri: str, *, compact: bool = False, retention_hours: int = RETENTION_HOURS) -> dict:
    """Compact the table's small files (`compact`, or more than
    COMPACT_AT_FILES of them; one commit that changes no row, which the
    change data feed skips) and vacuum it whole: files no version of the
    last `retention_hours` holds are deleted, files never committed (a run
    killed before its commit) among them. Returns {"compacted": files
    replaced, "vacuumed": files deleted}."""
    table = opened(uri)
    compacted = _compacted(table, compact)
    vacuumed = table.vacuum(retention_hours=retention_hours, dry_run=False,
                            enforce_retention_duration=False, full=True)
    return {"compacted": compacted, "vacuumed": len(vacuumed)}


def _compacted(table, compact: bool) -> int:
    """Files replaced by compacting `table`: with `compact`, into files of
    TARGET_FILE_BYTES whenever it has more than one; otherwise by tiers
    (the module's docstring), each tier of more than COMPACT_AT_FILES files."""
    if len(table.file_uris()) <= (1 if compact else COMPACT_AT_FILES):
        return 0
    if compact:
        return table.optimize.compact(target_size=TARGET_FILE_BYTES)["numFilesRemoved"]
    replaced, low = 0, 0
    for bound in TIER_BYTES:
        sizes = add_actions(table).column("size_bytes").to_pylist()
        tier = [size for size in sizes if low <= size < bound]
        if len(tier) > COMPACT_AT_FILES:
            # The tier's files fill the first bin (its newest files, the
            # tier's, packed first): a larger file, older, is left as it is.
            target = min(sum(tier), TARGET_FILE_BYTES)
            replaced += table.optimize.compact(target_size=target)["numFilesRemoved"]
        low = bound
    return replaced
