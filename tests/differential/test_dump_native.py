"""`binlake dump` through the native whole-file printer (rust/src/sink/dump.rs)
equals the Python `TextPrinter`, byte for byte, on every corpus file and on
server-written binlogs, with the common options, in two time zones.

The rule under test (commands/dump.py `_events_to_print`): with no event
selection and printing options the native printer supports, each file is
offered to it; it prints the file whole or refuses before printing anything
(an event type it does not print, a reading error, rows its `###` printer
leaves to the reference), and then the Python printer prints that file.
So the output must be the same either way; the test also counts which
files the native printer took, so that it cannot pass by refusing all.
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import tempfile
import time

import pytest

from binlake import core
from corpus.manifest import corpus_files
from binlake.cli.dispatch import main
from binlake.cli.commands import dump
from binlake.text.mysqlbinlog import TextPrinter

pytestmark = pytest.mark.skipif(not core.available(), reason="native core not built")


FILES = corpus_files()

OPTIONS = [
    ("--base64-output=decode-rows", "-v"),
    ("--base64-output=decode-rows", "-vv"),
    ("--base64-output=decode-rows",),
    ("--base64-output=decode-rows", "-v", "--short-form"),
    ("--base64-output=never", "-v"),
    ("--base64-output=decode-rows", "-v", "--skip-print-row-count", "--skip-annotate-row-events"),
    ("--base64-output=decode-rows", "-v", "--mysql-events=ignorable"),
    ("-v",),
    (),
    ("-vv", "--mysql-events=ignorable"),
    ("--short-form",),
]
#: Positions (the native printer applies them to a single file).
POSITION_OPTIONS = [
    ("--start-position=256",),
    ("--stop-position=1000",),
    ("--start-position=300", "--stop-position=2000"),
]
#: Options the native printer does not take: the Python printer prints all.
FALLBACK_OPTIONS = [
    ("--base64-output=decode-rows", "-v", "--database=test"),
    ("-v", "--hexdump"),
]


@pytest.fixture(params=["UTC", "America/New_York"])
def time_zone(request):
    """mysqlbinlog prints local time: both printers must agree in each zone."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    yield request.param
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


_LOAD_DIR = tempfile.mkdtemp(prefix="binlake-dump-native-")
atexit.register(shutil.rmtree, _LOAD_DIR, True)  # (one per test process, not one per run left)


def run_dump(arguments, native: bool, monkeypatch) -> tuple:
    """(status, stdout bytes, stderr) of `binlake dump ARGUMENTS`, the native
    printer offered or not."""
    monkeypatch.setattr(dump, "NATIVE_PRINTER", native)
    # LOAD DATA files are written with the first free name: the same each run
    shutil.rmtree(_LOAD_DIR, ignore_errors=True)
    os.makedirs(_LOAD_DIR)
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
    err = io.StringIO()
    status = main(["dump", *arguments, f"--local-load={_LOAD_DIR}"], out=out, err=err)
    out.flush()
    return status, raw.getvalue(), err.getvalue()


def _dump(paths, options, native: bool, monkeypatch) -> tuple:
    return run_dump([*options, *map(str, paths)], native, monkeypatch)


def mismatches(dump_with, files, option_sets, monkeypatch) -> list:
    """(file, options) where `dump_with(paths, options, native, monkeypatch)`
    differs with the native printer offered and without."""
    found = []
    for options in option_sets:
        for path in files:
            if dump_with([path], options, True, monkeypatch) \
                    != dump_with([path], options, False, monkeypatch):
                found.append((str(path), options))
    return found


class _Taken:
    """Counts the files the native printer printed."""

    def __init__(self, monkeypatch):
        self.count = 0
        original = TextPrinter.print_file_natively

        def counting(printer, path, *args):
            done = original(printer, path, *args)
            self.count += done
            return done
        monkeypatch.setattr(TextPrinter, "print_file_natively", counting)


def test_native_printer_equals_python_printer_on_the_corpus(time_zone, monkeypatch):
    taken = _Taken(monkeypatch)
    found = mismatches(_dump, FILES, OPTIONS, monkeypatch)
    assert not found, found[:10]
    # most corpus files are made only of the events it prints (108 of 150 today)
    assert taken.count >= 100 * len(OPTIONS), taken.count


def test_several_files_in_one_run(monkeypatch):
    """Native and Python files mixed in one run (the printer's state carries over)."""
    paths = FILES[:40]
    for options in OPTIONS[:2]:
        assert _dump(paths, options, True, monkeypatch) == _dump(paths, options, False, monkeypatch)


@pytest.mark.parametrize("options", FALLBACK_OPTIONS, ids=" ".join)
def test_options_it_does_not_take_leave_files_to_python(options, monkeypatch):
    taken = _Taken(monkeypatch)
    for path in FILES[:60]:
        assert _dump([path], options, True, monkeypatch) == _dump([path], options, False, monkeypatch)
    assert taken.count == 0


def test_corrupt_files_are_refused_whole(tmp_path, monkeypatch):
    """A file failing late (a flipped byte near its end, a cut tail) prints
    what the Python printer prints, error and all."""
    sources = [p for p in FILES if "mariadb" in str(p).lower()][:30]
    assert sources
    for n, path in enumerate(sources):
        data = bytearray(path.read_bytes())
        if len(data) < 200:
            continue
        for kind, mutated in (("flip", data[:-40] + bytes([data[-40] ^ 0x5A]) + data[-39:]),
                              ("cut", data[:-7])):
            target = tmp_path / f"{n}-{kind}.bin"
            target.write_bytes(bytes(mutated))
            for options in OPTIONS[:1]:
                assert _dump([target], options, True, monkeypatch) == \
                    _dump([target], options, False, monkeypatch), (path, kind)


@pytest.mark.server
def test_server_binlogs_native_equals_python(server_binlogs, time_zone, monkeypatch):
    taken = _Taken(monkeypatch)
    for options in OPTIONS:
        assert _dump(server_binlogs, options, True, monkeypatch) == \
            _dump(server_binlogs, options, False, monkeypatch), options
    assert taken.count > 0


def _mutants(path, count: int, seed: int):
    """Copies of `path` with one body byte of one event changed and the
    event's CRC32 made right again, so the change reaches the decoders."""
    import random
    import zlib
    from binlake.read.scan import scan
    result = scan(path)
    if result.framing is None or len(result.positions) < 3:
        return
    data = path.read_bytes()
    crc = result.framing.checksum_len
    rng = random.Random(seed)
    positions = list(result.positions)
    ends = positions[1:] + [result.end]
    for _ in range(count):
        i = rng.randrange(1, len(positions))  # not the format description
        start, end = positions[i], ends[i]
        if end - crc - start <= 20:
            continue
        mutated = bytearray(data)
        at = rng.randrange(start + 19, end - crc)
        mutated[at] = rng.choice([mutated[at] ^ (1 << rng.randrange(8)), 0, 0xFF, rng.randrange(256)])
        if crc:
            mutated[end - 4:end] = zlib.crc32(bytes(mutated[start:end - 4])).to_bytes(4, "little")
        yield at, bytes(mutated)


def test_mutated_events_print_alike(tmp_path, monkeypatch):
    """One changed byte in an event body (checksum fixed): the native printer
    prints exactly what TextPrinter prints, or leaves the file to it."""
    taken = _Taken(monkeypatch)
    sources = [p for p in FILES if p.stat().st_size < 200_000][::3][:30]
    mismatches = []
    for n, path in enumerate(sources):
        for at, mutated in _mutants(path, 12, seed=n):
            target = tmp_path / "mutant.bin"
            target.write_bytes(mutated)
            for options in (OPTIONS[0], ("-v",)):
                if _dump([target], options, True, monkeypatch) != \
                        _dump([target], options, False, monkeypatch):
                    mismatches.append((str(path), at, options))
    assert not mismatches, mismatches[:10]
    assert taken.count > 50


@pytest.mark.parametrize("options", [OPTIONS[0], OPTIONS[1], OPTIONS[2], ("-v",)], ids=" ".join)
def test_huge_events_through_a_window_print_alike(options, monkeypatch):
    """Every rows event taken as huge (its images read through a 16-byte
    window that grows and refills): the native printer streams its lines,
    the Python printer spools them; same bytes (or the file left to Python:
    BINLOG blocks of huge events, statements not ended by them)."""
    from binlake.read import reader
    from binlake.read.rows import LazyRowData
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)
    taken = _Taken(monkeypatch)
    mismatches = [str(path) for path in FILES
                  if _dump([path], options, True, monkeypatch) != _dump([path], options, False, monkeypatch)]
    assert not mismatches, mismatches[:10]
    if options != ("-v",):
        assert taken.count > 20, taken.count


@pytest.mark.parametrize("positions", POSITION_OPTIONS, ids=" ".join)
@pytest.mark.parametrize("printing", [OPTIONS[0], ("-v",), ("--base64-output=never", "-v")], ids=" ".join)
def test_positions_print_alike(positions, printing, monkeypatch):
    """--start-position / --stop-position on one file: the events before the
    start read but not shown (the format description shown unless
    decode-rows), a start between events left to the Python path (its
    error), the stop event read, then nothing."""
    taken = _Taken(monkeypatch)
    options = (*printing, *positions)
    mismatches = [str(path) for path in FILES
                  if _dump([path], options, True, monkeypatch) != _dump([path], options, False, monkeypatch)]
    assert not mismatches, mismatches[:10]
    assert taken.count > 10, taken.count


def test_positions_of_every_event_print_alike(monkeypatch):
    """Start and stop at each event boundary of a few files (and one byte off)."""
    from binlake.read.scan import scan
    for path in [p for p in FILES if "mariadb" in str(p).lower()][:3] + FILES[:2]:
        positions = list(scan(path).positions)[:40]
        for pos in positions:
            for options in (("-v", f"--start-position={pos}"), ("-v", f"--stop-position={pos}"),
                            ("--base64-output=decode-rows", "-v", f"--start-position={pos + 1}")):
                assert _dump([path], options, True, monkeypatch) == \
                    _dump([path], options, False, monkeypatch), (path, options)
