"""What several subcommands share: reading options and error reporting."""

from __future__ import annotations

import argparse

from binlake.cli.client_options import client_choice, client_integer
from binlake.errors import BinlogError


def add_input_arguments(parser, *, remote: bool = True) -> None:
    """The binlogs to read: files, or with -R (`remote`) a live server's."""
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="binlog files, read in order as one stream ('-' = standard input); "
                             "with -R the server's binlog to start from (default: its first)")
    parser.add_argument("-f", "--force-read", action="store_true",
                        help="continue past checksum mismatches and undecodable events")
    parser.add_argument("-c", "--verify-binlog-checksum", dest="verify_checksums",
                        action="store_true", default=True,
                        help="check CRC32 checksums (default; --skip-verify-binlog-checksum "
                             "or --no-verify-checksum: do not)")
    parser.add_argument("--no-verify-checksum", dest="verify_checksums", action="store_false",
                        help=argparse.SUPPRESS)
    if remote:
        add_remote_arguments(parser)


def add_remote_arguments(parser) -> None:
    """mysqlbinlog's options for reading a live server as a replica (-R)."""
    group = parser.add_argument_group(
        "reading a live server as a replica (as mysqlbinlog -R; connection options below)")
    group.add_argument("-R", "--read-from-remote-server", "--read-from-remote-master",
                       "--read-from-remote-source", action="store_true", dest="remote",
                       help="read the binlog from the server (FILE names its binlog)")
    group.add_argument("--stop-never", action="store_true",
                       help="wait for new events at the end of the last binlog, reconnect when "
                            "the connection is lost; implies --to-last-log")
    group.add_argument("-t", "--to-last-log", action="store_true",
                       help="go on past the named binlog, to the end of the server's last")
    add_replica_arguments(group)
    add_connection_arguments(parser)


def add_replica_arguments(group) -> None:
    """How the replica connection of -R behaves (dump, sql, pipeline)."""
    group.add_argument("--connection-server-id", "--stop-never-slave-server-id",
                       type=client_integer("stop-never-slave-server-id"),
                       metavar="ID", dest="connection_server_id",
                       help="the replica id to register with (default 65535, as mysqlbinlog "
                            "--stop-never); refused if a connected replica uses it (a registration "
                            "left by a killed binlake run of this machine is taken over)")
    group.add_argument("--heartbeat-period", type=float, default=5.0, metavar="SECONDS",
                       help="ask the server for a heartbeat this often when it has no events "
                            "(default 5; 0: no heartbeats)")
    group.add_argument("--read-timeout", type=float, metavar="SECONDS",
                       help="reconnect after this long without an event or heartbeat "
                            "(default: 3 heartbeats + 5 s; none without heartbeats)")


def reader_options(args) -> dict:
    return {"force": args.force_read, "verify_checksums": args.verify_checksums}


def report(error: BinlogError, err) -> None:
    """`FILE: offset N: reason` on stderr, after everything before it was printed."""
    err.write(f"{error}\n")
    err.flush()


# -- seed schemas (dump, sql, schema, pipeline) ------------------------------------------------

SCHEMA_FROM_HELP = (
    "also seed the schema history with the tables of a live server as they are now "
    "(SHOW CREATE TABLE of every table outside mysql, information_schema, "
    "performance_schema and sys), connecting as the mysql client does; with --schema "
    "the file's tables win and the server fills in the others. Right for binlogs written "
    "since each table last changed its columns; the DDL in the binlogs is followed from "
    "there. Needs pymysql (binlake[server])")


def add_schema_arguments(parser) -> None:
    """--schema, --schema-from and the mysql client's connection options."""
    parser.add_argument("--schema", metavar="FILE",
                        help="the tables as they were before the first binlog: CREATE TABLE "
                             "statements (mysqldump --no-data) or a history saved by "
                             "`binlake schema --save`; the DDL in the binlogs is followed "
                             "from there")
    parser.add_argument("--schema-from", action="store_true", help=SCHEMA_FROM_HELP)
    add_connection_arguments(parser)


def add_connection_arguments(parser) -> None:
    """The mysql client's connection options, once per command (-R and --schema-from share them)."""
    if getattr(parser, "_binlake_connection", False):
        return
    parser._binlake_connection = True
    group = parser.add_argument_group(
        "connecting (-R, --schema-from) as the mysql client: the option files' [client] "
        "groups, then these")
    group.add_argument("-h", "--host", metavar="HOST",
                       help="server host (default: localhost, by its socket if there is one)")
    group.add_argument("-P", "--port", type=client_integer("port"), metavar="PORT",
                       help="TCP port (default 3306)")
    group.add_argument("-u", "--user", metavar="USER", help="user (default: your login name)")
    group.add_argument("--password", metavar="PASSWORD",
                       help="password (visible to ps; better in the option file, or -p alone, "
                            "which asks)")
    group.add_argument("--ask-pass", action="store_true",
                       help="ask for the password on the terminal (what -p without a value does)")
    group.add_argument("-S", "--socket", metavar="PATH", help="Unix socket of a local server")
    group.add_argument("--defaults-file", metavar="FILE",
                       help="the option file to read instead of the standard ones (first on "
                            "the command line as --defaults-file=FILE, dump and sql also take "
                            "their own options from it)")
    group.add_argument("--ssl-mode", metavar="MODE", type=str.upper,
                       help="DISABLED, PREFERRED (default: TLS when the server offers it), "
                            "REQUIRED, VERIFY_CA or VERIFY_IDENTITY")
    group.add_argument("--ssl-ca", metavar="FILE", help="CA certificate(s) to verify the server")
    group.add_argument("--ssl-cert", metavar="FILE", help="client certificate")
    group.add_argument("--ssl-key", metavar="FILE", help="client certificate's key")
    group.add_argument("--ssl-capath", metavar="DIR", help="a directory of CA certificates")
    group.add_argument("--ssl-cipher", metavar="LIST", help="the ciphers TLS may use")
    group.add_argument("--ssl", action="store_const", const=True, default=None,
                       help="MariaDB's: TLS required (--ssl-mode REQUIRED); --skip-ssl: "
                            "DISABLED")
    group.add_argument("--protocol", metavar="PROTOCOL", type=str.upper,
                       help="TCP, or SOCKET (default: the socket for localhost, else TCP)")
    group.add_argument("--bind-address", metavar="ADDRESS",
                       help="MySQL's: the local address to connect from")
    group.add_argument("--server-public-key-path", metavar="FILE",
                       help="MySQL's: the server's RSA public key (PEM) for "
                            "caching_sha2_password without TLS")
    group.add_argument("--get-server-public-key", action="store_true",
                       help="MySQL's: ask the server for its RSA public key (always done "
                            "here when the password exchange needs it)")
    group.add_argument("--ssl-verify-server-cert", action="store_true",
                       help="MariaDB's: verify the server's certificate and name "
                            "(--ssl-mode VERIFY_IDENTITY)")
    group.add_argument("--ssl-crl", metavar="FILE",
                       help="certificate revocation list(s) to check the server's chain against")
    group.add_argument("--ssl-crlpath", metavar="DIR",
                       help="a directory of revocation lists (hashed names, as OpenSSL's)")
    group.add_argument("--tls-version", metavar="LIST",
                       help="the TLS versions allowed, e.g. TLSv1.2,TLSv1.3")
    group.add_argument("--tls-ciphersuites", metavar="LIST",
                       help="MySQL's TLS 1.3 suites: empty allows no TLS 1.3; a list leaves "
                            "OpenSSL's TLS 1.3 suites (Python cannot choose among them)")
    group.add_argument("--ssl-fips-mode", metavar="MODE",
                       type=client_choice("ssl-fips-mode", ("off", "on", "strict")),
                       help="MySQL's: OFF (default), or ON/STRICT where the system's OpenSSL "
                            "runs in FIPS mode")
    group.add_argument("--ssl-session-data", metavar="FILE",
                       help="MySQL's: a saved TLS session to resume; it cannot be resumed "
                            "here, so this fails unless the next option is given")
    group.add_argument("--ssl-session-data-continue-on-failed-reuse", action="store_true",
                       help="MySQL's: connect with a new TLS session when the saved one is "
                            "not reused")
    group.add_argument("--ssl-fp", metavar="HEX",
                       help="MariaDB's: the server certificate's fingerprint (SHA-1 or SHA-2, "
                            "hex; implies --ssl)")
    group.add_argument("--ssl-fplist", metavar="FILE",
                       help="MariaDB's: a file of accepted fingerprints, one per line")
    group.add_argument("--tls-sni-servername", metavar="NAME",
                       help="MySQL's: the server name to send by SNI")
    group.add_argument("-C", "--compress", action="store_const", const=True, default=None,
                       help="compress the client/server protocol (zlib) if the server "
                            "supports it (--skip-compress: do not)")
    group.add_argument("--compression-algorithms", metavar="LIST",
                       help="MySQL's: the protocol compression allowed, of zlib, zstd, "
                            "uncompressed (default uncompressed); without uncompressed a "
                            "server that offers none of the others is refused (MariaDB "
                            "offers zlib only)")
    group.add_argument("--zstd-compression-level", metavar="N",
                       type=client_integer("zstd-compression-level"),
                       help="MySQL's: the zstd level, 1 to 22 (default 3)")


_CONNECTION_OPTIONS = ("host", "port", "user", "password", "socket", "defaults_file", "ssl_mode",
                       "ssl_ca", "ssl_cert", "ssl_key", "ssl_capath", "ssl_cipher", "ssl",
                       "protocol", "bind_address", "server_public_key_path", "ssl_crl",
                       "ssl_crlpath", "tls_version", "tls_ciphersuites", "ssl_fips_mode",
                       "ssl_session_data", "ssl_fp", "ssl_fplist", "tls_sni_servername",
                       "compression_algorithms", "zstd_compression_level")
#: Switches: given when on (-C is None, True, or False after --skip-compress)
_FLAGS = ("ask_pass", "ssl_verify_server_cert", "get_server_public_key",
          "ssl_session_data_continue_on_failed_reuse", "compress")
#: What the connection itself reads from the option files (`connection_settings`).
CONNECTION_DESTS = frozenset(_CONNECTION_OPTIONS + _FLAGS)


def server_address(args, *, for_schema: bool = True, for_snapshot: bool = False):
    """The ServerAddress of --schema-from (of -R when not `for_schema`, of
    --snapshot-from with `for_snapshot`), or None; connection options
    without any of them are a usage error."""
    from binlake.connection.settings import ASK, ServerAddress
    given = [name for name in _CONNECTION_OPTIONS if getattr(args, name, None) is not None]
    given += [name for name in _FLAGS if getattr(args, name, False)]
    wanted = (getattr(args, "snapshot_from", False) if for_snapshot
              else getattr(args, "schema_from", False) if for_schema
              else getattr(args, "remote", False))
    if not wanted:
        if getattr(args, "snapshot_from", False):
            return None
        if given and not getattr(args, "remote", False) \
                and getattr(args, "command_name", None) not in MYSQLBINLOG_COMMANDS:
            options = ", ".join("--" + name.replace("_", "-") for name in given)
            raise ValueError(f"{options}: connection options are for -R and --schema-from")
        return None
    given = {name: getattr(args, name) for name in _CONNECTION_OPTIONS + _FLAGS
             if name not in ("ask_pass", "get_server_public_key")}
    if args.ask_pass:
        given["password"] = ASK
    return ServerAddress(option_files=getattr(args, "option_files", None), **given)


#: The commands with mysqlbinlog's command line: connection options without
#: -R are ignored there, as mysqlbinlog ignores them (with a warning here).
MYSQLBINLOG_COMMANDS = ("dump", "sql")


def unused_connection_options(args) -> list[str]:
    """The connection options given to a command that reads no server."""
    if any(getattr(args, name, False) for name in ("remote", "schema_from", "snapshot_from")):
        return []
    given = [name for name in _CONNECTION_OPTIONS if getattr(args, name, None) is not None]
    given += [name for name in _FLAGS if getattr(args, name, False)]
    return ["--" + name.replace("_", "-") for name in given]


def seed_schema(args):
    """The Schema of --schema and --schema-from (None: neither)."""
    from binlake.schema.seeds import load_seed
    return load_seed(args.schema, server_address(args))


def seed_history(args, command: str, err):
    """(the schema history --schema and --schema-from seed, a new one without
    either, ExitStatus.OK), or (None, the exit status) once `err` says why not."""
    from binlake.cli.status import ExitStatus
    from binlake.schema.history import Schema
    from binlake.connection.settings import SchemaSourceError
    unused = unused_connection_options(args)
    if unused and getattr(args, "command_name", None) in MYSQLBINLOG_COMMANDS:
        err.write(f"{command}: warning: {', '.join(unused)}: ignored without -R or "
                  "--schema-from\n")
    try:
        return seed_schema(args) or Schema(), ExitStatus.OK
    except SchemaSourceError as exc:
        err.write(f"{command}: --schema-from: {exc}\n")
        return None, ExitStatus.ERROR
    except (ValueError, KeyError, OSError) as exc:
        err.write(f"{command}: {exc}\n")
        return None, ExitStatus.USAGE
