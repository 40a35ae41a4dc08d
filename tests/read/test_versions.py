"""Version detection: v1 and v3 files built from the documented layout, and the
early-5.1 event renumbering on real files."""

from __future__ import annotations

import binlake
from binlake.constants import EventType as E
from binlake.read.events import QueryEvent, RotateEvent, StartEventV3

from binlog_builder import build_v1, build_v3_without_start


def _events(tmp_path, data: bytes, name="bin.001"):
    path = tmp_path / name
    path.write_bytes(data)
    reader = binlake.open(path)
    return list(reader), reader


def test_v1_file_decodes_with_13_byte_headers(tmp_path):
    events, reader = _events(tmp_path, build_v1())
    assert [e.header.type_code for e in events] == [
        E.START_EVENT_V3, E.INTVAR_EVENT, E.QUERY_EVENT, E.ROTATE_EVENT, E.STOP_EVENT]
    start, intvar, query, rotate, _ = events
    assert isinstance(start, StartEventV3) and start.binlog_version == 1
    assert start.header.length == 69
    assert start.server_version == "3.23.58-log"
    assert intvar.kind_name == "INSERT_ID" and intvar.value == 42
    assert isinstance(query, QueryEvent)
    assert (query.database, query.query) == ("test", "INSERT INTO t VALUES (NULL, 'v1')")
    assert isinstance(rotate, RotateEvent) and rotate.next_file == "mysql-bin.002"
    # positions chain although v1 headers carry no next position
    assert [e.header.pos for e in events] == [4, 73, 95, 157, 183]
    assert events[-1].header.next_pos == len(build_v1())
    assert reader.files[0].binlog_version == 1


def test_v3_file_without_start_event(tmp_path):
    events, reader = _events(tmp_path, build_v3_without_start())
    assert reader.files[0].binlog_version == 3
    assert reader.files[0].no_start_event
    assert [e.query for e in events if isinstance(e, QueryEvent)] == [
        "BEGIN", "INSERT INTO t VALUES (1)", "COMMIT"]
    rotate = events[-1]
    assert rotate.position == 4 and rotate.next_file == "mysql-bin.004"


def test_real_v3_file_with_start_event(corpus):
    reader = binlake.open(corpus / "mysql-5.5.62/suite/binlog/std_data/binlog_old_version_4_1.000001")
    events = list(reader)
    assert reader.files[0].binlog_version == 3
    assert events[0].server_version == "4.1.24-debug-log"
    kinds = {e.header.type_name for e in events}
    assert {"CREATE_FILE_EVENT", "APPEND_BLOCK_EVENT", "EXEC_LOAD_EVENT"} <= kinds


def test_wl2325_events_are_renumbered(corpus):
    path = corpus / "mysql-5.5.62/suite/binlog/std_data/ver_5_1-wl2325_r.001"
    events = list(binlake.open(path))
    names = [e.header.type_name for e in events]
    assert names == ["FORMAT_DESCRIPTION_EVENT", "QUERY_EVENT", "QUERY_EVENT", "QUERY_EVENT",
                     "TABLE_MAP_EVENT", "PRE_GA_WRITE_ROWS_EVENT", "TABLE_MAP_EVENT",
                     "PRE_GA_UPDATE_ROWS_EVENT", "TABLE_MAP_EVENT", "PRE_GA_DELETE_ROWS_EVENT",
                     "STOP_EVENT"]
    # The file names no columns; its CREATE TABLE t1 (a int, b char(50)) does.
    changes = list(binlake.changes(path))
    assert [(c.op, c.before, c.after) for c in changes] == [
        ("insert", None, {"a": 0, "b": b"one"}),
        ("insert", None, {"a": 1, "b": b"two"}),
        ("update", {"a": 0, "b": b"one"}, {"a": 1, "b": b"one"}),
        ("update", {"a": 1, "b": b"two"}, {"a": 2, "b": b"two"}),
        ("delete", {"a": 2, "b": b"two"}, None),
    ]
    raw = list(binlake.changes(path, schema=False))
    assert raw[0].after == {"@1": 0, "@2": b"one"}


def test_google_extra_header_bytes(corpus):
    for name, header in [("mdev-4645-binlog_checksum.binlog", 23),
                         ("mdev-4645-binlog_group_id.binlog", 27),
                         ("mdev-4645-binlog_group_id_checksum.binlog", 31)]:
        reader = binlake.open(corpus / "mariadb-10.11.19/std_data" / name)
        queries = [e.query for e in reader if isinstance(e, QueryEvent)]
        assert reader.files[0].header_length == header
        assert queries and all(q.isprintable() for q in queries)
