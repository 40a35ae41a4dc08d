"""The follower's metrics (binlake.spark.run.metrics): an OpenMetrics /
Prometheus endpoint, the same figures in status.json, `binlake status`.

Strategy: a follower runs as the command (`binlake pipeline -R --follow
--metrics-port 0`) in a process of its own against a private MariaDB; the
test reads the port it picked from status.json, writes known rows, scrapes
the endpoint with urllib and parses it with prometheus-client's own text
parser, and checks each figure moves as it should: the written table's
rows counter by exactly the rows written, the micro-batch histogram's
count, a small lag, the copies' bytes and fsyncs, bytes behind back to 0,
and a reconnect counted when the server's dump thread is killed. The
status file must say the same, and `binlake status` print it. The figures'
own rules (histogram buckets, snapshot progress, two followers' endpoints
in one process) are checked without a server.
"""
from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("deltalake")
prometheus = pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from binlake.cli.dispatch import main  # noqa: E402
from binlake.spark.run.metrics import FollowMetrics, serve, within  # noqa: E402
from binlake.spark.state.progress import SnapshotProgress, TableProgress  # noqa: E402
from binlake.testing.mariadb import MariaDBServer  # noqa: E402
from server.live_helpers import kill_dump_threads  # noqa: E402

DB = "metered"
WAIT = 90.0


def scrape(url: str) -> dict:
    """{sample name, (label values...)): value} of the endpoint's text."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(samples: dict, name: str, **labels) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def status(lake) -> dict:
    try:
        return json.loads((lake / "_binlake" / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def waited(what, check, process, timeout: float = WAIT):
    """check()'s first true value, polled until `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the follower ended"
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s")


def rows_of(samples: dict) -> float:
    return value(samples, "binlake_rows_total", table=f"{DB}.t") or 0.0


def test_the_endpoint_and_the_status_follow_what_the_follower_does(mariadb, tmp_path):
    lake = tmp_path / "lake"
    log = open(tmp_path / "follower.log", "ab")
    with MariaDBServer(tmp_path / "server", server_id=41) as server:
        server.execute(f"CREATE DATABASE {DB}")
        server.execute(f"CREATE TABLE {DB}.t (id INT PRIMARY KEY, v VARCHAR(20))")
        follower = subprocess.Popen(
            [sys.executable, "-m", "binlake", "pipeline", "-R", "--follow", "--out", str(lake),
             "-h", "127.0.0.1", "-P", str(server.port), "-u", "root",
             "--heartbeat-period", "1", "--metrics-port", "0", "binlog.000001"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        try:
            url = waited("the endpoint in status.json", lambda: (status(lake).get("metrics")
                                                                  or {}).get("endpoint"),
                         follower)
            assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/metrics")
            waited("a first micro-batch", lambda: status(lake).get("micro_batches"), follower)
            before = scrape(url)
            batches = value(before, "binlake_micro_batch_seconds_count")
            # 5 transactions of 5 inserts, then one update of 3 rows: 28 changes
            connection = server.connect(DB)
            with connection.cursor() as cursor:
                for first in range(0, 25, 5):
                    cursor.executemany(f"INSERT INTO {DB}.t VALUES (%s, 'a')",
                                       [(i,) for i in range(first, first + 5)])
                cursor.execute(f"UPDATE {DB}.t SET v = 'b' WHERE id < 3")
            after = waited("the rows counted", lambda: (lambda s: s if rows_of(s)
                                                        >= rows_of(before) + 28 else None)(
                                                            scrape(url)), follower)
            time.sleep(1.5)  # nothing more comes: counted once
            after = scrape(url)
            assert rows_of(after) == rows_of(before) + 28
            assert value(after, "binlake_micro_batch_seconds_count") > batches
            assert value(after, "binlake_lag_seconds_count") >= 1
            lag = value(after, "binlake_lag_last_seconds")
            assert 0 <= lag < 15, lag
            assert value(after, "binlake_bytes_behind") == 0
            assert value(after, "binlake_copy_bytes_total") > \
                value(before, "binlake_copy_bytes_total")
            assert value(after, "binlake_copy_fsync_seconds_count") >= 1
            assert value(after, "binlake_reconnects_total") == 0
            assert value(after, "binlake_failovers_total") == 0
            assert value(after, "binlake_refusals_total") == 0

            # the server's dump thread killed: a reconnect, and the rows go on
            assert kill_dump_threads(server)
            waited("the reconnect counted",
                   lambda: value(scrape(url), "binlake_reconnects_total") == 1, follower)
            with connection.cursor() as cursor:
                cursor.executemany(f"INSERT INTO {DB}.t VALUES (%s, 'c')",
                                   [(i,) for i in range(100, 103)])
            waited("the rows after the reconnect",
                   lambda: rows_of(scrape(url)) >= rows_of(before) + 31, follower)
            time.sleep(1.0)
            last = scrape(url)
            assert rows_of(last) == rows_of(before) + 31
            connection.close()

            # status.json holds the same figures
            figures = status(lake)["metrics"]
            assert figures["rows"][f"{DB}.t"] == rows_of(last)
            assert figures["reconnects"] == 1 and figures["refusals"] == 0
            assert figures["micro_batch_seconds"]["count"] == \
                value(last, "binlake_micro_batch_seconds_count")
            assert figures["lag_seconds"] == pytest.approx(
                value(last, "binlake_lag_last_seconds"), abs=1e-3)
        finally:
            follower.send_signal(signal.SIGTERM)
            follower.wait(60)
    assert follower.returncode == 0, (tmp_path / "follower.log").read_text()[-2000:]

    out = io.StringIO()
    assert main(["status", "--out", str(lake)], out, io.StringIO()) == 0
    text = out.getvalue()
    assert "state: stopped" in text, text
    assert f"{DB}.t" in text and f"{int(rows_of(last)):,} rows" in text, text
    assert "reconnects 1, failovers 0, refusals 0" in text, text
    assert "views: " in text and "small files merged" in text, text
    assert "memory: " in text and "MiB resident" in text, text
    assert f"metrics: {url} (served while the follower ran)" in text, text

    # another server at the address, of another history: refused, counted
    with MariaDBServer(tmp_path / "other", server_id=42) as other:
        refused = subprocess.run(
            [sys.executable, "-m", "binlake", "pipeline", "-R", "--out", str(lake), "-h",
             "127.0.0.1", "-P", str(other.port), "-u", "root"],
            capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "not server id 41" in refused.stderr, refused.stderr
    figures = status(lake)["metrics"]
    assert status(lake)["state"] == "failed" and figures["refusals"] == 1, figures
    assert figures["failovers"] == 0 and figures["endpoint"] is None


def test_metrics_port_is_refused_without_the_extra_or_a_server(tmp_path, monkeypatch):
    from binlake.spark.run import metrics
    err = io.StringIO()
    assert main(["pipeline", "--metrics-port", "0", "--out", str(tmp_path / "lake")],
                io.StringIO(), err) == 2
    assert "--metrics-port serves a follower's figures: add -R" in err.getvalue()
    monkeypatch.setattr(metrics, "available", lambda: False)
    err = io.StringIO()
    assert main(["pipeline", "-R", "--follow", "--metrics-port", "0", "--out",
                 str(tmp_path / "lake"), "binlog.000001"], io.StringIO(), err) == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "pip install 'binlake[metrics]'" in lines[0], lines
    assert not (tmp_path / "lake").exists()


def test_status_without_a_follower_says_so(tmp_path):
    err = io.StringIO()
    assert main(["status", "--out", str(tmp_path)], io.StringIO(), err) == 1
    assert "no follower status" in err.getvalue()


def test_two_followers_in_one_process_serve_their_own_figures():
    """Each follower's registry is its own: two endpoints, two sets of
    figures, and the histograms' buckets as Prometheus counts them."""
    first, second = FollowMetrics(), FollowMetrics()
    first.micro_batch(0.3, 1.5, {"a.t": 4})
    first.micro_batch(7.0, 0.2, {"a.t": 1, "b.u": 2})
    second.micro_batch(0.01, None, {"c.v": 9})
    second.copy_fsynced(0.002, 1000)
    endpoints = [serve(first, "127.0.0.1", 0), serve(second, "127.0.0.1", 0)]
    try:
        one, two = (scrape(endpoint.url) for endpoint in endpoints)
    finally:
        for endpoint in endpoints:
            endpoint.close()
    assert value(one, "binlake_rows_total", table="a.t") == 5
    assert value(one, "binlake_rows_total", table="b.u") == 2
    assert value(one, "binlake_rows_total", table="c.v") is None
    assert value(two, "binlake_rows_total", table="c.v") == 9
    assert value(one, "binlake_micro_batch_seconds_count") == 2
    assert value(one, "binlake_micro_batch_seconds_bucket", le="0.5") == 1
    assert value(one, "binlake_micro_batch_seconds_bucket", le="10.0") == 2
    assert value(one, "binlake_micro_batch_seconds_sum") == pytest.approx(7.3)
    assert value(one, "binlake_lag_last_seconds") == pytest.approx(0.2)
    assert value(two, "binlake_lag_seconds_count") == 0
    assert value(two, "binlake_copy_bytes_total") == 1000
    assert value(two, "binlake_copy_fsync_seconds_bucket", le="0.0025") == 1
    figures = first.to_json()
    assert figures["rows"] == {"a.t": 5, "b.u": 2}
    assert within(figures["micro_batch_seconds"], 0.5) == "0.5"
    assert within(figures["micro_batch_seconds"], 0.99) == "10.0"


def test_snapshot_progress_per_table_against_the_servers_estimate():
    asked = []

    def estimate(tables):
        asked.append(list(tables))
        return {f"{db}.{table}": 1000 for db, table in tables}
    metrics = FollowMetrics()
    progress = SnapshotProgress().with_tables([
        TableProgress("d", "big", ("id",), 100, rows=250),
        TableProgress("d", "done", ("id",), 100, done=True, rows=40)])
    metrics.snapshot_progress(progress, estimate)
    metrics.snapshot_progress(progress, estimate)
    assert asked == [[("d", "big")]]  # once a table, never for one done
    assert metrics.to_json()["snapshot"] == {"d.big": {"read": 250, "estimated": 1000},
                                             "d.done": {"read": 40, "estimated": 40}}
    endpoint = serve(metrics, "127.0.0.1", 0)
    try:
        found = scrape(endpoint.url)
    finally:
        endpoint.close()
    assert value(found, "binlake_snapshot_rows_read", table="d.big") == 250
    assert value(found, "binlake_snapshot_rows_estimated", table="d.big") == 1000


def test_memory_figures_follow_the_process_and_arrows_pool():
    """Resident memory and Arrow's allocated bytes, in status.json and the
    endpoint alike: Arrow's grow by what a buffer holds while it is alive."""
    import pyarrow as pa
    metrics = FollowMetrics()
    before = metrics.to_json()["memory"]
    held = pa.array(range(1 << 20), pa.int64())  # 8 MiB
    during = metrics.to_json()["memory"]
    assert during["arrow_bytes"] - before["arrow_bytes"] >= 8 << 20
    assert during["resident_bytes"] >= during["arrow_bytes"] > 0
    endpoint = serve(metrics, "127.0.0.1", 0)
    try:
        found = scrape(endpoint.url)
    finally:
        endpoint.close()
    assert value(found, "binlake_arrow_allocated_bytes") >= 8 << 20
    assert value(found, "binlake_resident_memory_bytes") > 0
    del held
    assert metrics.to_json()["memory"]["arrow_bytes"] < during["arrow_bytes"]
