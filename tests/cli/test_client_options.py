"""The mysql client programs' option syntax (binlake.cli.client_options): every
spelling parses to the same settings as its plain form, and what the
client programs refuse is refused in their words and with their status."""

from __future__ import annotations

import io
import shutil

import pytest

from binlake.cli.dispatch import build_parser, client_syntax, main
from peers import binlake, needs_reference, reference

PARSER = build_parser()


def settings(command: str, *argv: str, err=None) -> dict:
    """The subcommand's settings after the client syntax and argparse (no
    option files: those are tests/connection/test_option_files.py's)."""
    words, _ = client_syntax(PARSER, [command, "--no-defaults", *argv], err or io.StringIO())
    args = PARSER.parse_args(words)
    return {name: value for name, value in vars(args).items() if name != "run"}


def same(*spellings) -> None:
    first = settings(*spellings[0])
    for argv in spellings[1:]:
        assert settings(*argv) == first, (spellings[0], argv)


def test_booleans_take_every_spelling():
    default = settings("dump")
    # None: on, but with -s (mariadb-binlog: -s leaves row counts out unless asked for)
    assert default["print_row_count"] is None and default["short_form"] is False
    assert settings("dump", "--print-row-count=1")["print_row_count"] is True
    same(["dump", "--skip-print-row-count"], ["dump", "--print-row-count=0"],
         ["dump", "--print_row_count=OFF"], ["dump", "--print-row-count=false"],
         ["dump", "--disable-print-row-count"], ["dump", "--skip-print-row-c"])
    assert settings("dump", "--print-row-count=0")["print_row_count"] is False
    same(["dump", "-s"], ["dump", "--short-form"], ["dump", "--short-form=1"],
         ["dump", "--short_form=ON"], ["dump", "--short-form=TRUE"], ["dump", "--enable-short-form"],
         ["dump", "--short-f"])
    assert settings("dump", "-s")["short_form"] is True
    # the last word wins, whatever its spelling
    same(["dump"], ["dump", "-s", "--short-form=0"], ["dump", "--short-form", "--skip-short-form"])
    same(["dump", "-s"], ["dump", "--skip-short-form", "-s"], ["dump", "--short-form=off", "-s"])


def test_a_negative_option_turns_back():
    same(["dump", "--no-verify-checksum"], ["dump", "--verify-binlog-checksum=0"],
         ["dump", "--skip-verify-binlog-checksum"])
    assert settings("dump", "--no-verify-checksum")["verify_checksums"] is False
    same(["dump"], ["dump", "-c"], ["dump", "--no-verify-checksum", "--verify-binlog-checksum"],
         ["dump", "--no-verify-checksum=0"])


def test_values_names_and_prefixes():
    same(["dump", "-j", "4"], ["dump", "--start-position=4"], ["dump", "--start-position", "4"],
         ["dump", "--start_position=4"], ["dump", "--start-pos=4"],
         ["dump", "--loose-start-position=4"])
    same(["dump", "-vvv"], ["dump", "-v", "-v", "-v"], ["dump", "--verbose", "--verbose", "-v"])
    assert settings("dump", "-vvv")["verbose"] == 3
    # `--` ends the options
    assert settings("dump", "--", "--short-form")["files"] == ["--short-form"]
    assert settings("dump", "--", "--short-form")["short_form"] is False


def test_password_as_the_mysql_client_takes_it():
    def words(*argv):
        return client_syntax(PARSER, ["dump", "--no-defaults", *argv], io.StringIO())[0]
    assert words("-R", "-p", "bin.000001") == ["dump", "-R", "--ask-pass", "bin.000001"]
    assert words("-psecret", "-P", "3307") == ["dump", "--password=secret", "-P", "3307"]
    assert words("--", "-p") == ["dump", "--", "-p"]


def test_client_library_options_are_accepted_and_change_nothing():
    for command in ("dump", "sql"):
        ignored = settings(command, "--character-sets-dir=/usr/share/mysql/charsets",
                           "--plugin-dir", "/usr/lib/mysql/plugin", "--default-auth=sha256",
                           "--debug=d:t:o,/tmp/trace", "-#d:t", "--debug-check", "--debug-info",
                           "--open-files-limit=64", "--binlog-row-event-max-size=4096", "f")
        plain = settings(command, "f")
        assert {k: v for k, v in ignored.items() if not k.startswith("ignored_")} == \
               {k: v for k, v in plain.items() if not k.startswith("ignored_")}
    # --debug's value is only with `=`: the next word stays an operand
    assert settings("dump", "--debug", "f")["files"] == ["f"]


@pytest.mark.parametrize("argv, status, message", [
    (["--frob"], 2, "binlake dump: unknown option '--frob'\n"),
    (["--skip-database"], 2, "binlake dump: unknown option '--skip-database'\n"),
    (["--st"], 3, "binlake dump: ambiguous option '--st' (start-datetime, "),
    (["-j"], 5, "binlake dump: option '--start-position' requires an argument\n"),
    (["--offset=x"], 9, "binlake dump: Unknown suffix 'x' used for variable 'offset' (value 'x')."),
    (["--base64-output=bogus"], 1, "binlake dump: Unknown option to base64-output: bogus "),
])
def test_refusals_are_one_line_with_my_getopts_status(argv, status, message):
    """Each as mariadb-binlog refuses it (include/my_getopt.h's exit statuses)."""
    err = io.StringIO()
    assert main(["dump", "--no-defaults", "f", *argv], out=io.StringIO(), err=err) == status
    assert err.getvalue().count("\n") == 1 and err.getvalue().startswith(message)


def test_values_as_my_getopt_reads_them():
    assert settings("dump", "--offset=2K")["offset"] == 2048
    assert settings("dump", "-o", "3")["offset"] == 3
    for spelling in ("DECODE-ROWS", "decode", "Decode-Rows", "dec"):
        assert settings("dump", f"--base64-output={spelling}")["base64_output"] == "decode-rows"


def test_a_bad_boolean_value_is_ignored_with_a_warning():
    err = io.StringIO()
    assert settings("dump", "-s", "--short-form=maybe", err=err)["short_form"] is True
    assert err.getvalue() == ("Warning: binlake: ignoring option '--short-form' due to invalid "
                              "value 'maybe'\n")
    err = io.StringIO()
    assert settings("dump", "--loose-frob=1", err=err) == settings("dump")
    assert err.getvalue() == "Warning: binlake: unknown option '--loose-frob'\n"


@needs_reference
def test_the_spellings_print_as_mariadb_binlog_prints_them(corpus):
    """The same command line, with the client syntax, to both tools."""
    path = str(corpus / "rust_mysql_common" / "mariadb-bin.000001")
    for options in (["--print-row-count=0", "--base64-output=decode-rows", "-v"],
                    ["--skip-print-row-count", "--base64-output=decode-rows", "--verbose"],
                    ["--short_form=ON"], ["--enable-hexdump", "--base64_output=decode-rows"],
                    ["--loose-print-row-count=OFF", "--start-pos=285", "-vv"]):
        _, theirs = reference(*options, path)
        status, ours, _ = binlake("dump", *options, path)
        assert status == 0 and ours == theirs, options


def test_every_option_the_readme_says_dump_takes_is_taken():
    """The README's table of the peers' options: each not marked "not yet"
    is an option of `binlake dump` (or, for --defaults-*, of the option files)."""
    import re
    from pathlib import Path
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    table = readme.split("### Every option of mysqlbinlog and mariadb-binlog", 1)[1]
    dump = PARSER._subparsers._group_actions[0].choices["dump"]
    taken = set(dump._option_string_actions) | {
        "--no-defaults", "--defaults-file", "--defaults-extra-file", "--defaults-group-suffix",
        "--print-defaults", "--login-path", "--no-login-paths",
        "-p"}  # the client syntax's: --ask-pass, or -pSECRET for --password
    checked = 0
    for row in table.split("\n\n", 1)[1].splitlines():
        cells = row.split(" | ")
        if not row.startswith("| `") or len(cells) < 3 or "not yet" in cells[-1]:
            continue
        for option in re.findall(r"`(-[-\w#?]*)", cells[0]):
            checked += 1
            assert option in taken, option
    assert checked > 60


def test_version():
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        import contextlib
        with contextlib.redirect_stdout(out):
            main(["dump", "-V"])
    assert exited.value.code == 0 and out.getvalue().startswith("binlake ")


def _accepted(option: str) -> bool:
    """Whether `binlake dump` takes `option`, given a value (which booleans
    take too) or, for those that take none (--help), alone: not refused as
    unknown (2) or ambiguous (3)."""
    def taken(word: str) -> bool:
        out, err = io.StringIO(), io.StringIO()
        try:
            status = main(["dump", "--no-defaults", word, "/nonexistent"], out=out, err=err)
        except SystemExit as exited:  # --help, --version
            status = exited.code
        return status not in (2, 3) and "unknown option" not in err.getvalue()
    return taken(f"{option}=1") or taken(option)


def test_every_option_of_mysqlbinlog_8_4_is_taken():
    from pathlib import Path
    listing = Path(__file__).parents[1] / "data" / "mysqlbinlog-8.4-options.txt"
    options = [line for line in listing.read_text().splitlines() if line.startswith("--")]
    assert len(options) > 70
    assert [o for o in options if not _accepted(o)] == []


@pytest.mark.skipif(shutil.which("mariadb-binlog") is None, reason="mariadb-binlog not installed")
def test_every_option_mariadb_binlog_lists_is_taken():
    import re
    import subprocess
    shown = subprocess.run(["mariadb-binlog", "--no-defaults", "--help"], capture_output=True,
                           text=True).stdout
    options = sorted(set(re.findall(r"^\s+(?:-\S, )?(--[a-z0-9_-]+)", shown, re.M)))
    assert len(options) > 55
    assert [o for o in options if not _accepted(o)] == []
