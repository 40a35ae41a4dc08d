"""`binlake dump --flashback`: the text mariadb-binlog -B prints, which
replayed undoes the binlog range.

Strategy, as mariadb-binlog 10.11 builds it (one pass, then the held text
last first):
- Events are read forward and their session state kept as usual. What
  describes the data (format descriptions, table map headers, row counts,
  Intvar/Rand/User_var, LOAD DATA, Gtid lists, rotates) is written at once.
- What makes a transaction is held, one element per event, and written in
  reverse order at the end, over all the files together: a Query keeps its
  header and session lines, and its statement becomes the opposite keyword
  (BEGIN -> COMMIT, COMMIT -> START TRANSACTION; any other statement is
  left out, as mariadb-binlog does); an Xid becomes START TRANSACTION; a
  MariaDB GTID that opens a transaction becomes COMMIT; a Stop event is
  written after the final COMMIT.
- The rows events of one statement are held until its last one (STMT_END_F),
  then become one element: their headers last first (the statement-end flag
  moved to the first event), one BINLOG block with the statement's table
  maps and the rewritten events last first, and their `###` lines.
- A rows event is rewritten byte for byte as mariadb-binlog rewrites it:
  Write and Delete swap type codes, an Update's two images swap places, the
  rows come last first; the header, table id, bitmaps and the 4-byte
  checksum stay as they were (the server does not check it in a BINLOG
  statement). Where an Update's two images have different columns (NOBLOB
  row images that left a BLOB out), the two column bitmaps swap with them,
  so the event stays true; an update or delete whose old values are not
  logged (MINIMAL images) cannot be undone and is refused (mariadb-binlog
  10.11 measures both images with the before image's columns, and fails
  with "Error row length" or prints wrong rows).

The held elements go to a spooled temporary file, so a large range costs
disk, not memory.
"""

from __future__ import annotations

import dataclasses
import tempfile
import zlib
from array import array

from binlake.constants import EventType as E, STMT_END_F
from binlake.read.events import (MariadbGtidEvent, QueryEvent, RowsEvent, StopEvent, TableMapEvent,
                     XaPrepareEvent, XidEvent)
from binlake.read.rows import LazyRowData, checked_table
from binlake.text.rowtext import RowFormatError, format_image, format_rows
from binlake.text.mysqlbinlog import _ROWS_NAMES, TextError, TextPrinter

#: The type codes mariadb-binlog swaps: Write <-> Delete, v1 and v2.
SWAPPED_TYPES = {E.WRITE_ROWS_EVENT_V1: E.DELETE_ROWS_EVENT_V1,
                 E.DELETE_ROWS_EVENT_V1: E.WRITE_ROWS_EVENT_V1,
                 E.WRITE_ROWS_EVENT: E.DELETE_ROWS_EVENT,
                 E.DELETE_ROWS_EVENT: E.WRITE_ROWS_EVENT}
#: The rows events it rewrites (after uncompressing MariaDB's compressed ones).
FLASHBACK_TYPES = frozenset(SWAPPED_TYPES) | {E.UPDATE_ROWS_EVENT_V1, E.UPDATE_ROWS_EVENT}
#: Header names after the swap (compressed events keep theirs, as mariadb-binlog prints them)
_FLASHBACK_NAMES = {E.WRITE_ROWS_EVENT: "Delete_rows", E.WRITE_ROWS_EVENT_V1: "Delete_rows",
                    E.DELETE_ROWS_EVENT: "Write_rows", E.DELETE_ROWS_EVENT_V1: "Write_rows"}
#: Offsets in the common event header.
TYPE_CODE_OFFSET = 4
#: The rows event's flags follow its table id in the post-header.
ROWS_FLAGS_SIZE = 2


class FlashbackError(TextError):
    """A rows event whose rows cannot be walked: mariadb-binlog stops there."""


def flashback_rows_event(raw: bytes, event: RowsEvent, has_crc: bool,
                         map_shown: bool = True) -> tuple[bytes, RowsEvent]:
    """The event's bytes as mariadb-binlog -B rewrites them, and the event
    those bytes decode to (for its `###` lines). `raw`: the event's bytes,
    uncompressed (RawEvents.rows_raw). Without its table map, or when the
    map was filtered away (`map_shown` false), only the type code changes,
    as in mariadb-binlog."""
    code = raw[TYPE_CODE_OFFSET]
    new_code = SWAPPED_TYPES.get(code, code)
    out = bytearray(raw)
    out[TYPE_CODE_OFFSET] = new_code
    header = dataclasses.replace(event.header, type_code=new_code)
    if event.table is None or not map_shown or code not in FLASHBACK_TYPES:
        return bytes(out), dataclasses.replace(event, header=header)
    _check_undoable(event)
    end = len(raw) - (4 if has_crc else 0)
    rows_at = end - len(event.rows_data)
    data = bytes(raw[rows_at:end])
    table = checked_table(event)
    before, after = event.columns_present, event.columns_present_after
    rows, pos, size = [], 0, len(data)
    try:
        # each image measured as the verbose printer reads it (mariadb-binlog does the same)
        while pos < size:
            middle = format_image([], table, before, data, pos, "", 0, size)
            if after is None:
                end_of_row = middle
                rows.append(data[pos:middle])
            else:
                end_of_row = format_image([], table, after, data, middle, "", 0, size)
                rows.append(data[middle:end_of_row] + data[pos:middle])  # after image first
            if end_of_row == pos:
                raise RowFormatError(f"row images of no columns cannot hold the {size - pos} "
                                     "bytes left")
            pos = end_of_row
        if pos > size:
            raise RowFormatError("row image runs past the end of the event")
    except RowFormatError as exc:
        raise FlashbackError(f"rows event at {event.header.file}:{event.header.pos} cannot be "
                             f"reversed: {exc}") from None
    out[rows_at:end] = b"".join(reversed(rows))
    present, present_after = event.columns_present, event.columns_present_after
    if present_after is not None and present_after != present:
        width = (event.width + 7) // 8
        before_at = rows_at - 2 * width
        out[before_at:rows_at] = raw[before_at + width:rows_at] + raw[before_at:before_at + width]
        present, present_after = present_after, present
    rewritten = dataclasses.replace(event, header=header, rows_data=bytes(out[rows_at:end]),
                                    columns_present=present, columns_present_after=present_after)
    return bytes(out), rewritten


def _check_undoable(event: RowsEvent) -> None:
    """Partial row images (binlog_row_image MINIMAL or NOBLOB) do not hold
    the old values an undo needs: an update that set columns its before image
    lacks, or a delete whose row is not logged whole, is refused."""
    before, after = event.columns_present, event.columns_present_after
    every = (1 << event.width) - 1
    if after is not None:
        lost = after & ~before
    elif event.header.type_code in (E.DELETE_ROWS_EVENT_V1, E.DELETE_ROWS_EVENT):
        lost = every & ~before
    else:
        return
    if lost:
        columns = ", ".join(f"@{i + 1}" for i in range(event.width) if lost >> i & 1)
        raise FlashbackError(
            f"{event.header.file}: byte {event.header.pos}: cannot undo this "
            f"{event.operation} of {event.table.qualified_name}: the old values of {columns} "
            "are not logged (binlog_row_image=MINIMAL or NOBLOB; flashback needs FULL)")


def _whole_rows(event: RowsEvent) -> RowsEvent:
    """A huge event's rows read into memory (reversing needs them all)."""
    data = event.rows_data
    if isinstance(data, LazyRowData):
        return dataclasses.replace(event, rows_data=data.read(0, len(data)))
    return event


class _HeldText:
    """Text elements appended in order and read back last first, spooled to
    disk past `memory_limit` bytes."""

    def __init__(self, memory_limit: int = 32 << 20):
        self._file = tempfile.SpooledTemporaryFile(max_size=memory_limit)
        self._ends = array("Q")

    def add(self, text: str) -> None:
        if text:
            self._file.write(text.encode("utf-8", "surrogateescape"))
            self._ends.append(self._file.tell())

    def last_first(self):
        for index in range(len(self._ends) - 1, -1, -1):
            start = self._ends[index - 1] if index else 0
            self._file.seek(start)
            yield self._file.read(self._ends[index] - start)

    def close(self) -> None:
        self._file.close()


class FlashbackPrinter(TextPrinter):
    """mariadb-binlog --flashback's text (see the module docstring)."""

    def __init__(self, out, options=None):
        super().__init__(out, options)
        self._held = _HeldText()
        self._stop_text = ""
        self._statement: list[RowsEvent] = []
        self._holding: list | None = None   # while an event's text is being held
        self._shown_raw: dict = {}          # (file, pos) -> bytes shown by -H

    def write(self, text: str) -> None:
        if self._holding is not None:
            self._holding.append(text)
        else:
            super().write(text)

    def _hold(self, print_event, event) -> str:
        """What `print_event(event)` writes, held instead of written (but its
        `# at` line, which `_position_line` writes at once)."""
        self._holding = []
        shown = self.options.print_event_positions
        self.options.print_event_positions = False
        try:
            print_event(event)
            return "".join(self._holding)
        finally:
            self._holding = None
            self.options.print_event_positions = shown

    def end_file(self) -> None:
        pass  # one DELIMITER ; after the held text, at the end

    def end(self) -> None:
        self.flush()
        buffer = self._buffer
        for element in self._held.last_first():
            if buffer is not None:
                buffer.write(element)
            else:
                self.out.write(element.decode("utf-8", "surrogateescape"))
        self._held.close()
        self.write(f"COMMIT\n{self.delimiter}\n" + self._stop_text)
        super().end_file()
        super().end()

    def abandon(self) -> None:
        """After an error: the held text is dropped, and nothing more written."""
        self._held.close()
        self.flush()

    def native_ready(self) -> bool:
        return False

    def event(self, event) -> None:
        if isinstance(event, RowsEvent):
            self._position_line(event)
            self._flashback_rows(event)
        elif isinstance(event, (QueryEvent, XidEvent, XaPrepareEvent, MariadbGtidEvent)) \
                and event.header.type_code != E.EXECUTE_LOAD_QUERY_EVENT:
            skip_line = self._skip_replication(event)  # written at once, as mariadb-binlog
            if skip_line:
                self.write(skip_line)
            self._position_line(event)
            handler = {XidEvent: self._print_xid, MariadbGtidEvent: self._print_mariadb_gtid}.get(
                type(event))
            if handler is None:
                self._held.add(self._hold(super().event, event))
            else:
                self._held.add(self._hold(handler, event))
        elif isinstance(event, TableMapEvent) and self.options.short_form \
                and not self.options.print_row_count:
            # mariadb-binlog -s flushes no head cache at a table map then: the
            # Annotate_rows text goes with the statement
            self._position_line(event)
            self.state.head.append(self._hold(super().event, event))
        elif isinstance(event, StopEvent):
            self._position_line(event)
            self._stop_text = self._hold(super().event, event)
        else:
            super().event(event)

    def _position_line(self, event) -> None:
        """Note the event and write its `# at` line (at once, in file order)."""
        self.note(event)
        self._current_position = self._position(event)
        if not self.options.short_form and self.options.print_event_positions:
            self.write(f"# at {self._current_position}\n")

    # -- what the held events become ---------------------------------------------
    def write_statement(self, prefix: str, query: str) -> None:
        opposite = {"BEGIN": "COMMIT", "COMMIT": "START TRANSACTION"}.get(query)
        self.write(prefix + (f"{opposite}\n{self.delimiter}\n" if opposite else ""))

    def _print_xid(self, event) -> None:
        if not self.options.short_form:
            self.write(self.header(event) + f"\tXid = {event.xid}\n")
        self.write(f"START TRANSACTION{self.delimiter}\n")

    def _print_mariadb_gtid(self, event) -> None:
        self.state.gtid_flags2 = event.flags2
        if not event.flags2 & 1:  # not FL_STANDALONE: it opened a transaction
            self.write(f"COMMIT\n{self.delimiter}\n")

    def _skip_replication(self, event) -> str:
        if self._holding is not None:
            return ""  # written before the event was held
        return super()._skip_replication(event)

    # -- rows ---------------------------------------------------------------------
    def _flashback_rows(self, event: RowsEvent) -> None:
        """Hold the statement's rows events; at its end, print them reversed."""
        flags = event.flags
        end = bool(flags & STMT_END_F)
        flags &= ~STMT_END_F
        if not self._statement:
            flags |= STMT_END_F  # the flag moves to the statement's first event
        self._statement.append(dataclasses.replace(event, flags=flags))
        if end:
            statement, self._statement = self._statement, []
            self._print_statement(statement, event)

    def _print_statement(self, statement: list, last: RowsEvent) -> None:
        state, options = self.state, self.options
        self._annotate = None
        filtered, state.ignored_tables = state.ignored_tables, set()
        if last.table_id in filtered:
            # Its end is filtered away: nothing of it is shown (mariadb-binlog
            # writes the held table maps' base64 without its BINLOG opening).
            state.head.clear()
            state.body.clear()
            return
        if self._needs_fde(last):
            return
        rows = 0
        for event in reversed(statement):
            # (a filtered table's rows still come, as mariadb-binlog's do; rows
            # whose table map was not printed are not reversed, as there)
            map_shown = event.table_id in state.printed_database and event.table_id not in filtered
            raw, rewritten = self._rewritten(event, map_shown)
            if not options.short_form:
                code = event.header.type_code
                name = _FLASHBACK_NAMES.get(code) or _ROWS_NAMES.get(code) or event.header.type_str
                flag = " flags: STMT_END_F" if event.flags & STMT_END_F else ""
                state.head.append(self.header(event) + f"\t{name}: table id {event.table_id}{flag}\n")
            if self._encode_base64:
                state.body.append(self._base64(event, raw))
            if rewritten.table is not None and event.table_id in state.printed_database:
                try:
                    lines, count = format_rows(rewritten, options.verbose,
                                               state.printed_database[event.table_id])
                except RowFormatError as exc:
                    self.errors.append(str(exc))
                    lines, count = [], 0
                if options.verbose:
                    state.tail.append("".join(lines))
                rows += count
            elif options.verbose:
                state.tail.append(f"### Row event for unknown table #{event.table_id}")
        self._held.add("".join(self._statement_text()))
        if options.print_row_count:
            self.write(f"# Number of rows: {rows}\n")
        state.head.clear()
        state.body.clear()
        state.tail.clear()

    def _statement_text(self) -> list:
        parts = self._statement_parts()
        return [part if isinstance(part, str) else "".join(
            chunk.decode("utf-8", "surrogateescape") for chunk in part.chunks()) for part in parts]

    def _event_bytes(self, event) -> bytes:
        """-H shows a rows event's bytes with the statement-end flag moved."""
        shown = self._shown_raw.pop((event.header.file, event.header.pos), None)
        return shown if shown is not None else super()._event_bytes(event)

    def _rewritten(self, event: RowsEvent, map_shown: bool) -> tuple[bytes, RowsEvent]:
        raw = bytearray(self._raw.rows_raw(event))
        # the rows flags as moved: after the common header and the table id
        # (4 bytes where the format description gives a 6-byte post-header)
        code = event.header.type_code
        lengths = self.state.fde.post_header_lengths
        table_id_size = 4 if 0 < code <= len(lengths) and lengths[code - 1] == 6 else 6
        flags_at = self.state.header_length + table_id_size
        raw[flags_at:flags_at + ROWS_FLAGS_SIZE] = event.flags.to_bytes(ROWS_FLAGS_SIZE, "little")
        if not self._raw.verbatim(event) and event.header.checksum is not None:
            # uncompressed here, as mariadb-binlog uncompresses it after moving the
            # flag: its new checksum covers the moved flag (not the later rewrite)
            raw[-4:] = zlib.crc32(bytes(raw[:-4])).to_bytes(4, "little")
        if self.options.hexdump:
            self._shown_raw[(event.header.file, event.header.pos)] = bytes(raw)
        return flashback_rows_event(bytes(raw), _whole_rows(event),
                                    event.header.checksum is not None, map_shown)
