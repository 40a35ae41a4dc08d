"""The schema history: every table's columns at every binlog position,
followed through the DDL in the stream.

Strategy: a `Schema` holds the current definition of each table and the
list of its versions, each stamped with the position (file, offset) of the
statement that made it. Readers feed it each QUERY event as they pass it
(`follow`); `at(position)` gives the tables as they were at any earlier
position, so a Spark task starting mid-file knows the schema at its start.
Statements are read by `ddl.py`. Seeds (tables created before the first
binlog) come from `mysqldump --no-data` text, or from a saved history
(JSON, `save`/`load_schema`).

Rule: the history never guesses. A table whose columns a statement leaves
unknown (CREATE ... SELECT, a statement ddl.py cannot read) has no
definition until the next CREATE; a definition that disagrees with the
table map in hand (column count or types; names under FULL metadata) is not
used. Both are warnings naming the file and position; the caller then
keeps positional names (`@N`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass

from .ddl import (AlterTable, ColumnSpec, CreateTable, DdlError, DropDatabase, DropTables,
                  RenameTables, TableDef, TruncateTable, UseDatabase, altered, might_change_tables,
                  parse_script)

#: Where seeds sit: before any binlog position.
SEED = ("", 0)

FORMAT = "binlake-schema-history"


@dataclass(frozen=True)
class Version:
    """A table as one statement left it."""
    position: tuple            #: (file name, offset) of the statement
    statement: str             #: what made it: "CREATE TABLE", "ALTER TABLE", "TRUNCATE", ...
    definition: TableDef | None  #: None: dropped, or columns unknown (see `statement`)
    dropped: bool = False


class Schema:
    """Tables by (database, table), with their history."""

    def __init__(self):
        self.tables: dict[tuple, TableDef] = {}
        self.versions: dict[tuple, list[Version]] = {}
        self.warnings: list[str] = []
        self._checked: set = set()
        self._positions: set = set()  #: of the statements that made versions

    # -- following statements -------------------------------------------------------------
    def follow(self, event) -> None:
        """A QUERY event, in stream order: its DDL, if any, changes the tables."""
        header = event.header
        self.apply(event.query, event.database or None,
                   (os.path.basename(header.file), header.pos))

    def apply(self, statement: str, database: str | None, position: tuple = SEED) -> None:
        """One statement of a binlog, run at `position`; a statement the
        history already holds (read again, or seeded from a saved history) is
        not applied twice."""
        if position not in self._positions and might_change_tables(statement):
            self.run(statement, database, position)

    def run(self, script: str, database: str | None, position: tuple = SEED) -> None:
        """Statements in order (a script: `mysqldump --no-data` output)."""
        statement = script
        for operations, error in parse_script(statement, database):
            if error is not None:
                self._unreadable(statement, database, position, error)
            for operation in operations:
                if isinstance(operation, UseDatabase):
                    database = operation.database
                else:
                    self._apply(operation, position)

    def _apply(self, op, position: tuple) -> None:
        if isinstance(op, CreateTable):
            key = self._key(op.database, op.table)
            if op.if_not_exists and key in self.tables:
                return
            definition = op.definition
            if op.like is not None:
                source = self._key(*op.like)
                definition = self.tables.get(source)
                if definition is None:
                    self._warn(position, f"CREATE TABLE {_name(key)} LIKE {_name(source)}: "
                               f"the columns of {_name(source)} are not known")
            elif definition is None:
                self._warn(position, f"CREATE TABLE {_name(key)} ... SELECT: its columns are "
                           "not in the statement (positional names until the next CREATE)")
            self._set(key, position, "CREATE TABLE", definition)
        elif isinstance(op, AlterTable):
            key = self._key(op.database, op.table)
            current = self.tables.get(key)
            definition = None
            if current is not None:
                try:
                    definition = altered(current, op.actions)
                except DdlError as exc:
                    self._warn(position, f"ALTER TABLE {_name(key)}: {exc} (positional names "
                               "until the next CREATE)")
            if op.rename_to is not None:
                self._set(key, position, "ALTER TABLE ... RENAME", None, dropped=True)
                key = self._key(*op.rename_to)
            if current is not None or op.rename_to is not None:
                self._set(key, position, "ALTER TABLE", definition)
        elif isinstance(op, RenameTables):
            for old, new in op.pairs:
                old_key, new_key = self._key(*old), self._key(*new)
                definition = self.tables.get(old_key)
                self._set(old_key, position, f"RENAME TABLE TO {_name(new_key)}", None,
                          dropped=True)
                self._set(new_key, position, f"RENAME TABLE FROM {_name(old_key)}", definition)
        elif isinstance(op, DropTables):
            for table in op.tables:
                key = self._key(*table)
                if key in self.versions:
                    self._set(key, position, "DROP TABLE", None, dropped=True)
        elif isinstance(op, TruncateTable):
            key = self._key(op.database, op.table)
            if key in self.versions:
                self._set(key, position, "TRUNCATE TABLE", self.tables.get(key))
        elif isinstance(op, DropDatabase):
            for key in [k for k in self.versions if (k[0] or "").lower() == op.database.lower()]:
                if key in self.tables or not self.versions[key][-1].dropped:
                    self._set(key, position, "DROP DATABASE", None, dropped=True)

    def _set(self, key: tuple, position: tuple, statement: str, definition: TableDef | None,
             dropped: bool = False) -> None:
        self.versions.setdefault(key, []).append(Version(position, statement, definition,
                                                         dropped))
        if position != SEED:
            self._positions.add(position)
        if definition is None:
            self.tables.pop(key, None)
        else:
            self.tables[key] = definition

    def _unreadable(self, statement: str, database, position: tuple, exc: DdlError) -> None:
        """A statement that changes tables, not understood: the tables it
        changes are forgotten (every table it mentions, when the error came
        before its name)."""
        self._warn(position, f"cannot read {statement[:80]!r}: {exc}; the tables it "
                   "changes get positional names until the next CREATE")
        keys = [self._key(*t) for t in exc.tables] or [
            key for key in self.tables
            if re.search(rf"(?<![\w$]){re.escape(key[1])}(?![\w$])", statement, re.IGNORECASE)]
        for key in keys:
            if key in self.tables:
                self._set(key, position, "unreadable DDL", None)

    def _warn(self, position: tuple, text: str) -> None:
        file, pos = position
        self.warnings.append(f"{file}: offset {pos}: {text}" if file else text)

    def _key(self, database: str | None, table: str) -> tuple:
        """The key of an existing table (names compare case-insensitively, as
        with lower_case_table_names), else (database, table) as written."""
        key = (database, table)
        if key in self.versions:
            return key
        wanted = ((database or "").lower(), table.lower())
        for db, name in self.versions:
            if name.lower() == wanted[1] and (db or "").lower() == wanted[0]:
                return db, name
        return key

    # -- positions ------------------------------------------------------------------------
    def at(self, position: tuple) -> Schema:
        """The tables as they were just before `position` (file name, offset)."""
        snapshot = Schema()
        for key, versions in self.versions.items():
            kept = [v for v in versions if v.position < position]
            if kept:
                snapshot.versions[key] = kept
                if kept[-1].definition is not None:
                    snapshot.tables[key] = kept[-1].definition
        return snapshot

    # -- answers --------------------------------------------------------------------------
    def table(self, database: str | None, table: str) -> TableDef | None:
        found = self.tables.get((database, table))
        if found is not None:
            return found
        found = self.tables.get((None, table))
        if found is not None:
            return found
        key = self._key(database, table)
        return self.tables.get(key)

    def columns(self, database: str | None, table: str) -> list[str] | None:
        found = self.table(database, table)
        return found.names if found else None

    def primary_key(self, database: str | None, table: str) -> list[str] | None:
        found = self.table(database, table)
        return list(found.primary_key) if found else None

    def unsigned_columns(self, database: str | None, table: str) -> set | None:
        """Integer columns declared UNSIGNED (binlogs without metadata do not say)."""
        found = self.table(database, table)
        return {c.name for c in found.columns if c.unsigned} if found else None

    def fixed_binary_columns(self, database: str | None, table: str) -> set | None:
        """Fixed-length binary columns (BINARY(n), INET6, UUID), whose trailing zero
        bytes binlogs drop; binlogs without metadata cannot tell them from CHAR."""
        found = self.table(database, table)
        return {c.name for c in found.columns if c.fixed_binary} if found else None

    def for_table_map(self, table_map) -> TableDef | None:
        """The definition of a table map's table, if it agrees with the map:
        the same number of columns, types of the same kind, and (FULL
        metadata) the same names. Each disagreement is warned about once."""
        found = self.table(table_map.database, table_map.table)
        if found is None:
            return None
        problem = disagreement(found, table_map.columns)
        if problem is None:
            return found
        mark = (table_map.database, table_map.table, problem)
        if mark not in self._checked:
            self._checked.add(mark)
            header = table_map.header
            self._warn((os.path.basename(header.file), header.pos),
                       f"{table_map.database}.{table_map.table}: the schema history's "
                       f"definition does not match the table map ({problem}); positional "
                       "names are used")
        return None

    def rename_rows(self, database: str | None, table: str, rows: list) -> list:
        """[(before, after), ...] with `@N` keys replaced by column names."""
        names = self.columns(database, table)
        if not names:
            return rows

        def rename(image):
            if image is None:
                return None
            out = {}
            for key, value in image.items():
                if isinstance(key, str) and key.startswith("@") and key[1:].isdigit():
                    index = int(key[1:]) - 1
                    key = names[index] if 0 <= index < len(names) else key
                out[key] = value
            return out
        return [(rename(before), rename(after)) for before, after in rows]

    # -- persistence ----------------------------------------------------------------------
    def to_json(self) -> dict:
        return {"format": FORMAT, "version": 1, "tables": [
            {"database": db, "table": name, "versions": [_version_json(v) for v in versions]}
            for (db, name), versions in self.versions.items()]}

    def save(self, path: str) -> None:
        """Written whole to a temporary file, then renamed: a killed run leaves
        the previous history, never half of a new one."""
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(self.to_json(), handle, indent=1)
            handle.write("\n")
        os.replace(tmp, path)

    @classmethod
    def from_json(cls, data: dict) -> Schema:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a binlake schema history (format {data.get('format')!r})")
        schema = cls()
        for entry in data["tables"]:
            key = (entry["database"], entry["table"])
            for v in entry["versions"]:
                definition = None
                if v.get("columns") is not None:
                    definition = TableDef(
                        tuple(ColumnSpec(**{**c, "args": tuple(c.get("args", ()))})
                              for c in v["columns"]),
                        tuple(v.get("primary_key", ())))
                schema._set(key, (v["file"], v["pos"]), v["statement"], definition,
                            v.get("dropped", False))
        return schema


def _version_json(version: Version) -> dict:
    file, pos = version.position
    out = {"file": file, "pos": pos, "statement": version.statement}
    if version.dropped:
        out["dropped"] = True
    if version.definition is not None:
        out["columns"] = [asdict(c) for c in version.definition.columns]
        out["primary_key"] = list(version.definition.primary_key)
    return out


def _name(key: tuple) -> str:
    return f"{key[0]}.{key[1]}" if key[0] else key[1]


# -- agreement with table maps -----------------------------------------------------------

def _kinds() -> dict:
    from .constants import ColumnType as T
    integer = {"TINYINT": T.MYSQL_TYPE_TINY, "SMALLINT": T.MYSQL_TYPE_SHORT,
               "MEDIUMINT": T.MYSQL_TYPE_INT24, "INT": T.MYSQL_TYPE_LONG,
               "BIGINT": T.MYSQL_TYPE_LONGLONG}
    kinds = {name: {code} for name, code in integer.items()}
    text = {T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
            T.MYSQL_TYPE_LONG_BLOB}
    strings = {T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_VARCHAR}
    kinds.update({
        "FLOAT": {T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE},  # FLOAT(p>24) is a DOUBLE
        "DOUBLE": {T.MYSQL_TYPE_DOUBLE},
        "DECIMAL": {T.MYSQL_TYPE_NEWDECIMAL, T.MYSQL_TYPE_DECIMAL},
        "DATE": {T.MYSQL_TYPE_DATE, T.MYSQL_TYPE_NEWDATE},
        "TIME": {T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_TIME2},
        "DATETIME": {T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_DATETIME2},
        "TIMESTAMP": {T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_TIMESTAMP2},
        "YEAR": {T.MYSQL_TYPE_YEAR},
        "BIT": {T.MYSQL_TYPE_BIT},
        "CHAR": strings, "VARCHAR": strings, "BINARY": strings, "VARBINARY": strings,
        "ENUM": {T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_STRING},
        "SET": {T.MYSQL_TYPE_SET, T.MYSQL_TYPE_STRING},
        "JSON": {T.MYSQL_TYPE_JSON} | text,  # MariaDB's JSON is LONGTEXT
        "INET4": {T.MYSQL_TYPE_STRING}, "INET6": {T.MYSQL_TYPE_STRING},
        "UUID": {T.MYSQL_TYPE_STRING},
    })
    for name in ("TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "TINYBLOB", "BLOB",
                 "MEDIUMBLOB", "LONGBLOB"):
        kinds[name] = text
    for name in ("GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING",
                 "MULTIPOLYGON", "GEOMETRYCOLLECTION", "GEOMCOLLECTION"):
        kinds[name] = {T.MYSQL_TYPE_GEOMETRY}
    return kinds


_KINDS: dict | None = None


def disagreement(definition: TableDef, columns) -> str | None:
    """Why a definition cannot describe these table-map columns, or None."""
    global _KINDS
    if _KINDS is None:
        _KINDS = _kinds()
    if len(definition.columns) != len(columns):
        return f"{len(definition.columns)} columns against {len(columns)}"
    for spec, column in zip(definition.columns, columns):
        allowed = _KINDS.get(spec.type)
        if allowed is not None and column.real_type not in allowed:
            return f"column {spec.name} is {spec.type}, the table map has type {column.real_type}"
        if column.name is not None and column.name.lower() != spec.name.lower():
            return f"column {spec.name} is named {column.name} in the table map"
    return None


# -- loading -----------------------------------------------------------------------------

def load_schema(path_or_text) -> Schema:
    """A Schema from a file (a saved history, or SQL such as `mysqldump
    --no-data` prints) or from SQL text."""
    text = path_or_text
    if isinstance(path_or_text, os.PathLike) or (
            isinstance(path_or_text, str) and "\n" not in path_or_text
            and "(" not in path_or_text and os.path.exists(path_or_text)):
        with open(path_or_text, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    if text.lstrip().startswith("{"):
        return Schema.from_json(json.loads(text))
    return parse_schema(text)


def parse_schema(text: str) -> Schema:
    """Seeds from SQL text: its statements run in order before the first binlog."""
    schema = Schema()
    schema.run(text, None, SEED)
    return schema
