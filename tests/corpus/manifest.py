"""Read the corpus MANIFEST.md: per file, its expected condition and event counts."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_ENV = "BINLAKE_CORPUS"


def corpus_dir() -> Path:
    """`$BINLAKE_CORPUS`, else `../shared/binlogs` beside the project."""
    default = Path(__file__).resolve().parents[3] / "shared" / "binlogs"
    return Path(os.environ.get(CORPUS_ENV, default))


def corpus_files() -> list[Path]:
    """Every corpus file but its notes, sorted; when the corpus is missing, one
    placeholder that names where it was looked for, so a test parametrized
    over it fails saying so rather than collecting nothing."""
    root = corpus_dir()
    if not (root / "MANIFEST.md").exists():
        return [Path(f"<corpus missing: {root} (set {CORPUS_ENV})>")]
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and p.name not in ("MANIFEST.md", "keys.txt"))

_ROW = re.compile(r"^\| `([^`]+)` \|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|\s*$")
_DETAIL = re.compile(r"^#### `([^`]+)`")


@dataclass
class Entry:
    path: str
    condition: str
    events: dict = field(default_factory=dict)

    @property
    def is_binlog(self) -> bool:
        return "not a binlog" not in self.condition

    @property
    def must_fail(self) -> bool:
        c = self.condition.upper()
        return (any(w in c for w in ("CORRUPT", "TRUNCATED", "ENCRYPTED", "MALFORMED",
                                     "NOT A BINLOG")) and "EVENTS INTACT" not in c) \
            or "STALE CRC32" in c

    @property
    def encrypted(self) -> bool:
        return "ENCRYPTED" in self.condition.upper()


def _counts(text: str) -> dict:
    counts = {}
    for item in text.split(","):
        name, _, number = item.strip().partition("×")
        if number.strip().isdigit():
            counts[name.split(" (")[0].strip()] = int(number)
    return counts


def read_manifest(corpus: Path) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    current = None
    for line in (corpus / "MANIFEST.md").read_text(encoding="utf-8").splitlines():
        if m := _ROW.match(line):
            entries[m.group(1)] = Entry(m.group(1), m.group(6).strip())
        elif m := _DETAIL.match(line):
            current = entries.get(m.group(1))
        elif current is not None and line.startswith("- events:"):
            current.events = _counts(line[len("- events:"):])
    return entries
