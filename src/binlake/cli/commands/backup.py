"""`binlake dump -R --raw`: keep byte-exact copies of a live server's binlogs
(binlake.live.backup), as `mysqlbinlog -R --raw [--stop-never]` does, and resume
where an earlier run stopped."""

from __future__ import annotations

import os

from binlake.cli.status import ExitStatus
from binlake.errors import BinlogError
from binlake.cli.commands.common import report
from binlake.cli.commands.selection import live_source
from binlake.spark.ranges import name_sequence


#: Options that choose or change events, which a copy of the server's files
#: cannot honour (it holds every event, as the server wrote it): refused.
NOT_WITH_RAW = {
    "stop_position": "--stop-position", "start_datetime": "--start-datetime",
    "stop_datetime": "--stop-datetime", "server_ids": "--server-id",
    "ignore_server_ids": "--ignore-server-ids", "do_domain_ids": "--do-domain-ids",
    "ignore_domain_ids": "--ignore-domain-ids", "include_gtids": "--include-gtids",
    "offset": "--offset", "start_gtids": "--start-gtid", "stop_gtids": "--stop-gtid",
    "database": "--database", "table": "--table", "rewrite_db": "--rewrite-db",
}


def run_raw(args, selection, text_filters, err) -> int:
    from binlake.live.backup import copy_file, lock, resume_point
    if len(args.files) != 1:
        err.write("binlake dump: --raw needs the name of the server's binlog to start from\n")
        return ExitStatus.USAGE
    given = {**vars(selection.options), **text_filters}
    refused = [option for field, option in NOT_WITH_RAW.items() if given.get(field)]
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
        options = source.options
        name, position, keep = resume_point(prefix, options.file, options.position,
                                            lambda after: _next_binlog(source, after))
        options.file, options.position = name, position
        for live_file in source:
            resumed = live_file.name == name
            copy_file(live_file, prefix, keep if resumed else 0, position if resumed else 4)
            name = None
    except BinlogError as exc:
        report(exc, err)
        return ExitStatus.ERROR
    except OSError as exc:  # a full disk, a vanished directory: one line, the copy stays whole
        err.write(f"binlake dump: {exc}\n")
        return ExitStatus.ERROR
    finally:
        source.close()
        guard.close()
    return ExitStatus.OK


def _next_binlog(source, after: str):
    """The server's binlog after `after` (SHOW BINARY LOGS), or None."""
    from binlake.live.protocol import ReplicaConnection
    connection = ReplicaConnection(source.options.settings, server_id=0, heartbeat=None,
                                   read_timeout=30)
    try:
        connection.connect()
        names = [str(row[0]) for row in connection.query("SHOW BINARY LOGS")]
    finally:
        connection.close()
    return following(names, after)


def following(names: list[str], after: str) -> str | None:
    """The binlog after `after` among the server's `names` (oldest first):
    the next in that list, else the first numbered after it (names compare
    by number: .999999 comes before .1000000), else None."""
    if after in names:
        index = names.index(after)
        return names[index + 1] if index + 1 < len(names) else None
    number = name_sequence(after) or -1
    later = [name for name in names if (name_sequence(name) or -1) > number]
    return later[0] if later else None
