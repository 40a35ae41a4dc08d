"""The command line's client-program syntax (binlake.cli)."""
from __future__ import annotations

from binlake.cli import build_parser, client_password_syntax


def test_password_as_the_mysql_client_takes_it():
    assert client_password_syntax(["dump", "-R", "-p", "bin.000001"]) == [
        "dump", "-R", "--ask-pass", "bin.000001"]
    assert client_password_syntax(["dump", "-psecret", "-P", "3307"]) == [
        "dump", "--password=secret", "-P", "3307"]
    assert client_password_syntax(["dump", "--", "-p"]) == ["dump", "--", "-p"]


def test_h_is_the_host_and_help_is_long():
    args = build_parser().parse_args(["dump", "-R", "-h", "db1", "-P", "3307", "-t",
                                      "--stop-never-slave-server-id", "9", "bin.000001"])
    assert (args.remote, args.host, args.port, args.to_last_log) == (True, "db1", 3307, True)
    assert args.connection_server_id == 9 and args.files == ["bin.000001"]
