"""Column names and primary keys from CREATE TABLE statements (e.g. `mysqldump --no-data`).

Strategy: sqlglot parses the text statement by statement in the MySQL
dialect; `USE db` sets the database of unqualified tables. sqlglot gives up
on some server-specific column types (GEOMETRY, INET6, UUID, ...) and keeps
such a statement as an opaque command: its tokens (sqlglot's tokenizer, not
regular expressions) are then walked directly, top-level element by
element, which is all that is needed for names and the primary key.

Rule: a table the schema does not know returns None; the caller keeps `@N`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass
class TableSchema:
    columns: list[str]
    primary_key: list[str] = field(default_factory=list)
    unsigned: set = field(default_factory=set)   #: integer columns declared UNSIGNED
    fixed_binary: set = field(default_factory=set)  #: BINARY(n), INET6, UUID columns


_UNSIGNED_INTEGERS = {"UTINYINT", "USMALLINT", "UMEDIUMINT", "UINT", "UBIGINT"}
_FIXED_BINARY = {"BINARY", "INET6", "UUID"}

#: Words that start a key or constraint, not a column, in a CREATE TABLE element.
_NOT_COLUMNS = {"PRIMARY", "KEY", "INDEX", "UNIQUE", "CONSTRAINT", "FOREIGN", "FULLTEXT",
                "SPATIAL", "CHECK", "PERIOD", "VECTOR"}


class Schema:
    """Tables by (database, table); `None` database for unqualified ones seen before any USE."""

    def __init__(self):
        self.tables: dict[tuple, TableSchema] = {}

    def add(self, database: str | None, table: str, columns: list[str], primary_key=(),
            unsigned=(), fixed_binary=()) -> None:
        self.tables[(database, table)] = TableSchema(list(columns), list(primary_key), set(unsigned),
                                                     set(fixed_binary))

    def _find(self, database: str | None, table: str) -> TableSchema | None:
        found = self.tables.get((database, table))
        if found is not None:
            return found
        found = self.tables.get((None, table))
        if found is not None:
            return found
        # Table names compare case-insensitively on some servers (lower_case_table_names).
        wanted = ((database or "").lower(), table.lower())
        for (db, name), schema in self.tables.items():
            if name.lower() == wanted[1] and (db is None or db.lower() == wanted[0]):
                return schema
        return None

    def columns(self, database: str | None, table: str) -> list[str] | None:
        found = self._find(database, table)
        return list(found.columns) if found else None

    def primary_key(self, database: str | None, table: str) -> list[str] | None:
        found = self._find(database, table)
        return list(found.primary_key) if found else None

    def unsigned_columns(self, database: str | None, table: str) -> set | None:
        """Integer columns declared UNSIGNED (binlogs without metadata do not say)."""
        found = self._find(database, table)
        return set(found.unsigned) if found else None

    def fixed_binary_columns(self, database: str | None, table: str) -> set | None:
        """Fixed-length binary columns (BINARY(n), INET6, UUID), whose trailing zero
        bytes binlogs drop; binlogs without metadata cannot tell them from CHAR."""
        found = self._find(database, table)
        return set(found.fixed_binary) if found else None

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


def load_schema(path_or_text) -> Schema:
    """A Schema from a file path or from SQL text (CREATE TABLE statements)."""
    text = path_or_text
    if isinstance(path_or_text, os.PathLike) or (
            isinstance(path_or_text, str) and "\n" not in path_or_text
            and "(" not in path_or_text and os.path.exists(path_or_text)):
        with open(path_or_text, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    return parse_schema(text)


def parse_schema(text: str) -> Schema:
    try:
        import sqlglot
        from sqlglot import exp
        from sqlglot.errors import ErrorLevel
    except ImportError:  # pragma: no cover - sqlglot is the `sql` extra
        raise RuntimeError("reading --schema needs sqlglot: pip install 'binlake[sql]'") from None
    import logging
    schema = Schema()
    database = None
    # sqlglot warns on each statement it keeps as a command; those are handled below.
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        statements = sqlglot.parse(text, read="mysql", error_level=ErrorLevel.IGNORE)
    finally:
        logger.setLevel(level)
    for statement in statements:
        if statement is None:
            continue
        if isinstance(statement, exp.Use):
            database = statement.this.name if statement.this else None
        elif isinstance(statement, exp.Create) and (statement.kind or "").upper() == "TABLE":
            _add_parsed(schema, statement, database)
        elif isinstance(statement, exp.Command) and statement.this.upper() == "CREATE":
            _add_from_tokens(schema, "CREATE " + statement.expression.sql()
                             if isinstance(statement.expression, exp.Expression)
                             else "CREATE " + str(statement.expression), database)
    return schema


def _add_parsed(schema: Schema, statement, database: str | None) -> None:
    from sqlglot import exp
    target = statement.this
    if not isinstance(target, exp.Schema):  # CREATE TABLE ... LIKE / AS SELECT
        return
    table = target.this
    columns, primary, unsigned, fixed_binary = [], [], [], []
    for element in target.expressions:
        if isinstance(element, exp.ColumnDef):
            columns.append(element.name)
            kind = element.kind.this if isinstance(element.kind, exp.DataType) else None
            if kind is not None and kind.name in _UNSIGNED_INTEGERS:
                unsigned.append(element.name)
            if kind is not None and kind.name in _FIXED_BINARY:
                fixed_binary.append(element.name)
            if any(isinstance(c.kind, exp.PrimaryKeyColumnConstraint) for c in element.constraints):
                primary = [element.name]
        else:
            key = element if isinstance(element, exp.PrimaryKey) else element.find(exp.PrimaryKey)
            if key is not None:
                primary = [_key_part_name(e) for e in key.expressions]
    schema.add(table.db or database, table.name, columns, primary, unsigned, fixed_binary)


def _key_part_name(expression) -> str:
    """A primary key part: `col`, `col(10)` or `col DESC` -> col."""
    from sqlglot import exp
    if isinstance(expression, exp.Identifier):
        return expression.name
    column = expression.find(exp.Identifier)
    return column.name if column is not None else expression.name


def _add_from_tokens(schema: Schema, text: str, database: str | None) -> None:
    """CREATE TABLE [IF NOT EXISTS] name (element, ...) from sqlglot's tokens."""
    from sqlglot.dialects.mysql import MySQL
    from sqlglot.tokens import TokenType
    words = MySQL().tokenize(text)
    i = 0
    # CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name
    while i < len(words) and words[i].text.upper() != "TABLE":
        i += 1
    i += 1
    if i + 2 < len(words) and words[i].text.upper() == "IF":
        i += 3
    name_parts = []
    while i < len(words) and words[i].token_type != TokenType.L_PAREN:
        if words[i].token_type != TokenType.DOT:
            name_parts.append(words[i].text)
        i += 1
    if not name_parts or i >= len(words):
        return
    table = name_parts[-1]
    db = name_parts[-2] if len(name_parts) > 1 else database
    depth, element, elements = 0, [], []
    for token in words[i + 1:]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            if depth == 0:
                break
            depth -= 1
        elif token.token_type == TokenType.COMMA and depth == 0:
            elements.append(element)
            element = []
            continue
        element.append(token)
    if element:
        elements.append(element)
    columns, primary, unsigned, fixed_binary = [], [], [], []
    key_starts = {TokenType.PRIMARY_KEY, TokenType.KEY, TokenType.INDEX, TokenType.UNIQUE,
                  TokenType.CONSTRAINT, TokenType.FOREIGN_KEY}
    for element in elements:
        kinds = [t.token_type for t in element]
        first = element[0]
        is_column = first.token_type not in key_starts and first.text.upper() not in _NOT_COLUMNS \
            or first.token_type == TokenType.IDENTIFIER
        if is_column:
            columns.append(first.text)
            if any(t.text.upper() == "UNSIGNED" for t in element):
                unsigned.append(first.text)
            if len(element) > 1 and element[1].text.upper() in _FIXED_BINARY:
                fixed_binary.append(first.text)
            if TokenType.PRIMARY_KEY in kinds:
                primary = [first.text]
        elif TokenType.PRIMARY_KEY in kinds:
            primary = _paren_names(element)
    schema.add(db, table, columns, primary, unsigned, fixed_binary)


def _paren_names(element) -> list[str]:
    """Column names inside the first parentheses: (`a`, `b`(10) DESC) -> [a, b]."""
    from sqlglot.tokens import TokenType
    names, depth, expect_name = [], 0, False
    for token in element:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            expect_name = depth == 1
            continue
        if token.token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                break
            continue
        if depth == 1:
            if token.token_type == TokenType.COMMA:
                expect_name = True
            elif expect_name:
                names.append(token.text)
                expect_name = False
    return names
