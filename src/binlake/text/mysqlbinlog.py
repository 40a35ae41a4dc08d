"""Events as mysqlbinlog text: what `mariadb-binlog` prints, byte for byte where we can.

Strategy: one `TextPrinter` holds what mysqlbinlog keeps in PRINT_EVENT_INFO
(per file: current database, session flags, sql_mode, charset, ...; the
Annotate_rows event waiting for its table map; table maps filtered away) and
the three caches mysqlbinlog uses for row events: event headers (head), the
base64 of the raw events (body) and the `###` pseudo-SQL (tail) are collected
until the statement's last rows event (STMT_END_F), then written in that
order. Each event family has one `_print_<family>` method producing the same
lines as the server's `print()` for that event (MariaDB 10.11 for everything
MariaDB knows; MySQL 8's mysqlbinlog format for MySQL-only events: GTIDs,
Previous-GTIDs, Rows_query, Transaction_payload, partial JSON updates).

Rule: text is assembled as `str` with undecodable bytes kept as surrogate
escapes; `TextPrinter.write` turns it back into the exact bytes.
Timestamps are printed in the local time zone (set TZ), like mysqlbinlog.
"""

from __future__ import annotations

import base64
import os
import tempfile
import time
from dataclasses import dataclass, field

from binlake import core
from binlake.collation_names import COLLATIONS, charset_name, collation_name
from binlake.constants import EventType as E, LogEventFlag, STMT_END_F
from binlake.read.events import (BinlogCheckpointEvent, Event, FileBlockEvent, FormatDescriptionEvent,
                     GtidEvent, IncidentEvent, IntvarEvent, LoadEvent, MariadbGtidEvent,
                     MariadbGtidListEvent, PreviousGtidsEvent, QueryEvent, RandEvent,
                     RotateEvent, RowsEvent, RowsQueryEvent, StartEncryptionEvent,
                     StartEventV3, StopEvent,
                     TableMapEvent, TransactionPayloadEvent, UnknownEvent, UserVarEvent,
                     XaPrepareEvent, XidEvent)
from binlake.read.events.control import server_version_tuple
from binlake.read.rows import PRE_GA_ROWS_EVENTS
from binlake.read.gzipped import is_gzip
from binlake.text.rawevents import RawEvents, rewrite_table_map_db
from binlake.read.rows import LazyRowData
from binlake.text.rowtext import (RowFormatError, format_rows, format_rows_windowed, identifier,
                                  json_diff_text, json_text, pretty_string, raw_text)

DELIMITER = "/*!*/;"

#: Query flags2 bits (MariaDB sql_priv.h `OPTION_*`) and how mysqlbinlog names them.
OPTION_AUTO_IS_NULL = 1 << 14
OPTION_NO_CHECK_CONSTRAINT_CHECKS = 1 << 15
OPTION_NOT_AUTOCOMMIT = 1 << 19
OPTION_EXPLICIT_DEF_TIMESTAMP = 1 << 24
OPTION_NO_FOREIGN_KEY_CHECKS = 1 << 26
OPTION_RELAXED_UNIQUE_CHECKS = 1 << 27
OPTION_IF_EXISTS = 1 << 28
OPTION_INSERT_HISTORY = 1 << 30

#: (bit, variable, printed as the inverse of the bit, only when the FDE writes it)
_FLAGS2_VARIABLES = (
    (OPTION_NO_FOREIGN_KEY_CHECKS, "foreign_key_checks", True, None),
    (OPTION_AUTO_IS_NULL, "sql_auto_is_null", False, None),
    (OPTION_RELAXED_UNIQUE_CHECKS, "unique_checks", True, None),
    (OPTION_NOT_AUTOCOMMIT, "autocommit", True, None),
    (OPTION_NO_CHECK_CONSTRAINT_CHECKS, "check_constraint_checks", True, None),
    (OPTION_IF_EXISTS, "sql_if_exists", False, "if_exists"),
    (OPTION_EXPLICIT_DEF_TIMESTAMP, "explicit_defaults_for_timestamp", False, "explicit_def"),
    (OPTION_INSERT_HISTORY, "system_versioning_insert_history", False, None),
)

TM_BIT_HAS_TRIGGERS_F = 1 << 14

# Header flags as plain ints: IntFlag's operators cost a call per event.
_SKIP_REPLICATION_F = int(LogEventFlag.LOG_EVENT_SKIP_REPLICATION_F)
_BINLOG_IN_USE_F = int(LogEventFlag.LOG_EVENT_BINLOG_IN_USE_F)
_ARTIFICIAL_F = int(LogEventFlag.LOG_EVENT_ARTIFICIAL_F)
_SUPPRESS_USE_F = int(LogEventFlag.LOG_EVENT_SUPPRESS_USE_F)
_THREAD_SPECIFIC_F = int(LogEventFlag.LOG_EVENT_THREAD_SPECIFIC_F)
_IGNORABLE_F = int(LogEventFlag.LOG_EVENT_IGNORABLE_F)

#: Row event names as mysqlbinlog prints them (Log_event::get_type_str and friends).
_ROWS_NAMES = {
    E.WRITE_ROWS_EVENT: "Write_rows", E.WRITE_ROWS_EVENT_V1: "Write_rows",
    E.UPDATE_ROWS_EVENT: "Update_rows", E.UPDATE_ROWS_EVENT_V1: "Update_rows",
    E.DELETE_ROWS_EVENT: "Delete_rows", E.DELETE_ROWS_EVENT_V1: "Delete_rows",
    E.WRITE_ROWS_COMPRESSED_EVENT: "Write_compressed_rows",
    E.WRITE_ROWS_COMPRESSED_EVENT_V1: "Write_compressed_rows",
    E.UPDATE_ROWS_COMPRESSED_EVENT: "Update_compressed_rows",
    E.UPDATE_ROWS_COMPRESSED_EVENT_V1: "Update_compressed_rows",
    E.DELETE_ROWS_COMPRESSED_EVENT: "Delete_compressed_rows",
    E.DELETE_ROWS_COMPRESSED_EVENT_V1: "Delete_compressed_rows",
    E.PRE_GA_WRITE_ROWS_EVENT: "Write_rows_old", E.PRE_GA_UPDATE_ROWS_EVENT: "Update_rows_old",
    E.PRE_GA_DELETE_ROWS_EVENT: "Delete_rows_old",
    E.PARTIAL_UPDATE_ROWS_EVENT: "Update_rows_partial",
}

#: MariaDB's names for MySQL events it only skips ("Ignorable" in its output).
_INCIDENTS = {0: "NONE", 1: "LOST_EVENTS"}

#: Events only MySQL writes; mariadb-binlog prints them as "Ignorable".
_MYSQL_ONLY = {E.GTID_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT, E.PREVIOUS_GTIDS_LOG_EVENT,
               E.ROWS_QUERY_LOG_EVENT, E.TRANSACTION_CONTEXT_EVENT, E.VIEW_CHANGE_EVENT,
               E.HEARTBEAT_LOG_EVENT_V2, E.GTID_TAGGED_LOG_EVENT}

_XA_KEYWORDS = ("XA START", "XA END", "XA COMMIT", "XA ROLLBACK")
#: What MySQL's --skip-gtids leaves out.
_GTID_EVENTS = {E.GTID_LOG_EVENT, E.GTID_TAGGED_LOG_EVENT, E.ANONYMOUS_GTID_LOG_EVENT,
                E.PREVIOUS_GTIDS_LOG_EVENT}


@dataclass
class TextOptions:
    """What mysqlbinlog's command line says about printing."""

    base64_output: str = "auto"       #: auto | never | decode-rows
    verbose: int = 0                  #: -v: pseudo-SQL of rows; -vv: with column types
    short_form: bool = False
    hexdump: bool = False
    print_row_count: bool | None = None  #: '# Number of rows' lines; None: unless short_form
    print_event_positions: bool = True  #: `# at N` lines (--print-row-event-positions)
    print_table_metadata: bool = False  #: columns and primary key after each table map
    idempotent: bool = False          #: MySQL's -i: replay with RBR_EXEC_MODE=IDEMPOTENT
    require_row_format: bool = False  #: MySQL's: replay with REQUIRE_ROW_FORMAT=1
    skip_gtids: bool = False          #: MySQL's: GTID and Previous-GTIDs events left out
    server_id_mask: int = 0xFFFFFFFF  #: MySQL's --server-id-bits: the bits shown
    skip_annotate_row_events: bool = False
    rewrite_db: dict = field(default_factory=dict)
    database: str | None = None       #: --database: statements and rows of this db only
    table: str | None = None          #: --table: rows of this table only
    disable_log_bin: bool = False
    set_charset: str | None = None
    local_load: str | None = None     #: where LOAD DATA files are written
    gtid_filtering: bool = False      #: add mariadb-binlog's footer for GTID/server-id filters
    delimiter: str = DELIMITER        #: statement terminator (mysqlbinlog's is /*!*/;)
    mysql_events: str = "mysql"       #: MySQL-only events: "mysql" (its mysqlbinlog) or
                                      #: "ignorable" (as mariadb-binlog, which skips them)


@dataclass
class _FileState:
    """mysqlbinlog's PRINT_EVENT_INFO: what the last printed events set."""

    db: str = ""
    flags2: int | None = None
    sql_mode: int | None = None
    auto_increment: tuple = (0, 0)
    charset: tuple | None = None
    time_zone: str = ""
    lc_time_names: int = -1
    charset_database: int = -1
    thread_id: int | None = None
    allow_parallel: bool | None = None
    domain_id: int | None = None
    server_id: int | None = None
    gtid_flags2: int = 0
    skip_replication: int = 0
    printed_fd_event: bool = False
    ignored_tables: set = field(default_factory=set)
    printed_database: dict = field(default_factory=dict)  #: table id -> db after --rewrite-db
    head: list = field(default_factory=list)
    body: list = field(default_factory=list)
    tail: list = field(default_factory=list)
    rows_in_statement: int = 0
    fde: object = None             #: the FormatDescriptionEvent in force
    header_length: int = 19
    hexdump_header_length: int = 0  #: mysqlbinlog's common_header_len: set by FDEs only


class TextPrinter:
    """Writes events the way mysqlbinlog does. Call `begin()`, then
    `begin_file()`, `event()` ..., `end_file()` per file, and `end()`."""

    def __init__(self, out, options: TextOptions | None = None):
        self.out = out
        self.options = options or TextOptions()
        if self.options.short_form:  # mysqlbinlog: --short-form drops --verbose
            self.options.verbose = 0
        if self.options.print_row_count is None:  # and row counts, unless they are asked for
            self.options.print_row_count = not self.options.short_form
        self.state = _FileState()
        self._annotate: tuple | None = None   # (event, raw) waiting for its table map
        self._raw = RawEvents()
        self._load = _LoadFiles(self.options.local_load)
        self._printed_mysql_gtid = False
        self._current_position = 0
        self.delimiter = self.options.delimiter
        self.errors: list[str] = []   #: rows mysqlbinlog would not print either (why)
        self._times: dict[int, str] = {}  #: header timestamps by second (localtime is slow)
        self._buffer = getattr(out, "buffer", None)
        self._pending: list[bytes] = []
        self._pending_size = 0
        #: mariadb-binlog's GTID state checks (gtid_state.GtidCheck), run by
        #: the native printer on its files; the caller runs them on the others
        self.gtid_check = None
        #: Events before this offset of the file are printed silently: the
        #: native printer showed them (`print_stream_natively`), this printer
        #: takes over from there with the state they give
        self._silent_until: int | None = None

    # -- output ------------------------------------------------------------
    def write(self, text: str) -> None:
        """Text to the output; to a binary buffer it goes in batches (one
        write call per event costs more than the event's formatting)."""
        if self._silent_until is not None:
            return
        if self._buffer is not None:
            data = text.encode("utf-8", "surrogateescape")
            self._pending.append(data)
            self._pending_size += len(data)
            if self._pending_size > 1 << 18:
                self.flush()
        else:
            self.out.write(text)

    def flush(self) -> None:
        """Write what `write` holds back (before anything else writes to the output)."""
        if self._buffer is not None:
            self.out.flush()
            if self._pending:
                self._buffer.write(b"".join(self._pending))
                self._pending.clear()
                self._pending_size = 0

    def write_parts(self, parts: list) -> None:
        """`write("".join(parts))` without the join: a statement's rows text
        runs to megabytes, and joining and encoding it whole costs fresh
        memory (page faults) twice over; one event's text at a time does not.
        A part that is not a `str` (a huge event's text, `_Chunked`) is
        written chunk by chunk."""
        if self._silent_until is not None:
            return
        buffer = self._buffer
        if buffer is not None:
            self.flush()
            for text in parts:
                if isinstance(text, str):
                    buffer.write(text.encode("utf-8", "surrogateescape"))
                else:
                    for chunk in text.chunks():
                        buffer.write(chunk)
        else:
            for text in parts:
                if isinstance(text, str):
                    self.out.write(text)
                else:
                    for chunk in text.chunks():
                        self.out.write(raw_text(chunk))

    # -- stream and files ----------------------------------------------------
    def begin(self) -> None:
        lines = ["/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;\n",
                 "/*!40019 SET @@session.max_delayed_threads=0*/;\n"]
        if self.options.disable_log_bin:
            lines.append("/*!32316 SET @OLD_SQL_LOG_BIN=@@SQL_LOG_BIN, SQL_LOG_BIN=0*/;\n")
        lines.append("/*!50003 SET @OLD_COMPLETION_TYPE=@@COMPLETION_TYPE,COMPLETION_TYPE=0*/;\n")
        if self.options.set_charset:
            cs = self.options.set_charset
            lines.append("\n/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;"
                         "\n/*!40101 SET @OLD_CHARACTER_SET_RESULTS=@@CHARACTER_SET_RESULTS */;"
                         "\n/*!40101 SET @OLD_COLLATION_CONNECTION=@@COLLATION_CONNECTION */;"
                         f"\n/*!40101 SET NAMES {cs} */;\n")
        # MySQL's mysqlbinlog: each with a blank line after it
        if self.options.idempotent:
            lines.append("/*!50700 SET @@SESSION.RBR_EXEC_MODE=IDEMPOTENT*/;\n\n")
        if self.options.require_row_format:
            lines.append("/*!80019 SET @@SESSION.REQUIRE_ROW_FORMAT=1*/;\n\n")
        self.write("".join(lines))

    def begin_file(self, path) -> None:
        self.state = _FileState()
        self.write("DELIMITER /*!*/;\n")

    def end_file(self) -> None:
        self._silent_until = None   # (a file left whole to this printer at its end)
        self.write("DELIMITER ;\n")

    def roll_back_cut(self) -> None:
        """Close a transaction the server's stream cut off (a failover: it
        comes again whole from the next server), as mysqlbinlog closes its output."""
        self.write("ROLLBACK /* added by binlake */;\n")

    def end(self) -> None:
        lines = ["# End of log file\n"]
        if self._printed_mysql_gtid:
            lines.append("SET @@SESSION.GTID_NEXT= 'AUTOMATIC' /* added by mysqlbinlog */ /*!*/;\n")
        lines.append("ROLLBACK /* added by mysqlbinlog */;\n"
                     "/*!50003 SET COMPLETION_TYPE=@OLD_COMPLETION_TYPE*/;\n")
        if self.options.disable_log_bin:
            lines.append("/*!32316 SET SQL_LOG_BIN=@OLD_SQL_LOG_BIN*/;\n")
        if self.options.set_charset:
            lines.append("/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;\n"
                         "/*!40101 SET CHARACTER_SET_RESULTS=@OLD_CHARACTER_SET_RESULTS */;\n"
                         "/*!40101 SET COLLATION_CONNECTION=@OLD_COLLATION_CONNECTION */;\n")
        lines.append("/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=0*/;\n")
        if self.options.gtid_filtering:
            lines.append("/*!100001 SET @@SESSION.SERVER_ID=@@GLOBAL.SERVER_ID */;\n"
                         "/*!100001 SET @@SESSION.GTID_DOMAIN_ID=@@GLOBAL.GTID_DOMAIN_ID */;\n")
        if self.options.idempotent:
            # mysqlbinlog's: outputs of several runs may be replayed in one session
            lines.append("/*!50700 SET @@SESSION.RBR_EXEC_MODE=STRICT*/;\n")
        self.write("".join(lines))
        self.flush()
        self._raw.close()

    # -- whole files by the native printer ------------------------------------
    def native_ready(self) -> bool:
        """Whether the native printer (rust/src/sink/dump.rs) supports these
        options: no hexdumps, filters, rewrites or leaving out positions."""
        o = self.options
        return (o.base64_output in ("auto", "decode-rows", "never") and not o.hexdump
                and not (o.short_form and o.print_row_count)
                and not o.skip_gtids and o.server_id_mask == 0xFFFFFFFF
                and not o.require_row_format
                and o.print_event_positions and not o.print_table_metadata
                and not o.rewrite_db and o.database is None and o.table is None
                and o.delimiter == DELIMITER and self._annotate is None
                and _native_dump() is not None)

    def print_file_natively(self, path: str, large_event_bytes: int,
                            start: int | None = None, stop: int | None = None) -> bool:
        """Print the whole file with the native printer, bracketed as
        `begin_file`/`end_file` do; False (nothing printed) where it leaves
        the file to this printer: an event type or content it does not
        print the same, or any reading error (this printer reports those).
        The native printer decides that in a first pass over the file,
        before it prints anything. `start`/`stop`: --start-position and
        --stop-position as they apply to this file (text/filters.py)."""
        native = _native_dump()
        if is_gzip(path):  # the reader streams those
            return False
        refused, printed_mysql_gtid = native(
            path, *self._native_arguments(start, stop), large_event_bytes,
            lambda trail: self._begin_native(path, trail), self._write_bytes)
        if refused is not None:
            return False
        self._printed_mysql_gtid |= printed_mysql_gtid
        if self.gtid_check is None or not self.gtid_check.failed:
            self.end_file()
        return True

    def print_stream_natively(self, stream, start: int | None,
                              stop: int | None) -> tuple[str, int]:
        """Print a live server's binlog (live.source.LiveFile) with the native
        printer as it arrives, bracketed as `begin_file`/`end_file` do, the
        GTID checks run on each stretch before it is written. Returns (how,
        offset): ("printed", end of file); ("stopped", pos) at the stop
        position or ("checked", pos) where the GTID checks ended the run:
        nothing more is to be printed; ("refused", pos): the native printer
        printed the events before `pos` and leaves the rest of the file to
        this printer: call `take_over(pos)`, then print the file's events
        from its start again (those before `pos` print silently)."""
        self.begin_file(stream.name)
        check = None if self.gtid_check is None else self.gtid_check.native_limit
        how, pos, printed_mysql_gtid, raised = core.native().dump_stream(
            stream, stream.name, *self._native_arguments(start, stop), check, self._write_bytes)
        self._printed_mysql_gtid |= printed_mysql_gtid
        if raised is not None:   # (Ctrl-C, a lost server): the file's closing line, as the reader's end
            self.end_file()
            raise raised
        if how in ("printed", "stopped"):
            self.end_file()
        return how, pos

    def _native_arguments(self, start: int | None, stop: int | None) -> tuple:
        """The native printer's options and the helpers Python lends it
        (rust/src/python/dump.rs `PrintOptions`, `Helpers`)."""
        o = self.options
        return ((min(o.verbose, 2), o.short_form, o.base64_output, o.print_row_count,
                 o.skip_annotate_row_events, o.mysql_events == "ignorable", LazyRowData.WINDOW,
                 start, stop, o.base64_output != "decode-rows"),
                (_timestamp, _micro_timestamp, _charset_names(), json_text, json_diff_text))

    def take_over(self, pos: int) -> None:
        """Print the events of the file before `pos` silently (and its
        opening): they were printed natively, and give this printer its state."""
        self._silent_until = pos

    def replaying(self, event: Event) -> bool:
        """Whether `event` is printed silently (`take_over`)."""
        return self._silent_until is not None and event.header.pos < self._silent_until

    def _begin_native(self, path: str, trail: list) -> int | None:
        """Before the native printer's printing pass: the file's opening, and
        where the GTID checks end the run (None: they do not)."""
        self.begin_file(path)
        return None if self.gtid_check is None else self.gtid_check.native_limit(trail)

    def _write_bytes(self, data: bytes) -> None:
        if self._silent_until is not None:
            return
        buffer = self._buffer
        if buffer is not None:
            self.flush()
            buffer.write(data)
        else:
            self.out.write(raw_text(data))

    # -- events --------------------------------------------------------------
    def note(self, event: Event) -> None:
        """Let the printer see an event it will not print (filtered away), so
        that state it needs later (format description, payloads) stays right."""
        if isinstance(event, FormatDescriptionEvent):
            self.state.fde = event
            self.state.header_length = event.header_length
            self.state.hexdump_header_length = event.header_length
        elif isinstance(event, StartEventV3) and event.header.length < 75:
            self.state.header_length = 13  # binlog v1 (MySQL 3.23)
        self._raw.note(event)

    def event(self, event: Event) -> None:
        """Print one event (its `# at` line first)."""
        if self._silent_until is not None and event.header.pos >= self._silent_until:
            self._silent_until = None
        self.note(event)
        options = self.options
        self._current_position = self._position(event)
        if not options.short_form and options.print_event_positions:
            self.write(f"# at {self._current_position}\n")
        handler = _HANDLERS.get(type(event))
        if options.skip_gtids and event.header.type_code in _GTID_EVENTS:
            return  # MySQL's --skip-gtids: their `# at` lines stay, as mysqlbinlog's do
        if options.mysql_events == "ignorable" and event.header.type_code in _MYSQL_ONLY:
            handler = TextPrinter._print_ignorable
        if isinstance(event, UnknownEvent):
            handler = TextPrinter._print_unknown
        if handler is None:
            handler = TextPrinter._print_ignorable
        handler(self, event)

    def inside_payload(self, event: Event) -> bool:
        """Whether `event` came out of a MySQL transaction payload."""
        return self._raw.inside_payload(event)

    def _position(self, event: Event) -> int:
        # Events inside a MySQL transaction payload have no position of their
        # own: mysqlbinlog shows the end of the payload event.
        if self._raw.inside_payload(event):
            return self._raw.payload_end
        return event.header.pos

    # -- shared pieces ---------------------------------------------------------
    def header(self, event: Event) -> str:
        """`#YYMMDD HH:MM:SS server id N  end_log_pos N CRC32 0x... ` (+ hexdump)."""
        h = event.header
        log_pos = h.log_pos
        if self._raw.inside_payload(event):
            log_pos = self._raw.payload_end  # as MySQL's mysqlbinlog shows inner events
        elif self.state.fde is None and log_pos and h.type_code < E.FORMAT_DESCRIPTION_EVENT:
            # binlog v3 (4.x) stored where the event starts; mysqlbinlog shows its end
            log_pos += h.length
        when = self._times.get(h.timestamp)
        if when is None:
            if len(self._times) > 4096:
                self._times.clear()
            when = self._times[h.timestamp] = _timestamp(h.timestamp)
        text = f"#{when} server id {h.server_id & self.options.server_id_mask}  end_log_pos {log_pos} "
        checksum = h.checksum
        if isinstance(event, FormatDescriptionEvent) and event.checksum_alg != 1:
            checksum = None  # the FDE carries a checksum field even with checksums off
        if checksum is not None:
            text += f"CRC32 0x{checksum:08x} "
        if self.options.hexdump:
            text += "\n" + self._hexdump(event) + "# Event: "
        return text

    def _hexdump(self, event: Event) -> str:
        """mysqlbinlog --hexdump: the 19-byte header by field, then the rest
        like `hexdump -C`. Positions are those of the event being processed
        (an Annotate_rows printed with its table map shows the table map's)."""
        raw = self._event_bytes(event)
        # mysqlbinlog learns the header length from format descriptions only:
        # in v1/v3 files (none) it dumps the whole event as data.
        header_len = self.state.hexdump_header_length
        if event.header.type_code in (E.FORMAT_DESCRIPTION_EVENT, E.START_EVENT_V3, E.ROTATE_EVENT):
            header_len = 19
        header_len = min(len(raw), header_len)
        pos = self._current_position
        out = ["# Position\n",
               "#           |Timestamp   |Type |Master ID   |Size        |Master Pos  |Flags\n"]
        head = raw[:19].ljust(19, b"\0")
        out.append("# %8x  |%02x %02x %02x %02x |%02x   |%02x %02x %02x %02x |%02x %02x %02x %02x "
                   "|%02x %02x %02x %02x |%02x %02x\n#\n" % (pos, *head))
        data = raw[header_len:]
        offset = pos + header_len
        for start in range(0, len(data), 16):
            chunk = data[start:start + 16]
            hexes = " ".join("%02x" % b for b in chunk[:8])
            if len(chunk) > 8:
                hexes += "  " + " ".join("%02x" % b for b in chunk[8:])
            ascii_part = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
            out.append("# %8x  %-49s |%s|\n" % (offset + start, hexes, ascii_part))
        if data:
            out.append("#\n")
        return "".join(out)

    def _event_bytes(self, event: Event) -> bytes:
        """The bytes -H dumps (a compressed rows event's uncompressed, as
        mariadb-binlog uncompresses it before it prints anything of it)."""
        if isinstance(event, RowsEvent):
            return self._raw.rows_raw(event)
        return self._raw.get(event)

    def _base64(self, event: Event, raw: bytes | None = None) -> str:
        raw = self._raw.get(event) if raw is None else raw
        encoded = base64.b64encode(raw).decode("ascii")
        return "".join(encoded[i:i + 76] + "\n" for i in range(0, len(encoded), 76))

    @property
    def _encode_base64(self) -> bool:
        return self.options.base64_output not in ("never", "decode-rows") and not self.options.short_form

    def _skip_database(self, db: str | None) -> bool:
        wanted = self.options.database
        return wanted is not None and db is not None and db != wanted

    def _skip_replication(self, event: Event) -> str:
        value = 1 if event.header.flags & _SKIP_REPLICATION_F else 0
        if value == self.state.skip_replication:
            return ""
        self.state.skip_replication = value
        return f"/*!50521 SET skip_replication={value}*/{self.delimiter}\n"

    # -- format description ------------------------------------------------------
    def _print_start(self, event) -> None:
        options, state = self.options, self.state
        h = event.header
        out = []
        if not options.short_form:
            created = event.create_timestamp
            out.append(self.header(event) + f"\tStart: binlog v {event.binlog_version}, server v "
                       f"{event.server_version} created {_timestamp(h.timestamp)}"
                       + (" at startup" if created else "") + "\n")
            if h.flags & _BINLOG_IN_USE_F:
                out.append("# Warning: this binlog is either in use or was not closed properly.\n")
        if not h.flags & _ARTIFICIAL_F and event.create_timestamp:
            out.append(f"ROLLBACK{self.delimiter}\n")
        if options.base64_output != "never" and not options.short_form:
            if self._encode_base64:
                out.append("BINLOG '\n" + self._base64(event) + f"'{self.delimiter}\n")
            if options.skip_gtids:  # mysqlbinlog: the transactions replay as new ones
                out.append(f"/*!50616 SET @@SESSION.GTID_NEXT='AUTOMATIC'*/{self.delimiter}\n")
            state.printed_fd_event = True
        self.write("".join(out))

    # -- statements --------------------------------------------------------------
    def _print_query(self, event: QueryEvent) -> None:
        query = self._raw.query_text(event, self.state)
        trans_keyword = _is_trans_keyword(query, bool(self.state.gtid_flags2 & 0xC0))
        flags = event.header.flags
        if trans_keyword:
            flags |= _SUPPRESS_USE_F
        elif self._skip_database(event.database):
            return
        prefix = (self._use_rewritten(event.database, flags) + self._skip_replication(event)
                  + self._query_header(event, flags, query))
        if event.header.type_code == E.EXECUTE_LOAD_QUERY_EVENT:
            self.write(prefix + self._load_query_text(event, query))
        else:
            self.write_statement(prefix, query)

    def write_statement(self, prefix: str, query: str) -> None:
        """The session lines, then the statement and the delimiter on a line of its own."""
        self.write(prefix + query + f"\n{self.delimiter}\n")

    def _use_rewritten(self, db: str, flags: int) -> str:
        """mysqlbinlog's print_use_stmt: a `use` of the rewritten database."""
        target = self.options.rewrite_db.get(db)
        if flags & _SUPPRESS_USE_F or not db or db == self.state.db or not target:
            return ""
        self.state.db = db
        return f"use {identifier(target)}{self.delimiter}\n"

    def _query_header(self, event: QueryEvent, flags: int, query: str) -> str:
        state, options = self.state, self.options
        out = []
        if not options.short_form:
            type_name = event.header.type_str
            out.append(self.header(event) + f"\t{type_name}\tthread_id={event.thread_id}\t"
                       f"exec_time={event.exec_time}\terror_code={event.error_code}\t"
                       f"xid={event.status_vars.get('Q_XID', 0)}\n")
        db = event.database
        if flags & _SUPPRESS_USE_F:
            if not _is_trans_keyword(query, bool(state.gtid_flags2 & 0xC0)):
                state.db = ""
        elif db is not None:
            if db != state.db:
                state.db = db
                if db:
                    out.append(f"use {identifier(db)}{self.delimiter}\n")
        vars_ = event.status_vars
        when = f"SET TIMESTAMP={event.header.timestamp}"
        micro = vars_.get("Q_HRNOW")
        if micro:
            when += ".%06d" % micro
        out.append(when + f"{self.delimiter}\n")
        # (MySQL's --require-row-format leaves the thread id out)
        if not options.require_row_format and (
                state.thread_id is None or (flags & _THREAD_SPECIFIC_F
                                            and event.thread_id != state.thread_id)):
            thread = 999999999 if options.short_form else event.thread_id
            out.append(f"SET @@session.pseudo_thread_id={thread}{self.delimiter}\n")
            state.thread_id = event.thread_id
        flags2 = vars_.get("Q_FLAGS2_CODE")
        if flags2 is not None:
            changed = ~0 if state.flags2 is None else state.flags2 ^ flags2
            if changed:
                mask = self._options_written()
                parts = []
                for bit, name, inverse, needs in _FLAGS2_VARIABLES:
                    if needs and needs not in mask:
                        continue
                    if changed & bit:
                        value = not flags2 & bit if inverse else bool(flags2 & bit)
                        parts.append(f"@@session.{name}={int(value)}")
                out.append("SET " + ", ".join(parts) + f"{self.delimiter}\n")
                state.flags2 = flags2
        sql_mode = vars_.get("Q_SQL_MODE_CODE")
        if sql_mode is not None and sql_mode != state.sql_mode:
            out.append(f"SET @@session.sql_mode={sql_mode}{self.delimiter}\n")
            state.sql_mode = sql_mode
        auto = vars_.get("Q_AUTO_INCREMENT")
        auto = (auto["increment"], auto["offset"]) if auto else (1, 1)
        if auto != state.auto_increment:
            out.append(f"SET @@session.auto_increment_increment={auto[0]}, "
                       f"@@session.auto_increment_offset={auto[1]}{self.delimiter}\n")
            state.auto_increment = auto
        charset = vars_.get("Q_CHARSET_CODE")
        if charset is not None:
            key = (charset["character_set_client"], charset["collation_connection"],
                   charset["collation_server"])
            if key != state.charset:
                name = charset_name(key[0])
                if name:
                    out.append(f"/*!\\C {name} */{self.delimiter}\n")
                else:
                    out.append("# Ignored (Unknown charset) ")
                out.append(f"SET @@session.character_set_client={name or 'Unknown'},"
                           f"@@session.collation_connection={key[1]},"
                           f"@@session.collation_server={key[2]}{self.delimiter}\n")
                state.charset = key
        time_zone = vars_.get("Q_TIME_ZONE_CODE")
        if time_zone and time_zone != state.time_zone:
            out.append(f"SET @@session.time_zone='{time_zone}'{self.delimiter}\n")
            state.time_zone = time_zone
        lc_time = vars_.get("Q_LC_TIME_NAMES_CODE", 0)
        if lc_time != state.lc_time_names:
            out.append(f"SET @@session.lc_time_names={lc_time}{self.delimiter}\n")
            state.lc_time_names = lc_time
        charset_db = vars_.get("Q_CHARSET_DATABASE_CODE", 0)
        if charset_db != state.charset_database:
            value = charset_db if charset_db else "DEFAULT"
            out.append(f"SET @@session.collation_database={value}{self.delimiter}\n")
            state.charset_database = charset_db
        return "".join(out)

    def _options_written(self) -> set:
        """Which optional flags2 bits this server writes (MariaDB's
        Format_description_log_event::deduct_options_written_to_bin_log)."""
        fde = self.state.fde
        version = getattr(fde, "server_version", "") or ""
        if "mariadb" not in version.lower():
            return set()
        major, minor, patch = server_version_tuple(version)
        if (major, minor, patch) < (10, 5, 2):
            return set()
        mask = {"if_exists"}
        thresholds = (99, 99, 99, 99, 99, 17, 9, 5, 4, 2)
        if major == 10 and minor < 10 and patch < thresholds[minor]:
            return mask
        return mask | {"explicit_def"}

    def _load_query_text(self, event: QueryEvent, query: str) -> str:
        path = self._load.take(event.file_id)
        out = []
        if path is not None:
            qbytes = query.encode("utf-8", "surrogateescape")
            start, end = event.fn_pos_start, event.fn_pos_end
            text = raw_text(qbytes[:start]) + " LOCAL INFILE " + pretty_string(path)
            if event.dup_handling == 2:  # LOAD_DUP_REPLACE
                text += " REPLACE"
            text += " INTO" + raw_text(qbytes[end:])
            out.append(text + f"\n{self.delimiter}\n")
        else:
            out.append(query + f"\n{self.delimiter}\n")
        if not self.options.short_form:
            out.append(f"# file_id: {event.file_id} \n")
        return "".join(out)

    # -- small control events ------------------------------------------------------
    def _simple(self, event: Event, title: str, body: str = "") -> None:
        out = [self._skip_replication(event)]
        if not self.options.short_form:
            out.append(self.header(event) + title)
        out.append(body)
        self.write("".join(out))

    def _print_intvar(self, event: IntvarEvent) -> None:
        self._simple(event, "\tIntvar\n", f"SET {event.kind_name}={event.value}{self.delimiter}\n")

    def _print_rand(self, event: RandEvent) -> None:
        self._simple(event, "\tRand\n",
                     f"SET @@RAND_SEED1={event.seed1}, @@RAND_SEED2={event.seed2}{self.delimiter}\n")

    def _print_user_var(self, event: UserVarEvent) -> None:
        name = "SET @" + identifier(event.name)
        if event.is_null:
            value = ":=NULL"
        elif event.value_type == 1:
            value = ":=" + "%.14g" % event.value
        elif event.value_type == 2:
            value = f":={event.value}"
        elif event.value_type == 4:
            value = ":=" + format(event.value, "f")
        else:
            cs, coll = charset_name(event.charset), collation_name(event.charset)
            if cs is None:
                value = ":=???"
            else:
                value = f":=_{cs} X'{bytes(event.value).hex().upper()}' COLLATE `{coll}`"
        self._simple(event, "\tUser_var\n", name + value + f"{self.delimiter}\n")

    def _print_xid(self, event: XidEvent) -> None:
        self._simple(event, f"\tXid = {event.xid}\n", f"COMMIT{self.delimiter}\n")

    def _print_xa_prepare(self, event: XaPrepareEvent) -> None:
        xid = f"X'{event.gtrid.hex()}',X'{event.bqual.hex()}',{event.format_id}"
        self._simple(event, f"\tXID = {xid}\n", f"XA PREPARE {xid}\n{self.delimiter}\n")

    def _print_stop(self, event: StopEvent) -> None:
        if not self.options.short_form:
            self._simple(event, "\tStop\n")

    def _print_rotate(self, event: RotateEvent) -> None:
        if not self.options.short_form:
            self._simple(event, f"\tRotate to {event.next_file}  pos: {event.position}\n")

    def _print_checkpoint(self, event: BinlogCheckpointEvent) -> None:
        if not self.options.short_form:
            self._simple(event, f"\tBinlog checkpoint {event.binlog_file}\n")

    def _print_gtid_list(self, event: MariadbGtidListEvent) -> None:
        if self.options.short_form:
            return
        # mariadb-binlog sorts by domain, then sequence number (rpl_gtid's
        # operator<: the server id is not compared); glibc's qsort keeps ties' order
        gtids = sorted(event.gtids, key=lambda g: (g[0], g[2]))
        listed = ",\n# ".join(f"{d}-{s}-{n}" for d, s, n in gtids)
        self._simple(event, f"\tGtid list [{listed}]\n")

    def _print_incident(self, event: IncidentEvent) -> None:
        if self.options.short_form:
            return
        name = _INCIDENTS.get(event.incident, "UNKNOWN")
        self._simple(event, f"\n# Incident: {name}\nRELOAD DATABASE; # Shall generate syntax error\n")

    def _print_unknown(self, event: Event) -> None:
        if event.header.flags & _IGNORABLE_F:
            return self._print_ignorable(event)
        if not self.options.short_form:
            self.write(self.header(event) + "\n# Unknown event\n")

    def _print_ignorable(self, event: Event) -> None:
        if self.options.short_form:
            return
        code = event.header.type_code
        names = {E.GTID_LOG_EVENT: "MySQL Gtid", E.ANONYMOUS_GTID_LOG_EVENT: "MySQL Anonymous_Gtid",
                 E.PREVIOUS_GTIDS_LOG_EVENT: "MySQL Previous_gtids",
                 E.ROWS_QUERY_LOG_EVENT: "MySQL Rows_query"}
        self.write(self.header(event) + f"\tIgnorable\n# Ignorable event type {code} "
                   f"({names.get(code, 'Unknown')})\n")

    def _print_start_encryption(self, event) -> None:
        self.write(f"# Encryption scheme: {event.scheme}, key_version: {event.key_version}, "
                   f"nonce: {event.nonce.hex()}\n# The rest of the binlog is encrypted!\n")

    # -- MariaDB GTIDs ------------------------------------------------------------
    def _print_mariadb_gtid(self, event: MariadbGtidEvent) -> None:
        state = self.state
        out = [self._skip_replication(event)]
        flags2 = event.flags2
        if not self.options.short_form:
            title = f"\tGTID {event.domain_id}-{event.header.server_id}-{event.seq_no}"
            if flags2 & 2:  # FL_GROUP_COMMIT_ID
                title += f" cid={event.commit_id}"
            if flags2 & 32:  # FL_DDL
                title += " ddl"
            if flags2 & 4:  # FL_TRANSACTIONAL
                title += " trans"
            if flags2 & 16:  # FL_WAITED
                title += " waited"
            extra = event.flags_extra or 0
            if extra & 2:
                title += " START ALTER"
            if extra & 4:
                title += f" COMMIT ALTER id= {event.sa_seq_no}"
            if extra & 8:
                title += f" ROLLBACK ALTER id= {event.sa_seq_no}"
            if extra & 16:
                title += f" thread_id={event.thread_id}"
            out.append(self.header(event) + title + "\n")
            allow_parallel = bool(flags2 & 8)
            if state.allow_parallel != allow_parallel:
                out.append(f"/*M!100101 SET @@session.skip_parallel_replication={int(not allow_parallel)}*/"
                           f"{self.delimiter}\n")
                state.allow_parallel = allow_parallel
            if state.domain_id != event.domain_id:
                out.append(f"/*M!100001 SET @@session.gtid_domain_id={event.domain_id}*/{self.delimiter}\n")
                state.domain_id = event.domain_id
            if state.server_id != event.header.server_id:
                out.append(f"/*M!100001 SET @@session.server_id={event.header.server_id}*/{self.delimiter}\n")
                state.server_id = event.header.server_id
            out.append(f"/*M!100001 SET @@session.gtid_seq_no={event.seq_no}*/{self.delimiter}\n")
        if flags2 & 64:  # FL_PREPARED_XA
            xid = (f"X'{(event.xa_gtrid or b'').hex()}',X'{(event.xa_bqual or b'').hex()}',"
                   f"{event.xa_format_id}")
            out.append(f"XA START {xid}{self.delimiter}\n")
        elif not flags2 & 1:  # not FL_STANDALONE
            out.append(f"START TRANSACTION\n{self.delimiter}\n")
        state.gtid_flags2 = flags2
        self.write("".join(out))

    # -- MySQL GTIDs (MySQL's mysqlbinlog format) ------------------------------------
    def _print_mysql_gtid(self, event: GtidEvent) -> None:
        out = []
        anonymous = event.header.type_code == E.ANONYMOUS_GTID_LOG_EVENT
        rbr_only = not event.flags & 1  # FLAG_MAY_HAVE_SBR
        if not self.options.short_form:
            title = (f"\t{'Anonymous_GTID' if anonymous else 'GTID'}\tlast_committed="
                     f"{event.last_committed or 0}\tsequence_number={event.sequence_number or 0}"
                     f"\trbr_only={'yes' if rbr_only else 'no'}")
            if event.immediate_commit_timestamp is not None:
                title += (f"\toriginal_committed_timestamp={event.original_commit_timestamp}"
                          f"\timmediate_commit_timestamp={event.immediate_commit_timestamp}"
                          f"\ttransaction_length={event.transaction_length or 0}")
            out.append(self.header(event) + title + "\n")
        if rbr_only:
            out.append(f"/*!50718 SET TRANSACTION ISOLATION LEVEL READ COMMITTED*/{self.delimiter}\n")
        if event.immediate_commit_timestamp is not None:
            if not self.options.short_form:
                out.append(f"# original_commit_timestamp={event.original_commit_timestamp} "
                           f"({_micro_timestamp(event.original_commit_timestamp)})\n"
                           f"# immediate_commit_timestamp={event.immediate_commit_timestamp} "
                           f"({_micro_timestamp(event.immediate_commit_timestamp)})\n")
            out.append(f"/*!80001 SET @@session.original_commit_timestamp="
                       f"{event.original_commit_timestamp}*/{self.delimiter}\n")
        if event.original_server_version:
            out.append(f"/*!80014 SET @@session.original_server_version="
                       f"{event.original_server_version}*/{self.delimiter}\n"
                       f"/*!80014 SET @@session.immediate_server_version="
                       f"{event.immediate_server_version}*/{self.delimiter}\n")
        out.append(f"SET @@SESSION.GTID_NEXT= '{'ANONYMOUS' if anonymous else event.gtid}'{self.delimiter}\n")
        self._printed_mysql_gtid = True
        self.write("".join(out))

    def _print_previous_gtids(self, event: PreviousGtidsEvent) -> None:
        if not self.options.short_form:
            text = event.gtid_set.replace(",", ",\n# ") or "[empty]"
            self.write(self.header(event) + f"\tPrevious-GTIDs\n# {text}\n")

    def _print_payload(self, event: TransactionPayloadEvent) -> None:
        if not self.options.short_form:
            title = f"\tTransaction_Payload\t\tpayload_size={event.payload_size}" \
                    f"\tcompression_type={event.compression_name}"
            if event.compression_name != "NONE":
                title += f"\tuncompressed_size={event.uncompressed_size}"
            self.write(self.header(event) + title + "\n# Start of compressed events!\n")

    def end_payload_if_done(self, event: Event) -> None:
        """After the last event inside a payload, MySQL closes the comment."""
        if self._raw.payload_finished(event) and not self.options.short_form:
            self.write("# End of compressed events!\n")

    # -- row events ---------------------------------------------------------------
    def _print_annotate(self, event: RowsQueryEvent) -> None:
        if event.header.type_code == E.ROWS_QUERY_LOG_EVENT:
            return self._print_rows_query(event)
        if not self.options.skip_annotate_row_events:
            self._annotate = (event, self._raw.annotate_text(event))

    def _annotate_lines(self) -> str:
        event, query = self._annotate
        self._annotate = None
        out = []
        if not self.options.short_form:
            out.append(self.header(event) + "\tAnnotate_rows:\n")
        else:
            out.append("# Annotate_rows:\n")
        for line in query.replace("\r", "\n").split("\n"):
            if line:
                out.append(f"#Q> {line}\n")
        return "".join(out)

    def _print_rows_query(self, event: RowsQueryEvent) -> None:
        state = self.state
        if not self.options.short_form:
            # (MySQL's mysqlbinlog prints it at once; its base64 joins the statement's)
            query = self._raw.rows_query_text(event)
            self.write(self.header(event) + "\tRows_query\n# " + query.replace("\n", "\n# ") + "\n")
        if self._encode_base64:
            state.body.append(self._base64(event))

    def _print_table_map(self, event: TableMapEvent) -> None:
        state, options = self.state, self.options
        if self._skip_database(event.database) or (options.table is not None
                                                   and event.table != options.table):
            state.ignored_tables.add(event.table_id)
            return
        state.ignored_tables.discard(event.table_id)
        out = []
        if self._annotate is not None:
            out.append(self._annotate_lines())
        database = options.rewrite_db.get(event.database, event.database)
        state.printed_database[event.table_id] = database
        raw = self._raw.get(event) if self._encode_base64 else None  # (re-read from the file)
        if database != event.database and raw is not None:
            raw = rewrite_table_map_db(raw, state.header_length, state.fde, database,
                                       event.header.checksum is not None)
        if self._needs_fde(event):
            return
        if not options.short_form:
            triggers = " (has triggers)" if event.flags & TM_BIT_HAS_TRIGGERS_F else ""
            out.append(self.header(event) + f"\tTable_map: {identifier(database)}."
                       f"{identifier(event.table)} mapped to number {event.table_id}{triggers}\n")
            if options.print_table_metadata:
                from binlake.text.table_metadata import table_metadata
                out.append(table_metadata(event))
        state.head.append("".join(out))
        if self._encode_base64:
            state.body.append(self._base64(event, raw))
        self.write("".join(state.head))
        state.head.clear()

    def _needs_fde(self, event: Event) -> bool:
        if self.state.printed_fd_event or self.options.short_form or self.options.base64_output != "auto":
            return False
        raise TextError(f"malformed binlog: it does not contain any Format_description_log_event. "
                        f"I now found a {event.header.type_str} event, which is not safe to process "
                        f"without a Format_description_log_event.")

    def _print_rows(self, event: RowsEvent) -> None:
        state, options = self.state, self.options
        stmt_end = bool(event.flags & STMT_END_F)
        pre_ga = event.header.type_code in PRE_GA_ROWS_EVENTS
        skipped = event.table_id in state.ignored_tables
        if stmt_end:
            state.ignored_tables.clear()
            self._annotate = None
            if skipped:
                # The statement ends with a rows event of a table filtered
                # away: what was collected before it is still printed. (Here
                # mariadb-binlog leaves out the "BINLOG '" opening; we do not.)
                self.write_parts(self._statement_parts())
                state.head.clear()
                state.body.clear()
                state.tail.clear()
                state.rows_in_statement = 0
        if skipped:
            return
        if self._needs_fde(event):
            return
        if not options.short_form:
            name = _ROWS_NAMES.get(event.header.type_code) or event.header.type_str
            # (mariadb-binlog shows the flag of pre-GA events only along with their base64)
            flags = " flags: STMT_END_F" if stmt_end and (not pre_ga or self._encode_base64) else ""
            state.head.append(self.header(event) + f"\t{name}: table id {event.table_id}{flags}\n")
        if not options.short_form or options.print_row_count:
            if self._encode_base64:
                state.body.append(self._rows_base64(event))
            known = event.table_id in state.printed_database
            if event.table is not None and known and not pre_ga:
                lines, count = self._rows_text(event, state.printed_database.get(event.table_id))
                if options.verbose:
                    state.tail.append(lines[0] if len(lines) == 1 else "".join(lines))
                state.rows_in_statement += count
            elif not pre_ga and options.verbose:
                # mysqlbinlog knows only the table maps it printed (no newline: as it does)
                state.tail.append(f"### Row event for unknown table #{event.table_id}")
        if stmt_end:
            out = self._statement_parts()
            if options.print_row_count:
                out.append(f"# Number of rows: {state.rows_in_statement}\n")
            self.write_parts(out)
            state.head.clear()
            state.body.clear()
            state.tail.clear()
            state.rows_in_statement = 0

    def _statement_parts(self) -> list:
        """A statement's collected text: headers, BINLOG block, `###` lines."""
        state = self.state
        out = ["".join(state.head)]
        if state.body:
            out.append("\nBINLOG '\n")
            out.extend(state.body)
            out.append(f"'{self.delimiter}\n")
        out.extend(state.tail)
        return out

    def _rows_text(self, event: RowsEvent, database: str) -> tuple[list, int]:
        """The `###` lines of a rows event and its row count. A huge event's
        lines (read through a window) go to a spool file, never held whole."""
        if isinstance(event.rows_data, LazyRowData):
            spool = tempfile.TemporaryFile() if self.options.verbose else None
            count = format_rows_windowed(event, self.options.verbose, database, spool)
            if count is not None:
                return ([_Spooled(spool)] if spool is not None else []), count
            if spool is not None:
                spool.close()
        try:
            return format_rows(event, self.options.verbose, database)
        except RowFormatError as exc:
            self.errors.append(str(exc))
            return [], 0

    def _rows_base64(self, event: RowsEvent):
        """The rows event's BINLOG lines; a huge one's as chunks read from its file."""
        if isinstance(event.rows_data, LazyRowData) and self._raw.verbatim(event):
            return _Base64Chunks(self._raw, event)
        return self._base64(event, self._raw.rows_raw(event))

    # -- LOAD DATA -------------------------------------------------------------------
    def _print_file_block(self, event: FileBlockEvent) -> None:
        code = event.header.type_code
        if code in (E.BEGIN_LOAD_QUERY_EVENT, E.APPEND_BLOCK_EVENT):
            if code == E.BEGIN_LOAD_QUERY_EVENT:
                self._load.begin(event.file_id, "SQL_LOAD_MB", event.data)
            else:
                self._load.append(event.file_id, event.data)
            if not self.options.short_form:
                self.write(self.header(event) + f"\n#{event.header.type_str}: file_id: "
                           f"{event.file_id}  block_len: {len(event.data)}\n")
        elif code == E.DELETE_FILE_EVENT:
            if not self.options.short_form:
                self.write(self.header(event) + f"\n#Delete_file: file_id={event.file_id}\n")
        else:  # EXEC_LOAD_EVENT
            if not self.options.short_form:
                self.write(self.header(event) + f"\n#Exec_load: file_id={event.file_id}\n")
            create = self._load.take_create(event.file_id)
            if create is not None:
                self._print_load(create[0], local_file=create[1])

    def _print_load(self, event: LoadEvent, local_file: str | None = None) -> None:
        """LOAD_EVENT, NEW_LOAD_EVENT, CREATE_FILE_EVENT (the last commented out
        until its Exec_load names the local copy of the file)."""
        is_create = event.header.type_code == E.CREATE_FILE_EVENT
        if is_create and local_file is None:
            if self._skip_database(event.database):
                return
            if event.file_id is not None:
                self._load.begin(event.file_id, os.path.basename(event.file_name), event.block or b"",
                                 create=event)
        elif self._skip_database(event.database):
            return
        commented = is_create and local_file is None
        if commented and self.options.short_form:
            return
        out = []
        if not self.options.short_form:
            out.append(self.header(event) + f"\tQuery\tthread_id={event.thread_id}\texec_time={event.exec_time}\n")
        if event.database and event.database != self.state.db:
            self.state.db = event.database
            out.append(("# " if commented else "") + f"use {identifier(event.database)}{self.delimiter}\n")
        if event.header.flags & _THREAD_SPECIFIC_F:
            out.append(f"SET @@session.pseudo_thread_id={event.thread_id}{self.delimiter}\n")
        text = "# " if commented else ""
        text += "LOAD DATA "
        if local_file is not None:
            text += "LOCAL "
        text += "INFILE " + pretty_string(local_file if local_file is not None else event.file_name) + " "
        if event.opt_flags & 0x4:  # REPLACE_FLAG
            text += "REPLACE "
        elif event.opt_flags & 0x8:  # IGNORE_FLAG
            text += "IGNORE "
        text += "INTO TABLE " + identifier(event.table)
        text += " FIELDS TERMINATED BY " + pretty_string(event.field_term)
        if event.opt_flags & 0x1:  # OPT_ENCLOSED_FLAG
            text += " OPTIONALLY "
        text += " ENCLOSED BY " + pretty_string(event.enclosed)
        text += " ESCAPED BY " + pretty_string(event.escaped)
        text += " LINES TERMINATED BY " + pretty_string(event.line_term)
        text += " STARTING BY " + pretty_string(event.line_start)
        if event.skip_lines:
            text += f" IGNORE {event.skip_lines} LINES"
        if event.field_names:
            text += " (" + ",".join(identifier(name) for name in event.field_names) + ")"
        out.append(text + f"{self.delimiter}\n")
        if is_create and not self.options.short_form:
            out.append(f"# file_id: {event.file_id}  block_len: {len(event.block or b'')}\n")
        self.write("".join(out))


class TextError(Exception):
    """A condition under which mysqlbinlog stops (e.g. rows without a format description)."""


_HANDLERS = {
    FormatDescriptionEvent: TextPrinter._print_start,
    StartEventV3: TextPrinter._print_start,
    QueryEvent: TextPrinter._print_query,
    IntvarEvent: TextPrinter._print_intvar,
    RandEvent: TextPrinter._print_rand,
    UserVarEvent: TextPrinter._print_user_var,
    XidEvent: TextPrinter._print_xid,
    XaPrepareEvent: TextPrinter._print_xa_prepare,
    StopEvent: TextPrinter._print_stop,
    RotateEvent: TextPrinter._print_rotate,
    BinlogCheckpointEvent: TextPrinter._print_checkpoint,
    MariadbGtidListEvent: TextPrinter._print_gtid_list,
    MariadbGtidEvent: TextPrinter._print_mariadb_gtid,
    GtidEvent: TextPrinter._print_mysql_gtid,
    PreviousGtidsEvent: TextPrinter._print_previous_gtids,
    TransactionPayloadEvent: TextPrinter._print_payload,
    IncidentEvent: TextPrinter._print_incident,
    RowsQueryEvent: TextPrinter._print_annotate,
    TableMapEvent: TextPrinter._print_table_map,
    RowsEvent: TextPrinter._print_rows,
    FileBlockEvent: TextPrinter._print_file_block,
    LoadEvent: TextPrinter._print_load,
    StartEncryptionEvent: TextPrinter._print_start_encryption,
}




# -- helpers ----------------------------------------------------------------------

def _native_dump():
    """The native core's whole-file printer, if the core is in use."""
    native = core.native()
    return getattr(native, "dump_file", None) if native is not None else None


_CHARSET_NAMES: list | None = None


def _charset_names() -> list:
    """charset_name by collation id, as a list (what the native printer takes)."""
    global _CHARSET_NAMES
    if _CHARSET_NAMES is None:
        _CHARSET_NAMES = [charset_name(i) for i in range(max(COLLATIONS) + 1)]
    return _CHARSET_NAMES


class _Spooled:
    """Text written to a temporary file (a huge event's `###` lines), to be
    copied to the output when its statement is printed."""

    CHUNK = 8 << 20

    def __init__(self, spool):
        self.spool = spool

    def chunks(self):
        self.spool.seek(0)
        while chunk := self.spool.read(self.CHUNK):
            yield chunk
        self.spool.close()


class _Base64Chunks:
    """A huge event's BINLOG lines, encoded as its bytes are read from the
    file: whole 76-character lines per chunk, as `_base64` makes them."""

    CHUNK = 57 * (1 << 17)  # 57 bytes make one 76-character line

    def __init__(self, raw: RawEvents, event: Event):
        self.raw, self.event = raw, event

    def chunks(self):
        for data in self.raw.chunks(self.event, self.CHUNK):
            yield base64.encodebytes(data)


def _timestamp(seconds: int) -> str:
    """mysqlbinlog's print_timestamp: `%02d%02d%02d %2d:%02d:%02d` in local time."""
    t = time.localtime(seconds)
    return "%02d%02d%02d %2d:%02d:%02d" % (t.tm_year % 100, t.tm_mon, t.tm_mday,
                                           t.tm_hour, t.tm_min, t.tm_sec)


def _micro_timestamp(micros: int) -> str:
    seconds, micro = divmod(micros or 0, 1_000_000)
    t = time.localtime(seconds)
    return time.strftime("%Y-%m-%d %H:%M:%S", t) + ".%06d %s" % (micro, time.strftime("%Z", t))


def _is_trans_keyword(query: str, xa: bool) -> bool:
    """Query_log_event::is_trans_keyword: statements that never need a database."""
    head = query[:12].upper()
    if any(head.startswith(k) for k in ("BEGIN", "COMMIT", "SAVEPOINT")) or head.startswith("ROLLBACK"):
        return True
    return xa and any(head.startswith(k) for k in _XA_KEYWORDS)


class _LoadFiles:
    """The local copies of LOAD DATA files mysqlbinlog writes (--local-load)."""

    def __init__(self, directory: str | None):
        self.directory = directory
        self._files: dict[int, str] = {}
        self._creates: dict[int, LoadEvent] = {}

    def _dir(self) -> str:
        if self.directory is None:
            import tempfile
            self.directory = tempfile.gettempdir()
        return self.directory

    def begin(self, file_id: int, base: str, data: bytes, create: LoadEvent | None = None) -> None:
        stem = os.path.join(self._dir(), f"{base}-{file_id:x}")
        for version in range(1000):
            path = f"{stem}-{version:x}"
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                continue
            except OSError as exc:
                raise TextError(f"cannot write the LOAD DATA file {path}: {exc.strerror}") from None
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            self._files[file_id] = path
            if create is not None:
                self._creates[file_id] = create
            return
        raise TextError(f"Could not construct local filename {stem}")

    def append(self, file_id: int, data: bytes) -> None:
        path = self._files.get(file_id)
        if path is not None:
            with open(path, "ab") as handle:
                handle.write(data)

    def take(self, file_id: int | None) -> str | None:
        if file_id in self._creates:
            return None
        return self._files.pop(file_id, None)

    def take_create(self, file_id: int):
        create = self._creates.pop(file_id, None)
        if create is None:
            return None
        return create, self._files.pop(file_id, None)
