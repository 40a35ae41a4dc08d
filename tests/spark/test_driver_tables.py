"""binlake.spark.driver_tables, the driver's twin of the Spark jobs for small
increments, held equal to them: every value of every column type of the
truth workload typed both ways; a value no Spark type holds refused in the
same words; the rules that net a keyed table's changes and count a keyless
table's copies. (Whole lakes built both ways: test_increments.py.)"""
from __future__ import annotations

import datetime as dt
import json

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
from pyspark.sql import functions as F  # noqa: E402

from binlake.spark import driver_tables as driver  # noqa: E402
from binlake.spark.pipeline import run_pipeline  # noqa: E402
from binlake.spark.tables import refused  # noqa: E402
from binlake.spark.typed import typed_columns, with_temporals  # noqa: E402

DB = "binlake_test"


@pytest.fixture(scope="module")
def lake(spark, truth, tmp_path_factory):
    out = tmp_path_factory.mktemp("driver") / "lake"
    run_pipeline(spark, truth.files, str(out), temporals="text")
    return out


def layouts(out) -> dict:
    with open(out / "_binlake" / "manifest.json") as f:
        return {key: entry["layout"] for key, entry in json.load(f)["layouts"].items()}


def utc(value):
    """Spark hands TIMESTAMPs out as naive local (UTC) times; Arrow as aware ones."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


@pytest.mark.parametrize("temporals", ["typed", "text"])
def test_every_value_is_typed_as_spark_types_it(spark, lake, temporals):
    changes = spark.read.parquet(str(lake / "changes")).where(F.col("after").isNotNull())
    typed_tables = 0
    for key, layout in sorted(layouts(lake).items()):
        layout = with_temporals(layout, temporals)
        mine = changes.where((F.col("database") == layout["database"])
                             & (F.col("table") == layout["table"])).orderBy("commit_key")
        if temporals == "typed" and layout["table"] == "temporal":
            continue  # zero dates: refused, below
        spark_rows = mine.select(*typed_columns(layout, F.col("after"))).toArrow().to_pylist()
        images = [dict(row["after"]) for row in mine.select("after").toArrow().to_pylist()]
        texts = [[image.get(c["key"]) for c in layout["columns"]] for image in images]
        driver_rows = driver.typed_table(texts, layout, key).to_pylist()
        assert len(driver_rows) == len(spark_rows) > 0, key
        for ours, theirs in zip(driver_rows, spark_rows):
            assert {k: utc(v) for k, v in ours.items()} == {k: utc(v) for k, v in
                                                            theirs.items()}, key
        typed_tables += 1
    assert typed_tables >= 10


def test_a_value_no_spark_type_holds_is_refused_in_the_same_words(spark, lake):
    layout = layouts(lake)[f"{DB}.temporal"]
    column = next(c for c in layout["columns"] if c["key"] == "d")
    changes = spark.read.parquet(str(lake / "changes")).where(
        (F.col("table") == "temporal") & F.col("after").isNotNull())
    with pytest.raises(Exception) as failure:  # whichever zero date the job meets first
        changes.select(*typed_columns({**layout, "columns": [column]}, F.col("after"))).collect()
    ours = set()
    for row in changes.select("after").toArrow().to_pylist():
        text = dict(row["after"]).get("d")
        try:
            driver.value_of(column, f"{DB}.temporal")(text) if text else None
        except ValueError as refusal:
            ours.add(str(refusal))
    assert len(ours) >= 3  # a zero date, a zero month, year 0
    assert refused(failure.value) in ours


def test_a_keyed_tables_net_change_is_each_keys_last_touch():
    changes = [("c", None, ("1", "a")), ("c", None, ("2", "b")),
               ("u", ("1", "a"), ("3", "a")),  # moved to a new key
               ("u", ("2", "b"), ("2", "c")), ("d", ("3", "a"), None), ("c", None, ("1", "z"))]
    assert driver.net_by_key(changes, [0]) == {("1",): ("1", "z"), ("2",): ("2", "c"),
                                                ("3",): None}


def test_a_keyless_tables_copies_are_counted():
    changes = [("c", None, ("1", "a")), ("c", None, ("1", "a")), ("d", ("1", "a"), None),
               ("u", ("2", "b"), ("2", "c")), ("d", ("9", "x"), None)]
    assert driver.multiset_deltas(changes) == {("1", "a"): 1, ("2", "b"): -1, ("2", "c"): 1,
                                               ("9", "x"): -1}


def test_what_the_driver_does_not_take_goes_to_spark():
    stretch = {"database": "d", "table": "t", "after": (0, 0), "before": (None, None),
               "sources": ["a", "b"], "defaults": [None, None], "fractions": [None, None],
               "width": 2}
    plan = {"stretches": [stretch], "primary_key": [0]}
    change = {"commit_key": (1, 4, 0, 0), "source": ("d", "t"), "op": "u",
              "before": {"a": "1", "b": "2"}, "after": {"a": "1"}}  # MINIMAL
    with pytest.raises(driver.InSpark):
        driver.images([change], plan)
    with pytest.raises(driver.InSpark):
        driver.images([], {**plan, "stretches": [{**stretch, "fractions": [None, 3]}]})
    column = {"key": "i", "type": 3, "meta": 0, "unsigned": False}  # INT
    with pytest.raises(driver.InSpark):
        driver.value_of(column, "d.t")("1e3")  # a DEFAULT's text, not the binlog's
    assert not driver.takes(driver.DRIVER_ROWS + 1) and driver.takes(0)
