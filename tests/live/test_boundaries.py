"""binlake.live.boundaries: the commit mark read off a live file's bytes must
mark what the reader's transaction groups mark, on every v4 file of the
corpus, fed in runs of events as a server sends them."""
from __future__ import annotations

import random

import pytest

from binlake.live.boundaries import RawCommits
from binlake.read.gzipped import is_gzip
from binlake.read.scan import scan
from binlake.records import transaction_groups
from corpus.manifest import corpus_files


def _v4_files():
    return [path for path in corpus_files() if not is_gzip(path)]


@pytest.mark.parametrize("path", _v4_files(), ids=lambda p: p.name)
def test_marks_are_the_readers_transaction_ends(path):
    walk = scan(path)
    if walk.framing is None or walk.framing.binlog_version != 4:
        pytest.skip("not a v4 binlog: no live server sends one")
    data = path.read_bytes()
    marked = []
    commits = RawCommits(lambda file, gtid, xid, end, timestamp, complete:
                         marked.append((end, gtid)))
    starts, rng = list(walk.positions), random.Random(path.name)
    ends = starts[1:] + [walk.end]
    at = 0
    while at < len(starts):
        upto = min(len(starts), at + rng.randint(1, 5))   # a run of events, as received
        commits.feed("binlog.000001", starts[at], data[starts[at]:ends[upto - 1]])
        at = upto
    try:
        groups = list(transaction_groups(str(path), force=True))
    except Exception as exc:  # (files the reader refuses: the mark must not matter there)
        pytest.skip(f"the reader refuses it: {exc}")
    expected = [(g.end_pos, g.gtid) for g in groups if g.complete]
    fde_end = walk.framing.fde_end
    if commits.unknown_gtids:
        # MySQL's tagged GTIDs are not read off the bytes: no failover goes on by them
        expected = [(end, None if gtid and gtid.count(":") > 1 else gtid)
                    for end, gtid in expected]
    assert [m for m in marked if m[0] > fde_end] == [e for e in expected if e[0] > fde_end]
    assert commits.cut == (walk.closed_end < walk.end)
