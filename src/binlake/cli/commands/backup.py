"""`binlake dump -R --raw`: keep byte-exact copies of a live server's binlogs
(binlake.live.backup), as `mysqlbinlog -R --raw [--stop-never]` does, and resume
where an earlier run stopped."""

from __future__ import annotations

import os

from binlake.cli.status import ExitStatus
from binlake.errors import BinlogError
from binlake.cli.commands.common import report
from binlake.cli.commands.selection import live_source
from binlake.spark.read.ranges import name_sequence


#: Options that choose or change events, which a copy of the server's files
#: cannot honour (it holds every event, as the server wrote it): refused.
NOT_WITH_RAW = {
    "stop_position": "--stop-position", "start_datetime": "--start-datetime",
    "stop_datetime": "--stop-datetime", "server_ids": "--server-id",
    "ignore_server_ids": "--ignore-server-ids", "do_domain_ids": "--do-domain-ids",
    "ignore_domain_ids": "--ignore-domain-ids", "include_gtids": "--include-gtids",
    "offset": "--offset", "start_gtids": "--start-gtid", "stop_gtids": "--stop-gtid",
    "database": "--database", "table": "--table", "rewrite_db": "--rewrite-db",
    "exclude_gtids": "--exclude-gtids",
}


def run_raw(args, selection, text_filters, err) -> int:
    from binlake.live.backup import BackupManifest, copy_all, lock, resume_point
    if len(args.files) != 1:
        err.write("binlake dump: --raw needs the name of the server's binlog to start from\n")
        return ExitStatus.USAGE
    given = {**vars(selection.options), **text_filters}
    refused = [option for field, option in NOT_WITH_RAW.items() if given.get(field)]
    if given.get("start_position") not in (None, 4):
        # A copy is the server's file from its first byte: the next run asks
        # the server for the copy's size, which must fall between events.
        refused.insert(0, "--start-position")
    if refused:
        err.write(f"binlake dump: --raw copies the server's binlogs whole: {', '.join(refused)} "
                  "cannot apply to a copy (read the copies with them instead)\n")
        return ExitStatus.USAGE
    prefix = args.result_file or ""
    if prefix.endswith(os.sep):
        os.makedirs(prefix, exist_ok=True)
    try:
        source = live_source(args, err, selection)
    except ValueError as exc:
        err.write(f"binlake dump: {exc}\n")
        return ExitStatus.USAGE
    try:
        guard = lock(prefix)
    except (RuntimeError, OSError) as exc:
        err.write(f"binlake dump: {exc}\n")
        return ExitStatus.ERROR
    try:
        manifest = BackupManifest(prefix)
        options = source.options
        name, position, keep = resume_point(prefix, options.file, options.position, manifest,
                                            name_sequence)
        options.file, options.position = name, position
        copy_all(source, prefix, manifest, name, position, keep)
    except BinlogError as exc:
        report(exc, err)
        return ExitStatus.ERROR
    except ValueError as exc:  # another server's backup
        err.write(f"binlake dump: {exc}\n")
        return ExitStatus.ERROR
    except OSError as exc:  # a full disk, a vanished directory: one line, the copy stays whole
        err.write(f"binlake dump: {exc}\n")
        return ExitStatus.ERROR
    finally:
        source.close()
        guard.close()
    return ExitStatus.OK
