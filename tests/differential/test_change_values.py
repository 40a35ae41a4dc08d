"""The native changes loop read into Python values (`_native.ChangeValues`,
behind `binlake.changes` and `binlake.transactions`) against the reference:
the walk over `BinlogReader` events (`records.changes_from_events`,
`records._reference_transactions`).

Both sides must give the same Change objects and transaction groups, values
type-exact (`equality.first_difference`), or the same changes followed by
the same error (class, offset and the first words of its reason). The
reference runs on the native value decoder (the loop is what is under test
here; test_values_native.py holds the decoders equal) and, on whole corpus
files, on the pure-Python core as well.
"""

from __future__ import annotations

import dataclasses
import gzip
import random
import shutil

import pytest

from binlake import core, records
from binlake.errors import BinlogError
from binlake.live.source import _CommitMark
from binlake.read.reader import BinlogReader
from binlake.read.scan import scan
from differential.equality import first_difference
from differential.loop_checks import MUTATION_FILES, corpus_binlogs, corpus_path, mutated

native = core.native()
pytestmark = pytest.mark.skipif(native is None, reason="native core not built")


def reference_changes(paths, **options):
    return records.changes_from_events(BinlogReader(paths, **options))


def with_commits(changes):
    """The changes and, where `on_commit` was called, its transaction: the
    calls must come at the same places on both sides."""
    def run(paths, **options):
        committed: list = []
        for change in changes(paths, on_commit=committed.append, **options):
            yield from committed
            committed.clear()
            yield change
        yield from committed
    return run


native_commits = with_commits(records.changes)


def native_commit_fields(paths, **options):
    """`on_commit_fields`' calls, made Transactions: at the same places, with
    the same fields, as the reference's `on_commit`."""
    def as_transaction(file, gtid, xid, end_pos, timestamp, complete):
        committed.append(records.Transaction(file, gtid, xid, end_pos, timestamp, complete, []))
    committed: list = []
    for change in records.changes(paths, on_commit_fields=as_transaction, **options):
        yield from committed
        committed.clear()
        yield change
    yield from committed
reference_commits = with_commits(
    lambda paths, on_commit, **options: records.changes_from_events(
        BinlogReader(paths, **options), on_commit, options.get("start_position")))


@dataclasses.dataclass(slots=True)
class MarkSeen:
    """A CommitMark as a consumer sees it before each change and at the end."""
    pos: int | None
    row_index: int | None
    after: tuple | None
    domains: tuple
    mysql: tuple


def marks_seen(changes, mark):
    def seen(change=None):
        return MarkSeen(change and change.pos, change and change.row_index, mark.after,
                        tuple(sorted(mark.domains.items())),
                        tuple(sorted((sid, tuple(intervals))
                                     for sid, intervals in mark.mysql.items())))
    for change in changes:
        yield seen(change)
    yield seen()


def native_commit_mark(paths, **options):
    """The native loop writing into a native CommitMark (no call per commit)."""
    mark = native.CommitMark()
    return marks_seen(records.changes(paths, on_commit_fields=mark, **options), mark)


def reference_commit_mark(paths, **options):
    mark = _CommitMark()
    return marks_seen(records.changes_from_events(
        BinlogReader(paths, **options),
        lambda t: mark(t.file, t.gtid, t.xid, t.end_pos, t.timestamp, t.complete),
        options.get("start_position")), mark)


def reference_groups(paths, **options):
    return records._reference_transactions(BinlogReader(paths, **options),
                                           options.get("start_position"))


def outcome(make, paths, options: dict, pure: bool = False):
    """(items as tuples of their fields, how it failed) of one side."""
    core.use_pure(pure)
    items = []
    try:
        for item in make(paths, **options):
            items.append(tuple(getattr(item, f) for f in item.__slots__))
    except BinlogError as exc:
        return items, (type(exc).__name__, exc.offset, str(exc).split(": ")[:3])
    except Exception as exc:  # noqa: BLE001 - an escape must be seen, not hidden
        return items, (type(exc).__name__, None, str(exc))
    finally:
        core.use_pure(False)
    return items, None


def assert_same(paths, options: dict, what: str = "", pure: bool = False) -> int:
    """The number of changes, once the native loop and the reference agree."""
    what = what or f"{paths} {options}"
    total = 0
    for loop, reference in ((records.changes, reference_changes),
                            (native_commits, reference_commits),
                            (native_commit_fields, reference_commits),
                            (native_commit_mark, reference_commit_mark),
                            (records.transaction_groups, reference_groups)):
        got, got_error = outcome(loop, paths, options)
        expected, expected_error = outcome(reference, paths, options, pure)
        if pure and expected_error and got_error:  # the cores word their reasons apart
            got_error, expected_error = got_error[:2], expected_error[:2]
        assert got_error == expected_error, f"{what}: {loop.__name__}"
        diff = first_difference(got, expected)
        assert diff is None, f"{what}: {loop.__name__}: {diff}"
        total = total or len(got)
    return total


@pytest.mark.parametrize("relpath", corpus_binlogs())
def test_corpus_file(relpath):
    path = corpus_path(relpath)
    assert_same(path, {})
    assert_same(path, {}, pure=True)
    assert_same(path, {"schema": False})
    assert_same(path, {"force": True, "verify_checksums": False})


@pytest.mark.parametrize("relpath", MUTATION_FILES)
def test_start_positions(relpath):
    """Reading from any event boundary: the format description first, then the event."""
    path = corpus_path(relpath)
    positions = list(scan(path).positions)
    for start in positions[1::max(1, len(positions) // 8)]:
        assert_same(path, {"start_position": start}, f"{relpath} from {start}")


def test_several_files_share_one_schema_history():
    files = [corpus_path(p) for p in corpus_binlogs() if "mysql-8.0.40/std_data" in p][:6]
    assert files
    assert_same(files, {})
    # a start position is the first file's alone
    start = list(scan(files[0]).positions)[-1]
    assert assert_same(files, {"start_position": start}) > 0


@pytest.mark.parametrize("relpath", MUTATION_FILES)
def test_mutated_files_fail_alike(relpath, tmp_path):
    source = corpus_path(relpath)
    data = open(source, "rb").read()
    positions = list(scan(source).positions)
    target = tmp_path / "mutated.bin"
    failures = 0
    for index in range(60):
        rng = random.Random(f"change-values:{relpath}:{index}")
        target.write_bytes(mutated(data, rng, positions))
        options = rng.choice(({}, {"verify_checksums": False},
                              {"verify_checksums": False, "force": True}))
        _, error = outcome(reference_changes, str(target), options)
        failures += error is not None
        assert_same(str(target), options, f"{relpath} mutation {index} {options}")
    assert failures, "the mutations must reach the error paths"


def test_truncated_file_raises_after_its_rows(tmp_path):
    """A partial last event is an error here (not a range's quiet end), and
    the rows of the transaction it cut come out before it."""
    data = open(corpus_path(MUTATION_FILES[0]), "rb").read()
    target = tmp_path / "cut.bin"
    raised = 0
    for cut in range(len(data) - 1, 200, -max(1, len(data) // 50)):
        target.write_bytes(data[:cut])
        _, error = outcome(records.changes, str(target), {"verify_checksums": False})
        raised += error is not None
        assert_same(str(target), {"verify_checksums": False}, f"cut at {cut}")
    assert raised


def test_gzip_input(tmp_path):
    target = tmp_path / "binlog.000007.gz"
    with open(corpus_path(MUTATION_FILES[0]), "rb") as f, gzip.open(target, "wb") as g:
        shutil.copyfileobj(f, g)
    assert assert_same(str(target), {}) > 0


@pytest.mark.parametrize("relpath", MUTATION_FILES[:3])
def test_huge_events_through_a_window(relpath, monkeypatch):
    from binlake.read import reader
    from binlake.read.rows import LazyRowData
    monkeypatch.setattr(reader, "LARGE_EVENT_BYTES", 64)
    monkeypatch.setattr(LazyRowData, "WINDOW", 16)  # rows cut by the window: refills, growth
    assert assert_same(corpus_path(relpath), {}) > 0


def test_a_change_is_the_reference_class():
    change = next(iter(records.changes(corpus_path(MUTATION_FILES[0]))))
    assert type(change) is records.Change
    with pytest.raises(AttributeError):
        change.op = "delete"  # frozen, as the dataclass makes it
    assert change == records.Change(*(getattr(change, f) for f in change.__slots__))


def test_gtid_is_the_transactions_own():
    """Rows outside a GTID transaction have no GTID (the previous one's is not carried on)."""
    seen = 0
    for relpath in corpus_binlogs():
        try:
            for txn in records.transactions(corpus_path(relpath)):
                assert {c.gtid for c in txn.changes} == {txn.gtid}
                seen += txn.gtid is not None
        except BinlogError:
            pass  # encrypted and damaged corpus files: test_corpus_file holds their errors equal
    assert seen


def test_the_commit_marks_keep_mysql_gtids_as_joined_intervals():
    """In order, out of order (past the point where intervals are joined),
    repeated and tagged: the native mark and its reference keep the same."""
    sid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    gnos = [*range(1, 10), *range(200, 100, -3), 5, 150, *range(101, 200)]
    marks = (native.CommitMark(), _CommitMark())
    for gno in gnos:
        for mark in marks:
            mark("f", f"{sid}:{gno}", None, gno, None, True)
            mark("f", f"{sid}:blue:{gno}", None, gno, None, True)
    native_mysql, reference_mysql = (mark.mysql for mark in marks)
    assert native_mysql == reference_mysql
    from binlake.gtids import GtidSet
    assert str(GtidSet().union(native_mysql)) == f"{sid}:1-9:101-200,{sid}:blue:1-9:101-200"


@pytest.mark.parametrize("read", [records.changes, BinlogReader], ids=["changes", "events"])
def test_a_loop_that_failed_in_a_thread_is_freed_by_that_thread(read):
    """The native loop (and the events' native framer) may only be freed by
    the thread that made it (else PyO3 leaks it with an unraisable error).
    A failure keeps the loop's frame alive in its traceback; the loop must
    be let go of before that."""
    import gc
    import io
    import sys
    import threading
    data = open(corpus_path(MUTATION_FILES[0]), "rb").read()

    class FailingHalfWay(io.RawIOBase):
        name = "failing.bin"
        at = 0

        def readable(self):
            return True

        def read(self, n=-1):
            if self.at > len(data) // 2:
                raise OSError("the stream broke")
            chunk = data[self.at:self.at + min(n if n > 0 else 4096, 4096)]
            self.at += len(chunk)
            return chunk

    failures = []

    def consume():
        try:
            for _ in read(FailingHalfWay()):
                pass
        except OSError as exc:
            failures.append(exc)  # with its traceback: the loop's frame among them
    thread = threading.Thread(target=consume)
    thread.start()
    thread.join()
    assert failures
    unraisable = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        failures.clear()  # the traceback's frames go in this thread
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert not unraisable, [str(u.exc_value) for u in unraisable]
