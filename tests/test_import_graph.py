"""The house has no circles: no Python module, no layer (subpackage) and no
Rust module imports something that imports it back (scripts/import_graph.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
import_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_graph)


def test_python_modules_have_no_circle():
    graph = import_graph.python_graph(ROOT / "src")
    assert "binlake.read.reader" in graph and graph["binlake.read.reader"]
    assert import_graph.circles(graph) == []


def test_python_layers_have_no_circle():
    layers = import_graph.layers(import_graph.python_graph(ROOT / "src"))
    assert {"read", "schema", "connection", "text", "live", "cli", "spark"} <= set(layers)
    assert import_graph.circles(layers) == []


def test_rust_modules_have_no_circle():
    graph = import_graph.rust_graph(ROOT / "rust" / "src")
    assert "crate::framing" in graph and graph["crate::framing"]
    assert import_graph.circles(graph) == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_python_circle_is_found_even_through_a_local_import(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import x\n",
        "pkg/b.py": "def x():\n    from . import a\n",
        "pkg/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import x\n",
    })
    graph = import_graph.python_graph(tmp_path, "pkg")
    assert import_graph.circles(graph) == [["pkg.a", "pkg.b"]]
    assert graph["pkg.c"] == set()  # typing-only imports never run


def test_a_circle_between_layers_is_found(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "", "pkg/low/__init__.py": "", "pkg/high/__init__.py": "",
        "pkg/low/one.py": "from pkg.high.two import y\n",
        "pkg/high/two.py": "y = 1\n", "pkg/high/three.py": "from pkg.low import one\n",
    })
    graph = import_graph.python_graph(tmp_path, "pkg")
    assert import_graph.circles(graph) == []
    assert import_graph.circles(import_graph.layers(graph)) == [["high", "low"]]


def test_a_rust_circle_is_found_between_parent_and_child(tmp_path):
    _write(tmp_path, {
        "lib.rs": "mod outer;\nmod other;\n",
        "outer/mod.rs": "mod inner;\nuse inner::thing;\npub fn f() { thing() }\n",
        "outer/inner.rs": "pub fn thing() { super::f() }\n",
        "other.rs": "pub use crate::outer::f; // a comment naming crate::nothing\n",
    })
    graph = import_graph.rust_graph(tmp_path)
    assert import_graph.circles(graph) == [["crate::outer", "crate::outer::inner"]]
    assert graph["crate::other"] == {"crate::outer"}
