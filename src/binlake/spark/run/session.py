"""A run's Spark session: embedded, a cluster's, or spark-submit's, and
started only where a run first needs one.

Strategy: `spark_session` builds the session (a local one tuned for the
machine's cores and, for a short run on few cores, a JVM that starts
fast: `local_java_options`); `LazySession` stands for it until a run
first uses it, so a run the driver does alone starts no JVM, and a run
sure to need it starts it in the background (`start_soon`) while the
driver reads the binlogs. `configure_session` is what every run sets on
it.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from concurrent.futures import Future, wait
from pathlib import Path

#: A local session on at most FEW_CORES cores for at most SHORT_RUN_BYTES of
#: binlogs compiles with the JVM's first JIT tier only.
FEW_CORES = 4
SHORT_RUN_BYTES = 256 << 20


def spark_session(master: str | None = None, app: str = "binlake pipeline",
                  work_bytes: int | None = None):
    """An embedded local[*] session; the cluster's with `master`; the one
    spark-submit prepared when run under it. `work_bytes`: the binlog bytes
    the session is for, when known (a short run on a few local cores gets a
    JVM tuned for starting fast)."""
    # Spark's Python workers must run this interpreter (it has binlake and pyarrow).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName(app)
    master = master or local_master()
    if master:
        builder = builder.master(master)
    cores = _local_cores(master)
    if cores:
        # Spark's 200 shuffle partitions are 200 tasks per stage, mostly overhead on
        # one machine; a few per core keep every core busy.
        builder = (builder.config("spark.sql.shuffle.partitions", str(4 * cores))
                   .config("spark.ui.showConsoleProgress", "false"))
        # Quiet: the JVM logs errors only (a normal run prints binlake's lines
        # alone), and a host name that resolves to a loopback address is no
        # reason to warn when everything runs on this machine.
        builder = builder.config("spark.driver.extraJavaOptions",
                                 local_java_options(cores, work_bytes))
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()


def local_master() -> str | None:
    """The master of a session nobody named one for: local[*], unless under
    spark-submit (None: the one it prepared)."""
    return None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[*]"


class LazySession:
    """A Spark session started where a run first needs one (`start()` gives
    it): a run the driver does alone (nothing new, a small increment,
    binlake.spark.commits.driver_way) starts no JVM. `master` is what the
    session is for, known before it starts. `start_soon()` starts it in
    the background, for a run sure to need it: the JVM's seconds of start
    then pass while the driver reads the binlogs. Threads share one start."""

    def __init__(self, start, master: str | None = None):
        self._start, self._session, self._then = start, None, []
        self.master = master
        self._lock = threading.Lock()
        self._starting: Future | None = None

    def then(self, configure) -> None:
        """`configure(session)` now if it runs, else when it starts."""
        with self._lock:
            if self._session is None:
                self._then.append(configure)
                return
        configure(self._session)

    def start_soon(self) -> None:
        with self._lock:
            if self._session is None and self._starting is None:
                self._starting = Future()
                threading.Thread(target=self._started, daemon=True,
                                 name="spark session start").start()

    def ready(self) -> bool:
        """The session is there (or its start has ended): using it waits for nothing."""
        return self._session is not None or (self._starting is not None
                                             and self._starting.done())

    def settle(self) -> None:
        """Wait for a start `start_soon` began, whatever its outcome."""
        if self._starting is not None:
            wait([self._starting])

    def _started(self) -> None:
        try:
            self._starting.set_result(self._start())
        except BaseException as exc:  # noqa: BLE001 - raised where the session is used
            self._starting.set_exception(exc)

    def __getattr__(self, name: str):
        if self._session is None:
            with self._lock:
                if self._session is None:
                    session = (self._starting.result() if self._starting is not None
                               else self._start())
                    for configure in self._then:
                        configure(session)
                    self._session = session
        return getattr(self._session, name)


def local_java_options(cores: int, work_bytes: int | None) -> str:
    """The JVM options of a local session: binlake's log4j configuration;
    Spark's generated code compiled however long its methods (HotSpot
    leaves a method of over 8000 bytecode bytes to its interpreter, and a
    table's projection of its changes is longer: the rebuild of the bench's
    bulk table took 7.3 s warm with it, 5.2 s without); for a short run on a
    few cores, the JIT's first tier only (the optimizing compiler's threads
    would take CPU from the work itself, while a long run gains from its
    code: bench/README.md)."""
    log4j = (Path(__file__).parent.parent / "log4j2.properties").as_uri()  # spaces escaped
    options = f"-Dlog4j2.configurationFile={log4j} -XX:-DontCompileHugeMethods"
    if cores <= FEW_CORES and work_bytes is not None and work_bytes <= SHORT_RUN_BYTES:
        options += " -XX:TieredStopAtLevel=1"
    return options


def _local_cores(master: str | None) -> int | None:
    """N of local[N] (local[*]: this machine's cores); None for a cluster."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master or "")
    if not match:
        return None
    return (os.cpu_count() or 1) if match[1] in (None, "*") else int(match[1])


def configure_session(spark) -> None:
    # Spark's default INT96 timestamps read back as naive times outside Spark.
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")


__all__ = ["spark_session", "local_master", "LazySession", "local_java_options",
           "configure_session", "FEW_CORES", "SHORT_RUN_BYTES"]
