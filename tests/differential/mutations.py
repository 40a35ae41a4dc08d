"""Mutations of real rows events and their table maps, for the differential fuzzer.

Strategy: seeds are real rows events (trimmed to their first few rows so a
mutation is cheap). A mutation applies 1-3 operators drawn from three
families:

* row data: bit flips, interesting bytes, truncation, appended / inserted /
  deleted bytes, a splice of another seed's data, wholly random data, and
  structure-aware edits found by walking the first row with the pure
  decoders: a length prefix set huge (all 0xFF, just past the end, random),
  null-bitmap bytes changed, one value's bytes randomised;
* the event: columns-present bitmaps (before and after) and width changed,
  the event type switched between write/update/delete, v1/v2,
  PARTIAL_UPDATE_ROWS and PRE_GA;
* the table map: a column's type set to any code 0-255 (known codes more
  often, unknown ones included), its metadata set to boundary or random
  16-bit values, signedness flipped, charset changed (utf-8, latin1, ascii,
  utf-16/32, CJK codecs, binary, unknown ids), ENUM/SET names replaced,
  columns dropped, added or renamed to collide.

Rule: every mutation is a pure function of (seed list, run seed, index):
`mutate(seeds, Random(f"{run_seed}:{index}"))`, so any one case can be
replayed alone with `scripts/fuzz_differential.py --replay INDEX`.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

from binlake import core
from binlake.constants import ColumnType as T, EventType as E
from binlake.read.rows import PRE_GA_ROWS_EVENTS
from binlake.read.values import string_real_type

from differential.equality import compare_cores, outcome
from differential.seeds import binlog_files, rows_events

KNOWN_TYPES = [int(t) for t in T]
INTERESTING_BYTES = [0x00, 0x01, 0x7F, 0x80, 0x81, 0xFE, 0xFF, 0xFB, 0xFC, 0xFD, 0x20, 0x30]
INTERESTING_META = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xFF, 0x100, 0x1FF, 0xFFFF, 0x8000, 0x7FFF,
                    0x0A02, 0x4100, 0x411E, 0x411F, 0x1E1E, 0x0107, 0x0708, 0x0800, 0x0809,
                    0xF701, 0xF702, 0xF703, 0xF801, 0xF808, 0xF809, 0xFE14, 0xFEFF, 0xCEFC,
                    0x3000, 0xF700, 0xF800, 0x00FE]
CHARSETS = [None, 63, 33, 45, 255, 8, 11, 35, 54, 56, 60, 1, 28, 95, 12, 13, 19, 24, 248,
            9999, 0, 5000]
ROWS_TYPES = [E.WRITE_ROWS_EVENT_V1, E.UPDATE_ROWS_EVENT_V1, E.DELETE_ROWS_EVENT_V1,
              E.WRITE_ROWS_EVENT, E.UPDATE_ROWS_EVENT, E.DELETE_ROWS_EVENT,
              E.PARTIAL_UPDATE_ROWS_EVENT, E.PRE_GA_WRITE_ROWS_EVENT,
              E.PRE_GA_UPDATE_ROWS_EVENT, E.PRE_GA_DELETE_ROWS_EVENT]
UPDATES = {E.UPDATE_ROWS_EVENT_V1, E.UPDATE_ROWS_EVENT, E.PARTIAL_UPDATE_ROWS_EVENT,
           E.PRE_GA_UPDATE_ROWS_EVENT, E.UPDATE_ROWS_COMPRESSED_EVENT,
           E.UPDATE_ROWS_COMPRESSED_EVENT_V1}


@dataclass
class Seed:
    origin: str   #: corpus file it came from, and the event position
    event: object


# -- seeds ----------------------------------------------------------------------------

def _pure_end_of_rows(event, count: int) -> int | None:
    """Where the first `count` rows end, per the pure decoder; None if it cannot tell."""
    from binlake.read.rows import _pair_decoder
    core.use_pure(True)
    try:
        pair = _pair_decoder(event)
        buf, pos = event.rows_data, 0
        for _ in range(count):
            if pos >= len(buf):
                break
            _, pos = pair(buf, pos)
        return pos if pos <= len(buf) else None
    except Exception:  # noqa: BLE001 - a seed that does not decode is kept whole
        return None
    finally:
        core.use_pure(False)


def load_seeds(root: Path, max_rows: int = 3, per_layout: int = 2,
               max_bytes: int = 8192) -> list[Seed]:
    """Real rows events of the corpus, a few per distinct (layout, event type),
    each cut to its first `max_rows` rows; deterministic order."""
    seeds, per_key = [], {}
    for relpath in binlog_files(root):
        for event in rows_events(str(root / relpath)):
            table = event.table
            key = (event.header.type_code, event.columns_present, event.columns_present_after,
                   tuple((c.type, c.meta, c.unsigned, c.charset, c.enum_values is None,
                          c.set_values is None) for c in table.columns))
            if per_key.get(key, 0) >= per_layout:
                continue
            end = _pure_end_of_rows(event, max_rows)
            data = event.rows_data[:end] if end else event.rows_data[:max_bytes]
            per_key[key] = per_key.get(key, 0) + 1
            seeds.append(Seed(f"{relpath}@{event.header.pos}", replace(event, rows_data=bytes(data))))
    return seeds


# -- structure of the first row -----------------------------------------------------------

def _present(table, bitmap: int) -> list:
    return [c for c in table.columns if bitmap >> c.index & 1]


def field_spans(event) -> list[tuple[str, object, int, int]]:
    """(what, column, start, end) of the first row's null bitmaps and values,
    found with the pure decoders; stops quietly at the first value it cannot read."""
    from binlake.read.rows import _decoder, _plan
    table, spans = event.table, []
    if table is None or len(table.columns) < event.width:
        return spans
    pre_ga = event.header.type_code in PRE_GA_ROWS_EVENTS
    bitmaps = [event.columns_present]
    if event.header.type_code in UPDATES and not event.header.type_code == E.PARTIAL_UPDATE_ROWS_EVENT:
        bitmaps.append(event.columns_present_after if event.columns_present_after is not None
                       else event.columns_present)
    buf, pos = event.rows_data, 0
    try:
        for n, bitmap in enumerate(bitmaps):
            plan = _plan(table, bitmap, pre_ga and n == 0)
            columns = _present(table, bitmap)
            nulls = int.from_bytes(buf[pos:pos + plan.null_bytes], "little") >> plan.null_shift
            spans.append(("nulls", None, pos, pos + plan.null_bytes))
            pos += plan.null_bytes
            for i, column in enumerate(columns):
                if nulls >> i & 1:
                    continue
                start = pos
                _, pos = _decoder(column)(buf, pos)
                if pos > len(buf):
                    return spans
                spans.append(("value", column, start, pos))
    except Exception:  # noqa: BLE001 - the spans found so far are what we can use
        pass
    return spans


def _prefix_width(column) -> int | None:
    """The width of a value's length prefix, where mutating it is interesting."""
    t, meta = column.type, column.meta
    if t in (T.MYSQL_TYPE_JSON, T.MYSQL_TYPE_VECTOR, T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB,
             T.MYSQL_TYPE_MEDIUM_BLOB, T.MYSQL_TYPE_LONG_BLOB, T.MYSQL_TYPE_GEOMETRY):
        return meta & 0xFF if meta & 0xFF in (1, 2, 3, 4) else None
    if t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        return 1 if meta < 256 else 2
    if t == T.MYSQL_TYPE_STRING:
        real, length = string_real_type(meta)
        return (1 if length < 256 else 2) if real == T.MYSQL_TYPE_STRING else None
    return None


# -- operators on the row data --------------------------------------------------------------

def _flip_bits(event, rng, seeds):
    data = bytearray(event.rows_data)
    for _ in range(rng.randint(1, 8)):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return replace(event, rows_data=bytes(data))


def _interesting_byte(event, rng, seeds):
    data = bytearray(event.rows_data)
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] = rng.choice(INTERESTING_BYTES)
    return replace(event, rows_data=bytes(data))


def _truncate(event, rng, seeds):
    data = event.rows_data
    return replace(event, rows_data=data[:rng.randrange(len(data) + 1)] if data else b"")


def _extend(event, rng, seeds):
    tail = bytes(rng.choice(INTERESTING_BYTES + [rng.randrange(256)]) for _ in range(rng.randint(1, 24)))
    return replace(event, rows_data=event.rows_data + tail)


def _insert_delete(event, rng, seeds):
    data = bytearray(event.rows_data)
    at = rng.randrange(len(data) + 1)
    if rng.random() < 0.5 and data:
        del data[at:at + rng.randint(1, 4)]
    else:
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return replace(event, rows_data=bytes(data))


def _splice(event, rng, seeds):
    other = rng.choice(seeds).event.rows_data
    data = event.rows_data
    cut = rng.randrange(len(data) + 1)
    start = rng.randrange(len(other) + 1)
    return replace(event, rows_data=data[:cut] + other[start:start + rng.randint(1, 64)])


def _random_data(event, rng, seeds):
    return replace(event, rows_data=bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))))


def _huge_length(event, rng, seeds):
    """A length prefix of the first row set past the end of the data."""
    spans = [s for s in field_spans(event) if s[0] == "value" and _prefix_width(s[1])]
    if not spans:
        return _flip_bits(event, rng, seeds)
    _, column, start, end = rng.choice(spans)
    width = _prefix_width(column)
    current = int.from_bytes(event.rows_data[start:start + width], "little")
    value = rng.choice([(1 << 8 * width) - 1, current + 1, current + rng.randint(1, 300),
                        len(event.rows_data), max(current - 1, 0), 0,
                        rng.randrange(1 << 8 * width)]) % (1 << 8 * width)
    data = bytearray(event.rows_data)
    data[start:start + width] = value.to_bytes(width, "little")
    return replace(event, rows_data=bytes(data))


def _null_bitmap(event, rng, seeds):
    spans = [s for s in field_spans(event) if s[0] == "nulls" and s[3] > s[2]]
    if not spans:
        return _flip_bits(event, rng, seeds)
    _, _, start, end = rng.choice(spans)
    data = bytearray(event.rows_data)
    for i in range(start, min(end, len(data))):
        data[i] = rng.choice([0, 0xFF, rng.randrange(256), data[i] ^ (1 << rng.randrange(8))])
    return replace(event, rows_data=bytes(data))


def _value_bytes(event, rng, seeds):
    """One value of the first row replaced by random or boundary bytes of the same size."""
    spans = [s for s in field_spans(event) if s[0] == "value" and s[3] > s[2]]
    if not spans:
        return _flip_bits(event, rng, seeds)
    _, column, start, end = rng.choice(spans)
    fill = rng.choice(["random", "zero", "ones", "edge"])
    size = end - start
    if fill == "random":
        new = bytes(rng.randrange(256) for _ in range(size))
    elif fill == "zero":
        new = bytes(size)
    elif fill == "ones":
        new = b"\xff" * size
    else:
        new = bytes([rng.choice([0x7F, 0x80])]) + bytes(rng.choice([0, 0xFF]) for _ in range(size - 1))
    width = _prefix_width(column) or 0
    if width and rng.random() < 0.7:  # keep the prefix, change the content (bad UTF-8, bad JSON)
        new = event.rows_data[start:start + width] + new[width:]
    data = bytearray(event.rows_data)
    data[start:end] = new
    return replace(event, rows_data=bytes(data))


# -- operators on the event -------------------------------------------------------------------

def _bitmaps(event, rng, seeds):
    width = max(event.width, 1)
    flip = 1 << rng.randrange(width)
    if event.columns_present_after is not None and rng.random() < 0.5:
        return replace(event, columns_present_after=event.columns_present_after ^ flip)
    choice = rng.random()
    if choice < 0.1:
        return replace(event, columns_present=0)
    if choice < 0.2:
        return replace(event, columns_present=(1 << width) - 1)
    return replace(event, columns_present=event.columns_present ^ flip)


def _width(event, rng, seeds):
    width = max(0, event.width + rng.choice([-2, -1, 1, 2, 8]))
    mask = (1 << width) - 1
    present = mask if rng.random() < 0.5 else event.columns_present & mask
    after = event.columns_present_after
    return replace(event, width=width, columns_present=present,
                   columns_present_after=None if after is None else after & mask)


def _event_type(event, rng, seeds):
    code = rng.choice(ROWS_TYPES)
    header = replace(event.header, type_code=code)
    after = event.columns_present_after
    if code in UPDATES and code not in PRE_GA_ROWS_EVENTS:
        after = event.columns_present if after is None else after
    else:
        after = None
    return replace(event, header=header, columns_present_after=after)


# -- operators on the table map -------------------------------------------------------------------

def _with_columns(event, columns):
    table = replace(event.table, columns=tuple(columns), cache={})
    return replace(event, table=table)


def _column_type(event, rng, seeds):
    columns = list(event.table.columns)
    if not columns:
        return event
    i = rng.randrange(len(columns))
    code = rng.choice(KNOWN_TYPES) if rng.random() < 0.8 else rng.randrange(256)
    meta = columns[i].meta if rng.random() < 0.4 else _random_meta(rng)
    columns[i] = replace(columns[i], type=code, meta=meta)
    return _with_columns(event, columns)


def _random_meta(rng) -> int:
    pick = rng.random()
    if pick < 0.5:
        return rng.choice(INTERESTING_META)
    if pick < 0.75:
        return rng.randrange(256)
    return rng.randrange(1 << 16)


def _column_meta(event, rng, seeds):
    columns = list(event.table.columns)
    if not columns:
        return event
    i = rng.randrange(len(columns))
    meta = columns[i].meta
    meta = rng.choice([_random_meta(rng), meta ^ (1 << rng.randrange(16)), (meta + 1) & 0xFFFF,
                       max(meta - 1, 0), meta & 0xFF, meta & 0xFF00])
    columns[i] = replace(columns[i], meta=meta)
    return _with_columns(event, columns)


def _column_facts(event, rng, seeds):
    """Signedness, charset, ENUM/SET names: the optional metadata's facts."""
    columns = list(event.table.columns)
    if not columns:
        return event
    i = rng.randrange(len(columns))
    what = rng.choice(["unsigned", "charset", "enum", "set"])
    c = columns[i]
    if what == "unsigned":
        columns[i] = replace(c, unsigned=not c.unsigned)
    elif what == "charset":
        columns[i] = replace(c, charset=rng.choice(CHARSETS))
    else:
        names = rng.choice([None, [], ["a"], ["", "b"], [f"m{k}" for k in range(70)],
                            ["é", "日本", "x" * 300]])
        columns[i] = replace(c, **{f"{what}_values": names})
    return _with_columns(event, columns)


def _column_list(event, rng, seeds):
    columns = list(event.table.columns)
    pick = rng.random()
    if pick < 0.3 and columns:
        columns.pop()
    elif pick < 0.6 and columns:
        model = rng.choice(columns)
        columns.append(replace(model, index=len(columns), name=None))
    elif len(columns) >= 2:  # two columns with one name: the dict keeps one key
        a, b = rng.sample(range(len(columns)), 2)
        columns[b] = replace(columns[b], name=columns[a].key)
    return _with_columns(event, columns)


DATA_OPERATORS = [_flip_bits, _interesting_byte, _truncate, _extend, _insert_delete, _splice,
                  _random_data, _huge_length, _huge_length, _null_bitmap, _value_bytes,
                  _value_bytes]
EVENT_OPERATORS = [_bitmaps, _width, _event_type]
TABLE_OPERATORS = [_column_type, _column_type, _column_meta, _column_meta, _column_facts,
                   _column_list]


def mutate(seeds: list[Seed], rng: random.Random) -> tuple[Seed, object, list[str]]:
    """One mutated event: (its seed, the event, the operators applied in order)."""
    seed = rng.choice(seeds)
    event, applied = seed.event, []
    for _ in range(rng.choice([1, 1, 2, 2, 3])):
        family = rng.choices([DATA_OPERATORS, EVENT_OPERATORS, TABLE_OPERATORS], [5, 1, 3])[0]
        operator = rng.choice(family)
        event = operator(event, rng, seeds)
        applied.append(operator.__name__.lstrip("_"))
    return seed, event, applied


def case(seeds: list[Seed], run_seed: int, index: int):
    """(seed, mutated event, operators) of case `index` of run `run_seed`."""
    return mutate(seeds, random.Random(f"{run_seed}:{index}"))


def run_cases(seeds: list[Seed], run_seed: int, start: int, stop: int, max_failures: int = 50):
    """Cases [start, stop) through both cores: (counts by outcome, failures
    [(index, seed origin, operators, problem)]). Outcomes: 'rows', an error
    class name, or 'disagree'."""
    counts, failures = Counter(), []
    for index in range(start, stop):
        seed, event, applied = case(seeds, run_seed, index)
        problem = compare_cores(event)
        if problem:
            counts["disagree"] += 1
            if len(failures) < max_failures:
                failures.append((index, seed.origin, applied, problem))
        else:
            result = outcome(event, pure=False)
            counts[result[1] if result[0] == "error" else "rows"] += 1
    return counts, failures
