"""binlake.arrow_changes: the changes view as a pyarrow RecordBatchReader.

It must equal, table by table, the batches the pure-Python reference builds
(`BINLAKE_PURE=1` path of binlake.spark.read.batches) on the bundled samples and
on corpus files, have the Spark view's schema, honour its options, and
binlake must import without pyarrow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

import binlake  # noqa: E402
from binlake import core  # noqa: E402
from binlake.schema.history import Schema  # noqa: E402
from binlake.spark.read.batches import CHANGES, _python_change_batches, load_schema_option  # noqa: E402
from binlake.spark.read.ranges import Split, expand_inputs, number_files  # noqa: E402

SAMPLES = Path(binlake.__file__).parent / "sample_data"
#: corpus files with many kinds of columns: sakila (gzipped, 16 tables), latin1 text,
#: a zstd transaction payload and a partial JSON update (mdev35643), binary JSON, VECTOR
CORPUS_FILES = [
    "mysql-binlog-connector-java/mysql-bin.sakila.gz",
    "mariadb-10.11.19/std_data/mdev6020-mysql-bin.000001",
    "mariadb-10.11.19/std_data/mdev35643_mysql_80_binlog.000001",
    "rust_mysql_common/json.binlog.000001",
    "rust_mysql_common/json-opaque.binlog",
    "rust_mysql_common/vector.binlog",
]
#: a MySQL 5 log: table maps without column names
UNNAMED = "zalora-binlog-parser/mysql-bin.03"


def pure_table(paths, **options) -> pa.Table:
    core.use_pure(True)
    options = {**options, "schema": load_schema_option(options) or Schema()}
    try:
        batches = [b for path, seq in number_files(expand_inputs(paths))
                   for b in _python_change_batches(Split(path, seq), options)]
    finally:
        core.use_pure(False)
    return pa.Table.from_batches(batches, schema=CHANGES)


def by_table(table: pa.Table) -> dict:
    keys = sorted(set(zip(table.column("database").to_pylist(), table.column("table").to_pylist())))
    out = {}
    for database, name in keys:
        mask = pa.compute.and_(pa.compute.equal(table.column("database"), database),
                               pa.compute.equal(table.column("table"), name))
        out[(database, name)] = table.filter(mask)
    return out


def assert_equal_by_table(got: pa.Table, expected: pa.Table) -> None:
    assert got.schema.equals(CHANGES)
    got_tables, expected_tables = by_table(got), by_table(expected)
    assert got_tables.keys() == expected_tables.keys()
    for key, table in expected_tables.items():
        assert got_tables[key].equals(table), key
    assert got.equals(expected)


def sample_paths() -> list[str]:
    return sorted(str(p) for p in SAMPLES.glob("binlog.0*"))


def test_samples_equal_pure_python():
    reader = binlake.arrow_changes(sample_paths())
    assert isinstance(reader, pa.RecordBatchReader) and reader.schema.equals(CHANGES)
    got = reader.read_all()
    assert got.num_rows > 0
    assert_equal_by_table(got, pure_table(sample_paths()))


@pytest.mark.parametrize("name", CORPUS_FILES)
def test_corpus_files_equal_pure_python(corpus, name):
    path = str(corpus / name)
    assert_equal_by_table(binlake.arrow_changes(path).read_all(), pure_table([path]))


def test_table_filter_option():
    got = binlake.arrow_changes(sample_paths(), tables="*.ints").read_all()
    assert got.num_rows and set(got.column("table").to_pylist()) == {"ints"}
    assert_equal_by_table(got, pure_table(sample_paths(), tables="*.ints"))


def test_schema_option_names_unnamed_columns(corpus):
    path = str(corpus / UNNAMED)
    table = pure_table([path])
    images = [r for r in table.column("after").to_pylist() + table.column("before").to_pylist() if r]
    assert images and all(k.startswith("@") for r in images for k, _ in r)
    database, name = table.column("database")[0].as_py(), table.column("table")[0].as_py()
    ddl = f"CREATE TABLE `{database}`.`{name}` (id INT, name VARCHAR(255), addr VARCHAR(355));"
    got = binlake.arrow_changes(path, schema=ddl).read_all()
    assert_equal_by_table(got, pure_table([path], schema=ddl))
    keys = {k for r in got.column("after").to_pylist() + got.column("before").to_pylist() if r
            for k, _ in r}
    assert keys == {"id", "name", "addr"}
    # a definition that disagrees with the table map (one column short) names nothing
    short = f"CREATE TABLE `{database}`.`{name}` (id INT, name VARCHAR(255));"
    got = binlake.arrow_changes(path, schema=short).read_all()
    assert_equal_by_table(got, pure_table([path], schema=short))
    assert {k for r in got.column("after").to_pylist() if r for k, _ in r} == {"@1", "@2", "@3"}


def test_unknown_option_is_refused():
    with pytest.raises(TypeError):
        binlake.arrow_changes(sample_paths(), table="x")


def _run(code: str, **env) -> subprocess.CompletedProcess:
    src = str(Path(binlake.__file__).parents[1])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": src, **env}, timeout=120)


def test_pure_mode_gives_the_same_rows():
    code = ("import binlake, sys; t = binlake.arrow_changes(sys.argv[1:]).read_all(); "
            "import hashlib; print(t.num_rows, hashlib.sha1(str(t.to_pylist()).encode()).hexdigest())")
    native = _run(code.replace("sys.argv[1:]", repr(sample_paths())))
    pure = _run(code.replace("sys.argv[1:]", repr(sample_paths())), BINLAKE_PURE="1")
    assert native.returncode == 0 and pure.returncode == 0, native.stderr + pure.stderr
    assert native.stdout == pure.stdout


def test_binlake_imports_without_pyarrow():
    code = ("import sys; sys.modules['pyarrow'] = None; import binlake; "
            "assert callable(binlake.arrow_changes); print('ok')")
    result = _run(code)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


LAZY_FILES = [
    "mysql-binlog-connector-java/mysql-bin.checksum-crc32",
    "rust_mysql_common/json.binlog.000001",
    "mariadb-10.11.19/std_data/mdev35643_mysql_80_binlog.000001",
]


@pytest.mark.parametrize("name", LAZY_FILES)
def test_huge_events_read_through_a_window_give_the_same_rows(corpus, name, monkeypatch):
    from binlake.read import reader
    from binlake.read.rows import LazyRowData
    path = str(corpus / name)
    expected = binlake.arrow_changes(path).read_all()
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)  # rows cut by the window: refills, growth
    lazy = [e for e in binlake.open(path) if isinstance(getattr(e, "rows_data", None), LazyRowData)]
    assert lazy, "the test must exercise the lazy path"
    got = binlake.arrow_changes(path).read_all()
    assert got.equals(expected)
    assert_equal_by_table(got, pure_table([path]))
