"""Seed schemas: the tables before the first binlog, from a file (`--schema`),
from a live server (`--schema-from`), or both.

Strategy: the server is asked for `SHOW CREATE TABLE` of every table outside
the system databases, and that DDL text goes through `parse_schema` like a
`mysqldump --no-data` file: one place (ddl.py) knows what a definition says.
The connection is made as the mysql client makes it: the option files'
[client] groups (`option_files`: the standard files, or `--defaults-file`),
then the command line.

Rule: a file names tables exactly; the server fills in the tables the file
does not name. The server's tables are those of now: the seed is right for
binlogs written since each table last changed its columns, and the DDL in
the binlogs is followed from there as with any seed (a definition that
disagrees with a table map is never used).
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass

from .option_files import CLIENT_GROUPS, OptionFileError, OptionFiles
from .schema import Schema, load_schema, parse_schema

SYSTEM_DATABASES = ("mysql", "information_schema", "performance_schema", "sys")

#: Where Debian, Red Hat and the MySQL default build put the server's socket:
#: the mysql client connects there when the host is localhost (or none).
DEFAULT_SOCKETS = ("/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock", "/tmp/mysql.sock")


#: `--password` given without a value: ask on the terminal, as mysql -p does.
ASK = object()


class SchemaSourceError(OSError):
    """The server could not be reached or read (a connection, not a usage, problem)."""


@dataclass(frozen=True)
class ServerAddress:
    """How to reach a server; None: from the option file, else the client's default."""
    host: str | None = None
    port: int | None = None
    user: str | None = None
    password: str | None = None
    socket: str | None = None
    defaults_file: str | None = None
    #: TLS as the mysql client's --ssl-ca/--ssl-cert/--ssl-key/--ssl-mode
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    ssl_mode: str | None = None
    #: The option files to read (the command line's --defaults-* options);
    #: None: `defaults_file` alone if given, else the standard ones.
    option_files: OptionFiles | None = None
    #: MariaDB's TLS options: --ssl (True) or --skip-ssl (False), --ssl-verify-server-cert,
    #: and CA directory and cipher list
    ssl: bool | None = None
    ssl_verify_server_cert: bool = False
    ssl_capath: str | None = None
    ssl_cipher: str | None = None
    #: --protocol (TCP or SOCKET), --bind-address, --server-public-key-path
    protocol: str | None = None
    bind_address: str | None = None
    server_public_key_path: str | None = None

#: --ssl-mode values (MySQL's client; MariaDB's --ssl/--ssl-verify-server-cert map onto them)
SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")


def connection_settings(address: ServerAddress) -> dict:
    """pymysql.connect keywords: option file first, then the given values."""
    files = address.option_files
    if files is None or address.defaults_file is not None:
        files = OptionFiles(defaults_file=address.defaults_file)
    settings = _option_file(files)
    for key in ("host", "user", "password", "socket"):
        value = getattr(address, key)
        if value is not None:
            settings[key] = value
    if address.port is not None:
        settings["port"] = address.port
    password = settings.get("password")
    if password is ASK:
        password = getpass.getpass("Enter password: ")
    keywords = {"user": settings.get("user") or getpass.getuser(), "password": password or "",
                "charset": "utf8mb4", "connect_timeout": 10}
    host = settings.get("host")
    socket = settings.get("socket")
    protocol = (address.protocol or settings.get("protocol") or "").upper() or None
    if protocol not in (None, "TCP", "SOCKET"):
        raise ValueError(f"--protocol {protocol}: TCP or SOCKET (PIPE and MEMORY are Windows')")
    local = host in (None, "localhost")
    if socket is None and local and protocol != "TCP" \
            and ("port" not in settings or protocol == "SOCKET"):
        socket = next((path for path in DEFAULT_SOCKETS if os.path.exists(path)), None)
    if protocol == "SOCKET" and socket is None:
        raise ValueError("--protocol SOCKET: no socket (give -S/--socket)")
    if socket is not None and protocol != "TCP" and (local or protocol == "SOCKET"):
        keywords["unix_socket"] = socket
    else:
        keywords["host"] = "127.0.0.1" if local else host
        keywords["port"] = int(settings.get("port") or 3306)
    bind_address = address.bind_address or settings.get("bind-address")
    if bind_address:
        keywords["bind_address"] = bind_address
    key_path = address.server_public_key_path or settings.get("server-public-key-path")
    if key_path:
        try:
            keywords["server_public_key"] = open(os.path.expanduser(key_path), "rb").read()
        except OSError as exc:
            raise SchemaSourceError(f"--server-public-key-path {key_path}: "
                                    f"{exc.strerror or exc}") from None
    keywords.update(_tls(address, settings))
    return keywords


def _ssl_mode(address: ServerAddress, settings: dict) -> str | None:
    """MySQL's --ssl-mode, else what MariaDB's TLS switches mean in its terms:
    --ssl-verify-server-cert VERIFY_IDENTITY, --ssl REQUIRED, --skip-ssl
    DISABLED (the command line first, then the option files)."""
    mode = (address.ssl_mode or settings.get("ssl-mode") or "").upper() or None
    if mode is not None:
        if mode not in SSL_MODES:
            raise ValueError(f"--ssl-mode {mode}: expected one of {', '.join(SSL_MODES)}")
        return mode
    if address.ssl_verify_server_cert or _on(settings.get("ssl-verify-server-cert")):
        return "VERIFY_IDENTITY"
    ssl = address.ssl if address.ssl is not None else _on(settings.get("ssl"))
    return None if ssl is None else "REQUIRED" if ssl else "DISABLED"


def _on(value) -> bool | None:
    """An option file's boolean: present without a value is on."""
    if value is None:
        return None
    return value is True or str(value).lower() in ("", "1", "on", "true")


def _tls(address: ServerAddress, settings: dict) -> dict:
    """pymysql's TLS keywords for the client's --ssl-* options. Without any,
    pymysql uses TLS when the server offers it (PREFERRED, the client's
    default); REQUIRED and stricter make it refuse a server without TLS, and
    `require_tls` checks that again after connecting."""
    mode = _ssl_mode(address, settings)
    if mode == "DISABLED":
        return {"ssl_disabled": True}
    context = {"ca": address.ssl_ca or settings.get("ssl-ca"),
               "capath": address.ssl_capath or settings.get("ssl-capath"),
               "cert": address.ssl_cert or settings.get("ssl-cert"),
               "key": address.ssl_key or settings.get("ssl-key"),
               "cipher": address.ssl_cipher or settings.get("ssl-cipher")}
    context = {key: value for key, value in context.items() if value}
    if mode in (None, "PREFERRED") and not context:
        return {}
    context["verify_mode"] = mode in ("VERIFY_CA", "VERIFY_IDENTITY")
    context["check_hostname"] = mode == "VERIFY_IDENTITY"
    return {"ssl": context, "_binlake_ssl_mode": mode or "PREFERRED"}


def require_tls(connection, mode: str | None) -> None:
    """--ssl-mode REQUIRED and stricter: refuse a connection the server did not encrypt."""
    import ssl
    if mode in ("REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY") \
            and not isinstance(getattr(connection, "_sock", None), ssl.SSLSocket):
        raise SchemaSourceError(f"--ssl-mode {mode}: the server did not offer TLS")


#: What a connection takes from the option files' [client] groups.
#: The TLS switches among them (on when a file names them without a value;
#: --skip-, --disable-, --enable- as on the command line).
SWITCH_KEYS = ("ssl", "ssl-verify-server-cert")
CONNECTION_KEYS = ("host", "port", "user", "password", "socket", "ssl-ca", "ssl-cert", "ssl-key",
                   "ssl-mode", "ssl", "ssl-verify-server-cert", "ssl-capath", "ssl-cipher",
                   "protocol", "bind-address", "server-public-key-path")


def _option_file(files: OptionFiles) -> dict:
    """host, port, user, password, socket and TLS from the option files' client groups."""
    try:
        options = files.options(CLIENT_GROUPS)
    except OptionFileError as exc:
        raise SchemaSourceError(str(exc)) from None
    settings = {}
    for name, value in options:
        name = name.replace("_", "-")
        for prefix, word in (("skip-", "0"), ("disable-", "0"), ("enable-", "1")):
            if name.startswith(prefix) and name[len(prefix):] in SWITCH_KEYS:
                name, value = name[len(prefix):], word  # as my_getopt: the last word wins
        if name in SWITCH_KEYS:
            settings[name] = "" if value is None else value  # given alone: on
        elif name in CONNECTION_KEYS and value is not None:
            settings[name] = value
    return settings


def server_ddl(connection) -> str:
    """`USE db; CREATE TABLE ...;` for every table outside the system databases."""
    with connection.cursor() as cursor:
        # backquoted names whatever the server's sql_mode (ANSI_QUOTES would use ")
        cursor.execute("SET SESSION sql_mode = '', sql_quote_show_create = 1")
        marks = ", ".join(["%s"] * len(SYSTEM_DATABASES))
        cursor.execute("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
                       f"WHERE TABLE_SCHEMA NOT IN ({marks}) "
                       "AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') "
                       "ORDER BY TABLE_SCHEMA, TABLE_NAME", SYSTEM_DATABASES)
        tables = cursor.fetchall()
        parts, current = [], None
        for database, table in tables:
            try:
                name = f"{quote_identifier(database)}.{quote_identifier(table)}"
                cursor.execute(f"SHOW CREATE TABLE {name}")
            except Exception as exc:  # dropped since the listing, or no privilege on it
                if _error_code(exc) in (1146, 1142, 1044):
                    continue
                raise
            if database != current:
                parts.append(f"USE {quote_identifier(database)};\n")
                current = database
            parts.append(cursor.fetchone()[1] + ";\n")
    return "".join(parts)


def quote_identifier(name: str) -> str:
    """A MySQL identifier in backquotes, whatever it holds."""
    return "`" + name.replace("`", "``") + "`"


def _error_code(exc: Exception) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def connect(address: ServerAddress, purpose: str = "--schema-from"):
    """A pymysql connection as the mysql client would make it (SchemaSourceError if not)."""
    try:
        import pymysql
    except ImportError:
        raise SchemaSourceError(f"{purpose} needs pymysql: pip install 'binlake[server]'") from None
    settings = connection_settings(address)
    mode = settings.pop("_binlake_ssl_mode", None)
    try:
        connection = pymysql.connect(**settings)
    except pymysql.err.MySQLError as exc:
        raise SchemaSourceError(f"cannot connect to {server_name(settings)}: {_message(exc)}") from None
    require_tls(connection, mode)
    return connection


def server_name(settings: dict) -> str:
    return settings.get("unix_socket") or f"{settings['host']}:{settings['port']}"


def schema_from_server(address: ServerAddress) -> Schema:
    """Seeds from a live server's tables."""
    connection = connect(address)
    import pymysql  # present: connect() says what to install otherwise
    try:
        text = server_ddl(connection)
    except pymysql.err.MySQLError as exc:
        raise SchemaSourceError(f"{connection.host_info}: {_message(exc)}") from None
    finally:
        connection.close()
    return parse_schema(text)


def _message(exc: Exception) -> str:
    args = getattr(exc, "args", ())
    return str(args[1]) if len(args) >= 2 else str(exc)


def load_seed(path: str | None = None, address: ServerAddress | None = None) -> Schema | None:
    """The seed schema of `--schema PATH` and/or `--schema-from` (None: neither):
    the file's tables as it names them, the server's for every other table."""
    if address is None:
        return load_schema(path) if path else None
    from_server = schema_from_server(address)
    if not path:
        return from_server
    return filled_in(load_schema(path), from_server)


def filled_in(schema: Schema, seeds: Schema) -> Schema:
    """`schema` with the tables of `seeds` it does not name (a name without a
    database, as a dump without USE gives, names the table in every database)."""
    named = {((db or "").lower(), table.lower()) for db, table in schema.versions}
    anywhere = {table for db, table in named if not db}
    for key, versions in seeds.versions.items():
        db, table = (key[0] or "").lower(), key[1].lower()
        if (db, table) in named or table in anywhere:
            continue
        schema.versions[key] = list(versions)
        if key in seeds.tables:
            schema.tables[key] = seeds.tables[key]
    return schema
