"""`binlake pipeline`: binlogs into Parquet events and changes and Delta tables with Spark
(see binlake.spark.run.pipeline)."""

from __future__ import annotations

import os
import re

from binlake.cli.status import ExitStatus, os_error_text
from binlake.errors import BinlogError
from binlake.spark.read.ranges import READ_IN
from binlake.cli.commands.common import (add_replica_arguments, add_schema_arguments, seed_schema,
                                         server_address)


#: How a task's BinlogError reads inside the trace Spark hands back.
_TASK_ERROR = re.compile(r"^binlake\.errors\.\w+: (.+)$", re.MULTILINE)
#: A JVM exception line of that trace (the last one is the root cause).
_JAVA_CAUSE = re.compile(r"^(?:Caused by: )?([a-z]\w*(?:\.\w+)+(?:Exception|Error)(?:: .*)?)$",
                         re.MULTILINE)


def failure_line(exc: BaseException) -> str:
    """One line for a failure of a Spark job: a task's BinlogError as
    `FILE: offset N: reason`, else the JVM's root cause, else the first
    line of what Spark said."""
    text = str(exc)
    found = _TASK_ERROR.findall(text)
    if found:
        return found[-1].strip()
    causes = _JAVA_CAUSE.findall(text)
    if causes:  # the JVM's own words on what went wrong (a full disk, ...)
        return causes[-1].strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def one_line(exc: Exception) -> str:
    """A run's failure in one line: binlake's own words where they are its
    (read in the driver; a task's come wrapped: failure_line), else Spark's."""
    if isinstance(exc, BinlogError):
        return str(exc)
    if isinstance(exc, OSError):
        return os_error_text(exc)
    if isinstance(exc, (ValueError, LookupError, RuntimeError)) \
            and type(exc).__module__.split(".")[0] not in ("pyspark", "py4j"):
        return str(exc)
    return failure_line(exc)


def _sample_temporals(args, inputs: list) -> str | None:
    """A new lake of the bundled sample keeps its temporals as text: the
    sample holds MySQL's zero dates, which a typed lake refuses (as
    Connector/J does by default) rather than hold a NULL in their place. Any
    other lake, and one that has chosen already, is left to its choice."""
    from binlake.spark.state.store import load_manifest
    if inputs != [sample_dir()] or args.remote or load_manifest(args.out).temporals:
        return None
    return "text"


def sample_dir() -> str:
    """The small binlogs shipped with binlake (src/binlake/sample_data)."""
    from importlib.resources import files
    return os.fspath(files("binlake") / "sample_data")


def add_arguments(parser) -> None:
    parser.add_argument("inputs", nargs="*", metavar="INPUT",
                        help="binlog files, directories or glob patterns (none: the sample "
                             "data); with -R the server's binlog a new lake starts from")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output directory: events/, changes/, tables/ and a manifest")
    parser.add_argument("--sample", action="store_true",
                        help="read the sample binlogs shipped with binlake")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master (default: local[*], or spark-submit's)")
    parser.add_argument("--as-of", metavar="WHEN",
                        help="build every table as of FILE:POS or a date-time (UTC unless given) "
                             "in the folder --as-of-out names; the lake's tables stay as they are")
    parser.add_argument("--as-of-out", metavar="DIR",
                        help="where --as-of's tables go (DIR/tables/DB.TABLE, Delta tables), "
                             "outside the lake")
    parser.add_argument("--split-bytes", type=int, default=None, metavar="N",
                        help="cut files larger than N bytes at transaction boundaries (default 32 MiB)")
    parser.add_argument("--partitions", type=int, default=None, metavar="N",
                        help="read in at least N partitions where the files allow "
                             "(default: Spark's default parallelism)")
    parser.add_argument("--read-in", choices=READ_IN, default="auto",
                        help="where new binlog ranges are decoded: in this process (the "
                             "driver), or by the binlog data source in Spark's executors; "
                             "auto (default): the driver with a local master or when the new "
                             "ranges are small, the executors of a cluster otherwise")
    add_schema_arguments(parser)
    parser.add_argument("--snapshot-from", action="store_true",
                        help="start the lake from a consistent snapshot of the server's tables "
                             "(connecting as --schema-from does): every selected table read "
                             "under one read view, with the binlog position and GTID state it "
                             "is at; the binlogs are read from that position on. Only for a new "
                             "output directory. With -R (MariaDB): lock-free, the server "
                             "followed: a keyed table is read in chunks by key, each in a short "
                             "read view of its own, by Spark tasks in parallel, between "
                             "micro-batches; a restart resumes at the first chunk not in the lake")
    parser.add_argument("--chunk-rows", type=int, default=None, metavar="N",
                        help="with -R --snapshot-from: the rows of a chunk of the lock-free "
                             "snapshot (default 50,000; at most a fiftieth of the table)")
    parser.add_argument("--tables", metavar="PATTERNS",
                        help="only these tables: comma-separated db.table patterns (db.*, *.orders)")
    parser.add_argument("--temporals", choices=("typed", "text"), default=None,
                        help="DATE, DATETIME and TIMESTAMP columns in tables/: typed (Spark's "
                             "date and timestamp types; a value they cannot hold, such as a "
                             "zero date, refuses the run in one line) or text (MySQL's exact "
                             "text, every value held). Chosen when the lake starts (default: "
                             "typed); a later run that names the other rebuilds the tables")
    parser.add_argument("--history", action="store_true",
                        help="also keep DIR/history/DB.TABLE for each table with a primary key: "
                             "every version of every row (SCD type 2), with the binlog "
                             "position and commit time it became current and stopped being "
                             "current; kept by every later run")
    parser.add_argument("--partition-by", metavar="DB.TABLE=COLUMN[,...]",
                        help="partition these tables by that column (an integer or DATE "
                             "column): readers filtering on it skip the other partitions' "
                             "files. Kept by later runs; a run that names another column "
                             "rewrites the table's rows once, DB.TABLE= ends the partitioning")
    parser.add_argument("--keep-versions", default=None, metavar="DURATION",
                        help="how long each table keeps its old versions readable (Delta time "
                             "travel, its change data feed): their log entries and the files "
                             "only they name (30m, 12h, 7d; default Delta's week). A follower "
                             "commits a table it changes every second or so: a shorter window "
                             "bounds what that leaves on disk. Kept by later runs")
    parser.add_argument("--rebuild", metavar="PATTERNS",
                        help="build these tables (db.table patterns, as --tables takes them) "
                             "again. Without -R: from changes/, as the lake holds them (after "
                             "a binlake upgrade, or a table damaged or changed by hand); the "
                             "other tables stay as they are. A refused run is undone whole, so "
                             "its changes are not in changes/ and this cannot pass a refusal. "
                             "With -R: read anew from the server by the lock-free snapshot "
                             "(MariaDB), taken at once by this run as --snapshot-tables asks: "
                             "their rows are the server's, the changes before skipped, the way "
                             "forward from a partial row image a run refused")
    parser.add_argument("--force-read", action="store_true",
                        help="continue past checksum mismatches and undecodable events")
    parser.add_argument("--no-verify-checksum", dest="verify_checksums", action="store_false",
                        help="do not check CRC32 checksums")
    live = parser.add_argument_group(
        "a live server (-R): its binlogs copied into DIR/_binlake/binlogs/ as `dump -R --raw` "
        "copies them, and read from there in micro-batches of whole transactions")
    live.add_argument("-R", "--read-from-remote-server", action="store_true", dest="remote",
                      help="read the server's binlogs (connecting as the mysql client), to the "
                           "end of its last, then stop")
    live.add_argument("--follow", action="store_true",
                      help="with -R: keep going: each transaction committed on the server goes "
                           "into the lake seconds later, exactly once, until SIGTERM or Ctrl-C "
                           "(which end it after the micro-batch in flight); a restart continues "
                           "where it stopped. Status in DIR/_binlake/status.json")
    live.add_argument("--snapshot-tables", metavar="PATTERNS",
                      help="read these tables (db.table patterns) anew from the server, "
                           "lock-free (MariaDB), while the lake follows it: their rows in the "
                           "lake are then the server's, with every change since. Without -R "
                           "the request is left in DIR for its running follower (or its next "
                           "start). Tables --tables newly selects are read so by themselves")
    live.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                      help="with -R: serve the follower's figures (lag, bytes behind, rows "
                           "per table, micro-batch and fsync times, snapshot progress, "
                           "reconnects, failovers, refusals) as OpenMetrics / Prometheus text "
                           "at http://HOST:PORT/metrics; 0 picks a free port (status.json's "
                           "metrics.endpoint says which). Needs binlake[metrics]")
    live.add_argument("--keep-binlogs", default=None, metavar="DURATION",
                      help="with -R: keep each copy of a server's binlog in DIR/_binlake/binlogs/ "
                           "this long (30m, 12h, 1d; default 1d) once the server closed it and "
                           "the lake has read all of it into every view and table; then it is "
                           "removed (never the newest). 0: as soon as it is read. What would "
                           "need a removed copy is refused in one line")
    live.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                      help="the address --metrics-port listens on (default 127.0.0.1: this "
                           "machine only)")
    add_replica_arguments(live)


def _schema_path(args) -> str | None:
    """--schema as given; with --schema-from, the seed (server, and --schema's
    tables) saved as a history next to the output, read by every task as --schema is."""
    if not args.schema_from:
        server_address(args)  # connection options without a use are refused
        return args.schema
    from binlake.spark.state.store import make_state_dir, save_server_seed
    make_state_dir(args.out)
    return save_server_seed(args.out, seed_schema(args))


def run(args, out, err) -> int:
    from binlake.spark.read.ranges import DEFAULT_SPLIT_BYTES
    from binlake.spark.run.binlogs import unread_bytes
    from binlake.spark.run.pipeline import run_pipeline
    from binlake.spark.run.session import LazySession, local_master, spark_session
    from binlake.spark.state.copies import parse_duration

    if args.follow and not args.remote:
        err.write("binlake pipeline: --follow follows a live server: add -R and its "
                  "connection options\n")
        return ExitStatus.USAGE
    if args.keep_binlogs is not None and not args.remote:
        err.write("binlake pipeline: --keep-binlogs bounds a follower's copies: add -R "
                  "(binlake maintain --keep-binlogs removes them between runs)\n")
        return ExitStatus.USAGE
    if args.metrics_port is not None:
        from binlake.spark.run.metrics import NEEDS_EXTRA, available
        if not args.remote:
            err.write("binlake pipeline: --metrics-port serves a follower's figures: add -R "
                      "(and --follow)\n")
            return ExitStatus.USAGE
        if not available():
            err.write(f"binlake pipeline: {NEEDS_EXTRA}\n")
            return ExitStatus.USAGE
        if not 0 <= args.metrics_port <= 65535:
            err.write(f"binlake pipeline: --metrics-port {args.metrics_port}: a port is 0 "
                      "(any free one) to 65535\n")
            return ExitStatus.USAGE
    if args.rebuild and args.as_of:
        err.write("binlake pipeline: --as-of builds every table anew in a folder of its own: "
                  "not with --rebuild\n")
        return ExitStatus.USAGE
    if args.rebuild and args.remote:
        # Read anew from the server: the follower this run starts takes the
        # request before its first micro-batch (binlake.spark.run.rebuild).
        from binlake.spark.state.store import request_snapshot
        try:
            request_snapshot(args.out, args.rebuild, "--rebuild")
        except ValueError as exc:
            err.write(f"binlake pipeline: {exc}\n")
            return ExitStatus.USAGE
    if args.snapshot_tables:
        from binlake.spark.state.store import request_snapshot
        try:
            request_snapshot(args.out, args.snapshot_tables)
        except ValueError as exc:
            err.write(f"binlake pipeline: {exc}\n")
            return ExitStatus.USAGE
        if not args.remote:
            out.write(f"requested: {args.snapshot_tables} read anew by the follower of "
                      f"{os.path.abspath(args.out)} (status.json's snapshot_tables_left says "
                      "when it is done)\n")
            return ExitStatus.OK
    inputs = args.inputs if args.inputs and not args.sample else [sample_dir()]
    temporals = args.temporals or _sample_temporals(args, inputs)

    def log(message: str) -> None:
        err.write(message + "\n")
        err.flush()

    try:
        schema = _schema_path(args)
        snapshot = server_address(args, for_snapshot=True) if args.snapshot_from else None
        keep_versions = (parse_duration(args.keep_versions, "--keep-versions")
                         if args.keep_versions else None)
    except (ValueError, OSError) as exc:
        err.write(f"binlake pipeline: {exc}\n")
        return ExitStatus.ERROR
    def start():
        # A live lake's session lives long: not tuned for a short run.
        session = spark_session(args.master, work_bytes=None if snapshot or args.as_of
                                or args.remote else unread_bytes(inputs, args.out))
        # Failures are reported here, in one line; Spark's own traces would bury it.
        session.sparkContext.setLogLevel("OFF")
        return session
    # Started where the run first needs Spark: a small increment may not.
    spark = LazySession(start, args.master or local_master())
    if args.remote:
        return _follow(args, spark, schema, out, err, log, keep_versions)
    try:
        result = run_pipeline(
            spark, inputs, args.out, as_of=args.as_of, as_of_out=args.as_of_out,
            split_bytes=args.split_bytes or DEFAULT_SPLIT_BYTES, min_partitions=args.partitions,
            schema=schema, tables=args.tables,
            reader_options={"force": args.force_read, "verify_checksums": args.verify_checksums},
            snapshot=snapshot, snapshot_chunk_rows=args.chunk_rows, read_in=args.read_in,
            temporals=temporals,
            history=args.history, partition_by=args.partition_by, rebuild=args.rebuild,
            keep_versions=keep_versions, log=log)
    except Exception as exc:  # noqa: BLE001 - whatever failed, as one line
        err.write(f"binlake pipeline: {one_line(exc)}\n")
        return ExitStatus.ERROR
    if result.segments:
        files = len({s.path for s in result.segments})
        out.write(f"read {len(result.segments)} range(s) of {files} file(s): "
                  f"{result.events} events, {result.changes} changes appended\n")
    else:
        out.write("nothing new to read\n")
    if result.tables_rebuilt:
        work = ", ".join(f"{len(tables)} {how}" for how, tables in result.table_work.items()
                         if tables) or "none changed"
        where = (f"{os.path.join(os.path.abspath(args.as_of_out), 'tables')}/"
                 if args.as_of else "tables/")
        out.write(f"{where}: {len(result.tables)} table(s), {work}"
                  + (f" as of {args.as_of}" if args.as_of else "") + "\n")
        for name, rows in sorted(result.tables.items()):
            out.write(f"  {name}: {rows} rows\n")
    out.write(f"output: {os.path.abspath(args.out)}\n")
    return ExitStatus.OK


#: Options a live lake cannot take: refused with -R in one line.
NOT_WITH_REMOTE = {"as_of": "--as-of", "sample": "--sample"}


def _follow(args, spark, schema, out, err, log, keep_versions: float | None) -> int:
    """-R [--follow]: binlake.spark.run.follow, until the server's last binlog
    ends (-R) or a stop (--follow: SIGTERM, Ctrl-C; a second one interrupts
    the micro-batch in flight, which the next start completes or discards)."""
    import signal
    from dataclasses import replace

    from binlake.cli.commands.selection import live_source
    from binlake.spark.run.follow import Follower
    from binlake.spark.state.copies import DEFAULT_KEEP, parse_duration
    refused = [option for name, option in NOT_WITH_REMOTE.items() if getattr(args, name)]
    if refused or len(args.inputs) > 1:
        err.write("binlake pipeline: -R reads one server from one binlog's name on"
                  + (f"; not with {', '.join(refused)}" if refused else "") + "\n")
        return ExitStatus.USAGE
    if args.snapshot_from and args.inputs:
        err.write("binlake pipeline: -R --snapshot-from reads the binlog from the snapshot's "
                  "position: name no binlog\n")
        return ExitStatus.USAGE
    args.files, args.short_form = args.inputs, True
    args.to_last_log, args.stop_never = True, args.follow
    try:
        keep = parse_duration(args.keep_binlogs or DEFAULT_KEEP)
        source = live_source(args, err)
        # The snapshot's connections, Spark tasks' too: the password given once.
        address = replace(server_address(args, for_schema=False),
                          password=source.options.settings.get("password"))
    except ValueError as exc:
        err.write(f"binlake pipeline: {exc}\n")
        return ExitStatus.USAGE
    terminal = err.isatty() if hasattr(err, "isatty") else False

    def show(status) -> None:
        if terminal:
            err.write("\r" + status.line() + "\033[K")
            err.flush()

    follower = Follower(spark, args.out, source, args.inputs[0] if args.inputs else None,
                        pipeline_options=dict(
                            schema=schema, tables=args.tables, temporals=args.temporals,
                            history=args.history, partition_by=args.partition_by,
                            read_in=args.read_in, keep_versions=keep_versions,
                            reader_options={"force": args.force_read,
                                            "verify_checksums": args.verify_checksums}),
                        log=lambda message: log(("\n" if terminal else "") + message),
                        on_status=show, address=address, snapshot=args.snapshot_from,
                        chunk_rows=args.chunk_rows,
                        metrics_address=None if args.metrics_port is None
                        else (args.metrics_host, args.metrics_port), keep_binlogs=keep)
    signals = []

    def stop(signum, frame) -> None:
        if signals:
            raise KeyboardInterrupt  # the second: now (the next start completes the run)
        signals.append(signum)
        follower.stop()
        log(("\n" if terminal else "") + "binlake pipeline: stopping after the micro-batch "
            "in flight")
    previous = {number: signal.signal(number, stop) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        status = follower.run()
    except KeyboardInterrupt:
        err.write("\n")
        return ExitStatus.INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - whatever failed, as one line
        err.write(f"binlake pipeline: {one_line(exc)}\n")
        return ExitStatus.ERROR
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if terminal:
            err.write("\n")
    where = f"{status.lake[0]} at {status.lake[1]}" if status.lake else "nothing"
    out.write(f"{status.changes} changes in {status.micro_batches} micro-batch(es); the lake "
              f"holds the server's binlogs to {where}\n")
    out.write(f"output: {os.path.abspath(args.out)}\n")
    return ExitStatus.OK
