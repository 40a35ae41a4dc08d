"""The native framing against the pure-Python one: every corpus file, and a
few thousand seeded mutations of small ones (byte flips, truncations, edited
length fields, with and without `force`), must give the same events
(position, type, length), the same warnings and file facts, and stop with
the same error (class, offset and wording).

A mutation on which the pure reader itself crashes with a non-BinlogError
(e.g. zstandard's own error on a corrupt payload) has no reference to compare
with: it is counted, not compared.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from binlake import core
from binlake.errors import BinlogError
from binlake.read.reader import BinlogReader

from corpus.manifest import corpus_dir

pytestmark = pytest.mark.skipif(not core.available(), reason="native core not built")

_FACTS = ("binlog_version", "server_version", "checksum_alg", "header_length", "in_use",
          "no_start_event", "encrypted", "partial_tail", "end_pos", "first_timestamp",
          "last_timestamp", "last_type")


def walk(path, pure: bool, **options):
    """What one reader makes of `path`: events, final error, warnings, facts."""
    core.use_pure(pure)
    assert pure or core.native() is not None
    try:
        reader = BinlogReader(path, **options)
        events, error = [], None
        try:
            for event in reader:
                h = event.header
                events.append((h.pos, h.type_code, h.length, h.log_pos, h.checksum,
                               type(event).__name__))
        except BinlogError as exc:
            detail = exc.detail
            if detail.startswith("transaction payload:"):
                # A corrupt compressed payload: where in it the zstd binding
                # notices (and its words) differs between libraries; the
                # event it condemns must not.
                detail = "transaction payload: corrupt"
            error = (type(exc).__name__, exc.offset, detail)
        except Exception as exc:  # noqa: BLE001 - a crash is a result to compare too
            error = ("crash", type(exc).__name__, str(exc))
        # the counts by type in their order too (`binlake info` prints them so)
        facts = [(*(getattr(f, name) for name in _FACTS), list(f.counts.items()))
                 for f in reader.files]
        return events, error, list(reader.stats.warnings), facts, dict(reader.stats.events)
    finally:
        core.use_pure(False)


def _corpus_files():
    root = corpus_dir()
    if not (root / "MANIFEST.md").exists():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "MANIFEST.md")


def _id(path: Path) -> str:
    return str(path.relative_to(corpus_dir()))


@pytest.mark.parametrize("path", _corpus_files(), ids=_id)
@pytest.mark.parametrize("force", [False, True], ids=["strict", "force"])
def test_corpus_file_frames_alike(path, force):
    pure = walk(path, True, force=force)
    native = walk(path, False, force=force)
    assert native == pure


def test_start_position_frames_alike(corpus):
    path = corpus / "mysql-binlog-connector-java/mysql-bin.checksum-crc32"
    events = walk(path, True)[0]
    for pos, *_ in events[:: max(1, len(events) // 10)]:
        assert walk(path, False, start_position=pos) == walk(path, True, start_position=pos)


# -- mutations -----------------------------------------------------------------

MUTATION_CHUNKS = 50
PER_CHUNK = 100


def _small_files():
    return [p for p in _corpus_files() if 40 < p.stat().st_size <= 12_000
            and not p.name.endswith(".gz")]


#: Files whose rare paths deserve more mutations: payloads, wl2325, in-use, v3.
_INTERESTING = ("transaction_compression", "mysql-bin.compressed", "mysql-bin.000057",
                "mdev35643_mysql_80", "wl2325_r", "trunc_binlog", "master-bin.000001",
                "bug40482", "binlog_no_fd_event")


def _mutate(rng: random.Random, data: bytes, events: list) -> bytes:
    data = bytearray(data)
    positions = sorted({e[0] for e in events})
    payloads = [e for e in events if e[1] == 40]
    kind = rng.randrange(6 if payloads else 5)
    if kind == 5:  # inside a compressed transaction
        pos, _, length = payloads[0][:3]
        for _ in range(rng.randint(1, 2)):
            data[pos + rng.randrange(19, length)] = rng.randrange(256)
        return bytes(data)
    if kind == 0:  # byte flips anywhere
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1:  # byte flips in the first events (magic, FDE, server version)
        for _ in range(rng.randint(1, 2)):
            i = rng.randrange(min(len(data), 200))
            data[i] = rng.randrange(256)
    elif kind == 2:  # truncation
        del data[rng.randrange(len(data)):]
    elif kind == 3 and positions:  # a length field edited
        pos = rng.choice(positions)
        if pos + 13 <= len(data):
            old = int.from_bytes(data[pos + 9:pos + 13], "little")
            new = rng.choice([0, 1, 12, 13, 18, 19, 20, 22, 23, old - 1, old + 1, old - 4,
                              old + 4, old * 2, 0xFFFFFFFF, 64 << 20, rng.randrange(1 << 32)])
            data[pos + 9:pos + 13] = (new & 0xFFFFFFFF).to_bytes(4, "little")
    elif positions:  # a type code or flags edited
        pos = rng.choice(positions)
        if pos + 19 <= len(data):
            if rng.random() < 0.7:
                data[pos + 4] = rng.choice([0, 1, 2, 4, 14, 15, 16, 19, 30, 40, 100, 162, 164, 200])
            else:
                data[pos + 17] ^= 1  # LOG_EVENT_BINLOG_IN_USE_F
    return bytes(data)


@pytest.mark.parametrize("chunk", range(MUTATION_CHUNKS))
def test_mutations_frame_alike(chunk, tmp_path):
    files = _small_files()
    if not files:
        pytest.skip("corpus missing")
    interesting = [p for p in files if any(k in p.name for k in _INTERESTING)]
    rng = random.Random(0xB1A1 + chunk)
    skipped = 0
    for case in range(PER_CHUNK):
        source = rng.choice(interesting if rng.random() < 0.3 else files)
        data = source.read_bytes()
        mutated = _mutate(rng, data, walk(source, True)[0])
        path = tmp_path / f"m{case}.bin"
        path.write_bytes(mutated)
        options = {"force": rng.random() < 0.3,
                   "verify_checksums": rng.random() < 0.9}
        pure = walk(path, True, **options)
        if pure[1] is not None and pure[1][0] == "crash":
            skipped += 1
            continue
        native = walk(path, False, **options)
        assert native == pure, f"{_id(source)} mutated (chunk {chunk}, case {case}, {options})"
    assert skipped < PER_CHUNK // 4
