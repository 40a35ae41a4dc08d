"""`binlake dump -R --raw`: keep byte-exact copies of a live server's binlogs
(binlake.live.backup), as `mysqlbinlog -R --raw [--stop-never]` does, and resume
where an earlier run stopped."""

from __future__ import annotations

import os

from binlake.cli.status import ExitStatus
from binlake.errors import BinlogError
from binlake.cli.commands.common import report
from binlake.cli.commands.selection import live_source


def run_raw(args, selection, err) -> int:
    from binlake.live.backup import copy_file, lock, resume_point
    if len(args.files) != 1:
        err.write("binlake dump: --raw needs the name of the server's binlog to start from\n")
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
    later = [n for n in names if n > after]
    return later[0] if later else None
