"""What the two native loops (`_native.ChangesReader`, `_native.EventsReader`)
are held to against the pure-Python batches, written once for both views.

A `View` names the two functions that make a view's batches and its schema;
`assert_same` runs both on a range and requires the same batches
(boundaries included) or the same error: class, offset and the first words
of its reason. The scenarios below (mutated files, gzip input, files still
being written, ranges that add up to a whole file) take a View, so each
test module states only what is particular to its view.
"""

from __future__ import annotations

import gzip
import random
import shutil
from dataclasses import dataclass
from typing import Callable

import pytest

from binlake import core
from binlake.errors import BinlogError
from binlake.read.scan import scan
from binlake.spark.read.ranges import Split, is_binlog
from corpus.manifest import corpus_dir, corpus_files

#: Small corpus files whose mutations reach many error paths of both loops.
MUTATION_FILES = [
    "mysql-binlog-connector-java/mysql-bin.checksum-crc32",
    "rust_mysql_common/json.binlog.000001",
    "rust_mysql_common/mysql-enum-string-set.000001",
    "mariadb-10.11.19/std_data/mdev35643_mysql_80_binlog.000001",
    "canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000003",
]

#: A file with many transactions: ranges, gzip and batch-cutting tests use it.
MANY_TRANSACTIONS = "mysql-binlog-connector-java/mysql-bin.checksum-crc32"


def outcome(make, split: Split, options: dict):
    """(batches, how it failed) of one side."""
    batches = []
    try:
        for batch in make(split, options):
            batches.append(batch)
    except BinlogError as exc:
        return batches, (type(exc).__name__, exc.offset, str(exc).split(": ")[:3])
    except Exception as exc:  # noqa: BLE001 - a pure-path escape must be seen, not hidden
        return batches, (type(exc).__name__, None, None)
    return batches, None


@dataclass
class View:
    schema: object
    python_batches: Callable   #: (split, options) -> batches, the reference
    native_batches: Callable   #: (native, split, options) -> batches

    def pure(self, split: Split, options: dict):
        core.use_pure(True)
        try:
            return outcome(self.python_batches, split, options)
        finally:
            core.use_pure(False)

    def loop(self, split: Split, options: dict):
        native = core.native()
        return outcome(lambda s, o: self.native_batches(native, s, o), split, options)

    def assert_same(self, split: Split, options: dict, what: str = "") -> int:
        """The number of rows, once both sides agree."""
        expected, expected_error = self.pure(split, options)
        got, got_error = self.loop(split, options)
        what = what or f"{split} {options}"
        assert got_error == expected_error, what
        assert [b.num_rows for b in got] == [b.num_rows for b in expected], what
        for n, (a, b) in enumerate(zip(got, expected)):
            assert a.schema.equals(self.schema), what
            if not a.equals(b):
                for name in self.schema.names:
                    x, y = a.column(name), b.column(name)
                    if not x.equals(y):
                        row = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), None)
                        pytest.fail(f"{what}: batch {n} column {name} differs at row {row}: "
                                    f"{None if row is None else x[row]} != "
                                    f"{None if row is None else y[row]}")
        return sum(b.num_rows for b in got)


def corpus_binlogs() -> list[str]:
    """Every corpus binlog, relative to the corpus (a failing placeholder when it is missing)."""
    files = corpus_files()
    if str(files[0]).startswith("<"):
        return [str(files[0])]
    return [str(p.relative_to(corpus_dir())) for p in files if is_binlog(str(p))]


def corpus_path(relpath: str) -> str:
    if relpath.startswith("<"):
        pytest.fail(f"binlog {relpath} (set BINLAKE_CORPUS)")
    return str(corpus_dir() / relpath)


def transaction_ranges(path: str, pieces: int = 3) -> list[Split]:
    """The file cut at transaction boundaries into about `pieces` ranges, as
    the Spark planner cuts it (none when the scan finds too few)."""
    result = scan(path)
    if result.framing is None or result.descriptions > 1 or len(result.boundaries) < 3:
        return []
    inner = [p for p in result.boundaries if p > 4]
    step = max(1, len(inner) // pieces)
    cuts = sorted(set(inner[step::step]))[:pieces - 1]
    edges = [4, *cuts, None]
    return [Split(path, 1, a, b) for a, b in zip(edges, edges[1:])]


def mutated(data: bytes, rng: random.Random, positions: list[int]) -> bytes:
    """A truncation anywhere, or one to three bytes flipped or set inside events."""
    out = bytearray(data)
    if rng.random() < 0.15:
        return bytes(out[:rng.randrange(4, len(out))])
    for _ in range(rng.choice((1, 1, 2, 3))):
        pos = rng.choice(positions)
        nxt = next((p for p in positions if p > pos), len(out))
        at = rng.randrange(pos, nxt)
        if rng.random() < 0.3:
            out[at] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFB, 0xFC, 0xFE, 0xFF))
        else:
            out[at] ^= 1 << rng.randrange(8)
    return bytes(out)


# -- scenarios shared by both views --------------------------------------------------

def check_ranges_cover_a_file_once(view: View) -> None:
    path = corpus_path(MANY_TRANSACTIONS)
    ranges = transaction_ranges(path, 5)
    assert len(ranges) > 2
    whole = view.assert_same(Split(path, 1), {})
    assert sum(view.assert_same(s, {}) for s in ranges) == whole


def check_mutations(view: View, relpath: str, tmp_path, seed: str, count: int = 60) -> None:
    source = corpus_path(relpath)
    data = open(source, "rb").read()
    positions = list(scan(source).positions)
    assert positions
    target = tmp_path / "mutated.bin"
    failures = 0
    for index in range(count):
        rng = random.Random(f"{seed}:{relpath}:{index}")
        target.write_bytes(mutated(data, rng, positions))
        options = rng.choice(({}, {"verify_checksums": "false"},
                              {"verify_checksums": "false", "force": "true"}))
        split = Split(str(target), 1)
        _, error = view.pure(split, options)
        failures += error is not None
        view.assert_same(split, options, f"{relpath} mutation {index} {options}")
    assert failures, "the mutations must reach the error paths"


def check_gzip_input(view: View, tmp_path) -> None:
    target = tmp_path / "binlog.000007.gz"
    with open(corpus_path(MANY_TRANSACTIONS), "rb") as f, gzip.open(target, "wb") as g:
        shutil.copyfileobj(f, g)
    assert view.assert_same(Split(str(target), 7), {}) > 0


#: Files to cut while "still being written" (LOG_EVENT_BINLOG_IN_USE_F set).
BEING_WRITTEN = ["mysql-8.0.40/std_data/binlog_recovery/ddl_in_transaction.000001",
                 MANY_TRANSACTIONS]


def check_file_still_being_written(view: View, relpath: str, tmp_path) -> None:
    """A file with LOG_EVENT_BINLOG_IN_USE_F cut anywhere: the partial last
    event ends the range quietly and a transaction it cut off is left for a
    later read, as `read_split` and `_transactions` decide; the same cuts
    with the flag cleared are plain truncations."""
    data = bytearray(open(corpus_path(relpath), "rb").read())
    flags_at = 4 + 17
    target = tmp_path / "binlog.000001"
    for in_use in (True, False):
        marked = bytearray(data)
        if in_use:
            marked[flags_at] |= 1
        else:
            marked[flags_at] &= ~1
        for cut in range(len(marked) - 1, 100, -max(1, len(marked) // 40)):
            target.write_bytes(bytes(marked[:cut]))
            view.assert_same(Split(str(target), 1), {"verify_checksums": "false"},
                             f"{relpath} in_use={in_use} cut at {cut}")
