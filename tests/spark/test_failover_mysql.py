"""The follower moved to another server by MySQL GTIDs
(binlake.spark.read.failover): the lake's GTID set, the new server's
gtid_executed holding it, and where the lake goes on in its binlog.

Strategy: a MariaDB server cannot play MySQL, so the MySQL servers are
scripted (tests/scripted_server.py: replica connections through the real
packet reading) and their binlogs are real MySQL 8.0 files of the corpus:
replicated-bin.000001 (GTIDs 1-5 of one server UUID, an empty
Previous_gtids) and replicated-bin.000002 (Previous_gtids 1-5, GTIDs 6-9).
The old server's copies hold them up to GTID 7; the new server (a replica
of the old one, with the same binlogs: 1-9) is asked for the lake's set and
its copy placed after GTID 7: by the failover's functions one by one, by
the follower's NextServer, and end to end by the follower (Spark runs
included) on the old server and then on the new one.
"""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

import binlake  # noqa: E402
from binlake.gtids import GtidSet  # noqa: E402
from binlake.read.events import GtidEvent  # noqa: E402
from binlake.spark.read.failover import (FailoverRefused, check_holds, continuation,  # noqa: E402
                                         gtid_text, lake_gtid_state)
from binlake.spark.state.manifest import FileRead, Manifest, SnapshotFloor  # noqa: E402

CORPUS = Path(os.environ.get("BINLAKE_CORPUS", "/work/shared/binlogs"))
FOLDER = CORPUS / "mysql-8.0.40" / "std_data"
FIRST, SECOND = "replicated-bin.000001", "replicated-bin.000002"
SID = "2d6e8214-9918-11ec-ac13-0010e0dc39c0"


@pytest.fixture(scope="module")
def ends() -> dict:
    """{gno: where its transaction ends} over both files: after the last
    event following its GTID event (replicated-bin.000002 ends with a STOP)."""
    if not (FOLDER / SECOND).exists():
        pytest.skip(f"no MySQL binlogs with GTIDs under {FOLDER}")
    found, current = {}, None
    for name in (FIRST, SECOND):
        for event in binlake.open(FOLDER / name):
            if type(event) is GtidEvent:
                assert event.sid == SID
                current = event.gno
            elif event.type_name in ("STOP_EVENT", "ROTATE_EVENT"):
                current = None
            elif current is not None:
                found[current] = event.header.pos + event.header.length
    assert sorted(found) == list(range(1, 10))
    return found


def lake(*read: tuple[str, int]) -> Manifest:
    """A lake that has read each (file, up to) of the old server's."""
    return Manifest(files={name: FileRead(seq, str(FOLDER / name), end, "")
                           for seq, (name, end) in enumerate(read, 1)})


def test_the_lakes_mysql_gtid_state_is_the_previous_gtids_and_each_gtid_read_after(ends):
    size = (FOLDER / FIRST).stat().st_size

    def state(*read) -> str:
        found = lake_gtid_state(lake(*read), str(FOLDER))
        assert isinstance(found, GtidSet)
        return gtid_text(found)
    assert state((FIRST, size), (SECOND, ends[7])) == f"{SID}:1-7"
    assert state((FIRST, ends[3])) == f"{SID}:1-3"
    # the second file read up to its first transaction: its Previous_gtids alone
    first = next(e.header.pos for e in binlake.open(FOLDER / SECOND) if type(e) is GtidEvent)
    assert state((FIRST, size), (SECOND, first)) == f"{SID}:1-5"
    # a lake whose first file read is the second: its Previous_gtids carries 1-5
    assert state((SECOND, ends[8])) == f"{SID}:1-8"
    # a lake from a snapshot that has read nothing since: the snapshot's set
    floor = SnapshotFloor(SECOND, 4, 2, gtid=f"{SID}:1-6")
    assert gtid_text(lake_gtid_state(Manifest(snapshot=floor), str(FOLDER))) == f"{SID}:1-6"
    # a MySQL binlog without GTIDs (anonymous transactions): no state
    anonymous = "bug27213339-bin.000001"
    assert lake_gtid_state(Manifest(files={anonymous: FileRead(
        1, "", (FOLDER / anonymous).stat().st_size, "")}), str(FOLDER)) == {}


def test_a_server_lacking_part_of_the_lakes_set_is_refused_naming_an_interval():
    state = GtidSet.parse(f"{SID}:1-7")
    check_holds(f"{SID}:1-9", state, "h:1 is server id 2")
    # as the server writes gtid_executed: a line per UUID
    check_holds(f"11111111-1111-1111-1111-111111111111:1-3,\n{SID}:1-7", state, "h:1")
    for executed, lacked in ((f"{SID}:1-5", f"{SID}:6-7"), (f"{SID}:1-3:5-9", f"{SID}:4"),
                             ("", f"{SID}:1-7"),
                             ("11111111-1111-1111-1111-111111111111:1-9", f"{SID}:1-7")):
        with pytest.raises(FailoverRefused) as refused:
            check_holds(executed, state, "h:1 is server id 2")
        assert str(refused.value) == (
            f"h:1 is server id 2, and its gtid_executed lacks {lacked} while the lake holds "
            f"{SID}:1-7: it lacks transactions the lake holds (a replica behind, or another "
            "topology's server); nothing was changed")


def test_a_gtid_sets_difference_is_what_the_other_lacks():
    other = "11111111-1111-1111-1111-111111111111"
    held = GtidSet.parse(f"{SID}:1-10:20-30,{SID}:tag:1-5,{other}:7")
    executed = GtidSet.parse(f"{SID}:2-3:5-25,{SID}:TAG:1-5")
    assert str(held.difference(executed)) == f"{other}:7,{SID}:1:4:26-30"
    assert held.difference(held).intervals == {}
    assert str(held.difference(GtidSet())) == str(held)


def test_the_lake_goes_on_after_the_last_transaction_of_its_set(ends):
    path = str(FOLDER / SECOND)
    size = os.path.getsize(path)
    assert continuation(path, size, GtidSet.parse(f"{SID}:1-7")) == ends[7]
    assert continuation(path, size, GtidSet.parse(f"{SID}:1-5")) == 4  # none of it held
    assert continuation(path, size, GtidSet.parse(f"{SID}:1-9")) == ends[9]  # (a STOP after)
    assert continuation(path, ends[8], GtidSet.parse(f"{SID}:1-9")) == ends[8]  # copied so far
    # the lake holding 8 but not 7, written before it: refused
    with pytest.raises(FailoverRefused, match=f"transaction {SID}:7 the lake does not hold comes "
                                              f"before {SID}:8, which it holds"):
        continuation(path, size, GtidSet.parse(f"{SID}:1-6:8"))


# -- the follower's next server, a scripted MySQL server -------------------------------

@pytest.fixture
def old_lake(tmp_path, ends):
    """A lake that followed a MySQL server (server id 1) up to GTID 7: its
    copies (the second binlog cut there), their backup manifest and the
    lake's manifest."""
    from binlake.live.backup import BackupManifest
    from binlake.spark.state.store import BINLOGS, folder_path, make_folder, save_manifest
    out = str(tmp_path / "lake")
    make_folder(out, BINLOGS)
    prefix = folder_path(out, BINLOGS) + os.sep
    shutil.copyfile(FOLDER / FIRST, prefix + FIRST)
    with open(FOLDER / SECOND, "rb") as source, open(prefix + SECOND, "wb") as copy:
        copy.write(source.read(ends[7]))
    backup = BackupManifest(prefix)
    backup.identify({"server_id": 1, "server_uuid": SID})
    backup.record(FIRST, os.path.getsize(prefix + FIRST), True)
    backup.record(SECOND, ends[7], False)
    save_manifest(out, Manifest(files={
        FIRST: FileRead(1, prefix + FIRST, os.path.getsize(prefix + FIRST), "", next=SECOND),
        SECOND: FileRead(2, prefix + SECOND, ends[7], "")}))
    return out, prefix


def next_server(out: str, prefix: str):
    from binlake.spark.run.follow_failover import NextServer
    caught_up = []
    return NextServer(out, prefix, lambda message: None, threading.Event(),
                      lambda: caught_up.append(True)), caught_up


def scripted_mysql(*scripts, gtid_executed: str, mariadb: bool = False):
    """The new server (server id 2), with both binlogs whole."""
    from binlake.live.source import LiveOptions, LiveSource
    from scripted_server import ScriptedServer
    server = ScriptedServer(*scripts, server_ids=[2] * 10, mariadb=mariadb,
                            variables={"gtid_executed": gtid_executed,
                                       "gtid_binlog_pos": "0-2-9"},
                            binary_logs=[(name, (FOLDER / name).stat().st_size)
                                         for name in (FIRST, SECOND)])
    source = LiveSource(LiveOptions({"host": "h", "port": 1}),
                        connection_class=server.connection_class)
    return server, source


def test_the_follower_goes_on_on_a_scripted_mysql_server_by_its_gtid_set(old_lake, ends):
    """The new server is asked for the lake's set (COM_BINLOG_DUMP_GTID),
    names the binlog it starts such a replica in; its copy is made from that
    binlog's start, and the lake placed in it after GTID 7."""
    from binlake.live.backup import Copier
    from binlake.live.protocol import encode_gtid_set
    from binlake.spark.read.failover import FAILOVER_FILES, copies_prefix
    from binlake.spark.read.ranges import name_sequence
    from binlake.spark.state.store import load_manifest
    from scripted_server import artificial_rotate, events_of
    out, prefix = old_lake
    whole = [event for _, event in events_of(FOLDER / SECOND)]
    server, source = scripted_mysql(
        [artificial_rotate(SECOND), *whole],   # the probe, at the lake's set
        [artificial_rotate(SECOND), *whole],   # the copier, by position from its start
        gtid_executed=f"{SID}:1-9")
    follower, caught_up = next_server(out, prefix)
    epoch, placing = follower.moved(source)
    assert caught_up == [True]          # the old copies went in first
    assert (epoch, placing.file, placing.size) == (1, SECOND, (FOLDER / SECOND).stat().st_size)
    assert gtid_text(placing.state) == f"{SID}:1-7"
    assert server.requests == [("", 4)]
    assert server.gtid_sets == [encode_gtid_set(f"{SID}:1-7")]

    copier = Copier(source, copies_prefix(prefix, epoch), name_sequence)
    try:
        copier.start(placing.file)
        assert follower.place(placing, copier)
    finally:
        copier.close()
    assert server.requests[1] == (SECOND, 4)
    local = f"failover1~{SECOND}"
    assert Path(prefix + local).read_bytes() == (FOLDER / SECOND).read_bytes()
    floor = load_manifest(out).floor_of(FAILOVER_FILES)
    assert (floor.file, floor.pos, floor.gtid) == (local, ends[7], f"{SID}:1-7")
    # placed: the same server again is followed on without another placing
    _, source = scripted_mysql(gtid_executed=f"{SID}:1-9")
    assert next_server(out, prefix)[0].moved(source) == (1, None)


def test_a_mysql_server_lacking_the_lakes_gtids_is_refused_in_one_line(old_lake):
    from binlake.spark.state.store import load_manifest
    out, prefix = old_lake
    before = load_manifest(out)
    server, source = scripted_mysql(gtid_executed=f"{SID}:1-5")
    with pytest.raises(FailoverRefused, match=f"server id 2, not server id 1 the lake followed, "
                                              f"and its gtid_executed lacks {SID}:6-7 "):
        next_server(out, prefix)[0].moved(source)
    assert server.requests == []        # nothing asked of it
    assert load_manifest(out) == before
    assert not [name for name in os.listdir(prefix) if name.startswith("failover")]


def test_a_mariadb_server_after_a_mysql_one_is_refused_in_one_line(old_lake):
    out, prefix = old_lake
    follower, caught_up = next_server(out, prefix)
    _, source = scripted_mysql(gtid_executed="", mariadb=True)
    with pytest.raises(FailoverRefused, match="needs GTIDs of one kind, and this is MariaDB "
                                              "after MySQL; nothing was changed"):
        follower.moved(source)
    assert caught_up == []


def test_a_follower_goes_on_on_a_scripted_mysql_server_end_to_end(tmp_path, ends, spark):
    """The follower (binlake.spark.run.follow) on the old MySQL server (id 1),
    which ends after GTID 7; then on the new one (id 2, a replica of it with
    GTIDs 1-9): changes/ holds each transaction's changes once, those after
    the failover read from the new server's copy."""
    import pyarrow.parquet as pq

    from binlake.live.source import LiveOptions, LiveSource
    from binlake.spark.run.follow import Follower
    from scripted_server import ScriptedServer, artificial_rotate, events_of
    out = str(tmp_path / "lake")
    first = [event for _, event in events_of(FOLDER / FIRST)]
    second = events_of(FOLDER / SECOND)
    old = ScriptedServer([artificial_rotate(FIRST), *first, artificial_rotate(SECOND),
                          *[event for pos, event in second if pos < ends[7]]],
                         server_ids=[1] * 10, mariadb=False)
    whole = [event for _, event in second]
    new = ScriptedServer([artificial_rotate(SECOND), *whole], [artificial_rotate(SECOND), *whole],
                         server_ids=[2] * 10, mariadb=False,
                         variables={"gtid_executed": f"{SID}:1-9"},
                         binary_logs=[(name, (FOLDER / name).stat().st_size)
                                      for name in (FIRST, SECOND)])
    said = []
    for server, start in ((old, FIRST), (new, None)):
        source = LiveSource(LiveOptions({"host": "h", "port": 1}, to_last_log=True),
                            connection_class=server.connection_class)
        Follower(spark, out, source, start, log=said.append).run()
    assert any(f"the lake's GTIDs {SID}:1-7 go on in its {SECOND}" in line for line in said), said
    assert f"the lake goes on in failover1~{SECOND} at {ends[7]}" in said, said
    changes = pq.read_table(os.path.join(out, "changes"), columns=["gtid", "file"]).to_pylist()
    held = sorted((row["gtid"], row["file"]) for row in changes)
    assert held == sorted([(f"{SID}:{gno}", FIRST) for gno in (1, 3, 4, 5)]
                          + [(f"{SID}:{gno}", SECOND) for gno in (6, 7)]
                          + [(f"{SID}:8", f"failover1~{SECOND}")])
    # the new server's copy read after GTID 7 only: 8 and 9 (a DROP TABLE), once each
    events = pq.read_table(os.path.join(out, "events"),
                           columns=["gtid", "file", "pos"]).to_pylist()
    after = [row for row in events if row["file"] == f"failover1~{SECOND}"]
    assert {row["gtid"] for row in after if row["gtid"]} == {f"{SID}:8", f"{SID}:9"}
    assert min(row["pos"] for row in after) == ends[7]
