"""`binlake schema`: the schema history of binlogs, each version of each
table with the position of the statement that made it (schema/history.py)."""

from __future__ import annotations

import json

from binlake.cli.status import ExitStatus
from binlake.errors import BinlogError
from binlake.read.reader import BinlogReader
from binlake.schema.history import Schema, Version
from binlake.cli.commands.selection import open_inputs
from binlake.cli.commands.common import (add_input_arguments, add_schema_arguments, reader_options, report,
                     seed_history)


def add_arguments(parser) -> None:
    add_input_arguments(parser)
    add_schema_arguments(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: each version as CREATE TABLE (default); json: the history "
                             "as --save writes it")
    parser.add_argument("--save", metavar="FILE",
                        help="also write the history (JSON) for a later --schema")


def run(args, out, err) -> int:
    schema, status = seed_history(args, "binlake schema", err)
    if schema is None:
        return status
    try:
        files, cleanup = open_inputs(args, err)
    except ValueError as exc:
        err.write(f"binlake schema: {exc}\n")
        return ExitStatus.USAGE
    try:
        for path in files:
            # the reader follows the DDL into `schema` as it passes it
            for _ in BinlogReader([path], schema=schema, **reader_options(args)):
                pass
    except BinlogError as exc:
        report(exc, err)
        status = ExitStatus.ERROR
    finally:
        cleanup()
    for warning in schema.warnings:
        err.write(f"binlake schema: warning: {warning}\n")
    if args.format == "json":
        json.dump(schema.to_json(), out, indent=1)
        out.write("\n")
    else:
        out.write(history_text(schema))
    if args.save:
        schema.save(args.save)
    return status


def history_text(schema: Schema) -> str:
    """Every version in position order, as DDL with a `# file at pos` line."""
    versions = sorted(((v.position, key, v) for key, vs in schema.versions.items() for v in vs),
                      key=lambda item: item[0])
    return "".join(_version_text(key, version) for _, key, version in versions)


def _version_text(key: tuple, version: Version) -> str:
    file, pos = version.position
    where = f"{file} at {pos}" if file else "before the first binlog"
    name = f"`{key[0]}`.`{key[1]}`" if key[0] else f"`{key[1]}`"
    head = f"# {where}: {version.statement}\n"
    definition = version.definition
    if version.dropped:
        return head + f"-- {name} is gone\n\n"
    if definition is None:
        return head + f"-- {name}: columns unknown (positional names @1, @2, ...)\n\n"
    lines = [f"  {column.sql()}" for column in definition.columns]
    if definition.primary_key:
        lines.append("  PRIMARY KEY (" + ", ".join(f"`{k}`" for k in definition.primary_key) + ")")
    options = f" DEFAULT CHARSET={definition.charset}" if definition.charset else ""
    return head + f"CREATE TABLE {name} (\n" + ",\n".join(lines) + f"\n){options};\n\n"
