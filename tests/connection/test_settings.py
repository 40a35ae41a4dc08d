"""schema_source.py: seeds from a file, a server, or both; connecting as the
mysql client does. (Reading a real server: tests/server/test_schema_from.py.)"""
from __future__ import annotations

import argparse

import pytest

from binlake.cli.commands.common import add_schema_arguments, server_address
from binlake.schema.history import load_schema
from binlake.connection.settings import ASK, SchemaSourceError, ServerAddress, connection_settings
from binlake.schema.seeds import filled_in, load_seed


@pytest.fixture(autouse=True)
def no_machine_option_files(tmp_path, monkeypatch):
    """The option files of the machine and of whoever runs the tests stay out of them."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr("binlake.connection.option_files.SYSTEM_FILES", ())
    for name in ("MARIADB_HOME", "MYSQL_HOME", "MYSQL_GROUP_SUFFIX"):
        monkeypatch.delenv(name, raising=False)


def test_the_command_line_wins_over_the_option_file(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text("!includedir /etc/mysql/conf.d/\n[mysqld]\nport=1\n"
                   "[client]\nhost=db1\nport=3307\nuser=reader\npassword=\"se cret\"\n"
                   "[client-mariadb]\nuser=mariadb_reader\n[mysql]\nuser=ignored\n")
    settings = connection_settings(ServerAddress(defaults_file=str(cnf)))
    assert settings == {"host": "db1", "port": 3307, "user": "mariadb_reader",
                        "password": "se cret", "charset": "utf8mb4", "connect_timeout": 10}
    settings = connection_settings(ServerAddress(host="db2", user="me", password="",
                                                 defaults_file=str(cnf)))
    assert (settings["host"], settings["port"], settings["user"], settings["password"]) == (
        "db2", 3307, "me", "")


def test_localhost_means_the_socket_as_for_the_mysql_client(tmp_path, monkeypatch):
    sock = tmp_path / "mysqld.sock"
    sock.touch()
    monkeypatch.setattr("binlake.connection.settings.DEFAULT_SOCKETS", (str(sock),))
    assert connection_settings(ServerAddress())["unix_socket"] == str(sock)
    assert connection_settings(ServerAddress(host="localhost"))["unix_socket"] == str(sock)
    # a port, or another host: TCP
    assert connection_settings(ServerAddress(port=3310))["port"] == 3310
    tcp = connection_settings(ServerAddress(host="10.0.0.5"))
    assert (tcp["host"], tcp["port"]) == ("10.0.0.5", 3306) and "unix_socket" not in tcp
    assert connection_settings(ServerAddress(socket="/x.sock"))["unix_socket"] == "/x.sock"


def test_a_missing_defaults_file_is_an_error_a_missing_home_file_is_not(tmp_path):
    with pytest.raises(SchemaSourceError, match="Could not open required defaults file"):
        connection_settings(ServerAddress(defaults_file=str(tmp_path / "nope.cnf")))
    home = tmp_path / "home"
    home.mkdir()
    (home / ".my.cnf").write_text("[client]\nuser=from_home\n")
    assert connection_settings(ServerAddress(host="h"))["user"] == "from_home"


def test_ask_pass_asks(monkeypatch):
    monkeypatch.setattr("getpass.getpass", lambda prompt: "typed")
    assert connection_settings(ServerAddress(host="h", password=ASK))["password"] == "typed"


def _args(*argv):
    parser = argparse.ArgumentParser(add_help=False)  # -h is the host, as in the mysql client
    add_schema_arguments(parser)
    return parser.parse_args(list(argv))


def test_connection_options_need_schema_from():
    assert server_address(_args()) is None
    with pytest.raises(ValueError, match="--host, --port: connection options are for -R and --schema-from"):
        server_address(_args("--host", "h", "-P", "1"))
    with pytest.raises(ValueError, match="--ask-pass"):
        server_address(_args("--ask-pass"))
    assert server_address(_args("--schema-from", "-u", "me", "--ask-pass", "-S", "/s")) == \
        ServerAddress(user="me", password=ASK, socket="/s")


def test_the_file_names_tables_the_server_fills_in_the_others(tmp_path, monkeypatch):
    server = load_schema("USE shop;\nCREATE TABLE orders (id INT, total INT);\n"
                         "CREATE TABLE items (id INT, sku INT);\nUSE crm;\n"
                         "CREATE TABLE people (id INT);\nCREATE TABLE orders (x INT);")
    monkeypatch.setattr("binlake.schema.seeds.schema_from_server", lambda address: server)
    path = tmp_path / "dump.sql"
    path.write_text("USE `SHOP`;\nDROP TABLE IF EXISTS `Orders`;\n"
                    "CREATE TABLE `Orders` (id INT, total INT, note TEXT);\n")
    seed = load_seed(str(path), ServerAddress())
    assert seed.columns("SHOP", "Orders") == ["id", "total", "note"]
    assert seed.columns("shop", "items") == ["id", "sku"]
    assert seed.columns("crm", "orders") == ["x"] and seed.columns("crm", "people") == ["id"]
    # a dump without USE names its tables in every database
    bare = filled_in(load_schema("CREATE TABLE orders (only INT);"), server)
    assert bare.columns("shop", "orders") == ["only"] and bare.columns("crm", "orders") == ["only"]
    assert bare.columns("shop", "items") == ["id", "sku"]
    assert load_seed(None, ServerAddress()) is server
    assert load_seed(None, None) is None


def test_without_pymysql_the_message_says_what_to_install(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_pymysql(name, *args, **kwargs):
        if name == "pymysql":
            raise ImportError(name)
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_pymysql)
    with pytest.raises(SchemaSourceError, match=r"pip install 'binlake\[server\]'"):
        load_seed(None, ServerAddress(host="h"))


def test_an_unreachable_server_is_an_error_naming_it():
    with pytest.raises(SchemaSourceError, match="cannot connect to 127.0.0.1:1"):
        load_seed(None, ServerAddress(host="127.0.0.1", port=1, user="x"))


def test_mariadb_tls_switches_in_ssl_mode_terms(tmp_path):
    import ssl

    def tls(**given):
        keywords = connection_settings(ServerAddress(host="h", **given))
        requirement = keywords.get("_binlake_tls")
        return requirement and requirement.mode, keywords.get("ssl"), keywords.get("ssl_disabled")
    assert tls() == (None, None, None)  # PREFERRED: pymysql's own
    assert tls(ssl=False) == (None, None, True)
    mode, context, _ = tls(ssl=True, ssl_capath=str(tmp_path), ssl_cipher="ECDHE-RSA-AES128-GCM-SHA256")
    assert mode == "REQUIRED" and context.verify_mode == ssl.CERT_NONE
    assert [c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"] \
        == ["ECDHE-RSA-AES128-GCM-SHA256"]
    mode, context, _ = tls(ssl_verify_server_cert=True)
    assert mode == "VERIFY_IDENTITY" and context.check_hostname is True
    # --ssl-mode says it all; the option files say it after the command line
    assert tls(ssl_mode="DISABLED", ssl_verify_server_cert=True)[2] is True
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[client]\nskip-ssl\ntls-version=TLSv1.2\n[client-mariadb]\nssl\n")
    keywords = connection_settings(ServerAddress(host="h", defaults_file=str(cnf)))
    assert keywords["_binlake_tls"].mode == "REQUIRED"
    assert keywords["ssl"].maximum_version == ssl.TLSVersion.TLSv1_2
    cnf.write_text("[client]\nssl\n[client-mariadb]\nskip-ssl\n")  # the last word wins
    assert connection_settings(ServerAddress(host="h", defaults_file=str(cnf)))["ssl_disabled"]


def test_tls_options_refused_by_name(tmp_path, monkeypatch):
    def refused(**given):
        with pytest.raises((ValueError, SchemaSourceError)) as raised:
            connection_settings(ServerAddress(host="h", ssl_mode="REQUIRED", **given))
        return str(raised.value)
    assert "--tls-version TLSv9" in refused(tls_version="TLSv9")
    assert refused(ssl_crl=str(tmp_path / "none.crl")).startswith("--ssl-crl ")
    assert "--ssl-fp xyz" in refused(ssl_fp="xyz")
    switch = tmp_path / "fips_enabled"
    monkeypatch.setattr("binlake.connection.settings.FIPS_SWITCH", str(switch))
    switch.write_text("0\n")
    assert "--ssl-fips-mode STRICT" in refused(ssl_fips_mode="STRICT")
    switch.write_text("1\n")
    assert connection_settings(ServerAddress(host="h", ssl_fips_mode="ON"))["ssl"]
    assert "--ssl-cipher" in refused(ssl_cipher="NO-SUCH-CIPHER")


def test_protocol_bind_address_and_public_key(tmp_path, monkeypatch):
    sock = tmp_path / "mysqld.sock"
    sock.touch()
    monkeypatch.setattr("binlake.connection.settings.DEFAULT_SOCKETS", (str(sock),))
    tcp = connection_settings(ServerAddress(protocol="TCP"))
    assert (tcp["host"], tcp["port"]) == ("127.0.0.1", 3306) and "unix_socket" not in tcp
    assert connection_settings(ServerAddress(port=3307, protocol="SOCKET"))["unix_socket"] == str(sock)
    with pytest.raises(ValueError, match="PIPE"):
        connection_settings(ServerAddress(protocol="PIPE"))
    assert connection_settings(ServerAddress(host="h", bind_address="10.0.0.9"))["bind_address"] \
        == "10.0.0.9"
    key = tmp_path / "public.pem"
    key.write_bytes(b"-----BEGIN PUBLIC KEY-----\n")
    settings = connection_settings(ServerAddress(host="h", server_public_key_path=str(key)))
    assert settings["server_public_key"] == b"-----BEGIN PUBLIC KEY-----\n"
    with pytest.raises(SchemaSourceError, match="server-public-key-path"):
        connection_settings(ServerAddress(host="h", server_public_key_path=str(tmp_path / "x")))
