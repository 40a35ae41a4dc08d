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
from .values import string_real_type

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


def compile_image(columns, decoders, null_bytes: int):
    namespace: dict = {"_from_bytes": int.from_bytes}
    lines = ["def image(buf, pos):"]
    if null_bytes == 1:
        lines.append("    nulls = buf[pos]; pos += 1")
    else:
        lines.append(f"    nulls = _from_bytes(buf[pos:pos + {null_bytes}], 'little'); pos += {null_bytes}")
    names = []
    for i, (column, decoder) in enumerate(zip(columns, decoders)):
        v = f"v{i}"
        names.append(v)
        lines.append(f"    if nulls & {1 << i}:")
        lines.append(f"        {v} = None")
        lines.append("    else:")
        inline = _INLINE_STRUCTS.get((column.type, column.unsigned))
        width = _string_length_bytes(column)
        if inline:
            fmt, size = inline
            namespace[f"_u{i}"] = struct.Struct(fmt).unpack_from
            lines.append(f"        {v} = _u{i}(buf, pos)[0]; pos += {size}")
        elif width is not None and (column.type == T.MYSQL_TYPE_GEOMETRY or
                                    codec_for(column.charset) in (None, "utf-8")):
            if width == 1:
                lines.append("        n = buf[pos]; pos += 1")
            else:
                lines.append(f"        n = _from_bytes(buf[pos:pos + {width}], 'little'); pos += {width}")
            lines.append(f"        {v} = buf[pos:pos + n]; pos += n")
            if column.type != T.MYSQL_TYPE_GEOMETRY and codec_for(column.charset) == "utf-8":
                lines.append("        try:")
                lines.append(f"            {v} = {v}.decode('utf-8')")
                lines.append("        except UnicodeDecodeError:")
                lines.append("            pass")
        else:
            namespace[f"_d{i}"] = decoder
            lines.append(f"        {v}, pos = _d{i}(buf, pos)")
    for i, column in enumerate(columns):
        namespace[f"_k{i}"] = column.key
    items = ", ".join(f"_k{i}: {v}" for i, v in enumerate(names))
    lines.append(f"    return {{{items}}}, pos")
    exec(compile("\n".join(lines), f"<row image of {len(columns)} columns>", "exec"), namespace)
    return namespace["image"]
