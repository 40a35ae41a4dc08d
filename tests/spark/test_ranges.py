"""The pieces of the Spark source that need no Spark: exact text, ranges, transactions.

The exact text of every value of every real binlog (and of the sample data,
which has every MariaDB column type) must read back to the very value the
core reader decoded: nothing is rounded, reformatted or reinterpreted.
"""
from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import struct
from decimal import Decimal

import pytest

from binlake import BinlogError, BinlogReader
from binlake.constants import ColumnType as T
from binlake.read.events import RowsEvent
from binlake.text.jsonable import to_jsonable
from binlake.read.mysql_json import PartialJson
from binlake.spark.read.exact import row_texts
from binlake.spark.read.ranges import (Split, name_sequence, number_files, pack, read_split,
                                  transactions)

pytest.importorskip("pyarrow")
from binlake.spark.read.batches import change_batches  # noqa: E402

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "src", "binlake", "sample_data")
_TIME = re.compile(r"(-?)(\d+):(\d\d):(\d\d)(?:\.(\d+))?")


def sample_files() -> list[str]:
    return sorted(os.path.join(SAMPLE, n) for n in os.listdir(SAMPLE) if n.startswith("binlog."))


def read_back(text: str, value, column):
    """Parse the exact text as the Python type the decoder produced."""
    if isinstance(value, str):
        return text
    if isinstance(value, bool) or isinstance(value, int):
        return int(text)
    if isinstance(value, Decimal):
        return Decimal(text)
    if isinstance(value, float):
        if column.real_type == T.MYSQL_TYPE_FLOAT:
            return struct.unpack("<f", struct.pack("<f", float(text)))[0]
        return float(text)
    if isinstance(value, bytes):
        return base64.b64decode(text)
    if isinstance(value, dt.datetime):
        parsed = dt.datetime.fromisoformat(text)
        return parsed.replace(tzinfo=dt.timezone.utc) if value.tzinfo else parsed
    if isinstance(value, dt.date):
        return dt.date.fromisoformat(text)
    if isinstance(value, dt.timedelta):
        sign, hours, minutes, seconds, fraction = _TIME.fullmatch(text).groups()
        delta = dt.timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds),
                             microseconds=int((fraction or "0").ljust(6, "0")))
        return -delta if sign else delta
    if isinstance(value, frozenset):
        return frozenset(text.split(",")) if text else frozenset()
    if isinstance(value, list):
        return json.loads(text)
    if isinstance(value, PartialJson):  # diffs the before image could not be given to
        assert json.loads(text) == to_jsonable(value)
        return value
    raise AssertionError(f"no reading back for {type(value)}")


def binlog_files(corpus) -> list[str]:
    files = sample_files()
    for path in sorted(corpus.rglob("*")):
        if path.is_file() and path.name != "MANIFEST.md":
            with open(path, "rb") as f:
                if f.read(4) == b"\xfebin":
                    files.append(str(path))
    return files


def test_exact_text_reads_back_to_the_decoded_value(corpus):
    checked = set()
    for path in binlog_files(corpus):
        try:
            for event in BinlogReader([path]):
                if not isinstance(event, RowsEvent) or event.table is None:
                    continue
                columns = {c.key: c for c in event.table.columns}
                texts = row_texts(event.table)
                for image in (i for pair in event.rows() for i in pair if i):
                    for key, value in image.items():
                        if value is None:
                            continue
                        text = texts[key](value)
                        back = read_back(text, value, columns[key])
                        assert back == value, (path, key, value, text)
                        if isinstance(value, Decimal):
                            assert back.as_tuple() == value.as_tuple(), (path, key, text)
                        checked.add(type(value).__name__)
        except BinlogError:
            continue
    assert {"int", "str", "bytes", "Decimal", "float", "datetime", "date", "timedelta",
            "frozenset", "MysqlTemporal"} <= checked


def test_every_change_of_the_sample_knows_its_transaction():
    files = sample_files()
    for seq, path in enumerate(files, 1):
        rows = [r for b in change_batches(Split(path, seq), {}) for r in b.to_pylist()]
        assert rows and all(r["xid"] is not None and r["gtid"].startswith("0-7-") for r in rows)
        # A transaction's rows share its XID, commit time and end, which follows them.
        for r in rows:
            assert r["commit_pos"] > r["pos"] and r["commit_timestamp"] >= r["timestamp"]


def test_transactions_group_events_between_boundaries():
    path = sample_files()[0]
    groups = list(transactions(read_split(Split(path, 1))))
    assert all(g.complete for g in groups)
    with_rows = [g for g in groups if any(isinstance(i.event, RowsEvent) for i in g.events)]
    assert with_rows and all(g.xid is not None and g.gtid for g in with_rows)
    positions = [i.event.header.pos for g in groups for i in g.events]
    assert positions == sorted(positions) and positions[0] == 4
    # Every group ends where the next begins.
    for a, b in zip(groups, groups[1:]):
        assert a.commit_pos == b.events[0].event.header.pos


def test_file_numbers_and_packing(tmp_path):
    assert name_sequence("/x/binlog.000042") == 42
    assert name_sequence("mysql-bin") is None
    # the copies of the server after a follower's second failover follow every earlier one's
    assert name_sequence("/x/failover2~binlog.000003") == 2 * (1 << 32) + 3
    server = number_files(["/a/binlog.000010", "/a/binlog.000002"])
    assert server == [("/a/binlog.000002", 2), ("/a/binlog.000010", 10)]
    mixed = number_files(["/b/x.bin", "/a/binlog.000002", "/c/binlog.000002"])
    assert [seq for _, seq in mixed] == [1, 2, 3]
    with pytest.raises(ValueError):
        number_files(["/b/x.bin"], require_names=True)
    for n, size in enumerate((10, 10, 30, 5)):
        (tmp_path / f"f.{n}").write_bytes(b"\0" * size)
    splits = [Split(str(tmp_path / f"f.{n}"), n) for n in range(4)]
    groups = pack(splits, 24)
    assert [[s.file_seq for s in g] for g in groups] == [[0, 1], [2], [3]]
    assert pack([Split(str(tmp_path / "f.0"), 0, 10)], 24) == [(Split(str(tmp_path / "f.0"), 0, 10),)]
