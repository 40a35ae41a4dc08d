#!/usr/bin/env python3
"""Write the sample binlogs shipped in src/binlake/sample_data/ (see its README).

Runs a private MariaDB (binlake.testing.mariadb), the edge-value workload of
binlake.testing.workload (every column type, multi-row inserts, updates that
change primary keys, deletes, a multi-statement and a rolled-back
transaction, a table without a primary key), then two small follow-up
phases, rotating the binlog after each phase. The server's final
`SELECT *` is saved next to the files (expected_state.json.gz), so the sample
can check itself: `binlake pipeline --sample --out out/` must rebuild it.

    .venv/bin/python scripts/make_sample_data.py [--out DIR]
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import decimal
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

from binlake.testing.mariadb import MariaDBServer
from binlake.testing.workload import DATABASE, SESSION_SETUP, expected_final_state, run_basic_workload

OUT = Path(__file__).resolve().parent.parent / "src" / "binlake" / "sample_data"
SERVER_ID = 7

#: After the basic workload: more changes, each phase in a file of its own.
PHASES = [
    [
        "UPDATE probe SET amount = amount * 2 WHERE id <= 2",
        "UPDATE ints SET id = 9000 WHERE id = 1001",  # a primary key change
        "DELETE FROM strings WHERE id = 40",
        "START TRANSACTION",
        "INSERT INTO probe (id, label, amount) VALUES (100, 'in txn', 1.25), (101, 'also', -3.50)",
        "UPDATE no_pk SET c = -1 WHERE b = 'dup' LIMIT 1",
        "DELETE FROM ints WHERE id BETWEEN 1300 AND 1310",
        "COMMIT",
    ],
    [
        "UPDATE probe SET label = CONCAT(label, '!') WHERE id >= 100",
        "INSERT INTO no_pk (a, b, c) VALUES (7, 'late', 0.5), (7, 'late', 0.5)",
        "DELETE FROM probe WHERE id = 101",
    ],
]


def jsonable(value):
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time, dt.timedelta)):
        return str(value)
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="binlake-sample-") as work:
        # Compressed events (MariaDB log_bin_compress) keep the 70 kB LOB rows small;
        # row annotations would repeat them uncompressed, as SQL text.
        with MariaDBServer(work, server_id=SERVER_ID, log_bin_compress=True,
                           extra={"binlog_annotate_row_events": "OFF"}) as server:
            run_basic_workload(server, DATABASE)
            connection = server.connect(DATABASE)
            with connection.cursor() as cursor:
                for statement in SESSION_SETUP:
                    cursor.execute(statement)
                for phase in PHASES:
                    server.flush_logs()
                    for statement in phase:
                        cursor.execute(statement)
            connection.close()
            expected = expected_final_state(server, DATABASE)
            version = server.query("SELECT VERSION()")[0][0]
            server.flush_logs()
        files = server.binlog_files()[:-1]  # the last one is empty: opened by the final flush
        args.out.mkdir(parents=True, exist_ok=True)
        for old in args.out.glob("binlog.*"):
            old.unlink()
        for path in files:
            shutil.copyfile(path, args.out / path.name)
    state = {table: [{k: jsonable(v) for k, v in row.items()} for row in rows]
             for table, rows in expected.items()}
    with gzip.open(args.out / "expected_state.json.gz", "wt") as f:
        json.dump({"server": version, "database": DATABASE, "tables": state}, f, indent=1,
                  sort_keys=True)
    total = sum((args.out / p.name).stat().st_size for p in files)
    print(f"{len(files)} files, {total} bytes, from {version}, in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
