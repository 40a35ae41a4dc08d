"""`binlake pipeline --rebuild PATTERNS`, the tables built again.

Strategy: no second way of building a table.
- Without -R, the tables are built again from changes/: this run's
  manifest records their plan signatures as STALE (`marked_stale`), and a
  stale table is one whose plan changed and that is built anew
  (`stale_tables`, lake.update_tables' `fresh`): binlake.spark.commits.lake
  rebuilds it from every change of it, never carrying the rows its Delta
  table holds (they may be what is wrong), and records its signature when
  it commits. The other tables stay as they are. The mark lives in the
  run's manifest only: a run refused or killed before its tables commit is
  undone whole (binlake.spark.state.run_undo), and --rebuild is given again.
  This gives back what changes/ holds (after a binlake upgrade, a table
  damaged or changed by hand); it cannot pass a refusal the run's own
  changes caused: a refused run is undone, so they are not in changes/.
- With -R, the tables are read anew from the server by the lock-free
  snapshot, as `--snapshot-tables` asks a follower to (binlake.spark.state.store
  `request_snapshot`): the request is left, and this run's follower takes
  it at its start, before its first micro-batch. Each table's rows then
  start at the lake's position, every change of it before its chunk's
  read (the refused ones among them) superseded by the server's rows.
- Every refusal's words of its way forward: binlake.spark.plans.refusals.
"""
from __future__ import annotations

from dataclasses import replace

from binlake.spark.read.batches import TableFilter
from binlake.spark.state.manifest import Manifest, TablesState

#: A plan signature no plan has (they are hex): the table is built anew.
STALE = "stale: --rebuild"


def marked_stale(manifest: Manifest, patterns: str | None, selected=None) -> Manifest:
    """The manifest with the lake's tables `patterns` selects (and the run's
    --tables, `selected(db, table)`, too) marked STALE: this run builds them
    again from changes/. Patterns that select none of its tables are
    refused in one line."""
    if not patterns:
        return manifest
    state = manifest.tables
    if state is not None and state.mixed:
        return manifest  # every table is rebuilt anyway
    wanted = TableFilter(patterns)
    if not wanted.patterns:
        raise ValueError("--rebuild: name the tables (db.table patterns): nothing was changed")
    chosen = {key for key in (state.plans if state else {})
              if wanted(*key.split(".", 1)) and (selected is None or selected(*key.split(".", 1)))}
    if not chosen:
        held = ", ".join(sorted(state.plans)) if state and state.plans else "none yet"
        raise ValueError(f"--rebuild {patterns}: no table of this lake (its tables: {held}): "
                         "nothing was changed")
    return replace(manifest, tables=replace(
        state, plans={**state.plans, **{key: STALE for key in chosen}}))


def stale_tables(state: TablesState | None) -> set:
    """The tables ("db.table") `marked_stale` marks in `state`."""
    return {key for key, signature in (state.plans if state else {}).items()
            if signature == STALE}
