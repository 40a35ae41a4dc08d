"""MariaDB's compressed columns (VARCHAR/TEXT/BLOB ... COMPRESSED) against a
real server: what mariadb-binlog prints, and the values the server returns.

Strategy: a private MariaDB 10.11 per binlog_row_metadata (FULL: names and
charsets from the table map; NO_LOG: from the CREATE TABLE, through the
schema history) writes rows into a table of every compressed type (VARCHAR
in latin1 and utf8mb4, VARBINARY, TINY/-/MEDIUM/LONG TEXT and BLOB): values
long enough to be deflated, short ones the server keeps as they are, empty
strings, NULLs, utf8mb4 text, every byte value; zlib-wrapped streams and
other levels and thresholds from some sessions; inserts, updates, deletes.
A second table puts GEOMETRY and ENUM columns among compressed ones, which
mariadb-binlog's --print-table-metadata reads with its metadata shifted.
Then: `binlake dump` -v, -vv and --print-table-metadata print what
mariadb-binlog prints, byte for byte, with either core; the changes
replayed equal the server's SELECT, exactly typed (str for text, bytes for
binary), with either core; rows, Arrow batches and JSON lines are the same
from both cores; `binlake sql` replayed gives the same table again.
"""
from __future__ import annotations

import json
import random

import pytest

import binlake
from binlake import core
from binlake.read.events import RowsEvent
from binlake.testing.mariadb import MariaDBServer

from differential.equality import compare_cores, first_difference

from .replay import CORES, mariadb_binlog, replay, run_binlake, with_core

pytestmark = pytest.mark.server

DATABASE = "cc"
#: (name, SQL type) of the compressed columns; then columns after them
COMPRESSED = [
    ("v", "VARCHAR(100) COMPRESSED CHARACTER SET latin1"),
    ("vu", "VARCHAR(300) COMPRESSED CHARACTER SET utf8mb4"),
    ("vb", "VARBINARY(200) COMPRESSED"),
    ("tt", "TINYTEXT COMPRESSED CHARACTER SET utf8mb4"),
    ("t", "TEXT COMPRESSED"),  # the table's utf8mb4
    ("mt", "MEDIUMTEXT /*M!100301 COMPRESSED*/ CHARACTER SET latin1"),
    ("lt", "LONGTEXT COMPRESSED=zlib"),
    ("tb", "TINYBLOB COMPRESSED"),
    ("b", "BLOB COMPRESSED"),
    ("lb", "LONGBLOB COMPRESSED"),
]
AFTER = [("e", "ENUM('x','y','z')"), ("plain", "VARCHAR(20) CHARACTER SET utf8mb4"),
         ("n", "INT UNSIGNED")]
#: characters a column may hold: latin1 ones stay within what latin1 and cp1252 agree on
TEXT_ALPHABET = {"latin1": "abcdeé xyz", "utf8mb4": "ab é€😀ü漢 z"}
LIMITS = {"v": 100, "vu": 300, "vb": 200, "tt": 60, "t": 15000, "mt": 90000, "lt": 300000,
          "tb": 200, "b": 60000, "lb": 300000}
CHARSETS = {"v": "latin1", "vu": "utf8mb4", "tt": "utf8mb4", "t": "utf8mb4", "mt": "latin1",
            "lt": "utf8mb4"}
BINARY = {"vb", "tb", "b", "lb"}


def _value(rng: random.Random, name: str):
    """A value for column `name`: None, empty, short, long and compressible, or long and not."""
    limit = LIMITS[name]
    kind = rng.choice(["null", "empty", "short", "long", "long", "random"])
    if kind == "null":
        return None
    if kind == "empty":
        return b"" if name in BINARY else ""
    length = rng.randrange(1, 12) if kind == "short" else rng.randrange(limit // 3, limit + 1)
    if name in BINARY:
        if kind == "random":
            return bytes(rng.randrange(256) for _ in range(length))
        unit = bytes(range(256))[rng.choice([0, rng.randrange(256)]):]  # every byte value too
        return (unit * (length // len(unit) + 1))[:length]
    alphabet = TEXT_ALPHABET[CHARSETS[name]]
    if kind == "random":
        return "".join(rng.choice(alphabet) for _ in range(length))
    unit = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 6)))
    return (unit * (length // len(unit) + 1))[:length]


def _create(server: MariaDBServer) -> None:
    columns = ", ".join(f"`{name}` {sql}" for name, sql in COMPRESSED + AFTER)
    server.execute(f"CREATE DATABASE {DATABASE}")
    server.execute(f"CREATE TABLE {DATABASE}.t (id INT PRIMARY KEY, {columns}) "
                   "DEFAULT CHARSET=utf8mb4")
    # GEOMETRY and ENUM between compressed columns: mariadb-binlog reads the
    # types after a compressed one from its metadata bytes, and hands the
    # charsets out by its own count (GEOMETRY in, compressed columns out)
    server.execute(f"CREATE TABLE {DATABASE}.g (id INT PRIMARY KEY, c1 VARCHAR(50) COMPRESSED, "
                   "p POINT, e ENUM('a','b'), c2 TEXT COMPRESSED CHARACTER SET latin1, "
                   "s SET('q','r'), w VARCHAR(10) CHARACTER SET latin1, "
                   "c3 VARBINARY(20) COMPRESSED, x CHAR(3) CHARACTER SET utf8mb4) "
                   "DEFAULT CHARSET=utf8mb4")


def _write(server: MariaDBServer) -> None:
    rng = random.Random(141)
    names = [name for name, _ in COMPRESSED]
    columns = ", ".join(f"`{name}`" for name in names + ["e", "plain", "n"])
    marks = ", ".join(["%s"] * (len(names) + 4))
    sessions = ["SET SESSION column_compression_zlib_wrap=OFF, column_compression_threshold=100",
                "SET SESSION column_compression_zlib_wrap=ON",
                "SET SESSION column_compression_zlib_level=1, column_compression_threshold=1",
                "SET SESSION column_compression_zlib_level=9, column_compression_zlib_wrap=OFF"]
    for ident in range(1, 61):
        if ident % 15 == 1:
            server.execute(sessions[ident // 15])
        values = [_value(rng, name) for name in names]
        server.execute(f"INSERT INTO {DATABASE}.t (id, {columns}) VALUES ({marks})",
                       [ident, *values, rng.choice(["x", "y", None]), "plain é", ident])
    server.execute(f"INSERT INTO {DATABASE}.t (id) VALUES (100)")  # every column NULL
    for ident in range(1, 61, 4):  # updates: compressed values in both images
        name = rng.choice(names)
        server.execute(f"UPDATE {DATABASE}.t SET `{name}` = %s, n = n + 1000 WHERE id = %s",
                       [_value(rng, name), ident])
    server.execute(f"UPDATE {DATABASE}.t SET v = CONCAT(v, 'é'), vu = REPEAT('😀', 300) "
                   "WHERE id % 7 = 3")
    server.execute(f"DELETE FROM {DATABASE}.t WHERE id % 9 = 4")
    for ident, c2 in ((1, "ab" * 500), (2, None), (3, "short")):
        server.execute(f"INSERT INTO {DATABASE}.g VALUES (%s, %s, POINT(1, %s), 'b', %s, 'q,r', "
                       "'wé', %s, 'x€y')", [ident, "c1" * 20, ident, c2, b"\x00\xff" * 10])
    server.execute(f"UPDATE {DATABASE}.g SET c1 = 'short', c3 = NULL WHERE id = 1")


def _select(server: MariaDBServer, database: str = DATABASE) -> dict:
    """{id: row}: the table as the server returns it (pymysql: str for text, bytes for binary)."""
    connection = server.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {database}.t ORDER BY id")
            names = [d[0] for d in cursor.description]
            return {row[0]: dict(zip(names, row)) for row in cursor.fetchall()}
    finally:
        connection.close()


@pytest.fixture(scope="module", params=["FULL", "NO_LOG"])
def written(request, mariadbd, tmp_path_factory):
    """(binlog files, the table's final rows, the running server, the metadata setting)."""
    with MariaDBServer(tmp_path_factory.mktemp(f"compressed-{request.param}"), server_id=14,
                       binlog_row_metadata=request.param) as server:
        _create(server)
        _write(server)
        final = _select(server)
        server.flush_logs()
        files = [str(path) for path in server.binlog_files()[:-1]]  # the closed ones
        yield files, final, server, request.param


@pytest.mark.parametrize("options", [["-v"], ["-vv"], ["-vv", "--print-table-metadata"],
                                     ["--print-table-metadata", "--base64-output=never"]],
                         ids=["v", "vv", "vv-metadata", "metadata"])
@pytest.mark.parametrize("pure", CORES, ids=lambda pure: "pure" if pure else "native")
def test_text_is_what_mariadb_binlog_prints(written, options, pure):
    files = written[0]
    theirs = mariadb_binlog(*options, *files)
    status, ours, err = with_core(pure, lambda: run_binlake("dump", "--no-defaults", *options,
                                                             *files))
    assert status == 0, err
    assert ours == theirs
    assert b"COMPRESSED meta=" in ours or "-vv" not in options
    if "--print-table-metadata" in options and written[3] == "FULL":
        assert b"INVALID_TYPE(141)" in ours and b"INVALID_TYPE(140)" in ours


def _replayed(files, pure: bool) -> dict:
    """{id: row} of table t after every change of the files, in order."""
    def run():
        state = {}
        for change in binlake.changes(files):
            if change.table != "t":
                continue
            if change.before is not None:
                state.pop(change.before["id"])
            if change.after is not None:
                state[change.after["id"]] = dict(change.after)
        return state
    return with_core(pure, run)


@pytest.mark.parametrize("pure", CORES, ids=lambda pure: "pure" if pure else "native")
def test_changes_replayed_are_the_servers_select(written, pure):
    files, final = written[0], written[1]
    state = _replayed(files, pure)
    assert sorted(state) == sorted(final)
    for ident, row in final.items():
        difference = first_difference(state[ident], row, f"row {ident}")
        assert difference is None, difference
    long_texts = [row["lt"] for row in final.values() if isinstance(row["lt"], str)]
    assert any(len(text) > 50000 for text in long_texts)  # values the server deflated


def _compressed_stored(files) -> int:
    """How many values of the table were stored deflated (the text's header byte)."""
    text = mariadb_binlog("-v", *files)
    return sum(text.count(f"@{i}='".encode() + bytes([header]))
               for i in range(2, 12) for header in (0x81, 0x82, 0x83, 0x89, 0x8a, 0x8b))


def test_the_workload_reaches_both_storages(written):
    files = written[0]
    assert _compressed_stored(files) > 50
    assert b"='\\x00" in mariadb_binlog("-v", *files)  # kept as is, behind a 0


@pytest.mark.skipif(not core.available(), reason="native core not built")
def test_both_cores_give_the_same_rows_arrow_and_json(written):
    files = written[0]
    events = [e for path in files for e in binlake.open(path) if isinstance(e, RowsEvent)]
    assert len(events) > 60
    disagreements = [f"{e.header.pos}: {p}" for e in events if (p := compare_cores(e))]
    assert not disagreements, disagreements[:5]
    arrow = [with_core(pure, lambda: binlake.arrow_changes(files).read_all()) for pure in CORES]
    assert arrow[0].equals(arrow[1])
    after = arrow[0].column("after").to_pylist()
    assert any(dict(image).get("vu") == "😀" * 300 for image in after if image)
    lines = [with_core(pure, lambda: run_binlake("dump", "--no-defaults", "--format", "json",
                                                  *files)) for pure in CORES]
    assert lines[0] == lines[1] and lines[0][0] == 0
    rows = [json.loads(line) for line in lines[0][1].splitlines()]
    values = [image for event in rows for row in event.get("rows", ())
              for image in (row["before"], row["after"]) if image]
    assert any(image.get("vu") == "😀" * 300 for image in values)


def test_sql_replayed_is_the_same_table(written):
    """The database dropped, `binlake sql` (DDL and changes) run again on the
    server: the table comes back as it was."""
    files, final, server, _ = written
    status, sql, err = run_binlake("sql", "--no-defaults", *files)
    assert status == 0, err
    server.execute(f"DROP DATABASE {DATABASE}")
    replay(server, sql)
    copy = _select(server)
    assert sorted(copy) == sorted(final)
    for ident, row in final.items():
        difference = first_difference(copy[ident], row, f"row {ident}")
        assert difference is None, difference
