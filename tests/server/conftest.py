"""Fixtures: a private MariaDB per binlog configuration, with the basic workload run on it.

Strategy: one module-scoped, parametrized fixture starts the server, runs the workload,
reads back the truth (``SELECT *`` and information_schema), stops the server and hands
the tests the closed binlog files. pytest groups the tests by configuration, so only
one server runs at a time and each configuration costs a few seconds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from binlake.testing.mariadb import MariaDBServer, ensure_mariadb_installed
from binlake.testing.workload import DATABASE, expected_final_state, run_basic_workload

SERVER_ID = 7  # not the default 1, so a decoder that invents server ids is caught


@dataclass(frozen=True)
class BinlogConfig:
    row_metadata: str = "FULL"
    row_image: str = "FULL"
    compress: bool = False

    @property
    def id(self) -> str:
        return f"meta-{self.row_metadata}-image-{self.row_image}" + ("-compressed" if self.compress else "")

    @property
    def knows_names(self) -> bool:
        """Column names and ENUM/SET member names are logged with FULL metadata only."""
        return self.row_metadata == "FULL"

    @property
    def knows_types(self) -> bool:
        """Signedness and charsets are logged with MINIMAL and FULL metadata."""
        return self.row_metadata in ("MINIMAL", "FULL")


CONFIGS = [
    BinlogConfig(row_metadata="NO_LOG"),
    BinlogConfig(row_metadata="MINIMAL"),
    BinlogConfig(row_metadata="FULL"),
    BinlogConfig(row_image="MINIMAL"),
    BinlogConfig(row_image="NOBLOB"),
    BinlogConfig(compress=True),
]


@dataclass(frozen=True)
class Column:
    table: str
    name: str
    position: int  # 1-based, as in information_schema and mysqlbinlog's @N
    data_type: str  # information_schema DATA_TYPE: 'int', 'varchar', 'inet6', ...
    column_type: str  # full type: 'int(10) unsigned', "enum('a','b')", ...
    charset: str | None


@dataclass
class BenchRun:
    """What one server configuration wrote, and what the server says the data is."""

    config: BinlogConfig
    files: list[str]
    expected: dict[str, list[dict[str, Any]]]  # expected_final_state(): pymysql values
    columns: dict[str, list[Column]]
    server_id: int
    started: float  # epoch seconds around the workload
    finished: float


@pytest.fixture(scope="session")
def mariadbd() -> str:
    try:
        return ensure_mariadb_installed()
    except RuntimeError as error:
        pytest.skip(f"MariaDB server unavailable, server tests skipped: {error}")


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda config: config.id)
def bench_run(request, mariadbd, tmp_path_factory) -> BenchRun:
    config: BinlogConfig = request.param
    # Compress every event, not only those over the default 256 bytes.
    extra = {"log_bin_compress_min_len": 10} if config.compress else {}
    workdir = tmp_path_factory.mktemp(config.id)
    with MariaDBServer(
        workdir, server_id=SERVER_ID, binlog_row_metadata=config.row_metadata,
        binlog_row_image=config.row_image, log_bin_compress=config.compress, extra=extra,
    ) as server:
        started = time.time()
        run_basic_workload(server, DATABASE)
        finished = time.time()
        expected = expected_final_state(server, DATABASE)
        columns = _columns(server, DATABASE)
        server.flush_logs()
    # The server has stopped: every file is complete and closed.
    files = [str(path) for path in server.binlog_files()]
    return BenchRun(config, files, expected, columns, SERVER_ID, started, finished)


def _columns(server, database: str) -> dict[str, list[Column]]:
    rows = server.query(
        """SELECT TABLE_NAME, COLUMN_NAME, ORDINAL_POSITION, DATA_TYPE, COLUMN_TYPE, CHARACTER_SET_NAME
           FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s
           ORDER BY TABLE_NAME, ORDINAL_POSITION""", (database,))
    columns: dict[str, list[Column]] = {}
    for table, name, position, data_type, column_type, charset in rows:
        columns.setdefault(table, []).append(Column(table, name, int(position), data_type, column_type, charset))
    return columns
