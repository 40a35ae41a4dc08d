"""Plain SQL for every change in a binlog, or its rollback (flashback).

Strategy: events are walked once. Row events become one statement per row
(INSERT with named columns; UPDATE/DELETE ... WHERE <primary key, else every
column of the before image> LIMIT 1). Statement-format events are passed
through with their session context (the lines mysqlbinlog writes before a
statement, produced by text.TextPrinter in short form). Transactions keep
their boundaries. For `--flashback`, each row statement is inverted (INSERT
<-> DELETE, UPDATE with images swapped) and appended to a spool that lives
in memory up to a limit and on disk beyond; the spool is then read
backwards, transaction by transaction, so a large range never sits in
memory whole.

Rule: no data value can leave its literal. Strings containing a quote are
doubled; strings with a backslash or any control character, text that is not
valid in its character set, and all binary values are written as hex
literals (`X'..'`, with a charset introducer for text), so the output means
the same with or without NO_BACKSLASH_ESCAPES.
"""

from __future__ import annotations

import datetime as dt
import io
import math
import tempfile
from array import array
from dataclasses import dataclass
from decimal import Decimal

from binlake.charsets import codec_for
from binlake.collation_names import charset_name
from binlake.constants import ColumnType as T, NO_FOREIGN_KEY_CHECKS_F, RELAXED_UNIQUE_CHECKS_F
from binlake.read.events import (Event, FileBlockEvent, IntvarEvent, LoadEvent, MariadbGtidEvent,
                     QueryEvent, RandEvent, RowsEvent, TableMapEvent, UserVarEvent, XaPrepareEvent,
                     XidEvent)
from binlake.text.jsonable import time_text
from binlake.schema.history import Schema
from binlake.text.mysqlbinlog import TextOptions, TextPrinter
from binlake.read.values import MysqlTemporal, string_real_type

#: What the generated statements need from the session: no strict mode (zero
#: dates and out-of-range ENUMs are data here), explicit zeros in
#: AUTO_INCREMENT columns, TIMESTAMPs written in UTC, UTF-8 text.
SESSION_SETUP = ("SET NAMES utf8mb4",
                 "SET SESSION sql_mode='NO_AUTO_VALUE_ON_ZERO'",
                 "SET SESSION time_zone='+00:00'")


class SqlGenError(Exception):
    """A change that cannot be written as SQL (e.g. unknown column names)."""


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# -- values ---------------------------------------------------------------------------

def _is_plain_text(value: str) -> bool:
    """Text that can go between single quotes as is: no backslash (its meaning
    depends on NO_BACKSLASH_ESCAPES), no control characters, nothing that is
    not a real character (surrogates stand for undecodable bytes)."""
    for ch in value:
        code = ord(ch)
        if code < 0x20 or code == 0x7F or ch == "\\" or 0xD800 <= code <= 0xDFFF:
            return False
    return True


def _hex(data: bytes) -> str:
    return "X'" + data.hex().upper() + "'"


@dataclass(frozen=True)
class ColumnInfo:
    """What writing a literal for a column needs to know about it."""

    name: str | None
    type: int = T.MYSQL_TYPE_VARCHAR
    charset: int | None = None
    binary_length: int = 0       #: BINARY(n): the binlog drops trailing zero bytes; n restores them
    comparable: bool = True      #: usable in a WHERE clause (not JSON/GEOMETRY/VECTOR)
    unsigned_bits: int = 0       #: UNSIGNED integer of this width decoded as signed (no metadata)


_INTEGER_BITS = {T.MYSQL_TYPE_TINY: 8, T.MYSQL_TYPE_SHORT: 16, T.MYSQL_TYPE_INT24: 24,
                 T.MYSQL_TYPE_LONG: 32, T.MYSQL_TYPE_LONGLONG: 64}


def column_info(column, name: str | None, schema_unsigned: bool = False,
                schema_fixed_binary: bool = False) -> ColumnInfo:
    real = column.real_type
    binary_length = 0
    if real == T.MYSQL_TYPE_STRING and (column.charset == 63 or
                                        (column.charset is None and schema_fixed_binary)):
        binary_length = string_real_type(column.meta)[1] if column.meta else 0
    comparable = column.type not in (T.MYSQL_TYPE_JSON, T.MYSQL_TYPE_GEOMETRY, T.MYSQL_TYPE_VECTOR)
    unsigned_bits = _INTEGER_BITS.get(column.type, 0) if schema_unsigned and not column.unsigned else 0
    return ColumnInfo(name, column.type, column.charset, binary_length, comparable, unsigned_bits)


def sql_literal(value, column: ColumnInfo | None = None) -> str:
    """A value as an SQL literal that means exactly that value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        if value < 0 and column is not None and column.unsigned_bits:
            value += 1 << column.unsigned_bits  # decoded as signed: the binlog did not say
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SqlGenError(f"{value!r} has no SQL literal")
        return repr(value)
    if isinstance(value, MysqlTemporal):
        return "'" + str(value) + "'"
    if isinstance(value, str):
        return _text_literal(value, column)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if column is not None and column.binary_length > len(data):
            # BINARY(n) holds n bytes; the binlog drops the trailing zeros (types
            # stored as BINARY(n), such as INET6 and UUID, need all n)
            data = data.ljust(column.binary_length, b"\0")
        return _hex(data)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:  # TIMESTAMP: UTC, and the session is in UTC
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        if value.microsecond:
            text += ".%06d" % value.microsecond
        return "'" + "%04d" % value.year + text[4:] + "'"
    if isinstance(value, dt.date):
        return "'%04d-%02d-%02d'" % (value.year, value.month, value.day)
    if isinstance(value, dt.timedelta):
        return "'" + time_text(value) + "'"
    if isinstance(value, (frozenset, set)):
        return _text_literal(",".join(sorted(value)), column)
    if isinstance(value, list):  # VECTOR
        return "VEC_FromText('[" + ",".join(repr(float(v)) for v in value) + "]')"
    raise SqlGenError(f"no SQL literal for {type(value).__name__} value {value!r}")


def _text_literal(value: str, column: ColumnInfo | None) -> str:
    if _is_plain_text(value):
        return "'" + value.replace("'", "''") + "'"
    collation = column.charset if column is not None else None
    codec = codec_for(collation) or "utf-8"
    try:
        data = value.encode(codec, "surrogateescape")
    except UnicodeEncodeError:
        data, collation = value.encode("utf-8", "surrogateescape"), 45
    name = charset_name(collation) if collation is not None else "utf8mb4"
    return (f"_{name} " if name and name != "binary" else "") + _hex(data)


# -- statements -----------------------------------------------------------------------

@dataclass
class TableInfo:
    """A table as the generated statements name it."""

    database: str
    table: str
    keys: list          #: row-image key of each column, in column order
    columns: dict       #: row-image key -> ColumnInfo
    primary_key: list   #: row-image keys of the primary key (may be empty)
    named: bool         #: whether real column names are known

    @property
    def qualified(self) -> str:
        return f"{quote_identifier(self.database)}.{quote_identifier(self.table)}"


def table_info(table: TableMapEvent, schema=None, database: str | None = None) -> TableInfo:
    """The table map's columns, named by the schema history where the binlog
    has no names (and the history's definition agrees with the map)."""
    definition = schema.for_table_map(table) if schema is not None else None
    names = [c.name for c in table.columns]
    if definition is not None and any(n is None for n in names):
        names = definition.names
    named = all(n is not None for n in names)
    keys = [n if n is not None else c.key for n, c in zip(names, table.columns)]
    specs = definition.columns if definition is not None else (None,) * len(keys)
    columns = {k: column_info(c, n, spec is not None and spec.unsigned,
                              spec is not None and spec.fixed_binary)
               for k, n, c, spec in zip(keys, names, table.columns, specs)}
    primary = [keys[index] for index, _ in table.primary_key if index < len(keys)]
    if not primary and definition is not None and named:
        primary = [k for k in definition.primary_key if k in columns]
    return TableInfo(database or table.database, table.table, keys, columns, primary, named)


def _renamed(info: TableInfo, image: dict | None) -> dict | None:
    """Row-image keys (`@N` from the reader) -> the keys of `info`."""
    if image is None or info.named is False:
        return image
    out = {}
    for key, value in image.items():
        if key.startswith("@") and key[1:].isdigit():
            index = int(key[1:]) - 1
            key = info.keys[index] if 0 <= index < len(info.keys) else key
        out[key] = value
    return out


def _where(info: TableInfo, image: dict) -> str:
    keys = [k for k in info.primary_key if k in image and image[k] is not None]
    if not keys or len(keys) != len(info.primary_key):
        keys = [k for k in info.keys if k in image]
        comparable = [k for k in keys if info.columns[k].comparable]
        keys = comparable or keys
    if not keys:
        raise SqlGenError(f"{info.table}: the row image has no columns to find the row by")
    if not info.named:
        raise SqlGenError(f"{info.database}.{info.table}: column names unknown "
                          "(write binlogs with binlog_row_metadata=FULL or pass --schema)")
    parts = []
    for key in keys:
        value = image[key]
        column = info.columns[key]
        if value is None:
            parts.append(f"{quote_identifier(key)} IS NULL")
        else:
            parts.append(f"{quote_identifier(key)}={sql_literal(value, column)}")
    return " AND ".join(parts)


def insert_sql(info: TableInfo, image: dict) -> str:
    keys = [k for k in info.keys if k in image]
    values = ", ".join(sql_literal(image[k], info.columns[k]) for k in keys)
    if info.named:
        names = ", ".join(quote_identifier(k) for k in keys)
        return f"INSERT INTO {info.qualified} ({names}) VALUES ({values});"
    if len(keys) != len(info.keys):
        raise SqlGenError(f"{info.database}.{info.table}: column names unknown and the row "
                          "image is partial (pass --schema)")
    return f"INSERT INTO {info.qualified} VALUES ({values});"


def update_sql(info: TableInfo, before: dict, after: dict) -> str:
    if not info.named:
        raise SqlGenError(f"{info.database}.{info.table}: column names unknown "
                          "(write binlogs with binlog_row_metadata=FULL or pass --schema)")
    keys = [k for k in info.keys if k in after]
    changed = [k for k in keys if k not in before or before[k] != after[k]
               or type(before[k]) is not type(after[k])]
    keys = changed or keys
    assignments = ", ".join(f"{quote_identifier(k)}={sql_literal(after[k], info.columns[k])}"
                            for k in keys)
    return f"UPDATE {info.qualified} SET {assignments} WHERE {_where(info, before)} LIMIT 1;"


def delete_sql(info: TableInfo, image: dict) -> str:
    return f"DELETE FROM {info.qualified} WHERE {_where(info, image)} LIMIT 1;"


def row_statements(info: TableInfo, operation: str, rows, flashback: bool = False):
    """SQL for each row of a rows event, or the rollback of each row (in the
    rows' order: the flashback spool reverses the whole range)."""
    for before, after in rows:
        before, after = _renamed(info, before), _renamed(info, after)
        if not flashback:
            if operation == "insert":
                yield insert_sql(info, after)
            elif operation == "delete":
                yield delete_sql(info, before)
            else:
                yield update_sql(info, before, after)
        elif operation == "insert":
            yield delete_sql(info, after)
        elif operation == "delete":
            if len(before) != len(info.keys):
                raise SqlGenError(f"{info.table}: cannot restore a deleted row from a partial "
                                  "before image (binlog_row_image=MINIMAL)")
            yield insert_sql(info, before)
        else:
            missing = [k for k in after if k not in before]
            if missing:
                raise SqlGenError(f"{info.table}: cannot undo an update of {missing} without "
                                  "their old values (binlog_row_image=MINIMAL)")
            yield update_sql(info, after, {k: before[k] for k in after})


# -- the flashback spool -------------------------------------------------------------------

class ReverseSpool:
    """Statements appended in order, read back last first, transaction by
    transaction. Memory up to `memory_limit` bytes, then a temporary file."""

    def __init__(self, memory_limit: int = 32 << 20):
        self._file = tempfile.SpooledTemporaryFile(max_size=memory_limit)
        self._ends = array("Q")         # end offset of each statement
        self._transactions = array("Q")  # index of the first statement of each transaction
        self._open = False

    def begin(self) -> None:
        self._transactions.append(len(self._ends))
        self._open = True

    def add(self, statement: str) -> None:
        if not self._open:
            self.begin()
        self._file.write(statement.encode("utf-8", "surrogateescape") + b"\n")
        self._ends.append(self._file.tell())

    def commit(self) -> None:
        self._open = False

    def transactions(self):
        """Lists of statements, the last transaction first, each reversed."""
        bounds = list(self._transactions) + [len(self._ends)]
        for t in range(len(bounds) - 2, -1, -1):
            first, last = bounds[t], bounds[t + 1]
            if first == last:
                continue
            start = self._ends[first - 1] if first else 0
            self._file.seek(start)
            data = self._file.read(self._ends[last - 1] - start)
            pieces = data.decode("utf-8", "surrogateescape").split("\n")[:-1]
            yield pieces[::-1]

    def close(self) -> None:
        self._file.close()


# -- the writer ------------------------------------------------------------------------------

class StatementPrinter(TextPrinter):
    """mysqlbinlog's short form with ';' as the delimiter; a statement that
    contains ';' itself (a procedure body) gets a delimiter of its own."""

    def write_statement(self, prefix: str, query: str) -> None:
        if ";" in query:
            self.write(prefix + "DELIMITER /*binlake*/\n" + query + "\n/*binlake*/\nDELIMITER ;\n")
        else:
            self.write(prefix + query + "\n;\n")


class SqlWriter:
    """Feed events in order with `event()`; `finish()` writes what is pending."""

    def __init__(self, out, *, schema=None, flashback: bool = False, rewrite_db=None,
                 database: str | None = None, table: str | None = None,
                 local_load: str | None = None, spool_limit: int = 32 << 20):
        self.out = out
        #: The schema history, following the DDL of every event passed, selected or not.
        self.schema = schema if schema is not None else Schema()
        self.flashback = flashback
        self.rewrite_db = dict(rewrite_db or {})
        self.database = database
        self.table = table
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self._statement_text = io.StringIO()
        self._statements = StatementPrinter(self._statement_text, TextOptions(
            short_form=True, delimiter=";", rewrite_db=self.rewrite_db, database=database,
            local_load=local_load))
        self._tables: dict = {}
        self._in_transaction = False
        self._context_ready = False
        self._checks: tuple | None = None
        self._spool = ReverseSpool(spool_limit) if flashback else None

    # -- output -------------------------------------------------------------
    def _emit(self, text: str) -> None:
        if self._spool is not None:
            self._spool.add(text)
        else:
            self.out.write(text + "\n")

    def begin(self) -> None:
        self.out.write("-- SQL written by binlake" + (" (flashback: rollback of the range, "
                       "last change first)" if self.flashback else "") + "\n")
        self.out.write("SET @binlake_old_sql_mode=@@SESSION.sql_mode, "
                       "@binlake_old_time_zone=@@SESSION.time_zone;\n")
        self._setup()

    def _setup(self) -> None:
        """The session the row statements need (again after a passed-through
        statement changed it)."""
        self.out.write("".join(line + ";\n" for line in SESSION_SETUP))
        self._context_ready = True
        # The statement printer must repeat its own context after ours.
        state = self._statements.state
        state.sql_mode = None
        state.charset = None
        state.time_zone = ""

    def finish(self) -> None:
        if self._in_transaction and self._spool is None:
            self.out.write("COMMIT;\n")
        if self._spool is not None:
            if not self._context_ready:
                self._setup()
            last_setting = None
            for statements in self._spool.transactions():
                self.out.write("BEGIN;\n")
                for statement in statements:
                    if statement.startswith("SET foreign_key_checks="):
                        if statement == last_setting:
                            continue
                        last_setting = statement
                    self.out.write(statement + "\n")
                self.out.write("COMMIT;\n")
            self._spool.close()
        self.out.write("SET SESSION sql_mode=@binlake_old_sql_mode, "
                       "time_zone=@binlake_old_time_zone;\n")

    # -- events -------------------------------------------------------------
    def note(self, event: Event) -> None:
        """An event outside the selection: keep what later events need."""
        self._statements.note(event)
        if isinstance(event, TableMapEvent):
            self._tables.pop(event.table_id, None)
        elif isinstance(event, QueryEvent):
            self.schema.follow(event)

    def event(self, event: Event) -> None:
        self._statements.note(event)
        if isinstance(event, MariadbGtidEvent):
            # MariaDB writes no BEGIN: its GTID event opens the transaction,
            # unless it stands alone (DDL). MySQL's GTID events are followed by BEGIN.
            if not event.flags2 & 1:
                self._begin_transaction()
        elif isinstance(event, QueryEvent):
            self._query(event)
            self.schema.follow(event)
        elif isinstance(event, (XidEvent, XaPrepareEvent)):
            self._end_transaction()
        elif isinstance(event, TableMapEvent):
            self._table_map(event)
        elif isinstance(event, RowsEvent):
            self._rows(event)
        elif isinstance(event, (IntvarEvent, RandEvent, UserVarEvent, LoadEvent, FileBlockEvent)):
            if not self.flashback:
                self._pass_through(event)

    def _begin_transaction(self) -> None:
        if self._in_transaction:
            return
        self._in_transaction = True
        if self._spool is not None:
            self._spool.begin()
        else:
            self.out.write("BEGIN;\n")

    def _end_transaction(self) -> None:
        if not self._in_transaction:
            return
        self._in_transaction = False
        if self._spool is not None:
            self._spool.commit()
        else:
            self.out.write("COMMIT;\n")

    def _query(self, event: QueryEvent) -> None:
        head = event.query.lstrip()[:16].upper()
        if head.startswith("BEGIN") or head.startswith("START TRANSACTION"):
            return self._begin_transaction()
        if head.startswith("COMMIT"):
            return self._end_transaction()
        if head.startswith("ROLLBACK") and not head.startswith("ROLLBACK TO"):
            self._in_transaction = False
            if self._spool is None:
                self.out.write("ROLLBACK;\n")
            return
        if self.flashback:
            self.warnings.append(f"{event.header.file}: offset {event.header.pos}: a statement "
                                 f"cannot be rolled back from the binlog and was left out: "
                                 f"{event.query[:80]!r}")
            return
        self._pass_through(event)

    def _pass_through(self, event: Event) -> None:
        """A statement with the session lines mysqlbinlog would put before it."""
        self._statements.event(event)
        text = self._statement_text.getvalue()
        self._statement_text.seek(0)
        self._statement_text.truncate()
        if text:
            self.out.write(text)
            self._context_ready = False

    def _table_map(self, event: TableMapEvent) -> None:
        skip = ((self.database is not None and event.database != self.database)
                or (self.table is not None and event.table != self.table))
        if skip:
            self._tables[event.table_id] = None
            return
        target = self.rewrite_db.get(event.database, event.database)
        self._tables[event.table_id] = table_info(event, self.schema, target)

    def _rows(self, event: RowsEvent) -> None:
        if event.table_id not in self._tables:
            if event.table is None:
                self.errors.append(f"{event.header.file}: offset {event.header.pos}: rows of "
                                   f"table id {event.table_id} without its table map")
                return
            self._table_map(event.table)
        info = self._tables.get(event.table_id)
        if info is None:
            return
        if not self._context_ready:
            self._setup()
        if self._spool is not None and not self._in_transaction:
            self._spool.begin()
        checks = (not event.flags & NO_FOREIGN_KEY_CHECKS_F, not event.flags & RELAXED_UNIQUE_CHECKS_F)
        setting = f"SET foreign_key_checks={int(checks[0])}, unique_checks={int(checks[1])};"
        if self._spool is None and checks != self._checks:
            self._emit(setting)
            self._checks = checks
        try:
            # iter_rows: a huge event is decoded as it is written, never held whole
            for statement in row_statements(info, event.operation, event.iter_rows(),
                                            self.flashback):
                self._emit(statement)
        except SqlGenError as exc:
            self.errors.append(f"{event.header.file}: offset {event.header.pos}: {exc}")
            self._emit(f"-- binlake: rows at offset {event.header.pos} left out: {exc}")
        if self._spool is not None:
            # Read backwards, the setting comes before the event's statements
            # (repeats are dropped when the spool is written out).
            self._emit(setting)
            if not self._in_transaction:
                self._spool.commit()
