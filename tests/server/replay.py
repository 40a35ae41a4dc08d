"""Helpers of the server tests that rebuild tables from binlake's output:
run the CLI in-process, pipe SQL into a private server, read its tables back;
and run a call on either core."""
from __future__ import annotations

import io
import os
import subprocess

from binlake import core
from binlake.cli.dispatch import main
from binlake.testing.mariadb import MariaDBServer
from binlake.testing.workload import DATABASE


def run_binlake(*args) -> tuple[int, bytes, str]:
    """`binlake ARGS` in this process: (status, stdout bytes, stderr)."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.StringIO()
    old_tz = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    import time
    time.tzset()
    try:
        status = main(list(args), out=out, err=err)
    finally:
        if old_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old_tz
        time.tzset()
    out.flush()
    return status, raw.getvalue(), err.getvalue()


def snapshot(server: MariaDBServer, database: str = DATABASE) -> dict:
    """{table: sorted rows}: every value as the server returns it (HEX for strings, so
    that bytes are compared exactly)."""
    connection = server.connect()
    try:
        with connection.cursor() as c:
            c.execute("SET SESSION time_zone='+00:00'")
            c.execute("SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS "
                      "WHERE TABLE_SCHEMA=%s ORDER BY TABLE_NAME, ORDINAL_POSITION", (database,))
            columns: dict = {}
            for table, column, data_type in c.fetchall():
                expression = f"`{column}`"
                if data_type in ("char", "varchar", "text", "tinytext", "mediumtext", "longtext",
                                 "blob", "tinyblob", "mediumblob", "longblob", "binary",
                                 "varbinary", "geometry", "point", "json", "enum", "set"):
                    expression = f"HEX(`{column}`)"
                columns.setdefault(table, []).append(expression)
            state = {}
            for table, expressions in columns.items():
                c.execute(f"SELECT {', '.join(expressions)} FROM `{database}`.`{table}`")
                state[table] = sorted(c.fetchall(), key=repr)
            return state
    finally:
        connection.close()


def replay(server: MariaDBServer, sql: bytes, *options: str) -> None:
    result = subprocess.run(["mariadb", f"--defaults-file={server.defaults_file}", "--binary-mode",
                             *options], input=sql, capture_output=True)
    if result.returncode != 0:
        raise AssertionError(f"replay failed: {result.stderr.decode(errors='replace')[-2000:]}")


#: The cores a value test runs on: both where the native one is built.
CORES = [False, True] if core.available() else [True]


def with_core(pure: bool, call):
    """`call()` on the pure-Python core (`pure`) or the native one."""
    core.use_pure(pure)
    try:
        return call()
    finally:
        core.use_pure(False)


def mariadb_binlog(*args: str) -> bytes:
    """mariadb-binlog's stdout for `args` (TZ=UTC, no option files); it must succeed."""
    result = subprocess.run(["mariadb-binlog", "--no-defaults", *args], capture_output=True,
                            env={**os.environ, "TZ": "UTC"})
    assert result.returncode == 0, result.stderr
    return result.stdout
