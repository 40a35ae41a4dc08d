"""binlake against a real MariaDB: decode what the server wrote, compare with what it holds.

Strategy: the server's ``SELECT *`` after the workload is the truth. Its values are
converted to binlake's documented representation for the configuration at hand
(``expected_value``); the decoded changes are applied in order to rebuild each table
(``apply_changes``); the two must be equal, value types and DECIMAL scales included.
``mariadb-binlog`` (the reference decoder) must accept every file and count the same
row images per table and operation.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import re
import struct
import subprocess
import uuid
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import binlake
from binlake.testing.mariadb import MariaDBServer
from binlake.testing.workload import BULK_TABLES, DATABASE, generate_bulk
from binlake.read.values import MysqlTemporal

from .conftest import BenchRun, Column

pytestmark = pytest.mark.server

INT_BITS = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
TEXT_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}  # JSON is longtext
PYTHON_CODECS = {"utf8mb4": "utf-8", "utf8mb3": "utf-8", "latin1": "cp1252"}  # MySQL latin1 is cp1252
# The server strips trailing zero bytes of fixed-length binary strings when it writes
# the binlog (Field_string::pack), and mariadb-binlog shows them stripped. INET6 and
# UUID are stored as 16-byte binary strings, so the same applies to them.
STRIPPED_BINARY_TYPES = {"binary", "inet6", "uuid"}
COMPRESSED_ROWS_EVENTS = set(range(166, 172))  # MariaDB *_COMPRESSED_EVENT(_V1) rows types


# -- the server's values in binlake's representation --------------------------------

def expected_value(value: Any, column: Column, run: BenchRun) -> Any:
    """A pymysql value of ``column`` as binlake should decode it from this run's binlog."""
    if value is None:
        return None
    kind = column.data_type
    if kind in INT_BITS:
        bits = INT_BITS[kind]
        if not run.config.knows_types and value >= 1 << (bits - 1):
            return value - (1 << bits)  # signedness unknown: two's complement of the stored width
        return value
    if kind == "float":
        return struct.unpack("<f", struct.pack("<f", value))[0]
    if kind == "bit":
        return int.from_bytes(value, "big")
    if kind in ("date", "datetime", "timestamp"):
        if isinstance(value, str):  # pymysql could not build a date: zero parts or year 0
            return MysqlTemporal(value)
        return value.replace(tzinfo=dt.timezone.utc) if kind == "timestamp" else value
    if kind in TEXT_TYPES:
        return value if run.config.knows_types else value.encode(PYTHON_CODECS[column.charset])
    if kind == "enum":
        if run.config.knows_names:
            return value
        return enum_members(column).index(value) + 1 if value else 0  # 0: the invalid value ''
    if kind == "set":
        names = frozenset(value.split(",")) if value else frozenset()
        if run.config.knows_names:
            return names
        members = enum_members(column)
        return sum(1 << members.index(name) for name in names)
    if kind == "inet6":
        value = ipaddress.IPv6Address(value).packed
    elif kind == "uuid":
        value = uuid.UUID(value).bytes
    if kind in STRIPPED_BINARY_TYPES:
        return value.rstrip(b"\x00")
    return value  # DECIMAL, DOUBLE, YEAR, TIME, VARBINARY, BLOB and GEOMETRY need nothing


def enum_members(column: Column) -> list[str]:
    """Member names from a COLUMN_TYPE such as "enum('a','it''s')"."""
    return [name.replace("''", "'") for name in re.findall(r"'((?:[^']|'')*)'", column.column_type)]


def column_key(column: Column, run: BenchRun) -> str:
    return column.name if run.config.knows_names else f"@{column.position}"


def expected_row(run: BenchRun, table: str, values: dict[str, Any]) -> dict[str, Any]:
    """Server-side values by column name -> the row dict binlake should produce."""
    by_name = {column.name: column for column in run.columns[table]}
    return {column_key(by_name[name], run): expected_value(value, by_name[name], run)
            for name, value in values.items()}


# -- comparing ------------------------------------------------------------------------

def canonical(value: Any) -> Any:
    """A form that is equal only for equal values of the same type: Decimal scale, tz and type count."""
    if isinstance(value, Decimal):
        return ("Decimal", str(value))
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, tuple(sorted(value)))
    if isinstance(value, (dt.date, dt.time)):  # datetime too; isoformat shows the tz offset
        return (type(value).__name__, value.isoformat())
    return (type(value).__name__, value)


def canonical_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {key: canonical(value) for key, value in row.items()}


def canonical_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as a sorted multiset, so tables without a primary key compare too."""
    return sorted((canonical_row(row) for row in rows), key=repr)


def row_differences(decoded: list[dict], expected: list[dict]) -> str:
    """Readable differences: per row (paired by its first column), the cells that differ."""
    unmatched = [row for row in decoded if row not in expected]
    lines = []
    for row in (row for row in expected if row not in decoded):
        first = next(iter(row.items()))
        twin = next((other for other in unmatched if next(iter(other.items())) == first), None)
        if twin is None:
            lines.append(f"not decoded: {row}")
            continue
        unmatched.remove(twin)
        cells = {key: (twin.get(key, "<absent>"), value) for key, value in row.items() if twin.get(key) != value}
        lines.append(f"row {first}: (decoded, server) differ at {cells}")
    lines += [f"not on the server: {row}" for row in unmatched]
    return "\n".join(lines[:10])


def apply_changes(changes) -> dict[str, list[dict[str, Any]]]:
    """Replay inserts, updates and deletes; a before image locates the first row agreeing with it.

    Matching on the columns the before image has works for every row image: FULL and
    NOBLOB log the key, MINIMAL logs the primary key or, without one, every column.
    """
    tables: dict[str, list[dict[str, Any]]] = {}
    for change in changes:
        rows = tables.setdefault(change.table, [])
        if change.op == "insert":
            rows.append(dict(change.after))
            continue
        index = next((i for i, row in enumerate(rows)
                      if all(key in row and row[key] == value for key, value in change.before.items())), None)
        assert index is not None, f"{change.op} of a row never inserted: {change}"
        if change.op == "delete":
            del rows[index]
        else:
            rows[index] = {**rows[index], **change.after}
    return tables


# -- fixtures ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def changes(bench_run: BenchRun) -> list:
    # The table maps as logged: this test is about each configuration's wire format.
    return [change for change in binlake.changes(bench_run.files, schema=False)
            if change.database == DATABASE]


@pytest.fixture(scope="module")
def reference_text(bench_run: BenchRun) -> str:
    """mariadb-binlog's decoding of all files; it must accept them."""
    result = subprocess.run(
        ["mariadb-binlog", "--base64-output=decode-rows", "-vv", *bench_run.files],
        capture_output=True,
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result.stdout.decode("utf-8", errors="replace")


# -- tests ------------------------------------------------------------------------------

def test_reference_decoder_reads_the_files(bench_run: BenchRun, reference_text: str):
    assert f"### INSERT INTO `{DATABASE}`.`ints`" in reference_text
    if bench_run.config.compress:
        types = set().union(*(event_types(Path(f)) for f in bench_run.files))
        assert types & COMPRESSED_ROWS_EVENTS, f"no compressed rows events written, only types {sorted(types)}"


def test_row_image_counts_match_reference(changes, reference_text: str):
    reference = Counter()
    for verb, table in re.findall(rf"^### (INSERT INTO|UPDATE|DELETE FROM) `{DATABASE}`\.`(\w+)`$",
                                  reference_text, re.MULTILINE):
        reference[table, verb.split()[0].lower()] += 1
    assert Counter((change.table, change.op) for change in changes) == reference


def test_final_state_matches_server(bench_run: BenchRun, changes):
    decoded = apply_changes(changes)
    for table, server_rows in bench_run.expected.items():
        columns = bench_run.columns[table]
        expected = [
            {column_key(c, bench_run): expected_value(row[c.name], c, bench_run) for c in columns}
            for row in server_rows
        ]
        decoded_rows, expected_rows = canonical_rows(decoded.get(table, [])), canonical_rows(expected)
        assert decoded_rows == expected_rows, f"table {table}:\n" + row_differences(decoded_rows, expected_rows)


def test_change_envelopes(bench_run: BenchRun, changes):
    assert changes, "no changes decoded"
    gtid_pattern = re.compile(rf"0-{bench_run.server_id}-\d+")
    order = []
    for change in changes:
        assert change.file in bench_run.files
        assert 4 <= change.pos < change.next_pos
        assert change.server_id == bench_run.server_id
        assert gtid_pattern.fullmatch(str(change.gtid)), change.gtid
        assert int(bench_run.started) - 1 <= change.timestamp <= bench_run.finished + 1
        assert change.table in bench_run.columns
        assert (change.before is None) == (change.op == "insert")
        assert (change.after is None) == (change.op == "delete")
        order.append((bench_run.files.index(change.file), change.pos, change.row_index))
    assert order == sorted(order) and len(set(order)) == len(order), "changes out of file order"
    # Row indexes count 0, 1, 2, ... within each rows event.
    per_event = Counter()
    for file_index, pos, row_index in order:
        assert row_index == per_event[file_index, pos]
        per_event[file_index, pos] += 1


def test_probe_changes_in_detail(bench_run: BenchRun, changes):
    """The statements of workload.PROBE_STATEMENTS, one change record at a time."""
    full = bench_run.config.row_image in ("FULL", "NOBLOB")  # the probe table has no blobs

    def row(**values):
        return canonical_row(expected_row(bench_run, "probe", values))

    one = dict(id=1, label="one", amount=Decimal("1.50"))
    two = dict(id=2, label="two", amount=Decimal("-2.00"))
    three = dict(id=3, label="three", amount=None)
    expected = [
        ("insert", None, row(**one)),
        ("insert", None, row(**two)),
        ("insert", None, row(**three)),
        ("update", row(**two) if full else row(id=2),
         row(id=2, label="TWO", amount=Decimal("20.25")) if full else row(label="TWO", amount=Decimal("20.25"))),
        ("update", row(**three) if full else row(id=3), row(**{**three, "id": 30}) if full else row(id=30)),
        ("delete", row(**one) if full else row(id=1), None),
    ]
    probe = [change for change in changes if change.table == "probe"]
    assert [(c.op, canonical_row(c.before), canonical_row(c.after)) for c in probe] == expected

    inserts = probe[:3]
    assert {(c.file, c.pos) for c in inserts} == {(inserts[0].file, inserts[0].pos)}, "one multi-row event"
    assert [c.row_index for c in inserts] == [0, 1, 2]
    gtids = [probe[0].gtid] + [c.gtid for c in probe[3:]]  # one autocommit transaction per statement
    sequence_numbers = [int(gtid.rsplit("-", 1)[1]) for gtid in gtids]
    assert sequence_numbers == sorted(set(sequence_numbers))


def test_row_image_shapes(bench_run: BenchRun, changes):
    """binlog_row_image decides which columns an UPDATE logs; here only lobs.label changes."""
    names = [column.name for column in bench_run.columns["lobs"]]
    key = {column_key(column, bench_run): column.name for column in bench_run.columns["lobs"]}
    update = next(c for c in changes if c.table == "lobs" and c.op == "update")
    before, after = sorted(key[k] for k in update.before), sorted(key[k] for k in update.after)
    image = bench_run.config.row_image
    if image == "FULL":
        assert before == after == sorted(names)
    elif image == "NOBLOB":  # TEXT, BLOB and JSON (a LONGTEXT) columns are left out
        assert before == after == ["id", "label"]
    else:
        assert (before, after) == (["id"], ["label"])


def test_transaction_shares_one_gtid(bench_run: BenchRun, changes):
    """The workload's multi-table transaction: four changes, one GTID; the rolled back one is absent."""
    def first_column(change):  # the id: the first column of these tables
        image = change.after if change.op == "insert" else change.before
        return image.get(column_key(bench_run.columns[change.table][0], bench_run))

    in_transaction = [("ints", "insert", 7), ("strings", "update", 2), ("numbers", "delete", 4),
                      ("temporal", "update", 2)]
    found = [c for c in changes if (c.table, c.op, first_column(c)) in in_transaction]
    assert [(c.table, c.op, first_column(c)) for c in found] == in_transaction
    assert len({c.gtid for c in found}) == 1
    assert ("ints", "insert", 8) not in {(c.table, c.op, first_column(c)) for c in changes}


def test_bulk_generator_writes_what_it_reports(mariadbd, tmp_path):
    """generate_bulk (used by the benchmark): its counts are what the binlog holds."""
    with MariaDBServer(tmp_path) as server:
        stats = generate_bulk(server, "bulk", 4 << 20, seed=3, batch_rows=5000)
        row_counts = {table: server.query(f"SELECT COUNT(*) FROM bulk.{table}")[0][0] for table in BULK_TABLES}
        server.flush_logs()
    files = [str(path) for path in server.binlog_files()]
    result = subprocess.run(["mariadb-binlog", "--base64-output=decode-rows", "-v", *files], capture_output=True)
    assert result.returncode == 0, result.stderr.decode(errors="replace")

    changes = [change for change in binlake.changes(files) if change.database == "bulk"]
    assert stats["bytes"] >= 4 << 20
    assert Counter(change.op for change in changes) == Counter(
        insert=stats["inserts"], update=stats["updates"], delete=stats["deletes"])
    remaining = Counter()
    for change in changes:
        remaining[change.table] += {"insert": 1, "delete": -1}.get(change.op, 0)
    assert remaining == Counter(row_counts)


# -- helpers ----------------------------------------------------------------------------

def event_types(path: Path) -> set[int]:
    """Event type codes in a binlog file, from the common v4 header only (independent of binlake)."""
    data = path.read_bytes()
    types, pos = set(), 4
    while pos + 19 <= len(data):
        types.add(data[pos + 4])
        pos += int.from_bytes(data[pos + 9:pos + 13], "little")
    return types
