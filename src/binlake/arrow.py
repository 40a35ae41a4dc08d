"""Row changes of binlog files as Arrow record batches, for pyarrow, DuckDB, Polars...

    import binlake
    reader = binlake.arrow_changes(["binlog.000001", "binlog.000002"], tables="shop.*")
    table = reader.read_all()          # or: for batch in reader: ...

Strategy: the columns are exactly those of the Spark `changes` view
(docs/spark.md, `binlake.spark.read.batches.CHANGES`), one row per row change,
with the before/after images as map<string, string> of exact texts. The
batches are made by the same code as the Spark view's (`change_batches`),
so the two cannot drift apart: with the native core a native loop reads
each file and turns its row images into Arrow buffers in Rust, on worker
threads; without it (BINLAKE_PURE=1) the pure-Python reference builds the
same batches, more slowly.

pyarrow is imported when `arrow_changes` is called, so binlake imports without it.
"""

from __future__ import annotations


def arrow_changes(paths, **options):
    """A `pyarrow.RecordBatchReader` over the row changes of `paths` (files,
    directories, glob patterns; read in server order, each whole), or of a
    live server (`binlake.stream(...)`, see `_live_batches`).

    Options (as the Spark source takes them): `tables` ("db.table" fnmatch
    patterns, comma-separated), `schema` (the seed of the schema history
    that is followed through the files' DDL: CREATE TABLE statements, a file
    of them or of a saved history, or a `binlake.schema.history.Schema`), `force`,
    `verify_checksums`.
    """
    import pyarrow as pa

    from binlake.schema.history import Schema
    from binlake.spark.read.batches import CHANGES, change_batches, load_schema_option
    from binlake.spark.read.ranges import Split, expand_inputs, number_files

    unknown = set(options) - {"tables", "schema", "force", "verify_checksums"}
    if unknown:
        raise TypeError(f"arrow_changes: unknown options {', '.join(sorted(unknown))}")
    from binlake.live.source import LiveStream
    if isinstance(paths, LiveStream):
        return pa.RecordBatchReader.from_batches(CHANGES, _live_batches(paths, options))
    splits = [Split(path, seq) for path, seq in number_files(expand_inputs(paths))]
    # One history, followed through the files in order.
    options = {**options, "schema": load_schema_option(options) or Schema()}

    def batches():
        for split in splits:
            yield from change_batches(split, options)

    return pa.RecordBatchReader.from_batches(CHANGES, batches())


def _live_batches(stream, options: dict):
    """The batches of a live server (`binlake.stream(...)`): each binlog is
    read in ranges that end where the server has nothing more to send after
    a commit, so the rows of a transaction come out soon after it committed,
    whole. A row's `file` and `commit_pos` are its transaction's resume
    token (`binlake.stream(resume=f"{file}:{commit_pos}")` goes on after it)."""
    from binlake.schema.history import Schema
    from binlake.spark.read.batches import change_batches, load_schema_option
    from binlake.spark.read.ranges import Split, name_sequence
    schema = stream.reader_options.get("schema")
    options = {**options, "schema": (schema if isinstance(schema, Schema)
                                     else load_schema_option(options) or Schema())}
    for seq, live_file in enumerate(stream.source):
        live_file.split_on_idle = True
        split = Split(live_file.name, name_sequence(live_file.name) or seq)
        while True:
            yield from change_batches(split, options, stream=live_file)
            if live_file.finished:
                break
            live_file.reopen()
