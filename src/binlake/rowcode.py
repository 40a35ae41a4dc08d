"""Row-image decoders generated as Python source, once per row plan.

Strategy: a rows event repeats the same layout for every row, so the layout
is turned into straight-line code: one `if nulls & bit` per column, fixed-width
numbers and length-prefixed strings read inline with precompiled structs, and
a call to the column's decoder (values.py) for everything else. The generic
loop in rows.py stays the reference; this must return the same values.

Rule: the generated code only uses names bound in `namespace` below and the
column decoders; no data from the binlog ever reaches the source text (keys
are passed as bound constants, not spliced in).
"""

from __future__ import annotations

import struct

from .charsets import codec_for
from .constants import ColumnType as T
from .values import decimal_size, string_real_type

_INLINE_STRUCTS = {
    (T.MYSQL_TYPE_TINY, False): ("<b", 1), (T.MYSQL_TYPE_TINY, True): ("<B", 1),
    (T.MYSQL_TYPE_SHORT, False): ("<h", 2), (T.MYSQL_TYPE_SHORT, True): ("<H", 2),
    (T.MYSQL_TYPE_LONG, False): ("<i", 4), (T.MYSQL_TYPE_LONG, True): ("<I", 4),
    (T.MYSQL_TYPE_LONGLONG, False): ("<q", 8), (T.MYSQL_TYPE_LONGLONG, True): ("<Q", 8),
    (T.MYSQL_TYPE_FLOAT, False): ("<f", 4), (T.MYSQL_TYPE_FLOAT, True): ("<f", 4),
    (T.MYSQL_TYPE_DOUBLE, False): ("<d", 8), (T.MYSQL_TYPE_DOUBLE, True): ("<d", 8),
}


def _string_length_bytes(column) -> int | None:
    """Length-prefix width of a string/blob column read inline, else None."""
    t = column.type
    if t in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING):
        return 1 if column.meta < 256 else 2
    if t == T.MYSQL_TYPE_STRING:
        real, length = string_real_type(column.meta)
        if real == T.MYSQL_TYPE_STRING:
            return 1 if length < 256 else 2
        return None
    if t in (T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
             T.MYSQL_TYPE_LONG_BLOB, T.MYSQL_TYPE_GEOMETRY):
        return column.meta if column.meta in (1, 2, 3, 4) else None
    return None


def _column_code(i: int, column, decoder, namespace: dict, indent: str) -> list[str]:
    """Lines that read column i into `v{i}` and advance `pos`."""
    v = f"v{i}"
    inline = _INLINE_STRUCTS.get((column.type, column.unsigned))
    width = _string_length_bytes(column)
    codec = codec_for(column.charset)
    if inline:
        fmt, size = inline
        namespace[f"_u{i}"] = struct.Struct(fmt).unpack_from
        return [f"{indent}{v} = _u{i}(buf, pos)[0]; pos += {size}"]
    if width is not None and (column.type == T.MYSQL_TYPE_GEOMETRY or codec in (None, "utf-8")):
        lines = [f"{indent}n = buf[pos]; pos += 1" if width == 1 else
                 f"{indent}n = _from_bytes(buf[pos:pos + {width}], 'little'); pos += {width}",
                 f"{indent}{v} = buf[pos:pos + n]; pos += n"]
        if column.type != T.MYSQL_TYPE_GEOMETRY and codec == "utf-8":
            lines += [f"{indent}try:", f"{indent}    {v} = {v}.decode('utf-8')",
                      f"{indent}except UnicodeDecodeError:", f"{indent}    pass"]
        return lines
    if column.type == T.MYSQL_TYPE_NEWDECIMAL and hasattr(decoder, "cache"):
        # equal byte strings share one Decimal (values.py keeps the cache bounded);
        # a DECIMAL of impossible metadata has no cache: its decoder raises UnsupportedFeature
        size = decimal_size(column.meta >> 8, column.meta & 0xFF)
        namespace[f"_d{i}"] = decoder
        namespace[f"_c{i}"] = decoder.cache
        return [f"{indent}{v} = _c{i}.get(buf[pos:pos + {size}])",
                f"{indent}if {v} is None:",
                f"{indent}    {v} = _d{i}(buf, pos)[0]",
                f"{indent}pos += {size}"]
    namespace[f"_d{i}"] = decoder
    return [f"{indent}{v}, pos = _d{i}(buf, pos)"]


def _merged_fixed_runs(columns) -> dict[int, tuple[str, int, int]]:
    """Runs of 2+ consecutive inline numbers, read with one struct when no
    column of the run is NULL: {first index: (format, count, size)}."""
    runs, i = {}, 0
    while i < len(columns):
        j = i
        while j < len(columns) and (columns[j].type, columns[j].unsigned) in _INLINE_STRUCTS:
            j += 1
        if j - i >= 2:
            fmts = [_INLINE_STRUCTS[(c.type, c.unsigned)] for c in columns[i:j]]
            runs[i] = ("<" + "".join(f[1:] for f, _ in fmts), j - i, sum(n for _, n in fmts))
        i = max(j, i + 1)
    return runs


def compile_image(columns, decoders, null_bytes: int):
    namespace: dict = {"_from_bytes": int.from_bytes}
    lines = ["def image(buf, pos):"]
    if null_bytes == 1:
        lines.append("    nulls = buf[pos]; pos += 1")
    else:
        lines.append(f"    nulls = _from_bytes(buf[pos:pos + {null_bytes}], 'little'); pos += {null_bytes}")
    # Most rows have no NULL: one straight path without a test per column.
    lines.append("    if not nulls:")
    lines.append("        pass")  # an image of no columns (a MINIMAL image of nothing) has no body
    runs = _merged_fixed_runs(columns)
    i = 0
    while i < len(columns):
        if i in runs:
            fmt, count, size = runs[i]
            namespace[f"_r{i}"] = struct.Struct(fmt).unpack_from
            targets = ", ".join(f"v{k}" for k in range(i, i + count))
            lines.append(f"        {targets}, = _r{i}(buf, pos); pos += {size}")
            i += count
            continue
        lines += _column_code(i, columns[i], decoders[i], namespace, "        ")
        i += 1
    lines.append("    else:")
    lines.append("        pass")
    for i, (column, decoder) in enumerate(zip(columns, decoders)):
        lines.append(f"        if nulls & {1 << i}:")
        lines.append(f"            v{i} = None")
        lines.append("        else:")
        lines += _column_code(i, column, decoder, namespace, "            ")
    for i, column in enumerate(columns):
        namespace[f"_k{i}"] = column.key
    items = ", ".join(f"_k{i}: v{i}" for i in range(len(columns)))
    lines.append(f"    return {{{items}}}, pos")
    exec(compile("\n".join(lines), f"<row image of {len(columns)} columns>", "exec"), namespace)
    return namespace["image"]
