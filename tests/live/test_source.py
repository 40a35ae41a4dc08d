"""binlake.live.source without a server: a scripted replica connection sends what a
MariaDB dump sends (artificial rotate, format description, the file's events,
heartbeats), and the LiveFiles must give the server's file back byte for byte,
through lost connections, repeats and mid-file starts; a gap is an error.

The script is cut from the bundled sample binlogs (MariaDB 10.11, CRC32)."""
from __future__ import annotations

import os
import random
import threading
import time
import struct
from pathlib import Path

import pytest

import binlake
from binlake.live.source import LiveOptions, LiveSource, ResumeToken
from corpus.manifest import corpus_files
from binlake.live.protocol import ReplicationError
from scripted_server import (RawPacket, ScriptedServer, artificial_rotate, events_of,
                             heartbeat, packet, resent_description, with_crc)

SAMPLES = Path(binlake.__file__).parent / "sample_data"
FILES = [SAMPLES / "binlog.000001", SAMPLES / "binlog.000002"]


def lost() -> OSError:
    """The connection breaks here (as a reset socket does)."""
    return ConnectionResetError("connection lost")


def source(server: ScriptedServer, **options) -> LiveSource:
    options.setdefault("file", "binlog.000001")
    options.setdefault("to_last_log", True)
    return LiveSource(LiveOptions({"host": "h", "port": 1}, **options),
                      connection_class=server.connection_class)


def copies(live: LiveSource) -> dict[str, bytes]:
    """Every LiveFile's bytes, read as the backup does (across gaps)."""
    out = {}
    for live_file in live:
        chunks = []
        while True:
            live_file.next_event_at(live_file.offset)
            offset, data = live_file.read_chunk(1 << 16)
            if not data:
                break
            chunks.append(data)
        out[live_file.name] = b"".join(chunks)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_the_files_come_back_byte_for_byte_through_lost_connections(seed):
    first, second = events_of(FILES[0]), events_of(FILES[1])
    fde = first[0][1]
    cut = len(first) // 2
    server = ScriptedServer(
        [artificial_rotate("binlog.000001"), *[e for _, e in first[:cut]], lost()],
        # the new connection: the rotate, the description re-sent, two events again
        [artificial_rotate("binlog.000001", first[cut - 2][0]), resent_description(fde),
         *[e for _, e in first[cut - 2:]], heartbeat("binlog.000001", 9999),
         artificial_rotate("binlog.000002"), *[e for _, e in second[:5]], lost()],
        [artificial_rotate("binlog.000002"), second[0][1], *[e for _, e in second[5:]]],
    )
    got = copies(source(server))
    assert got == {"binlog.000001": FILES[0].read_bytes(), "binlog.000002": FILES[1].read_bytes()}
    # each reconnect asks for the offset after the last event received
    assert server.requests == [("binlog.000001", 4), ("binlog.000001", first[cut][0]),
                               ("binlog.000002", second[5][0])]


def test_the_reader_reads_a_live_file_as_the_file():
    first = events_of(FILES[0])
    server = ScriptedServer([artificial_rotate("binlog.000001"), *[e for _, e in first]])
    live = [(e.header.pos, e.type_name) for e in binlake.open(source(server, to_last_log=False))]
    assert live == [(e.header.pos, e.type_name) for e in binlake.open(FILES[0])]


def test_a_mid_file_start_places_the_events_at_their_offsets():
    first = events_of(FILES[0])
    start = first[10][0]
    server = ScriptedServer([artificial_rotate("binlog.000001", start),
                             resent_description(first[0][1]), *[e for _, e in first[10:]]])
    events = list(binlake.open(source(server, position=start, to_last_log=False)))
    assert [e.header.pos for e in events] == [4] + [pos for pos, _ in first[10:]]
    assert [e.header.pos for e in events[1:]] == [
        e.header.pos for e in binlake.open(FILES[0], start_position=start)][1:]


def test_a_gap_after_a_reconnect_is_an_error():
    first = events_of(FILES[0])
    server = ScriptedServer(
        [artificial_rotate("binlog.000001"), *[e for _, e in first[:20]], lost()],
        [artificial_rotate("binlog.000001"), resent_description(first[0][1]),
         *[e for _, e in first[21:]]],          # one event missing
    )
    with pytest.raises(ReplicationError, match=f"gap in the server's binlog.*{first[21][0]}"):
        copies(source(server))


def test_another_server_behind_the_address_after_a_reconnect_is_refused():
    """Positions are one server's: a reconnect that reaches another (a
    failover behind one address) stops instead of splicing its binlog on."""
    first = events_of(FILES[0])
    server = ScriptedServer(
        [artificial_rotate("binlog.000001"), *[e for _, e in first[:20]], lost()],
        [artificial_rotate("binlog.000001", first[20][0]), resent_description(first[0][1]),
         *[e for _, e in first[20:]]], server_ids=[1, 2])
    with pytest.raises(ReplicationError, match="another .server id 2, was 1.") as refused:
        copies(source(server))
    assert not refused.value.retryable
    assert len(server.requests) == 1  # nothing asked of the other server


def test_a_fatal_error_is_not_retried():
    err = b"\xff" + (1236).to_bytes(2, "little") + b"#HY000purged"
    server = ScriptedServer([RawPacket(err)])
    with pytest.raises(ReplicationError, match="purged"):
        copies(source(server))
    assert server.requests == [("binlog.000001", 4)]


def test_an_event_read_in_several_chunks_is_found_whole():
    from binlake.live.source import LiveFile
    live = LiveFile.__new__(LiveFile)
    live._kept = None
    live._recent = __import__("collections").deque([(4, b"abcd"), (8, b"efgh"), (12, b"ij")])
    assert live.raw_event(6, 7) == b"cdefghi"
    assert live.raw_event(12, 2) == b"ij"
    assert live.raw_event(2, 4) is None         # its start is gone
    assert live.raw_event(12, 3) is None        # not all here


def test_bytes_kept_are_found_across_chunks_and_gaps():
    from binlake.live.source import _Kept
    kept = _Kept()
    for offset, data in [(0, b"\xfebin"), (4, b"abcd"), (8, b"efgh"), (100, b"xyz")]:
        kept.add(offset, data)
    assert kept.read(6, 5) == b"cdefg"          # across two chunks given one after the other
    assert kept.read(100, 3) == b"xyz"
    assert kept.read(10, 4) is None             # runs into the gap
    assert kept.read(50, 1) is None
    assert [(offset, load()) for offset, load in kept.chunks()] == [
        (0, b"\xfebinabcdefgh"), (100, b"xyz")]


def test_a_live_file_kept_whole_is_read_again_from_its_start():
    """`keep_all` then `replay_kept`: a second reader gets every byte the
    first got, in reads of any size, then the bytes that follow, and the
    events' bytes stay found however long ago they were read."""
    first = events_of(FILES[0])
    half = len(first) // 2
    server = ScriptedServer([artificial_rotate("binlog.000001"), *[e for _, e in first]])
    files = iter(source(server, to_last_log=False))   # (held: its end closes the connection)
    live_file = next(files)
    live_file.keep_all()
    given = []
    while sum(map(len, given)) < first[half][0]:
        offset, data = live_file.read_chunk(777)
        given.append(data)
    live_file.replay_kept()
    again = []
    while True:
        live_file.next_event_at(sum(map(len, again)))
        offset, data = live_file.read_chunk(100)
        if not data:
            break
        assert offset == sum(map(len, again))
        again.append(data)
    assert b"".join(again) == FILES[0].read_bytes()
    assert live_file.raw_event(first[1][0], len(first[1][1])) == first[1][1]


def test_the_native_run_splitter_equals_the_reference():
    """rust/src/replica.rs against replica._ordinary_run: real packets, cut
    anywhere, with bytes overwritten."""
    native = pytest.importorskip("binlake._native")
    from binlake.live.protocol import _ordinary_run
    first = events_of(FILES[0])
    stream = b"".join(packet(e) for _, e in first)
    rng = random.Random(16)
    for trial in range(400):
        data = bytearray(stream[:rng.randint(0, len(stream))])
        for _ in range(rng.randint(0, 3) if trial % 2 else 0):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
        data = bytes(data)
        for at, expected in ((0, 4), (0, first[0][0]), (len(packet(first[0][1])), first[1][0])):
            limit = rng.choice((1, 300, 1 << 20))
            assert native.ordinary_run(data, at, expected, limit) == \
                _ordinary_run(data, at, expected, limit), trial


def test_offsets_past_4_gib_are_counted_from_event_lengths():
    """log_pos is 32 bits: an event's 64-bit offset is the one nearest where
    the previous ended; a run of events crossing 4 GiB is taken whole by
    the native splitter and its reference alike."""
    from binlake.live.protocol import _ordinary_run
    from binlake.live.source import widened
    assert widened(100, 4) == 100
    assert widened((1 << 32) + 50 - (1 << 32), (1 << 32) - 10) == (1 << 32) + 50
    assert widened((1 << 32) - 8, (1 << 32) + 20) == (1 << 32) - 8
    assert widened(-30, 1 << 32) == (1 << 32) - 30   # log_pos - length, wrapped
    start = (1 << 32) - 100
    events, expected = [], start
    for i in range(5):
        body = bytes([i]) * 40
        length = 19 + len(body)
        expected += length
        header = struct.pack("<IBIIIH", 1700000000 + i, 30, 1, length, expected & 0xFFFFFFFF, 0)
        events.append(header + body)
    data = b"".join(packet(e) for e in events)
    reference = _ordinary_run(data, 0, start, 1 << 20)
    assert reference[0] == len(data) and reference[2] == 5
    native = pytest.importorskip("binlake._native")
    assert native.ordinary_run(data, 0, start, 1 << 20) == reference


def test_the_native_commit_mark_records_as_its_reference():
    """What a resume token is made of: where the last whole group ended, and
    each MariaDB domain's last GTID (a MySQL GTID has no domain; a group cut
    off moves nothing)."""
    from binlake import core
    from binlake.live.source import _CommitMark
    native = core.native()
    if native is None:
        pytest.skip("native core not built")
    calls = [("b.1", "0-1-5", 7, 100, 1, True), ("b.1", "1-2-3", None, 200, 2, True),
             ("b.1", "0-1-6", None, 300, 3, False),
             ("b.2", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23", None, 400, 4, True),
             ("b.2", None, None, 500, 5, True), ("b.2", "0-1-7", 9, 600, None, True)]
    seen = []
    for mark in (native.CommitMark(), _CommitMark()):
        assert mark.after is None and mark.domains == {}
        told = [mark(*call) for call in calls]
        seen.append((told, mark.after, mark.domains))
    assert seen[0] == seen[1] == ([True, True, False, True, True, True], ("b.2", 600),
                                  {"0": "0-1-7", "1": "1-2-3"})


def test_a_mysql_token_carries_the_gtid_set_and_another_server_continues_by_it():
    """MySQL: each token's GTID set is the file's Previous_gtids and every
    GTID given up to it (the native changes loop's mark and the transactions'
    reference alike); resumed on another server of the domain, the stream
    asks for the transactions not in that set (COM_BINLOG_DUMP_GTID)."""
    from binlake.gtids import GtidSet
    from binlake.live.protocol import encode_gtid_set
    from binlake.live.source import LiveStream
    from binlake.read.events import GtidEvent, PreviousGtidsEvent
    path = next(p for p in corpus_files() if p.name == "haha.000041")
    events = list(binlake.open(path))
    previous = next(e for e in events if isinstance(e, PreviousGtidsEvent)).gtid_set
    given = [e.gtid for e in events if type(e) is GtidEvent]
    assert previous and len(given) >= 5

    def expected(gtids):
        sid = given[0].rpartition(":")[0]
        return str(GtidSet.parse(previous).union({sid: [(int(g.rpartition(":")[2]),) * 2
                                                        for g in gtids]}))

    def stream():
        server = ScriptedServer([artificial_rotate(path.name), *[e for _, e in events_of(path)]],
                                mariadb=False)
        live = LiveStream(LiveOptions({"host": "h", "port": 1}, file=path.name), {"schema": False})
        live.source._connection_class = server.connection_class
        return live
    live = stream()
    tokens = [(txn.gtid, txn.resume_token) for txn in live.transactions()]
    assert tokens
    for gtid, token in tokens:
        assert token.gtid == expected(given[:given.index(gtid) + 1])
        assert token.server_id == 1
    live = stream()
    assert sum(1 for _ in live.changes()) > 0
    last = live.resume_token
    assert last.gtid == expected(given) and ResumeToken.parse(str(last)) == last

    # resumed on server 2 (a replica, a promoted primary): by the GTID set
    other = ScriptedServer([artificial_rotate(path.name)], server_ids=[2], mariadb=False)
    resumed = LiveSource(LiveOptions({"host": "h", "port": 1}, file=last.file,
                                     position=last.position, origin_server_id=1,
                                     resume_gtid=last.gtid),
                         connection_class=other.connection_class)
    list(resumed)
    assert other.requests == [("", 4)]
    assert other.gtid_sets == [encode_gtid_set(last.gtid)]
    # a MySQL token is no position on a MariaDB server: refused in one line
    mariadb = ScriptedServer([], server_ids=[2])
    with pytest.raises(ReplicationError, match="MySQL GTID state, which this MariaDB server"):
        list(LiveSource(LiveOptions({"host": "h", "port": 1}, file=last.file,
                                    position=last.position, origin_server_id=1,
                                    resume_gtid=last.gtid),
                        connection_class=mariadb.connection_class))


def test_a_mysql_stream_begun_mid_file_has_no_gtid_state_until_a_file_begins():
    """Begun by position inside a file, the GTIDs before that position are
    not known: the token carries none (it is not guessed) until the stream
    reads the next file's Previous_gtids."""
    from binlake.live.source import LiveStream
    from binlake.read.events import GtidEvent
    path = next(p for p in corpus_files() if p.name == "haha.000041")
    events = events_of(path)
    gtids = [(e.header.pos, e.gtid) for e in binlake.open(path) if type(e) is GtidEvent]
    start = gtids[2][0]
    fde = events[0][1]
    server = ScriptedServer([artificial_rotate(path.name, start), resent_description(fde),
                             *[e for pos, e in events if pos >= start],
                             artificial_rotate("next.000001"), *[e for _, e in events]],
                            mariadb=False)
    live = LiveStream(LiveOptions({"host": "h", "port": 1}, file=path.name, position=start,
                                  to_last_log=True), {"schema": False})
    live.source._connection_class = server.connection_class
    seen = [(txn.resume_token.file, txn.resume_token.gtid) for txn in live.transactions()]
    assert {gtid for file, gtid in seen if file == path.name} == {None}
    after = [gtid for file, gtid in seen if file == "next.000001"]
    assert after and all(after)


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never says a word (a server
    hung before its handshake, a proxy to nowhere)."""
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(5)
    for sock in accepted:
        sock.close()
    listener.close()


def test_a_server_silent_in_its_handshake_is_an_error_within_the_read_timeout(silent_server):
    started = time.monotonic()
    with pytest.raises(ReplicationError, match="cannot connect"):
        list(binlake.stream("127.0.0.1", silent_server, "root", "", stop_never=False,
                            schema=False, read_timeout=1.0, file="binlog.000001"))
    assert time.monotonic() - started < 10


def test_close_wakes_a_connection_still_in_its_handshake(silent_server):
    """Without a read timeout the handshake would wait SETUP_TIMEOUT (30 s):
    close() from another thread ends the stream at once, without an error."""
    stream = binlake.stream("127.0.0.1", silent_server, "root", "", schema=False, heartbeat=0,
                            file="binlog.000001")
    outcome = []

    def consume():
        try:
            outcome.append(list(stream))
        except Exception as exc:  # noqa: BLE001 - what it was is the test's
            outcome.append(exc)
    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    stream.close()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - started < 2
    assert outcome == [[]]


def test_binlakes_own_registration_is_known_by_its_whole_process_id():
    """The report host names the process (the report port's 16 bits cannot:
    pid_max is 4194304 under systemd): a live process's registration is
    kept, a dead one's taken over, another program's never."""
    import subprocess
    import sys
    from binlake.live.source import REPORT_HOST_PREFIX, _own_dead_registration, report_host
    assert report_host() == f"{REPORT_HOST_PREFIX}{os.getpid()}"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not _own_dead_registration(f"{REPORT_HOST_PREFIX}{child.pid}", 65535)
    finally:
        child.kill()
        child.wait()
    assert _own_dead_registration(f"{REPORT_HOST_PREFIX}{child.pid}", 65535)
    gone = next(pid for pid in range(4_194_000, 4_194_300) if not _alive(pid))
    assert _own_dead_registration(f"{REPORT_HOST_PREFIX}{gone}", 65535)
    for other in ("replica1", f"{REPORT_HOST_PREFIX}x", REPORT_HOST_PREFIX.rstrip("/")):
        assert not _own_dead_registration(other, 65535)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def test_another_servers_file_of_the_same_name_after_a_reconnect_is_refused():
    """Two servers with one server id behind one address (MySQL's default
    id is 1; Galera nodes): the format description the new connection
    sends again is compared with the one read, not dropped; another
    file's (begun at another time) stops the stream, not a byte spliced."""
    from binlake.live.source import ServerChanged
    first = events_of(FILES[0])
    cut = len(first) // 2
    other = bytearray(first[0][1][:-4])
    struct.pack_into("<I", other, 0, struct.unpack_from("<I", other, 0)[0] + 7)  # begun later
    server = ScriptedServer(
        [artificial_rotate("binlog.000001"), *[e for _, e in first[:cut]], lost()],
        [artificial_rotate("binlog.000001", first[cut][0]),
         resent_description(with_crc(other)), *[e for _, e in first[cut:]]])
    with pytest.raises(ServerChanged, match="another binlog.000001"):
        copies(source(server))


def test_a_mysql_binlog_is_read_on_past_4_gib_by_the_8_byte_position():
    """COM_BINLOG_DUMP's position has 4 bytes: past 4 GiB in one binlog a
    MySQL server is asked by COM_BINLOG_DUMP_GTID (8 bytes) with no GTID
    to leave out, and the events (their 32-bit log_pos wrapped) are placed
    at their 64-bit offsets."""
    first = events_of(FILES[0])
    start = (5 << 30) + first[10][0]          # the same events, 5 GiB further on

    def moved(raw: bytes) -> bytes:
        event = bytearray(raw[:-4])
        end = struct.unpack_from("<I", event, 13)[0]
        struct.pack_into("<I", event, 13, (end + (5 << 30)) & 0xFFFFFFFF)
        return with_crc(event)
    server = ScriptedServer([artificial_rotate("binlog.000001", start),
                             resent_description(first[0][1]),
                             *[moved(e) for _, e in first[10:]]], mariadb=False)
    events = list(binlake.open(source(server, position=start, to_last_log=False)))
    assert server.requests == [("binlog.000001", start)]
    assert server.gtid_sets == [bytes(8)]        # the empty set: nothing left out
    assert [e.header.pos for e in events[1:]] == [pos + (5 << 30) for pos, _ in first[10:]]


def test_a_mariadb_token_past_4_gib_goes_on_by_its_gtid_placed_at_its_position():
    """MariaDB's COM_BINLOG_DUMP cannot ask past 4 GiB: a token there is
    continued by its GTID state (the server skips to it), the events placed
    at their 64-bit offsets from the token's position; a reconnect there by
    position is refused with PositionPast4GiB, which a stream's
    transactions() goes on from by the token (LiveStream.failed_over)."""
    from binlake.live.source import PositionPast4GiB
    first = events_of(FILES[0])
    start = (5 << 30) + first[10][0]

    def moved(raw: bytes) -> bytes:
        event = bytearray(raw[:-4])
        end = struct.unpack_from("<I", event, 13)[0]
        struct.pack_into("<I", event, 13, (end + (5 << 30)) & 0xFFFFFFFF)
        return with_crc(event)
    script = [artificial_rotate("binlog.000001"), first[0][1], *[moved(e) for _, e in first[10:]]]
    server = ScriptedServer(script)
    live = source(server, position=start, to_last_log=False, origin_server_id=1,
                  resume_gtid="0-1-5")
    events = list(binlake.open(live))
    assert server.requests == [("", 4)]              # by GTID, no file named
    assert [e.header.pos for e in events[1:]] == [pos + (5 << 30) for pos, _ in first[10:]]
    lost_then = ScriptedServer([*script[:10], lost()], [])
    with pytest.raises(PositionPast4GiB, match="past 4 GiB"):
        list(binlake.open(source(lost_then, position=start, to_last_log=False,
                                 origin_server_id=1, resume_gtid="0-1-5", retries=1)))
