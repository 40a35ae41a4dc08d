"""GEOMETRY among a table map's character columns, as a MariaDB server logs it.

A table map's optional metadata (binlog_row_metadata MINIMAL and FULL) gives
the charsets of its "character" columns as one list (DEFAULT_CHARSET or
COLUMN_CHARSET), in column order. Which columns take a place in it is the
server's choice: MariaDB counts every column with a charset but ENUM and SET
(log_event_server.cc `is_character_field`), GEOMETRY among them (binary, 63);
MySQL counts CHAR, VARCHAR, TEXT/BLOB and 9.x's VECTOR, not GEOMETRY. Read
with MySQL's count, every text column after a GEOMETRY takes its neighbour's
charset: `(id INT, p POINT, v VARCHAR latin1, w VARCHAR utf8mb4)` gave v as
bytes and w decoded as latin1.

Strategy: a private MariaDB 10.11 per binlog_row_metadata (FULL, MINIMAL)
writes rows into tables that put GEOMETRY, POINT, LINESTRING and
MULTIPOLYGON columns first, between and last among latin1, utf8mb4 and
binary text, ENUM/SET and compressed columns, so that the server logs both
forms of the list (COLUMN_CHARSET, and DEFAULT_CHARSET with GEOMETRY as an
exception). Then: each table map gives every column the collation the
server's information_schema names (binary for GEOMETRY and binary strings);
the rows of `binlake.open` and the changes of `binlake.changes`, replayed,
are the server's SELECT exactly, with either core; `binlake dump` -v, -vv
and --print-table-metadata still print what mariadb-binlog prints. The
same binlog with its format description naming no MariaDB server is read
with MySQL's count: maps of equal bytes from servers of both flavours, in
one read or one file, are each read as their own server counts.
"""
from __future__ import annotations

import zlib

import pytest

import binlake
from binlake import core
from binlake.read.events import RowsEvent, TableMapEvent
from binlake.testing.mariadb import MariaDBServer

from differential.equality import compare_cores, first_difference

from .replay import CORES, mariadb_binlog, run_binlake, with_core

pytestmark = pytest.mark.server

DATABASE = "geo_cs"
TABLES = {
    # the reported table: the list [63, latin1, utf8mb4] is logged as COLUMN_CHARSET
    "a": "id INT PRIMARY KEY, p POINT, v VARCHAR(10) CHARACTER SET latin1, "
         "w VARCHAR(10) CHARACTER SET utf8mb4",
    # GEOMETRY between text, binary, ENUM/SET and compressed columns, and last:
    # most listed columns binary, so DEFAULT_CHARSET 63 with the text as exceptions
    "b": "id INT PRIMARY KEY, v VARCHAR(20) CHARACTER SET latin1, g GEOMETRY, vb VARBINARY(8), "
         "e ENUM('x','yz') CHARACTER SET latin1, t TEXT CHARACTER SET utf8mb4, "
         "s SET('a','ü') CHARACTER SET utf8mb4, l LINESTRING, c CHAR(3) CHARACTER SET latin1, "
         "z TEXT COMPRESSED CHARACTER SET latin1, bl BLOB, pe POINT",
    # GEOMETRY first, twice: most columns utf8mb4, so DEFAULT_CHARSET with the
    # two GEOMETRY (binary) and the latin1 column as its exceptions
    "c": "g GEOMETRY, mp MULTIPOLYGON, id INT PRIMARY KEY, t1 TINYTEXT, t2 VARCHAR(30), "
         "t3 MEDIUMTEXT, t4 CHAR(4), x CHAR(2) CHARACTER SET latin1",
}
#: (table, values SQL): SQL so that the server makes the geometry values
ROWS = [
    ("a", "(1, POINT(1, 2), 'vé', 'w€😀')"),
    ("a", "(2, NULL, 'ÿ', NULL)"),
    ("a", "(3, ST_GeomFromText('POINT(-1.5 1e10)'), NULL, 'ü漢')"),
    ("b", "(1, 'lé', ST_GeomFromText('LINESTRING(0 0, 1 1)', 4326), x'00ff', 'yz', 'ü€', 'a,ü', "
          "ST_GeomFromText('LINESTRING(1 2, 3 4)'), 'ñé', REPEAT('é', 300), x'c3a9', POINT(5, 6))"),
    ("b", "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"),
    ("b", "(3, '', POINT(0, 0), '', 'x', '', '', NULL, '', '', '', NULL)"),
    ("c", "(ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'), "
          "ST_GeomFromText('MULTIPOLYGON(((0 0, 2 0, 2 2, 0 0)))'), "
          "1, 'tü', 'v😀', 'm€', 'c漢', 'é')"),
    ("c", "(NULL, NULL, 2, NULL, 'é', NULL, '', 'ß')"),
]
CHANGES = [
    "UPDATE {db}.a SET p = POINT(3, 4), v = CONCAT(v, 'ñ'), w = 'ω' WHERE id = 1",
    "UPDATE {db}.b SET g = NULL, t = 'τέλος', s = 'ü', e = 'x' WHERE id = 1",
    "UPDATE {db}.c SET x = 'à', t2 = 'ä', g = POINT(9, 9) WHERE id = 2",
    "DELETE FROM {db}.a WHERE id = 2",
    "DELETE FROM {db}.b WHERE id = 3",
]
BINARY_COLLATION = 63
GEOMETRY_TYPES = {"geometry", "point", "linestring", "polygon", "multipoint",
                  "multilinestring", "multipolygon", "geometrycollection"}
BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}


@pytest.fixture(scope="module", params=["FULL", "MINIMAL"])
def written(request, mariadbd, tmp_path_factory):
    """(binlog files, {table: {id: row}} as SELECT returns them, {table: [(column,
    DATA_TYPE, collation id)]}, the metadata setting)."""
    with MariaDBServer(tmp_path_factory.mktemp(f"geometry-{request.param}"), server_id=21,
                       binlog_row_metadata=request.param) as server:
        server.execute(f"CREATE DATABASE {DATABASE}")
        for table, columns in TABLES.items():
            server.execute(f"CREATE TABLE {DATABASE}.{table} ({columns}) DEFAULT CHARSET=utf8mb4")
        for table, values in ROWS:
            server.execute(f"INSERT INTO {DATABASE}.{table} VALUES {values}")
        for statement in CHANGES:
            server.execute(statement.format(db=DATABASE))
        final = {table: _select(server, table) for table in TABLES}
        columns = _columns(server)
        server.flush_logs()
        files = [str(path) for path in server.binlog_files()[:-1]]  # the closed ones
        yield files, final, columns, request.param


def _select(server: MariaDBServer, table: str) -> dict:
    """{id: row}: the table as the server returns it (pymysql: str for text,
    bytes for binary and geometry; a SET as the frozenset binlake gives)."""
    connection = server.connect()
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {DATABASE}.{table}")
            names = [d[0] for d in cursor.description]
            rows = [dict(zip(names, row)) for row in cursor.fetchall()]
    finally:
        connection.close()
    for row in rows:
        if isinstance(row.get("s"), str):
            row["s"] = frozenset(row["s"].split(",")) if row["s"] else frozenset()
    return {row["id"]: row for row in rows}


def _columns(server: MariaDBServer) -> dict:
    rows = server.query(
        "SELECT c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, k.ID FROM information_schema.COLUMNS c "
        "LEFT JOIN information_schema.COLLATIONS k ON k.COLLATION_NAME = c.COLLATION_NAME "
        "WHERE c.TABLE_SCHEMA = %s ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION", (DATABASE,))
    columns: dict = {}
    for table, name, data_type, collation in rows:
        columns.setdefault(table, []).append((name, data_type, collation))
    return columns


CORE_IDS = lambda pure: "pure" if pure else "native"  # noqa: E731


def _expected_charset(data_type: str, collation, metadata: str):
    """The collation the table map gives a column: text its own, binary
    strings and (on MariaDB) GEOMETRY the binary one; ENUM/SET theirs with
    FULL metadata only; other columns none."""
    if data_type in ("enum", "set"):
        return collation if metadata == "FULL" else None
    if data_type in GEOMETRY_TYPES or data_type in BINARY_TYPES:
        return BINARY_COLLATION
    return collation


def test_each_column_has_the_collation_the_server_names(written):
    files, _, columns, metadata = written
    maps = [e for e in binlake.open(files, schema=False)
            if isinstance(e, TableMapEvent) and e.database == DATABASE]
    assert {m.table for m in maps} == set(TABLES)
    for event in maps:
        got = [(i, c.charset) for i, c in enumerate(event.columns)]
        expected = [(i, _expected_charset(data_type, collation, metadata))
                    for i, (_, data_type, collation) in enumerate(columns[event.table])]
        assert got == expected, event.table


def test_the_server_logs_both_forms_of_the_list(written):
    """Table a's list is COLUMN_CHARSET; b's DEFAULT_CHARSET binary (GEOMETRY
    and BLOB) with the text as exceptions, c's utf8mb4 with GEOMETRY as one:
    both forms count GEOMETRY."""
    from binlake.constants import TableMapOptionalMetadata as M
    from binlake.read.cursor import Cursor
    forms = {}
    for event in binlake.open(written[0], schema=False):
        if isinstance(event, TableMapEvent) and event.database == DATABASE:
            cur = Cursor(event.optional_metadata)
            while not cur.at_end():
                kind = cur.u8()
                cur.sub(cur.packed_len())
                if kind in (M.DEFAULT_CHARSET, M.COLUMN_CHARSET):
                    forms[event.table] = kind
    assert forms == {"a": M.COLUMN_CHARSET, "b": M.DEFAULT_CHARSET, "c": M.DEFAULT_CHARSET}


def _replay(pairs) -> dict:
    """{table: {id: row}} after every (table, before, after) in order."""
    state: dict = {table: {} for table in TABLES}
    for table, before, after in pairs:
        if before is not None:
            state[table].pop(before["id"])
        if after is not None:
            state[table][after["id"]] = dict(after)
    return state


def _assert_same(state: dict, final: dict) -> None:
    for table, rows in final.items():
        assert sorted(state[table]) == sorted(rows), table
        for ident, row in rows.items():
            difference = first_difference(state[table][ident], row, f"{table} row {ident}")
            assert difference is None, difference


@pytest.mark.parametrize("pure", CORES, ids=CORE_IDS)
def test_changes_replayed_are_the_servers_select(written, pure):
    files, final = written[0], written[1]
    changes = with_core(pure, lambda: [(c.table, c.before, c.after)
                                         for c in binlake.changes(files)
                                         if c.database == DATABASE])
    _assert_same(_replay(changes), final)


@pytest.mark.parametrize("pure", CORES, ids=CORE_IDS)
def test_rows_of_the_table_maps_alone_are_the_servers_select(written, pure):
    """binlake.open without the schema history: names, charsets and ENUM/SET
    members only from the table maps (FULL metadata)."""
    files, final, _, metadata = written
    if metadata != "FULL":
        pytest.skip("MINIMAL metadata logs no names")

    def rows():
        return [(e.table.table, before, after)
                for e in binlake.open(files, schema=False)
                if isinstance(e, RowsEvent) and e.table.database == DATABASE
                for before, after in e.rows()]
    _assert_same(_replay(with_core(pure, rows)), final)


@pytest.mark.skipif(not core.available(), reason="native core not built")
def test_both_cores_give_the_same_rows_arrow_and_json(written):
    files = written[0]
    events = [e for e in binlake.open(files) if isinstance(e, RowsEvent)]
    assert len(events) >= len(ROWS) + len(CHANGES)
    disagreements = [f"{e.header.pos}: {p}" for e in events if (p := compare_cores(e))]
    assert not disagreements, disagreements[:5]
    arrow = [with_core(pure, lambda: binlake.arrow_changes(files).read_all()) for pure in CORES]
    assert arrow[0].equals(arrow[1])
    after = [dict(image) for image in arrow[0].column("after").to_pylist() if image]
    assert any(image.get("w") == "ω" for image in after)
    assert any(image.get("v") == "vé" for image in after)
    lines = [with_core(pure, lambda: run_binlake("dump", "--no-defaults", "--format", "json",
                                                  *files)) for pure in CORES]
    assert lines[0] == lines[1] and lines[0][0] == 0


def _as_if_from_mysql(path: str, directory) -> str:
    """A copy of the binlog at `path` whose format description names no
    MariaDB server (its checksum made again): the same table maps' bytes,
    read with MySQL's count of the charset list."""
    data = bytearray(open(path, "rb").read())
    # the FDE after the magic number: its length at header offset 9, its
    # server version (50 bytes) after the 19-byte header and binlog version
    length = int.from_bytes(data[4 + 9:4 + 13], "little")
    version = slice(4 + 19 + 2, 4 + 19 + 2 + 50)
    assert b"MariaDB" in data[version]
    data[version] = data[version].replace(b"MariaDB", b"Xyzzy-7")
    end = 4 + length - 4
    data[end:end + 4] = zlib.crc32(data[4:end]).to_bytes(4, "little")
    copy = directory / "as-if-mysql.000001"
    copy.write_bytes(bytes(data))
    return str(copy)


@pytest.mark.parametrize("pure", CORES, ids=CORE_IDS)
def test_equal_maps_of_both_flavours_are_kept_apart(written, pure, tmp_path):
    """The same table map bytes from a MariaDB and a MySQL server are
    different maps: read one after the other, each file gives what it gives
    read alone (the caches of maps by their bytes know the flavour)."""
    files = written[0]
    other = _as_if_from_mysql(files[0], tmp_path)

    def read(paths):
        out = []
        for path in paths:
            maps = [(e.table, [c.charset for c in e.columns])
                    for e in binlake.open([path], schema=False) if isinstance(e, TableMapEvent)]
            out.append(maps)
        together = [(e.header.file, e.table, [c.charset for c in e.columns])
                    for e in binlake.open(paths, schema=False) if isinstance(e, TableMapEvent)]
        changes = [(c.file, c.table, c.before, c.after)
                   for c in binlake.changes(paths, schema=False)]
        alone = [(c.file, c.table, c.before, c.after)
                 for path in paths for c in binlake.changes([path], schema=False)]
        return out, together, changes, alone

    for paths in ([files[0], other], [other, files[0]]):
        out, together, changes, alone = with_core(pure, lambda: read(paths))
        assert together == [(path, table, charsets)
                            for path, maps in zip(paths, out) for table, charsets in maps]
        assert first_difference(changes, alone) is None
        # one file (as a relay log holds the events of servers of either
        # flavour, each after its format description): the same again
        both = tmp_path / "both.000001"
        both.write_bytes(b"".join(open(path, "rb").read()[i and 4:]  # one magic number
                                  for i, path in enumerate(paths)))
        in_one = with_core(pure, lambda: [(c.table, c.before, c.after)
                                           for c in binlake.changes([str(both)], schema=False)])
        assert first_difference(in_one, [change[1:] for change in alone]) is None
    theirs, ours = (dict(maps) for maps in out)  # of [other, files[0]]
    assert theirs["a"] == [None, None, BINARY_COLLATION, 8]
    assert ours["a"] == [None, BINARY_COLLATION, 8, 45]


@pytest.mark.parametrize("options", [["-v"], ["-vv"], ["-vv", "--print-table-metadata"],
                                     ["--print-table-metadata", "--base64-output=never"]],
                         ids=["v", "vv", "vv-metadata", "metadata"])
@pytest.mark.parametrize("pure", CORES, ids=CORE_IDS)
def test_text_is_what_mariadb_binlog_prints(written, options, pure):
    files = written[0]
    theirs = mariadb_binlog(*options, *files)
    status, ours, err = with_core(pure, lambda: run_binlake("dump", "--no-defaults", *options,
                                                             *files))
    assert status == 0, err
    assert ours == theirs
