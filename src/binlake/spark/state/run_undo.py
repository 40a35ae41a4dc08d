"""A run's writes to the lake, undone when the run is refused or killed before
its tables commit.

Strategy: a run reads binlogs into changes/ and events/ and records them in
`_binlake/manifest.json` and `schema.json` before its tables are staged, and
only staging the tables finds what must be refused (a value a typed column
cannot hold, a row image nothing completes). So a run opens an undo record,
`_binlake/undo/`, before its first write: hard links to the state files as
they were (every write of them is a rename of a new file, so a link keeps
the old bytes at no cost) and, written before each commit moves them into
place, the data files and folders that commit adds. A refusal undoes: the
files added go, the folders they made go, the state files get their old
bytes back, and every byte of the lake is as it was. The record is dropped
just before the first Delta commit, the point after which the tables'
own logs say what was applied. A run killed while the record exists is
undone by the next run: a kill leaves nothing half-applied either way, and
the binlogs are read again.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil

from binlake.atomic import fsync_directory, replaced

#: The folder of the record, under _binlake/.
UNDO = "undo"
#: The lake's state files a run may replace (under _binlake/).
STATE_FILES = ("manifest.json", "schema.json", "schema-from-snapshot.json")
#: What a run stages under _binlake/ on its way, none of it the lake's.
SCRATCH = ("staging", "snapshot", "snapshot-round", "tables.new")
#: Where the record lists what the run's commits added.
ADDED = "added.json"


class RunUndo:
    """The undo record of one run on the lake at `out`."""

    def __init__(self, out: str):
        self.out = out
        self.folder = os.path.join(out, "_binlake", UNDO)
        self.added: list[str] = []   # files, relative to out
        self.made: list[str] = []    # folders, relative to out, parents first
        self.open = True

    @classmethod
    def begin(cls, out: str) -> "RunUndo":
        """Open the record: the state files as they are now. (A record
        left by a killed run is undone first: RunUndo.recover.)"""
        undo = cls(out)
        shutil.rmtree(undo.folder, ignore_errors=True)
        os.makedirs(undo.folder)
        for name in STATE_FILES:
            path = os.path.join(out, "_binlake", name)
            if os.path.exists(path):
                _keep(path, os.path.join(undo.folder, name))
        undo._save()
        return undo

    def adding(self, files: list[str]) -> None:
        """Record, before they are moved in, the files (absolute paths
        under out) a commit adds and the folders it will make for them."""
        for path in files:
            self._note_folders(os.path.dirname(path))
            self.added.append(os.path.relpath(path, self.out))
        self._save()

    def forget(self) -> None:
        """The run goes on to commit its tables: its writes stay."""
        if self.open:
            self.open = False
            shutil.rmtree(self.folder, ignore_errors=True)
            fsync_directory(self.folder)

    def roll_back(self) -> None:
        """Every byte of the lake as it was when the record was opened (again
        from the start if killed on the way)."""
        if not self.open:
            return  # the tables have committed: their logs say what was applied
        for scratch in SCRATCH:
            shutil.rmtree(os.path.join(self.out, "_binlake", scratch), ignore_errors=True)
        for relative in self.added:
            try:
                os.remove(os.path.join(self.out, relative))
            except FileNotFoundError:
                pass  # its commit had not moved it yet
        for relative in reversed(self.made):
            try:
                os.rmdir(os.path.join(self.out, relative))
            except OSError:
                pass  # gone already, or holds what another run wrote
        for name in STATE_FILES:
            kept, path = os.path.join(self.folder, name), os.path.join(self.out, "_binlake", name)
            if os.path.exists(kept) and os.path.exists(path) and os.path.samefile(kept, path):
                continue  # never replaced (and rename() of a link to itself does nothing)
            if os.path.exists(kept):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path + ".undone")  # left by a roll-back killed on the way
                _keep(kept, path + ".undone")  # the record keeps its own link
                os.replace(path + ".undone", path)
            elif os.path.exists(path):
                os.remove(path)
        fsync_directory(os.path.join(self.out, "_binlake", "manifest.json"))
        self.forget()

    @classmethod
    def recover(cls, out: str, log) -> bool:
        """Undo a run killed while its record was open; whether there was one."""
        undo = cls(out)
        try:
            with open(os.path.join(undo.folder, ADDED)) as handle:
                found = json.load(handle)
        except FileNotFoundError:
            if os.path.isdir(undo.folder):  # killed while opening it: nothing written yet
                shutil.rmtree(undo.folder)
            return False
        undo.added, undo.made = found["added"], found["made"]
        log("undoing the writes of a run killed before its tables committed")
        undo.roll_back()
        return True

    def _note_folders(self, folder: str) -> None:
        missing = []
        while not os.path.isdir(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for path in reversed(missing):
            relative = os.path.relpath(path, self.out)
            if relative not in self.made:
                self.made.append(relative)

    def _save(self) -> None:
        with replaced(os.path.join(self.folder, ADDED)) as handle:
            json.dump({"added": self.added, "made": self.made}, handle)


def uncommitted_files(out: str) -> list[str]:
    """The files (relative to `out`) the run now open on the lake has moved
    into it and may yet undo (none: no run is open). A reader leaves them
    out: until the run commits, they are no part of the lake."""
    try:
        with open(os.path.join(out, "_binlake", UNDO, ADDED)) as handle:
            return json.load(handle)["added"]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _keep(path: str, kept: str) -> None:
    """A link to `path`'s bytes (a copy where links are not had)."""
    try:
        os.link(path, kept)
    except OSError:
        shutil.copy2(path, kept)


__all__ = ["RunUndo", "uncommitted_files"]
