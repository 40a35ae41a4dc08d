"""The same python-mysql-replication-shaped code (rows events, every value
touched) reading live row changes through binlake's drop-in and through
python-mysql-replication itself, and binlake.stream's own changes loop
(every value touched alike), same private MariaDB, same run.

    python bench/bench_compat.py --real-python /tmp/pmrvenv/bin/python [--rows 400000] [--repeat 3]

(`--real-python`: an interpreter with mysql-replication installed.)
Targets (issue 47): the drop-in >= 10x python-mysql-replication's rows/s,
binlake.stream >= 20x.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

#: Each script's clock starts after its imports, the libraries' dependencies
#: included: python-mysql-replication imports PyMySQL with itself; binlake
#: imports PyMySQL and its DDL parser (sqlglot) where first used, so they
#: are imported first here too, as a long-running stream has them.
STREAM = r'''
import sys, time
import binlake
import pymysql, sqlglot
start, rows = time.perf_counter(), 0
stream = binlake.stream("127.0.0.1", int(sys.argv[1]), "root", "", file="binlog.000001",
                        stop_never=False)
for change in stream.changes():
    for value in (change.after or change.before).values():
        pass
    rows += 1
print(rows, time.perf_counter() - start)
'''

READER = r'''
import sys, time
if sys.argv[2] == "dropin":
    import binlake.compat
    import sqlglot
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
    parser.add_argument("--repeat", type=int, default=1, help="measure all three this many times")
    args = parser.parse_args()
    from binlake.testing.mariadb import MariaDBServer
    with tempfile.TemporaryDirectory(prefix="bench-compat-") as work:
        with MariaDBServer(Path(work)) as server:
            _load(server, args.rows)
            runs = (("python-mysql-replication", args.real_python, READER, "real"),
                    ("binlake drop-in", sys.executable, READER, "dropin"),
                    ("binlake.stream", sys.executable, STREAM, "stream"))
            for attempt in range(args.repeat):
                if args.repeat > 1:
                    print(f"run {attempt + 1} of {args.repeat}")
                results = {}
                for name, python, code, mode in runs:
                    out = subprocess.run([python, "-c", code, str(server.port), mode],
                                         capture_output=True, text=True, check=True).stdout.split()
                    rows, seconds = int(out[0]), float(out[1])
                    results[name] = rows / seconds
                    print(f"{name:26} {rows} rows in {seconds:.2f} s: {rows / seconds:,.0f} rows/s")
                peer = results["python-mysql-replication"]
                print(f"drop-in / python-mysql-replication: {results['binlake drop-in'] / peer:.1f}x"
                      " (target 10x)")
                print(f"binlake.stream / python-mysql-replication: "
                      f"{results['binlake.stream'] / peer:.1f}x (target 20x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
