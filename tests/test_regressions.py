"""Inputs the fuzzers found (fuzz/README.md says which and how), kept for good.

Each file in tests/regressions/ once hung a reader or escaped it with an
exception other than `BinlogError`. Every one is read through every entry
point on both cores (`binlake.testing.hostile.check`: a worker process with
a clock and a memory meter, killed if it overruns) and must end cleanly or
with a BinlogError, in time linear in its size.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

import binlake
from binlake import core
from binlake.errors import BinlogError, CorruptEvent
from binlake.testing.hostile import Worker, check

REGRESSIONS = Path(__file__).parent / "regressions"
INPUTS = sorted(REGRESSIONS.glob("*.bin"))


@contextlib.contextmanager
def on_core(pure: bool):
    core.use_pure(pure)
    try:
        yield
    finally:
        core.use_pure(False)


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.kill()


def test_there_are_inputs():
    assert len(INPUTS) >= 2


@pytest.mark.parametrize("path", INPUTS, ids=[p.stem for p in INPUTS])
def test_every_entry_point_ends_cleanly(path, worker):
    _, problems = check(worker, str(path), path.stat().st_size)
    assert problems == []


@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
def test_a_description_with_no_header_length_is_corrupt(pure):
    """A header length of 0 made every later event zero bytes long: the
    reader stayed at one offset for ever."""
    with on_core(pure):
        with pytest.raises(CorruptEvent, match="event header length 0 is shorter than 19"):
            list(binlake.open(REGRESSIONS / "fde-header-length-zero.bin"))
        # under --force-read the bad description is kept undecoded, and the
        # zero-length event after it ends the read where it is
        events = []
        with pytest.raises(CorruptEvent, match="event length 0 is shorter") as raised:
            for event in binlake.open(REGRESSIONS / "fde-header-length-zero.bin", force=True,
                                      verify_checksums=False):
                events.append(event)
        assert raised.value.offset == 210 and len(events) == 2


def test_a_tagged_gtid_uuid_byte_over_255_is_corrupt():
    with pytest.raises(CorruptEvent, match="UUID byte 7771 is not a byte"):
        list(binlake.open(REGRESSIONS / "tagged-gtid-uuid-byte-over-255.bin",
                          verify_checksums=False))


# -- bounded work: a payload decompresses to no more than it claims -------------------

PAYLOAD_FILE = "rust_mysql_common/transaction_compression.000001"  # 8.0.32, one zstd payload
PAYLOAD_AT, PAYLOAD_LENGTH, PAYLOAD_DATA_AT = 274, 157, 303


def _packed(n: int) -> bytes:
    if n < 251:
        return bytes([n])
    return b"\xfe" + n.to_bytes(8, "little")


def _with_payload(inner: bytes, claimed: int) -> bytes:
    """The corpus file with its payload event rebuilt around `inner` (zstd)."""
    import struct
    import zlib

    import zstandard

    from corpus.manifest import corpus_dir
    data = (corpus_dir() / PAYLOAD_FILE).read_bytes()
    compressed = zstandard.ZstdCompressor(level=19).compress(inner)
    fields = b"".join(_packed(f) + _packed(len(_packed(v))) + _packed(v)
                      for f, v in ((1, len(compressed)), (2, 0), (3, claimed)))
    body = fields + b"\x00" + compressed
    head = bytearray(data[PAYLOAD_AT:PAYLOAD_AT + 19])
    length = 19 + len(body) + 4
    struct.pack_into("<II", head, 9, length, PAYLOAD_AT + length)
    event = bytes(head) + body
    event += struct.pack("<I", zlib.crc32(event))
    return data[:PAYLOAD_AT] + event + data[PAYLOAD_AT + PAYLOAD_LENGTH:]


def _inner_events() -> bytes:
    """The payload's own events: QUERY, TABLE_MAP, WRITE_ROWS, XID."""
    from corpus.manifest import corpus_dir
    from binlake.read.events import TransactionPayloadEvent
    event = next(e for e in binlake.open(corpus_dir() / PAYLOAD_FILE)
                 if isinstance(e, TransactionPayloadEvent))
    return event.uncompressed()


@pytest.mark.parametrize("pure", [False, True], ids=["native", "pure"])
def test_a_payload_that_holds_more_than_it_claims_is_corrupt(pure, tmp_path):
    pytest.importorskip("zstandard")
    inner = _inner_events()
    target = tmp_path / "payload.bin"
    target.write_bytes(_with_payload(inner * 3, len(inner)))
    with on_core(pure), pytest.raises(CorruptEvent, match="decompresses past the size"):
        list(binlake.open(target))


def test_a_decompression_bomb_is_refused_fast_and_small(tmp_path, worker):
    """72 MB of events in a few KB of zstd: refused when decoded, by its ratio."""
    pytest.importorskip("zstandard")
    inner = _inner_events()
    rows = inner[71 + 45:71 + 45 + 36]
    bomb = inner[:71 + 45] + rows * 2_000_000 + inner[-27:]
    target = tmp_path / "bomb.bin"
    target.write_bytes(_with_payload(bomb, len(bomb)))
    assert target.stat().st_size < 64 << 10
    for pure in (False, True):
        with on_core(pure), pytest.raises(CorruptEvent, match="more than 4096 times its size"):
            list(binlake.open(target))
    _, problems = check(worker, str(target), target.stat().st_size)
    assert problems == []


@pytest.mark.parametrize("claim", [0xFFFFFFFF, 0x7FFFFFFF, 1 << 30])
def test_a_length_that_claims_gigabytes_is_refused_fast_and_small(claim, tmp_path, worker):
    """An event length of up to 4 GB in a small file: nothing is allocated
    by the claim; every entry point ends in its budget, in little memory."""
    import struct

    from corpus.manifest import corpus_dir
    data = bytearray((corpus_dir() / PAYLOAD_FILE).read_bytes())
    struct.pack_into("<I", data, 126 + 9, claim)  # PREVIOUS_GTIDS, the second event
    target = tmp_path / "claims.bin"
    target.write_bytes(bytes(data))
    for pure in (False, True):
        with on_core(pure), pytest.raises(BinlogError):
            list(binlake.open(target))
    _, problems = check(worker, str(target), len(data))
    assert problems == []


def _shared_value_document(depth: int) -> bytes:
    """A binary JSON array of two entries that both point at the next array,
    `depth` times: 10 bytes a level, 2**depth paths through it."""
    import struct
    small_array = 0x02
    doc = bytearray([small_array])
    for level in range(depth):
        doc += struct.pack("<HH", 2, 10 * (depth - level) + 4)
        doc += (bytes([small_array]) + struct.pack("<H", 10)) * 2
    return bytes(doc + struct.pack("<HH", 0, 4))


@pytest.mark.parametrize("depth", [22, 200])
def test_a_json_document_of_shared_values_is_refused_in_linear_time(depth):
    """225 bytes took 11 s (and 60 levels would take years): the entries a
    document's containers visit may not outnumber its bytes."""
    from binlake.read.mysql_json import JsonError, binary_to_text
    with pytest.raises(JsonError, match="refer to more values than the document has bytes"):
        binary_to_text(_shared_value_document(depth))


def test_a_statement_of_unterminated_version_comments_is_read_in_linear_time():
    """`CREATE TABLE ...` and 16 000 `/*!`: 2.5 s with a lazy regex (each
    start scanned to the end again), a 1 MB statement about half an hour."""
    import time

    from binlake.schema import ddl
    text = "CREATE TABLE t (a int) " + "/*!" * 320_000
    start = time.perf_counter()
    with pytest.raises(ddl.DdlError):
        ddl._statements(text)
    assert time.perf_counter() - start < 5  # linear: about 0.3 s; quadratic: hours
    assert ddl._run_version_comments(
        "CREATE /*!50100 TABLE */ t /*M!999999\\- sandbox */ x /*!99999999 y */ z /*! w */"
    ) == "CREATE   TABLE   t   x   z   w  "


def test_a_mariadb_compressed_body_is_bounded_by_its_header():
    """MariaDB's compressed events say their uncompressed size: no more is
    ever inflated, and a size deflate cannot reach from the bytes given is
    corrupt before anything is inflated."""
    import zlib

    from binlake.read.cursor import Cursor
    from binlake.read.events.query import uncompress_mariadb
    bomb = zlib.compress(bytes(50 << 20), 9)   # 50 MB of zeros in about 50 KB
    cur = Cursor(b"", 0, 0, 100, "bomb")
    for claimed, reason in ((1000, "uncompresses past the 1000 bytes"),
                            ((1 << 32) - 1, "cannot hold the")):
        raw = bytes([0x80 | 4]) + claimed.to_bytes(4, "big") + bomb  # zlib, 4 length bytes
        with pytest.raises(CorruptEvent, match=reason):
            uncompress_mariadb(raw, cur)
