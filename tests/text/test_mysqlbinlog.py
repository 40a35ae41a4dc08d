"""`binlake dump` text against mariadb-binlog (the reference decoder), on every
corpus file it reads, plus unit checks of the value formatting.

The corpus comparison runs mariadb-binlog when it is installed (Debian:
mariadb-client); without it those tests are skipped. Events only MySQL
writes are compared in `--mysql-events=ignorable` mode, where binlake prints
them the way mariadb-binlog does; in the default mode (MySQL's format) the
positions and the header prefix of every event must still agree.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess

import pytest

from binlake.constants import ColumnType as T
from binlake.read.events.table_map import Column
from binlake.text.rowtext import format_image, printed_meta, quoted, value_formatter

from peers import (CORPUS, MARIADB_BINLOG, _ids, _without_row_counts, assert_reads_or_reports,  # noqa: F401
                   binlake,  # utc: an autouse fixture
                   needs_reference, reference, utc)

_HEADER = re.compile(rb"^(# at \d+|#\d{6} [ \d]\d:\d\d:\d\d server id \d+  end_log_pos \d+ (CRC32 0x[0-9a-f]{8} )?)", re.M)


MODES = {"decode-vv": ["--base64-output=decode-rows", "-vv"], "base64-v": ["-v"],
         "short": ["-s"], "hexdump": ["-H", "--base64-output=decode-rows"],
         "no-positions": ["--skip-print-row-event-positions", "-v"],
         "table-metadata": ["--print-table-metadata", "-v"]}


@needs_reference
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("path", CORPUS, ids=_ids(CORPUS))
def test_corpus_file_prints_like_mariadb_binlog(path, mode, tmp_path):
    options = MODES[mode]
    # LOAD DATA files are written by both tools: one directory each, same names.
    mine, theirs_dir = tmp_path / "binlake", tmp_path / "reference"
    mine.mkdir()
    theirs_dir.mkdir()
    returncode, theirs = reference("--local-load", f"{theirs_dir}/", *options, str(path))
    status, ours, err = binlake("dump", "--mysql-events=ignorable", "--no-verify-checksum",
                                "--local-load", f"{mine}/", *options, str(path))
    if returncode != 0:  # no oracle for this file: binlake reads it or says where it can't
        assert_reads_or_reports(path, status, err)
        return
    if "-v" not in options and "-vv" not in options:
        # Without -v mariadb-binlog counts rows with a size function that does not
        # know GEOMETRY, JSON or VECTOR columns: its count stops at the first such
        # value (docs/mysqlbinlog-differences.md). binlake counts them all.
        ours, theirs = _without_row_counts(ours), _without_row_counts(theirs)
    assert ours.replace(str(mine).encode(), b"DIR") == theirs.replace(str(theirs_dir).encode(), b"DIR")


@needs_reference
@pytest.mark.parametrize("path", CORPUS, ids=_ids(CORPUS))
def test_mysql_format_keeps_positions_and_headers(path, tmp_path):
    """Default mode: MySQL-only events in MySQL's format, every event where
    mariadb-binlog has it, with the same header up to the event's own text."""
    (tmp_path / "ref").mkdir()  # LOAD DATA files of the reference, out of /tmp
    returncode, theirs = reference("--local-load", f"{tmp_path}/ref/",
                                   "--base64-output=decode-rows", "-v", str(path))
    status, ours, err = binlake("dump", "--no-verify-checksum", "--base64-output=decode-rows",
                                "--local-load", f"{tmp_path}/", "-v", str(path))
    if returncode != 0:
        assert_reads_or_reports(path, status, err)
        return
    assert [m.group(0) for m in _HEADER.finditer(ours)] == [m.group(0) for m in _HEADER.finditer(theirs)]
    assert re.findall(rb"^###.*$", ours, re.M) == re.findall(rb"^###.*$", theirs, re.M)


def test_v1_binlog_from_the_builder(tmp_path):
    """MySQL 3.23 (binlog v1, 13-byte headers): mariadb-binlog no longer reads
    these; binlake prints them in the same form as the later versions."""
    from binlog_builder import build_v1
    path = tmp_path / "v1.bin"
    path.write_bytes(build_v1())
    status, ours, err = binlake("dump", str(path))
    assert status == 0, err
    text = ours.decode()
    assert "\tStart: binlog v 1, server v 3.23.58-log created " in text
    assert "# at 73\n#010909  1:46:40 server id 1  end_log_pos 0 \tIntvar\nSET INSERT_ID=42/*!*/;\n" in text
    assert "use `test`/*!*/;\n" in text and "INSERT INTO t VALUES (NULL, 'v1')\n/*!*/;\n" in text


def test_dump_json_is_still_there(corpus):
    path = corpus / "rust_mysql_common" / "mariadb-bin.000001"
    status, out, _ = binlake("dump", "--format", "json", str(path))
    assert status == 0
    import json
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["pos"] for e in events][:3] == [4, 256, 285]


def test_mysql_only_events_in_mysql_format(corpus):
    path = corpus / "rust_mysql_common" / "transaction_compression.000001"
    status, out, err = binlake("dump", "-v", str(path))
    assert status == 0, err
    text = out.decode("utf-8", "surrogateescape")
    assert "\tPrevious-GTIDs\n# 357df524-4139-11ee-9979-b033ee13919e:1\n" in text
    assert "\tAnonymous_GTID\tlast_committed=0\tsequence_number=1\trbr_only=yes" in text
    assert "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'/*!*/;" in text
    assert "\tTransaction_Payload\t\tpayload_size=124\tcompression_type=ZSTD\tuncompressed_size=179\n" \
           "# Start of compressed events!\n# at 431\n" in text
    assert "COMMIT/*!*/;\n# End of compressed events!\n# at 431\n" in text
    assert "### INSERT INTO `test`.`tb1`\n### SET\n###   @1=1\n" in text
    assert text.index("GTID_NEXT= 'AUTOMATIC'") > text.index("# End of log file")


def test_partial_json_update_as_mysql_shows_it(corpus):
    path = corpus / "mariadb-10.11.19" / "std_data" / "mdev35643_mysql_80_binlog.000001"
    status, out, err = binlake("dump", "--base64-output=decode-rows", "-v", str(path))
    assert status == 0, err
    assert re.search(rb"^###   @2=JSON_REPLACE\(@2, '\$\.b', CAST\('\"oOo", out, re.M)


def test_start_position_inside_an_event_is_an_error(corpus):
    path = corpus / "mysql_binlog_utils" / "test-mysql-bin"
    status, _, err = binlake("dump", "--start-position=120", str(path))
    assert status == 1
    assert "not where an event starts (the next event starts at 194)" in err


# -- values, as mysqlbinlog -v shows them -------------------------------------------------------

def fmt(column_type, meta, data: bytes) -> str:
    function, _ = value_formatter(column_type, meta)
    text, end = function(data, 0)
    assert end == len(data)
    return text


@pytest.mark.parametrize("column_type, meta, data, expected", [
    (T.MYSQL_TYPE_TINY, 0, b"\xff", "-1 (255)"),
    (T.MYSQL_TYPE_SHORT, 0, struct.pack("<h", -32768), "-32768 (32768)"),
    (T.MYSQL_TYPE_INT24, 0, b"\xff\xff\x7f", "8388607"),
    (T.MYSQL_TYPE_LONGLONG, 0, b"\xff" * 8, "-1 (18446744073709551615)"),
    (T.MYSQL_TYPE_FLOAT, 4, struct.pack("<f", 0.5), "0.5                 "),
    (T.MYSQL_TYPE_DOUBLE, 8, struct.pack("<d", 0.1), "0.10000000000000000555"),
    (T.MYSQL_TYPE_NEWDECIMAL, (5 << 8) | 2, bytes.fromhex("7ffee8"), "-1.23"),
    (T.MYSQL_TYPE_BIT, (1 << 8) | 5, bytes.fromhex("1abc"), "b'1101010111100'"),
    (T.MYSQL_TYPE_YEAR, 0, b"\x00", "1900"),
    (T.MYSQL_TYPE_NEWDATE, 0, struct.pack("<I", (2020 << 9 | 0 << 5 | 15))[:3], "'2020:00:15'"),
    (T.MYSQL_TYPE_TIME2, 1, bytes.fromhex("7ffffff6"), "'-00:00:00.1'"),
    (T.MYSQL_TYPE_TIMESTAMP2, 6, bytes.fromhex("00000001000001"), "1.000001"),
    (T.MYSQL_TYPE_VARCHAR, 10, b"\x04a'\\\x00", "'a'\\\\x00'"),
    (T.MYSQL_TYPE_STRING, (T.MYSQL_TYPE_ENUM << 8) | 2, b"\x2c\x01", "300"),
    (T.MYSQL_TYPE_STRING, (T.MYSQL_TYPE_SET << 8) | 1, b"\x05", "b'00000101'"),
])
def test_value_formats(column_type, meta, data, expected):
    assert fmt(column_type, meta, data) == expected


def test_quoted_keeps_bytes_and_shows_control_characters():
    assert quoted(b"it's \\ \x00\n\xff") == "'it's \\ \\x00\\x0a" + "\udcff'"
    assert quoted("é".encode()).encode("utf-8", "surrogateescape") == "'é'".encode()


def test_bit_metadata_is_shown_as_mysqlbinlog_packs_it():
    column = Column(0, T.MYSQL_TYPE_BIT, (5 << 8) | 1, True)  # BIT(13): 5 bits + 1 byte
    assert printed_meta(column) == 261


def test_row_image_lines_with_types():
    from binlake.read.events.table_map import TableMapEvent
    columns = (Column(0, T.MYSQL_TYPE_LONG, 0, False), Column(1, T.MYSQL_TYPE_VARCHAR, 40, True))
    table = TableMapEvent(None, 1, 0, "db", "t", columns)
    out: list = []
    image = b"\x02" + struct.pack("<i", 7)   # second column NULL
    end = format_image(out, table, 0b11, image, 0, "### SET\n", 2, len(image))
    assert end == len(image)
    assert out == ["### SET\n", "###   @1=7 /* INT meta=0 nullable=0 is_null=0 */\n",
                   "###   @2=NULL /* VARSTRING(40) meta=40 nullable=1 is_null=1 */\n"]


def test_decimal_text_keeps_the_scale():
    from binlake.text.rowtext import _decimal_formatter
    zero_65_30 = bytes([0x80]) + bytes(29)  # DECIMAL(65,30) zero: sign bit only
    assert _decimal_formatter(65, 30)(zero_65_30, 0) == ("0." + "0" * 30, 30)
    minus_one_cent = bytes([0x7F, 0xFF, 0xFF, 0xFF, 0xFE])  # DECIMAL(10,2) -0.01
    assert _decimal_formatter(10, 2)(minus_one_cent, 0)[0] == "-0.01"


@needs_reference
def test_skip_force_if_open_stops_where_mariadb_binlog_stops(corpus):
    """--skip-force-if-open: a binlog the server had not closed is printed up
    to its format description, then one error and exit status 1, as
    mariadb-binlog does; every such file of the corpus."""
    stopped = 0
    for path in CORPUS:
        theirs = subprocess.run([MARIADB_BINLOG, "--skip-force-if-open", str(path)],
                                capture_output=True, env={**os.environ, "TZ": "UTC"})
        if b"which was not closed properly" not in theirs.stderr:
            continue
        status, ours, err = binlake("dump", "--skip-force-if-open", "--mysql-events=ignorable",
                                    "--no-verify-checksum", str(path))
        assert (status, ours) == (theirs.returncode, theirs.stdout), path
        assert err.startswith("ERROR: Attempting to dump binlog"), path
        stopped += 1
    assert stopped >= 10


def test_mysql_replay_modes_open_and_close_the_output(corpus):
    """MySQL's -i/--idempotent and --require-row-format: the lines its
    mysqlbinlog writes (8.x, as its documentation's examples show them),
    after the opening SET statements, each followed by a blank line; -i is
    undone at the very end."""
    path = str(corpus / "rust_mysql_common" / "mariadb-bin.000001")
    _, plain, _ = binlake("dump", "--no-defaults", path)
    status, both, _ = binlake("dump", "--no-defaults", "-i", "--require-row-format", path)
    head = (b"/*!50003 SET @OLD_COMPLETION_TYPE=@@COMPLETION_TYPE,COMPLETION_TYPE=0*/;\n"
            b"/*!50700 SET @@SESSION.RBR_EXEC_MODE=IDEMPOTENT*/;\n\n"
            b"/*!80019 SET @@SESSION.REQUIRE_ROW_FORMAT=1*/;\n\n"
            b"DELIMITER /*!*/;\n")
    assert status == 0 and head in both
    assert both.endswith(b"/*!50700 SET @@SESSION.RBR_EXEC_MODE=STRICT*/;\n")
    added = (b"/*!50700 SET @@SESSION.RBR_EXEC_MODE=IDEMPOTENT*/;\n\n",
             b"/*!80019 SET @@SESSION.REQUIRE_ROW_FORMAT=1*/;\n\n",
             b"/*!50700 SET @@SESSION.RBR_EXEC_MODE=STRICT*/;\n")
    for line in added:
        both = both.replace(line, b"", 1)
    # --require-row-format: no pseudo_thread_id lines (MySQL's mysqlbinlog)
    assert both == re.sub(rb"SET @@session.pseudo_thread_id=\d+/\*!\*/;\n", b"", plain)


def test_require_row_format_stops_at_an_event_that_is_not_row_based(corpus):
    """MySQL's --require-row-format refuses statement events inside a
    transaction, Intvar/Rand, LOAD DATA, temporary tables: `ERROR:` naming
    the rule, status 1, what came before printed and the output closed."""
    path = str(corpus / "mysql-5.5.62" / "suite" / "binlog" / "std_data" / "ver_5_1_23.001")
    _, plain, _ = binlake("dump", "--no-defaults", path)
    status, ours, err = binlake("dump", "--no-defaults", "--require-row-format", path)
    assert status == 1
    assert err == "ERROR: Event being written violates the --require-row-format parameter constraints.\n"
    body, _, tail = ours.partition(b"DELIMITER ;\n")
    assert tail.startswith(b"# End of log file\n")
    body = body.replace(b"/*!80019 SET @@SESSION.REQUIRE_ROW_FORMAT=1*/;\n\n", b"")
    plain = re.sub(rb"SET @@session.pseudo_thread_id=\d+/\*!\*/;\n", b"", plain)
    assert plain.startswith(body) and len(body) < len(plain.partition(b"DELIMITER ;\n")[0])
    # row-based files pass whole
    row_based = str(corpus / "zalora-binlog-parser" / "mysql-bin.03")
    assert binlake("dump", "--no-defaults", "--require-row-format", row_based)[0] == 0


def test_skip_gtids_leaves_out_gtid_events_as_mysqlbinlog(corpus):
    """MySQL's --skip-gtids: GTID and Previous-GTIDs events print nothing but
    their `# at` lines, each format description is followed by GTID_NEXT
    AUTOMATIC, and no GTID_NEXT line closes the output."""
    path = str(corpus / "mysql-8.0.40" / "std_data" / "binlog_56_gtid_reserved_word.000001")
    _, plain, _ = binlake("dump", "--no-defaults", path)
    status, ours, _ = binlake("dump", "--no-defaults", "--skip-gtids", path)
    assert status == 0
    blocks = re.split(rb"(?m)^(?=# at \d+\n)", plain)
    gtid = re.compile(rb"\t(GTID|Anonymous_GTID|Previous-GTIDs)[\t\n]")
    expected = b"".join(block.split(b"\n", 1)[0] + b"\n" if gtid.search(block) else block
                        for block in blocks)
    expected = expected.replace(b"'/*!*/;\n# at", b"'/*!*/;\n/*!50616 SET @@SESSION.GTID_NEXT="
                                b"'AUTOMATIC'*//*!*/;\n# at", 1)
    expected = expected.replace(b"SET @@SESSION.GTID_NEXT= 'AUTOMATIC' /* added by mysqlbinlog */"
                                b" /*!*/;\n", b"")
    assert b"\tGTID\t" in plain and ours == expected


def test_server_id_bits_mask_headers_and_the_server_id_filter(corpus):
    """MySQL's --server-id-bits=N: only the low N bits of a server id count."""
    path = str(corpus / "ybinlogp" / "mysql-bin.default-path")  # server id 1337
    status, ours, _ = binlake("dump", "--no-defaults", "--server-id-bits=8", path)
    assert status == 0 and b"server id 57 " in ours and b"server id 1337 " not in ours
    masked = binlake("dump", "--no-defaults", "--server-id-bits=8", "--server-id=57", path)[1]
    footer = (b"/*!100001 SET @@SESSION.SERVER_ID=@@GLOBAL.SERVER_ID */;\n"
              b"/*!100001 SET @@SESSION.GTID_DOMAIN_ID=@@GLOBAL.GTID_DOMAIN_ID */;\n")
    assert masked == ours + footer  # (a server id filter's closing lines, as mariadb-binlog)
    unmasked = binlake("dump", "--no-defaults", "--server-id=57", path)[1]
    assert b"\tQuery\t" in masked and b"\tQuery\t" not in unmasked  # (a start and a rotate stay)
    status, _, err = binlake("dump", "--no-defaults", "--server-id-bits=40", path)
    assert status == 0 and "unsigned value 40 adjusted to 32" in err
