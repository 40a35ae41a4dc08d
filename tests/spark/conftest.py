"""One local Spark session for every Spark test, and a MariaDB run that is the ground truth.

Strategy: the session is started once (local[2], a handful of shuffle
partitions, UTC) and shared, because starting Spark costs seconds. The
ground truth is one private MariaDB running `truth.run_phases`: several
binlog files across rotations, with the server's own `SELECT *` captured in
the middle and at the end.
"""
from __future__ import annotations

import os
import shutil
import sys

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    if not shutil.which("java"):
        pytest.skip("Spark needs Java")
    # Spark's Python workers must run this interpreter (it has binlake and pyarrow).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import binlake.spark
    session = (SparkSession.builder.master("local[2]").appName("binlake tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    binlake.spark.register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def mariadb():
    """The server tests' MariaDB, installed if it can be; a skip that says why if not."""
    from binlake.testing.mariadb import ensure_mariadb_installed
    try:
        ensure_mariadb_installed()
    except RuntimeError as error:
        pytest.skip(f"MariaDB server unavailable: {error}")


@pytest.fixture(scope="session")
def truth(mariadb, tmp_path_factory):
    from .truth import run_phases
    return run_phases(tmp_path_factory.mktemp("mariadb"))
