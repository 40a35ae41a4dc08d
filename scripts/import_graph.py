#!/usr/bin/env python3
"""The import graphs of the Python package and of the Rust crate, and their circles.

    scripts/import_graph.py            # prints every circle; exit status 1 if there is one
    scripts/import_graph.py --edges    # and every module's imports

Python: every `import` and `from ... import` of a module of src/binlake,
at the top or inside a function (a local import hides a circle, it does not
break it); imports under `if TYPE_CHECKING:` are left out, as they never run.
The subpackages (read, schema, connection, text, live, cli, spark, testing)
must not form a circle either: each is one layer of the house.

Rust: every `crate::`, `super::` and `self::` path of a module of rust/src,
and a parent's use of its own child modules (declaring a child, or only
re-exporting from it, is no use); the `#[cfg(test)]` part of a file is left
out.

Strategy: both are read as text (ast for Python, patterns for Rust), so
nothing is built or imported to check them.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# -- Python ------------------------------------------------------------------------------

def python_graph(src: Path, package: str = "binlake") -> dict[str, set[str]]:
    """module -> the package's modules it imports (`src` holds the package folder)."""
    files = {}
    for path in (src / package).rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        files[".".join(parts)] = (path, is_package)

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, (path, is_package) in files.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(node) for block in ast.walk(tree)
                       if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                       for node in ast.walk(block)}
        here = name if is_package else name.rpartition(".")[0]
        imports = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                imports.update(filter(None, (known(alias.name) for alias in node.names)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    submodule = f"{module}.{alias.name}"
                    if submodule in files:
                        imports.add(submodule)
                    elif (found := known(module)) and not alias.name.startswith("_native"):
                        imports.add(found)
        imports.discard(name)
        graph[name] = imports
    return graph


def layers(graph: dict[str, set[str]], package: str = "binlake") -> dict[str, set[str]]:
    """The same graph between the package's subpackages (its root modules left out:
    they are what every layer shares)."""
    subpackages = {m for m in graph if m.count(".") == 1 and any(o.startswith(m + ".") for o in graph)}

    def layer(module: str) -> str | None:
        top = ".".join(module.split(".")[:2])
        return top.split(".")[1] if top in subpackages else None

    out: dict[str, set[str]] = {}
    for module, imports in graph.items():
        source = layer(module)
        if source is None:
            continue
        out.setdefault(source, set()).update(
            target for target in map(layer, imports) if target and target != source)
    return out


# -- Rust --------------------------------------------------------------------------------

_USE = re.compile(r"\b(pub(?:\s*\([^)]*\))?\s+)?use\s+([^;]*);", re.S)


def _rust_code(text: str) -> str:
    """A file's code without comments, string contents or its test module."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'b?"(?:\\.|[^"\\])*"', '""', text, flags=re.S)
    cut = text.find("#[cfg(test)]")
    return text[:cut] if cut >= 0 else text


def _use_paths(tree: str, prefix: tuple = ()) -> list[tuple[list[str], str | None]]:
    """A use tree (`a::{b, c::d as e}`) as (path segments, name bound) pairs."""
    tree = tree.strip()
    brace = tree.find("{")
    if brace >= 0 and tree.endswith("}"):
        head = tuple(s.strip() for s in tree[:brace].strip().rstrip(":").split("::") if s.strip())
        items, depth, current = [], 0, ""
        for ch in tree[brace + 1:-1]:
            if ch == "," and depth == 0:
                items.append(current)
                current = ""
                continue
            depth += (ch == "{") - (ch == "}")
            current += ch
        items.append(current)
        return [pair for item in items if item.strip() for pair in _use_paths(item, prefix + head)]
    alias = None
    renamed = re.match(r"(.*?)\s+as\s+(\w+)$", tree, re.S)
    if renamed:
        tree, alias = renamed.groups()
    segments = list(prefix) + [s.strip() for s in tree.split("::") if s.strip()]
    if segments and segments[-1] == "self":
        segments = segments[:-1]
    bound = alias or (segments[-1] if segments and segments[-1] != "*" else None)
    return [(segments, bound)]


def rust_graph(src: Path) -> dict[str, set[str]]:
    """module (`crate::a::b`) -> the crate's modules it uses."""
    files = {}
    for path in src.rglob("*.rs"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        files["::".join(["crate", *parts])] = path

    def deepest(path: str) -> str | None:
        segments = path.split("::")
        while segments and "::".join(segments) not in files:
            segments.pop()
        return "::".join(segments) or None

    def children(module: str) -> set[str]:
        prefix = module + "::"
        return {m[len(prefix):] for m in files if m.startswith(prefix) and "::" not in m[len(prefix):]}

    def absolute(module: str, segments: list[str]) -> str | None:
        base = module.split("::")
        if segments[0] == "crate":
            base, segments = ["crate"], segments[1:]
        elif segments[0] in ("self", "super"):
            while segments and segments[0] in ("self", "super"):
                if segments[0] == "super":
                    base = base[:-1]
                segments = segments[1:]
        elif segments[0] not in children(module):
            return None
        return "::".join(base + segments)

    graph = {}
    for module, path in files.items():
        code = _rust_code(path.read_text())
        uses, reexported = set(), {}
        for match in _USE.finditer(code):
            public, tree = match.groups()
            for segments, bound in _use_paths(tree):
                target = deepest(full) if segments and (full := absolute(module, segments)) else None
                if not target or target == module:
                    continue
                if public and target.startswith(module + "::"):
                    if bound:  # a re-export of a child's item is a use only where the parent uses it
                        reexported[bound] = target
                    continue
                uses.add(target)
        body = re.sub(r"\b(pub(?:\s*\([^)]*\))?\s+)?mod\s+\w+\s*;", "", _USE.sub("", code))
        for match in re.finditer(r"(?<![\w:])((?:crate|super|self|\w+)(?:::\w+)+)", body):
            full = absolute(module, match.group(1).split("::"))
            target = deepest(full) if full else None
            if target and target != module:
                uses.add(target)
        uses.update(target for bound, target in reexported.items()
                    if re.search(r"(?<![\w:])" + re.escape(bound) + r"\b", body))
        graph[module] = uses
    return graph


# -- circles -----------------------------------------------------------------------------

def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def report(title: str, graph: dict[str, set[str]], out=sys.stdout) -> int:
    found = circles(graph)
    for component in found:
        out.write(f"{title}: circle: {', '.join(component)}\n")
        for member in component:
            out.write(f"    {member} -> {', '.join(sorted(graph[member] & set(component)))}\n")
    return len(found)


def main(argv: list[str]) -> int:
    python = python_graph(ROOT / "src")
    rust = rust_graph(ROOT / "rust" / "src")
    graphs = (("python modules", python), ("python layers", layers(python)), ("rust modules", rust))
    if "--edges" in argv:
        for title, graph in graphs:
            for node in sorted(graph):
                print(f"{title}: {node} -> {', '.join(sorted(graph[node]))}")
    found = sum(report(title, graph) for title, graph in graphs)
    if not found:
        print(f"no circles: {len(python)} Python modules, {len(rust)} Rust modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
