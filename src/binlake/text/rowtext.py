"""Row images as `mysqlbinlog -v` pseudo-SQL (`### INSERT INTO ...`, `###   @1=...`).

Strategy: mysqlbinlog prints a value from its bytes and the table map's
(type, meta) alone -- it ignores signedness, charsets and ENUM/SET names --
so this module walks the raw row images itself instead of using the decoded
Python values: integers appear as signed with the unsigned reading in
parentheses (`-1 (255)`), SETs as bit strings, ENUMs as indexes, strings as
their bytes with control characters as `\\xNN`. Each column type has one
small formatter `fmt(buf, pos) -> (text, next_pos)` plus the type name shown
by `-vv`; both are computed once per column and cached on the table map.

With the native core, `format_rows` asks it (`rust/src/sink/text.rs`, via
`_native.RowText`) for a whole event's text at once. This module stays the
reference (`BINLAKE_PURE=1`), prints MySQL JSON for both paths, and prints
every event the native sink hands back (corrupt images, metadata it reads
otherwise), so it alone owns the error texts; `tests/differential/
test_text_native.py` holds the two paths to the same output.

Rule: output is a `str` in which non-UTF-8 bytes are kept as surrogate
escapes, so writing it with `errors="surrogateescape"` gives back the exact
bytes mysqlbinlog writes.
"""

from __future__ import annotations

import re
import struct

from binlake import core
from binlake.constants import ColumnType as T
from binlake.read.rows import _packed_len
from binlake.read.decimals import decimal_groups, decimal_size
from binlake.read.values import (_DATETIME_HIRES_BYTES, _SEC_PART_BYTES, _TIME_HIRES_BYTES,
                                 datetime_hires_parts, time2_parts, time_hires_parts)

T_PARTIAL_UPDATE_ROWS = 39  # MySQL PARTIAL_UPDATE_ROWS_EVENT
_F32 = struct.Struct("<f").unpack_from
_F64 = struct.Struct("<d").unpack_from


def raw_text(data: bytes) -> str:
    """Bytes as they are, in a str (invalid UTF-8 kept as surrogate escapes)."""
    return data.decode("utf-8", "surrogateescape")


def pretty_string(value) -> str:
    """mysqlbinlog's pretty_print_str: single quotes, C-style escapes."""
    data = value if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8", "surrogateescape")
    escapes = {10: b"\\n", 13: b"\\r", 92: b"\\\\", 8: b"\\b", 9: b"\\t", 39: b"\\'", 0: b"\\0"}
    out = bytearray(b"'")
    for byte in data:
        out += escapes.get(byte, bytes([byte]))
    out += b"'"
    return raw_text(bytes(out))


_CONTROL = re.compile(rb"[\x00-\x1f]+")


def _escape_run(match) -> bytes:
    """A run of control bytes as \\xNN each (bytes.hex does the work in C)."""
    return ("\\x" + match.group().hex("x").replace("x", "\\x")).encode("ascii")


def quoted(data: bytes) -> str:
    """mysqlbinlog's `my_b_write_quoted`: control bytes as \\xNN, the rest as is.

    (Its branches for quote and backslash are never reached: both are above
    0x1F, so they are written unescaped; the output is for reading, not SQL.)
    """
    escaped = _CONTROL.sub(_escape_run, data)
    return raw_text(b"'" + escaped + b"'")


def _signed_and_unsigned(signed: int, bits: int) -> str:
    if signed < 0:
        return f"{signed} ({signed + (1 << bits)})"
    return str(signed)


def _integer(size: int, name: str):
    bits = size * 8

    def fmt(buf, pos):
        value = int.from_bytes(buf[pos:pos + size], "little", signed=True)
        return _signed_and_unsigned(value, bits), pos + size
    return fmt, name


def _bit_string(data: bytes, nbits: int) -> str:
    skip = len(data) * 8 - nbits
    bits = "".join(f"{byte:08b}" for byte in data)
    return "b'" + bits[skip:] + "'"


def _decimal_formatter(precision: int, scale: int):
    """DECIMAL text straight from the digits (no Decimal object): the same
    digit groups as read/decimals.py, printed as format(Decimal, 'f') would."""
    size = decimal_size(precision, scale)
    sign_bit = 1 << (8 * size - 1)
    all_bits = (1 << (8 * size)) - 1
    groups = decimal_groups(precision, scale)

    def fmt(buf, pos):
        raw = int.from_bytes(buf[pos:pos + size], "big")
        negative = not raw & sign_bit
        raw ^= sign_bit
        if negative:
            raw ^= all_bits
        digits = 0
        for shift, mask, weight in groups:
            digits += ((raw >> shift) & mask) * weight
        text = str(digits)
        if scale:
            text = text.rjust(scale + 1, "0")
            text = text[:-scale] + "." + text[-scale:]
        return ("-" + text if negative else text), pos + size
    return fmt


def _frac(micro: int, digits: int) -> str:
    return "." + ("%06d" % micro)[:digits] if digits else ""


def _length_prefixed(length_bytes: int):
    def fmt(buf, pos):
        n = int.from_bytes(buf[pos:pos + length_bytes], "little")
        start = pos + length_bytes
        return quoted(bytes(buf[start:start + n])), start + n
    return fmt


def _datetime2_text(buf, pos, fsp) -> str:
    nfrac = (fsp + 1) // 2
    packed = int.from_bytes(buf[pos:pos + 5], "big") - 0x8000000000
    frac = int.from_bytes(buf[pos + 5:pos + 5 + nfrac], "big", signed=True) if nfrac else 0
    micro = frac * (10000, 100, 1)[nfrac - 1] if nfrac else 0
    ymd, hms = packed >> 17, packed & 0x1FFFF
    ym = ymd >> 5
    return "%04d-%02d-%02d %02d:%02d:%02d%s" % (
        ym // 13, ym % 13, ymd & 31, hms >> 12, (hms >> 6) & 63, hms & 63, _frac(micro, fsp))


def _hires_formatter(column_type: int, meta: int):
    """MariaDB's hires TIMESTAMP/DATETIME/TIME(n), n the meta set from the DDL
    (the wire has none, and mysqlbinlog cannot print them): shown as the
    TIMESTAMP2/DATETIME2/TIME2 of the same n are."""
    if meta > 6:
        return None, f"Don't know how to handle column type: {column_type} meta: {meta} ({meta:04x})"
    if column_type == T.MYSQL_TYPE_TIMESTAMP:
        size = 4 + _SEC_PART_BYTES[meta]
        unit = 10 ** (6 - meta)

        def fmt(buf, pos):
            seconds = int.from_bytes(buf[pos:pos + 4], "big")
            frac = int.from_bytes(buf[pos + 4:pos + size], "big")
            return f"{seconds}{_frac(frac * unit, meta)}", pos + size
        return fmt, f"TIMESTAMP({meta})"
    if column_type == T.MYSQL_TYPE_DATETIME:
        size = _DATETIME_HIRES_BYTES[meta]

        def fmt(buf, pos):
            *fields, micro = datetime_hires_parts(buf, pos, meta)
            return "'%04d-%02d-%02d %02d:%02d:%02d%s'" % (*fields, _frac(micro, meta)), pos + size
        return fmt, f"DATETIME({meta})"
    size = _TIME_HIRES_BYTES[meta]

    def fmt(buf, pos):
        negative, h, m, s, micro = time_hires_parts(buf, pos, meta)
        return "'%s%02d:%02d:%02d%s'" % ("-" if negative else "", h, m, s, _frac(micro, meta)), pos + size
    return fmt, f"TIME({meta})"


def string_length_and_type(column_type: int, meta: int) -> tuple[int, int]:
    """What mysqlbinlog makes of a STRING column's metadata: (real type, max length)."""
    if column_type != T.MYSQL_TYPE_STRING:
        return column_type, 0
    if meta >= 256:
        byte0, byte1 = meta >> 8, meta & 0xFF
        if (byte0 & 0x30) != 0x30:  # a long CHAR(): length bits hidden in byte0
            return byte0 | 0x30, byte1 | (((byte0 & 0x30) ^ 0x30) << 4)
        return byte0, byte1
    return column_type, meta


def value_formatter(column_type: int, meta: int, mysql_flavour: bool = False):
    """(fmt, type name) for one column, or (None, reason) when mysqlbinlog
    cannot print it either. `meta` is in mysqlbinlog's own packing (see
    `printed_meta`)."""
    column_type, length = string_length_and_type(column_type, meta)
    if column_type == T.MYSQL_TYPE_TINY:
        return _integer(1, "TINYINT")
    if column_type == T.MYSQL_TYPE_SHORT:
        return _integer(2, "SHORTINT")
    if column_type == T.MYSQL_TYPE_INT24:
        return _integer(3, "MEDIUMINT")
    if column_type == T.MYSQL_TYPE_LONG:
        return _integer(4, "INT")
    if column_type == T.MYSQL_TYPE_LONGLONG:
        return _integer(8, "LONGINT")
    if column_type == T.MYSQL_TYPE_NEWDECIMAL:
        precision, scale = meta >> 8, meta & 0xFF
        if not 0 < precision <= 65 or scale > 30 or scale > precision:  # as read/values.py refuses
            return None, f"!! Bad DECIMAL({precision},{scale})"
        return _decimal_formatter(precision, scale), f"DECIMAL({precision},{scale})"
    if column_type == T.MYSQL_TYPE_FLOAT:
        return (lambda buf, pos: ("%-20g" % _F32(buf, pos)[0], pos + 4)), "FLOAT"
    if column_type == T.MYSQL_TYPE_DOUBLE:
        return (lambda buf, pos: ("%-.20g" % _F64(buf, pos)[0], pos + 8)), "DOUBLE"
    if column_type == T.MYSQL_TYPE_BIT:
        nbits = (meta >> 8) * 8 + (meta & 0xFF)
        nbytes = (nbits + 7) // 8

        def fmt(buf, pos):
            return _bit_string(bytes(buf[pos:pos + nbytes]), nbits), pos + nbytes
        return fmt, f"BIT({nbits})"
    if column_type in (T.MYSQL_TYPE_TIMESTAMP, T.MYSQL_TYPE_DATETIME, T.MYSQL_TYPE_TIME) and meta:
        return _hires_formatter(column_type, meta)
    if column_type == T.MYSQL_TYPE_TIMESTAMP:
        return (lambda buf, pos: (str(int.from_bytes(buf[pos:pos + 4], "little")), pos + 4)), "TIMESTAMP"
    if column_type == T.MYSQL_TYPE_TIMESTAMP2:
        size = 4 + (meta + 1) // 2

        def fmt(buf, pos):
            seconds = int.from_bytes(buf[pos:pos + 4], "big")
            nfrac = (meta + 1) // 2
            frac = int.from_bytes(buf[pos + 4:pos + 4 + nfrac], "big") if nfrac else 0
            micro = frac * (10000, 100, 1)[nfrac - 1] if nfrac else 0
            return f"{seconds}{_frac(micro, meta)}", pos + size
        return fmt, f"TIMESTAMP({meta})"
    if column_type == T.MYSQL_TYPE_DATETIME:
        def fmt(buf, pos):
            value = int.from_bytes(buf[pos:pos + 8], "little")
            d, t = divmod(value, 1000000)
            return "'%04d-%02d-%02d %02d:%02d:%02d'" % (
                d // 10000, d % 10000 // 100, d % 100, t // 10000, t % 10000 // 100, t % 100), pos + 8
        return fmt, "DATETIME"
    if column_type == T.MYSQL_TYPE_DATETIME2:
        size = 5 + (meta + 1) // 2
        return (lambda buf, pos: ("'" + _datetime2_text(buf, pos, meta) + "'", pos + size)), f"DATETIME({meta})"
    if column_type == T.MYSQL_TYPE_TIME:
        def fmt(buf, pos):
            value = int.from_bytes(buf[pos:pos + 3], "little", signed=True)
            sign, value = ("-", -value) if value < 0 else ("", value)
            return "'%s%02d:%02d:%02d'" % (sign, value // 10000, value % 10000 // 100, value % 100), pos + 3
        return fmt, "TIME"
    if column_type == T.MYSQL_TYPE_TIME2:
        size = 3 + (meta + 1) // 2

        def fmt(buf, pos):
            negative, h, m, s, micro = time2_parts(buf, pos, meta)
            return "'%s%02d:%02d:%02d%s'" % ("-" if negative else "", h, m, s, _frac(micro, meta)), pos + size
        return fmt, f"TIME({meta})"
    if column_type in (T.MYSQL_TYPE_NEWDATE, T.MYSQL_TYPE_DATE):
        def fmt(buf, pos):
            value = int.from_bytes(buf[pos:pos + 3], "little")
            return "'%04d:%02d:%02d'" % (value >> 9, value >> 5 & 15, value & 31), pos + 3
        return fmt, "DATE"
    if column_type == T.MYSQL_TYPE_YEAR:
        return (lambda buf, pos: ("%04d" % (buf[pos] + 1900), pos + 1)), "YEAR"
    if column_type == T.MYSQL_TYPE_ENUM:
        size = meta & 0xFF
        if size not in (1, 2):
            return None, f"!! Unknown ENUM packlen={size}"
        fmt = lambda buf, pos: (str(int.from_bytes(buf[pos:pos + size], "little")), pos + size)  # noqa: E731
        return fmt, "ENUM(1 byte)" if size == 1 else "ENUM(2 bytes)"
    if column_type == T.MYSQL_TYPE_SET:
        size = meta & 0xFF
        return (lambda buf, pos: (_bit_string(bytes(buf[pos:pos + size]), size * 8), pos + size)), \
            f"SET({size} bytes)"
    # MariaDB's compressed columns print as their twins do, their stored bytes
    # (header byte and all: mysqlbinlog does not uncompress), the name marked
    compressed = " COMPRESSED" if column_type in (T.MYSQL_TYPE_BLOB_COMPRESSED,
                                                  T.MYSQL_TYPE_VARCHAR_COMPRESSED) else ""
    if column_type in (T.MYSQL_TYPE_BLOB, T.MYSQL_TYPE_TINY_BLOB, T.MYSQL_TYPE_MEDIUM_BLOB,
                       T.MYSQL_TYPE_LONG_BLOB, T.MYSQL_TYPE_BLOB_COMPRESSED):
        names = {1: "TINYBLOB/TINYTEXT", 2: "BLOB/TEXT", 3: "MEDIUMBLOB/MEDIUMTEXT", 4: "LONGBLOB/LONGTEXT"}
        if meta not in names:
            return None, f"!! Unknown BLOB packlen={meta}"
        return _length_prefixed(meta), names[meta] + compressed
    if column_type in (T.MYSQL_TYPE_VARCHAR, T.MYSQL_TYPE_VAR_STRING,
                       T.MYSQL_TYPE_VARCHAR_COMPRESSED):
        return _length_prefixed(1 if meta < 256 else 2), f"VARSTRING({meta}){compressed}"
    if column_type == T.MYSQL_TYPE_STRING:
        return _length_prefixed(1 if length < 256 else 2), f"STRING({length})"
    if column_type == T.MYSQL_TYPE_GEOMETRY:
        def fmt(buf, pos):
            n = int.from_bytes(buf[pos:pos + meta], "little")
            return quoted(bytes(buf[pos + meta:pos + meta + n])), pos + meta + n
        return fmt, "GEOMETRY"
    if column_type == T.MYSQL_TYPE_JSON:
        # MySQL's mysqlbinlog prints the JSON document as text (MariaDB's cannot).
        def fmt(buf, pos):
            n = int.from_bytes(buf[pos:pos + meta], "little")
            start = pos + meta
            return quoted(json_text(bytes(buf[start:start + n]))), start + n
        return fmt, "JSON"
    if column_type == T.MYSQL_TYPE_VECTOR:
        def fmt(buf, pos):
            n = int.from_bytes(buf[pos:pos + meta], "little")
            start = pos + meta
            floats = struct.unpack_from("<%df" % (n // 4), buf, start)
            return "[" + ",".join("%.6g" % f for f in floats) + "]", start + n
        return fmt, f"VECTOR({meta})"
    if column_type == T.MYSQL_TYPE_DECIMAL:
        return None, ("Found Old DECIMAL (mysql-4.1 or earlier). "
                      "Not enough metadata to display the value.")
    return None, f"Don't know how to handle column type: {column_type} meta: {meta} ({meta:04x})"


def printed_meta(column) -> int:
    """A column's metadata packed as mysqlbinlog packs it: BIT keeps its two
    bytes little-endian (bits % 8 low), the other two-byte metadata big-endian,
    which is how `Column.meta` already holds them."""
    if column.type == T.MYSQL_TYPE_BIT:
        return (column.meta & 0xFF) << 8 | column.meta >> 8
    return column.meta


class RowFormatError(Exception):
    """A row mysqlbinlog would refuse to print (unknown type, corrupt image)."""


def _column_plan(table):
    """[(index, fmt, type name, printed meta, nullable)] cached on the table map."""
    plan = table.cache.get("rowtext")
    if plan is None:
        plan = []
        for column in table.columns:
            meta = printed_meta(column)
            fmt, name = value_formatter(column.type, meta)
            plan.append((column.index, fmt, name, meta, column.nullable))
        table.cache["rowtext"] = plan
    return plan


def _compiled_image(table, bitmap: int, prefix: str, verbose: int):
    """One image's lines in straight-line code, built once per (table map,
    bitmap, prefix, verbosity): each column's line prefix, NULL line and -vv
    comment are constants; only the value text is computed per row. None when
    a column has no formatter (the reference path reports it)."""
    key = ("rowtext-image", bitmap, prefix, verbose)
    cache = table.cache
    if key in cache:
        return cache[key]
    present = [entry for entry in _column_plan(table) if bitmap >> entry[0] & 1]
    if any(fmt is None for _, fmt, _, _, _ in present):
        cache[key] = None
        return None
    null_bytes = (len(present) + 7) // 8
    namespace = {"_from_bytes": int.from_bytes, "_prefix": prefix}
    lines = ["def image(buf, pos, out):",
             f"    nulls = _from_bytes(buf[pos:pos + {null_bytes}], 'little'); pos += {null_bytes}",
             "    append = out.append", "    append(_prefix)"]
    for slot, (index, fmt, name, meta, nullable) in enumerate(present):
        head = f"###   @{index + 1}="
        tail = (f" /* {name} meta={meta} nullable={int(nullable)} is_null=%d */" if verbose > 1
                else "") + "\n"
        namespace[f"_f{slot}"] = fmt
        namespace[f"_n{slot}"] = head + "NULL" + (tail % 1 if verbose > 1 else tail)
        namespace[f"_h{slot}"] = head
        namespace[f"_t{slot}"] = tail % 0 if verbose > 1 else tail
        lines += [f"    if nulls & {1 << slot}:", f"        append(_n{slot})", "    else:",
                  f"        text, pos = _f{slot}(buf, pos)",
                  f"        append(_h{slot} + text + _t{slot})"]
    lines.append("    return pos")
    exec(compile("\n".join(lines), "<rowtext image>", "exec"), namespace)
    cache[key] = namespace["image"]
    return cache[key]


def format_image(out: list, table, bitmap: int, buf: bytes, pos: int, prefix: str,
                 verbose: int, end: int, partial: frozenset = frozenset()) -> int:
    """Append one row image's lines to `out`; returns the position after it.
    `partial`: indexes of JSON columns sent as diffs (MySQL partial updates)."""
    if not partial:
        image = _compiled_image(table, bitmap, prefix, verbose)
        if image is not None:
            mark = len(out)
            try:
                new_pos = image(buf, pos, out)
                if new_pos <= end:
                    return new_pos
            except (IndexError, struct.error, ValueError, OverflowError):
                pass
            del out[mark:]  # the reference path below writes what mysqlbinlog writes
    plan = _column_plan(table)
    present = [entry for entry in plan if bitmap >> entry[0] & 1]
    null_bytes = (len(present) + 7) // 8
    nulls = int.from_bytes(buf[pos:pos + null_bytes], "little")
    pos += null_bytes
    out.append(prefix)
    for slot, (index, fmt, name, meta, nullable) in enumerate(present):
        is_null = nulls >> slot & 1
        line = f"###   @{index + 1}="
        if is_null:
            text = "NULL"
            if fmt is None:
                raise RowFormatError(name)
        else:
            if fmt is None:
                raise RowFormatError(name)
            try:
                if index in partial:
                    text, pos = _json_diff(buf, pos, index)
                else:
                    text, pos = fmt(buf, pos)
            except (IndexError, struct.error, ValueError, OverflowError) as exc:
                raise RowFormatError(f"corrupt row image: {exc}") from None
            if pos > end:
                out.append(line + "***Corrupted replication event was detected. "
                           "Not printing the value***\n")
                raise RowFormatError("row image runs past the end of the event")
        line += text
        if verbose > 1:
            line += f" /* {name} meta={meta} nullable={int(nullable)} is_null={is_null} */"
        out.append(line + "\n")
    return pos


def json_text(data: bytes) -> bytes:
    """A MySQL binary JSON document as mysqlbinlog shows it, before quoting
    (the native text sink calls it too)."""
    from binlake.read.mysql_json import binary_to_text
    return binary_to_text(data).encode("utf-8", "surrogateescape")


def json_diff_text(data: bytes, index: int) -> bytes:
    """A partially updated JSON column as MySQL's mysqlbinlog shows it:
    JSON_REPLACE/JSON_INSERT/JSON_REMOVE calls applied to the old value
    (the native text sink calls it too)."""
    from binlake.read.mysql_json import parse_diffs
    text = f"@{index + 1}"
    for diff in parse_diffs(data).diffs:
        text = diff.to_sql(text)
    return text.encode("utf-8", "surrogateescape")


def _json_diff(buf: bytes, pos: int, index: int) -> tuple[str, int]:
    length = int.from_bytes(buf[pos:pos + 4], "little")
    return raw_text(json_diff_text(bytes(buf[pos + 4:pos + 4 + length]), index)), pos + 4 + length


def _partial_columns(table, buf: bytes, pos: int) -> tuple[frozenset, int]:
    """PARTIAL_UPDATE_ROWS: value options, then one bit per JSON column of the table."""
    try:
        options, pos = _packed_len(buf, pos)
    except (IndexError, ValueError) as exc:
        raise RowFormatError(f"partial update value options: {exc}") from None
    if not options & 1:  # PARTIAL_JSON_UPDATES
        return frozenset(), pos
    json_columns = [c.index for c in table.columns if c.type == T.MYSQL_TYPE_JSON]
    nbytes = (len(json_columns) + 7) // 8
    bits = int.from_bytes(buf[pos:pos + nbytes], "little")
    return frozenset(i for n, i in enumerate(json_columns) if bits >> n & 1), pos + nbytes


def identifier(name: str) -> str:
    """`name` quoted with backticks, inner backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def _native_printer(native, table, database: str | None):
    """(native RowText or False, the name to show as UTF-8 bytes), cached on the map."""
    cache = table.cache
    key = ("native_text", database)
    entry = cache.get(key)
    if entry is None:
        printer = cache.get("native_text")
        if printer is None:
            from binlake.read.rows import native_layout
            try:
                printer = native.RowText(native_layout(table, native))
            except (ValueError, TypeError, OverflowError):  # a map the core cannot hold
                printer = False
            cache["native_text"] = printer
        name = f"{identifier(database or table.database)}.{identifier(table.table)}"
        # bytes: a name from the command line may hold surrogate escapes
        entry = cache[key] = (printer, name.encode("utf-8", "surrogateescape"))
    return entry


def _native_arguments(event, verbose: int, name: bytes) -> tuple:
    """What RowText.format and format_window take after the data, in order."""
    nbytes = (event.width + 7) // 8
    after = event.columns_present_after
    return (event.columns_present.to_bytes(nbytes, "little"),
            None if after is None else after.to_bytes(nbytes, "little"),
            event.header.type_code == T_PARTIAL_UPDATE_ROWS, min(verbose, 2), name)


def _native_text(native, event, table, buf, verbose: int, database: str | None):
    """(text, count) from the native core, or None where this module must
    print the event (it alone owns the error texts and corrupt-value lines)."""
    printer, name = _native_printer(native, table, database)
    if not printer:
        return None
    return printer.format(event.operation, bytes(buf), *_native_arguments(event, verbose, name))


def format_rows_windowed(event, verbose: int, database: str | None, spool) -> int | None:
    """A huge event's `###` lines (its rows_data a rows.LazyRowData) printed
    by the native core one window at a time into `spool` (a binary file; None:
    count only), so the event's text is never held whole. Returns the row
    count, or None where the native core does not print this event: then
    `format_rows` prints it whole, and whatever went to `spool` is void."""
    from binlake.read.rows import RowWindows
    native = core.native()
    if native is None:
        return None
    printer, name = _native_printer(native, event.table, database)
    if not printer:
        return None
    arguments = _native_arguments(event, verbose, name)
    windows = RowWindows(event.rows_data)
    count = 0
    for _, buf, last in windows:
        printed = printer.format_window(event.operation, buf, *arguments)
        if printed is None:
            return None
        text, rows, stop, failed = printed
        if failed and last:  # no larger window helps: the reference says why
            return None
        if spool is not None:
            spool.write(text)
        count += rows
        windows.advance(stop)
    return count


def format_rows(event, verbose: int, database: str | None = None) -> tuple[list[str], int]:
    """All rows of a rows event as mysqlbinlog -v lines, and the row count
    (`database`: the name to show, after --rewrite-db)."""
    table = event.table
    buf = event.rows_data
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        # A huge event left in the file (rows.LazyRowData): its BINLOG block
        # needs the whole event anyway, as mysqlbinlog's does.
        buf = buf.read(0, len(buf))
    native = core.native()
    if native is not None:
        printed = _native_text(native, event, table, buf, verbose, database)
        if printed is not None:
            return [printed[0]], printed[1]
    operation = event.operation
    name = f"{identifier(database or table.database)}.{identifier(table.table)}"
    end = len(buf)
    out: list[str] = []
    if operation == "insert" and end == 0:
        return [f"### INSERT INTO {name} VALUES ()\n"], 1
    command, first, second = {"insert": ("INSERT INTO", "### SET\n", None),
                              "delete": ("DELETE FROM", "### WHERE\n", None),
                              "update": ("UPDATE", "### WHERE\n", "### SET\n")}[operation]
    pos = 0
    count = 0
    after_bitmap = event.columns_present_after
    partial_event = event.header.type_code == T_PARTIAL_UPDATE_ROWS
    while pos < end:
        start = pos
        count += 1
        out.append(f"### {command} {name}\n")
        pos = format_image(out, table, event.columns_present, buf, pos, first, verbose, end)
        if second is not None:
            partial = frozenset()
            if partial_event:
                partial, pos = _partial_columns(table, buf, pos)
            if not after_bitmap:
                out.append("### SET /* no columns */\n")
            else:
                pos = format_image(out, table, after_bitmap, buf, pos, second, verbose, end, partial)
        if pos == start:
            # Images of no columns take no bytes: printing on would never end
            # (rows.decode_rows and the native decoder refuse the same data).
            raise RowFormatError(f"row images of no columns cannot hold the {end - start} "
                                 "bytes left")
    return out, count
