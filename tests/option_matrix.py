"""The option matrix the differential tests run (tests/cli/test_option_matrix.py
on the corpus, tests/server/test_dba_vs_mariadb_binlog.py on the server's
binlogs): mariadb-binlog's output options and filters, alone and in the
pairs users combine, with the facts of a file their placeholders name."""
from __future__ import annotations

from binlake.read.events import TableMapEvent
from binlake.read.reader import BinlogReader

OUTPUTS = [[], ["-v"], ["-vv"], ["-s"], ["-H"], ["--base64-output=decode-rows", "-v"],
           ["--print-table-metadata"], ["--skip-print-row-event-positions"],
           ["--print-row-count=0", "-v"], ["--skip-annotate-row-events", "-v"],
           ["-s", "--print-row-count"], ["-vvv", "--skip-gtid-strict-mode"]]
FILTERS = [["--start-position={start}"], ["--stop-position={middle}"], ["-d", "{database}"],
           ["-T", "{table}"], ["--server-id={server_id}"], ["--ignore-server-ids={server_id}"],
           ["--offset=3"], ["--offset=2", "--start-position={start}"], ["-d", "{database}", "-s"]]
MATRIX = ([o for o in OUTPUTS]
          + [f for f in FILTERS]
          + [v + f for v in (["-v"], ["-vv"]) for f in FILTERS]
          + [["-H", "-d", "{database}"], ["--print-table-metadata", "-v", "-T", "{table}"],
             ["--flashback"], ["--flashback", "-v"], ["--flashback", "-vv", "--start-position={start}"]])


def facts(path) -> dict | None:
    """Positions and names the filters of this file use; None: nothing to select."""
    positions, database, table, server_id = [], None, None, None
    try:
        for event in BinlogReader([str(path)], schema=False):
            positions.append(event.header.pos)
            server_id = server_id or event.header.server_id
            if isinstance(event, TableMapEvent) and database is None:
                database, table = event.database, event.table
    except Exception:  # noqa: BLE001 - a file read in part still has its positions
        pass
    if len(positions) < 5:
        return None
    return {"start": positions[3], "middle": positions[len(positions) // 2],
            "database": database or "test", "table": table or "t1", "server_id": server_id or 1}


