"""binlake.live.protocol's command and GTID-set encodings (no server needed).

The GTID-set encoding is the one thing of MySQL's side of the protocol that
real MySQL servers wrote into the corpus: every PREVIOUS_GTIDS event's body is
`Gtid_set::encode` of the set it holds (a tagged one from MySQL 9.x among
them), so `encode_gtid_set` of its text must give those bytes exactly."""
from __future__ import annotations

import struct

import pytest

import binlake
from binlake.read.events.gtid import PreviousGtidsEvent
from binlake.live.protocol import (BINLOG_THROUGH_GTID, ReplicationError, _varlen,
                                   binlog_dump_gtid_packet, binlog_dump_packet, encode_gtid_set,
                                   register_slave_packet)
from corpus.manifest import corpus_files


def previous_gtids_sets():
    found = []
    for path in corpus_files():
        data = None
        try:
            for event in binlake.open(path, schema=False, force=True):
                if isinstance(event, PreviousGtidsEvent) and event.sids:
                    data = data or path.read_bytes()
                    h = event.header
                    end = h.pos + h.length - (4 if h.checksum is not None else 0)
                    found.append((path.name, event.gtid_set, data[h.pos + 19:end]))
        except binlake.BinlogError:
            continue
    return found


def test_the_sets_mysql_servers_wrote_encode_to_their_bytes():
    sets = previous_gtids_sets()
    if not sets:
        pytest.skip("the corpus (../shared/binlogs or $BINLAKE_CORPUS) has no GTID sets")
    assert len(sets) >= 10
    assert any(b":mytag:" in text.encode() for _, text, _ in sets)   # a tagged one
    for name, text, body in sets:
        assert encode_gtid_set(text) == body, (name, text)


def test_sets_are_sorted_and_merged():
    a, b = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "0e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert encode_gtid_set(f"{a}:5-7:1-3:4,{b}:9") == encode_gtid_set(f"{b}:9,{a}:1-7")
    body = encode_gtid_set(f"{a}:1-7")
    assert struct.unpack_from("<Q", body, 0) == (1,)
    assert struct.unpack_from("<QQQ", body, 24) == (1, 1, 8)
    assert encode_gtid_set("") == bytes(8)


def test_varlen_lengths():
    assert _varlen(5) == bytes([10])
    assert _varlen(127) == bytes([254])
    assert _varlen(200) == ((200 << 2) | 1).to_bytes(2, "little")


def test_command_layouts():
    # COM_REGISTER_SLAVE: server_id, three length-prefixed strings, port, rank, master id
    assert register_slave_packet(7, "h", "u", "", 3306) == (
        struct.pack("<I", 7) + b"\x01h\x01u\x00" + struct.pack("<HII", 3306, 0, 0))
    # COM_BINLOG_DUMP: position (4), flags (2), server_id (4), file name (rest)
    assert binlog_dump_packet("bin.000001", 1234, 9, 2) == (
        struct.pack("<IHI", 1234, 2, 9) + b"bin.000001")
    with pytest.raises(ReplicationError, match="past 4 GiB"):
        binlog_dump_packet("bin.000001", 1 << 32, 9, 0)
    # COM_BINLOG_DUMP_GTID: flags, server_id, name length, name, position (8), data size, data
    data = encode_gtid_set("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
    packet = binlog_dump_gtid_packet("", 4, 9, 0, data)
    assert packet == (struct.pack("<HII", BINLOG_THROUGH_GTID, 9, 0)
                      + struct.pack("<QI", 4, len(data)) + data)


def test_every_private_pymysql_member_binlake_uses_is_there():
    """PyMySQL has no replication or compression API, so binlake speaks
    those through members that are not its public API. pyproject pins
    the versions having them all (`_current_timeout` came in 1.2.1); a
    release that renames one fails here, not in a user's run."""
    import inspect

    import pymysql.connections
    methods = ("_execute_command", "_read_ok_packet", "_force_close", "_request_authentication",
               "_read_packet", "_read_bytes", "_write_bytes", "_create_ssl_ctx", "connect")
    assert all(callable(getattr(pymysql.connections.Connection, m, None)) for m in methods)
    source = inspect.getsource(pymysql.connections)
    for attribute in ("_sock", "_next_seq_id", "_current_timeout", "_read_timeout"):
        assert f"self.{attribute} = " in source, attribute
    assert "defer_connect" in inspect.signature(pymysql.connections.Connection).parameters
