"""binlake.spark's shape: subpackages by layer, each importing only the
layers below it, and no module, function or class past its size limit.

Read from the source (ast), so it needs neither Spark nor a server.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import binlake.spark

SPARK = pathlib.Path(binlake.spark.__file__).parent
#: The layers, bottom first: a module imports its own layer's and those below.
LAYERS = ("read", "plans", "state", "rules", "commits", "snapshot", "run")
#: The limits (issue 46): lines of a module, a function, a class.
MODULE_LINES, FUNCTION_LINES, CLASS_LINES = 600, 80, 300


def _modules() -> list[pathlib.Path]:
    return sorted(SPARK.rglob("*.py"))


def _layer(path: pathlib.Path) -> str | None:
    parts = path.relative_to(SPARK).parts
    return parts[0] if len(parts) > 1 else None


def _imported(tree: ast.AST) -> set[str]:
    """The binlake.spark layers a module imports, at its top or in a function."""
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["binlake", "spark"] and len(parts) > 2 and parts[2] in LAYERS:
                found.add(parts[2])
    return found


def test_every_module_is_in_a_layer():
    loose = [p.name for p in _modules() if _layer(p) is None and p.name != "__init__.py"]
    assert loose == []
    assert {p.name for p in SPARK.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SPARK)))
def test_no_import_up_a_layer(path):
    layer = _layer(path)
    if layer is None:  # binlake.spark's own __init__: the public names, from any layer
        return
    above = {name for name in _imported(ast.parse(path.read_text()))
             if LAYERS.index(name) > LAYERS.index(layer)}
    assert above == set(), f"{path.relative_to(SPARK)} ({layer}) imports {sorted(above)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SPARK)))
def test_sizes(path):
    source = path.read_text()
    lines = source.count("\n")
    assert lines <= MODULE_LINES, f"{lines} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            length = node.end_lineno - node.lineno + 1
            limit = CLASS_LINES if isinstance(node, ast.ClassDef) else FUNCTION_LINES
            assert length <= limit, f"{node.name}: {length} lines"


#: What writes a Delta table (binlake.spark.commits.delta and .delta_upkeep).
DELTA_WRITES = {"commit_table", "merge_net_changes", "merge_copies", "merge_history",
                "after_run", "maintain"}
#: ... and the only modules that may call them: the run's one committer,
#: `binlake maintain` (the pipeline's `maintain_lake`), and their own modules.
DELTA_WRITERS = {"commits/table_commits.py", "run/pipeline.py", "commits/delta.py",
                 "commits/delta_upkeep.py"}


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SPARK)))
def test_one_place_commits_to_the_delta_tables(path):
    """A run's tables are committed by binlake.spark.commits.table_commits
    alone (issue 46: one place that commits)."""
    if str(path.relative_to(SPARK)) in DELTA_WRITERS:
        return
    tree = ast.parse(path.read_text())
    imported = {alias.asname or alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    ("binlake.spark.commits.delta", "binlake.spark.commits.delta_upkeep"))
                for alias in node.names}
    assert imported & DELTA_WRITES == set()
