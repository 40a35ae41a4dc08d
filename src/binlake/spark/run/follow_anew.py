"""Tables the follower reads anew from the server: those its `--tables`
newly selects, and those `binlake pipeline --snapshot-tables` asks for.

Strategy: reading a table anew is recorded, not done, here: the manifest's
lock-free snapshot progress gets the table's chunks, starting at the
lake's position (binlake.spark.snapshot.snapshot.read_anew), and the
follower's snapshot rounds read them with the micro-batches. Tables
`--tables` newly selects (by what changes/ holds of the newest binlog) are
recorded at the follower's start, with changes/ then holding every binlog
for the new selection (the snapshot stands for what it held not). Requests
are files in _binlake/requests/ (binlake.spark.state.store writes, sets
aside and removes them), taken in the order they were made between
micro-batches: one that is not binlake's is set aside, one that fails (the
server restarting) is taken again after REQUEST_RETRY_SECONDS, one taken
is removed after its record is written.
"""

from __future__ import annotations

import os
import time

from binlake.spark.read.batches import TableFilter
from binlake.spark.snapshot.chunks import CHUNK_ROWS
from binlake.spark.snapshot.snapshot import read_anew
from binlake.spark.state.store import (load_manifest, read_request, remove_request, requests,
                                       save_manifest, set_aside_request)

#: A request that failed (the server restarting) is taken again after this.
REQUEST_RETRY_SECONDS = 5.0


class TablesAnew:
    """The tables read anew in the lake `out` from the server at `address`
    (None: none is), in chunks of `chunk_rows` rows; `pipeline_options` are
    the follower's run_pipeline keywords (its `tables`)."""

    def __init__(self, out: str, address, pipeline_options: dict, chunk_rows: int | None, log):
        self.out, self.address, self.log = out, address, log
        self.pipeline_options, self.chunk_rows = pipeline_options, chunk_rows
        self._requests_after = 0.0              # (monotonic) when requests are taken again

    def newly_selected(self) -> None:
        """Tables `--tables` selects now and the lake did not (by what
        changes/ holds of its newest binlog): read by the lock-free
        snapshot while the lake follows, their rows starting at the lake's
        position, instead of reading every binlog copied again for them
        (which holds none of their rows from before the lake began).
        MySQL: read again from the copies, as a batch lake's are."""
        manifest = load_manifest(self.out)
        wanted = TableFilter(self.pipeline_options.get("tables"))
        if not manifest.files or self.address is None:
            return
        newest, entry = max(manifest.files.items(), key=lambda item: item[1].file_seq)
        held = [TableFilter(",".join(h.patterns))
                for h in manifest.holds(newest, wanted.patterns) if h.end >= entry.end]
        if any(not h.patterns or (wanted.patterns and set(wanted.patterns) <= set(h.patterns))
               for h in held):
            return  # nothing newly selected

        def new(database: str, table: str) -> bool:
            return wanted(database, table) and not any(h(database, table) for h in held)
        self._record(manifest, new, "newly selected by --tables", held_for=wanted.patterns)

    def take_requests(self) -> None:
        """The requests to read tables anew (`binlake pipeline --snapshot-tables`,
        files in _binlake/requests/), taken in the order they were made."""
        paths = requests(self.out)
        if not paths or time.monotonic() < self._requests_after \
                or not load_manifest(self.out).files:
            return  # (a lake that has read nothing yet takes them once it has)
        for path in paths:
            name = os.path.basename(path)
            try:
                asked = TableFilter(read_request(path))
            except (OSError, ValueError, KeyError):
                self.log(f"warning: {path}: not a request binlake made; set aside")
                set_aside_request(path)
                continue
            wanted = TableFilter(self.pipeline_options.get("tables"))
            try:
                self._record(load_manifest(self.out),
                             lambda db, table: wanted(db, table) and asked(db, table),
                             f"asked for ({', '.join(asked.patterns)})")
            except Exception as exc:  # noqa: BLE001 - the server restarting: later
                self.log(f"warning: {name}: {str(exc).splitlines()[0]}; taken again in "
                         f"{REQUEST_RETRY_SECONDS:.0f} s")
                self._requests_after = time.monotonic() + REQUEST_RETRY_SECONDS
                return
            remove_request(path)

    def _record(self, manifest, tables, why: str, held_for=None) -> None:
        """Record in the manifest that the server's tables `tables(db, table)`
        selects are read anew, from the lake's position on (and, with
        `held_for`, that changes/ holds every binlog read so far for that
        selection: the snapshot stands for what it held not)."""
        newest = max(manifest.files.values(), key=lambda entry: entry.file_seq)
        since = [newest.file_seq, newest.end - 2]  # every change before, every chunk after
        progress, names = read_anew(self.address, manifest.chunks, tables, since,
                                    self.chunk_rows or CHUNK_ROWS)
        if held_for is not None:
            manifest = manifest.reading({name: manifest.read_for(name, entry, held_for)
                                         for name, entry in manifest.files.items()},
                                        manifest.layouts)
        save_manifest(self.out, manifest.chunked(progress))
        self.log(f"reading anew, {why}: {', '.join(names) or 'no table of the server'}")


__all__ = ["TablesAnew", "REQUEST_RETRY_SECONDS"]
