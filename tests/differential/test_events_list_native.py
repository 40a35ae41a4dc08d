"""`binlake events` (the SHOW BINLOG EVENTS listing) through the native core
(rust/src/python/changes/listing.rs) equals the reference (`event_info`
over the Python events), byte for byte, exit status and errors included.

The rule under test (commands/events.py `_list_natively`): with no event
selection, the table and JSON lines of each file on disk are written by the
native core until an event it leaves to the reference (any read or decode
error), which lists the rest of that file. The tests count the files the
core listed whole, so that they cannot pass by leaving all to the reference.
"""

from __future__ import annotations

import io

import pytest

from binlake import core
from binlake.cli.dispatch import main
from binlake.cli.commands import events
from corpus.manifest import corpus_files

pytestmark = pytest.mark.skipif(not core.available(), reason="native core not built")

FILES = corpus_files()


def _list(paths, native: bool, monkeypatch, *options) -> tuple:
    monkeypatch.setattr(events, "NATIVE_LISTING", native)
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.StringIO()
    status = main(["events", *options, *map(str, paths)], out=out, err=err)
    out.flush()
    return status, raw.getvalue(), err.getvalue()


class _Native:
    """Counts the files the native core listed whole."""

    def __init__(self, monkeypatch):
        self.whole = 0
        original = core.native().EventListReader

        def counting(*args):
            reader = original(*args)
            self.readers.append(reader)
            return reader
        self.readers = []
        monkeypatch.setattr(core.native(), "EventListReader", counting)

    def count(self) -> int:
        return sum(r.refused is None for r in self.readers)


@pytest.mark.parametrize("options", [("--format=json",), (), ("--format=json", "--limit=7")],
                         ids=" ".join)
def test_native_listing_equals_the_reference_on_the_corpus(options, monkeypatch):
    counted = _Native(monkeypatch)
    differing = [str(p) for p in FILES
                 if _list([p], True, monkeypatch, *options) != _list([p], False, monkeypatch, *options)]
    assert not differing, differing[:10]
    assert counted.count() >= 120, counted.count()


def test_several_files_in_one_listing(monkeypatch):
    for options in [(), ("--format=json", "--limit=100")]:
        paths = FILES[:30]
        assert _list(paths, True, monkeypatch, *options) == _list(paths, False, monkeypatch, *options)


def test_damaged_files_list_what_the_reference_lists(tmp_path, monkeypatch):
    sources = [p for p in FILES if p.stat().st_size > 300][::4][:30]
    for n, path in enumerate(sources):
        data = path.read_bytes()
        for kind, mutated in (("flip", data[:-40] + bytes([data[-40] ^ 0x5A]) + data[-39:]),
                              ("cut", data[:-7])):
            target = tmp_path / f"{n}-{kind}.bin"
            target.write_bytes(mutated)
            for options in [(), ("--format=json",)]:
                assert _list([target], True, monkeypatch, *options) == \
                    _list([target], False, monkeypatch, *options), (path, kind)


def test_mutated_events_list_alike(tmp_path, monkeypatch):
    from differential.test_dump_native import _mutants
    sources = [p for p in FILES if p.stat().st_size < 200_000][::3][:30]
    mismatches = []
    for n, path in enumerate(sources):
        for at, mutated in _mutants(path, 8, seed=n):
            target = tmp_path / "mutant.bin"
            target.write_bytes(mutated)
            if _list([target], True, monkeypatch, "--format=json") != \
                    _list([target], False, monkeypatch, "--format=json"):
                mismatches.append((str(path), at))
    assert not mismatches, mismatches[:10]


@pytest.mark.server
def test_server_binlogs_list_alike(server_binlogs, monkeypatch):
    counted = _Native(monkeypatch)
    for options in [(), ("--format=json",)]:
        assert _list(server_binlogs, True, monkeypatch, *options) == \
            _list(server_binlogs, False, monkeypatch, *options)
    assert counted.count() == 2 * len(server_binlogs)
