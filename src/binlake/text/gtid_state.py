"""mariadb-binlog's GTID state checks (`--gtid-strict-mode`, on by default).

Strategy, as mariadb-binlog's Binlog_gtid_state_validator: one record per
replication domain, its start (from `--start-position`'s GTIDs with a
sequence number, else from the first Gtid list the binlogs carry) and the
last GTID seen.
- At the first Gtid list (not when a numeric `--start-position` skips the
  file's head), the start positions must cover every domain it names, and
  not start before it (errors whatever the mode; nothing more is printed).
  With only stop positions, each must lie past the list's state.
- In strict mode, each GTID shown must come after its domain's last one
  (sequence numbers only; gaps are fine; the first GTID of a domain nobody
  named is taken as it comes): an out-of-order one ends the run there with
  an error. With `-vvv` and without strict mode the same findings are
  warnings at the end; otherwise the checks stop at the first GTID.
- At the end, a domain whose start was never reached is reported (an error
  in strict mode, which sets the exit status, else a warning).
- In strict mode a `--start-position` past its domain's `--stop-position`
  is refused before anything is read.

Messages are mariadb-binlog's, word for word. Where it reports several
domains it follows its hash table's order; here they come in the order the
domains were first named.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def gtid_text(domain: int, server_id: int, seq_no: int) -> str:
    return f"{domain}-{server_id}-{seq_no}"


def range_error(start_gtids: dict | None, stop_gtids: dict | None) -> str | None:
    """Strict mode's refusal of a start past its stop, or None."""
    for domain, (stop_server, stop_seq) in (stop_gtids or {}).items():
        start = (start_gtids or {}).get(domain)
        if start is not None and start[1] > stop_seq:
            return ("Queried GTID range is invalid in strict mode. Stop position "
                    f"{gtid_text(domain, stop_server, stop_seq)} is not greater than or equal "
                    f"to start {gtid_text(domain, *start)}.")
    return None


@dataclass
class _Domain:
    start: tuple             #: (domain, server_id, seq_no)
    last: tuple
    findings: list = field(default_factory=list)  #: (out-of-order GTID, the last one then)


class GtidStateValidator:
    """Feed it the Gtid lists and the GTIDs shown, in order (see the module
    docstring); it answers with error lines, and `report()` at the end."""

    def __init__(self, start_gtids: dict | None, stop_gtids: dict | None, *, strict: bool,
                 verbose: int, numeric_start: bool):
        self.strict = strict
        self.verbose = verbose
        self.active = True             #: False: the checks were dropped (not strict, not -vvv)
        self._stop_gtids = stop_gtids or {}
        self._named_start = False
        self._list_checked = numeric_start  # a numeric start skips the file's Gtid list
        self._domains: dict[int, _Domain] = {}
        for domain, (server_id, seq_no) in (start_gtids or {}).items():
            if seq_no:  # D-S-0: the domain from its beginning, not a start to check
                self._domains[domain] = _Domain((domain, server_id, seq_no), (domain, 0, 0))
                self._named_start = True

    def gtid_list(self, gtids: list, timestamp: int) -> tuple[list[str], list[str]]:
        """(errors, warnings) at a Gtid list event; errors end the run."""
        if not self.active or not timestamp:
            return [], []
        errors: list[str] = []
        if not self._list_checked:
            self._list_checked = True
            if gtids:
                errors = self._initial_state(gtids)
                if not errors and not self._named_start:
                    errors = self._stop_state()
                return errors, []
        warnings = self._verify_state(gtids) if self.verbose >= 3 else []
        return errors, warnings

    def _initial_state(self, gtids: list) -> list[str]:
        if not self._domains:
            for domain, server_id, seq_no in gtids:
                known = self._domains.get(domain)
                if known is None or seq_no > known.start[2]:
                    self._domains[domain] = _Domain((domain, server_id, seq_no), (domain, 0, 0))
        errors = []
        for entry in gtids:
            domain, _, seq_no = entry
            record = self._domains.get(domain)
            if record is None:
                errors.append(
                    f"Starting GTID position list does not specify an initial value for domain "
                    f"{domain}, whose events may be present in the requested binlog file(s). The "
                    f"last known position for this domain was {gtid_text(*entry)}.")
            elif record.start[2] < seq_no:
                errors.append(
                    f"Binary logs are missing data for domain {domain}. Expected data to start "
                    f"from state {gtid_text(*record.start)}; however, the initial GTID state of "
                    f"the logs was {gtid_text(*entry)}.")
            elif seq_no > record.last[2]:
                record.last = tuple(entry)
        return errors

    def _stop_state(self) -> list[str]:
        for domain, (server_id, seq_no) in self._stop_gtids.items():
            record = self._domains.get(domain)
            if record is not None and seq_no <= record.start[2]:
                return [f"--stop-position GTID {gtid_text(domain, server_id, seq_no)} does not "
                        f"exist in the specified binlog files. The current GTID state of domain "
                        f"{domain} in the specified binary logs is {gtid_text(*record.start)}"]
        return []

    def _verify_state(self, gtids: list) -> list[str]:
        warnings = []
        for entry in gtids:
            domain, _, seq_no = entry
            record = self._domains.get(domain)
            if record is None:
                warnings.append(
                    f"Binary logs are missing data for domain {domain}. The current binary log "
                    f"specified its current state for this domain as {gtid_text(*entry)}, but "
                    "neither the starting GTID position list nor any processed events have "
                    "mentioned this domain.")
            elif record.last[2] < seq_no:
                warnings.append(
                    f"Binary logs are missing data for domain {domain}. The current binary log "
                    f"state is {gtid_text(*entry)}, but the last seen event was "
                    f"{gtid_text(*record.last)}.")
        return warnings

    def gtid(self, domain: int, server_id: int, seq_no: int) -> bool:
        """A GTID shown; True when strict mode ends the run at it (then `report()`)."""
        if not self.active:
            return False
        if not (self.strict or self.verbose >= 3):
            self.active = False  # mariadb-binlog drops its checks here
            return False
        gtid = (domain, server_id, seq_no)
        record = self._domains.get(domain)
        if record is None:
            self._domains[domain] = _Domain((domain, 0, 0), gtid)
            return False
        if record.start[2] <= seq_no <= record.last[2]:
            record.findings.append((gtid, record.last))
            return self.strict
        record.last = gtid
        return False

    def went_on_from(self, state: str) -> None:
        """The dump went on by this GTID state after a failover ("D-S-N,..."):
        each domain it names was last seen there (a transaction cut off by
        the failover comes again whole, not out of order)."""
        for gtid in state.split(","):
            domain, server_id, seq_no = map(int, gtid.split("-"))
            record = self._domains.get(domain)
            if record is not None:
                record.last = (domain, server_id, seq_no)

    def report(self) -> tuple[list[str], bool]:
        """(lines, whether they are errors): what the domains' state says."""
        if not self.active:
            return [], False
        lines = []
        for record in self._domains.values():
            if record.last[2] < record.start[2]:
                lines.append(f"Binary logs never reached expected GTID state of "
                             f"{gtid_text(*record.start)}")
            for gtid, last in record.findings:
                lines.append(f"Found out of order GTID. Got {gtid_text(*gtid)} after "
                             f"{gtid_text(*last)}")
        return lines, self.strict and bool(lines)


class GtidCheck:
    """The validator as `binlake dump` runs it, on the Python printer's events
    or on the GTID trail the native printer's first pass found. `failed`:
    the run ends (errors in `errors`, nothing more printed, no closing lines)."""

    def __init__(self, validator: GtidStateValidator):
        self.validator = validator
        self.failed = False
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def gtid_list(self, gtids: list, timestamp: int) -> bool:
        errors, warnings = self.validator.gtid_list(gtids, timestamp)
        self.warnings += ["WARNING: " + line for line in warnings]
        if errors:
            self.errors, self.failed = errors, True
        return self.failed

    def gtid(self, domain: int, server_id: int, seq_no: int) -> bool:
        if self.validator.gtid(domain, server_id, seq_no):
            self.errors, self.failed = self.validator.report()[0], True
        return self.failed

    def native_limit(self, trail: list) -> int | None:
        """Where the native printer must stop (the offset of the event the
        checks end the run at), or None. `trail`: ("list", pos, timestamp,
        gtids) and ("gtid", pos, domain, server_id, seq_no), in file order."""
        for mark in trail:
            if mark[0] == "list":
                failed = self.gtid_list(mark[3], mark[2])
            else:
                failed = self.gtid(*mark[2:])
            if failed:
                return mark[1]
        return None

    def messages(self) -> tuple[list[str], bool]:
        """The stderr lines at the end (warnings, then the report or the
        errors that ended the run), and whether they make the status 1."""
        if self.failed:
            return self.warnings + ["ERROR: " + line for line in self.errors], True
        lines, failing = self.validator.report()
        prefix = "ERROR: " if self.validator.strict else "WARNING: "
        return self.warnings + [prefix + line for line in lines], failing
