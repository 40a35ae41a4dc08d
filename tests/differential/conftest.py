"""Fixtures of the differential tests: binlogs a private MariaDB server writes.

Strategy: one server per binlog configuration that changes what row images
and table maps look like (metadata NO_LOG / FULL, MINIMAL images,
compressed rows events), the shared edge-value workload run on it, and the
closed binlog files handed to the test. Each configuration's server runs
once per test run, whichever modules ask for its files (they only read
them). Only `server`-marked tests use it.
"""

from __future__ import annotations

import pytest

SERVER_CONFIGS = {
    "meta-full": {},
    "meta-nolog": {"binlog_row_metadata": "NO_LOG"},
    "image-minimal": {"binlog_row_image": "MINIMAL"},
    "compressed": {"log_bin_compress": True, "extra": {"log_bin_compress_min_len": 10}},
}


@pytest.fixture(scope="session")
def _server_binlogs_written() -> dict[str, list[str]]:
    """The closed binlog files of each configuration run so far."""
    return {}


@pytest.fixture(scope="module", params=list(SERVER_CONFIGS))
def server_binlogs(request, tmp_path_factory, _server_binlogs_written) -> list[str]:
    if request.param not in _server_binlogs_written:
        _server_binlogs_written[request.param] = _write_server_binlogs(request.param, tmp_path_factory)
    return _server_binlogs_written[request.param]


def _write_server_binlogs(config: str, tmp_path_factory) -> list[str]:
    from binlake.testing.mariadb import MariaDBServer, ensure_mariadb_installed
    from binlake.testing.workload import DATABASE, run_basic_workload
    try:
        ensure_mariadb_installed()
    except RuntimeError as error:
        pytest.skip(f"MariaDB server unavailable, server tests skipped: {error}")
    workdir = tmp_path_factory.mktemp(f"differential-{config}")
    with MariaDBServer(workdir, server_id=11, **SERVER_CONFIGS[config]) as server:
        run_basic_workload(server, DATABASE)
        server.flush_logs()
    return [str(path) for path in server.binlog_files()]
