"""Progress bars on a terminal (binlake.progress): `dump`, `sql` and
`pipeline` over the sample binlogs with stderr on a pseudo-terminal show
bytes, a rate of rows and the time left; without a terminal, stderr holds
nothing more than before; a snapshot's tables get a bar of rows of the
server's estimate (~N)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pytest

from binlake.cli.commands.pipeline import sample_dir

pytest.importorskip("tqdm")

BINLAKE = [sys.executable, "-m", "binlake"]
SAMPLES = sorted(os.path.join(sample_dir(), name) for name in os.listdir(sample_dir())
                 if name.startswith("binlog."))
#: "64.6k/64.6k [00:00<00:00, ...": bytes done of the total, elapsed<left
BYTES = re.compile(r"\d+(\.\d+)?k?/(?P<total>\d+(\.\d+)?k) \[\d\d:\d\d<(?P<left>\d\d:\d\d|\?)")


def run_on_terminal(command: list[str], cwd: str) -> tuple[int, str]:
    """(status, what was written to stderr): stderr a pseudo-terminal of 100
    columns, stdout thrown away."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd,
                               stdin=subprocess.DEVNULL)
    os.close(slave)
    seen = b""
    with contextlib.suppress(OSError):  # EIO: every writer has closed it
        while chunk := os.read(master, 1 << 16):
            seen += chunk
    os.close(master)
    return process.wait(timeout=300), seen.decode("utf-8", "replace")


def frames(stderr: str) -> list[str]:
    return [frame.strip() for frame in re.split(r"[\r\n]", stderr) if frame.strip()]


def last_bar(stderr: str, desc: str) -> str:
    bars = [frame for frame in frames(stderr) if frame.startswith(desc + ":")]
    assert bars, f"no bar of {desc!r} in {stderr!r}"
    return bars[-1]


def test_dump_on_a_terminal_shows_bytes_rate_and_time_left(tmp_path):
    status, stderr = run_on_terminal(BINLAKE + ["dump", *SAMPLES], str(tmp_path))
    assert status == 0, stderr
    bar = last_bar(stderr, "binlake")
    total = sum(os.path.getsize(path) for path in SAMPLES)
    found = BYTES.search(bar)
    assert found and found["left"] == "00:00", bar
    assert f"{total / 1000:.1f}k/{total / 1000:.1f}k" in bar and "100%" in bar, bar
    assert re.search(r"B/s, [\d,]+ row events/s\]", bar), bar


def test_sql_on_a_terminal_shows_the_bar(tmp_path):
    status, stderr = run_on_terminal(BINLAKE + ["sql", *SAMPLES], str(tmp_path))
    assert status == 0, stderr
    assert re.search(r"100%.*B/s, [\d,]+ row events/s\]", last_bar(stderr, "binlake"))


@pytest.mark.parametrize("command", [["dump"], ["sql"], ["events", "--format", "csv"]])
def test_without_a_terminal_stderr_holds_nothing(tmp_path, command):
    done = subprocess.run(BINLAKE + command + SAMPLES, capture_output=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0 and done.stderr == b""


def test_pipeline_on_a_terminal_shows_bytes_rows_per_second_and_time_left(tmp_path):
    pytest.importorskip("pyspark")
    pytest.importorskip("deltalake")
    out = tmp_path / "lake"
    status, stderr = run_on_terminal(BINLAKE + ["pipeline", "--sample", "--out", str(out)],
                                     str(tmp_path))
    assert status == 0, stderr
    bar = last_bar(stderr, "binlake pipeline")
    # both views read every byte of the three files
    total = 2 * sum(os.path.getsize(path) for path in SAMPLES)
    assert f"{total // 1000}k/{total // 1000}k" in bar and "100%" in bar, bar
    assert BYTES.search(bar)["left"] == "00:00", bar
    assert re.search(r"B/s, [\d,]+ rows/s\]", bar), bar
    # the run's own lines are still there, whole
    lines = stderr.replace("\r", "\n").splitlines()
    assert any(line.startswith("changes: 806 rows from 3 range(s)") for line in lines), stderr


def test_pipeline_without_a_terminal_writes_no_bar(tmp_path):
    pytest.importorskip("pyspark")
    pytest.importorskip("deltalake")
    done = subprocess.run(BINLAKE + ["pipeline", "--sample", "--out", str(tmp_path / "lake")],
                          capture_output=True, cwd=tmp_path, timeout=300, text=True)
    assert done.returncode == 0, done.stderr
    assert "binlake pipeline:" not in done.stderr and "\r" not in done.stderr
    assert "changes: 806 rows from 3 range(s)\n" in done.stderr


class _Terminal:
    """A pseudo-terminal's slave as a text stream, its master read back."""

    def __init__(self):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
        os.set_blocking(self.master, False)
        self.stream = os.fdopen(slave, "w")

    def read(self) -> str:
        self.stream.flush()
        seen = b""
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self.master, 1 << 16):
                seen += chunk
        return seen.decode()

    def close(self):
        self.stream.close()
        os.close(self.master)


def test_a_snapshot_table_gets_a_bar_of_its_estimated_rows(monkeypatch, tmp_path):
    """take_snapshot's `progress` hook, its server stood in for: a table of
    about 5,000 rows (the server's estimate) read in three pages."""
    pytest.importorskip("pyarrow")
    from binlake.spark.run.pipeline import _snapshot_bar
    from binlake.spark.snapshot import snapshot
    from binlake.spark.snapshot.read_view import SnapshotPoint

    class Connection:
        def cursor(self):
            return contextlib.nullcontext(None)

        def commit(self):
            pass

    class Writer:
        rows = 0

        def __init__(self, folder):
            pass

        def write(self, database, table, names, columns, point, seq, first):
            return len(columns[0])

    pages = [(["id"], [list(range(2000))]), (["id"], [list(range(2000))]),
             (["id"], [list(range(1500))])]
    monkeypatch.setattr(snapshot, "_session", lambda address: contextlib.nullcontext(
        Connection()))
    monkeypatch.setattr(snapshot, "_open_read_view",
                        lambda cursor: SnapshotPoint("bin.000001", 4, None, 0))
    monkeypatch.setattr(snapshot, "server_ddl", lambda connection: "")
    monkeypatch.setattr(snapshot, "_tables", lambda connection, wanted: [("db", "t", ["id"])])
    monkeypatch.setattr(snapshot, "_estimated_rows", lambda connection, db, table: 5000)
    monkeypatch.setattr(snapshot, "_chunks", lambda *args: iter(pages))
    monkeypatch.setattr(snapshot, "_ChangeWriter", Writer)
    terminal = _Terminal()
    try:
        lines = []
        snapshot.take_snapshot(None, None, str(tmp_path), file_seq_of=lambda name: 1,
                               log=lines.append, progress=_snapshot_bar(terminal.stream))
        shown = terminal.read()
        assert lines[-1] == "snapshot: db.t: 5500 rows"
        bar = last_bar(shown, "snapshot db.t")
        # passed its estimate: the total is what was read, still an estimate
        assert re.search(r"5\.50k/~5\.50k rows \[\d\d:\d\d<00:00, [\d,]+ rows/s\]", bar), bar
        first = frames(shown)[0]
        assert "0/~5.00k rows" in first and "<?" in first, first
        # no terminal: no bar, and nothing asked of the server for it
        assert _snapshot_bar(open(os.devnull, "w")) is None
    finally:
        terminal.close()
