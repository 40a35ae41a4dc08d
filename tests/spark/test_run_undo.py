"""binlake.spark.state.run_undo: a run's writes undone, every byte as it was."""
from __future__ import annotations

import os
from pathlib import Path

from binlake.spark.state.run_undo import RunUndo


def lake_tree(out: Path) -> dict:
    """Every file's bytes and every folder of the lake."""
    return {str(p.relative_to(out)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(out.rglob("*"))}


def a_lake(out: Path) -> None:
    (out / "_binlake").mkdir(parents=True)
    (out / "_binlake" / "manifest.json").write_text('{"run": 1}')
    (out / "changes" / "database=d" / "table=t").mkdir(parents=True)
    (out / "changes" / "database=d" / "table=t" / "old.parquet").write_bytes(b"old")


def a_run(out: Path, undo: RunUndo) -> None:
    """What a run writes: new change files in new and old folders, the
    manifest replaced by a rename, a schema history where there was none."""
    added = [out / "changes" / "database=d" / "table=t" / "new.parquet",
             out / "changes" / "database=d" / "table=u" / "date=1" / "new.parquet",
             out / "events" / "date=1" / "e.parquet"]
    undo.adding([str(p) for p in added])
    for path in added:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"new")
    (out / "_binlake" / "manifest.json.partial").write_text('{"run": 2}')
    (out / "_binlake" / "manifest.json.partial").replace(out / "_binlake" / "manifest.json")
    (out / "_binlake" / "schema.json").write_text("{}")
    (out / "_binlake" / "staging").mkdir()


def test_a_run_rolled_back_leaves_every_byte_and_folder_as_it_was(tmp_path):
    a_lake(tmp_path)
    before = lake_tree(tmp_path)
    undo = RunUndo.begin(str(tmp_path))
    a_run(tmp_path, undo)
    undo.roll_back()
    assert lake_tree(tmp_path) == before


def test_a_run_killed_is_undone_by_the_next(tmp_path):
    a_lake(tmp_path)
    before = lake_tree(tmp_path)
    a_run(tmp_path, RunUndo.begin(str(tmp_path)))  # then killed: nothing more
    said = []
    assert RunUndo.recover(str(tmp_path), said.append)
    assert lake_tree(tmp_path) == before and len(said) == 1
    assert not RunUndo.recover(str(tmp_path), said.append)  # nothing more to undo


def test_a_roll_back_killed_on_the_way_is_done_again_whole(tmp_path, monkeypatch):
    a_lake(tmp_path)
    before = lake_tree(tmp_path)
    undo = RunUndo.begin(str(tmp_path))
    a_run(tmp_path, undo)
    real_remove, calls = os.remove, []

    def killed(path, *args, **options):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt  # a kill half-way through the files
        real_remove(path, *args, **options)
    monkeypatch.setattr(os, "remove", killed)
    try:
        undo.roll_back()
    except KeyboardInterrupt:
        pass
    monkeypatch.undo()
    assert RunUndo.recover(str(tmp_path), lambda line: None)
    assert lake_tree(tmp_path) == before


def test_a_run_whose_tables_commit_keeps_its_writes(tmp_path):
    a_lake(tmp_path)
    undo = RunUndo.begin(str(tmp_path))
    a_run(tmp_path, undo)
    undo.forget()
    after = lake_tree(tmp_path)
    undo.roll_back()  # past the point of no return: nothing
    assert lake_tree(tmp_path) == after
    assert not (tmp_path / "_binlake" / "undo").exists()
    assert not RunUndo.recover(str(tmp_path), lambda line: None)
