"""The lock-free snapshot (`-R --snapshot-from`, binlake.spark.run.follow):
a keyed table read in chunks by key, in rounds between the follower's
micro-batches, each chunk placed in the binlog.

Strategy: the DBLog way but exact without reconciliation. The snapshot's
read view (binlake.spark.snapshot.snapshot) opens the lake and reads only
the tables without a key; a keyed table is read in chunks by key, in
rounds between the follower's micro-batches. Each chunk is one short
transaction of its own, on its own connection (a Spark task per chunk),
that opens a consistent snapshot and reads MariaDB's
Binlog_snapshot_position of that very view: the chunk's rows are the
table's rows in its key range at that binlog position, placed there as
op "r". The micro-batch that appends them reads the binlog past every
chunk's position, so each key takes, in commit order, the changes before
its chunk, its chunk's row, then the changes after: a key's last touch is
its state (a key whose chunk comes later may be touched first; the chunk
overwrites it). Chunk bounds are keys found by a keyset query (the key
`chunk_rows` after the last bound: at most a fiftieth of the table), so an
update that moves a row to another chunk's range is a delete in one and an
insert in the other, each placed by its own chunk's position. A table
still being read stays out of tables/ (a reader never sees half of it):
the run that appends its last chunk builds it from its chunks and
changes, as a table new to the lake (binlake.spark.run.pipeline): in the driver
from the chunk files themselves (binlake.spark.commits.lake). The progress
(each table's last bound, and where its last chunk was read: an `--as-of`
point before it is refused, binlake.spark.state.starts) is committed in the
manifest with the run that holds the chunks' rows: a killed snapshot reads
again at most the round in flight. MySQL has no position of a read view
without a lock: there a keyed chunk is placed by watermarks
(`_chunk_view`): it sorts at the binlog's end read before its view opened,
and the lake takes it once it holds the binlog read after; the changes
between, which its rows may hold already, are applied over them by key to
the same state. A table without a key is read at an exact point under a
moment's global read lock.

A table read anew without a key (binlake.spark.snapshot.snapshot's
`read_anew`) is one chunk, one read view, its rows starting at that
view's position (`progressed`). A chunk's rows are read as exact text by
binlake.spark.snapshot.server_rows.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from binlake.connection.settings import SchemaSourceError, quote_identifier as _quote
from binlake.spark.read.ranges import name_sequence
from binlake.spark.state.progress import ChunkPlace, SnapshotProgress
from binlake.spark.snapshot.read_view import (SnapshotPoint, _is_mariadb, _open_read_view,
                                              _session, utc_now)
from binlake.spark.snapshot.server_rows import (_ChangeWriter, _chunks, _columns, _key_range,
                                                _pages)

#: Rows per chunk of the lock-free snapshot (by key), and per batch of a
#: table without a key.
CHUNK_ROWS = 50_000
#: A table's chunks are at most this share of its rows (so that a round, two
#: chunks a core, is a few percent of it: what a killed snapshot reads again).
CHUNK_SHARE = 50
#: ... and at least this many rows (each chunk costs a read view and a query).
MIN_CHUNK_ROWS = 1_000


def rows_per_chunk(estimate: int, most: int) -> int:
    """The rows of a table's chunks: `most`, or fewer for a table of about
    `estimate` rows, that a round stays a small share of it."""
    return max(min(most, MIN_CHUNK_ROWS), min(most, estimate // CHUNK_SHARE))


@dataclass(frozen=True)
class Chunk:
    """The rows of a keyed table after the key `after` up to `through`
    (inclusive; None: no bound), the snapshot's chunk number `number`."""
    database: str
    table: str
    key: tuple[str, ...]
    after: tuple | None
    through: tuple | None
    number: int


@dataclass(frozen=True)
class ChunkRead:
    chunk: Chunk
    rows: int
    point: SnapshotPoint     #: where its rows sort among the changes
    #: (file, pos) the binlog had reached once it was read (MySQL's high
    #: watermark): the lake takes the chunk once it holds the binlog so far,
    #: so that the changes its rows may already hold are applied with it
    high: tuple | None = None

    @property
    def read_through(self) -> tuple[str, int]:
        return self.high or (self.point.file, self.point.pos)


def plan_round(address, progress: SnapshotProgress, count: int) -> list[Chunk]:
    """The next `count` chunks (fewer at the end), in key order table after
    table: each bound is the key its `chunk_rows` rows after the last one, found
    by one index query; the last chunk of a table has no upper bound."""
    number = progress.chunks
    found: list[Chunk] = []
    with _session(address) as connection:
        with connection.cursor() as cursor:
            for entry in progress.tables.values():
                if entry.done:
                    continue
                key, after = entry.key, _key_values(entry.after)
                if not key:  # one chunk: the whole table in one read view
                    found.append(Chunk(entry.database, entry.table, key, None, None,
                                       number + len(found)))
                    continue
                chunk_rows = entry.chunk_rows
                order = ", ".join(_quote(c) for c in key)
                name = f"{_quote(entry.database)}.{_quote(entry.table)}"
                while len(found) < count:
                    where, params = _key_range(list(key), after, None)
                    cursor.execute(f"SELECT {order} FROM {name}{where} ORDER BY {order} "
                                   f"LIMIT 1 OFFSET {chunk_rows - 1}", params)
                    bound = cursor.fetchone()
                    found.append(Chunk(entry.database, entry.table, key, after,
                                       tuple(bound) if bound else None, number + len(found)))
                    if bound is None:
                        break
                    after = tuple(bound)
                if len(found) >= count:
                    break
    return found


def read_chunks(address, chunks, folder: str, names_in_lake: str = "") -> list[ChunkRead]:
    """Each chunk in a consistent snapshot of its own, at the binlog position
    MariaDB gives that view, written under `folder` (a Spark task's work).
    The position is in the lake's numbering: the server's binlog name after
    `names_in_lake` (`failover<N>~` on the Nth server after a failover),
    so a chunk sorts after the table's start, not before every change of
    the earlier servers."""
    import pyarrow as pa

    writer, done, columns_of = _ChangeWriter(folder), [], {}
    with _session(address) as connection:
        mariadb = _is_mariadb(connection)
        with connection.cursor() as cursor:
            for chunk in chunks:
                table = (chunk.database, chunk.table)
                if table not in columns_of:
                    columns_of[table] = _columns(connection, *table)
                point, watermarked = _chunk_view(cursor, chunk, mariadb, names_in_lake)
                if chunk.key:
                    pages = list(_pages(cursor, chunk.database, chunk.table, list(chunk.key),
                                        columns_of[table], chunk.after, chunk.through))
                else:
                    pages = [(names, [pa.array(column, pa.string()) for column in columns])
                             for names, columns in _chunks(connection, chunk.database,
                                                           chunk.table, [], CHUNK_ROWS)]
                connection.commit()
                high = None
                if watermarked:  # the high watermark: the binlog's end now
                    file, pos = _binlog_end(cursor)
                    high = (names_in_lake + file, pos)
                names = [c for c, _ in columns_of[table]]
                columns = [pa.chunked_array([page[i] for _, page in pages], pa.string())
                           .combine_chunks() for i in range(len(names))]
                n = writer.write(chunk.database, chunk.table, names, columns, point,
                                 name_sequence(point.file), 0, sub=chunk.number + 1)
                done.append(ChunkRead(chunk, n, point, high))
    return done


def _chunk_view(cursor, chunk: Chunk, mariadb: bool, names_in_lake: str):
    """Open a chunk's read view; (its point in the lake's numbering, and
    whether it is placed by watermarks: the high one is read after it).
    MariaDB names the view's own binlog position. MySQL names none: a keyed chunk sorts at
    the low watermark, the binlog's end read before the view opened (the
    changes after it are applied over its rows, by key: those the view
    already holds, again, to the same state), and is taken once the lake
    holds the binlog to the high watermark, read after (DBLog's, Flink
    CDC's); a keyless one, whose copies no key matches, is read at an exact
    point under a moment's global read lock, as a MySQL snapshot starts."""
    if mariadb:
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cursor.execute("SHOW STATUS LIKE 'binlog_snapshot_%'")
        status = {name.lower(): value for name, value in cursor.fetchall()}
        file, pos, watermarked = (status["binlog_snapshot_file"],
                                  status["binlog_snapshot_position"], False)
    elif chunk.key:
        (file, pos), watermarked = _binlog_end(cursor), True
        cursor.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    else:
        point = _open_read_view(cursor, mariadb=False)
        file, pos, watermarked = point.file, point.pos, False
    return SnapshotPoint(names_in_lake + file, int(pos), None, utc_now()), watermarked


def _binlog_end(cursor) -> tuple[str, int]:
    """Where the server's binlog ends now (SHOW BINARY LOG STATUS, MySQL
    8.4 on; SHOW MASTER STATUS before it and on MariaDB)."""
    try:
        cursor.execute("SHOW BINARY LOG STATUS")
    except Exception:  # noqa: BLE001 - before 8.4, and MariaDB
        cursor.execute("SHOW MASTER STATUS")
    found = cursor.fetchone()
    if not found:
        raise SchemaSourceError("the server writes no binary log (log_bin is OFF)")
    return found[0], int(found[1])


def read_round(spark, address, chunks: list[Chunk], folder: str,
               names_in_lake: str = "") -> list[ChunkRead]:
    """The chunks read in parallel, each on its own connection: by Spark
    tasks, one per task; without `spark`, by threads of this process (the
    server formats the pages, pyarrow parses and writes them outside the
    GIL). Positions as read_chunks gives them."""
    def read(part) -> list[ChunkRead]:
        return read_chunks(address, list(part), folder, names_in_lake)
    if len(chunks) <= 1:
        return read(chunks)
    if spark is None:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(len(chunks)) as pool:
            return [done for reads in pool.map(lambda chunk: read([chunk]), chunks)
                    for done in reads]
    tasks = spark.sparkContext.parallelize(chunks, len(chunks))
    return tasks.mapPartitions(read).collect()


def progressed(progress: SnapshotProgress, reads: list[ChunkRead]) -> SnapshotProgress:
    """The progress once these chunks (a round, in key order) are in the lake
    (binlake.spark.state.progress: a table read anew starts at its first)."""
    return progress.chunks_read([
        (f"{read.chunk.database}.{read.chunk.table}", _key_json(read.chunk.through), read.rows,
         ChunkPlace(read.point.file, read.point.pos, read.point.time, read.chunk.number))
         for read in reads])


def _key_json(values) -> list | None:
    """Key values as the manifest keeps them: text, bytes as {"base64": ...}."""
    if values is None:
        return None
    return [{"base64": base64.b64encode(v).decode("ascii")} if isinstance(v, bytes) else v
            for v in values]


def _key_values(data) -> tuple | None:
    if data is None:
        return None
    return tuple(base64.b64decode(v["base64"]) if isinstance(v, dict) else v for v in data)
