"""`binlake maintain`: compact and vacuum the Delta tables of a pipeline's
output (see binlake.spark.run.pipeline.maintain_lake), and remove the
follower's copies of the server's binlogs the lake needs no more
(binlake.spark.state.copies, `--keep-binlogs`), without Spark."""

from __future__ import annotations

from binlake.cli.status import ExitStatus, os_error_text


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the pipeline's output directory")
    parser.add_argument("--retention-hours", type=int, default=None, metavar="H",
                        help="keep the files of versions of the last H hours readable by "
                             "time travel (default: 168, Delta's week); delete the rest")
    parser.add_argument("--keep-binlogs", default=None, metavar="DURATION",
                        help="remove the follower's copies of the server's binlogs (under "
                             "DIR/_binlake/binlogs/) closed by the server, read whole into "
                             "every view and table and older than this (30m, 12h, 1d; default "
                             "1d; 0: every one read); never the newest")


def run(args, out, err) -> int:
    from binlake.spark.run.pipeline import maintain_lake
    from binlake.spark.state.copies import DEFAULT_KEEP, parse_duration, remove_old_copies
    if args.retention_hours is not None and args.retention_hours < 0:
        err.write("binlake maintain: --retention-hours is a number of hours, 0 or more\n")
        return ExitStatus.USAGE
    try:
        keep = parse_duration(args.keep_binlogs or DEFAULT_KEEP)
    except ValueError as exc:
        err.write(f"binlake maintain: {exc}\n")
        return ExitStatus.USAGE
    try:
        done = maintain_lake(args.out, retention_hours=args.retention_hours)
        removed = remove_old_copies(args.out, keep)
    except ValueError as exc:
        err.write(f"binlake maintain: {exc}\n")
        return ExitStatus.ERROR
    except OSError as exc:
        err.write(f"binlake maintain: {os_error_text(exc)}\n")
        return ExitStatus.ERROR
    for table, work in done.items():
        out.write(f"{table}: {work['compacted']} files compacted, "
                  f"{work['vacuumed']} files deleted\n")
    if removed:
        out.write(f"binlog copies: {len(removed)} removed ({removed[0]}"
                  + (f" to {removed[-1]})\n" if len(removed) > 1 else ")\n"))
    return ExitStatus.OK
