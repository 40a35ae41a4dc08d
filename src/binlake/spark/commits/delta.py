"""Lake tables as Delta tables, kept in step by one MERGE per table and run
(delta-rs through the `deltalake` package: no JVM, so the embedded default
works on a fresh machine, and Spark with Delta Lake reads the same tables).

Strategy: a run hands each table the net effect of its new changes, one row
per primary key: the key's last image, flagged `DELETED` where its last
change removed it. One MERGE applies it: a deleted key's row is deleted, a
present key's row is replaced, a new key is inserted. The cost follows the
new changes and the files they touch, not the table's history. Where the
files' statistics show every new key beyond the held ones (a bulk of new
AUTO_INCREMENT keys), nothing can match and the MERGE is an append.

Exactly once: every commit carries an application transaction (`APP_ID`
per table, version = the run's number) and the binlog position the table
now reflects (commit metadata `binlake.through`). A run killed after some
tables committed is run again: the tables whose transaction version already
reached the run's number are left as they are, the others are merged. A
commit is atomic (the Delta log's next entry), so a kill at any moment
leaves each table at its previous version or its next.

Durability: every function here that commits is `durable`
(binlake.spark.commits.delta_sync): the files its log entries name, and then the
entries, are fsynced before it returns, and before the lake's manifest
says the run is done. Compaction and vacuum are binlake.spark.commits.delta_upkeep's.
"""

from __future__ import annotations

import functools
import json
import os
from urllib.parse import unquote

from binlake.spark.commits.delta_sync import durable, sync_ahead
from binlake.spark.commits.delta_tables import exists, first_entry_mark, opened
from binlake.spark.rules.columns import (CLOSES, COPIES_REMOVED, COPY_ADDED, COPY_OP, DELETED,
                                        NET_COLUMNS, VALID_FROM, VALID_TO)

#: Commit metadata key: the signature of the plan a history table was built by.
PLAN = "binlake.plan"
#: Application id of binlake's commits to a table (one per table: tables commit apart).
APP_ID = "binlake:{table}"
#: Commit metadata key: the binlog position (file -> offset) the table reflects.
THROUGH = "binlake.through"
#: Commit metadata key of a commit that replaced the table's rows whole:
#: "carried" (DDL changed its columns, key or name: the rows carried into the
#: new definition), "rebuilt" (from its changes) or "repartitioned". Its change
#: data feed is every old row deleted and every new one inserted (Delta's for
#: any overwrite), not row changes of the binlog: a reader of row changes
#: skips such a version and reads the table anew.
REWRITTEN = "binlake.rewritten"
#: Every table's properties: its change data feed on (a downstream job reads
#: what each commit changed: appends as inserts, merges as delete,
#: update_preimage, update_postimage and insert); statistics of every column
#: in the files delta-rs writes (its default, Delta's, is the first 32: a
#: MERGE or a reader could skip no file by a later column).
TABLE_PROPERTIES = {"delta.enableChangeDataFeed": "true",
                    "delta.dataSkippingNumIndexedCols": "-1"}
#: How long a table keeps old versions readable by default: Delta's own
#: default for both its log entries and the files only they name (a week).
KEEP_VERSIONS = None


def table_properties(keep_versions: float | None = KEEP_VERSIONS) -> dict:
    """TABLE_PROPERTIES, and with `keep_versions` (seconds) how long a table
    keeps old versions readable (time travel, its change data feed): its
    log entries (delta.logRetentionDuration: cleaned at each checkpoint)
    and the files only they name (delta.deletedFileRetentionDuration, which
    the vacuum after a run follows). A follower commits each table it
    changes every second or so: these bound what that leaves on disk."""
    if keep_versions is None:
        return TABLE_PROPERTIES
    interval = f"interval {max(1, round(keep_versions))} seconds"
    return {**TABLE_PROPERTIES, "delta.logRetentionDuration": interval,
            "delta.deletedFileRetentionDuration": interval}


#: Longest text a file's statistics carry: a longer min or max is left out
#: (a prefix would be a valid min but not a valid max).
STATS_TEXT_CHARS = 32
#: The whole numbers a double holds exactly: the DECIMAL(p,0) statistics
#: written (a JSON number is read as one) and the held ranges trusted.
EXACT_STATS = 1 << 53


def committed_run(uri: str, table: str) -> int | None:
    """The number of the last run whose changes this table holds (None: none)."""
    from deltalake.exceptions import TableNotFoundError
    try:
        found = opened(uri).transaction_version(APP_ID.format(table=table))
    except TableNotFoundError:
        return None
    return found


@durable
def merge_net_changes(uri: str, table: str, net, keys: list[str], *, run: int,
                      through: dict, bounds: dict | None = None,
                      properties: dict = TABLE_PROPERTIES) -> str:
    """Apply `net` (one row per key, the table's columns plus NET_COLUMNS)
    to the Delta table at `uri` as run number `run`. `bounds` ({key column:
    (least, greatest)} of `net`, `key_bounds`) let the MERGE read only the
    files whose statistics overlap them, or skip the MERGE where they lie
    beyond every held key (`_beyond_held_keys`). Returns what was done:
    "created", "merged", "appended", or "already" (this run committed it before)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    if not keys:
        raise ValueError(f"{table}: a MERGE needs the table's primary key")
    done = committed_run(uri, table)
    if done is not None and done >= run:
        return "already"
    commit = _commit_properties(table, run, through)
    if done is None and not exists(uri):
        net = net.read_all() if hasattr(net, "read_all") else net
        write_deltalake(uri, _inserted(net), mode="error", commit_properties=commit,
                        configuration=properties)
        return "created"
    _with_table_properties(uri, properties)
    target = opened(uri)
    if bounds and _beyond_held_keys(target, bounds):
        _append_new_keys(target, net, commit)
        return "appended"
    # Not a DECIMAL key's range: delta-rs's own statistics of one past
    # 2^63 are clamped to it, so its pruning would skip the file holding it.
    on = " AND ".join([f"t.{_quoted(k)} = s.{_quoted(k)}" for k in keys]
                      + [f"t.{_quoted(k)} >= {_sql_literal(low)} AND "
                         f"t.{_quoted(k)} <= {_sql_literal(high)}"
                         for k, (low, high) in (bounds or {}).items()
                         if not pa.types.is_decimal(net.schema.field(k).type)])
    deleted = f"s.{_quoted(DELETED)}"
    # Every column named by us, quoted: delta-rs's update_all/insert_all
    # cannot name a column with a backtick in it, which MySQL allows.
    names = [name for name in net.schema.names if name not in NET_COLUMNS]
    inserted = {_quoted(name): f"s.{_quoted(name)}" for name in names}
    updated = {_quoted(name): f"s.{_quoted(name)}" for name in names}
    (target
     .merge(net, on, source_alias="s", target_alias="t", merge_schema=True,
            commit_properties=commit)
     .when_matched_delete(predicate=deleted)
     .when_matched_update(updated, predicate=f"NOT {deleted}")
     .when_not_matched_insert(inserted, predicate=f"NOT {deleted}")
     .execute())
    return "merged"


@durable
def merge_copies(uri: str, table: str, rows, *, run: int, through: dict,
                 properties: dict = TABLE_PROPERTIES) -> str:
    """Apply `rows` (the table's columns plus COPY_OP) to the keyless table
    at `uri`, a multiset of rows, as run number `run`: one MERGE that
    removes every copy of each COPIES_REMOVED row and adds each COPY_ADDED
    one, so only the files holding the rows removed are rewritten and the
    change data feed says each copy removed and added (a row whose copies
    went from 2 to 1: both removed, one added). Returns "merged" or
    "already"; nothing to do commits nothing."""
    done = committed_run(uri, table)
    if done is not None and done >= run:
        return "already"
    names = [name for name in rows.schema.names if name != COPY_OP]
    op = f"s.{_quoted(COPY_OP)}"
    # NULL is a value like another here: a row with NULLs is removed too.
    same = " AND ".join(f"(t.{_quoted(name)} IS NOT DISTINCT FROM s.{_quoted(name)})"
                        for name in names)
    _with_table_properties(uri, properties)
    (opened(uri)
     .merge(rows, f"({op} = '{COPIES_REMOVED}') AND {same}", source_alias="s",
            target_alias="t", commit_properties=_commit_properties(table, run, through))
     .when_matched_delete()
     .when_not_matched_insert({_quoted(name): f"s.{_quoted(name)}" for name in names},
                              predicate=f"{op} = '{COPY_ADDED}'")
     .execute())
    return "merged"


@durable
def merge_history(uri: str, table: str, rows, keys: list[str], *, run: int, through: dict,
                  plan: str) -> str:
    """Apply a run's history rows to the history table at `uri`: each
    CLOSES row ends the version its key holds open (VALID_TO set to its
    VALID_FROM), the other rows are new versions, inserted; one commit, as
    run number `run`. Returns "merged" or "already"."""
    done = committed_run(uri, table)
    if done is not None and done >= run:
        return "already"
    closes = f"s.{_quoted(CLOSES)}"
    on = " AND ".join([f"t.{_quoted(k)} = s.{_quoted(k)}" for k in keys]
                      + [f"t.{_quoted(VALID_TO[1])} IS NULL", closes])
    names = [name for name in rows.schema.names if name != CLOSES]
    (opened(uri)
     .merge(rows, on, source_alias="s", target_alias="t", merge_schema=True,
            commit_properties=_commit_properties(table, run, through, plan))
     .when_matched_update({_quoted(to): f"s.{_quoted(start)}"
                           for to, start in zip(VALID_TO, VALID_FROM)})
     .when_not_matched_insert({_quoted(name): f"s.{_quoted(name)}" for name in names},
                              predicate=f"NOT {closes}")
     .execute())
    return "merged"


def plan_of(uri: str) -> str | None:
    """The plan signature a history table's latest commit records."""
    return _latest_metadata(uri, PLAN) if exists(uri) else None


def key_bounds(columns) -> dict:
    """{name: (least, greatest)} of the integer (a DECIMAL(p,0) too, as
    BIGINT UNSIGNED is typed) and text columns of `columns` (a pyarrow Table
    of key columns): conditions on the target alone, by which a MERGE skips
    the files whose statistics lie outside (delta-rs prunes by them, not by
    the join)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    bounds = {}
    for name in columns.schema.names:
        kind = columns.schema.field(name).type
        whole = pa.types.is_integer(kind) or (pa.types.is_decimal(kind) and kind.scale == 0)
        if not (whole or pa.types.is_string(kind)) or columns.num_rows == 0:
            continue
        least, greatest = pc.min_max(columns[name]).values()
        if least.as_py() is None:
            continue
        bounds[name] = ((int(least.as_py()), int(greatest.as_py())) if whole
                        else (least.as_py(), greatest.as_py()))
    return bounds


def _sql_literal(value) -> str:
    """An integer or a text as the MERGE predicate's SQL reads it."""
    return str(value) if isinstance(value, int) else "'" + value.replace("'", "''") + "'"


def _beyond_held_keys(target, bounds: dict) -> bool:
    """Whether the table's file statistics show that no row it holds has a
    key within `bounds` (key_bounds of the net changes) in some integer key
    column: then no net change matches a held row, and the MERGE is an
    append (the usual case of a bulk of new AUTO_INCREMENT keys). Only
    integers, and held ranges within EXACT_STATS: a text's range may be cut
    short, and delta-rs clamps a DECIMAL's past 2^63. NULL never matches in
    the MERGE either, so files whose key is all NULL hold nothing that
    could match."""
    files = add_actions(target)
    if files.num_rows == 0:
        return True
    for name, (least, greatest) in bounds.items():
        if not isinstance(least, int) or f"min.{name}" not in files.column_names:
            continue
        rows = files.column("num_records").to_pylist()
        nulls = files.column(f"null_count.{name}").to_pylist() \
            if f"null_count.{name}" in files.column_names else [None] * len(rows)
        ranges = [(low, high) for low, high, n, null in zip(
            files.column(f"min.{name}").to_pylist(), files.column(f"max.{name}").to_pylist(),
            rows, nulls) if not (n is not None and null == n)]
        if any(low is None or high is None or not -EXACT_STATS < low <= high < EXACT_STATS
               for low, high in ranges):
            continue  # a file without an exact range for this column: it may hold anything
        if all(greatest < int(low) or least > int(high) for low, high in ranges):
            return True
    return False


def _append_new_keys(target, net, commit) -> None:
    """Commit `net`'s present rows as an append (`_beyond_held_keys`: none
    matches a held row, so a deleted key's row is not there to delete).
    Typed as the table's columns (what the MERGE's casts did); a column new
    to the table is added, NULL in its older rows. The change data feed of
    an append is its files: each row an insert."""
    import pyarrow as pa
    from deltalake import write_deltalake

    held = pa.schema(target.schema().to_arrow())
    schema = pa.schema([held.field(name) if name in held.names else net.schema.field(name)
                        for name in net.schema.names if name not in NET_COLUMNS])
    batches = net.to_batches() if isinstance(net, pa.Table) else net
    rows = (_inserted(batch).cast(schema) for batch in batches)
    write_deltalake(target, pa.RecordBatchReader.from_batches(schema, rows),
                    mode="append", schema_mode="merge", commit_properties=commit,
                    partition_by=target.metadata().partition_columns or None)


def _inserted(net):
    """The rows of net changes (a Table or a RecordBatch) that a MERGE
    inserts where no held key matches them: those not deleted, without
    NET_COLUMNS."""
    import pyarrow.compute as pc
    keep = pc.invert(net.column(DELETED))
    return net.filter(keep).select([n for n in net.schema.names if n not in NET_COLUMNS])


def rows_under_keys(uri: str, keys):
    """The rows the Delta table at `uri` holds under `keys` (a pyarrow Table
    of key columns, typed as the table's), None where there is no table: a
    partial row image's columns left out are theirs
    (binlake.spark.rules.table_rows.completed)."""
    import pyarrow.dataset as ds
    if not exists(uri):
        return None
    names = keys.column_names
    # Files whose statistics rule the first key column out are not read.
    held = opened(uri).to_pyarrow_dataset().to_table(
        filter=ds.field(names[0]).isin(keys.column(0)))
    return held.join(keys.cast(held.select(names).schema), keys=names, join_type="left semi")


@durable
def commit_table(uri: str, table: str, files: list[str], schema, *, run: int,
                 through: dict, mode: str = "overwrite", plan: str | None = None,
                 partition_by: tuple = (), rewritten: str | None = None,
                 properties: dict = TABLE_PROPERTIES) -> None:
    """Make the Parquet `files` (paths inside `uri`, written by Spark's
    executors: no row passes through here) the whole of the Delta table at
    `uri` (`mode` "overwrite": one atomic commit removes what the table held
    and adds these) or add them to it ("append"), as run number `run`. Files
    written but never committed (a kill before the commit) are not part of
    any version; `binlake maintain`'s full vacuum removes them. Each file
    and its folders are fsynced before the log entry names them (`durable`
    then syncs the entry). A table partitioned `partition_by`
    has its files in Hive folders (`column=value/`), each file the rows of
    one value, the column not in the file (partition_folder)."""
    import pyarrow as pa
    from deltalake import write_deltalake
    from deltalake.transaction import AddAction

    partition_by = list(partition_by)
    # Every column nullable, whatever Spark's files say (a column a job
    # filled with a literal is required there): NOT NULL is the server's
    # rule, and the files of earlier versions lack a column added since,
    # which a required one would make unreadable in the change data feed.
    schema = pa.schema([field.with_nullable(True) for field in schema],
                       metadata=schema.metadata)
    if not exists(uri):  # version 0: the schema, no rows
        write_deltalake(uri, schema.empty_table(), mode="error", configuration=properties,
                        partition_by=partition_by or None)
    _allow_timestamp_ntz(uri, schema)
    _with_table_properties(uri, properties)
    commit = _commit_properties(table, run, through, plan, rewritten)
    if opened(uri).metadata().partition_columns != partition_by:
        # Partitioned otherwise (--partition-by changed): Delta's REPLACE, the
        # rows written again by delta-rs under the new partitioning.
        _repartitioned(uri, files, schema, partition_by,
                       _commit_properties(table, run, through, plan, "repartitioned"))
        return
    sync_ahead([os.path.join(uri, path) for path in files], uri)
    actions = []
    for path in files:
        full = os.path.join(uri, path)
        stat = os.stat(full)
        actions.append(AddAction(path, stat.st_size, _partition_values(path, partition_by),
                                 int(stat.st_mtime * 1000), True,
                                 file_stats(footer(full))))
    opened(uri).create_write_transaction(actions, mode, schema, partition_by=partition_by,
                                             commit_properties=commit)


#: The folder name Spark and Delta give a NULL partition value.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def partition_folder(column: str, value) -> str:
    """The Hive folder of a partition value (integers and dates only:
    binlake.spark.plans.typed.PARTITION_TYPES, whose text needs no escaping)."""
    return f"{column}={NULL_PARTITION if value is None else value}"


def _partition_values(path: str, partition_by: list) -> dict:
    """A file's partition values, as Delta's log has them, from its folders
    (`partition_by` empty: those of every folder)."""
    found = dict(part.split("=", 1) for part in path.split("/")[:-1] if "=" in part)
    return {column: None if found[column] == NULL_PARTITION else unquote(found[column])
            for column in partition_by or found}


def _repartitioned(uri: str, files: list[str], schema, partition_by: list, commit) -> None:
    """The staged `files` made the table's one version, partitioned anew
    (streamed: a file's batches at a time)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import write_deltalake

    def batches():
        for path in files:
            values = _partition_values(path, [])
            for found in pq.ParquetFile(os.path.join(uri, path)).iter_batches():
                yield pa.RecordBatch.from_arrays(_in_schema(found, schema, values), schema=schema)
    write_deltalake(uri, pa.RecordBatchReader.from_batches(schema, batches()), mode="overwrite",
                    schema_mode="overwrite", partition_by=partition_by,  # [] ends it; None keeps it
                    commit_properties=commit)
    for path in files:  # written again by delta-rs: these are in no version
        os.unlink(os.path.join(uri, path))


def _allow_timestamp_ntz(uri: str, schema) -> None:
    """DATETIME columns are timestamps without a time zone, which a Delta
    table may hold only once it declares the `timestampNtz` feature: declared
    when such a column first appears (a table can gain one by ALTER)."""
    import pyarrow as pa
    from deltalake import TableFeatures
    if not any(pa.types.is_timestamp(f.type) and f.type.tz is None for f in schema):
        return
    table = opened(uri)
    if "timestampNtz" not in (table.protocol().writer_features or []):
        table.alter.add_feature(TableFeatures.TimestampWithoutTimezone,
                                allow_protocol_versions_increase=True)


def _with_table_properties(uri: str, properties: dict) -> None:
    """`properties` (`table_properties`) on a table made before binlake set
    them, or since given others. Looked at once per table (made anew: its
    first log entry another file) and process: a follower commits to a
    table every second, and only a run sets them."""
    seen = (os.path.abspath(uri), first_entry_mark(uri), tuple(sorted(properties.items())))
    if seen in _PROPERTIES_SEEN:
        return
    table = opened(uri)
    config = table.metadata().configuration
    if any(config.get(name) != value for name, value in properties.items()):
        table.alter.set_table_properties(properties)
    _PROPERTIES_SEEN.add(seen)


_PROPERTIES_SEEN: set = set()  #: (table, its first entry, properties) that hold them


def footer(path: str):
    """The Parquet footer (FileMetaData) of the file at `path`, read once for
    the schema a commit takes from it and the statistics it gives it."""
    found = os.stat(path)
    return _footer(path, found.st_mtime_ns, found.st_size)


@functools.lru_cache(maxsize=64)
def _footer(path: str, _mtime: int, _size: int):
    import pyarrow.parquet as pq
    return pq.ParquetFile(path).metadata


def file_stats(metadata) -> str:
    """Delta statistics of a Parquet file, from its footer (no row is read):
    numRecords, and for each top-level column of a plain type its nullCount
    and, where every row group with values has them, minValues and
    maxValues. Readers and MERGE skip a file its ranges rule out, so a
    range is written only where its JSON is exact: integers, dates, texts
    up to STATS_TEXT_CHARS, whole DECIMALs within EXACT_STATS; not floats
    (NaN), other decimals (a JSON number is a double), timestamps (Delta's
    are milliseconds) or bytes."""
    import pyarrow as pa
    leaves: dict[str, list[int]] = {}
    for index in range(metadata.num_columns):
        leaves.setdefault(metadata.schema.column(index).path, []).append(index)
    out = {"numRecords": metadata.num_rows, "minValues": {}, "maxValues": {}, "nullCount": {}}
    for field in metadata.schema.to_arrow_schema():
        found = leaves.get(field.name)
        if not found or len(found) != 1 or pa.types.is_nested(field.type):
            continue  # a nested column (SET, VECTOR), or a name with dots that reads as one
        summary = _column_stats(metadata, found[0])
        if summary is None:
            continue
        nulls, low, high = summary
        out["nullCount"][field.name] = nulls
        low, high = _stats_value(low, field.type), _stats_value(high, field.type)
        if low is not None and high is not None:
            out["minValues"][field.name], out["maxValues"][field.name] = low, high
    return json.dumps(out)


def _column_stats(metadata, index: int):
    """(null count, min, max) of one column over the row groups; min and max
    None where a row group with values has none; None if a null count is missing."""
    nulls, low, high, ranged = 0, None, None, True
    for group in range(metadata.num_row_groups):
        rows = metadata.row_group(group)
        stats = rows.column(index).statistics
        if stats is None or not stats.has_null_count:
            return None
        nulls += stats.null_count
        if stats.null_count == rows.num_rows:
            continue  # no value, no range
        if not stats.has_min_max:
            ranged = False
            continue
        low = stats.min if low is None else min(low, stats.min)
        high = stats.max if high is None else max(high, stats.max)
    return (nulls, low, high) if ranged else (nulls, None, None)


def _stats_value(value, kind):
    import pyarrow as pa
    if value is None:
        return None
    if pa.types.is_integer(kind):
        return int(value)
    if pa.types.is_decimal(kind) and kind.scale == 0 and -EXACT_STATS < value < EXACT_STATS:
        return int(value)  # BIGINT UNSIGNED's type: a JSON number exact as a double
    if pa.types.is_date32(kind):
        return value.isoformat()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return value if len(value) <= STATS_TEXT_CHARS else None
    return None


def read_table(uri: str):
    """The table's current version as a pyarrow Table: its files, read as
    Parquet (binlake's tables have no deletion vectors and no column
    mapping), each in the table's schema (a file from before a column was
    merged in has NULLs there; a partition column is its file's partition
    value). Not through pyarrow.dataset, which imports pandas: a small
    run's time would go on that."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = opened(uri)
    schema = pa.schema(table.schema().to_arrow())
    partition_by = table.metadata().partition_columns
    parts = []
    for path in table.file_uris():  # URIs: percent-encoded
        found = pq.ParquetFile(unquote(path)).read()
        values = _partition_values(os.path.relpath(unquote(path), uri), partition_by)
        parts.append(pa.Table.from_arrays(_in_schema(found, schema, values), schema=schema))
    return pa.concat_tables(parts) if parts else pa.Table.from_arrays(
        [pa.nulls(0, field.type) for field in schema], schema=schema)  # (empty_table: pandas)


def _in_schema(found, schema, values: dict) -> list:
    """The columns of a file's rows (a Table or a RecordBatch) in the
    table's schema: a partition column from its folder's value (`values`),
    a column the file lacks (merged in after it was written) NULL."""
    import pyarrow as pa
    rows, held = found.num_rows, found.schema.names
    return [found.column(f.name).cast(f.type) if f.name in held
            else pa.array([values[f.name]] * rows, pa.string()).cast(f.type) if f.name in values
            else pa.nulls(rows, f.type) for f in schema]


def row_count(uri: str) -> int:
    """Rows in the table's current version, from its log (no file is read)."""
    actions = add_actions(opened(uri))
    return sum(actions.column("num_records").to_pylist()) if actions.num_rows else 0


def add_actions(table):
    """The table's files and their statistics as a pyarrow Table, from the
    Arrow stream: pa.table() would import pandas (0.3 s) to look at it."""
    import pyarrow as pa
    return pa.RecordBatchReader.from_stream(table.get_add_actions(flatten=True)).read_all()


def through_of(uri: str) -> dict | None:
    """The binlog position the table's latest commit by binlake says it reflects."""
    found = _latest_metadata(uri, THROUGH)
    return json.loads(found) if found is not None else None


def _latest_metadata(uri: str, key: str) -> str | None:
    """`key` of the commit metadata of binlake's latest commit to the table
    (compaction's and vacuum's commits carry none: looked past)."""
    table = opened(uri)
    for limit in (4, None):
        for entry in table.history(limit):
            if key in entry:
                return entry[key]
    return None


def _commit_properties(table: str, run: int, through: dict, plan: str | None = None,
                       rewritten: str | None = None):
    """What every commit of run `run` to `table` carries: the position it
    reflects, the application transaction that makes a rerun skip it (a
    history table's, the plan it follows; a whole rewrite's, why: REWRITTEN)."""
    from deltalake import CommitProperties, Transaction
    metadata = {THROUGH: json.dumps(through, sort_keys=True)}
    if plan is not None:
        metadata[PLAN] = plan
    if rewritten is not None:
        metadata[REWRITTEN] = rewritten
    return CommitProperties(custom_metadata=metadata,
                            app_transactions=[Transaction(APP_ID.format(table=table), run)])


def _quoted(name: str) -> str:
    """A column name as the MERGE predicate's SQL reads it: delta-rs parses
    double-quoted identifiers ("" for a quote), in which a backtick is plain."""
    return '"' + name.replace('"', '""') + '"'
