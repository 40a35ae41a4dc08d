"""A private, throw-away MariaDB server with binary logging on, for tests and benchmarks.

Strategy: everything lives in one work directory that the caller owns (data, socket,
binlogs, error log, defaults file). The server listens on 127.0.0.1 on a port picked
by binding port 0, so several instances never collide and nothing system-wide is
touched. Durability is traded for speed (no fsync): the data is disposable, only the
binlog bytes matter, and those are complete once the logs are flushed or rotated.

Rule: the binlog options are explicit constructor arguments, so a test names the
exact server configuration whose files it reads.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

DEBIAN_PACKAGES = ("mariadb-server", "mariadb-client")


def ensure_mariadb_installed() -> str:
    """Return the path of ``mariadbd``, installing MariaDB from Debian when missing and root."""
    found = _find_mariadbd()
    if found:
        return found
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError(
            "mariadbd not found and cannot be installed automatically (needs root and apt-get); "
            "install it with: apt-get install -y " + " ".join(DEBIAN_PACKAGES)
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", *DEBIAN_PACKAGES]):
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    found = _find_mariadbd()
    if not found:
        raise RuntimeError("apt-get installed MariaDB but mariadbd is still not on PATH or in /usr/sbin")
    return found


def _find_mariadbd() -> str | None:
    # /usr/sbin is not on every user's PATH.
    return shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/local/sbin")


def free_port() -> int:
    """A TCP port that was free a moment ago (small race, acceptable for tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class MariaDBServer:
    """A private MariaDB in ``workdir``; use as a context manager (start on enter, stop on exit)."""

    def __init__(
        self,
        workdir: str | os.PathLike,
        *,
        server_id: int = 1,
        binlog_format: str = "ROW",
        binlog_row_image: str = "FULL",
        binlog_row_metadata: str = "FULL",
        log_bin_compress: bool = False,
        binlog_checksum: str = "CRC32",
        max_binlog_size: int = 1 << 30,
        extra: dict[str, Any] | None = None,
    ):
        self.workdir = Path(workdir).resolve()
        self.port = 0
        self.settings: dict[str, Any] = {
            "server-id": server_id,
            "binlog-format": binlog_format,
            "binlog_row_image": binlog_row_image,
            "binlog_row_metadata": binlog_row_metadata,
            "log_bin_compress": "ON" if log_bin_compress else "OFF",
            "binlog_checksum": binlog_checksum,
            "max_binlog_size": max_binlog_size,
            **(extra or {}),
        }
        self._process: subprocess.Popen | None = None
        self._connection = None

    # -- paths -------------------------------------------------------------------
    @property
    def defaults_file(self) -> Path:
        return self.workdir / "my.cnf"

    @property
    def datadir(self) -> Path:
        return self.workdir / "data"

    @property
    def binlog_dir(self) -> Path:
        return self.workdir / "binlog"

    @property
    def tmp_dir(self) -> Path:
        return self.workdir / "tmp"

    @property
    def socket_path(self) -> Path:
        # A Unix socket path must fit in 108 bytes; deep work directories fall back to /tmp.
        path = self.workdir / "mariadb.sock"
        return path if len(str(path)) < 100 else Path(tempfile.gettempdir()) / f"binlake-mariadb-{self.port}.sock"

    @property
    def error_log(self) -> Path:
        return self.workdir / "error.log"

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> "MariaDBServer":
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self, timeout: float = 60.0) -> None:
        mariadbd = ensure_mariadb_installed()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.binlog_dir.mkdir(exist_ok=True)
        self.tmp_dir.mkdir(exist_ok=True)
        if not self.port:  # a restart keeps its port: replicas reconnect to it
            self.port = free_port()
        self._write_defaults_file()
        if not (self.datadir / "mysql").is_dir():
            self._run(
                "mariadb-install-db", f"--defaults-file={self.defaults_file}",
                "--auth-root-authentication-method=normal", "--skip-test-db",
            )
        with open(self.error_log, "ab") as log:
            self._process = subprocess.Popen(
                [mariadbd, f"--defaults-file={self.defaults_file}"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        self._wait_until_ready(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        try:
            subprocess.run(
                ["mariadb-admin", f"--defaults-file={self.defaults_file}", "shutdown"],
                capture_output=True, timeout=timeout,
            )
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        """SIGKILL the server, as a crash would stop it (`start` brings it back)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def _write_defaults_file(self) -> None:
        server = {
            "user": "root",
            "port": self.port,
            "bind-address": "127.0.0.1",
            "datadir": self.datadir,
            "socket": self.socket_path,
            "pid-file": self.workdir / "mariadbd.pid",
            # Its own temporary files: servers started side by side (parallel
            # test runs) otherwise meet in /tmp, and bootstrap fails on them.
            "tmpdir": self.tmp_dir,
            "log-error": self.error_log,
            "log-bin": self.binlog_dir / "binlog",
            "log-bin-index": self.binlog_dir / "binlog.index",
            "binlog_annotate_row_events": "ON",
            "character-set-server": "utf8mb4",
            "collation-server": "utf8mb4_general_ci",
            "skip-name-resolve": None,
            # Disposable data: skip every fsync, keep memory and disk small
            # (a test suite starts dozens of these; the redo log is
            # preallocated whole, so its size is disk spent per server).
            "sync_binlog": 0,
            "innodb_flush_log_at_trx_commit": 0,
            "innodb_doublewrite": 0,
            "innodb_flush_method": "nosync",
            "innodb_buffer_pool_size": "256M",
            "innodb_log_file_size": "32M",
            "performance_schema": "OFF",
            **self.settings,
        }
        client = {
            "user": "root",
            "host": "127.0.0.1",
            "port": self.port,
            "socket": self.socket_path,
            "default-character-set": "utf8mb4",
        }
        lines = []
        for section, values in (("client", client), ("mariadbd", server)):
            lines.append(f"[{section}]")
            lines += [key if value is None else f"{key}={value}" for key, value in values.items()]
            lines.append("")
        self.defaults_file.write_text("\n".join(lines))

    def _wait_until_ready(self, timeout: float) -> None:
        import pymysql

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"mariadbd exited with {self._process.returncode}:\n{self._log_tail()}")
            try:
                self.query("SELECT 1")
                return
            except pymysql.err.OperationalError:  # not listening yet, or still starting up
                self._connection = None
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"mariadbd did not accept connections within {timeout}s:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            return self.error_log.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no error log)"

    def _run(self, *command: str) -> None:
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}\n"
                               f"{self.error_log}:\n{self._log_tail()}")

    # -- SQL ---------------------------------------------------------------------
    def connect(self, database: str | None = None):
        """A new pymysql connection: autocommit, utf8mb4, bytes parameters sent as _binary."""
        import pymysql

        return pymysql.connect(
            host="127.0.0.1", port=self.port, user="root", password="", database=database,
            charset="utf8mb4", autocommit=True, binary_prefix=True,
        )

    @property
    def connection(self):
        """One shared connection used by ``execute`` and ``query``."""
        if self._connection is None:
            self._connection = self.connect()
        return self._connection

    def execute(self, sql: str, params=None) -> int:
        """Run one statement on the shared connection; returns the affected row count."""
        with self.connection.cursor() as cursor:
            return cursor.execute(sql, params)

    def query(self, sql: str, params=None) -> list[tuple]:
        with self.connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def flush_logs(self) -> None:
        """Close the current binlog (complete, no longer in use) and open the next one."""
        self.execute("FLUSH BINARY LOGS")

    def binlog_files(self) -> list[Path]:
        """Absolute paths of the binlog files, in index order."""
        index = self.binlog_dir / "binlog.index"
        names = [line.strip() for line in index.read_text().splitlines() if line.strip()]
        return [(self.binlog_dir / Path(name).name).resolve() for name in names]
