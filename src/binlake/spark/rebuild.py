"""`binlake pipeline --rebuild PATTERNS`, and the way forward each refusal of
the tables names.

Strategy: no second way of building a table.
- Without -R, the tables are built again from changes/: this run's
  manifest records their plan signatures as STALE (`marked_stale`), and a
  stale table is one whose plan changed and that is built anew
  (`stale_tables`, lake.update_tables' `fresh`): binlake.spark.lake
  rebuilds it from every change of it, never carrying the rows its Delta
  table holds (they may be what is wrong), and records its signature when
  it commits. The other tables stay as they are. The mark lives in the
  run's manifest only: a run refused or killed before its tables commit is
  undone whole (binlake.spark.run_undo), and --rebuild is given again.
  This gives back what changes/ holds (after a binlake upgrade, a table
  damaged or changed by hand); it cannot pass a refusal the run's own
  changes caused: a refused run is undone, so they are not in changes/.
- With -R, the tables are read anew from the server by the lock-free
  snapshot, as `--snapshot-tables` asks a follower to (binlake.spark.follow
  `request_snapshot`): the request is left, and this run's follower takes
  it at its start, before its first micro-batch. Each table's rows then
  start at the lake's position, every change of it before its chunk's
  read (the refused ones among them) superseded by the server's rows.
- Every refusal of a change to the tables ends its one line with what to
  run (`refusal_line`): the words of each way forward are written here
  once (`READ_ANEW`, `FULL_IMAGES_THEN_READ_ANEW`, `TEMPORALS_AS_TEXT`,
  `NEW_LAKE_FROM_SNAPSHOT`, `NEW_LAKE_WITH_FULL_IMAGES`); a refusal's reason carries one after
  GO_ON (`forward`), its table's name put in where it says {table}
  (`named`), and the lake's folder where it says DIR (`refusal_line`).
"""
from __future__ import annotations

from dataclasses import replace

from binlake.spark.batches import TableFilter
from binlake.spark.manifest import Manifest, TablesState

#: A plan signature no plan has (they are hex): the table is built anew.
STALE = "stale: --rebuild"
#: Where a refusal's reason ends and its way forward begins.
GO_ON = "; to go on, "
#: The lake's folder in a way forward, until `refusal_line` names it.
LAKE = "DIR"
#: What a server's connection options look like in a way forward.
SERVER = "-R -h HOST -u USER"

#: A row the binlog does not hold whole: the server's rows are the way on.
READ_ANEW = ("read {table} anew from the server: binlake pipeline --out DIR " + SERVER
             + " --rebuild {table}")
#: A table the server keeps logging partial images of: full images first.
FULL_IMAGES_THEN_READ_ANEW = ("set binlog_row_image=FULL on the server, then read {table} "
                              "anew from it: binlake pipeline --out DIR " + SERVER
                              + " --rebuild {table}")
#: A value no typed column holds: the lake's temporals as text.
TEMPORALS_AS_TEXT = ("run again with --temporals text: DATE, DATETIME and TIMESTAMP columns "
                     "are then kept as MySQL's exact text (every table rebuilt once)")
#: A type change binlake does not convert: a lake whose history starts after
#: it (a table read anew keeps the change in its plan, and is refused again).
NEW_LAKE_FROM_SNAPSHOT = ("start a new lake from a snapshot of the server, after the change: "
                          "binlake pipeline --out NEWDIR " + SERVER + " --snapshot-from")
#: A history needs every version whole: one that starts where images are whole.
NEW_LAKE_WITH_FULL_IMAGES = ("set binlog_row_image=FULL on the server and start a lake of "
                             "its history from a snapshot of it: binlake pipeline --out NEWDIR "
                             + SERVER + " --snapshot-from --history")


def forward(template: str) -> str:
    """A refusal's reason ends with this: GO_ON, then what to run (its
    {table}: the table's name, put in by `named` or `named_column`)."""
    return GO_ON + template


def named(reason: str, table: str) -> str:
    """`reason` with `table` where it says {table}."""
    return reason.replace("{table}", table)


def named_column(reason: str, table):
    """`named` as a Spark column, `table` a column of the table's name."""
    from pyspark.sql import functions as F
    pieces = reason.split("{table}")
    parts = [F.lit(pieces[0])]
    for piece in pieces[1:]:
        parts += [table, F.lit(piece)]
    return F.concat(*parts)


def refusal_line(reason: str, out: str) -> str:
    """A refused change's one line: why, that nothing was applied, and the
    way forward its reason carries (with the lake's folder in it)."""
    why, _, forward = reason.partition(GO_ON)
    line = f"{why}: nothing was applied to the tables"
    if forward:
        line += GO_ON + forward.replace(f"--out {LAKE} ", f"--out {out} ")
    return line


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


__all__ = ["STALE", "GO_ON", "READ_ANEW", "FULL_IMAGES_THEN_READ_ANEW",
           "TEMPORALS_AS_TEXT", "NEW_LAKE_FROM_SNAPSHOT", "NEW_LAKE_WITH_FULL_IMAGES", "forward", "named", "named_column",
           "refusal_line",
           "marked_stale", "stale_tables"]
