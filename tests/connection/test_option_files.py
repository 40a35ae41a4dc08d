"""Option files as the client programs read them (binlake.connection.option_files):
the files in their order, the groups, the lines, and the command line after
them; checked against mariadb-binlog reading the same files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from binlake.cli.dispatch import main
from binlake.connection.option_files import OptionFileError, OptionFiles
from peers import binlake, needs_reference, reference

GROUPS = ("client", "mysqlbinlog")


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_lines_of_every_group_come_in_file_order(tmp_path):
    included = write(tmp_path / "more.cnf", "[client]\nport=3308\n")
    folder = tmp_path / "conf.d"
    folder.mkdir()
    write(folder / "b.cnf", "[mysqlbinlog]\nverbose\n")
    write(folder / "a.cnf", "[client]\nhost = db2\n")
    write(folder / "skipped.txt", "[client]\nhost = never\n")
    main_file = write(tmp_path / "my.cnf", f"""
# a comment
; another
[client]
user = alice
password = "se#cret" # the quotes keep the hash
[mysqld]
port = 1
[mysqlbinlog]
start_position = 4   # an end comment
[client]
socket = '/tmp/a b.sock'
!include {included}
!includedir {folder}
note = a\\tb\\sc
""")
    options = OptionFiles(defaults_file=str(main_file)).options(GROUPS)
    assert options == [("user", "alice"), ("password", "se#cret"), ("start_position", "4"),
                       ("socket", "/tmp/a b.sock"), ("port", "3308"), ("host", "db2"),
                       ("verbose", None), ("note", "a\tb c")]


def test_group_suffix_adds_its_groups(tmp_path, monkeypatch):
    path = write(tmp_path / "my.cnf", "[client]\nuser=a\n[client_dr]\nuser=b\n[mysqlbinlog_x]\nu=c\n")
    assert OptionFiles(defaults_file=str(path)).options(GROUPS) == [("user", "a")]
    assert OptionFiles(defaults_file=str(path), group_suffix="_dr").options(GROUPS) == [
        ("user", "a"), ("user", "b")]
    monkeypatch.setenv("MYSQL_GROUP_SUFFIX", "_x")
    assert OptionFiles(defaults_file=str(path)).options(GROUPS) == [("user", "a"), ("u", "c")]


def test_the_standard_files_in_their_order(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MYSQL_HOME", "/opt/mysql")
    monkeypatch.delenv("MARIADB_HOME", raising=False)
    paths = [str(path) for path, _ in OptionFiles(extra_file="/x/extra.cnf").paths()]
    assert paths == ["/etc/my.cnf", "/etc/mysql/my.cnf", "/opt/mysql/my.cnf", "/x/extra.cnf",
                     f"{tmp_path}/.my.cnf"]
    monkeypatch.setenv("MARIADB_HOME", "/opt/mariadb")
    assert [str(p) for p, _ in OptionFiles().paths()][2] == "/opt/mariadb/my.cnf"
    assert OptionFiles(no_defaults=True).paths() == []
    assert [str(p) for p, _ in OptionFiles(defaults_file="/only.cnf").paths()] == ["/only.cnf"]


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(OptionFileError, match="Could not open required defaults file"):
        OptionFiles(defaults_file=str(tmp_path / "missing.cnf")).options(GROUPS)
    with pytest.raises(OptionFileError, match="Could not open required defaults file"):
        OptionFiles(extra_file=str(tmp_path / "missing.cnf")).options(GROUPS)
    bad = write(tmp_path / "bad.cnf", "[client\nuser=a\n")
    with pytest.raises(OptionFileError, match="bad.cnf:1"):
        OptionFiles(defaults_file=str(bad)).options(GROUPS)
    loop = tmp_path / "loop.cnf"
    write(loop, f"[client]\n!include {loop}\n")
    with pytest.raises(OptionFileError, match="nested"):
        OptionFiles(defaults_file=str(loop)).options(GROUPS)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_the_command_line_reads_them_first_and_wins(tmp_path, corpus):
    path = str(corpus / "rust_mysql_common" / "mariadb-bin.000001")
    options = write(tmp_path / "my.cnf", "[client]\nuser=repl\n[mysqlbinlog]\nshort-form\n"
                                         "[mariadb-binlog]\nprint_row_count=0\n")
    short = binlake("dump", "--no-defaults", "-s", "--skip-print-row-count", path)
    assert binlake("dump", f"--defaults-file={options}", path) == short
    # the command line comes after the files
    assert binlake("dump", f"--defaults-file={options}", "--short-form=0", path) == \
        binlake("dump", "--no-defaults", "--skip-print-row-count", path)
    # a connection option of the files is the connection's: no "for -R" refusal
    status, _, err = run("dump", f"--defaults-file={options}", path)
    assert status == 0 and err == ""
    switches = write(tmp_path / "switches.cnf", "[client]\nskip-ssl\n[mysqlbinlog]\n"
                                                "skip-compress\nhost=db7\n")
    status, _, err = run("dump", f"--defaults-file={switches}", path)
    assert status == 0 and err == ""


def test_connections_of_dump_read_mysqlbinlogs_groups_too(tmp_path):
    """mysqlbinlog takes its connection options from [client] and its own groups."""
    from binlake.cli.dispatch import build_parser, client_syntax
    from binlake.cli.commands.common import server_address
    from binlake.connection.settings import connection_settings
    options = write(tmp_path / "my.cnf", "[client]\nhost=db1\nuser=ops\n[mysqlbinlog]\n"
                                         "host=db2\n[mariadb-binlog]\nport=3307\n")
    parser = build_parser()
    argv, files = client_syntax(parser, ["dump", f"--defaults-file={options}", "-R", "x"],
                                io.StringIO())
    args = parser.parse_args(argv)
    args.option_files = files
    settings = connection_settings(server_address(args, for_schema=False))
    assert (settings["host"], settings["port"], settings["user"]) == ("db2", 3307, "ops")


def test_what_the_files_say_wrong(tmp_path):
    unknown = write(tmp_path / "u.cnf", "[client]\ndefault-character-set=utf8mb4\n")
    assert run("dump", f"--defaults-file={unknown}", "f") == (
        7, "", "binlake dump: unknown variable 'default-character-set=utf8mb4'\n")
    assert run("dump", f"--defaults-file={tmp_path}/none.cnf", "f") == (
        1, "", f"binlake dump: Could not open required defaults file: {tmp_path}/none.cnf\n")
    # only as the first options, as the client programs take them
    assert run("dump", "-v", "--print-defaults", "f")[0] == 2
    assert run("dump", "--no-defaults", "--print-defaults", "f") == (
        0, "binlake would have been started with the following arguments:\n\n", "")


@needs_reference
def test_mariadb_binlog_reads_them_alike(tmp_path, corpus):
    path = str(corpus / "rust_mysql_common" / "mariadb-bin.000001")
    extra = write(tmp_path / "extra.cnf", "[mariadb-binlog]\nverbose\n")
    options = write(tmp_path / "my.cnf", f"""[client]
user=repl
[mysqlbinlog]
base64_output = "decode-rows" # rows as pseudo-SQL
[mariadb-binlog]
print-row-count = OFF
!include {extra}
[client-server]
port = 3307
""")
    for files in ([f"--defaults-file={options}"],
                  [f"--defaults-file={options}", "--defaults-group-suffix=_none"],
                  ["--no-defaults"]):
        status, printed, _ = run("dump", *files, "--print-defaults")
        _, theirs = reference(*files, "--print-defaults")
        assert status == 0
        # the first line names the program (the peer: as it was started)
        assert printed.encode().split(b"\n")[1:] == theirs.split(b"\n")[1:], files
        _, theirs = reference(*files, path)
        assert binlake("dump", *files, path)[1] == theirs, files


def write_login_file(path: Path, text: str) -> Path:
    """A login-path file laid out as mysql_config_editor writes it (the reader
    was also checked on a file mysql_config_editor wrote)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    stored_key = bytes(range(7, 27))
    key = bytearray(16)
    for index, byte in enumerate(stored_key):
        key[index % 16] ^= byte
    data = bytearray(b"\0\0\0\0" + stored_key)
    for line in text.splitlines(keepends=True):
        plain = line.encode()
        padding = 16 - len(plain) % 16
        encryptor = Cipher(algorithms.AES(bytes(key)), modes.ECB()).encryptor()
        cipher = encryptor.update(plain + bytes([padding]) * padding) + encryptor.finalize()
        data += len(cipher).to_bytes(4, "little") + cipher
    path.write_bytes(bytes(data))
    path.chmod(0o600)
    return path


def test_the_login_path_file_is_read_last_even_without_defaults(tmp_path, monkeypatch):
    login = write_login_file(tmp_path / "login.cnf",
                             "[client]\nuser = \"from_login\"\npassword = \"p w\"\n"
                             "[remote]\nhost = \"db9\"\n[elsewhere]\nhost = \"never\"\n")
    monkeypatch.setenv("MYSQL_TEST_LOGIN_FILE", str(login))
    cnf = write(tmp_path / "my.cnf", "[client]\nuser = from_file\nhost = db1\n")
    assert OptionFiles(defaults_file=str(cnf)).options(GROUPS) == [
        ("user", "from_file"), ("host", "db1"), ("user", "from_login"), ("password", "p w")]
    assert OptionFiles(no_defaults=True, login_path="remote").options(GROUPS) == [
        ("user", "from_login"), ("password", "p w"), ("host", "db9")]
    assert OptionFiles(no_defaults=True, no_login_paths=True).options(GROUPS) == []
    login.chmod(0o644)  # readable by others: not trusted, as MySQL's clients
    assert OptionFiles(no_defaults=True).options(GROUPS) == []


def test_login_path_options_come_first_on_the_line(tmp_path, monkeypatch):
    from binlake.connection.option_files import split_defaults_options
    from binlake.connection.settings import ServerAddress, connection_settings
    files, _, rest = split_defaults_options(["--no-defaults", "--login-path=remote",
                                             "--no-login-paths", "-v"])
    assert (files.no_defaults, files.login_path, files.no_login_paths, rest) == (
        True, "remote", True, ["-v"])
    login = write_login_file(tmp_path / "login.cnf", "[remote]\nuser = \"ops\"\nhost = \"db9\"\n")
    monkeypatch.setenv("MYSQL_TEST_LOGIN_FILE", str(login))
    settings = connection_settings(ServerAddress(
        option_files=OptionFiles(no_defaults=True, login_path="remote")))
    assert (settings["user"], settings["host"]) == ("ops", "db9")


def test_a_damaged_login_path_file_is_an_error_naming_the_byte(tmp_path, monkeypatch):
    login = write_login_file(tmp_path / "login.cnf", "[client]\nuser = \"a\"\n")
    login.write_bytes(login.read_bytes()[:-3])
    monkeypatch.setenv("MYSQL_TEST_LOGIN_FILE", str(login))
    with pytest.raises(OptionFileError, match=r"byte 4\d: a cut or damaged login-path line"):
        OptionFiles(no_defaults=True).options(GROUPS)
