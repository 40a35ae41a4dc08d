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
from dataclasses import dataclass, fields, replace

from binlake.charsets import collation_of
from binlake.constants import ColumnType as T
from binlake.schema.ddl import (TEXT_TYPES, AlterTable, ColumnSpec, CreateDatabase, CreateTable, DdlError,
                  DropDatabase, DropTables, RenameTables, TableDef, TruncateTable, UseDatabase,
                  altered_with_origins, might_change_tables, parse_script)

#: MariaDB 5.3-10.0 logs TIME(n), DATETIME(n), TIMESTAMP(n) with these types too.
_CLASSIC_TEMPORALS = (T.MYSQL_TYPE_TIME, T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_TIMESTAMP)

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
    #: ALTER TABLE: per column of `definition`, its name in the version before
    #: (None: added by this statement); other statements keep every column
    origins: tuple | None = None
    #: RENAME TABLE, ALTER TABLE ... RENAME: the (database, table) it had before
    renamed_from: tuple | None = None
    timestamp: int | None = None   #: of the statement's event (None: a seed)


@dataclass(frozen=True)
class Stretch:
    """Positions between two statements over which a table's row changes
    are part of the table as it is at a later point (`Schema.lineage`)."""
    key: tuple                 #: (database, table) the changes carry there
    start: tuple               #: the changes after this position (SEED: all before `end`)
    end: tuple | None          #: ... and before this one (None: up to the point)
    #: per column of the table at the point: its name in these changes, or
    #: None when it did not exist yet (then `defaults` has its value)
    sources: tuple | None      #: None: the columns are not known, keys stay as they are
    defaults: tuple = ()       #: per column: the DEFAULT it was added with (SQL text or None)
    definition: TableDef | None = None  #: the table's columns over these positions
    made_by: str = ""          #: the statement at `start` ("": none, the seed)


#: Statements after which a table has none of the rows it had before.
_FRESH_STARTS = ("CREATE TABLE", "TRUNCATE TABLE")
#: An ALTER after which the table may lack rows it had, with no row event
#: saying which: ALTER IGNORE adding a unique key keeps the first row of
#: each key value found twice (the server's scan order).
ALTER_IGNORE_UNIQUE = "ALTER IGNORE TABLE ... ADD UNIQUE"


def _alter_statement(op, before: TableDef | None, after: TableDef | None) -> str:
    """What a version made by the ALTER `op` says made it."""
    if op.ignore and before is not None and after is not None and (
            set(_unique_columns(after)) - set(_unique_columns(before))):
        return ALTER_IGNORE_UNIQUE
    return "ALTER TABLE"


def _unique_columns(definition: TableDef) -> list[tuple]:
    """The column lists of the table's primary and unique keys."""
    keys = [tuple(c.lower() for c in definition.primary_key)] if definition.primary_key else []
    return keys + [tuple(c.lower() for c in columns) for _name, columns, *_ in
                   definition.unique_keys]


class Schema:
    """Tables by (database, table), with their history."""

    def __init__(self):
        self.tables: dict[tuple, TableDef] = {}
        self.versions: dict[tuple, list[Version]] = {}
        self.warnings: list[str] = []
        self._checked: set = set()
        self._positions: set = set()  #: of the statements that made versions
        #: bumped by every new version: what was derived from the tables may be stale
        self.generation = 0
        self._names = None  #: ((generation, tables), lower-case name -> keys): `_named`
        self._timestamp: int | None = None  #: of the event being followed
        #: default character sets of the databases created in the stream
        self.database_charsets: dict[str, str | None] = {}
        self._text: tuple | None = None  #: (`state()`, its JSON text): `json_text`
        #: (the file, which file it was, `state()`) where a lake's history was
        #: read from (binlake.spark.state.store): unchanged, it is not written again
        self.read_from: tuple | None = None

    # -- following statements -------------------------------------------------------------
    def follow(self, event) -> None:
        """A QUERY event, in stream order: its DDL, if any, changes the tables."""
        header = event.header
        self._timestamp = header.timestamp
        try:
            self.apply(event.query, event.database or None,
                       (os.path.basename(header.file), header.pos))
        finally:
            self._timestamp = None

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
        if isinstance(op, CreateDatabase):
            self.database_charsets[op.database.lower()] = op.charset
        elif isinstance(op, CreateTable):
            key = self.key(op.database, op.table)
            if op.if_not_exists and key in self.tables:
                return
            definition = op.definition
            if definition is not None and definition.charset is None:
                # a table without its own default has its database's
                charset = self.database_charsets.get((key[0] or "").lower())
                definition = replace(definition, charset=charset)
            if op.like is not None:
                source = self.key(*op.like)
                definition = self.tables.get(source)
                if definition is None:
                    self._warn(position, f"CREATE TABLE {_name(key)} LIKE {_name(source)}: "
                               f"the columns of {_name(source)} are not known")
            elif definition is None:
                self._warn(position, f"CREATE TABLE {_name(key)} ... SELECT: its columns are "
                           "not in the statement (positional names until the next CREATE)")
            self._set(key, position, "CREATE TABLE", definition)
        elif isinstance(op, AlterTable):
            key = self.key(op.database, op.table)
            current = self.tables.get(key)
            definition = origins = None
            if current is not None:
                try:
                    definition, origins = altered_with_origins(current, op.actions)
                except DdlError as exc:
                    self._warn(position, f"ALTER TABLE {_name(key)}: {exc} (positional names "
                               "until the next CREATE)")
            renamed_from = None
            if op.rename_to is not None:
                self._set(key, position, "ALTER TABLE ... RENAME", None, dropped=True)
                key, renamed_from = self.key(*op.rename_to), key
            if current is not None or op.rename_to is not None:
                self._set(key, position, _alter_statement(op, current, definition),
                          definition, origins=origins, renamed_from=renamed_from)
        elif isinstance(op, RenameTables):
            for old, new in op.pairs:
                old_key, new_key = self.key(*old), self.key(*new)
                definition = self.tables.get(old_key)
                self._set(old_key, position, f"RENAME TABLE TO {_name(new_key)}", None,
                          dropped=True)
                self._set(new_key, position, f"RENAME TABLE FROM {_name(old_key)}", definition,
                          renamed_from=old_key)
        elif isinstance(op, DropTables):
            # Recorded for tables the history never saw too: table states need the drop.
            for table in op.tables:
                self._set(self.key(*table), position, "DROP TABLE", None, dropped=True)
        elif isinstance(op, TruncateTable):
            key = self.key(op.database, op.table)
            self._set(key, position, "TRUNCATE TABLE", self.tables.get(key))
        elif isinstance(op, DropDatabase):
            for key in [k for k in self.versions if (k[0] or "").lower() == op.database.lower()]:
                if key in self.tables or not self.versions[key][-1].dropped:
                    self._set(key, position, "DROP DATABASE", None, dropped=True)

    def _set(self, key: tuple, position: tuple, statement: str, definition: TableDef | None,
             dropped: bool = False, origins: tuple | None = None,
             renamed_from: tuple | None = None) -> None:
        self.versions.setdefault(key, []).append(Version(position, statement, definition,
                                                         dropped, origins, renamed_from,
                                                         self._timestamp))
        self.generation += 1
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
        keys = [self.key(*t) for t in exc.tables] or [
            key for key in self.tables
            if re.search(rf"(?<![\w$]){re.escape(key[1])}(?![\w$])", statement, re.IGNORECASE)]
        for key in keys:
            if key in self.tables:
                self._set(key, position, "unreadable DDL", None)

    def _warn(self, position: tuple, text: str) -> None:
        file, pos = position
        self.warnings.append(f"{file}: offset {pos}: {text}" if file else text)

    def key(self, database: str | None, table: str) -> tuple:
        """The key of an existing table (names compare case-insensitively, as
        with lower_case_table_names), else (database, table) as written."""
        key = (database, table)
        if key in self.versions:
            return key
        wanted = ((database or "").lower(), table.lower())
        unqualified = None
        for db, name in self.versions:
            if name.lower() == wanted[1]:
                if (db or "").lower() == wanted[0]:
                    return db, name
                if db is None:
                    unqualified = (db, name)
        # A seed that names no database (mysqldump of one database) is that database.
        return unqualified or key

    # -- positions ------------------------------------------------------------------------
    def at(self, position: tuple, table: str | None = None) -> Schema:
        """The tables as they were just before `position` (file name, offset);
        with `table`, only those of that name (any case, any database):
        enough to look one up, at a cost that does not grow with the others."""
        snapshot = Schema()
        snapshot.database_charsets = dict(self.database_charsets)
        keys = self.versions if table is None else self._named(table)
        for key in keys:
            versions = self.versions[key]
            kept = [v for v in versions if v.position < position]
            if kept:
                snapshot.versions[key] = kept
                if kept[-1].definition is not None:
                    snapshot.tables[key] = kept[-1].definition
        return snapshot

    def _named(self, table: str) -> list:
        """The keys of the tables named `table`, in any case, in their order."""
        if self._names is None or self._names[0] != (self.generation, len(self.versions)):
            index: dict[str, list] = {}
            for key in self.versions:
                index.setdefault(key[1].lower(), []).append(key)
            self._names = ((self.generation, len(self.versions)), index)
        return self._names[1].get(table.lower(), [])

    def rebased(self, position: tuple) -> Schema:
        """The tables as they were just before `position`, each one version
        at SEED: what a stream goes on with on another server (a failover),
        whose binlog positions do not continue this server's, so none of
        them may be compared with one of these."""
        now = self.at(position)
        rebased = Schema()
        rebased.database_charsets = dict(now.database_charsets)
        for key, versions in now.versions.items():
            last = versions[-1]
            if last.dropped:
                continue
            rebased.versions[key] = [replace(last, position=SEED, origins=None,
                                             renamed_from=None)]
            if last.definition is not None:
                rebased.tables[key] = last.definition
        return rebased

    def lineage(self, key: tuple, before=None) -> list[Stretch] | None:
        """Where the rows of table `key` come from, latest first, as of the
        point where `before(version)` stops being true (default: the end): renamed columns keep their values, dropped ones
        are gone, added ones take the DEFAULT they were added with; RENAME
        continues from the old name; CREATE and TRUNCATE start afresh. None:
        the table does not exist at `point`."""
        every = self.versions.get(key, ())
        versions = [v for v in every if before is None or before(v)]
        if versions and versions[-1].dropped:
            return None
        if not versions and every and (every[0].statement == "CREATE TABLE"
                                       or every[0].renamed_from is not None):
            return None  # made later
        final = versions[-1].definition if versions else None
        names = tuple(final.names) if final is not None else None
        defaults = [None] * len(names) if names is not None else []
        out, end = [], None
        while True:
            if not versions:
                out.append(Stretch(key, SEED, end, names, tuple(defaults)))
                return out
            version = versions[-1]
            out.append(Stretch(key, version.position, end, names, tuple(defaults),
                               version.definition, version.statement))
            if (version.statement in _FRESH_STARTS or version.dropped
                    or (version.definition is None and version.renamed_from is None)):
                return out
            if names is not None and version.origins is not None:
                specs = version.definition.columns
                previous = []
                for i, name in enumerate(names):
                    at = version.definition.index(name) if name is not None else None
                    origin = version.origins[at] if at is not None else None
                    if name is not None and origin is None:  # added here, with its default
                        defaults[i] = specs[at].default
                    previous.append(origin)
                names = tuple(previous)
            end = version.position
            if version.renamed_from is not None:
                key = version.renamed_from
                versions = [v for v in self.versions.get(key, ()) if v.position < end]
            else:
                versions = versions[:-1]

    def definition(self, key: tuple, before=None) -> TableDef | None:
        """The table's columns where `before(version)` stops being true
        (default: now); None when unknown or dropped."""
        versions = [v for v in self.versions.get(key, ()) if before is None or before(v)]
        return versions[-1].definition if versions else None

    # -- answers --------------------------------------------------------------------------
    def table(self, database: str | None, table: str) -> TableDef | None:
        found = self.tables.get((database, table))
        if found is not None:
            return found
        found = self.tables.get((None, table))
        if found is not None:
            return found
        key = self.key(database, table)
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

    def annotate(self, table_map):
        """The table map with what an agreeing definition adds to it: names
        (when the binlog has none), UNSIGNED (when it has no optional
        metadata), the key the server finds rows by (`TableDef.row_key`) where
        the map names none, and the precision of MariaDB 5.3-10.0
        TIME/DATETIME/TIMESTAMP(n), which is logged as the classic type with
        no metadata (read/values.py reads meta n of those types as that format).
        The same table map, when the history adds nothing."""
        memo = table_map.cache.get("schema")
        if memo is None or memo[0] is not self or memo[1] != self.generation:
            memo = table_map.cache["schema"] = (self, self.generation,
                                                self._annotations(table_map))
        annotated = memo[2]
        if annotated is None:
            return table_map
        columns, primary, cache = annotated
        return replace(table_map, columns=columns, primary_key=primary, cache=cache)

    def _annotations(self, table_map):
        definition = self.for_table_map(table_map)
        if definition is None:
            return None
        # the key the server finds rows by, where the map does not name it
        # (binlog_row_metadata below FULL): a promoted UNIQUE key too
        primary = table_map.primary_key or tuple(
            (i, 0) for i in (definition.index(name) for name in definition.row_key)
            if i is not None)
        keys = {i for i, _ in primary}
        signedness = bool(table_map.optional_metadata)
        columns = []
        for column, spec in zip(table_map.columns, definition.columns):
            facts = {}
            if column.name is None:
                facts["name"] = spec.name
            if not signedness and spec.unsigned and column.is_numeric:
                facts["unsigned"] = True
            if column.type in _CLASSIC_TEMPORALS and column.meta == 0 and spec.fsp:
                facts["meta"] = spec.fsp
            # BINARY, VARBINARY and BLOB have no charset; the table's is for text;
            # MariaDB's JSON is LONGTEXT CHARACTER SET utf8mb4 (MySQL's is binary JSON)
            charset = spec.charset or (definition.charset if spec.type in TEXT_TYPES else
                                       "utf8mb4" if spec.type == "JSON" else None)
            if column.charset is None and charset and column.is_character:
                facts["charset"] = collation_of(charset)
            members = [str(a) for a in spec.args]
            if spec.type == "ENUM" and column.enum_values is None and column.is_enum_or_set:
                facts["enum_values"] = members
            elif spec.type == "SET" and column.set_values is None and column.is_enum_or_set:
                facts["set_values"] = members
            if column.index in keys and not column.primary_key:
                facts["primary_key"] = True
            columns.append(replace(column, **facts) if facts else column)
        columns = tuple(columns)
        if columns == table_map.columns and primary == table_map.primary_key:
            return None
        return columns, primary, {}  # a cache of its own: row plans follow the columns

    def copy(self) -> Schema:
        """A history of its own that starts as this one is: the versions are
        frozen, so only the containers a statement followed adds to are new."""
        twin = Schema()
        twin.tables, twin.warnings = dict(self.tables), list(self.warnings)
        twin.versions = {key: list(versions) for key, versions in self.versions.items()}
        twin._checked, twin._positions = set(self._checked), set(self._positions)
        twin.generation, twin._text = self.generation, self._text
        twin.database_charsets = dict(self.database_charsets)
        return twin

    # -- persistence ----------------------------------------------------------------------
    def state(self) -> tuple:
        """What the saved history is made of has changed when this has (a new
        version bumps `generation`; a CREATE DATABASE adds a character set)."""
        return self.generation, tuple(self.database_charsets.items())

    def json_text(self) -> str:
        """`to_json` as one line of text, made once per `state()`: a run of
        the follower hands it to its readers and saves it, and a history of
        1,000 tables takes some 40 ms to write out."""
        if self._text is None or self._text[0] != self.state():
            # One line, by json's C encoder (an indented dump is its Python one).
            self._text = (self.state(), json.dumps(self.to_json(), separators=(",", ":")))
        return self._text[1]

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": 1, "database_charsets": self.database_charsets,
                "tables": [{"database": db, "table": name,
                            "versions": [_version_json(v) for v in versions]}
                           for (db, name), versions in self.versions.items()]}

    def save(self, path: str) -> None:
        """Written whole, then renamed (`atomic.replaced`): a killed run leaves
        the previous history, never half of a new one."""
        from binlake.atomic import replaced
        with replaced(path, "w", encoding="utf-8") as handle:
            handle.write(self.json_text() + "\n")

    @classmethod
    def from_json(cls, data: dict) -> Schema:
        if data.get("format") != FORMAT:
            raise ValueError(f"not a binlake schema history (format {data.get('format')!r})")
        schema = cls()
        schema.database_charsets = dict(data.get("database_charsets", {}))
        for entry in data["tables"]:
            key = (entry["database"], entry["table"])
            for v in entry["versions"]:
                definition = None
                if v.get("columns") is not None:
                    definition = TableDef(
                        tuple(ColumnSpec(**{**c, "args": tuple(c.get("args", ()))})
                              for c in v["columns"]),
                        tuple(v.get("primary_key", ())), v.get("table_charset"),
                        tuple(_unique_key(key) for key in v.get("unique_keys", ())))
                origins, renamed_from = v.get("origins"), v.get("renamed_from")
                schema._timestamp = v.get("timestamp")
                schema._set(key, (v["file"], v["pos"]), v["statement"], definition,
                            v.get("dropped", False),
                            tuple(origins) if origins is not None else None,
                            tuple(renamed_from) if renamed_from is not None else None)
        schema._timestamp = None
        return schema


#: A column definition's fields, as its JSON names them.
_COLUMN_FIELDS = fields(ColumnSpec)


def _version_json(version: Version) -> dict:
    file, pos = version.position
    out = {"file": file, "pos": pos, "statement": version.statement}
    if version.dropped:
        out["dropped"] = True
    if version.definition is not None:
        out["columns"] = [{f.name: getattr(c, f.name) for f in _COLUMN_FIELDS}
                          for c in version.definition.columns]
        out["primary_key"] = list(version.definition.primary_key)
        if version.definition.unique_keys:
            # [name, columns], and the prefix lengths where a part has one
            out["unique_keys"] = [
                [name, list(columns)] + ([list(prefixes)] if any(prefixes) else [])
                for name, columns, prefixes in version.definition.unique_keys]
        if version.definition.charset is not None:
            out["table_charset"] = version.definition.charset
    if version.origins is not None:
        out["origins"] = list(version.origins)
    if version.renamed_from is not None:
        out["renamed_from"] = list(version.renamed_from)
    if version.timestamp is not None:
        out["timestamp"] = version.timestamp
    return out


def _unique_key(saved: list) -> tuple:
    """A UNIQUE key as `_version_json` saves it; histories saved before
    prefix lengths were kept have none, and their keys were taken whole."""
    name, columns, *prefixes = saved
    return name, tuple(columns), tuple(prefixes[0]) if prefixes else (0,) * len(columns)


def _name(key: tuple) -> str:
    return f"{key[0]}.{key[1]}" if key[0] else key[1]


# -- agreement with table maps -----------------------------------------------------------

def _kinds() -> dict:
    integer = {"TINYINT": T.MYSQL_TYPE_TINY, "SMALLINT": T.MYSQL_TYPE_SHORT,
               "MEDIUMINT": T.MYSQL_TYPE_INT24, "INT": T.MYSQL_TYPE_LONG,
               "BIGINT": T.MYSQL_TYPE_LONGLONG}
    kinds = {name: {code} for name, code in integer.items()}
    # MariaDB logs a column declared COMPRESSED as a type of its own
    text = {T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
            T.MYSQL_TYPE_LONG_BLOB, T.MYSQL_TYPE_BLOB_COMPRESSED}
    strings = {T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_VARCHAR,
               T.MYSQL_TYPE_VARCHAR_COMPRESSED}
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
