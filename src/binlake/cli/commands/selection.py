"""What `dump`, `events` and `sql` share: event selection options (mysqlbinlog's
names and meanings), standard input, the result file and the progress bar."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

from binlake.atomic import replaced
from binlake.cli.client_options import client_integer
from binlake.read.events import RowsEvent
from binlake.text.rowtext import raw_text
from binlake.gtids import GtidSet, is_gtid_list, parse_gtid_list
from binlake.text.filters import EventSelection, SelectionOptions, parse_datetime


def add_selection_arguments(parser, *, database_help: str | None = None) -> None:
    group = parser.add_argument_group("event selection (as mysqlbinlog / mariadb-binlog)")
    group.add_argument("-j", "--start-position", metavar="POS",
                       help="start at this offset of the first file (or, MariaDB style, "
                            "after this GTID list: same as --start-gtid)")
    group.add_argument("--stop-position", metavar="POS",
                       help="stop before the event at this offset of the last file (or, "
                            "MariaDB style, after this GTID list: same as --stop-gtid)")
    group.add_argument("--start-datetime", metavar="DATETIME",
                       help="from the first event at or after this local time")
    group.add_argument("--stop-datetime", metavar="DATETIME",
                       help="stop at the first event at or after this local time")
    group.add_argument("--server-id", "--do-server-ids", metavar="ID[,ID...]", dest="server_id",
                       help="only events written by these server ids")
    group.add_argument("--ignore-server-ids", metavar="ID[,ID...]",
                       help="leave out events written by these server ids")
    group.add_argument("--do-domain-ids", metavar="ID[,ID...]",
                       help="MariaDB: only transactions of these GTID domains")
    group.add_argument("--ignore-domain-ids", metavar="ID[,ID...]",
                       help="MariaDB: leave out transactions of these GTID domains")
    group.add_argument("--include-gtids", metavar="GTID_SET",
                       help="only MySQL transactions in this GTID set (uuid:1-5,...)")
    group.add_argument("--exclude-gtids", metavar="GTID_SET",
                       help="leave out MySQL transactions in this GTID set")
    group.add_argument("--start-gtid", metavar="D-S-N[,...]",
                       help="MariaDB: only transactions after these GTIDs (one per domain)")
    group.add_argument("--stop-gtid", metavar="D-S-N[,...]",
                       help="MariaDB: stop after these GTIDs (one per domain, inclusive)")
    group.add_argument("-o", "--offset", type=client_integer("offset"), metavar="N",
                       help="leave out the first N events (a format description is always read)")
    group.add_argument("-d", "--database", metavar="DB",
                       help=database_help or "only statements and rows of this database")
    group.add_argument("-T", "--table", metavar="TABLE", help="only rows of this table")
    group.add_argument("--rewrite-db", metavar="FROM->TO", action="append", default=[],
                       help="write changes of database FROM as changes of TO (repeatable)")
    parser.add_argument("-r", "--result-file", metavar="FILE", help="write to FILE, not stdout")


def _rewrite_rules(values) -> dict:
    rules = {}
    for value in values:
        source, arrow, target = value.partition("->")
        source, target = source.strip(), target.strip()
        if not arrow:
            raise ValueError(f"--rewrite-db {value!r}: missing '->'")
        if not source or not target:
            raise ValueError(f"--rewrite-db {value!r}: empty database name")
        rules[source] = target
    return rules


def _ids(value: str | None, option: str) -> set | None:
    """A comma-separated list of ids (None: not given)."""
    if not value:
        return None
    try:
        return {int(v) for v in value.split(",") if v.strip()}
    except ValueError:  # (mariadb-binlog's words)
        raise ValueError(f"Input for {option} is invalid. Should be a list of positive "
                         "integers") from None


def selection_options(args) -> tuple[EventSelection, dict]:
    """The EventSelection of the command line, and the print-time filters
    (database, table, rewrite rules). Raises ValueError on bad values."""
    options = SelectionOptions()
    for name in ("start_position", "stop_position"):
        value = getattr(args, name)
        if value is None:
            continue
        value = value.strip()
        if value.isdigit():
            setattr(options, name, int(value))
        elif is_gtid_list(value):
            gtids = parse_gtid_list(value, "Start position" if name == "start_position"
                                    else "Stop position")
            if name == "start_position":
                options.start_gtids = gtids
            else:
                options.stop_gtids = gtids
        else:
            raise ValueError(f"--{name.replace('_', '-')} argument value is invalid. Should be "
                             "either a positive integer or GTID.")  # (mariadb-binlog's words)
    if args.start_gtid:
        options.start_gtids = parse_gtid_list(args.start_gtid, "Start position")
    if args.stop_gtid:
        options.stop_gtids = parse_gtid_list(args.stop_gtid, "Stop position")
    if args.start_datetime:
        options.start_datetime = parse_datetime(args.start_datetime)
    if args.stop_datetime:
        options.stop_datetime = parse_datetime(args.stop_datetime)
    if args.offset is not None and args.offset < 0:
        raise ValueError(f"--offset {args.offset}: expected a count of events")
    options.offset = args.offset or None
    options.server_ids = _ids(args.server_id, "--server-id")
    options.ignore_server_ids = _ids(args.ignore_server_ids, "--ignore-server-ids")
    options.do_domain_ids = _ids(args.do_domain_ids, "--do-domain-ids")
    options.ignore_domain_ids = _ids(args.ignore_domain_ids, "--ignore-domain-ids")
    for kind, do, ignore in (("server", options.server_ids, options.ignore_server_ids),
                             ("domain", options.do_domain_ids, options.ignore_domain_ids)):
        if do and ignore:  # mariadb-binlog's words
            raise ValueError(f"Cannot create ignore filtering rule for {kind} id because do "
                             "rule already exists")
    if args.include_gtids:
        options.include_gtids = GtidSet.parse(args.include_gtids)
    if args.exclude_gtids:
        options.exclude_gtids = GtidSet.parse(args.exclude_gtids)
    text_filters = {"database": args.database, "table": args.table,
                    "rewrite_db": _rewrite_rules(args.rewrite_db)}
    return EventSelection(options), text_filters


def open_inputs(args, err, selection: EventSelection | None = None):
    """(files, cleanup): the binlogs a command reads. The FILE arguments
    (standard input spooled), or with -R a live server's binlogs: a
    LiveSource, read by the same reader. Raises ValueError on a bad command line."""
    if not getattr(args, "remote", False):
        if not args.files:
            raise ValueError("no FILE given (or -R to read a live server's binlog)")
        return spool_stdin(args.files)
    source = live_source(args, err, selection)
    return source, source.close


def followed_server(args, err, selection: EventSelection, schema):
    """-R --stop-never's server as a LiveStream whose resume token moves on
    as the bytes arrive (`commits_from_bytes`): the events are read from its
    `source`, and after a failover behind the address `failed_over` goes on
    by the GTID state there. Raises ValueError on a bad command line."""
    from binlake.live.source import LiveStream
    return LiveStream(live_options(args, err, selection), {"schema": schema},
                      commits_from_bytes=True)


def flush_when_waiting(files, *outputs) -> None:
    """A live server's output flushed whenever the read waits for the
    server (each output's `flush()`, in order): a follower's reader sees
    every event received, not what a buffer happens to hold. Files: nothing."""
    if hasattr(files, "on_wait"):
        files.on_wait = lambda: [output.flush() for output in outputs]


def live_source(args, err, selection: EventSelection | None = None):
    """The LiveSource of -R."""
    from binlake.live.source import LiveSource
    return LiveSource(live_options(args, err, selection))


def live_options(args, err, selection: EventSelection | None = None):
    """The LiveOptions of -R (mysqlbinlog's meanings)."""
    from binlake.live.source import DEFAULT_SERVER_ID, LiveOptions
    from binlake.connection.settings import connection_settings
    from binlake.cli.commands.common import server_address
    if len(args.files) > 1:
        raise ValueError("-R reads the server's binlogs from one name on "
                         "(-t/--to-last-log or --stop-never go on from it)")
    options = selection.options if selection is not None else SelectionOptions()
    start_gtid = None
    if options.start_gtids:
        start_gtid = ",".join(f"{domain}-{server}-{seq}"
                              for domain, (server, seq) in sorted(options.start_gtids.items()))
    file = args.files[0] if args.files else None
    if file is None and start_gtid is None and options.start_position not in (None, 4):
        raise ValueError("--start-position with -R needs the binlog's name")
    quiet = getattr(args, "short_form", False)
    progress = None if quiet else live_progress(err)
    return LiveOptions(
        settings=connection_settings(server_address(args, for_schema=False)),
        file=file, position=options.start_position or 4,
        mariadb_gtid=start_gtid if file is None else None,
        mysql_gtid_set=getattr(args, "exclude_gtids", None),
        to_last_log=args.to_last_log or args.stop_never, stop_never=args.stop_never,
        server_id=args.connection_server_id or DEFAULT_SERVER_ID,
        heartbeat=args.heartbeat_period, read_timeout=args.read_timeout,
        on_progress=progress,
        on_reconnect=lambda error, attempt: err.write(
            f"binlake: warning: {error}; reconnecting (attempt {attempt})\n"),
        on_warning=lambda text: err.write(f"binlake: warning: {text}\n"))


def live_progress(err):
    """For a person at a terminal: file, position and lag on one stderr line,
    twice a second at most; None (silent) when stderr is not a terminal."""
    import time
    isatty = getattr(err, "isatty", None)
    if not (isatty and isatty()):
        return None
    last = [0.0]

    def show(file: str, position: int, server_time: int) -> None:
        now = time.time()
        if now - last[0] < 0.5:
            return
        last[0] = now
        lag = f", {max(0, now - server_time):.0f} s behind" if server_time else ""
        err.write(f"\rbinlake: {file} at {position}{lag}\033[K")
        err.flush()
    return show


def spool_stdin(files: list[str]):
    """Standard input ('-') copied to a temporary file, so that events can be
    re-read by position (for BINLOG blocks); returns (files, cleanup)."""
    if "-" not in files:
        return list(files), lambda: None
    handle = tempfile.NamedTemporaryFile(prefix="binlake-stdin-", delete=False)
    with handle:
        shutil.copyfileobj(sys.stdin.buffer, handle, 1 << 20)

    def cleanup():
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
    return [handle.name if f == "-" else f for f in files], cleanup


@contextlib.contextmanager
def open_output(args, out):
    """--result-file (written whole or not at all: `atomic.replaced`), or the
    given stream. Following a server for ever (--stop-never), the file is the
    stream itself, written as it comes, for `tail -f` and the like."""
    path = getattr(args, "result_file", None)
    if not path:
        yield out
        return
    options = {"encoding": "utf-8", "errors": "surrogateescape", "newline": ""}
    opener = open if getattr(args, "stop_never", False) else replaced
    with opener(path, "w", **options) as handle:
        yield handle


def write_native(out, chunks) -> None:
    """UTF-8 text made by the native core, chunk by chunk: to a UTF-8
    stream's buffer as it is (two copies fewer), else as text."""
    encoding = (getattr(out, "encoding", "") or "").lower().replace("-", "")
    buffer = getattr(out, "buffer", None) if encoding == "utf8" else None
    if buffer is not None:
        out.flush()
    for chunk in chunks:
        if buffer is not None:
            buffer.write(chunk)
        else:
            out.write(raw_text(chunk))


class _NoProgress:
    def update(self, event) -> None:
        pass

    def file_done(self, path: str) -> None:
        pass

    def close(self) -> None:
        pass


class _Progress:
    """Bytes read across all files, the row events per second among them and
    the time left, on stderr (binlake.progress). Per event: a sum, a
    comparison and, for a rows event, a count; the bar itself is told once a
    MiB at most. (Row images stay undecoded here: their rows are not counted.)"""

    def __init__(self, files, err):
        from binlake.progress import Bar
        self._offsets = {}
        total = 0
        for path in files:
            self._offsets[path] = total
            total += os.path.getsize(path)
        self._bar = Bar(total, err, "binlake", rows_unit="row events")
        self._done = self._at = 0
        self._rows_events = 0

    def update(self, event) -> None:
        header = event.header
        if isinstance(event, RowsEvent):
            self._rows_events += 1
        self._at = position = self._offsets.get(header.file, 0) + header.next_pos
        if position - self._done >= 1 << 20:
            self._show(position)

    def file_done(self, path: str) -> None:
        """A file read whole without its events passing here (the native printer's)."""
        start = self._offsets.get(path)
        if start is not None:
            self._at = start + os.path.getsize(path)
            self._show(self._at)

    def _show(self, position: int) -> None:
        if self._rows_events:
            self._bar.count_rows(self._rows_events)
            self._rows_events = 0
        self._bar.advance_to(position)
        self._done = position

    def close(self) -> None:
        self._show(self._at)
        self._bar.close()


def progress_bar(files, err):
    """A progress bar when stderr is a terminal and tqdm is installed
    (binlake[progress]); otherwise nothing (a live source shows its own)."""
    from binlake.progress import on_terminal
    if not on_terminal(err) or not isinstance(files, list):
        return _NoProgress()
    try:
        return _Progress(files, err)
    except (ImportError, OSError):
        return _NoProgress()


def selected_events(args, files, selection: EventSelection, err, *, on_file=None,
                    prefix: str = "binlake", first_index: int = 0, **reader_kwargs):
    """(file index, event, verdict) for every event of `files` read one by one,
    until the selection says STOP (then it returns True). The partial last
    event of a file the server still writes ends that file with a warning,
    as it does for mysqlbinlog.
    `on_file(path)` / `on_file(None)` bracket each file (the text printer's hook).
    `first_index`: the index of the first of `files` in the run (they continue it)."""
    from binlake.errors import PartialEvent
    from binlake.text.filters import Verdict
    from binlake.read.reader import BinlogReader
    from binlake.cli.commands.common import reader_options
    # A live server's stream of files has no known last one: --stop-position
    # applies to whichever file reaches it, as with mysqlbinlog -R.
    last = first_index + len(files) - 1 if isinstance(files, (list, tuple)) else None
    for index, path in enumerate(files, first_index):
        reader = BinlogReader([path], **reader_options(args), **reader_kwargs)
        if on_file is not None:
            on_file(path)
        if isinstance(path, str) and path != "-":
            # a file that cannot be opened is an OSError naming it, before the
            # file's closing lines (mysqlbinlog writes none for it either)
            open(path, "rb").close()
        stopped = False
        try:
            for event in reader:
                verdict = selection.verdict(event, index == 0, last is None or index == last)
                if verdict is Verdict.STOP:
                    stopped = True
                    break
                yield index, event, verdict
                if verdict is Verdict.SHOW and selection.after(event) is Verdict.STOP:
                    stopped = True
                    break
        except PartialEvent as exc:
            err.write(f"{prefix}: warning: {exc}\n")
        finally:
            for warning in reader.stats.warnings:
                err.write(f"{prefix}: warning: {warning}\n")
            if on_file is not None:
                on_file(None)
        if stopped:
            return True
    return False
