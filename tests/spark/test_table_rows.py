"""binlake.spark.rules.table_rows and the rules under it (engine, fold,
typed_arrow), which the driver and Spark's tasks both run: every value of
every column type of the truth workload typed in a Spark job (the change
feed's Arrow UDFs) as in the driver, a value no Spark type holds refused
in the same words; a keyed table's net changes, a keyless table's copies; both ways
calling the same functions. (Whole lakes built both ways: test_increments.py.)"""
from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
from pyspark.sql import functions as F  # noqa: E402

from binlake.spark.commits import driver_way  # noqa: E402
from binlake.spark.rules import engine, fold, table_rows, typed_arrow  # noqa: E402
from binlake.spark.rules import typed_arrow as driver  # noqa: E402
from binlake.spark.commits.delta import COPIES_REMOVED, COPY_ADDED, COPY_OP  # noqa: E402
from binlake.spark.run.pipeline import load_manifest, run_pipeline  # noqa: E402
from binlake.spark.rules.refused import refused  # noqa: E402
from binlake.schema.ddl import ColumnSpec  # noqa: E402
from binlake.spark.plans.conversions import text_of, unconverted  # noqa: E402
from binlake.spark.plans.layouts import ddl_layout_column  # noqa: E402
from binlake.spark.plans.conversions import server_value  # noqa: E402
from binlake.spark.plans.typed import carry_way, spark_of_arrow, with_temporals  # noqa: E402
from binlake.spark.rules.tables import typed_columns  # noqa: E402

DB = "binlake_test"
INT = ColumnSpec("v", "INT")


@pytest.fixture(scope="module")
def lake(spark, truth, tmp_path_factory):
    out = tmp_path_factory.mktemp("driver") / "lake"
    run_pipeline(spark, truth.files, str(out), temporals="text")
    return out


def layouts(out) -> dict:
    return {key: entry["layout"] for key, entry in load_manifest(str(out)).layouts.items()}


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
        driver_rows = table_rows.typed_table(texts, layout, key).to_pylist()
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
            ours.add(refused(refusal))
    assert len(ours) >= 3  # a zero date, a zero month, year 0
    assert refused(failure.value) in ours


STRETCH = {"database": "d", "table": "t", "after": (0, 0), "before": (None, None),
           "sources": ["a", "b"], "defaults": [None, None], "fractions": [None, None], "width": 2}
LAYOUT = {"database": "d", "table": "t", "columns": [
    {"key": "a", "type": 3, "meta": 0, "unsigned": False},
    {"key": "b", "type": 15, "meta": 20, "unsigned": False, "charset": 45}]}


def plan(primary: list, **stretch) -> dict:
    return {"database": "d", "table": "t", "primary_key": primary,
            "layout": {**LAYOUT, "primary_key": [LAYOUT["columns"][i]["key"] for i in primary]},
            "stretches": [{**STRETCH, **stretch}]}


def changes(*rows) -> pa.Table:
    """Rows of changes/ (op, before, after: dicts), each at a place of its own."""
    n = len(rows)
    return pa.table({
        "commit_key": [{"file_seq": 1, "pos": 4 + i, "sub": 0, "row": 0} for i in range(n)],
        "file": ["binlog.000001"] * n, "pos": pa.array(range(4, 4 + n), pa.int64()),
        "commit_pos": pa.array(range(4, 4 + n), pa.int64()),
        "commit_timestamp": pa.array([0] * n, pa.timestamp("us", "UTC")),
        "op": [op for op, _, _ in rows],
        "before": pa.array([None if b is None else list(b.items()) for _, b, _ in rows],
                           pa.map_(pa.string(), pa.string())),
        "after": pa.array([None if a is None else list(a.items()) for _, _, a in rows],
                          pa.map_(pa.string(), pa.string())),
        "database": ["d"] * n, "table": ["t"] * n})


def row(a, b) -> dict:
    return {"a": a, "b": b}


KEY_MOVES = changes(("c", None, row("1", "a")), ("c", None, row("2", "b")),
                    ("u", row("1", "a"), row("3", "a")),  # moved to a new key
                    ("u", row("2", "b"), row("2", "c")), ("d", row("3", "a"), None),
                    ("c", None, row("1", "z")))


def test_a_keyed_tables_net_change_is_each_keys_last_touch_by_either_rule():
    """Whole images by their last touches (column by column), partial ones
    by the fold in commit order: the same net changes."""
    found = engine.images(KEY_MOVES, plan([0]))
    keys, sets, change = engine.last_touches(found, [0])
    by_touch = {key: tuple(c[i].as_py() for c in found.after) if set_ else None
                for key, set_, i in zip(keys[0].to_pylist(), sets, change)}
    assert by_touch == {"1": ("1", "z"), "2": ("2", "c"), "3": None}
    net = fold.net_by_key(found.changes(), [0], "d.t", "")
    assert {key[0]: found.row for key, found in net.items()} == by_touch
    assert not any(found.partial for found in net.values())
    assert table_rows.state(KEY_MOVES, plan([0]), "d.t").to_pylist() in (
        [{"a": 1, "b": "z"}, {"a": 2, "b": "c"}], [{"a": 2, "b": "c"}, {"a": 1, "b": "z"}])


KEYLESS = changes(("c", None, row("1", "a")), ("c", None, row("1", "a")),
                  ("d", row("1", "a"), None), ("u", row("2", "b"), row("2", "c")),
                  ("d", row("9", "x"), None))


def test_a_keyless_tables_copies_are_counted():
    columns, counts = engine.multiset(engine.images(KEYLESS, plan([])))
    assert dict(zip(zip(*[c.to_pylist() for c in columns]), counts.tolist())) == {
        ("1", "a"): 1, ("2", "b"): -1, ("2", "c"): 1, ("9", "x"): -1}


def test_a_keyless_tables_copies_are_merged_as_removed_and_added():
    current = pa.table({"a": pa.array([1, 1, 2], pa.int32()), "b": ["x", "x", "y"]})
    found = changes(("d", row("1", "x"), None), ("c", None, row("3", "z")),
                    ("c", None, row("3", "z")), ("d", row("9", "q"), None),
                    ("u", row("2", "y"), row("2", "w")))
    ops = table_rows.copies(current, found, plan([]), "d.t").to_pylist()
    ops = sorted((row["a"], row["b"], row[COPY_OP]) for row in ops)
    # (1, x): both copies go, one comes back; a copy the table does not hold: nothing
    assert ops == sorted([(1, "x", COPIES_REMOVED), (1, "x", COPY_ADDED), (2, "w", COPY_ADDED),
                          (2, "y", COPIES_REMOVED), (3, "z", COPY_ADDED), (3, "z", COPY_ADDED)])


def test_images_say_what_a_partial_image_leaves_out_and_what_a_modify_made():
    minimal = changes(("u", row("1", "2"), {"a": "1"}))  # the before image's b: NOBLOB's way
    found = engine.images(minimal, plan([0]))
    assert [c.to_pylist() for c in found.after] == [["1"], ["2"]]
    key_only = changes(("u", {"a": "1"}, {"a": "1", "b": "3"}), ("u", {"a": "2"}, {"a": "7"}))
    found = engine.images(key_only, plan([0]))  # MINIMAL: the key before, changed columns after
    assert [c.to_pylist() for c in found.after] == [["1", "7"], ["3", None]]
    assert found.absent("after").tolist() == [False, True]
    with pytest.raises(ValueError, match="identified by a key binlake does not know"):
        table_rows.state(key_only, plan([]), "d.t")
    # a change from before a MODIFY: its texts as the server made them
    # (binlake.spark.plans.conversions' functions)
    layout = {"columns": [ddl_layout_column(INT), column("VARCHAR", 2)]}
    for modified, text, made in (({"fractions": [None, 0]}, "10:00:00.5", "10:00:00"),
                                 ({"fractions": [None, 3]}, "10:00:00.5", "10:00:00.500"),
                                 ({"was": [None, ddl_layout_column(INT)]}, "123", "12")):
        modified_plan = {**plan([0], **modified), "layout": layout}
        found = engine.images(changes(("c", None, row("1", text))), modified_plan)
        assert [c.to_pylist() for c in found.after] == [["1"], [made]], modified
    int_column = {"key": "i", "type": 3, "meta": 0, "unsigned": False}  # INT
    with pytest.raises(ValueError, match="1e3"):  # no INT's text: refused, never a NULL
        typed_arrow.typed_column(["1e3"], int_column, "d.t")
    assert not driver_way.takes(driver_way.DRIVER_ROWS + 1) and driver_way.takes(0)


def test_both_engines_run_the_same_table_rules():
    """The driver's way and Spark's tasks run the same function on the same
    job (binlake.spark.commits.table_jobs.run_job: the rules of
    binlake.spark.rules.table_rows and history_rows), and Spark's way has no
    rule of its own: no DataFrame of rows, no aggregate, no cast."""
    import ast
    import binlake.spark.commits as commits
    from binlake.spark.commits import table_jobs

    def source(module: str) -> str:
        return (Path(commits.__file__).parent / module).read_text()

    def names(module: str) -> set:
        return {node.id for node in ast.walk(ast.parse(source(module)))
                if isinstance(node, ast.Name)}
    assert {"run_job", "new_job", "stage"} <= names("driver_way.py")
    assert {"run_job", "new_job", "stage"} <= names("spark_way.py")
    assert "parallelize(jobs, len(jobs)).map(run_job)" in source("spark_way.py")
    for catalyst in ("groupBy", ".agg(", "Window", "F.max", "from_text", "applyInArrow",
                     ".cast("):
        assert catalyst not in source("spark_way.py"), catalyst
    rules = {node.attr for node in ast.walk(ast.parse(source("table_jobs.py")))
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
             and node.value.id in ("table_rows", "history_rows")}
    assert rules >= {"state", "appended", "net_changes", "copies", "carried", "rewritten",
                     "history_versions"}
    assert set(table_jobs._RULES) == {table_jobs.REBUILT, table_jobs.APPENDED,
                                      table_jobs.MERGED, table_jobs.REWRITTEN,
                                      table_jobs.CARRIED, table_jobs.HISTORY}


def column(kind: str, *args, unsigned: bool = False) -> dict:
    text = "CHAR" in kind or "TEXT" in kind
    spec = ColumnSpec("v", kind, tuple(args), unsigned, "utf8mb4" if text else None)
    return ddl_layout_column(spec)


#: (the column before a MODIFY, its values as the table holds them, the
#: column after). What MariaDB 10.11 made of some (lax sql_mode): DECIMAL
#: 1.50 -> TINYINT 2, -2.50 -> -3, 0.49 -> 0; DECIMAL(10,2) -2.50 ->
#: DECIMAL(10,1) -2.5, 1.25 -> 1.3; FLOAT 1.1 -> DOUBLE 1.100000023841858;
#: DATE -> DATETIME at midnight; out of range: the type's bound.
CONVERSIONS = [
    (column("DECIMAL", 10, 2), ["1.50", "-2.50", "0.49", "-0.5", "99999999.99", "-99999999.99",
                                None],
     column("TINYINT"), [2, -3, 0, -1, 127, -128, None]),
    (column("DECIMAL", 18, 9), ["-999999999.999999999", "7.125", None], column("DECIMAL", 10, 2),
     ["-99999999.99", "7.13", None]),
    (column("DECIMAL", 10, 2), ["1.25", "-2.50", "-99999999.99", "999.96", None],
     column("DECIMAL", 4, 1), ["1.3", "-2.5", "-999.9", "999.9", None]),
    (column("DECIMAL", 10, 2), ["1.50", "-0.01", None], column("VARCHAR", 20),
     ["1.50", "-0.01", None]),
    (column("BIGINT", unsigned=True), ["0", str(2**64 - 1), str(2**31), None], column("INT"),
     [0, 2**31 - 1, 2**31 - 1, None]),
    (column("INT"), [-5, 7, None], column("BIGINT", unsigned=True), ["0", "7", None]),
    (column("BIGINT"), [12345, -3, None], column("DECIMAL", 5, 2), ["999.99", "-3.00", None]),
    (column("SMALLINT"), [-5, 300, 7, None], column("TINYINT", unsigned=True), [0, 255, 7, None]),
    (column("INT"), [42, -7, None], column("VARCHAR", 10), ["42", "-7", None]),
    (column("INT"), [1, -2, None], column("DOUBLE"), [1.0, -2.0, None]),
    (column("FLOAT"), [1.1, None], column("DOUBLE"), [1.100000023841858, None]),
    (column("DATE"), [dt.date(2024, 1, 2), None], column("DATETIME"),
     [dt.datetime(2024, 1, 2), None]),
    (column("VARCHAR", 10), ["a", None], column("TEXT"), ["a", None]),
    # text to a number: the leading number (tests/spark/test_conversions.py)
    (column("VARCHAR", 10), ["12.7", "abc", "7", "-3.5", None], column("INT"),
     [12, 0, 7, -3, None]),
    (column("DOUBLE"), [2.5, 3.5, -12.7, None], column("INT"), [2, 4, -13, None]),
    (column("INT"), [12345, -7, None], column("CHAR", 3), ["123", "-7", None]),
]
#: Not converted as the server did (the run is refused: test_conversions.py).
NOT_CONVERTED = [(column("INT"), pa.int32(), column("YEAR")),
                 (column("BIGINT"), pa.int64(), column("BIT", 8)),
                 (column("DATETIME"), pa.timestamp("us"), column("DATE")),
                 (column("TIMESTAMP"), pa.timestamp("us", "UTC"), column("DATETIME"))]


def held_array(values: list, was: dict) -> pa.Array:
    kind = driver.arrow_types({"columns": [was]})[0]
    if pa.types.is_decimal(kind):
        return pa.array(values, pa.string()).cast(kind)
    return pa.array(values, kind)


def test_a_type_change_converts_values_as_the_server_did():
    """The values a table holds, and the text of a change from before the
    MODIFY (a rebuild, new changes of a carried table), become what the
    server made of them."""
    for number, (was, values, new, expected) in enumerate(CONVERSIONS):
        held = held_array(values, was)
        kind = driver.arrow_types({"columns": [new]})[0]
        wanted = held_array(expected, new) if pa.types.is_decimal(kind) else pa.array(expected,
                                                                                       kind)
        ours = driver.converted(pa.chunked_array([held]), was, new)
        assert ours.combine_chunks() == wanted, (number, ours)
        texts = [None if v is None else server_value(text_of(v), was, new)
                 for v in held.to_pylist()]
        assert driver.typed_column(texts, new, "d.t") == wanted, number


def test_a_date_made_a_datetime_in_a_text_lake_gains_its_midnight():
    """--temporals text: DATE and DATETIME are MySQL's exact text."""
    was, new = column("DATE"), with_temporals({"columns": [column("DATETIME", 3)]},
                                              "text")["columns"][0]
    held = pa.array(["2024-01-02", "0000-00-00", None])
    wanted = ["2024-01-02 00:00:00.000", "0000-00-00 00:00:00.000", None]
    assert driver.converted(pa.chunked_array([held]), was, new).to_pylist() == wanted


def test_a_type_change_binlake_does_not_convert_is_not_carried():
    for was, kind, new in NOT_CONVERTED:
        assert unconverted(was, new) is not None
        assert carry_way(was, spark_of_arrow(kind), new) is None
        assert driver.converted(pa.chunked_array([pa.nulls(1, kind)]), was, new) is None


@pytest.mark.parametrize("kind, args, texts", [
    ("DATE", (), ["2024-02-29", "0001-01-01", "9999-12-31", None]),
    ("DATETIME", (6,), ["2024-05-01 12:00:00.000001", "1000-01-01 00:00:00.500000",
                        "9999-12-31 23:59:59.999999", None]),
    ("DATETIME", (), ["2024-05-01 12:00:00", None]),
    ("TIMESTAMP", (3,), ["2024-05-01 12:00:00.120", "1970-01-01 00:00:01.000", None]),
])
def test_arrow_texts_are_typed_as_a_lists_are(kind, args, texts):
    """A snapshot chunk's columns (Arrow arrays: Arrow's ISO casts) and a
    change's texts (a list: value by value) give the same values; a zero
    date goes value by value, and is refused in the same words."""
    typed = column(kind, *args)
    by_arrow = driver.typed_column(pa.array(texts, pa.string()), typed, "d.t")
    assert by_arrow.equals(driver.typed_column(texts, typed, "d.t"))
    zero = "0000-00-00" if kind == "DATE" else "0000-00-00 00:00:00"
    with pytest.raises(ValueError) as from_arrow:
        driver.typed_column(pa.array([zero]), typed, "d.t")
    with pytest.raises(ValueError) as from_list:
        driver.typed_column([zero], typed, "d.t")
    assert str(from_arrow.value) == str(from_list.value)


def test_inserts_of_any_size_are_typed_by_arrow_without_spark(mariadb, tmp_path, monkeypatch):
    """A table whose changes all insert takes them through Arrow in the
    driver however many they are (DRIVER_ROWS set to 10 here): rows into a
    table just created (its plan changed by its first table map), a table
    created and filled in one run, more rows appended; the tables equal the
    server's. A partial row image (binlog_row_image=MINIMAL, a column left
    to its DEFAULT) is not taken so: Spark is asked for, never a NULL."""
    from binlake.spark.run.session import LazySession
    from binlake.testing.mariadb import MariaDBServer
    from binlake.spark.commits.delta import read_table
    monkeypatch.setattr(driver_way, "DRIVER_ROWS", 10)

    def no_spark():
        raise AssertionError("Spark was asked for")

    def rows(lake, table: str) -> list:
        found = read_table(str(lake / "tables" / f"shop.{table}")).to_pylist()
        return sorted(tuple(row.values()) for row in found)
    for image in ("FULL", "MINIMAL"):
        lake = tmp_path / image
        with MariaDBServer(tmp_path / f"server-{image}", server_id=71,
                           binlog_row_image=image) as server:
            def run() -> None:
                run_pipeline(LazySession(no_spark, "local[2]"),
                             [str(p) for p in server.binlog_files()], str(lake))
            server.execute("CREATE DATABASE shop")
            server.execute("CREATE TABLE shop.orders (id BIGINT PRIMARY KEY, item VARCHAR(20), "
                           "qty INT DEFAULT 7, at DATETIME(6))")
            run()
            server.execute("INSERT INTO shop.orders (id, item, at) SELECT seq, CONCAT('i', seq), "
                           "'2024-01-01' + INTERVAL seq SECOND FROM shop.seq_1_to_300")
            if image == "MINIMAL":
                with pytest.raises(AssertionError, match="Spark was asked for"):
                    run()
                continue
            run()
            server.execute("CREATE TABLE shop.lines (n INT, note TEXT)")  # keyless, one run
            server.execute("INSERT INTO shop.lines SELECT seq % 5, 'x' FROM shop.seq_1_to_40")
            server.execute("INSERT INTO shop.orders (id, item, qty, at) SELECT seq, 'more', seq, "
                           "NULL FROM shop.seq_301_to_360")
            run()
            for table in ("orders", "lines"):
                assert rows(lake, table) == sorted(server.query(f"SELECT * FROM shop.{table}"))
