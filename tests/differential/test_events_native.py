"""Whole events of the native reader against the pure one.

The native reader makes headers in Rust and takes the bodies of the
commonest small events (MariaDB GTID, XID, plain rows events) from the
native decoders (rust/src/python/reader.rs `body_fields`); every other event
and every body the native decoder does not take whole goes through the
reference decoders. So over every corpus file, and seeded mutations of the
small ones, both readers must give equal events (dataclass equality: every
field, the header, a rows event's table map and row bytes) of the same
classes, then the same error (class, offset, wording) and warnings.
"""

from __future__ import annotations

import random

import pytest

from binlake import core
from binlake.errors import BinlogError
from binlake.read.reader import BinlogReader

from differential.test_framing_native import _corpus_files, _id, _mutate, _small_files
from differential.test_framing_native import walk as walk_frames

pytestmark = pytest.mark.skipif(not core.available(), reason="native core not built")


def read_all(path, pure: bool, **options):
    """(events, error, warnings) of one reader over `path`."""
    core.use_pure(pure)
    try:
        reader = BinlogReader(path, **options)
        events, error = [], None
        try:
            for event in reader:
                events.append((type(event).__name__, event))
        except BinlogError as exc:
            error = (type(exc).__name__, exc.offset, exc.detail)
        except Exception as exc:  # noqa: BLE001 - a crash is a result to compare too
            error = ("crash", type(exc).__name__, str(exc))
        return events, error, list(reader.stats.warnings)
    finally:
        core.use_pure(False)


@pytest.mark.parametrize("path", _corpus_files(), ids=_id)
@pytest.mark.parametrize("force", [False, True], ids=["strict", "force"])
def test_corpus_file_events_alike(path, force):
    assert read_all(path, False, force=force) == read_all(path, True, force=force)


@pytest.mark.parametrize("chunk", range(20))
def test_mutations_events_alike(chunk, tmp_path):
    files = _small_files()
    if not files:
        pytest.skip("corpus missing")
    rng = random.Random(0xE7E7 + chunk)
    for case in range(50):
        source = rng.choice(files)
        mutated = _mutate(rng, source.read_bytes(), walk_frames(source, True)[0])
        path = tmp_path / f"m{case}.bin"
        path.write_bytes(mutated)
        options = {"force": rng.random() < 0.3, "verify_checksums": rng.random() < 0.9}
        pure = read_all(path, True, **options)
        if pure[1] is not None and pure[1][0] == "crash":
            continue
        native = read_all(path, False, **options)
        assert native == pure, f"{_id(source)} mutated (chunk {chunk}, case {case}, {options})"


@pytest.mark.server
def test_server_binlogs_events_alike(server_binlogs):
    """Metadata FULL and NO_LOG, MINIMAL images, compressed rows events."""
    for path in server_binlogs:
        native = read_all(path, False)
        assert native[0] and native[1] is None, path
        assert native == read_all(path, True), path
