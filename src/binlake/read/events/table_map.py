"""TABLE_MAP_EVENT: the column types and metadata that row images need.

Layout (MySQL `rows_event.cpp` Table_map_event, MariaDB `log_event.cc`):
post-header table_id (6 bytes, 4 when the FDE says 6) + flags (2); body
db (len, bytes, NUL), table (len, bytes, NUL), column count (packed), types
(1 byte each), metadata (packed length, then per type 0-2 bytes), null
bitmap, then optional metadata as TLVs (binlog_row_metadata=MINIMAL/FULL).

Rule: everything derived from a table map (column keys, value decoders,
row plans) is computed once here and cached on the TableMap, never per row.
"""

from __future__ import annotations

from dataclasses import field, replace

from binlake.constants import ColumnType as T, TableMapOptionalMetadata as M
from binlake.read.cursor import Cursor, Fields, text
from binlake.read.events.base import Event, EventHeader, frozen_dataclass

_ONE_BYTE_META = {T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE, T.MYSQL_TYPE_BLOB,
                  T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB,
                  T.MYSQL_TYPE_GEOMETRY, T.MYSQL_TYPE_JSON, T.MYSQL_TYPE_TIMESTAMP2,
                  T.MYSQL_TYPE_DATETIME2, T.MYSQL_TYPE_TIME2, T.MYSQL_TYPE_VECTOR,
                  T.MYSQL_TYPE_BLOB_COMPRESSED}
#: Two bytes, little-endian: the column's length in bytes (MariaDB's
#: VARCHAR COMPRESSED counts its header byte in it: VARCHAR(100) is 101).
_TWO_BYTE_META = {T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING, T.MYSQL_TYPE_VARCHAR_COMPRESSED}
_NUMERIC = {T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_INT24, T.MYSQL_TYPE_LONG,
            T.MYSQL_TYPE_LONGLONG, T.MYSQL_TYPE_NEWDECIMAL, T.MYSQL_TYPE_FLOAT,
            T.MYSQL_TYPE_DOUBLE}
_BLOBS = {T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
          T.MYSQL_TYPE_LONG_BLOB}
#: MariaDB's compressed columns (rpl_utility.cc `table_def`): VARCHAR and
#: TEXT/BLOB with their twins' metadata and length prefixes.
COMPRESSED_TYPES = frozenset({T.MYSQL_TYPE_VARCHAR_COMPRESSED, T.MYSQL_TYPE_BLOB_COMPRESSED})


@frozen_dataclass
class Column:
    index: int
    type: int            #: type as in the table map (STRING may hide ENUM/SET: see real_type)
    meta: int            #: metadata packed in one int (2-byte metadata: first byte high)
    nullable: bool
    name: str | None = None
    unsigned: bool = False
    charset: int | None = None   #: collation id, when the table map carries it
    enum_values: list | None = None
    set_values: list | None = None
    geometry_type: int | None = None
    vector_dimensions: int | None = None
    visible: bool = True
    primary_key: bool = False

    @property
    def key(self) -> str:
        """The key of this column in row dicts: its name, else `@N` (1-based)."""
        return self.name if self.name is not None else f"@{self.index + 1}"

    @property
    def real_type(self) -> int:
        if self.type == T.MYSQL_TYPE_STRING:
            from binlake.read.values import string_real_type
            return string_real_type(self.meta)[0]
        return self.type

    @property
    def is_numeric(self) -> bool:
        return self.type in _NUMERIC

    @property
    def is_character(self) -> bool:
        """Text in a charset, or its binary twin (not: has a place in the
        charset list, which depends on the server: `takes_listed_charset`)."""
        return is_character_type(self.real_type)

    @property
    def is_enum_or_set(self) -> bool:
        return is_enum_or_set_type(self.real_type)


def is_character_type(real_type: int) -> bool:
    """CHAR, VARCHAR and TEXT (with their binary twins BINARY, VARBINARY and
    BLOB), MariaDB's compressed VARCHAR and TEXT/BLOB too: text in a charset."""
    return real_type in (T.MYSQL_TYPE_STRING, T.MYSQL_TYPE_VAR_STRING,
                         T.MYSQL_TYPE_VARCHAR) or real_type in _BLOBS \
        or real_type in COMPRESSED_TYPES


def takes_listed_charset(real_type: int, mariadb: bool) -> bool:
    """Whether a column has a place in the table map's charset list
    (DEFAULT_CHARSET / COLUMN_CHARSET), as the server that wrote it counts.

    MariaDB lists every column with a charset but ENUM and SET
    (log_event_server.cc `is_character_field`): the character columns and
    GEOMETRY, whose charset is binary (sql_type_geom.cc
    `Field_geom::binlog_type_info`). MySQL lists the types of log_event.cc
    `is_character_type`: the character columns and, from 9.0, VECTOR (also
    binary), never GEOMETRY or JSON. ENUM and SET have a list of their own
    in both (FULL metadata only)."""
    return is_character_type(real_type) or real_type == (
        T.MYSQL_TYPE_GEOMETRY if mariadb else T.MYSQL_TYPE_VECTOR)


def is_enum_or_set_type(real_type: int) -> bool:
    return real_type in (T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET)


@frozen_dataclass
class TableMapEvent(Event):
    table_id: int
    flags: int
    database: str
    table: str
    columns: tuple
    #: column indexes of the primary key (with prefix lengths, 0 = whole column)
    primary_key: tuple = ()
    default_charset: int | None = None
    optional_metadata: bytes = b""
    #: per-TableMap caches (row plans); not part of the event's value
    cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def has_names(self) -> bool:
        return all(c.name is not None for c in self.columns)

    def with_column_metas(self, metas: dict, cache: dict | None = None) -> TableMapEvent:
        """This map with some columns' metadata known from outside the binlog,
        `metas` = {column index: meta}: MariaDB 5.3-10.0 log TIME, DATETIME and
        TIMESTAMP(n), n 1-6, as the plain types with no metadata, and decode
        as hires columns of fsp n once n (from the DDL) is their meta
        (`values.column_decoder`). Row decoders are cached on a map, so a
        changed copy has `cache` (default: a new dict), never this map's;
        with nothing changed this map itself is returned."""
        columns = list(self.columns)
        for index, meta in metas.items():
            if not 0 <= index < len(columns):
                raise ValueError(f"{self.qualified_name} has no column {index}")
            if columns[index].meta != meta:
                columns[index] = replace(columns[index], meta=meta)
        if all(a is b for a, b in zip(columns, self.columns)):
            return self
        return replace(self, columns=tuple(columns), cache={} if cache is None else cache)

    def fields(self) -> dict:
        out = {n: getattr(self, n) for n in ("table_id", "flags", "database", "table",
                                            "primary_key", "default_charset")}
        # Shared by the equal table maps of every transaction (don't mutate).
        columns = self.cache.get("column_dicts")
        if columns is None:
            columns = self.cache["column_dicts"] = [_column_dict(c) for c in self.columns]
        out["columns"] = columns
        return out


def _column_dict(column: Column) -> dict:
    from binlake.constants import ColumnType
    out = {"index": column.index, "name": column.name,
           "type": ColumnType(column.real_type).name if column.real_type in ColumnType._value2member_map_ else column.real_type,
           "meta": column.meta, "nullable": column.nullable}
    for name in ("unsigned", "charset", "enum_values", "set_values", "geometry_type",
                 "vector_dimensions", "primary_key"):
        value = getattr(column, name)
        if value:
            out[name] = value
    if not column.visible:
        out["visible"] = False
    return out


def _read_meta(cur: Cursor, column_type: int) -> int:
    if column_type in _ONE_BYTE_META:
        return cur.u8()
    if column_type in _TWO_BYTE_META:
        return cur.u16()
    if column_type in (T.MYSQL_TYPE_NEWDECIMAL, T.MYSQL_TYPE_BIT, T.MYSQL_TYPE_STRING,
                       T.MYSQL_TYPE_ENUM, T.MYSQL_TYPE_SET, T.MYSQL_TYPE_DECIMAL):
        if column_type == T.MYSQL_TYPE_DECIMAL:
            return 0
        high = cur.u8()
        return high << 8 | cur.u8()
    return 0


def _bits_msb_first(value: Cursor, count: int) -> list[bool]:
    """`count` flags, most significant bit first, from the rest of `value`."""
    raw = value.rest()
    if count > len(raw) * 8:
        raise value.error(f"a bitmap of {len(raw)} bytes cannot flag {count} columns")
    return [bool(raw[i // 8] & (0x80 >> (i % 8))) for i in range(count)]


def _charsets(cur: Cursor, count: int, default_form: bool, lenient: bool = False) -> list:
    if not default_form:
        if lenient:  # as mysqlbinlog's iterator: no charset past the list's end
            return [None if cur.at_end() else cur.packed_len() for _ in range(count)]
        return [cur.packed_len() for _ in range(count)]
    default = cur.packed_len()
    values = [default] * count
    while not cur.at_end():
        index, collation = cur.packed_len(), cur.packed_len()
        if index < count:
            values[index] = collation
    return values


def _view_is_character(view) -> bool:
    return view.is_character


def _strings(cur: Cursor, raw: bool = False) -> list:
    if raw:
        return [bytes(cur.lstring_packed()) for _ in range(cur.packed_len())]
    return [text(cur.lstring_packed()) for _ in range(cur.packed_len())]


def apply_optional_metadata(columns: list[dict], cur: Cursor, lenient: bool = False,
                            listed=_view_is_character, raw_members: bool = False) -> dict:
    """Fill per-column facts from the TLVs; returns table-level facts.
    `columns`: dicts whose "_column" says what kind of column each is (a
    `Column`, or another view of it with the same properties); `lenient`:
    lists of charsets, ENUM/SET members or geometry types shorter than their
    columns leave the rest without (None), as mysqlbinlog's iterators do;
    `listed(view)`: whether a column has a place in the charset list (the
    decoder's: the server's count, `takes_listed_charset`), by default the
    view's own `is_character` (a printer's count: text/table_metadata.py);
    `raw_members`: ENUM/SET member names as the bytes logged (the printer's)."""
    numeric = [c for c in columns if c["_column"].is_numeric]
    character = [c for c in columns if listed(c["_column"])]
    enum_set = [c for c in columns if c["_column"].is_enum_or_set]
    enums = [c for c in enum_set if c["_column"].real_type == T.MYSQL_TYPE_ENUM]
    sets = [c for c in enum_set if c["_column"].real_type == T.MYSQL_TYPE_SET]
    geometry = [c for c in columns if c["_column"].type == T.MYSQL_TYPE_GEOMETRY]
    vectors = [c for c in columns if c["_column"].type == T.MYSQL_TYPE_VECTOR]
    table: dict = {}
    while not cur.at_end():
        kind = cur.u8()
        value = cur.sub(cur.packed_len())
        if kind == M.SIGNEDNESS:
            for c, flag in zip(numeric, _bits_msb_first(value, len(numeric))):
                c["unsigned"] = flag
        elif kind in (M.DEFAULT_CHARSET, M.COLUMN_CHARSET):
            charsets = _charsets(value, len(character), kind == M.DEFAULT_CHARSET, lenient)
            if kind == M.DEFAULT_CHARSET and charsets:
                table["default_charset"] = charsets[0] if len(set(charsets)) == 1 else None
            for c, cs in zip(character, charsets):
                c["charset"] = cs
        elif kind in (M.ENUM_AND_SET_DEFAULT_CHARSET, M.ENUM_AND_SET_COLUMN_CHARSET):
            charsets = _charsets(value, len(enum_set), kind == M.ENUM_AND_SET_DEFAULT_CHARSET,
                                 lenient)
            for c, cs in zip(enum_set, charsets):
                c["charset"] = cs
        elif kind == M.COLUMN_NAME:
            for c in columns:
                c["name"] = text(value.lstring_packed())
        elif kind == M.SET_STR_VALUE:
            for c in sets:
                c["set_values"] = (None if lenient and value.at_end()
                                   else _strings(value, raw_members))
        elif kind == M.ENUM_STR_VALUE:
            for c in enums:
                c["enum_values"] = (None if lenient and value.at_end()
                                    else _strings(value, raw_members))
        elif kind == M.GEOMETRY_TYPE:
            for c in geometry:
                c["geometry_type"] = None if lenient and value.at_end() else value.packed_len()
        elif kind == M.SIMPLE_PRIMARY_KEY:
            keys = []
            while not value.at_end():
                keys.append((value.packed_len(), 0))
            table["primary_key"] = tuple(keys)
        elif kind == M.PRIMARY_KEY_WITH_PREFIX:
            keys = []
            while not value.at_end():
                keys.append((value.packed_len(), value.packed_len()))
            table["primary_key"] = tuple(keys)
        elif kind == M.COLUMN_VISIBILITY:
            for c, flag in zip(columns, _bits_msb_first(value, len(columns))):
                c["visible"] = flag
        elif kind == M.VECTOR_DIMENSIONALITY:
            for c in vectors:
                c["vector_dimensions"] = value.packed_len()
        # Unknown TLVs of newer servers are skipped by their length: that is
        # the point of the TLV encoding, and the raw bytes stay in optional_metadata.
    return table


#: table_id (4 bytes when the FDE says a 6-byte post-header, else 6) and flags
_HEAD_SHORT_ID = Fields("<IH")
_HEAD = Fields("<IHH", (6, 2))


def decode_table_map(header: EventHeader, cur: Cursor, ctx) -> TableMapEvent:
    if ctx.fde.post_header_len(header.type_code) == 6:
        table_id, flags = cur.fields(_HEAD_SHORT_ID)
    else:
        low, high, flags = cur.fields(_HEAD)
        table_id = low | high << 32
    # A server logs the same table map again in every transaction: everything
    # derived from it (row plans, compiled decoders) is shared between equal
    # maps: equal bytes from servers of one flavour (their charset lists count
    # different columns: `takes_listed_charset`).
    mariadb = ctx.fde.is_mariadb
    signature = (mariadb, bytes(cur.buf[cur.pos:cur.end]))
    cache = ctx.table_caches.get(signature)
    if cache is None:
        cache = ctx.shared_cache(signature)
    # ... and so is the decoded body, a pure function of those bytes: a dump
    # of small transactions would otherwise spend its time rebuilding columns.
    decoded = cache.get("decoded_table_map")
    if decoded is not None:
        fields, unread = decoded
        cur.pos = cur.end - unread  # what the first decode left, the reader checks again
        return TableMapEvent(header, table_id, flags, *fields, cache)
    database = text(cur.lstring1()); cur.u8()
    table = text(cur.lstring1()); cur.u8()
    count = cur.packed_len()
    types = cur.bytes(count)
    if cur.at_end():  # 5.1 before 5.1.18 wrote no metadata and no null bitmap
        metas = [0] * count
    else:
        meta_cur = cur.sub(cur.packed_len())
        metas = [_read_meta(meta_cur, t) for t in types]
    nulls = cur.bitmap(count) if not cur.at_end() else 0
    optional_start = cur.pos
    base = [Column(i, types[i], metas[i], bool(nulls >> i & 1)) for i in range(count)]
    facts = [{"_column": c} for c in base]
    table_facts = apply_optional_metadata(
        facts, cur, listed=lambda column: takes_listed_charset(column.real_type, mariadb))
    optional = bytes(cur.buf[optional_start:cur.end])
    primary = table_facts.get("primary_key", ())
    pk_columns = {index for index, _ in primary}
    columns = tuple(
        replace(f.pop("_column"), primary_key=i in pk_columns, **f)
        for i, f in enumerate(facts))
    fields = (database, table, columns, primary, table_facts.get("default_charset"), optional)
    cache["decoded_table_map"] = (fields, cur.end - cur.pos)
    return TableMapEvent(header, table_id, flags, *fields, cache)
