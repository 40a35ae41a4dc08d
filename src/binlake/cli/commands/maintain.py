"""`binlake maintain`: compact and vacuum the Delta tables of a pipeline's
output (see binlake.spark.run.pipeline.maintain_lake), without Spark."""

from __future__ import annotations

from binlake.cli.status import ExitStatus, os_error_text


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="the pipeline's output directory")
    parser.add_argument("--retention-hours", type=int, default=None, metavar="H",
                        help="keep the files of versions of the last H hours readable by "
                             "time travel (default: 168, Delta's week); delete the rest")


def run(args, out, err) -> int:
    from binlake.spark.run.pipeline import maintain_lake
    if args.retention_hours is not None and args.retention_hours < 0:
        err.write("binlake maintain: --retention-hours is a number of hours, 0 or more\n")
        return ExitStatus.USAGE
    try:
        done = maintain_lake(args.out, retention_hours=args.retention_hours)
    except ValueError as exc:
        err.write(f"binlake maintain: {exc}\n")
        return ExitStatus.ERROR
    except OSError as exc:
        err.write(f"binlake maintain: {os_error_text(exc)}\n")
        return ExitStatus.ERROR
    for table, work in done.items():
        out.write(f"{table}: {work['compacted']} files compacted, "
                  f"{work['vacuumed']} files deleted\n")
    return ExitStatus.OK
