"""Event selection: the options of mysqlbinlog/mariadb-binlog, with their meanings.

Each selection is checked against mariadb-binlog with the same option on the
same corpus files (same events selected, so the same `# at` lines and the same
text), where mariadb-binlog has the option; MySQL's GTID set options, which
mariadb-binlog lacks, are checked against the transactions the files hold.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from binlake.gtids import GtidSet, is_gtid_list, parse_gtid_list
from binlake.text.filters import EventSelection, SelectionOptions, Verdict, parse_datetime
from peers import (CORPUS, MARIADB_BINLOG, _ids, assert_reads_or_reports, binlake,  # noqa: F401
                       needs_reference, reference, utc)

# -- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["2021-03-04 05:06:07", "2021/03/04 05:06:07", "20210304050607",
                                  "2021-03-04T05:06:07", "21-03-04 05:06:07", "2021-3-4 5:6:7"])
def test_datetime_forms(text):
    assert time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(parse_datetime(text))) == \
        "2021-03-04 05:06:07"


def test_datetime_without_time_and_bad_values():
    assert time.localtime(parse_datetime("2021-03-04")).tm_hour == 0
    with pytest.raises(ValueError):
        parse_datetime("2021-13-01")
    with pytest.raises(ValueError):
        parse_datetime("yesterday")


def test_gtid_set():
    gtids = GtidSet.parse("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11,"
                          "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:tag_a:7")
    sid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    assert (sid, None, 1) in gtids and (sid, None, 5) in gtids and (sid, None, 11) in gtids
    assert (sid, None, 6) not in gtids
    assert ("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "tag_a", 7) in gtids
    assert ("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", None, 7) not in gtids
    with pytest.raises(ValueError):
        GtidSet.parse("not-a-uuid:1")
    with pytest.raises(ValueError):
        GtidSet.parse(f"{sid}:5-3")


def test_gtid_list():
    assert parse_gtid_list("0-1-100, 2-5-7") == {0: (1, 100), 2: (5, 7)}
    assert is_gtid_list("0-1-100,2-5-7") and not is_gtid_list("1234")
    with pytest.raises(ValueError):
        parse_gtid_list("0-1-1,0-2-2")


# -- against mariadb-binlog ------------------------------------------------------------------------

def _positions(text: bytes) -> list[int]:
    return sorted({int(p) for p in re.findall(rb"^# at (\d+)$", text, re.M)})


def _selections(path):
    """Options worth trying on this file, from its own events."""
    code, full = reference("--base64-output=decode-rows", str(path))
    if code:
        return None
    positions = _positions(full)
    stamps = re.findall(rb"^#(\d{6} [ \d]\d:\d\d:\d\d) server id", full, re.M)
    if len(positions) < 4 or not stamps:
        return None
    middle_time = time.strftime("%Y-%m-%d %H:%M:%S",
                                time.strptime(stamps[len(stamps) // 2].decode().replace("  ", " 0"),
                                              "%y%m%d %H:%M:%S"))
    start, stop = positions[len(positions) // 3], positions[2 * len(positions) // 3]
    return {
        "start-position": [f"--start-position={start}"],
        "stop-position": [f"--stop-position={stop}"],
        "position-range": [f"--start-position={start}", f"--stop-position={stop}"],
        "start-datetime": [f"--start-datetime={middle_time}"],
        "stop-datetime": [f"--stop-datetime={middle_time}"],
        "database": ["-d", "test"],
        "table": ["-T", "t1"],
        "database-and-table": ["-d", "test", "-T", "t1"],
        "server-id": ["--server-id=1"],
        "rewrite-db": ["--rewrite-db=test->renamed"],
    }


SELECTIONS = ["start-position", "stop-position", "position-range", "start-datetime",
              "stop-datetime", "database", "table", "database-and-table", "server-id", "rewrite-db"]


@needs_reference
@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("path", CORPUS, ids=_ids(CORPUS))
def test_selection_matches_mariadb_binlog(path, selection, tmp_path):
    choices = _selections(path)
    if choices is None:  # no oracle or nothing to select: binlake reads it or says where not
        status, _, err = binlake("dump", "--no-verify-checksum", "--local-load", f"{tmp_path}/",
                                 "-v", str(path))
        assert_reads_or_reports(path, status, err)
        return
    options = ["-v", *choices[selection]]
    mine, theirs_dir = tmp_path / "binlake", tmp_path / "reference"  # LOAD DATA files
    mine.mkdir()
    theirs_dir.mkdir()
    code, theirs = reference("--local-load", f"{theirs_dir}/", *options, str(path))
    status, ours, err = binlake("dump", "--mysql-events=ignorable", "--no-verify-checksum",
                                "--local-load", f"{mine}/", *options, str(path))
    if code:
        assert_reads_or_reports(path, status, err)
        return
    assert _positions(ours) == _positions(theirs)
    if selection == "rewrite-db":
        # mariadb-binlog keeps the old checksum in a table map it renames; binlake
        # computes the new one. Everything but those base64 lines is the same.
        base64 = re.compile(rb"^[A-Za-z0-9+/=]{1,76}$", re.M)
        ours, theirs = base64.sub(b"", ours), base64.sub(b"", theirs)
    assert ours.replace(str(mine).encode(), b"DIR") == theirs.replace(str(theirs_dir).encode(), b"DIR")


# -- MySQL GTID sets: the transactions of the files ------------------------------------------------

def _events(path, *options):
    status, out, err = binlake("events", "--format", "json", *options, str(path))
    assert status == 0, err
    return [json.loads(line) for line in out.splitlines()]


def _transactions(rows):
    """{gtid: positions of its events} from an events listing."""
    groups, current = {}, None
    for row in rows:
        if row["Event_type"] in ("Gtid", "Anonymous_Gtid"):
            current = row["Info"].split("'")[1]
            groups.setdefault(current, [])
        elif row["Event_type"] in ("Rotate", "Stop", "Format_desc", "Previous_gtids"):
            current = None
        if current is not None:
            groups[current].append(row["Pos"])
    return groups


MYSQL_GTID_FILES = ["mysql-binlog-connector-rust/mysql-bin.000080",
                    "mysql-5.7.18/std_data/binlog_transaction_with_GTID.000001",
                    "mysql-cdc-rs/5.7/33_35_gtid_prev_gtid/log.bin"]


@pytest.mark.parametrize("name", MYSQL_GTID_FILES)
def test_include_and_exclude_gtids(corpus, name):
    path = corpus / name
    rows = _events(path)
    groups = {g: p for g, p in _transactions(rows).items() if g != "ANONYMOUS"}
    assert groups, "the file should hold GTID transactions"
    chosen = sorted(groups)[0]
    outside = {r["Pos"] for r in rows} - {p for ps in groups.values() for p in ps}
    included = {r["Pos"] for r in _events(path, "--include-gtids", chosen)}
    assert included == outside | set(groups[chosen])
    excluded = {r["Pos"] for r in _events(path, "--exclude-gtids", chosen)}
    assert excluded == {r["Pos"] for r in rows} - set(groups[chosen])
    # A range form of the same set selects the same.
    sid, gno = chosen.rsplit(":", 1)
    assert {r["Pos"] for r in _events(path, "--include-gtids", f"{sid}:{gno}-{gno}")} == included


def test_mariadb_gtid_options_are_aliases(corpus):
    path = corpus / "mariadb-10.11.19" / "std_data" / "mdev6020-mysql-bin.000001"
    by_position = _events(path, "--start-position=0-1-3", "--stop-position=0-1-5")
    by_gtid = _events(path, "--start-gtid=0-1-3", "--stop-gtid=0-1-5")
    assert by_position == by_gtid
    gtids = [r["Info"] for r in by_gtid if r["Event_type"] == "Gtid"]
    assert gtids and all(g.endswith(("0-1-4", "0-1-5")) for g in gtids)


def test_selection_state_machine_on_groups():
    """A MariaDB DDL group (standalone GTID) ends after its one statement."""
    from binlake.read.events import EventHeader, MariadbGtidEvent, QueryEvent, XidEvent
    def header(pos, code):
        return EventHeader("f", pos, 0, code, 1, 10, pos + 10, 0)
    selection = EventSelection(SelectionOptions(start_gtids={0: (1, 1)}))
    events = [MariadbGtidEvent(header(100, 162), 1, 0, 1 | 32),            # standalone, seq 1
              QueryEvent(header(110, 2), 1, 0, "db", 0, {}, "CREATE TABLE t (a INT)"),
              MariadbGtidEvent(header(120, 162), 2, 0, 4),                  # transactional, seq 2
              QueryEvent(header(130, 2), 1, 0, "db", 0, {}, "INSERT INTO t VALUES (1)"),
              XidEvent(header(140, 16), 9)]
    verdicts = [selection.verdict(e, True, True) for e in events]
    assert verdicts == [Verdict.SKIP, Verdict.SKIP, Verdict.SHOW, Verdict.SHOW, Verdict.SHOW]
    # A transactional MariaDB GTID is its own BEGIN: a statement inside does not end it.
    selection = EventSelection(SelectionOptions(start_gtids={0: (1, 2)}))
    verdicts = [selection.verdict(e, True, True) for e in events]
    assert verdicts == [Verdict.SKIP] * 5


def test_events_listing_formats(corpus):
    path = corpus / "rust_mysql_common" / "mariadb-bin.000001"
    status, table, _ = binlake("events", str(path))
    assert status == 0
    lines = table.decode().splitlines()
    assert lines[0].split() == ["Log_name", "Pos", "Event_type", "Server_id", "End_log_pos", "Info"]
    assert lines[1].split()[:5] == ["mariadb-bin.000001", "4", "Format_desc", "1", "256"]
    assert "BEGIN GTID 0-1-1" in lines[4]
    status, csv_text, _ = binlake("events", "--format", "csv", "--limit", "3", str(path))
    assert csv_text.decode().splitlines()[1:] == [
        "mariadb-bin.000001,4,Format_desc,1,256,"
        "\"Server ver: 10.5.15-MariaDB-1:10.5.15+maria~focal-log, Binlog ver: 4\"",
        "mariadb-bin.000001,256,Gtid_list,1,285,[]",
        "mariadb-bin.000001,285,Binlog_checkpoint,1,330,mariadb-bin.000001"]


def test_bad_option_values_fail_as_in_mariadb_binlog(corpus):
    """A value the program refuses: one line naming it, status 1 (mariadb-binlog's)."""
    path = str(corpus / "rust_mysql_common" / "mariadb-bin.000001")
    for options in (["--start-position=abc"], ["--start-datetime=never"], ["--include-gtids=x:1"],
                    ["--rewrite-db=nothing"], ["--server-id=a"], ["--do-domain-ids=x"]):
        status, out, err = binlake("dump", *options, path)
        assert status == 1, options
        assert err.count("\n") == 1 and err.startswith("ERROR: ") and not out
    # mariadb-binlog's own words where it has them
    for options, words in (
            (["--start-position=abc"], "--start-position argument value is invalid. Should be "
                                       "either a positive integer or GTID."),
            (["--server-id=a"], "Input for --server-id is invalid. Should be a list of positive "
                                "integers"),
            (["--stop-position=0-1-2,0-1-5"], "Stop position cannot have repeated domain ids "
                                              "(found 0-1-5 when 0-1-2 was previously specified)"),
            (["--start-position=0-1-9", "--stop-position=0-1-2"],
             "Queried GTID range is invalid in strict mode. Stop position 0-1-2 is not greater "
             "than or equal to start 0-1-9.")):
        status, out, err = binlake("dump", *options, path)
        assert (status, err, out) == (1, f"ERROR: {words}\n", b""), options
        if MARIADB_BINLOG is not None:
            theirs = subprocess.run([MARIADB_BINLOG, "--no-defaults", *options, path],
                                    capture_output=True)
            assert (theirs.returncode, theirs.stderr.decode()) == (1, f"ERROR: {words}\n")


@needs_reference
def test_force_read_goes_on_past_a_bad_checksum(corpus):
    """mariadb-binlog does not verify checksums unless asked; binlake does, and
    -f/--force-read (or --no-verify-checksum) prints the file as mariadb-binlog does."""
    path = str(corpus / "mysql-8.0.40" / "std_data" / "binlog_recovery" / "duplicate_xid.000001")
    _, theirs = reference("--base64-output=decode-rows", "-v", path)
    status, strict, err = binlake("dump", "--base64-output=decode-rows", "-v", path)
    assert status == 1 and "offset 672: CRC32 checksum mismatch" in err
    assert _positions(strict) == [p for p in _positions(theirs) if p < 672]
    status, forced, err = binlake("dump", "-f", "--mysql-events=ignorable",
                                  "--base64-output=decode-rows", "-v", path)
    assert status == 0 and "checksum mismatch" in err
    assert forced == theirs


def test_progress_bar_only_on_a_terminal(corpus, monkeypatch):
    import io
    from binlake.cli.commands.selection import progress_bar
    files = [str(corpus / "rust_mysql_common" / "mariadb-bin.000001")]
    assert type(progress_bar(files, io.StringIO())).__name__ == "_NoProgress"

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    bar = progress_bar(files, Terminal())
    assert type(bar).__name__ == "_Progress"
    bar.close()
