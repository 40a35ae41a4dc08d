"""`binlake dump --format json` through the native core
(rust/src/python/changes/json_lines.rs) equals the reference
(`jsonable.event_json` over the Python events), byte for byte, exit status
and errors included, on every corpus file, on server-written binlogs and on
damaged copies.

The rule under test (commands/dump.py `_dump_json`): a plain file is written
by the native core until an event it cannot write as the reference does (a
read error, a partial JSON update); the reference then
writes that file from that event on, its schema history as it was when the
file began. The tests also count the files the core wrote whole, so that
they cannot pass by leaving everything to the reference.
"""

from __future__ import annotations

import io

import pytest

from binlake import core
from binlake.cli.dispatch import main
from binlake.cli.commands import dump
from corpus.manifest import corpus_files

pytestmark = pytest.mark.skipif(not core.available(), reason="native core not built")

FILES = corpus_files()


def _dump(paths, native: bool, monkeypatch, *options) -> tuple:
    monkeypatch.setattr(dump, "NATIVE_PRINTER", native)
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.StringIO()
    status = main(["dump", "--format", "json", *options, *map(str, paths)], out=out, err=err)
    out.flush()
    return status, raw.getvalue(), err.getvalue()


class _Whole:
    """Counts the files the native core wrote whole, and those it handed over."""

    def __init__(self, monkeypatch):
        self.whole = self.handed_over = 0
        original = dump._json_natively

        def counting(path, out, schema):
            written = original(path, out, schema)
            if written is None:
                self.whole += 1
            else:
                self.handed_over += 1
            return written
        monkeypatch.setattr(dump, "_json_natively", counting)


def _differing(paths, monkeypatch, *options) -> list:
    return [str(p) for p in paths
            if _dump([p], True, monkeypatch, *options) != _dump([p], False, monkeypatch, *options)]


def test_native_json_equals_the_reference_on_the_corpus(monkeypatch):
    counted = _Whole(monkeypatch)
    assert not _differing(FILES, monkeypatch)
    # all but the damaged, encrypted and partial-JSON files (130 of 150 today)
    assert counted.whole >= 120, (counted.whole, counted.handed_over)
    assert counted.handed_over >= 10  # the hand-over itself is under test too


def test_several_files_in_one_run(monkeypatch):
    """One schema history across files, native and handed-over files mixed."""
    paths = FILES[:50]
    assert _dump(paths, True, monkeypatch) == _dump(paths, False, monkeypatch)


def test_selections_are_the_reference_s(monkeypatch):
    """Options the native core does not apply leave every file to the reference."""
    counted = _Whole(monkeypatch)
    assert not _differing(FILES[:40], monkeypatch, "--start-position=256")
    assert not _differing(FILES[:40], monkeypatch, "--stop-position=1000")
    assert counted.whole == counted.handed_over == 0


def test_damaged_files_write_what_the_reference_writes(tmp_path, monkeypatch):
    """A flipped byte near the end, a cut tail: the lines before the damage
    from the core, the rest (the error, its exit status) from the reference."""
    counted = _Whole(monkeypatch)
    sources = [p for p in FILES if p.stat().st_size > 300][::4][:30]
    for n, path in enumerate(sources):
        data = path.read_bytes()
        for kind, mutated in (("flip", data[:-40] + bytes([data[-40] ^ 0x5A]) + data[-39:]),
                              ("cut", data[:-7])):
            target = tmp_path / f"{n}-{kind}.bin"
            target.write_bytes(mutated)
            assert _dump([target], True, monkeypatch) == _dump([target], False, monkeypatch), \
                (path, kind)
    assert counted.handed_over >= 20


@pytest.mark.parametrize("huge", [False, True], ids=["events", "huge-events"])
def test_mutated_events_write_alike(huge, tmp_path, monkeypatch):
    """One changed byte in an event body, its checksum made right again, so
    that the change reaches the decoders and the value writers (huge: every
    rows event read through a small window, checked before it is written)."""
    from differential.test_dump_native import _mutants
    if huge:
        from binlake.read import reader
        from binlake.read.rows import LazyRowData
        monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
        monkeypatch.setattr(LazyRowData, "WINDOW", 32)
    counted = _Whole(monkeypatch)
    sources = [p for p in FILES if p.stat().st_size < 200_000][::3][:30]
    mismatches = []
    for n, path in enumerate(sources):
        for at, mutated in _mutants(path, 12, seed=n):
            target = tmp_path / "mutant.bin"
            target.write_bytes(mutated)
            if _dump([target], True, monkeypatch) != _dump([target], False, monkeypatch):
                mismatches.append((str(path), at))
    assert not mismatches, mismatches[:10]
    assert counted.whole > 50


def test_huge_rows_events_stream_alike(monkeypatch):
    """Every rows event taken as huge, its rows read through a 16-byte
    window that grows and refills: written natively, a window at a time,
    and still the reference's bytes."""
    from binlake.read import reader
    from binlake.read.rows import LazyRowData
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)
    counted = _Whole(monkeypatch)
    assert not _differing(FILES[::2], monkeypatch)
    assert counted.whole >= 60, (counted.whole, counted.handed_over)


@pytest.mark.server
def test_server_binlogs_native_equals_the_reference(server_binlogs, monkeypatch):
    """Every column type of the edge-value workload, under FULL and NO_LOG
    metadata, MINIMAL images and compressed rows events."""
    counted = _Whole(monkeypatch)
    assert _dump(server_binlogs, True, monkeypatch) == _dump(server_binlogs, False, monkeypatch)
    assert counted.whole == len(server_binlogs)
