"""The same python-mysql-replication-shaped code (rows events, every value
touched) reading live row changes through binlake's drop-in and through
python-mysql-replication itself, same private MariaDB, same run.

    python bench/bench_compat.py --real-python /tmp/pmrvenv/bin/python [--rows 400000]

(`--real-python`: an interpreter with mysql-replication installed.)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

READER = r'''
import sys, time
if sys.argv[2] == "dropin":
    import binlake.compat
    binlake.compat.install_as_pymysqlreplication()
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent
start, rows = time.perf_counter(), 0
stream = BinLogStreamReader({"host": "127.0.0.1", "port": int(sys.argv[1]), "user": "root",
                             "passwd": ""}, server_id=78, resume_stream=True,
                            log_file="binlog.000001", log_pos=4,
                            only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent])
for event in stream:
    for row in event.rows:
        for value in (row.get("values") or row["after_values"]).values():
            pass
        rows += 1
stream.close()
print(rows, time.perf_counter() - start)
'''


def _load(server, rows: int) -> None:
    server.execute("CREATE DATABASE d")
    server.execute("CREATE TABLE d.t (id INT PRIMARY KEY, a VARCHAR(40), b DECIMAL(10,2), "
                   "c DATETIME, d DOUBLE)")
    server.execute("SET SESSION max_recursive_iterations = %s", (rows + 1,))
    server.execute("INSERT INTO d.t WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                   "FROM r WHERE i < %s) SELECT i, CONCAT('row', i), i / 7, "
                   "'2020-01-01 00:00:00' + INTERVAL i SECOND, i * 1.5 FROM r", (rows,))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real-python", required=True)
    parser.add_argument("--rows", type=int, default=400_000)
    args = parser.parse_args()
    from binlake.testing.mariadb import MariaDBServer
    with tempfile.TemporaryDirectory(prefix="bench-compat-") as work:
        with MariaDBServer(Path(work)) as server:
            _load(server, args.rows)
            results = {}
            for name, python in (("python-mysql-replication", args.real_python),
                                 ("binlake drop-in", sys.executable)):
                mode = "dropin" if python == sys.executable else "real"
                out = subprocess.run([python, "-c", READER, str(server.port), mode],
                                     capture_output=True, text=True, check=True).stdout.split()
                rows, seconds = int(out[0]), float(out[1])
                results[name] = rows / seconds
                print(f"{name:26} {rows} rows in {seconds:.2f} s: {rows / seconds:,.0f} rows/s")
    ratio = results["binlake drop-in"] / results["python-mysql-replication"]
    print(f"drop-in / python-mysql-replication: {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
