"""Every real binlog of the shared corpus, start to end.

A file marked clean in MANIFEST.md must decode completely: positions chain
from 4 to the file size, every rows event decodes to values, and the event
counts by type equal the manifest's. A file marked corrupt, truncated or
encrypted must yield its good events and then stop with a BinlogError
naming the file and an offset.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

import binlake
from binlake import BinlogError, EncryptedBinlog
from binlake.constants import EventType as E
from binlake.read.events import RowsEvent, UnknownEvent

from corpus.manifest import corpus_dir, read_manifest

#: Vendor event codes no public documentation describes: kept raw, reported.
UNDOCUMENTED_VENDOR_CODES = {100}  # Amazon Aurora's padding event (mysql-bin.aurora-padding)

#: Our event type names as the manifest spells them.
_MANIFEST_NAMES = {
    E.START_EVENT_V3: "START_V3", E.WRITE_ROWS_EVENT: "WRITE_ROWS_V2",
    E.UPDATE_ROWS_EVENT: "UPDATE_ROWS_V2", E.DELETE_ROWS_EVENT: "DELETE_ROWS_V2",
    E.WRITE_ROWS_EVENT_V1: "WRITE_ROWS_V1", E.UPDATE_ROWS_EVENT_V1: "UPDATE_ROWS_V1",
    E.DELETE_ROWS_EVENT_V1: "DELETE_ROWS_V1", E.GTID_EVENT: "MARIA_GTID",
    E.GTID_LIST_EVENT: "MARIA_GTID_LIST", E.BINLOG_CHECKPOINT_EVENT: "MARIA_BINLOG_CHECKPOINT",
    E.ANNOTATE_ROWS_EVENT: "MARIA_ANNOTATE_ROWS", E.START_ENCRYPTION_EVENT: "MARIA_START_ENCRYPTION",
    E.PARTIAL_UPDATE_ROWS_EVENT: "PARTIAL_UPDATE_ROWS",
}


def manifest_name(code: int) -> str:
    if code in _MANIFEST_NAMES:
        return _MANIFEST_NAMES[code]
    try:
        name = E(code).name
    except ValueError:
        return f"type{code}"
    for suffix in ("_LOG_EVENT", "_EVENT"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _files():
    root = corpus_dir()
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and p.name != "MANIFEST.md")


def _expected_counts(entry) -> Counter:
    """Manifest counts with the old-numbering annotations dropped."""
    counts = Counter()
    for name, n in entry.events.items():
        counts[name.split("(old#")[0]] += n
    return counts


def test_mariadb_10_0_hires_timestamps_decode_with_the_width_of_their_ddl(corpus):
    """create table t(id int primary key,d timestamp(3)) and its kin: every value
    is its event's own time, to the second."""
    import datetime as dt
    rows = {(c.table, c.after["id"]): c.after["d"]
            for c in binlake.changes(corpus / "tiflow/mysql-bin.000001") if c.table != "user"}
    at = lambda *a: dt.datetime(*a, tzinfo=dt.timezone.utc)  # noqa: E731
    assert rows == {("t", 1): at(2022, 5, 16, 14, 53, 10), ("t1", 1): at(2022, 5, 16, 14, 55, 47),
                    ("t2", 1): at(2022, 5, 16, 14, 56, 37), ("t3", 1): at(2022, 5, 18, 3, 4, 55),
                    ("t3", 2): at(2022, 5, 18, 3, 5, 5), ("t5", 1): at(2022, 5, 18, 3, 7, 6),
                    ("t6", 1): at(2022, 5, 18, 3, 10, 2)}
    reader = binlake.open(corpus / "tiflow/mysql-bin.000001")
    assert sum(1 for _ in reader) and not reader.schema.warnings


def test_corpus_has_every_manifest_file(corpus):
    manifest = read_manifest(corpus)
    assert len(manifest) == 151
    assert set(manifest) == set(_files())


@pytest.mark.parametrize("relpath", _files())
def test_corpus_file(corpus, relpath):
    entry = read_manifest(corpus)[relpath]
    path = str(corpus / relpath)
    # The schema history (on by default) gives MariaDB 10.0's TIMESTAMP(n) in
    # tiflow/mysql-bin.000001 its width, which only the file's DDL says.
    reader = binlake.open(path)
    events, error = [], None
    try:
        for event in reader:
            events.append(event)
            if isinstance(event, RowsEvent):
                event.rows()
    except BinlogError as exc:
        error = exc

    if not entry.is_binlog or entry.must_fail:
        assert error is not None, f"{relpath} is marked '{entry.condition}' but read cleanly"
        assert error.file == path and error.offset >= 0
        assert str(error).startswith(f"{path}: offset {error.offset}: ")
        if entry.encrypted:
            assert isinstance(error, EncryptedBinlog)
        # Every good event before the error was handed out, in order.
        if events:
            assert events[-1].header.next_pos <= error.offset or events[-1].header.pos <= error.offset
        return

    assert error is None, f"{relpath}: {error}"
    # Positions chain over the whole file (inner payload events share their
    # container's position and are skipped here).
    pos = 4
    for event in events:
        if event.header.pos == pos:
            pos = event.header.next_pos
    assert pos == os.path.getsize(path) or relpath.endswith(".gz")
    undecoded = [e for e in events if isinstance(e, UnknownEvent)]
    assert all(e.header.type_code in UNDOCUMENTED_VENDOR_CODES for e in undecoded), undecoded
    counts = Counter()
    in_payload = set()
    for event in events:
        name = manifest_name(event.header.type_code)
        if event.header.pos in in_payload:
            name = "payload:" + name
        counts[name] += 1
        if event.header.type_code == E.TRANSACTION_PAYLOAD_EVENT:
            in_payload.add(event.header.pos)
    if entry.events:
        assert counts == _expected_counts(entry)
