"""What several subcommands share: reading options and error reporting."""

from __future__ import annotations

from ..errors import BinlogError


def add_input_arguments(parser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="binlog files, read in order as one stream ('-' = standard input)")
    parser.add_argument("-f", "--force-read", action="store_true",
                        help="continue past checksum mismatches and undecodable events")
    parser.add_argument("--no-verify-checksum", dest="verify_checksums", action="store_false",
                        help="do not check CRC32 checksums")


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
    group = parser.add_argument_group(
        "connecting for --schema-from (as the mysql client: ~/.my.cnf or --defaults-file, "
        "then these)")
    group.add_argument("--host", metavar="HOST",
                       help="server host (default: localhost, by its socket if there is one)")
    group.add_argument("-P", "--port", type=int, metavar="PORT", help="TCP port (default 3306)")
    group.add_argument("-u", "--user", metavar="USER", help="user (default: your login name)")
    # no mysql-style bare -p: an optional value would swallow the binlog file after it
    group.add_argument("--password", metavar="PASSWORD", help="password (visible to ps; "
                       "better in the option file, or --ask-pass)")
    group.add_argument("--ask-pass", action="store_true",
                       help="ask for the password on the terminal (as Percona's tools do)")
    group.add_argument("-S", "--socket", metavar="PATH", help="Unix socket of a local server")
    group.add_argument("--defaults-file", metavar="FILE",
                       help="option file to read instead of ~/.my.cnf")


_CONNECTION_OPTIONS = ("host", "port", "user", "password", "socket", "defaults_file")
_FLAGS = ("ask_pass",)


def server_address(args):
    """The ServerAddress of --schema-from, or None; connection options without
    --schema-from are a usage error (binlake reads binlogs from files only)."""
    from ..schema_source import ASK, ServerAddress
    given = [name for name in _CONNECTION_OPTIONS if getattr(args, name, None) is not None]
    given += [name for name in _FLAGS if getattr(args, name, False)]
    if not args.schema_from:
        if given:
            options = ", ".join("--" + name.replace("_", "-") for name in given)
            raise ValueError(f"{options}: connection options are for --schema-from")
        return None
    password = ASK if args.ask_pass else args.password
    return ServerAddress(args.host, args.port, args.user, password, args.socket, args.defaults_file)


def seed_schema(args):
    """The Schema of --schema and --schema-from (None: neither)."""
    from ..schema_source import load_seed
    return load_seed(args.schema, server_address(args))


def seed_history(args, command: str, err):
    """(the schema history --schema and --schema-from seed, a new one without
    either, ExitStatus.OK), or (None, the exit status) once `err` says why not."""
    from ..cli import ExitStatus
    from ..schema import Schema
    from ..schema_source import SchemaSourceError
    try:
        return seed_schema(args) or Schema(), ExitStatus.OK
    except SchemaSourceError as exc:
        err.write(f"{command}: --schema-from: {exc}\n")
        return None, ExitStatus.ERROR
    except (ValueError, KeyError, OSError) as exc:
        err.write(f"{command}: {exc}\n")
        return None, ExitStatus.USAGE
