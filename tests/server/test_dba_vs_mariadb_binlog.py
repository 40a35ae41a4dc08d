"""binlake's DBA commands against a real MariaDB and its own mariadb-binlog.

Strategy: one module fixture starts a private server per binlog
configuration (row metadata NO_LOG/MINIMAL/FULL, row image FULL/MINIMAL/NOBLOB,
log_bin_compress), runs the shared workload plus an escaping workload,
records the table contents in the middle (with the binlog position) and at
the end, and keeps the closed binlogs and a `mariadb-dump --no-data` schema.
A second server, reused by every test, is the replay target: what `binlake
dump | mariadb` and `binlake sql | mariadb` rebuild must equal the recorded
contents, and `binlake sql --flashback` from the middle position must bring
the final contents back to the middle ones.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from binlake.text.sqlgen import sql_literal
from binlake.testing.mariadb import MariaDBServer
from binlake.testing.workload import DATABASE, run_basic_workload

from .replay import replay, run_binlake, snapshot

pytestmark = pytest.mark.server

CONFIGS = {
    "full": {},
    "meta-minimal": {"binlog_row_metadata": "MINIMAL"},
    "meta-nolog": {"binlog_row_metadata": "NO_LOG"},
    "image-minimal": {"binlog_row_image": "MINIMAL"},
    "image-noblob": {"binlog_row_image": "NOBLOB"},
    "compressed": {"log_bin_compress": True, "extra": {"log_bin_compress_min_len": 10}},
}
FULL_IMAGE = ("full", "meta-minimal", "meta-nolog", "compressed")

#: Values that must come back byte for byte: quotes, backslashes, NUL, control
#: characters, SQL and mysqlbinlog delimiters, comment openers, non-ASCII.
NASTY_TEXT = [
    "it's", "a\\b", "\\", "'", "''", "\\'", "a\x00b", "\x00", "line\nbreak\r\n", "tab\tand\x1a",
    "'); DROP TABLE nasty; --", "/*!*/;", "*/ DELIMITER ;", "BINLOG '", "\"double\"", "`tick`",
    "%_", "é€😀", "\u2028", "",
]
NASTY_BYTES = [b"\xff\xfe", b"\x80", b"\x00\x00", b"\\", b"'", b"\xc3", b"a\xe9b", bytes(range(256))]
TZ_ENV = {"TZ": "UTC"}


@dataclass
class Recorded:
    name: str
    files: list
    middle: dict          #: table contents when phase 2 started
    middle_file: str      #: binlog file and position where phase 2 starts
    middle_pos: int
    final: dict
    schema: str           #: mariadb-dump --no-data


# -- helpers -------------------------------------------------------------------------------

def mariadb_binlog(*args) -> bytes:
    result = subprocess.run(["mariadb-binlog", *args], capture_output=True,
                            env={**os.environ, **TZ_ENV})
    return result.stdout


def _phase_one(server: MariaDBServer) -> None:
    connection = server.connect(DATABASE)
    with connection.cursor() as c:
        c.execute("SET SESSION sql_mode='', time_zone='+00:00'")
        c.execute("CREATE TABLE nasty (id INT PRIMARY KEY, t TEXT, l VARCHAR(100) CHARACTER SET latin1, "
                  "b BLOB, vb VARBINARY(300)) DEFAULT CHARSET=utf8mb4")
        c.execute("CREATE TABLE nasty_nopk (t VARCHAR(100), b VARBINARY(300)) DEFAULT CHARSET=utf8mb4")
        for i, text in enumerate(NASTY_TEXT):
            data = NASTY_BYTES[i % len(NASTY_BYTES)]
            latin = text if all(ord(ch) < 256 for ch in text) else "latin"
            c.execute("INSERT INTO nasty VALUES (%s, %s, %s, %s, %s)", (i, text, latin, data, data))
            c.execute("INSERT INTO nasty_nopk VALUES (%s, %s)", (text, data))
        # Statement-format changes: replayed with their session context (user
        # variables, RAND seeds, INSERT_ID, timestamp, sql_mode, database).
        c.execute("CREATE TABLE stmt (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT, r DOUBLE, "
                  "at TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6)) DEFAULT CHARSET=utf8mb4")
        c.execute("SET SESSION binlog_format=STATEMENT, sql_mode='ANSI_QUOTES'")
        c.execute("SET @note = %s, @n = 42", ("user 'var' \\ é",))
        c.execute('INSERT INTO stmt (note, r) VALUES (CONCAT(@note, @n), RAND())')
        c.execute("INSERT INTO stmt (note, r) VALUES ('a;b', LAST_INSERT_ID())")
        c.execute("UPDATE stmt SET note = CONCAT(note, '!') WHERE id = 1")
        c.execute("SET SESSION binlog_format=ROW, sql_mode=''")
    connection.close()


def _phase_two(server: MariaDBServer) -> None:
    """Changes the flashback test must undo: PK updates, NULLs, BLOBs, multi-row
    statements, rows without a primary key, nasty values, one multi-statement
    transaction."""
    connection = server.connect(DATABASE)
    with connection.cursor() as c:
        c.execute("SET SESSION sql_mode='', time_zone='+00:00'")
        c.execute("UPDATE ints SET id = id + 10000 WHERE id BETWEEN 1001 AND 1010")
        c.execute("UPDATE ints SET ti = NULL, bi_u = 0 WHERE id IN (2, 3)")
        c.execute("UPDATE lobs SET lt = REPEAT('z', 100000), bl = NULL, j = NULL WHERE id = 1")
        c.execute("UPDATE lobs SET bl = x'00ff00', tt = 'tt' WHERE id = 2")
        c.execute("DELETE FROM strings WHERE id IN (1, 3)")
        c.execute("INSERT INTO probe (id, label, amount) VALUES (1000, 'new', NULL), (1001, NULL, 2.5)")
        c.execute("UPDATE no_pk SET c = NULL WHERE b = 'dup'")
        c.execute("DELETE FROM enums WHERE id = 1")
        c.execute("UPDATE temporal SET d = '0000-00-00', ts = NULL WHERE id = 2")
        c.execute("UPDATE nasty SET t = CONCAT(t, %s), b = %s WHERE id < 5", ("\\'\x00", b"\x00'\\"))
        c.execute("DELETE FROM nasty WHERE id IN (6, 7)")
        c.execute("UPDATE nasty_nopk SET t = CONCAT('x', t) WHERE t LIKE %s", ("%'%",))
        c.execute("DELETE FROM nasty_nopk WHERE b = %s", (b"\x80",))
        c.execute("START TRANSACTION")
        c.execute("INSERT INTO nasty VALUES (100, %s, 'x', %s, %s)", ("new\\'", b"\xff", b"\x00"))
        c.execute("UPDATE bits SET id = 41, b64 = 5 WHERE id = 40")
        c.execute("DELETE FROM numbers WHERE id = 1")
        c.execute("COMMIT")
    connection.close()


# -- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def recorded(mariadbd, tmp_path_factory) -> dict:
    runs = {}
    for name, settings in CONFIGS.items():
        workdir = tmp_path_factory.mktemp(f"dba-{name}")
        with MariaDBServer(workdir, server_id=7, **settings) as server:
            run_basic_workload(server, DATABASE)
            _phase_one(server)
            middle = snapshot(server)
            log_file, log_pos = server.query("SHOW MASTER STATUS")[0][:2]
            _phase_two(server)
            final = snapshot(server)
            dump = subprocess.run(["mariadb-dump", f"--defaults-file={server.defaults_file}",
                                   "--no-data", "--databases", DATABASE],
                                  capture_output=True, text=True, check=True).stdout
            server.flush_logs()
        files = [str(path) for path in server.binlog_files()]
        middle_file = str(Path(files[0]).parent / log_file)
        runs[name] = Recorded(name, files, middle, middle_file, int(log_pos), final, dump)
    return runs


@pytest.fixture(scope="module")
def target(mariadbd, tmp_path_factory):
    with MariaDBServer(tmp_path_factory.mktemp("dba-replay"), server_id=99) as server:
        yield server


def _files_from(run: Recorded, start_file: str) -> list:
    return run.files[run.files.index(start_file):]


# -- text like mariadb-binlog ---------------------------------------------------------------------

_COMPARED = re.compile(rb"^(# at \d+|#\d{6} [ \d]\d:\d\d:\d\d server id .*|###.*)$", re.M)


def compared_lines(text: bytes) -> list:
    """The lines the comparison is about: `# at`, event headers and `###` pseudo-SQL."""
    return _COMPARED.findall(text)


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("mode", [["--base64-output=decode-rows", "-v"],
                                  ["--base64-output=decode-rows", "-vv"], ["-vv"],
                                  ["--print-table-metadata", "-v"]],
                         ids=["decode-v", "decode-vv", "base64-vv", "table-metadata"])
def test_text_matches_mariadb_binlog(recorded, name, mode, tmp_path):
    run = recorded[name]
    status, ours, err = run_binlake("dump", "--local-load", str(tmp_path), *mode, *run.files)
    assert status == 0, err
    reference = mariadb_binlog("--local-load", str(tmp_path), *mode, *run.files)
    assert compared_lines(ours) == compared_lines(reference)
    # The rest of the output is the same too, except the row count mariadb-binlog
    # gets wrong for GEOMETRY columns without -v (docs/mysqlbinlog-differences.md).
    if "-v" in mode or "-vv" in mode:
        assert ours == reference


@pytest.mark.parametrize("name", list(CONFIGS))
def test_option_matrix_matches_mariadb_binlog(recorded, name, tmp_path):
    """tests/option_matrix.py's options and pairs on this configuration's
    binlogs: stdout and status as mariadb-binlog's. Left out: --flashback of
    partial row images, which binlake refuses (docs/mysqlbinlog-differences.md),
    and row counts without -v (GEOMETRY, as in test_text_matches_mariadb_binlog)."""
    from option_matrix import MATRIX, facts
    run = recorded[name]
    given = facts(run.files[0])
    for options in MATRIX:
        if "--flashback" in options and name not in FULL_IMAGE:
            continue
        options = [option.format(**given) for option in options]
        mine, theirs_dir = tmp_path / "binlake", tmp_path / "reference"
        mine.mkdir(exist_ok=True)
        theirs_dir.mkdir(exist_ok=True)
        theirs = subprocess.run(["mariadb-binlog", "--no-defaults", "--local-load",
                                 f"{theirs_dir}/", *options, *run.files], capture_output=True,
                                env={**os.environ, **TZ_ENV})
        status, ours, err = run_binlake("dump", "--no-defaults", "--local-load", f"{mine}/",
                                        *options, *run.files)
        reference = theirs.stdout.replace(str(theirs_dir).encode(), b"DIR")
        ours = ours.replace(str(mine).encode(), b"DIR")
        if not any(o.startswith("-v") for o in options):
            ours, reference = (re.sub(rb"^# Number of rows: \d+\n", b"", text, flags=re.M)
                               for text in (ours, reference))
        assert (status, ours) == (theirs.returncode, reference), (options, err)


SELECTIONS = {
    "start-position": (["--start-position={middle}"], "from-middle"),
    "stop-position": (["--stop-position={middle}"], "to-middle"),
    "database": (["-d", DATABASE], "all"),
    "other-database": (["-d", "nope"], "all"),
    "table": (["-T", "nasty"], "all"),
    "database-and-table": (["-d", DATABASE, "-T", "probe"], "all"),
    "server-id": (["--server-id=7"], "all"),
    "other-server-id": (["--server-id=8"], "all"),
    "start-gtid": (["--start-position=0-7-20"], "all"),
    "stop-gtid": (["--stop-position=0-7-20"], "all"),
    "gtid-range": (["--start-position=0-7-20", "--stop-position=0-7-30"], "all"),
    "rewrite-db": (["--rewrite-db=binlake_test->rewritten"], "all"),
    "start-datetime": (["--start-datetime={middle_time}"], "all"),
    "stop-datetime": (["--stop-datetime={middle_time}"], "all"),
    "short-form": (["-s"], "all"),
    "hexdump": (["-H"], "all"),
}


def _middle_time(run: Recorded) -> str:
    """The time of the first event at the middle position, as mysqlbinlog takes it."""
    import time
    from binlake.read.reader import BinlogReader
    for event in BinlogReader([run.middle_file]):
        if event.header.pos >= run.middle_pos:
            return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(event.header.timestamp))
    raise AssertionError("no event at the middle position")


@pytest.mark.parametrize("selection", list(SELECTIONS))
def test_selection_matches_mariadb_binlog(recorded, selection, tmp_path):
    run = recorded["full"]
    options, which = SELECTIONS[selection]
    options = [o.format(middle=run.middle_pos, middle_time=_middle_time(run)) for o in options]
    middle = run.files.index(run.middle_file)
    files = {"all": run.files, "from-middle": run.files[middle:],
             "to-middle": run.files[:middle + 1]}[which]
    ours = run_binlake("dump", "-v", "--local-load", str(tmp_path), *options, *files)[1]
    reference = mariadb_binlog("-v", "--local-load", str(tmp_path), *options, *files)
    assert ours.count(b"# at ") == reference.count(b"# at ")
    assert compared_lines(ours) == compared_lines(reference)
    if selection not in ("rewrite-db",):  # see docs/mysqlbinlog-differences.md
        assert ours == reference


@pytest.fixture(scope="module")
def two_domains(mariadbd, tmp_path_factory) -> list:
    """Transactions alternating between GTID domains 0 and 1."""
    with MariaDBServer(tmp_path_factory.mktemp("dba-domains"), server_id=5) as server:
        connection = server.connect()
        with connection.cursor() as c:
            c.execute("CREATE DATABASE d")
            c.execute("CREATE TABLE d.t (a INT)")
            for i in range(6):
                c.execute(f"SET SESSION gtid_domain_id={i % 2}")
                c.execute(f"INSERT INTO d.t VALUES ({i})")
        connection.close()
        server.flush_logs()
    return [str(path) for path in server.binlog_files()]


@pytest.mark.parametrize("options", [
    ["--start-position=0-5-3"], ["--stop-position=0-5-3"], ["--start-position=1-5-1"],
    ["--start-position=0-5-3,1-5-1"], ["--stop-position=1-5-2"],
    ["--start-position=0-5-2", "--stop-position=0-5-4"], ["--server-id=5"],
], ids=" ".join)
def test_gtid_lists_per_domain_match_mariadb_binlog(two_domains, options):
    ours = run_binlake("dump", "-v", *options, *two_domains)[1]
    assert ours == mariadb_binlog("-v", *options, *two_domains)


def test_result_file_and_stdin(recorded, tmp_path):
    run = recorded["full"]
    result = tmp_path / "out.txt"
    status, stdout, _ = run_binlake("dump", "-v", "-r", str(result), run.files[0])
    assert status == 0 and stdout == b""
    reference = mariadb_binlog("-v", run.files[0])
    assert compared_lines(result.read_bytes()) == compared_lines(reference)
    piped = subprocess.run([sys.executable, "-m", "binlake", "dump", "-v", "-"],
                           stdin=open(run.files[0], "rb"), capture_output=True,
                           env={**os.environ, **TZ_ENV})
    assert compared_lines(piped.stdout) == compared_lines(reference)


def test_events_listing_matches_show_binlog_events(recorded, target):
    run = recorded["full"]
    status, out, err = run_binlake("events", "--format", "json", run.files[0])
    assert status == 0, err
    import json
    rows = [json.loads(line) for line in out.splitlines()]
    # SHOW BINLOG EVENTS on a server needs the file in its own index: compare with
    # mariadb-binlog's positions and types instead, and spot-check Info texts.
    reference = mariadb_binlog(run.files[0])
    assert [r["Pos"] for r in rows] == [int(p) for p in re.findall(rb"^# at (\d+)$", reference, re.M)]
    infos = {r["Event_type"]: r["Info"] for r in rows}
    assert infos["Format_desc"].startswith("Server ver: 10.11")
    assert infos["Xid"].startswith("COMMIT /* xid=")
    assert any(r["Info"] == f"table_id: {r['Info'].split()[1]} ({DATABASE}.probe)"
               for r in rows if r["Event_type"] == "Table_map")


# -- replay -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CONFIGS))
def test_dump_replays_to_the_same_tables(recorded, target, name, tmp_path):
    run = recorded[name]
    status, text, err = run_binlake("dump", "--local-load", str(tmp_path), *run.files)
    assert status == 0, err
    replay(target, text)
    assert snapshot(target) == run.final


@pytest.mark.parametrize("name", list(CONFIGS))
def test_sql_replays_to_the_same_tables(recorded, target, name, tmp_path):
    run = recorded[name]
    schema = tmp_path / "schema.sql"
    schema.write_text(run.schema)
    args = ["sql", *run.files]
    if name.startswith("meta-"):  # no column names in these binlogs
        args[1:1] = ["--schema", str(schema)]
    status, text, err = run_binlake(*args)
    assert status == 0, err
    replay(target, text)
    state = snapshot(target)
    assert state == run.final, _diff(state, run.final)


@pytest.mark.parametrize("name", FULL_IMAGE)
def test_flashback_returns_to_the_middle(recorded, target, name, tmp_path):
    run = recorded[name]
    status, text, err = run_binlake("dump", *run.files)
    assert status == 0, err
    replay(target, text)
    assert snapshot(target) == run.final
    schema = tmp_path / "schema.sql"
    schema.write_text(run.schema)
    status, undo, err = run_binlake("sql", "--flashback", "--schema", str(schema),
                                    f"--start-position={run.middle_pos}",
                                    *_files_from(run, run.middle_file))
    assert status == 0, err
    replay(target, undo)
    state = snapshot(target)
    assert state == run.middle, _diff(state, run.middle)


@pytest.mark.parametrize("name", FULL_IMAGE)
def test_dump_flashback_prints_as_mariadb_binlog_and_undoes(recorded, target, name):
    """`binlake dump --flashback` (mariadb-binlog -B): the same text, line for
    line, and replayed after the whole binlog it brings the tables back to
    the middle."""
    run = recorded[name]
    status, text, err = run_binlake("dump", *run.files)
    assert status == 0, err
    replay(target, text)
    assert snapshot(target) == run.final
    files = _files_from(run, run.middle_file)
    for mode in (["-v"], ["-vv"], ["--base64-output=decode-rows", "-v"]):
        options = ["--flashback", *mode, f"--start-position={run.middle_pos}"]
        status, undo, err = run_binlake("dump", *options, *files)
        assert status == 0, err
        assert undo == mariadb_binlog(*options, *files), mode
    status, undo, err = run_binlake("dump", "--flashback", f"--start-position={run.middle_pos}",
                                    *files)
    replay(target, undo)
    state = snapshot(target)
    assert state == run.middle, _diff(state, run.middle)


def test_dump_flashback_refuses_what_partial_images_cannot_undo(recorded):
    """MINIMAL row images do not log the old values: the flashback stops with
    an error naming the event (mariadb-binlog 10.11 fails with "Error row
    length: 0" or prints wrong rows) and writes none of the held text."""
    run = recorded["image-minimal"]
    status, undo, err = run_binlake("dump", "--flashback", f"--start-position={run.middle_pos}",
                                    *_files_from(run, run.middle_file))
    assert status == 1
    assert "flashback needs FULL" in err and "byte " in err
    assert b"START TRANSACTION" not in undo and b"# End of log file" not in undo


def test_flashback_of_minimal_images_says_what_it_cannot_undo(recorded):
    run = recorded["image-minimal"]
    status, _, err = run_binlake("sql", "--flashback", f"--start-position={run.middle_pos}",
                                 *_files_from(run, run.middle_file))
    assert status == 1
    assert "binlog_row_image=MINIMAL" in err


@pytest.mark.parametrize("name", ["meta-nolog", "meta-minimal"])
def test_sql_without_names_follows_the_create_tables_in_the_binlogs(recorded, target, name):
    """Every table of the workload is created in its binlogs: the schema
    history knows their columns without --schema."""
    run = recorded[name]
    status, text, err = run_binlake("sql", *run.files)
    assert status == 0, err
    replay(target, text)
    state = snapshot(target)
    assert state == run.final, _diff(state, run.final)


# -- escaping -------------------------------------------------------------------------------------

@pytest.mark.parametrize("sql_mode", ["", "NO_BACKSLASH_ESCAPES", "ANSI_QUOTES,NO_BACKSLASH_ESCAPES"])
def test_literals_mean_their_value_in_every_sql_mode(target, sql_mode):
    from binlake.text.sqlgen import ColumnInfo
    connection = target.connect()
    try:
        with connection.cursor() as c:
            c.execute("SET NAMES utf8mb4")
            c.execute("SET SESSION sql_mode=%s", (sql_mode,))
            for text in NASTY_TEXT:
                c.execute(f"SELECT HEX({sql_literal(text, ColumnInfo('t', charset=45))})")
                assert bytes.fromhex(c.fetchone()[0]) == text.encode("utf-8")
            for data in NASTY_BYTES:
                c.execute(f"SELECT HEX({sql_literal(data)})")
                assert bytes.fromhex(c.fetchone()[0]) == data
    finally:
        connection.close()


def _diff(a: dict, b: dict) -> str:  # debugging aid
    out = []
    for table in sorted(set(a) | set(b)):
        ra, rb = a.get(table, []), b.get(table, [])
        if ra != rb:
            only_a = [r for r in ra if r not in rb][:3]
            only_b = [r for r in rb if r not in ra][:3]
            out.append(f"{table}: {len(ra)} vs {len(rb)}; only left {only_a}; only right {only_b}")
    return "\n".join(out)
