"""MariaDB's compressed columns (VARCHAR/TEXT/BLOB ... COMPRESSED, 10.3+):
their table-map types 140/141, their stored values (sql/field_comp.cc: a
header byte, the value as is or deflated) and what each output makes of
them, in the pure reference and, where built, the native core alike.

The stored values here are written by `deflated` as the server's
`compress_zlib` writes them, plus two copied from a MariaDB 10.11 binlog
(tests/server/test_compressed_columns.py checks whole binlogs of a server).
"""

from __future__ import annotations

import random
import zlib

import pytest

from binlake import core
from binlake.constants import ColumnType as T
from binlake.errors import CorruptEvent
from binlake.read.events.base import EventHeader
from binlake.read.events.rows import RowsEvent
from binlake.read.events.table_map import Column, TableMapEvent
from binlake.text.rowtext import format_rows, value_formatter
from binlake.read.values import column_decoder, uncompress

from differential.equality import compare_cores, outcome

needs_native = pytest.mark.skipif(not core.available(), reason="native core not built")

LATIN1, UTF8MB4, BINARY = 8, 45, 63
#: REPEAT('a', 100) as a 10.11 server stores it in a VARCHAR(100) COMPRESSED
#: (a raw deflate stream, the default), and REPEAT('w', 100) with
#: column_compression_zlib_wrap=ON (a zlib stream)
SERVER_RAW = bytes([0x89, 0x64, 0x4B, 0x4C, 0xA4, 0x3D, 0x00, 0x00])
SERVER_WRAPPED = bytes([0x81, 0x64, 0x78, 0x9C, 0x2B, 0x2F, 0xA7, 0x3D, 0x00, 0x00,
                        0x2C, 0x61, 0x2E, 0x7D])


def deflated(value: bytes, raw: bool = True, declared: int | None = None,
             width: int | None = None) -> bytes:
    """`value` stored compressed: header byte (0x80, the length's width, 0x08
    for raw deflate), the declared length big-endian, the stream."""
    declared = len(value) if declared is None else declared
    width = width or max(1, (declared.bit_length() + 7) // 8)
    packer = zlib.compressobj(6, zlib.DEFLATED, -15 if raw else 15)
    stream = packer.compress(value) + packer.flush()
    return bytes([0x80 | width | (0x08 if raw else 0)]) + declared.to_bytes(width, "big") + stream


def varchar(meta: int = 101, charset: int | None = LATIN1, index: int = 0) -> Column:
    return Column(index, T.MYSQL_TYPE_VARCHAR_COMPRESSED, meta, True, name="v", charset=charset)


def blob(meta: int, charset: int | None = BINARY) -> Column:
    return Column(0, T.MYSQL_TYPE_BLOB_COMPRESSED, meta, True, name="v", charset=charset)


# -- the stored format ----------------------------------------------------------------

def test_values_as_a_mariadb_10_11_server_stores_them():
    assert uncompress(b"\x00hello", 101, "v") == b"hello"  # under the threshold: as is
    assert uncompress(b"", 101, "v") == b""  # empty: no header byte
    assert uncompress(SERVER_RAW, 101, "v") == b"a" * 100
    assert uncompress(SERVER_WRAPPED, 101, "v") == b"w" * 100


@pytest.mark.parametrize("raw", [True, False])
@pytest.mark.parametrize("width", [3, 4, 7])
def test_every_width_of_the_length_and_both_wrappings(raw, width):
    value = bytes(b"abc"[i % 7 % 3] for i in range(70000))
    assert uncompress(deflated(value, raw, width=width), (1 << 24) - 1, "v") == value


def test_a_shorter_stream_and_trailing_bytes_are_the_servers_value():
    """The server inflates into the declared length and stops at the stream's end."""
    stored = deflated(b"abc", declared=90)
    assert uncompress(stored, 101, "v") == b"abc"
    assert uncompress(stored + b"trailing", 101, "v") == b"abc"


NOT_A_STREAM = "compressed column v: the value is not a zlib stream of at most its declared"
TEXT = b"x" * 90
GOOD = deflated(TEXT)


def _flipped(data: bytes, at: int) -> bytes:
    at %= len(data)
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


#: the stream's first block of the reserved type 3
BAD_BLOCK = GOOD[:2] + b"\x07" + GOOD[3:]
#: a back-reference before the stream's start: zlib (the server's, Python's,
#: the native core's zlib-rs) refuses it, where some inflaters read zeros
TOO_FAR_BACK = SERVER_RAW[:4] + bytes([SERVER_RAW[4] ^ 0x80]) + SERVER_RAW[5:]


@pytest.mark.parametrize("stored, limit, message", [
    (b"\x20abc", 101, "compressed column v: unknown compression method 2 (header byte 0x20)"),
    (b"\x8a\x01", 101, "compressed column v: the value ends inside its length"),
    (deflated(TEXT, declared=102), 101,
     "compressed column v: the value declares 102 bytes, more than the column holds (101)"),
    (deflated(b"a", declared=256, width=2), 255,
     "compressed column v: the value declares 256 bytes, more than the column holds (255)"),
    (deflated(TEXT, declared=89), 101, NOT_A_STREAM + " 89 bytes"),  # more than declared
    (GOOD[:-1], 101, NOT_A_STREAM + " 90 bytes"),  # cut short
    (BAD_BLOCK, 101, NOT_A_STREAM + " 90 bytes"),
    (TOO_FAR_BACK, 101, NOT_A_STREAM + " 100 bytes"),
    (_flipped(deflated(TEXT, raw=False), -1), 101, NOT_A_STREAM + " 90 bytes"),  # checksum
    (bytes([0x89]) + deflated(TEXT, raw=False)[1:], 101, NOT_A_STREAM + " 90 bytes"),
    (b"\x89\x5a", 101, NOT_A_STREAM + " 90 bytes"),  # no stream at all
], ids=["method", "cut-length", "over-varchar", "over-tinyblob", "over-declared", "cut-stream",
        "bad-block", "too-far-back", "checksum", "wrapping", "no-stream"])
def test_corrupt_values_are_errors_naming_the_column(stored, limit, message):
    """The same texts as the native core's (rust/src/rowimage.rs tests)."""
    with pytest.raises(ValueError) as caught:
        uncompress(stored, limit, "v")
    assert str(caught.value) == message


# -- values -------------------------------------------------------------------------------

def decode(column: Column, raw: bytes):
    value, end = column_decoder(column)(raw, 0)
    assert end == len(raw)
    return value


def test_values_have_the_type_of_the_uncompressed_column():
    assert decode(varchar(), b"\x06\x00hello") == "hello"
    assert decode(varchar(), bytes([len(SERVER_RAW)]) + SERVER_RAW) == "a" * 100
    # VARCHAR(300) utf8mb4: 1201 bytes, a 2-byte length prefix
    stored = deflated("é".encode() * 300)
    assert decode(varchar(1201, UTF8MB4), len(stored).to_bytes(2, "little") + stored) == "é" * 300
    assert decode(varchar(51, BINARY), b"\x04\x00bin") == b"bin"
    assert decode(varchar(51, None), b"\x04\x00bin") == b"bin"  # no charset known: bytes
    for meta in (1, 2, 3, 4):
        stored = deflated(b"blob" * 50)
        raw = len(stored).to_bytes(meta, "little") + stored
        assert decode(blob(meta), raw) == b"blob" * 50
        assert decode(blob(meta, UTF8MB4), raw) == "blob" * 50
    with pytest.raises(NotImplementedError):
        column_decoder(blob(5))


def test_the_table_map_reads_their_metadata_and_lists_their_charsets():
    """INT, VARCHAR(100) latin1 COMPRESSED, TEXT COMPRESSED, VARCHAR(10)
    utf8mb4, as a 10.11 server logs them: the compressed columns take their
    twins' metadata bytes and places in the charset list."""
    from binlake.read.cursor import Cursor
    from binlake.read.events.table_map import decode_table_map
    body = bytes([7, 0, 0, 0, 0, 0, 1, 0, 1, ord("c"), 0, 1, ord("t"), 0, 4,
                  T.MYSQL_TYPE_LONG, T.MYSQL_TYPE_VARCHAR_COMPRESSED, T.MYSQL_TYPE_BLOB_COMPRESSED,
                  T.MYSQL_TYPE_VARCHAR, 5, 101, 0, 2, 40, 0, 0b1110, 2, 3, UTF8MB4, 0, LATIN1])

    class Context:
        class fde:
            is_mariadb = True

            @staticmethod
            def post_header_len(code):
                return 8
        table_caches: dict = {}

        @staticmethod
        def shared_cache(signature):
            return {}
    header = EventHeader("mem", 4, 0, 19, 1, 19 + len(body), 0, 0)
    event = decode_table_map(header, Cursor(body), Context)
    assert [(c.type, c.meta, c.charset) for c in event.columns] == [
        (T.MYSQL_TYPE_LONG, 0, None), (T.MYSQL_TYPE_VARCHAR_COMPRESSED, 101, LATIN1),
        (T.MYSQL_TYPE_BLOB_COMPRESSED, 2, UTF8MB4), (T.MYSQL_TYPE_VARCHAR, 40, UTF8MB4)]


# -- mysqlbinlog -v text ------------------------------------------------------------------

def test_text_is_the_stored_bytes_under_the_compressed_type_names():
    fmt, name = value_formatter(T.MYSQL_TYPE_VARCHAR_COMPRESSED, 101)
    assert name == "VARSTRING(101) COMPRESSED"
    assert fmt(b"\x06\x00hello", 0) == ("'\\x00hello'", 7)
    names = [value_formatter(T.MYSQL_TYPE_BLOB_COMPRESSED, meta)[1] for meta in (1, 2, 3, 4)]
    assert names == ["TINYBLOB/TINYTEXT COMPRESSED", "BLOB/TEXT COMPRESSED",
                     "MEDIUMBLOB/MEDIUMTEXT COMPRESSED", "LONGBLOB/LONGTEXT COMPRESSED"]
    fmt, _ = value_formatter(T.MYSQL_TYPE_BLOB_COMPRESSED, 2)
    stored = SERVER_RAW
    text, end = fmt(len(stored).to_bytes(2, "little") + stored, 0)
    assert text.encode("utf-8", "surrogateescape") == b"'\x89dKL\xa4=\\x00\\x00'"
    assert end == 2 + len(stored)
    assert value_formatter(T.MYSQL_TYPE_BLOB_COMPRESSED, 5)[0] is None


# -- both cores ---------------------------------------------------------------------------

COLUMNS = (Column(0, T.MYSQL_TYPE_LONG, 0, False, name="id"),
           varchar(101, LATIN1, 1),
           Column(2, T.MYSQL_TYPE_VARCHAR_COMPRESSED, 1201, True, name="vu", charset=UTF8MB4),
           Column(3, T.MYSQL_TYPE_BLOB_COMPRESSED, 2, True, name="t", charset=UTF8MB4),
           Column(4, T.MYSQL_TYPE_BLOB_COMPRESSED, 4, True, name="b", charset=BINARY),
           Column(5, T.MYSQL_TYPE_LONG, 0, True, name="n"))


def _row(ident: int, v: bytes | None, vu: bytes | None, t: bytes | None, b: bytes | None) -> bytes:
    values = (v, vu, t, b)
    nulls = sum(1 << (i + 1) for i, value in enumerate(values) if value is None)
    out = nulls.to_bytes(1, "little") + ident.to_bytes(4, "little")
    for value, width in zip(values, (1, 2, 2, 4)):
        if value is not None:
            out += len(value).to_bytes(width, "little") + value
    return out + ident.to_bytes(4, "little")


def _event(rows: bytes, code: int = 30) -> RowsEvent:
    table = TableMapEvent(None, 1, 0, "db", "t", COLUMNS)
    header = EventHeader("mem", 1000, 0, code, 1, 0, 0, 0)
    return RowsEvent(header, 1, 0, {}, len(COLUMNS), (1 << len(COLUMNS)) - 1, None, table,
                     rows, 1040)


GOOD_ROWS = (_row(1, b"\x00hello", b"\x00h\xc3\xa9llo", b"\x00text", b"\x00\x00\xff")
             + _row(2, SERVER_RAW, deflated("é".encode() * 300), deflated(b"ab" * 1000),
                    deflated(bytes(range(256)) * 40, raw=False))
             + _row(3, b"", b"", b"", b"") + _row(4, None, None, None, None))


def test_rows_of_compressed_columns():
    core.use_pure(True)
    try:
        rows = _event(GOOD_ROWS).rows()
    finally:
        core.use_pure(False)
    afters = [after for _, after in rows]
    assert afters[0] == {"id": 1, "v": "hello", "vu": "héllo", "t": "text", "b": b"\x00\xff",
                         "n": 1}
    assert afters[1] == {"id": 2, "v": "a" * 100, "vu": "é" * 300, "t": "ab" * 1000,
                         "b": bytes(range(256)) * 40, "n": 2}
    assert afters[2] == {"id": 3, "v": "", "vu": "", "t": "", "b": b"", "n": 3}
    assert afters[3] == {"id": 4, "v": None, "vu": None, "t": None, "b": None, "n": 4}


@needs_native
def test_both_cores_give_the_same_rows_and_text():
    event = _event(GOOD_ROWS)
    assert compare_cores(event) is None
    assert outcome(event, pure=False)[0] == "rows"
    for verbose in (1, 2):
        printed = []
        for pure in (False, True):
            core.use_pure(pure)
            try:
                lines, count = format_rows(event, verbose)
                printed.append(("".join(lines), count))
            finally:
                core.use_pure(False)
        assert printed[0] == printed[1] and printed[0][1] == 4
    assert "VARSTRING(1201) COMPRESSED meta=1201" in printed[0][0]


CORRUPT = {
    "method": b"\x20abc",
    "cut-length": b"\x8a\x01",
    "over-declared": deflated(TEXT, declared=89),
    "cut-stream": GOOD[:-1],
    "bad-block": BAD_BLOCK,
    "too-far-back": TOO_FAR_BACK,
    "checksum": _flipped(deflated(TEXT, raw=False), -1),
    "over-column": deflated(TEXT, declared=102),
}


@pytest.mark.parametrize("name", CORRUPT)
def test_a_corrupt_value_is_a_corrupt_event_at_its_row_in_both_cores(name):
    first = _row(1, b"\x00ok", None, None, None)
    rows = first + _row(2, CORRUPT[name], None, None, None)
    event = _event(rows)
    results = []
    for pure in (True, False) if core.available() else (True,):
        core.use_pure(pure)
        try:
            with pytest.raises(CorruptEvent) as caught:
                event.rows()
        finally:
            core.use_pure(False)
        error = caught.value
        results.append((error.file, error.offset, str(error)))
    assert results[0][:2] == ("mem", 1040 + len(first))  # the row's start, in the file
    assert "row 1 of db.t: compressed column v: " in results[0][2]
    assert len(set(results)) == 1, results
    # mysqlbinlog prints the stored bytes: the text does not fail
    for pure in (True, False) if core.available() else (True,):
        core.use_pure(pure)
        try:
            assert format_rows(event, 2)[1] == 2
        finally:
            core.use_pure(False)


@needs_native
def test_a_value_cut_by_the_events_end_is_the_same_error_in_both_cores():
    rows = _row(1, SERVER_RAW, None, None, None)
    for cut in range(1, len(rows)):
        event = _event(rows[:cut])
        native, pure = outcome(event, pure=False), outcome(event, pure=True)
        assert native == pure and native[:2] == ("error", "CorruptEvent"), (cut, native, pure)


@needs_native
def test_mutated_compressed_values_agree_in_both_cores():
    """Every byte of a row's stored values flipped in turn: the same values or
    the same error (class and offset) from both cores, nothing else escaping."""
    rows = _row(2, SERVER_RAW, deflated("é".encode() * 30), deflated(b"ab" * 100, raw=False),
                b"\x00raw")
    for at in range(5, len(rows) - 4):
        for flip in (0x01, 0x80, 0xFF):
            mutated = rows[:at] + bytes([rows[at] ^ flip]) + rows[at + 1:]
            problem = compare_cores(_event(mutated))
            assert problem is None, f"byte {at} ^ {flip:#x}: {problem}"


@needs_native
def test_randomly_mutated_streams_agree_in_both_cores():
    """Seeded random bytes written over deflated values of varied content:
    zlib (the reference's) and zlib-rs (the native core's) refuse alike."""
    rng = random.Random(140141)
    kept = 0
    for case in range(3000):
        value = bytes(rng.choice(b"abc\x00\xff") for _ in range(rng.randrange(1, 400)))
        stored = bytearray(deflated(value, raw=rng.random() < 0.7, width=2))
        for _ in range(rng.randrange(1, 4)):
            stored[rng.randrange(3, len(stored))] = rng.randrange(256)
        rows = _row(case, None, None, bytes(stored), None)
        event = _event(rows)
        problem = compare_cores(event)
        assert problem is None, f"case {case} ({bytes(stored).hex()}): {problem}"
        kept += outcome(event, pure=True)[0] == "rows"
    assert 0 < kept < 3000  # some mutations stay valid streams, most do not


def test_json_view_names_the_types():
    table = TableMapEvent(None, 1, 0, "db", "t", COLUMNS)
    types = [column["type"] for column in table.fields()["columns"]]
    assert types[1:5] == ["MYSQL_TYPE_VARCHAR_COMPRESSED", "MYSQL_TYPE_VARCHAR_COMPRESSED",
                          "MYSQL_TYPE_BLOB_COMPRESSED", "MYSQL_TYPE_BLOB_COMPRESSED"]



# -- the schema history -------------------------------------------------------------------

DDL = """CREATE TABLE d.t (id INT PRIMARY KEY,
  v VARCHAR(100) COMPRESSED CHARACTER SET latin1,
  `vu` varchar(300) /*M!100301 COMPRESSED*/ CHARACTER SET utf8mb4 NOT NULL DEFAULT 'x',
  vb VARBINARY(50) COMPRESSED=zlib, t TEXT COMPRESSED, b BLOB COMPRESSED = zlib, n INT)
  DEFAULT CHARSET=utf8mb4 ROW_FORMAT=COMPRESSED"""


def test_ddl_reads_the_compressed_attribute_in_every_form():
    from binlake.schema.history import parse_schema
    schema = parse_schema(DDL + ";\nALTER TABLE d.t MODIFY n VARCHAR(20) COMPRESSED NOT NULL, "
                          "ADD COLUMN tt TINYTEXT COMPRESSED CHARACTER SET latin1 AFTER n;")
    columns = schema.tables[("d", "t")].columns
    assert [(c.name, c.type, c.args, c.charset, c.nullable) for c in columns] == [
        ("id", "INT", (), None, False), ("v", "VARCHAR", (100,), "latin1", True),
        ("vu", "VARCHAR", (300,), "utf8mb4", False), ("vb", "VARBINARY", (50,), None, True),
        ("t", "TEXT", (), None, True), ("b", "BLOB", (), None, True),
        ("n", "VARCHAR", (20,), None, False), ("tt", "TINYTEXT", (), "latin1", True)]
    assert columns[2].default == "'x'"


def test_without_metadata_the_history_names_them_and_gives_their_charsets():
    """binlog_row_metadata=NO_LOG: the map has types and lengths only; the
    CREATE TABLE agrees with the compressed types and completes them."""
    from binlake.schema.history import parse_schema
    table = TableMapEvent(None, 1, 0, "d", "t", (
        Column(0, T.MYSQL_TYPE_LONG, 0, False),
        Column(1, T.MYSQL_TYPE_VARCHAR_COMPRESSED, 101, True),
        Column(2, T.MYSQL_TYPE_VARCHAR_COMPRESSED, 1201, False),
        Column(3, T.MYSQL_TYPE_VARCHAR_COMPRESSED, 51, True),
        Column(4, T.MYSQL_TYPE_BLOB_COMPRESSED, 2, True),
        Column(5, T.MYSQL_TYPE_BLOB_COMPRESSED, 2, True), Column(6, T.MYSQL_TYPE_LONG, 0, True)))
    from binlake.charsets import collation_of
    annotated = parse_schema(DDL + ";").annotate(table)
    assert [(c.name, c.charset) for c in annotated.columns] == [
        ("id", None), ("v", collation_of("latin1")), ("vu", collation_of("utf8mb4")),
        ("vb", None), ("t", collation_of("utf8mb4")), ("b", None), ("n", None)]
    assert decode(annotated.columns[1], b"\x04\x00caf") == "caf"
    assert decode(annotated.columns[3], b"\x04\x00caf") == b"caf"  # VARBINARY: bytes
    stored = deflated("é".encode() * 300)
    assert decode(annotated.columns[2], len(stored).to_bytes(2, "little") + stored) == "é" * 300
