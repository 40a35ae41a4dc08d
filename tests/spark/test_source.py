"""The `binlog` data source: the same events and values as the core reader, however split.

The whole corpus is read in one job per view and compared, file by file,
with `binlake.BinlogReader`: every event's header fields and decoded
fields (`info`), and every change's values (as the exact text of
binlake.spark.read.exact), GTID and operation. Then the ground-truth binlogs are
read in one partition and in many byte ranges, which must give the same rows.
"""
from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest

from binlake import BinlogError, BinlogReader, PartialEvent
from binlake.read.events import GtidEvent, MariadbGtidEvent, RowsEvent
from binlake.text.jsonable import event_to_dict
from binlake.read.scan import scan
from binlake.spark.read.exact import row_texts, text_row

pytest.importorskip("pyspark")
from binlake.spark.read.source import plan  # noqa: E402

HEADER_KEYS = ("file", "pos", "next_pos", "length", "type", "type_code", "timestamp",
               "server_id", "log_pos", "flags")
OPS = {"insert": "c", "update": "u", "delete": "d"}


def core_read(path: str):
    """(events, changes) as the core reader sees them, or None if it fails
    before the end (a partial last event of an open file is not a failure)."""
    events, changes = [], []
    last_pos, sub, gtid = -1, 0, None
    try:
        # The events view shows table maps as the binlog wrote them; the
        # changes view names columns as the schema history knows them.
        for event, raw in zip(BinlogReader([path]), BinlogReader([path], schema=False)):
            h = event.header
            sub = sub + 1 if h.pos == last_pos else 0
            last_pos = h.pos
            info = event_to_dict(raw, rows=False)
            own = raw.fields()
            for key in HEADER_KEYS:
                if key not in own:  # the event's own flags stay
                    info.pop(key, None)
            events.append((h.pos, sub, h.next_pos, h.type_name, h.type_code, h.timestamp,
                           h.server_id, json.loads(json.dumps(info))))
            if isinstance(event, (GtidEvent, MariadbGtidEvent)):
                gtid = event.gtid
            if isinstance(event, RowsEvent):
                texts = row_texts(event.table)
                for index, (before, after) in enumerate(event.rows()):
                    changes.append((h.pos, sub, index, OPS[event.operation], gtid,
                                    text_row(before, texts), text_row(after, texts)))
    except PartialEvent:
        # The server was still writing the file: the source leaves out the
        # transaction it had not finished (a later read takes it whole).
        end = scan(path).closed_end
        events = [e for e in events if e[0] < end]
        changes = [c for c in changes if c[0] < end]
    except BinlogError:
        return None
    return events, changes


@pytest.fixture(scope="module")
def corpus_reads(corpus):
    files = sorted(str(p) for p in corpus.rglob("*") if p.is_file() and p.name != "MANIFEST.md")
    good, bad = {}, []
    for path in files:
        with open(path, "rb") as f:
            if f.read(4) != b"\xfebin":
                continue
        result = core_read(path)
        if result is None:
            bad.append(path)
        else:
            good[path] = result
    return good, bad


def test_corpus_events_equal_the_core_reader(spark, corpus_reads):
    good, _ = corpus_reads
    assert len(good) > 100
    rows = spark.read.format("binlog").load(sorted(good)).collect()
    got = defaultdict(list)
    for r in rows:
        got[r.path].append((r.pos, r.commit_key.sub, r.next_pos, r.type, r.type_code,
                            int(r.timestamp.timestamp()), r.server_id, json.loads(r.info)))
    assert set(got) <= set(good)
    for path, (events, _changes) in good.items():
        assert sorted(got.get(path, []), key=lambda e: e[:2]) == events, path


def test_corpus_changes_equal_the_core_reader(spark, corpus_reads):
    good, _ = corpus_reads
    rows = spark.read.format("binlog").option("view", "changes").load(sorted(good)).collect()
    got = defaultdict(list)
    for r in rows:
        got[r.path].append((r.pos, r.commit_key.sub, r.row_index, r.op, r.gtid,
                            r.before, r.after))
    total = 0
    for path, (_events, changes) in good.items():
        assert sorted(got.get(path, []), key=lambda c: c[:3]) == changes, path
        total += len(changes)
    assert total == len(rows) > 1000


def test_a_bad_file_fails_the_read_naming_file_and_offset(spark, corpus_reads):
    _, bad = corpus_reads
    corrupt = next(p for p in bad if "corrupt-relay-bin" in p)
    with pytest.raises(Exception) as caught:
        spark.read.format("binlog").load(corrupt).collect()
    assert "corrupt-relay-bin.000624: offset" in str(caught.value)


def test_one_partition_and_many_ranges_give_the_same_rows(spark, truth):
    for view in ("events", "changes"):
        one = spark.read.format("binlog").option("view", view).option("split_bytes", 1 << 40)
        many = spark.read.format("binlog").option("view", view).option("split_bytes", 2048)
        whole, split = one.load(truth.files), many.load(truth.files)
        assert whole.rdd.getNumPartitions() == 1
        assert split.rdd.getNumPartitions() > 2 * len(truth.files)
        assert _comparable(whole.collect()) == _comparable(split.collect())


def _comparable(rows) -> list:
    """Rows as sorted reprs: maps and structs with their items sorted."""
    def plain(value):
        if isinstance(value, dict):
            return tuple(sorted((k, plain(v)) for k, v in value.items()))
        return value
    return sorted(repr(plain(row.asDict(recursive=True))) for row in rows)


def test_ranges_start_at_transaction_boundaries(truth):
    splits, _ = plan({"paths": json.dumps(truth.files), "split_bytes": "2048"})
    by_file = defaultdict(list)
    for split in splits:
        by_file[split.path].append(split)
    assert max(len(s) for s in by_file.values()) > 5
    for path, pieces in by_file.items():
        assert pieces[0].start == 4 and pieces[-1].end is None
        assert all(a.end == b.start for a, b in zip(pieces, pieces[1:]))
        # Every range starts between transactions: at a GTID event (MariaDB
        # writes one per transaction) or an event that belongs to none.
        starts = {p.start for p in pieces[1:]}
        kinds = {e.header.pos: e.type_name for e in BinlogReader([path]) if e.header.pos in starts}
        assert set(kinds.values()) <= {"GTID_EVENT", "BINLOG_CHECKPOINT_EVENT", "GTID_LIST_EVENT",
                                       "ROTATE_EVENT", "STOP_EVENT"}, kinds


def test_tables_option_reads_only_those_tables(spark, truth):
    frame = (spark.read.format("binlog").option("view", "changes")
             .option("tables", "binlake_test.no_pk,*.probe").load(truth.files))
    assert {r.table for r in frame.select("table").distinct().collect()} == {"no_pk", "probe"}
    assert os.path.basename(frame.first().path).startswith("binlog.")


def test_a_live_servers_offsets_stop_at_the_bytes_on_disk_for_sure(tmp_path, monkeypatch):
    """Following a live server, the stream's latest offset is the last whole
    transaction within the bytes of the newest copy fsynced (what an OS
    crash cannot take: a checkpoint past them could not be read again);
    reading loaded files, the file's whole transactions."""
    import shutil

    from binlake.spark.read import source
    sample = os.path.join(os.path.dirname(source.__file__), "..", "..", "sample_data",
                          "binlog.000001")
    copy = tmp_path / "binlog.000001"
    shutil.copy(sample, copy)
    whole = scan(str(copy)).boundaries
    half = whole[len(whole) // 2]
    synced = []

    def durable(path):
        synced.append(path)
        return half + 7  # bytes past a boundary, not a transaction's end
    monkeypatch.setattr(source, "durable_size", durable)
    reader = source.BinlogStreamReader({"path": str(tmp_path)})
    assert reader.latestOffset()["pos"] == scan(str(copy)).closed_end  # loaded: no copier
    reader = source.BinlogStreamReader({"path": str(tmp_path)})
    reader._copier = type("Copier", (), {"failure": None})()  # following a server
    offset = reader.latestOffset()
    assert synced == [str(copy)] and offset["pos"] == half < scan(str(copy)).closed_end
