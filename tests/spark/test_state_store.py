"""The lake's state under `_binlake/` has one writer: binlake.spark.state.store
(beside it, a run's undo record, binlake.spark.state.run_undo, which puts
back the state files it kept). No other module of binlake.spark, nor of the
CLI, writes a state file, or names the folder or a state file in it: they
call the store, which names them.

The rules are read from the source (ast), so they need neither Spark nor a
server; the store's own writes are then tried on a folder.
"""

from __future__ import annotations

import ast
import json
import os
import pathlib

import pytest

import binlake

SRC = pathlib.Path(binlake.__file__).parent
#: The modules that write under _binlake/ (relative to the binlake package).
WRITERS = {"spark/state/store.py", "spark/state/run_undo.py"}
STATE_DIR = "_binlake"
#: The lake's state files (and the requests' folder), by name.
STATE_FILES = {"manifest.json", "schema.json", "schema-from-snapshot.json",
               "schema-from-server.json", "status.json", "requests", "lock",
               "compactions.json"}
#: What writes a state file: the manifest's writer, binlake.atomic's
#: whole-or-nothing file, a schema history's save.
WRITING_CALLS = {"write_manifest", "replaced", "save"}
STORE_MODULE = "binlake.spark.state.store"


def _modules(root: pathlib.Path, package: str) -> list[pathlib.Path]:
    return sorted((root / package).rglob("*.py"))


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants (prose, not paths)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _names_state(text: str) -> bool:
    """A path (no words: help texts say where things are) to the folder, in
    it, or to a state file."""
    parts = text.split("/")
    return not any(c.isspace() for c in text) and (STATE_DIR in parts or parts[-1] in STATE_FILES)


def _called(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else \
        func.attr if isinstance(func, ast.Attribute) else None


def _on_a_spark_writer(call: ast.Call) -> bool:
    """`df.write....save(path)`: Spark's DataFrameWriter, not a state file."""
    node = call.func.value if isinstance(call.func, ast.Attribute) else None
    while isinstance(node, (ast.Attribute, ast.Call)):
        if isinstance(node, ast.Attribute) and node.attr in ("write", "writeStream"):
            return True
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return False


def _store_names(root: pathlib.Path) -> set[str] | None:
    """What the store gives other modules (its __all__); None without a store."""
    path = root / "spark" / "state" / "store.py"
    if not path.exists():
        return None
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def state_writes(root: pathlib.Path, relative: str) -> list[str]:
    """Where the module `relative` (to the binlake package at `root`) writes
    the lake's state itself, or names what the store alone names."""
    tree = ast.parse((root / relative).read_text())
    docstrings, found = _docstrings(tree), []
    in_spark = relative.startswith("spark/")
    store_names = _store_names(root)
    writer_bodies = {id(node) for fn in ast.walk(tree)
                     if isinstance(fn, ast.FunctionDef) and fn.name == "write_manifest"
                     and relative == "spark/state/manifest.py" for node in ast.walk(fn)}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Call) and in_spark and _called(node) in WRITING_CALLS \
                and id(node) not in writer_bodies and not _on_a_spark_writer(node):
            found.append(f"line {line}: calls {_called(node)}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docstrings:
            if _names_state(node.value):
                found.append(f"line {line}: names {node.value!r}")
        elif isinstance(node, (ast.Name, ast.Attribute)) \
                and getattr(node, "id", getattr(node, "attr", None)) == "STATE_DIR":
            found.append(f"line {line}: names STATE_DIR")
        elif isinstance(node, ast.ImportFrom) and node.module == STORE_MODULE \
                and store_names is not None:
            private = [a.name for a in node.names if a.name not in store_names]
            if private:
                found.append(f"line {line}: imports {', '.join(private)} (not the store's "
                             "to give: a state file's name or path)")
    return sorted(found, key=lambda finding: int(finding.split()[1].rstrip(":")))


def _checked(root: pathlib.Path) -> list[str]:
    return [str(p.relative_to(root)) for package in ("spark", "cli")
            for p in _modules(root, package) if str(p.relative_to(root)) not in WRITERS]


@pytest.mark.parametrize("relative", _checked(SRC))
def test_only_the_store_writes_the_lakes_state(relative):
    assert state_writes(SRC, relative) == [], (
        f"{relative} writes under _binlake/ itself: call binlake.spark.state.store instead")


def test_the_store_names_what_the_rules_know():
    """The state files this test guards are the store's, and those the undo
    record keeps and clears are among the store's too."""
    from binlake.spark.state import run_undo, store
    assert set(store.STATE_FILES) == STATE_FILES
    assert store.STATE_DIR == STATE_DIR
    assert set(run_undo.STATE_FILES) <= STATE_FILES
    assert set(run_undo.SCRATCH) <= set(store.FOLDERS)


def test_the_rules_catch_a_module_writing_the_state_itself(tmp_path):
    """Each way a module could write under _binlake/ itself is caught."""
    spark = tmp_path / "spark" / "run"
    spark.mkdir(parents=True)
    (spark / "bad.py").write_text(
        '"""Writes to _binlake/manifest.json: prose, not caught."""\n'
        "import os\n"
        "from binlake.atomic import replaced\n"
        "from binlake.spark.state.manifest import write_manifest\n"
        "def a(out, manifest, history):\n"
        "    write_manifest(os.path.join(out, '_binlake', 'manifest.json'), manifest)\n"
        "    history.save(out + '/_binlake/schema.json')\n"
        "    with replaced(out) as handle:\n"
        "        handle.write('')\n"
        "def b(df, path):\n"
        "    df.write.format('parquet').save(path)  # Spark's, not caught\n")
    found = state_writes(tmp_path, "spark/run/bad.py")
    assert found == ["line 6: calls write_manifest()", "line 6: names '_binlake'",
                     "line 6: names 'manifest.json'", "line 7: calls save()",
                     "line 7: names '/_binlake/schema.json'", "line 8: calls replaced()"], found


def test_the_store_writes_each_file_whole(tmp_path):
    """The manifest, the status and the requests written and read back, each
    with no partial file left; a staged state installed over the lake's."""
    from binlake.schema.history import Schema
    from binlake.spark.state import store
    from binlake.spark.state.manifest import Manifest
    out = str(tmp_path / "lake")
    with pytest.raises(ValueError, match="not a lake yet"):
        store.request_snapshot(out, "db.t")
    store.make_state_dir(out)
    assert store.has_state(out)
    store.save_manifest(out, Manifest().choosing("text", False))
    assert store.load_manifest(out).temporals == "text"
    store.write_status(out, {"state": "following"})
    assert json.loads((tmp_path / "lake" / "_binlake" / "status.json").read_text()) == {
        "state": "following"}
    first = store.request_snapshot(out, "db.t")
    second = store.request_snapshot(out, "db.u")
    assert store.requests(out) == [first, second]
    assert store.read_request(first) == "db.t"
    store.set_aside_request(first)
    store.remove_request(second)
    assert store.requests(out) == [] and os.path.exists(first + ".refused")
    staging = store.clear_folder(out, store.STAGING, make=True)
    store.stage_state(out, Manifest().choosing("typed", True), Schema())
    assert store.has_staged_state(out)
    store.install_staged_state(out)
    assert store.load_manifest(out).history and os.listdir(staging) == []
    assert store.load_schema_history(out, None).to_json() == Schema().to_json()
    assert not [name for _, _, names in os.walk(out) for name in names
                if name.endswith(".partial")]
    with pytest.raises(ValueError, match="not a folder"):
        store.folder_path(out, "manifest.json")


def test_the_history_is_read_once_per_file_and_written_only_when_changed(tmp_path):
    """Each load is a copy of one parse of the lake's file: what a run
    follows changes neither the file nor the next run's history; a run
    whose history is unchanged stages none (the lake's file stays as it
    was), one whose DDL changed it stages it whole."""
    from binlake.schema.history import Schema
    from binlake.spark.state import store
    from binlake.spark.state.manifest import Manifest
    out = str(tmp_path / "lake")
    store.make_state_dir(out)
    seeded = Schema()
    seeded.apply("CREATE TABLE t (id INT PRIMARY KEY)", "db", ("binlog.000001", 100))

    def run(history) -> bool:
        """Stage and install `history`; whether the schema file was staged."""
        staging = store.clear_folder(out, store.STAGING, make=True)
        store.stage_state(out, Manifest(), history)
        staged = os.path.exists(os.path.join(staging, store.SCHEMA))
        store.install_staged_state(out)
        return staged
    assert run(seeded)  # the first: no file yet
    first = store.load_schema_history(out, None)
    assert first.json_text() == seeded.json_text() and first is not seeded
    first.apply("CREATE TABLE u (id INT PRIMARY KEY)", "db", ("binlog.000001", 200))
    second = store.load_schema_history(out, None)
    assert ("db", "u") not in second.versions  # the first's statement is its own
    assert not run(second)  # unchanged: not written again
    assert run(first)  # changed: written whole
    third = store.load_schema_history(out, None)
    assert ("db", "u") in third.versions and third.json_text() == first.json_text()
    third.database_charsets["other"] = "latin1"  # a CREATE DATABASE changes it too
    assert run(third)
    assert store.load_schema_history(out, None).database_charsets["other"] == "latin1"
