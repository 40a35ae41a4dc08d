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
