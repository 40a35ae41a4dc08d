"""DDL statements as schema operations: what CREATE, ALTER, RENAME, DROP and
TRUNCATE TABLE (and CREATE/DROP DATABASE, USE) do to table definitions.

Strategy: sqlglot's MySQL tokenizer reads the statement (quoting, comments,
`/*!NNNNN ... */` version comments, strings); the few statement shapes that
change a table's columns are then walked token by token, top-level element
by element. sqlglot's parser is not used for the statement itself: it keeps
many MySQL and MariaDB forms (ALTER with several specifications, `ADD (a,
b)`, RENAME TABLE, server-specific types) as opaque commands, and a schema
history needs every one of them. Index, partition, constraint and table
option clauses are recognised and ignored.

Rule: a statement that changes tables but cannot be read raises `DdlError`;
the caller warns with the statement's position and forgets what it can no
longer trust. Statements that are not DDL give no operations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import NamedTuple


class DdlError(ValueError):
    """A table-changing statement binlake cannot read; `tables`: the
    (database, table) it was seen to change, when the error came after its name."""

    tables: tuple = ()


@dataclass(frozen=True)
class ColumnSpec:
    """One column as its definition declares it."""
    name: str
    type: str                      #: the base type, upper case, aliases resolved: INT, VARCHAR, ...
    args: tuple = ()               #: (length,), (precision, scale), ENUM/SET values
    unsigned: bool = False
    charset: str | None = None     #: CHARACTER SET as declared (None: the table's default)
    nullable: bool = True
    default: str | None = None     #: the DEFAULT as SQL text ("NULL", "'x'", "5", ...); None: none

    @property
    def fsp(self) -> int:
        """Fractional-second digits of TIME, DATETIME and TIMESTAMP."""
        if self.type in ("TIME", "DATETIME", "TIMESTAMP") and self.args:
            return int(self.args[0])
        return 0

    @property
    def fixed_binary(self) -> bool:
        """BINARY(n), INET6, UUID: binlogs drop their trailing zero bytes."""
        return self.type in ("BINARY", "INET6", "UUID")

    def sql(self) -> str:
        """The definition as DDL text (what `binlake schema` prints)."""
        text = f"`{self.name}` {self.type}"
        if self.args:
            text += "(" + ",".join(_sql_arg(a) for a in self.args) + ")"
        if self.unsigned:
            text += " UNSIGNED"
        if self.charset:
            text += f" CHARACTER SET {self.charset}"
        if not self.nullable:
            text += " NOT NULL"
        if self.default is not None:
            text += f" DEFAULT {self.default}"
        return text


def _sql_arg(arg) -> str:
    return "'" + arg.replace("'", "''") + "'" if isinstance(arg, str) else str(arg)


@dataclass(frozen=True)
class TableDef:
    """A table's columns and keys at one point of the history."""
    columns: tuple[ColumnSpec, ...]
    primary_key: tuple[str, ...] = ()
    charset: str | None = None     #: the table's default character set, when known
    #: UNIQUE keys, (name, (column, ...), (prefix length, ...)), in the order
    #: they were declared; a prefix length of 0: the whole column
    unique_keys: tuple = ()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def row_key(self) -> tuple[str, ...]:
        """The columns the server finds a row by, as it keys the table: the
        primary key, else InnoDB's clustered index, the first UNIQUE key
        whose columns are all NOT NULL and whole (the server takes it as the
        primary key, table.cc: a row image under binlog_row_image=MINIMAL
        names the row by it, a FULL-metadata table map calls it the primary
        key), else none. A key over a prefix of a column is passed over: it
        does not identify a row by the column's value."""
        if self.primary_key:
            return self.primary_key
        for _name, columns, prefixes in self.unique_keys:
            found = [self.index(c) for c in columns]
            if found and all(i is not None and not self.columns[i].nullable
                             and not _partial(self.columns[i], prefix)
                             for i, prefix in zip(found, prefixes)):
                return tuple(self.columns[i].name for i in found)
        return ()

    def index(self, name: str) -> int | None:
        """Column names compare case-insensitively, as the server compares them."""
        lowered = name.lower()
        return next((i for i, c in enumerate(self.columns) if c.name.lower() == lowered), None)


def _partial(column: ColumnSpec, prefix: int) -> bool:
    """Whether a key part of `prefix` characters (0: none) holds less than
    the column: any prefix of a TEXT or BLOB does; one of a CHAR, VARCHAR,
    BINARY or VARBINARY does when shorter than the column (the server keeps
    a prefix as long as the column, or longer after a MODIFY shortened it,
    as the whole column); other types keep no prefix."""
    if not prefix:
        return False
    if column.type.endswith(("TEXT", "BLOB")):
        return True
    if column.type in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return prefix < (int(column.args[0]) if column.args else 1)
    return False


# -- operations --------------------------------------------------------------------------

@dataclass(frozen=True)
class CreateTable:
    database: str | None
    table: str
    definition: TableDef | None    #: None: the columns are not in the statement (AS SELECT)
    if_not_exists: bool = False
    like: tuple | None = None      #: (database, table) of CREATE TABLE ... LIKE


@dataclass(frozen=True)
class AlterTable:
    database: str | None
    table: str
    actions: tuple                 #: of the action tuples below, in statement order
    rename_to: tuple | None = None  #: (database, table)
    #: ALTER IGNORE: a new unique key deletes the rows it finds twice, but
    #: the first, without row events
    ignore: bool = False


@dataclass(frozen=True)
class RenameTables:
    pairs: tuple                   #: ((db, table), (db, table)), ...


@dataclass(frozen=True)
class DropTables:
    tables: tuple                  #: (db, table), ...


@dataclass(frozen=True)
class TruncateTable:
    database: str | None
    table: str


@dataclass(frozen=True)
class CreateDatabase:
    database: str
    charset: str | None            #: its default character set, when the statement says


@dataclass(frozen=True)
class DropDatabase:
    database: str


@dataclass(frozen=True)
class UseDatabase:
    database: str


# ALTER TABLE actions: ("add", ColumnSpec, place, if_not_exists), ("drop", name,
# if_exists), ("change", old name, ColumnSpec, place, if_exists), ("rename", old, new),
# ("default", name, text or None), ("primary", names or ()), ("charset", charset);
# ("unique", name or None, names, prefix lengths), ("drop_index", name),
# ("rename_index", old, new);
# place: None, ("first",), ("after", name).


def parse(statement: str, database: str | None = None) -> list:
    """The operations of one statement (several for DROP TABLE a, b); [] when
    it changes no table. `database`: the statement's default database."""
    operations = []
    for found, error in parse_script(statement, database):
        if error is not None:
            raise error
        operations.extend(found)
    return operations


def parse_script(text: str, database: str | None = None):
    """(operations, None) or ([], DdlError) for each statement of a script,
    in order; a USE changes the default database of the statements after it."""
    try:
        statements = _statements(text)
    except DdlError as exc:
        yield [], exc
        return
    for words in statements:
        try:
            operations = _parse(_Words(words), database)
        except DdlError as exc:
            yield [], exc
            continue
        for operation in operations:
            if isinstance(operation, UseDatabase):
                database = operation.database
        yield operations, None


def _parse(head: _Words, database) -> list:
    first = head.upper()
    if first == "USE" and len(head.tokens) >= 2:
        return [UseDatabase(head.tokens[1].text)]
    if first == "CREATE":
        return _create(head, database)
    if first == "ALTER":
        return _alter(head, database)
    if first == "RENAME" and head.upper(1) in ("TABLE", "TABLES"):
        return _rename(head, database)
    if first == "DROP":
        return _drop(head, database)
    if first == "TRUNCATE":
        head.next()
        head.accept("TABLE")
        db, table = head.table_name(database)
        return [TruncateTable(db, table)]
    return []


class _Token(NamedTuple):
    text: str
    kind: str  #: "word", "ident" (a `quoted` name), "string", or "literal" (x'..', b'..')


_STRING_KINDS = {"STRING": "string", "NATIONAL_STRING": "string", "IDENTIFIER": "ident",
                 "HEX_STRING": "literal", "BIT_STRING": "literal"}


def _statements(text: str) -> list[list[_Token]]:
    """The tokens of each statement; keywords sqlglot joins (PRIMARY KEY,
    DOUBLE PRECISION) come apart, and a command it keeps whole (RENAME ...)
    is read on."""
    from sqlglot.dialects.mysql import MySQL
    from sqlglot.errors import TokenError
    try:
        raw = MySQL().tokenize(_run_version_comments(text))
    except TokenError as exc:
        if might_change_tables(text):
            raise DdlError(f"cannot tokenize: {exc}") from None
        return []
    statements, out = [], []
    for token in raw:
        kind = _STRING_KINDS.get(token.token_type.name, "word")
        if token.token_type.name == "SEMICOLON":
            if out:
                statements.append(out)
            out = []
        elif kind == "string" and len(out) == 1 and out[0].text.upper() == "RENAME":
            out.extend(word for words in _statements(token.text) for word in words)
        elif kind == "literal":
            prefix = "x" if token.token_type.name == "HEX_STRING" else "b"
            out.append(_Token(f"{prefix}'{token.text}'", kind))
        elif kind == "word" and " " in token.text:
            out.extend(_Token(word, kind) for word in token.text.split())
        else:
            out.append(_Token(token.text, kind))
    if out:
        statements.append(out)
    return statements


_FIRST_WORD = re.compile(
    r"\s*(?:(?:/\*(?!M?!).*?\*/|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$))\s*)*(?:/\*M?!\d*\s*)?(\w*)",
    re.DOTALL)
_TABLE_VERBS = {"CREATE", "ALTER", "RENAME", "DROP", "TRUNCATE", "USE"}
#: MySQL's /*!NNNNN text */ and MariaDB's /*M!NNNNNN text */: the server runs
#: the text (every server binlake reads is new enough), the tokenizer would drop it.
_VERSION_COMMENT_START = re.compile(r"/\*M?!(\d*)")
#: ... except mariadb-dump's `/*M!999999\- enable the sandbox mode */`: a
#: version no server reaches, a command for the mariadb client only.
_NEVER = 999999


def _run_version_comments(text: str) -> str:
    """The statement with each version comment replaced by its text (or by
    nothing, for _NEVER). One pass: a start whose comment never ends means
    no later one ends either (a regex's lazy `.*?` would try again from
    every start, quadratic in a statement of many unterminated `/*!`)."""
    out, pos = [], 0
    while (start := _VERSION_COMMENT_START.search(text, pos)) is not None:
        end = text.find("*/", start.end())
        if end < 0:
            break
        version = start.group(1)
        never = version and (len(version) > len(str(_NEVER)) or int(version) >= _NEVER)
        out.append(text[pos:start.start()])
        out.append(" " if never else f" {text[start.end():end]} ")
        pos = end + 2
    out.append(text[pos:])
    return "".join(out)


def might_change_tables(statement: str) -> bool:
    """A quick look at the first word: most statements (BEGIN, INSERT, ...)
    need no tokenizing."""
    match = _FIRST_WORD.match(statement)
    return match is not None and match.group(1).upper() in _TABLE_VERBS


class _Words:
    """A cursor over a statement's tokens."""

    def __init__(self, tokens: list):
        self.tokens = tokens
        self.i = 0

    def more(self) -> bool:
        return self.i < len(self.tokens)

    def upper(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.tokens[j].text.upper() if j < len(self.tokens) else ""

    def is_string(self, ahead: int = 0) -> bool:
        j = self.i + ahead
        return j < len(self.tokens) and self.tokens[j].kind == "string"

    def next(self) -> str:
        if self.i >= len(self.tokens):
            raise DdlError("statement ends too early")
        self.i += 1
        return self.tokens[self.i - 1].text

    def accept(self, *words: str) -> bool:
        """Consume these words if they come next."""
        if all(self.upper(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def table_name(self, database: str | None) -> tuple:
        """[db.]table"""
        name = self.next()
        if self.upper() == ".":
            self.next()
            return name, self.next()
        return database, name

    def group(self) -> list:
        """The tokens inside the parentheses that come next (consumed)."""
        if self.upper() != "(":
            raise DdlError(f"expected '(' at {self.upper()!r}")
        depth, start = 0, self.i + 1
        while self.more():
            text = self.next()
            if text == "(":
                depth += 1
            elif text == ")":
                depth -= 1
                if depth == 0:
                    return self.tokens[start:self.i - 1]
        raise DdlError("unbalanced parentheses")


def _split(tokens: list) -> list[list]:
    """Top-level comma-separated elements."""
    elements, element, depth = [], [], 0
    for token in tokens:
        if token.text == "(":
            depth += 1
        elif token.text == ")":
            depth -= 1
        elif token.text == "," and depth == 0:
            elements.append(element)
            element = []
            continue
        element.append(token)
    if element:
        elements.append(element)
    return elements


# -- CREATE ------------------------------------------------------------------------------

def _create(words: _Words, database) -> list:
    words.next()
    words.accept("OR", "REPLACE")
    words.accept("TEMPORARY")
    if words.accept("DATABASE") or words.accept("SCHEMA"):
        words.accept("IF", "NOT", "EXISTS")
        name = words.next()
        return [CreateDatabase(name, _charset_option(words))]
    unique = words.accept("UNIQUE")
    if words.accept("INDEX") or words.accept("KEY"):
        return _create_index(words, database, unique)
    if not words.accept("TABLE"):
        return []  # CREATE INDEX, VIEW, PROCEDURE, ...: no table's columns change
    if_not_exists = words.accept("IF", "NOT", "EXISTS")
    db, table = words.table_name(database)
    try:
        return _create_body(words, db, table, if_not_exists, database)
    except DdlError as exc:
        exc.tables = ((db, table),)
        raise


def _create_index(words: _Words, database, unique: bool) -> list:
    """CREATE [UNIQUE] INDEX [IF NOT EXISTS] name [USING x] ON table (columns):
    a UNIQUE one is a key rows may be found by (TableDef.row_key)."""
    if not unique:
        return []
    words.accept("IF", "NOT", "EXISTS")
    name = words.next()
    while words.more() and words.upper() != "ON":
        words.next()
    if not words.accept("ON"):
        return []
    db, table = words.table_name(database)
    while words.more() and words.upper() != "(":
        words.next()
    if not words.more():
        return []
    return [AlterTable(db, table, (("unique", name, *_key_parts(words)),))]


def _create_body(words: _Words, db, table, if_not_exists: bool, database) -> list:
    if words.accept("LIKE"):
        return [CreateTable(db, table, None, if_not_exists, like=words.table_name(database))]
    if words.upper() == "(" and words.upper(1) == "LIKE":
        inner = _Words(words.group())
        inner.next()
        return [CreateTable(db, table, None, if_not_exists, like=inner.table_name(database))]
    if words.upper() != "(":
        # CREATE TABLE t [options] [AS] SELECT ...: the columns are the query's
        return [CreateTable(db, table, None, if_not_exists)]
    columns, primary, uniques = [], (), []
    body = words.group()
    charset = _charset_option(words)
    for element in _split(body):
        spec = _Words(element)
        if _is_key(spec):
            start = spec.i
            primary = _primary_key(spec) or primary
            spec.i = start
            unique = _unique_key(spec)
            if unique is not None:
                uniques.append(unique)
            continue
        column, key = _column(spec)
        columns.append(column)
        if key == "primary":
            primary = (column.name,)
        elif key == "unique":
            uniques.append((None, (column.name,), (0,)))
    if words.more() and _selects(words):
        # CREATE TABLE t (a INT) SELECT ...: the query's columns come first
        # unless they have these names; the binlog does not say which.
        return [CreateTable(db, table, None, if_not_exists)]
    return [CreateTable(db, table, TableDef(tuple(columns), primary, charset,
                                            _named_keys(uniques, primary)), if_not_exists)]


def _charset_option(words: _Words) -> str | None:
    """`[DEFAULT] CHARACTER SET [=] name` or `CHARSET` among the options that
    follow (looked at, not consumed)."""
    for i in range(words.i, len(words.tokens)):
        text = words.tokens[i].text.upper()
        if text in ("SELECT", "PARTITION"):
            return None
        at = i + 2 if text == "CHARACTER" else i + 1 if text == "CHARSET" else None
        if at is not None and (text == "CHARSET" or (at - 1 < len(words.tokens)
                                                     and words.tokens[at - 1].text.upper() == "SET")):
            if at < len(words.tokens) and words.tokens[at].text == "=":
                at += 1
            if at < len(words.tokens):
                return words.tokens[at].text.lower()
    return None


def _selects(words: _Words) -> bool:
    rest = {words.upper(k) for k in range(len(words.tokens) - words.i)}
    return "SELECT" in rest


_KEY_WORDS = {"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT",
              "SPATIAL", "CHECK", "PERIOD", "VECTOR"}


def _is_key(spec: _Words) -> bool:
    """Whether the element at the cursor is a key or constraint, not a column
    (a quoted name is always a column)."""
    if not spec.more():
        return False
    first = spec.tokens[spec.i]
    return first.kind != "ident" and first.text.upper() in _KEY_WORDS


def _primary_key(spec: _Words) -> tuple:
    """The columns of a [CONSTRAINT [name]] PRIMARY KEY [USING x] (cols) element; () otherwise."""
    while spec.more() and spec.upper() != "PRIMARY":
        if spec.upper() in ("KEY", "INDEX", "UNIQUE", "FOREIGN", "FULLTEXT", "SPATIAL", "CHECK"):
            return ()
        spec.next()
    if not spec.accept("PRIMARY", "KEY"):
        return ()
    while spec.more() and spec.upper() != "(":
        spec.next()
    return _key_parts(spec)[0]


def _unique_key(spec: _Words) -> tuple | None:
    """(name or None, columns, prefix lengths) of a [CONSTRAINT [name]]
    UNIQUE [KEY|INDEX] [name] [USING x] (cols) element; None for any other."""
    constraint = None
    if spec.accept("CONSTRAINT"):
        if spec.upper() != "UNIQUE":
            constraint = spec.next()
    if not spec.accept("UNIQUE"):
        return None
    spec.accept("KEY") or spec.accept("INDEX")
    name = None
    if spec.more() and spec.upper() not in ("(", "USING"):
        name = spec.next()
    while spec.more() and spec.upper() != "(":
        spec.next()
    if not spec.more():
        return None
    return (name or constraint, *_key_parts(spec))


def _named_keys(keys: list, primary: tuple = (), taken: tuple = ()) -> tuple:
    """Keys with the names the server gives the unnamed ones: the first
    column's, then _2, _3, ... while taken."""
    names = {n.lower() for n in taken} | ({"primary"} if primary else set())
    out = []
    for name, columns, prefixes in keys:
        if name is None:
            name, n = columns[0], 2
            while name.lower() in names:
                name, n = f"{columns[0]}_{n}", n + 1
        names.add(name.lower())
        out.append((name, tuple(columns), tuple(prefixes)))
    return tuple(out)


def _key_parts(spec: _Words) -> tuple[tuple, tuple]:
    """The (columns, prefix lengths) of the key part list that comes next."""
    parts = [_key_part(part) for part in _split(spec.group())]
    return tuple(name for name, _ in parts), tuple(prefix for _, prefix in parts)


def _key_part(part: list) -> tuple[str, int]:
    """`col` -> (col, 0); `col`(10) -> (col, 10); ASC or DESC after either changes nothing."""
    if len(part) >= 4 and part[1].text == "(" and part[2].text.isdigit():
        return part[0].text, int(part[2].text)
    return part[0].text, 0


_TYPE_ALIASES = {
    "INTEGER": "INT", "INT4": "INT", "INT1": "TINYINT", "INT2": "SMALLINT", "INT3": "MEDIUMINT",
    "MIDDLEINT": "MEDIUMINT", "INT8": "BIGINT", "BOOL": "TINYINT", "BOOLEAN": "TINYINT",
    "DEC": "DECIMAL", "NUMERIC": "DECIMAL", "FIXED": "DECIMAL", "REAL": "DOUBLE",
    "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE", "CHARACTER": "CHAR", "NCHAR": "CHAR",
    "NVARCHAR": "VARCHAR", "VARCHARACTER": "VARCHAR", "LONG": "MEDIUMTEXT",
}

def _column(spec: _Words) -> tuple[ColumnSpec, str | None]:
    """name type[(args)] attributes...; the cursor ends after the definition
    (before FIRST/AFTER). Also the key it declares inline: "primary",
    "unique" or None."""
    name = spec.next()
    if not spec.more():
        raise DdlError(f"column {name} has no type")
    kind = spec.next().upper()
    if kind == "NATIONAL":
        kind = spec.next().upper()
    if kind == "LONG" and spec.upper() in ("VARCHAR", "VARBINARY"):
        kind = "MEDIUMTEXT" if spec.next().upper() == "VARCHAR" else "MEDIUMBLOB"
    if kind in ("CHAR", "CHARACTER") and spec.accept("VARYING"):
        kind = "VARCHAR"
    if kind == "DOUBLE":
        spec.accept("PRECISION")
    unsigned = False
    if kind == "SERIAL":
        kind, unsigned = "BIGINT", True
    original = kind
    kind = _TYPE_ALIASES.get(kind, kind)
    args: tuple = ()
    if spec.upper() == "(":
        args = tuple(_type_arg(a) for a in _split(spec.group()))
        if kind not in ("ENUM", "SET") and not all(isinstance(a, int) for a in args):
            # lengths, precisions and fractional digits are integer literals
            raise DdlError(f"column `{name}`: {kind} takes numbers in parentheses, not {args!r}")
    if original in ("BOOL", "BOOLEAN"):
        args = (1,)
    charset, nullable, default, primary, unique = None, True, None, False, False
    while spec.more():
        word = spec.upper()
        if word in ("FIRST", "AFTER"):
            break
        spec.next()
        if word == "UNSIGNED":
            unsigned = True
        elif word in ("CHARACTER", "CHARSET"):
            spec.accept("SET")
            charset = spec.next().lower()
        elif word in ("ASCII",):
            charset = "latin1"
        elif word == "COMPRESSED":
            # MariaDB's column compression, COMPRESSED[=zlib]: the values are
            # the column's own, logged under a type of its own (140, 141)
            if spec.accept("="):
                spec.next()
        elif word == "UNICODE":
            charset = "ucs2"
        elif word == "NOT" and spec.accept("NULL"):
            nullable = False
        elif word == "DEFAULT":
            default = _default(spec)
        elif word == "PRIMARY" and spec.accept("KEY"):
            primary, nullable = True, False
        elif word == "UNIQUE":
            spec.accept("KEY")  # a unique key, not the primary one
            unique = True
        elif word == "KEY":
            # KEY alone in a column definition is PRIMARY KEY (the server's grammar)
            primary, nullable = True, False
        elif word == "(":
            spec.i -= 1
            spec.group()  # an expression (GENERATED ... AS (...), CHECK (...))
    key = "primary" if primary else "unique" if unique else None
    return ColumnSpec(name, kind, args, unsigned, charset, nullable, default), key


def _type_arg(tokens: list):
    text = "".join(t.text for t in tokens)
    if len(tokens) == 1 and tokens[0].kind == "string":
        return tokens[0].text
    try:
        return int(text)
    except ValueError:
        return text


def _default(spec: _Words) -> str:
    """The DEFAULT's SQL text: a literal, NULL, a function call or (expression)."""
    start = spec.i
    if spec.upper() != "(":
        if spec.upper() in ("-", "+") or (spec.upper().startswith("_") and spec.is_string(1)):
            spec.next()  # a sign, or a charset introducer: _utf8mb4'text'
        spec.next()
    if spec.upper() == "(":  # (expression), CURRENT_TIMESTAMP(3), NOW()
        spec.group()
    return _sql(spec.tokens[start:spec.i])


def _sql(tokens: list) -> str:
    """Tokens as SQL text again."""
    out = []
    for n, token in enumerate(tokens):
        if token.kind == "string":
            text = "'" + token.text.replace("'", "''") + "'"
        elif token.kind == "ident":
            text = "`" + token.text.replace("`", "``") + "`"
        else:
            text = token.text
        joined = n == 0 or out[-1] == "(" or text in (")", ",") or (
            text == "(" and tokens[n - 1].kind == "word") or (
            n == 1 and (out[0] in ("-", "+") or out[0].startswith("_")))
        out.append(text if joined else " " + text)
    return "".join(out)


# -- ALTER -------------------------------------------------------------------------------

def _alter(words: _Words, database) -> list:
    words.next()
    words.accept("ONLINE")
    ignore = bool(words.accept("IGNORE"))
    if not words.accept("TABLE"):
        return []  # ALTER DATABASE, VIEW, USER, ...
    words.accept("IF", "EXISTS")
    db, table = words.table_name(database)
    _skip_wait(words)
    actions, rename_to, after = [], None, []
    # a new table name without a database is in the statement's default database
    # (not the altered table's), as for RENAME TABLE
    names_in = database or db
    for element in _split(words.tokens[words.i:]):
        spec = _Words(element)
        try:
            action = _alter_action(spec, names_in)
        except DdlError as exc:
            exc.tables = ((db, table),)
            raise
        if action is None:
            continue
        if action[0] == "rename_table":
            rename_to = action[1]
        elif action[0] == "columns":
            actions.extend(action[1])
        elif action[0] == "partition_to_table":  # a new table, the altered one's columns
            after.append(CreateTable(*action[1], None, like=(db, table)))
        elif action[0] == "table_to_partition":  # the table becomes a partition: gone
            after.append(DropTables((action[1],)))
        else:
            actions.append(action)
    return [AlterTable(db, table, tuple(actions), rename_to, ignore), *after]


def _skip_wait(words: _Words) -> None:
    """MariaDB's lock timeout after a table name: WAIT n, NOWAIT."""
    if words.accept("WAIT"):
        words.next()
    else:
        words.accept("NOWAIT")


def _place(spec: _Words):
    if spec.accept("FIRST"):
        return ("first",)
    if spec.accept("AFTER"):
        return ("after", spec.next())
    return None


def _alter_action(spec: _Words, database):
    """One specification; `database`: the one of table names without one."""
    word = spec.upper()
    if word == "ADD":
        spec.next()
        if _is_key(spec):
            start = spec.i
            key = _primary_key(spec)  # ADD [CONSTRAINT x] PRIMARY KEY (...)
            if key:
                return ("primary", key)
            spec.i = start
            unique = _unique_key(spec)
            return ("unique", *unique) if unique else None  # other keys, checks: no change
        if spec.upper() == "PARTITION":
            return None
        spec.accept("COLUMN")
        # the server logs the statement even when it skips the column (it exists)
        if_not_exists = spec.accept("IF", "NOT", "EXISTS")
        if spec.upper() == "(":  # ADD (a INT, b INT)
            added = []
            for element in _split(spec.group()):
                inner = _Words(element)
                if _is_key(inner):
                    key = _primary_key(inner)
                    if key:
                        added.append(("primary", key))
                        continue
                    inner.i = 0
                    unique = _unique_key(inner)
                    if unique:
                        added.append(("unique", *unique))
                    continue
                column, key = _column(inner)
                added.append(("add", column, None, if_not_exists))
                added.extend(_inline_key(column, key))
            return ("columns", added)
        column, key = _column(spec)
        add = ("add", column, _place(spec), if_not_exists)
        return ("columns", [add, *_inline_key(column, key)]) if key else add
    if word == "DROP":
        spec.next()
        if spec.accept("PRIMARY", "KEY"):
            return ("primary", ())
        if spec.accept("INDEX") or spec.accept("KEY"):
            spec.accept("IF", "EXISTS")
            return ("drop_index", spec.next())
        if spec.upper() in ("FOREIGN", "CHECK", "CONSTRAINT", "PARTITION", "SYSTEM"):
            return None
        spec.accept("COLUMN")
        if_exists = spec.accept("IF", "EXISTS")
        return ("drop", spec.next(), if_exists)
    if word in ("CHANGE", "MODIFY"):
        spec.next()
        spec.accept("COLUMN")
        if_exists = spec.accept("IF", "EXISTS")
        old = spec.next() if word == "CHANGE" else spec.tokens[spec.i].text
        column, key = _column(spec)
        change = ("change", old, column, _place(spec), if_exists)
        return ("columns", [change, *_inline_key(column, key)]) if key else change
    if word == "RENAME":
        spec.next()
        if spec.accept("COLUMN"):
            old = spec.next()
            spec.accept("TO")
            return ("rename", old, spec.next())
        if spec.accept("INDEX") or spec.accept("KEY"):
            old = spec.next()
            spec.accept("TO")
            return ("rename_index", old, spec.next())
        spec.accept("TO") or spec.accept("AS")
        return ("rename_table", spec.table_name(database))
    if word == "ALTER":
        spec.next()
        spec.accept("COLUMN")
        name = spec.next()
        if spec.accept("SET", "DEFAULT"):
            return ("default", name, _default(spec))
        if spec.accept("DROP", "DEFAULT"):
            return ("default", name, None)
        return None  # SET VISIBLE / INVISIBLE, ALTER INDEX, ...
    if word == "CONVERT":
        spec.next()
        # MariaDB 10.7: CONVERT PARTITION p TO TABLE t, CONVERT TABLE t TO PARTITION p ...
        if spec.accept("PARTITION"):
            spec.next()
            spec.accept("TO")
            spec.accept("TABLE")
            return ("partition_to_table", spec.table_name(database))
        if spec.accept("TABLE"):
            return ("table_to_partition", spec.table_name(database))
        spec.accept("TO")
        spec.accept("CHARACTER", "SET") or spec.accept("CHARSET")
        return ("charset", spec.next().lower())
    if word in ("DEFAULT", "CHARACTER", "CHARSET"):
        charset = _charset_option(spec)
        if charset is not None:  # the default of columns added from now on
            return ("table_charset", charset)
    # table options, ALGORITHM=, LOCK=, ORDER BY, ENABLE/DISABLE KEYS, FORCE, partitioning
    return None


def _inline_key(column: ColumnSpec, key: str | None) -> list:
    """The action of a key a column definition declares inline."""
    if key == "primary":
        return [("primary", (column.name,))]
    if key == "unique":
        return [("unique", None, (column.name,), (0,))]
    return []


# -- RENAME, DROP ------------------------------------------------------------------------

def _rename(words: _Words, database) -> list:
    words.next()
    words.next()
    # IF EXISTS: the server skips a pair whose table is missing; the history
    # then has a version of the new name with unknown columns, which is harmless
    words.accept("IF", "EXISTS")
    pairs = []
    for element in _split(words.tokens[words.i:]):
        spec = _Words(element)
        old = spec.table_name(database)
        _skip_wait(spec)
        if not spec.accept("TO"):
            raise DdlError("RENAME TABLE without TO")
        pairs.append((old, spec.table_name(database)))
    return [RenameTables(tuple(pairs))]


def _drop(words: _Words, database) -> list:
    words.next()
    if words.accept("DATABASE") or words.accept("SCHEMA"):
        words.accept("IF", "EXISTS")
        return [DropDatabase(words.next())]
    words.accept("TEMPORARY")
    if words.accept("INDEX"):  # DROP INDEX [IF EXISTS] name ON table
        words.accept("IF", "EXISTS")
        name = words.next()
        if not words.accept("ON"):
            return []
        db, table = words.table_name(database)
        return [AlterTable(db, table, (("drop_index", name),))]
    if not words.accept("TABLE") and not words.accept("TABLES"):
        return []
    words.accept("IF", "EXISTS")
    names = []
    for element in _split(words.tokens[words.i:]):
        spec = _Words([t for t in element if t.text.upper() not in ("RESTRICT", "CASCADE")])
        if spec.more():
            names.append(spec.table_name(database))
    return [DropTables(tuple(names))]


# -- applying actions --------------------------------------------------------------------

def altered(definition: TableDef, actions) -> TableDef:
    """The table after an ALTER TABLE's actions (see `altered_with_origins`)."""
    return altered_with_origins(definition, actions)[0]


def altered_with_origins(definition: TableDef, actions) -> tuple[TableDef, tuple]:
    """The table after an ALTER TABLE's actions, and for each of its columns
    the name it had before (None: added), as the server applies them
    (sql_table.cc, mysql_prepare_alter_table): DROP, CHANGE, MODIFY, RENAME
    COLUMN and ALTER COLUMN name columns of the table as it was before the
    statement (so two columns can swap names); then new columns and moved
    ones (FIRST, AFTER) are placed in statement order, AFTER naming a column
    of the new table. Specifications the server skips under IF [NOT] EXISTS
    are skipped."""
    actions = _unskipped(definition, actions)
    # [name before the statement (lower case) or None for an added column, definition]
    entries = [[c.name.lower(), c] for c in definition.columns]

    def before(name: str) -> list:
        lowered = name.lower()
        for entry in entries:
            if entry[0] == lowered:
                return entry
        raise DdlError(f"no column {name}")

    key_before = [k.lower() for k in definition.primary_key]
    uniques = [[name, [c.lower() for c in columns], prefixes]
               for name, columns, prefixes in definition.unique_keys]
    added_uniques = []  # (name or None, names in the new table, prefixes)
    new_key = None
    charset = None
    table_charset = definition.charset
    placements = []  # (entry, place) of added and moved columns, in statement order
    for action in actions:
        kind = action[0]
        if kind == "add":
            placements.append(([None, action[1]], action[2]))
        elif kind == "drop":
            entries.remove(before(action[1]))
        elif kind == "change":
            entry = before(action[1])
            entry[1] = action[2]
            if action[3] is not None:
                placements.append((entry, action[3]))
        elif kind == "rename":
            entry = before(action[1])
            entry[1] = replace(entry[1], name=action[2])
        elif kind == "default":
            entry = before(action[1])
            entry[1] = replace(entry[1], default=action[2])
        elif kind == "primary":
            new_key = action[1]
        elif kind == "unique":
            added_uniques.append(action[1:])
        elif kind == "drop_index":
            uniques = [u for u in uniques if u[0].lower() != action[1].lower()]
        elif kind == "rename_index":
            for u in uniques:
                if u[0].lower() == action[1].lower():
                    u[0] = action[2]
        elif kind == "charset":
            charset = table_charset = action[1]
        elif kind == "table_charset":
            table_charset = action[1]

    def now(name: str) -> int:
        lowered = name.lower()
        for i, entry in enumerate(entries):
            if entry[1].name.lower() == lowered:
                return i
        raise DdlError(f"no column {name}")

    for entry, place in placements:
        # a moved column leaves its place first
        entries[:] = [e for e in entries if e is not entry]
        if place is None:
            entries.append(entry)
        elif place[0] == "first":
            entries.insert(0, entry)
        else:
            entries.insert(now(place[1]) + 1, entry)

    columns = [column for _, column in entries]
    if charset is not None:
        columns = [replace(c, charset=charset) if c.type in TEXT_TYPES else c
                   for c in columns]
    # keys' columns renamed as their columns were; dropped ones leave them
    names = {origin: column.name for origin, column in entries if origin is not None}
    if new_key is None:
        new_key = tuple(names[k] for k in key_before if k in names)
    kept = _kept_keys(uniques, names)
    unique_keys = kept + list(_named_keys(added_uniques, new_key, [key[0] for key in kept]))
    spelled = {c.name.lower(): c.name for c in definition.columns}
    origins = tuple(spelled[origin] if origin is not None else None for origin, _ in entries)
    return (TableDef(tuple(columns), tuple(new_key), table_charset, tuple(unique_keys)),
            origins)


def _kept_keys(uniques: list, names: dict) -> list:
    """UNIQUE keys (name, columns by their names before, prefixes) after an
    ALTER: their columns renamed as the columns were (`names`: name before,
    lower case -> name after); a dropped column leaves its key, a key left
    with no column is gone."""
    kept = []
    for name, columns, prefixes in uniques:
        parts = [(names[c], prefix) for c, prefix in zip(columns, prefixes) if c in names]
        if parts:
            kept.append((name, tuple(c for c, _ in parts), tuple(p for _, p in parts)))
    return kept


def _unskipped(definition: TableDef, actions) -> list:
    """The actions without those IF [NOT] EXISTS makes the server skip (sql_table.cc,
    handle_if_exists_options): ADD of a column the table has or the statement
    adds before; DROP, CHANGE, MODIFY of a column the table does not have, or
    a DROP the statement made before."""
    names = {c.name.lower() for c in definition.columns}
    kept, added, dropped = [], set(), set()
    for action in actions:
        kind = action[0]
        if kind == "add":
            name = action[1].name.lower()
            if action[3] and (name in names or name in added):
                continue
            added.add(name)
        elif kind == "drop":
            name = action[1].lower()
            if action[2] and (name not in names or name in dropped):
                continue
            dropped.add(name)
        elif kind == "change":
            if action[4] and action[1].lower() not in names:
                continue
            added.add(action[2].name.lower())
        kept.append(action)
    return kept


#: Types whose values are text in a character set (the others are bytes or numbers).
TEXT_TYPES = {"CHAR", "VARCHAR", "TINYTEXT", "TEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET"}
