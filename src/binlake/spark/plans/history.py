"""The pipeline's schema history: followed on the driver over the new byte
ranges before Spark reads them, kept with the output, handed to every task.

Strategy: the header scan already lists the QUERY events that are neither
BEGIN nor COMMIT (`ScanResult.statements`); their first bytes tell which may
change tables (`ddl.might_change_tables`), and only those are decoded. A
task then takes the history as it was at its range's start
(`batches.split_schema`) and follows the DDL inside the range itself, so
each row change is named as the table was when it was written.
"""

from __future__ import annotations

import base64
import bisect
import mmap
import os
import re

from pyspark.sql.types import BinaryType

from binlake.charsets import BINARY_COLLATION, collation_of
from binlake.constants import ColumnType as T
from binlake.schema.ddl import might_change_tables
from binlake.read.events import QueryEvent
from binlake.read.scan import query_head, scan
from binlake.schema.history import ALTER_IGNORE_UNIQUE, SEED, Schema
from binlake.spark.plans.conversions import LENGTH, server_value
from binlake.spark.plans.layouts import TEXT_TYPES, ddl_layout_column, ddl_length, qualified
from binlake.read.gzipped import is_gzip
from binlake.spark.read.ranges import Split, read_split
from binlake.spark.plans.refusals import READ_ANEW, forward, named
from binlake.spark.plans.typed import spark_type

#: Enough of a statement to see past leading comments to its first word.
HEAD_BYTES = 4096


def follow_ranges(history: Schema, splits: list, scans: dict | None = None) -> None:
    """Apply the DDL of `splits` (in order) to `history`."""
    for split in splits:
        if is_gzip(split.path):  # no offsets to peek at: read it all
            for _ in read_split(split, schema=history):
                pass
            continue
        result = (scans or {}).get(split) or scan(split.path, start=split.start, stop=split.end)
        for pos in _ddl_candidates(split, result):
            for item in read_split(Split(split.path, split.file_seq, pos, pos + 1), schema=False):
                if isinstance(item.event, QueryEvent):
                    history.follow(item.event)


def _ddl_candidates(split: Split, result) -> list[int]:
    framing = result.framing
    if framing is None or not result.statements:
        return []
    found = []
    with open(split.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        for pos in result.statements:
            if pos < split.start or (split.end is not None and pos >= split.end):
                continue
            index = bisect.bisect_left(result.positions, pos)
            length = int.from_bytes(buf[pos + 9:pos + 13], "little")
            head = query_head(buf, pos, length, result.types[index], framing, HEAD_BYTES)
            # A statement whose head cannot be read is decoded: better slow than blind.
            if head is None or might_change_tables(head.decode("utf-8", "replace")):
                found.append(pos)
    return found


class PositionOrder:
    """(file name, offset) of the schema history as (file_seq, offset) of the
    changes view, for the files the manifest knows (`seqs`: name -> file_seq)."""

    def __init__(self, seqs: dict):
        self.seqs = dict(seqs)
        self.names = sorted(self.seqs)

    def __call__(self, position: tuple) -> tuple:
        name, pos = position
        if position == SEED:
            return (-1, 0)
        if name in self.seqs:
            return (self.seqs[name], pos)
        # A file of a seed history the pipeline never read: before or after them all.
        before = bisect.bisect_left(self.names, name) == 0
        return (-1, pos) if before else (1 << 62, pos)

    def extends(self, earlier: PositionOrder) -> bool:
        """Every position `earlier` orders, this one orders alike: each file
        it knows has its file_seq here, and no file sorts before its first
        (which says where a file of neither is)."""
        return self.names[:1] == earlier.names[:1] and all(
            self.seqs.get(name) == seq for name, seq in earlier.seqs.items())


def load_history(path: str, seed: str | None) -> Schema:
    """The saved history of an output directory, else the seed (`--schema`)."""
    from binlake.schema.history import load_schema
    if os.path.exists(path):
        return load_schema(path)
    return load_schema(seed) if seed else Schema()


# -- tables as of a point ------------------------------------------------------------------

def table_plans(history: Schema, layouts: dict, order: PositionOrder,
                before=None) -> list[dict]:
    """What the table rules (binlake.spark.rules.table_rows) build each
    table existing at the point from (`before(version)`: the history's
    statements before it), with
    its layout: the columns of its definition there, typed as its last table
    map says when that column is unchanged since, else as its DDL says."""
    return [plan for _, _, plan in keyed_table_plans(history, layouts, order, before)]


def keyed_table_plans(history: Schema, layouts: dict, order: PositionOrder, before=None,
                      known: dict | None = None) -> list[tuple]:
    """`table_plans` as (key, inputs, plan) per table: `inputs` what its plan
    is made of besides the history and the order (the table's entry in
    `layouts`). `known`: {key: (inputs, plan)} of an earlier call on the
    same history, with an order this one `extends`: a table whose inputs
    are equal gets that plan back, not made again (a follower's run costs
    what it changes, not the lake's tables)."""
    keys = {history.key(layout["database"], layout["table"]): layout
            for layout in (entry["layout"] for entry in layouts.values())}
    for key in history.versions:
        keys.setdefault(key, None)
    plans = []
    for key, layout in keys.items():
        entry = layouts.get(qualified(layout["database"], layout["table"])) if layout else None
        found = (known or {}).get(key)
        if found is not None and found[0] == entry:
            plans.append((key, *found))
            continue
        plan = _table_plan(history, key, layout, entry, order, before)
        if plan is not None:
            plans.append((key, entry, plan))
    return plans


def _table_plan(history: Schema, key: tuple, layout: dict | None, entry: dict | None,
                order: PositionOrder, before) -> dict | None:
    """The plan of one table (None: it does not exist at the point,
    or its columns or database are not known)."""
    lineage = history.lineage(key, before)
    if lineage is None:
        return None  # dropped
    database = layout["database"] if layout else key[0]
    if database is None:
        return None  # a seed table no binlog wrote to: its database is not known
    definition = history.definition(key, before)
    if definition is None:
        if layout is None:
            return None  # no columns known
        final = layout
        keys_now = [c["key"] for c in layout["columns"]]
        sources = [tuple(keys_now)] * len(lineage)
        defaults = [(None,) * len(keys_now)] * len(lineage)
        fractions = [(None,) * len(keys_now)] * len(lineage)
        omitted = [(None,) * len(keys_now)] * len(lineage)
        retyped = rekeyed = [None] * len(lineage)
    else:
        # the table map of a later version of the table says nothing of this one
        later = [v for v in history.versions.get(key, ())
                 if before is not None and not before(v)]
        bound = order(later[0].position) if later else None
        final = _final_layout(database, key[1], definition, lineage, entry, order, bound)
        keys_now = definition.names
        sources = [s.sources or tuple(keys_now) for s in lineage]
        defaults = [tuple(_default_text(d, spec, column) for d, spec, column in
                          zip(s.defaults or (None,) * len(keys_now), definition.columns,
                              final["columns"]))
                    for s in lineage]
        fractions = [_fractions_changed(s, definition, src) for s, src in zip(lineage, sources)]
        omitted = [_omitted_texts(s, src, final["columns"]) for s, src in zip(lineage, sources)]
        retyped = [_types_changed(s, definition, src) for s, src in zip(lineage, sources)]
        rekeyed = [_key_changed(s, definition, keys_now, src, final["primary_key"])
                   for s, src in zip(lineage, sources)]
    primary = [keys_now.index(k) for k in final["primary_key"] if k in keys_now]
    return {
        "database": database, "table": key[1], "layout": final, "primary_key": primary,
        "stretches": _joined([{"database": s.key[0] if s.key[0] is not None else database,
                               "table": s.key[1], "after": order(s.start),
                               "before": order(s.end) if s.end is not None else (None, None),
                               "sources": list(src), "defaults": list(dflt),
                               "fractions": list(frac), "omitted": list(left_out),
                               # columns of a full row image there
                               "width": (len(s.definition.columns) if s.definition
                                         else len(src)),
                               **({"was": list(was)} if was else {}),
                               **({"rows_lost": True}
                                  if s.made_by == ALTER_IGNORE_UNIQUE else {}),
                               **({"key_then": rows_by} if rows_by is not None else {})}
                              for s, src, dflt, frac, left_out, was, rows_by in zip(
                                  lineage, sources, defaults, fractions, omitted,
                                  retyped, rekeyed)])}


def inside(stretch: dict, at: tuple) -> bool:
    """A change at `at` ((file_seq, pos), or (file_seq, pos, sub): its
    commit_key's) is in the stretch's span of the binlog. A stretch of a
    table read anew starts at (file_seq, pos, sub): among the chunks at one
    place, after those of an earlier read (rules.engine.after_start is the
    rule on whole columns)."""
    hi_seq, hi_pos = stretch["before"]
    after, at = tuple(stretch["after"]), tuple(at)
    later = at[:2] > after[:2] or (len(after) > 2 and len(at) > 2 and at[:2] == after[:2]
                                   and at[2] > after[2])
    return later and (hi_seq is None or at[:2] < (hi_seq, hi_pos))


def stretch_at(plan: dict, source: tuple, at: tuple) -> dict | None:
    """The plan's stretch a change of `source` ((database, table) in
    changes/) at `at` is of, or None (a change its rows do not come from)."""
    return next((stretch for stretch in plan["stretches"]
                 if source == (stretch["database"], stretch["table"]) and inside(stretch, at)),
                None)


def stretch_width(stretch: dict) -> int:
    """How many columns a full row image of a plan's stretch holds (plans
    saved before `width` was recorded: the columns it has a source for)."""
    return stretch.get("width", sum(key is not None for key in stretch["sources"]))


def rows_lost_refusal(plan: dict) -> str | None:
    """Why the table's rows cannot be carried through an ALTER IGNORE that
    added a unique key (it deleted the rows the key found twice but the
    first, with no row event: which the server kept depends on its scan),
    where the plan holds rows from before it; None where it holds none (a
    table read anew after it)."""
    stretches = plan["stretches"]  # latest first
    for stretch in stretches[:-1]:
        if stretch.get("rows_lost"):
            name = f"{plan['database']}.{plan['table']}"
            return named(f"{name}: an ALTER IGNORE TABLE adding a unique key deleted rows "
                         "with no row event, which binlake cannot name" + forward(READ_ANEW),
                         name)
    return None


def _joined(stretches: list[dict]) -> list[dict]:
    """Stretches (latest first) with each run of neighbours that read their
    changes alike made one: a statement that changed nothing of the columns
    (an index, a comment, table options) then leaves the plan, and so the
    table, as it was, and new changes go on top of its rows."""
    out: list[dict] = []
    for stretch in stretches:
        later = out[-1] if out else None
        if later is not None and later["after"] == stretch["before"] and all(
                later.get(field) == stretch.get(field)
                for field in ("database", "table", "sources", "defaults", "fractions",
                              "omitted", "width", "was", "key_then", "rows_lost")):
            later["after"] = stretch["after"]
        else:
            out.append(stretch)
    return out


_TEMPORALS = ("TIME", "DATETIME", "TIMESTAMP")


def _fractions_changed(stretch, definition, sources) -> tuple:
    """Per column: its fractional digits now, where a MODIFY changed them since
    this stretch (the exact text of the older values gets as many digits, as
    the server's converted values have); else None."""
    out = []
    for spec, source in zip(definition.columns, sources):
        old = None
        if stretch.definition is not None and source is not None:
            at = stretch.definition.index(source)
            old = stretch.definition.columns[at] if at is not None else None
        changed = spec.type in _TEMPORALS and old is not None and old.fsp != spec.fsp
        out.append(spec.fsp if changed else None)
    return tuple(out)


def _types_changed(stretch, definition, sources) -> tuple | None:
    """Per column: the layout column it was in this stretch, where a MODIFY
    or CHANGE gave it another type since (its values, held in the table or
    in this stretch's changes, become what the server converted them to:
    binlake.spark.plans.conversions); None where no column's type changed.
    A shorter CHAR or VARCHAR (BINARY, VARBINARY: refused), and an ENUM or SET that lost or respelled a
    member, convert too (the server cuts the texts, renames the members by
    name); a longer one, another character set or fractional precision
    leave the values as they were (fractional digits: `_fractions_changed`)."""
    if stretch.definition is None:
        return None
    out = []
    for spec, source in zip(definition.columns, sources):
        at = stretch.definition.index(source) if source is not None else None
        old = stretch.definition.columns[at] if at is not None else None
        out.append(ddl_layout_column(old) if old is not None and _converts(old, spec) else None)
    return tuple(out) if any(out) else None


def _converts(old, spec) -> bool:
    """Whether a MODIFY from column `old` to `spec` changes values."""
    if (old.type, old.unsigned) != (spec.type, spec.unsigned):
        return True
    if spec.type == "DECIMAL":
        return old.args != spec.args
    if spec.type in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):  # (binary: refused)
        return ddl_length(spec)[LENGTH] < ddl_length(old)[LENGTH]
    if spec.type in ("ENUM", "SET"):
        return not set(map(str, old.args)) <= set(map(str, spec.args))
    return False


def _key_changed(stretch, definition, keys_now: list, sources, primary: list) -> list | None:
    """The columns the server found a row by in this stretch (none: a
    table without a key), where they are not the table's key now (a key
    added, dropped or changed since: its changes are applied as they were
    then, binlake.spark.commits.lake); else None. A stretch of the definition the
    table has now had the key it has now (`primary`, which a table map may
    have named: `_final_layout`)."""
    if stretch.definition is None or stretch.definition == definition:
        return None
    then = list(stretch.definition.row_key)
    named = [now for now, source in zip(keys_now, sources) if source in then]
    if len(named) == len(then) and sorted(named) == sorted(primary):
        return None
    return then


def _final_layout(database: str, table: str, definition, lineage, entry, order,
                  bound: tuple | None) -> dict:
    """The layout of `definition`: each column as the last table map typed
    it, if that map was written while the column had the same declaration
    (`bound`: where the table's next version starts, if any)."""
    by_key, stretch = {}, None
    if entry is not None:
        written = tuple(entry["order"])
        by_key = {c["key"]: c for c in entry["layout"]["columns"]}
        stretch = next((s for s in lineage if order(s.start) < written
                        and (written < order(s.end) if s.end is not None
                             else bound is None or written < bound)), None)
    columns = []
    for i, spec in enumerate(definition.columns):
        column = None
        if stretch is not None and stretch.sources is not None and stretch.definition is not None:
            source = stretch.sources[i]
            at = stretch.definition.index(source) if source is not None else None
            if at is not None and _declared(stretch.definition.columns[at]) == _declared(spec):
                column = by_key.get(source)
        if column is None:
            column = ddl_layout_column(spec)
            if column["charset"] is None:
                # How the binlog's table maps say this table's text is encoded
                # (binlog_row_metadata=MINIMAL and FULL say it, NO_LOG does not).
                known = next((c for c in (by_key.get(spec.name), *by_key.values())
                              if c and c["charset"] not in (None, BINARY_COLLATION)), None)
                column["charset"] = (known["charset"] if known
                                     # else the table's default, as SHOW CREATE TABLE says it
                                     else collation_of(definition.charset) if definition.charset
                                     else None)
        columns.append(dict(column, key=spec.name, **ddl_length(spec)))
    written_now = entry is not None and stretch is not None and stretch.definition == definition
    return {"database": database, "table": table, "columns": columns,
            "primary_key": _row_key(definition, entry["layout"] if written_now else None)}


def _row_key(definition, layout: dict | None) -> list:
    """The key the server finds the table's rows by: the one the `layout`
    of a table map written under `definition` names (the server's own word
    under binlog_row_metadata=FULL, which knows keys the DDL does not say
    enough of: a history saved before prefix lengths were kept), when it
    names one by the definition's columns; else the definition's
    (`TableDef.row_key`)."""
    found = [definition.index(key) for key in (layout or {}).get("primary_key", ())]
    if found and None not in found:
        return [definition.columns[i].name for i in found]
    return list(definition.row_key)


def _declared(spec) -> tuple:
    return spec.type, spec.args, spec.unsigned, spec.charset


def _default_text(default: str | None, spec, column: dict) -> str | None:
    """The exact text (spark/exact.py) a row written before `spec` was added
    has in it: its literal DEFAULT, else NULL, else (NOT NULL) the server's
    implicit default. A DEFAULT that is an expression (CURRENT_TIMESTAMP)
    was evaluated by the server at the ALTER: not known here, NULL."""
    if column["type"] in _NUMERIC:
        text = _literal_text(default, spec, column)
        return None if text is None else _as_the_binlog_gives(text, column)
    return _literal_text(default, spec, column)


def _literal_text(default: str | None, spec, column: dict) -> str | None:
    if default is None or default.upper() == "NULL":
        if spec.nullable or default is not None:
            return None
        if column["type"] in _NUMERIC:
            return "0"
        if column["type"] == T.MYSQL_TYPE_ENUM and column["enum_values"]:
            return column["enum_values"][0]
        return _implicit_default(spec)
    if default[:1] == "'" and default[-1:] == "'":
        text = default[1:-1].replace("''", "'").replace("\\\\", "\\")
        if isinstance(spark_type(column), BinaryType):  # bytes are base64 in the views
            return base64.b64encode(text.encode("utf-8")).decode("ascii")
        return text
    if re.fullmatch(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?", default):
        return default
    return None


#: A text column: what a DEFAULT's literal is before the column's type holds it.
_TEXT = {"type": T.MYSQL_TYPE_VARCHAR, "charset": 33}


def _as_the_binlog_gives(text: str, column: dict) -> str:
    """A number's text as the binlog gives the column's values (DECIMAL(6,1):
    '0.0', not '0'; DECIMAL(8,2): '1.50', not '1.5'): the server's conversion
    of a text (binlake.spark.plans.conversions), as it stores the DEFAULT.
    Rows are counted by their texts (a table without a key), so a DEFAULT's
    must be the binlog's. As it is where there is no such conversion (FLOAT,
    BIT, YEAR)."""
    try:
        return server_value(text, _TEXT, column)
    except (KeyError, ArithmeticError, ValueError):
        return text


def _implicit_default(spec) -> str | None:
    """The exact text of what a NOT NULL column without a DEFAULT gives the
    rows it is added to, as MariaDB 10.11 gives it (lax sql_mode): empty
    text and bytes (a BINARY(n): n zero bytes, bytes in base64 as the views
    hold them), the zero date, time and datetime; None where not known
    here (JSON; TIMESTAMP, which explicit_defaults_for_timestamp decides)."""
    fraction = "." + "0" * spec.fsp if getattr(spec, "fsp", 0) else ""
    if spec.type in TEXT_TYPES and spec.type != "ENUM" or spec.type in _BYTE_STRINGS:
        return ""
    if spec.type == "BINARY":
        size = int(spec.args[0]) if spec.args else 1
        return base64.b64encode(bytes(size)).decode("ascii")
    return {"DATE": "0000-00-00", "DATETIME": "0000-00-00 00:00:00" + fraction,
            "TIME": "00:00:00" + fraction}.get(spec.type)


_BYTE_STRINGS = {"VARBINARY", "TINYBLOB", "BLOB", "MEDIUMBLOB", "LONGBLOB"}


def _omitted_texts(stretch, sources, columns: list) -> tuple:
    """Per column: what an INSERT that leaves the column out gives it, as
    `[exact text or None]`, or None when that is not known here (an
    expression or CURRENT_TIMESTAMP, a TIMESTAMP the server may fill, no
    DDL for the table). binlog_row_image=MINIMAL logs only the columns an
    INSERT names; the server filled in the rest from their DEFAULT."""
    out = []
    for source, column in zip(sources, columns):
        spec = None
        if stretch.definition is not None and source is not None:
            at = stretch.definition.index(source)
            spec = stretch.definition.columns[at] if at is not None else None
        if spec is None:
            out.append(None)
        elif spec.default is None or spec.default.upper() == "NULL":
            text = _default_text(spec.default, spec, column)
            known = spec.nullable or (text is not None and spec.type != "TIMESTAMP")
            out.append([text] if known else None)
        else:
            text = _default_text(spec.default, spec, column)
            out.append([text] if text is not None else None)
    return tuple(out)


_NUMERIC = {T.MYSQL_TYPE_TINY, T.MYSQL_TYPE_SHORT, T.MYSQL_TYPE_INT24, T.MYSQL_TYPE_LONG,
            T.MYSQL_TYPE_LONGLONG, T.MYSQL_TYPE_FLOAT, T.MYSQL_TYPE_DOUBLE,
            T.MYSQL_TYPE_NEWDECIMAL, T.MYSQL_TYPE_YEAR, T.MYSQL_TYPE_BIT}


def days_keyed_otherwise(plan: dict) -> list:
    """The stretches of a keyed table from before its key was added (found
    by no key or another, `key_then`), where they are its oldest: their
    changes are copies added and removed, before the rest by key. Where a
    key was dropped and added again in between, none (all by key)."""
    if not plan["primary_key"]:
        return []
    stretches = plan["stretches"]  # latest first
    then = [i for i, s in enumerate(stretches) if "key_then" in s]
    if not then or then != list(range(len(stretches) - len(then), len(stretches))) \
            or len(then) == len(stretches):
        return []
    return [stretches[i] for i in then]


def carried_columns(layout: dict, stretch: dict):
    """Per column of the layout: the column, and of the stretch the table's
    rows are carried from, the column it was (None: added since), its
    DEFAULT, its fractional digits where they changed, the type it was
    declared with where that changed."""
    return zip(layout["columns"], stretch["sources"], stretch["defaults"], stretch["fractions"],
               stretch.get("was") or [None] * len(stretch["sources"]))
