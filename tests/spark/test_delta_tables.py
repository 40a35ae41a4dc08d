"""Each Delta table loaded once per process (binlake.spark.commits.delta_tables):
what `opened` hands out is always the table as a fresh load would see it,
whoever committed since, and whatever was deleted and made again."""
from __future__ import annotations

import shutil

import pytest

pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

from binlake.spark.commits import delta_tables  # noqa: E402
from binlake.spark.commits.delta_tables import opened  # noqa: E402


def rows(uri: str, values: list[int], mode: str = "append") -> None:
    deltalake.write_deltalake(uri, pa.table({"id": pa.array(values, pa.int64())}), mode=mode)


def ids(table) -> list[int]:
    return sorted(table.to_pyarrow_table().column("id").to_pylist())


def test_the_same_table_is_handed_out_and_brought_up_to_date(tmp_path, monkeypatch):
    uri = str(tmp_path / "db.t")
    rows(uri, [1])
    first = opened(uri)
    assert opened(uri) is first and first.version() == 0
    loads = []
    real = deltalake.DeltaTable
    monkeypatch.setattr(deltalake, "DeltaTable",
                        lambda *a, **k: loads.append(a) or real(*a, **k))
    rows(uri, [2])  # another writer's commit (not through `opened`)
    again = opened(uri)
    assert again is first and again.version() == 1 and ids(again) == [1, 2]
    assert loads == []  # moved on from the new log entries, not loaded anew


def test_a_table_deleted_and_made_again_is_loaded_anew(tmp_path):
    uri = str(tmp_path / "db.t")
    rows(uri, [1])
    rows(uri, [2])
    old = opened(uri)
    shutil.rmtree(uri)
    rows(uri, [7])  # version 0 again, other rows
    rows(uri, [8])  # version 1 again: the same version number as the one held
    fresh = opened(uri)
    assert fresh is not old and ids(fresh) == [7, 8]


def test_at_most_open_tables_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(delta_tables, "OPEN_TABLES", 2)
    uris = [str(tmp_path / f"db.t{n}") for n in range(3)]
    for uri in uris:
        rows(uri, [1])
        opened(uri)
    assert [u for u in delta_tables._opened if u in uris] == uris[1:]


def test_a_table_is_there_once_its_first_entry_is(tmp_path):
    """A run killed as it created a table leaves `_delta_log/` with no
    entry (a commit's temporary file at most): no table, and writing it
    anew works; a table whose first entries a checkpoint let go is there."""
    uri = str(tmp_path / "db.t")
    (tmp_path / "db.t" / "_delta_log").mkdir(parents=True)
    (tmp_path / "db.t" / "_delta_log" / "_commit_0d1e.json.tmp").write_text("{")
    assert not delta_tables.exists(uri)
    rows(uri, [1])
    assert delta_tables.exists(uri) and ids(opened(uri)) == [1]
    rows(uri, [2])
    opened(uri).create_checkpoint()
    opened(uri).cleanup_metadata()
    (tmp_path / "db.t" / "_delta_log" / f"{0:020d}.json").unlink()
    assert delta_tables.exists(uri) and ids(opened(uri)) == [1, 2]
