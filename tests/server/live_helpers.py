"""What the live-capture tests share: a workload, the client's connection
options, killing the server's dump threads, a `dump -R --raw --stop-never`
backup process and waiting for it to catch up."""
from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from pathlib import Path


def write(server, first: int, count: int) -> None:
    connection = server.connect("shop")
    with connection.cursor() as cursor:
        for i in range(first, first + count):
            cursor.execute("INSERT INTO items (id, name, price, seen) VALUES (%s, %s, %s, NOW(3))",
                           (i, f"item {i} " + "x" * (i % 30), f"{i % 1000}.{i % 100:02d}"))
            if i % 7 == 0:
                cursor.execute("UPDATE items SET price = price + 1 WHERE id = %s", (i,))
            if i % 11 == 0:
                cursor.execute("DELETE FROM items WHERE id = %s", (i - 1,))
    connection.close()


def connection_args(server) -> list[str]:
    return ["-h", "127.0.0.1", "-P", str(server.port), "-u", "root", "--password="]


def dump_threads(server) -> list[int]:
    return [row[0] for row in server.query("SHOW PROCESSLIST") if row[4] == "Binlog Dump"]


def kill_dump_threads(server) -> int:
    killed = 0
    for thread in dump_threads(server):
        server.execute(f"KILL {thread}")
        killed += 1
    return killed


def start_backup(server, prefix: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "binlake", "dump", "-R", *connection_args(server), "--raw",
               "--stop-never", "--heartbeat-period", "0.5", "-r", f"{prefix}/", "binlog.000001",
               *extra]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_copies(server, prefix: Path, timeout: float = 60,
                    backup: subprocess.Popen | None = None) -> None:
    """Until every closed binlog's copy is complete and the open one caught up
    (else fails, saying what `backup`, stopped then, wrote on stderr)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = server.binlog_files()
        if all((prefix / f.name).exists() and (prefix / f.name).stat().st_size == f.stat().st_size
               for f in files):
            return
        time.sleep(0.2)
    missing = [f.name for f in server.binlog_files()
               if not (prefix / f.name).exists()
               or (prefix / f.name).stat().st_size != f.stat().st_size]
    said = ""
    if backup is not None:
        if backup.poll() is None:
            backup.send_signal(signal.SIGINT)
        said = "; its stderr: " + backup.communicate(timeout=30)[1].decode(errors="replace")
    raise AssertionError(f"the backup did not catch up with {missing}{said}")


class SwitchingProxy:
    """A TCP address in front of a server that can be pointed at another
    (`switch`), dropping the connections it carries: a failover behind one
    address (a virtual IP, a load balancer) as a client sees it. `hold_after(n)`
    passes n more bytes from the server, then none until the switch: a
    server lost in the middle of what it was sending."""

    def __init__(self, port: int):
        import socket
        import threading
        self.target = port
        self._allowance: int | None = None     # bytes the server may still send (None: any)
        self._switched = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._carried: list = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading
        while True:
            try:
                client = self._listener.accept()[0]
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._carried += [client, server]
            for a, b, downstream in ((client, server, False), (server, client, True)):
                threading.Thread(target=self._pump, args=(a, b, downstream), daemon=True).start()

    def hold_after(self, n: int) -> None:
        self._switched.clear()
        self._allowance = n

    def _pump(self, source, sink, downstream: bool) -> None:
        try:
            while data := source.recv(65536):
                if downstream and self._allowance is not None:
                    with self._lock:
                        data, self._allowance = data[:self._allowance], \
                            max(0, self._allowance - len(data))
                    if not data:
                        self._switched.wait()
                        break
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(2)
            except OSError:
                pass

    def switch(self, port: int) -> None:
        import socket
        self.target = port
        self._allowance = None
        self._switched.set()
        with self._lock:
            carried, self._carried = self._carried, []
        for sock in carried:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        self._listener.close()
        self.switch(self.target)


@contextlib.contextmanager
def gtid_replica(primary, workdir: Path, server_id: int = 2):
    """A private MariaDB replicating `primary` by GTID (log_slave_updates:
    its binlog holds the primary's transactions), started."""
    from binlake.testing.mariadb import MariaDBServer
    with MariaDBServer(workdir, server_id=server_id,
                       extra={"log_slave_updates": "ON"}) as replica:
        replica.execute(f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={primary.port}, "
                        "MASTER_USER='root', MASTER_USE_GTID=slave_pos")
        replica.execute("START SLAVE")
        yield replica
