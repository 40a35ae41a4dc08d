"""A keyed table's history (`--history`, SCD type 2) from its changes: one
implementation, which Spark's tasks run (binlake.spark.commits.spark_way).

Strategy: the table's key touches (binlake.spark.rules.engine.touches),
the last of each key in each transaction (a version is the row as its
commit left it), each key's transactions in commit order: a version's
VALID_TO is the next transaction that touched its key. A partial row
image is refused: a version is a whole row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from binlake.spark.rules.columns import CLOSES, VALID_FROM, VALID_TO
from binlake.spark.rules.arrow_buffers import flags, ints, numbers
from binlake.spark.rules.engine import codes, images, last_of, touches
from binlake.spark.rules.refused import HISTORY_PARTIAL, refused_at
from binlake.spark.rules.table_rows import typed


def history_versions(changes: pa.Table, plan: dict, table: str) -> pa.Table:
    """One row per version of a row a transaction left (the table's
    columns, typed; VALID_FROM its commit: file, end position, time;
    VALID_TO the next commit that changed or deleted the row, NULL while
    none did), and per key touched one CLOSES row (its key, VALID_FROM the
    first commit that touched it: where the version the history held open
    stops)."""
    found = images(changes, plan)
    layout, primary = plan["layout"], plan["primary_key"]
    partial = found.absent("after") & ~found.deletes
    if partial.any():
        raise refused_at(found.where(found.first(partial)), table, HISTORY_PARTIAL)
    keys, sets, change, order = touches(found, primary)
    key_codes = [codes(k) for k in keys]
    seq = numbers(found.rows.column("commit_key").combine_chunks().field("file_seq"))[change]
    end = numbers(found.rows.column("commit_pos").combine_chunks())[change]
    # Each key's last touch in each transaction (a transaction: its commit's place),
    # then in key and commit order: the next of the same key ends a version.
    chosen = last_of(key_codes + [seq, end], order)
    chosen = chosen[np.lexsort([end[chosen], seq[chosen]] + [c[chosen] for c in key_codes][::-1])]
    same_key = np.ones(max(len(chosen) - 1, 0), dtype=bool)
    for c in key_codes:
        same_key &= c[chosen][1:] == c[chosen][:-1]
    following = np.full(len(chosen), -1)
    following[:-1][same_key] = chosen[1:][same_key]
    first = np.ones(len(chosen), dtype=bool)
    first[1:] = ~same_key
    commits = [found.rows.column(name).combine_chunks().take(ints(change))
               for name in ("file", "commit_pos", "commit_timestamp")]
    version = chosen[sets[chosen]]
    ends = following[sets[chosen]]
    rows = typed([c.take(ints(change[version])) for c in found.after], layout, table)
    rows = _with(rows, VALID_FROM, [c.take(ints(version)) for c in commits])
    rows = _with(rows, VALID_TO, [pc.if_else(flags(ends < 0), pa.nulls(len(ends), c.type),
                                             c.take(ints(np.maximum(ends, 0))))
                                  for c in commits])
    rows = rows.append_column(CLOSES, flags(np.zeros(rows.num_rows, dtype=bool)))
    # Each key's first transaction: where the version the history holds open stops.
    firsts = chosen[first]
    key_rows = typed([k.take(ints(firsts)) for k in keys],
                     {"columns": [layout["columns"][i] for i in primary]}, table)
    closes = pa.Table.from_arrays(
        [key_rows.column(primary.index(i)) if i in primary
         else pa.nulls(len(firsts), rows.schema.field(i).type)
         for i in range(len(layout["columns"]))], schema=pa.schema(list(rows.schema)[:len(
             layout["columns"])]))
    closes = _with(closes, VALID_FROM, [c.take(ints(firsts)) for c in commits])
    closes = _with(closes, VALID_TO, [pa.nulls(len(firsts), c.type) for c in commits])
    closes = closes.append_column(CLOSES, flags(np.ones(len(firsts), dtype=bool)))
    return pa.concat_tables([rows, closes])


def _with(rows: pa.Table, names, columns) -> pa.Table:
    for name, column in zip(names, columns):
        rows = rows.append_column(name, column)
    return rows
