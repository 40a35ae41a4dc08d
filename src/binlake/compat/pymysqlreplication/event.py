"""python-mysql-replication's event classes, filled from binlake's events.

Strategy: binlake's reader decodes every event (one decoder: its own); each
class here only renames and retypes what that event holds, in `_fill`,
into the attributes python-mysql-replication documents. Construction is
`BinLogEvent._from_binlake(event, context)` where `context` carries the
stream's state (its table map, control connection, server flavour); the
header fields come from binlake's `EventHeader`; `packet` is a small record
of them (and of the raw event bytes when the live source still holds them),
so `dump()`, `to_dict()` and `event.packet.log_pos` work as upstream's.

Rule: a value python-mysql-replication gives in another type than binlake
(bytes vs str, a tuple) is converted here, once, and the reason is said.
"""

from __future__ import annotations

import binascii

from binlake.compat.pymysqlreplication._base import (  # noqa: F401 - upstream's names
    BinLogEvent, Context, _Packet, _statement_bytes)
from binlake.compat.pymysqlreplication.logger import logger  # noqa: F401 - upstream's name


def _uuid_bytes(sid: str) -> bytes:
    return binascii.unhexlify(sid.replace("-", ""))


class GtidEvent(BinLogEvent):
    """MySQL's GTID of the transaction that follows (`gtid`: `uuid:gno`)."""

    def _fill(self, event, ctx):
        self.commit_flag = bool(event.flags & 1)
        self.sid = _uuid_bytes(event.sid)
        self.gno = event.gno
        self.lt_type = 2
        if event.last_committed is not None:
            self.last_committed = event.last_committed
            self.sequence_number = event.sequence_number

    @property
    def gtid(self):
        nibbles = binascii.hexlify(self.sid).decode("ascii")
        return (f"{nibbles[:8]}-{nibbles[8:12]}-{nibbles[12:16]}-{nibbles[16:20]}-"
                f"{nibbles[20:]}:{self.gno}")

    def _dump(self):
        print(f"Commit: {self.commit_flag}")
        print(f"GTID_NEXT: {self.gtid}")
        if hasattr(self, "last_committed"):
            print(f"last_committed: {self.last_committed}")
            print(f"sequence_number: {self.sequence_number}")

    def __repr__(self):
        return f'<GtidEvent "{self.gtid}">'


class PreviousGtidsEvent(BinLogEvent):
    """MySQL: every GTID before this binlog file."""

    def _fill(self, event, ctx):
        self._n_sid = len(event.sids)
        self._gtids = event.gtid_set.split(",") if event.sids else []
        self._previous_gtids = event.gtid_set

    def _dump(self):
        print(f"previous_gtids: {self._previous_gtids}")

    def __repr__(self):
        return f'<PreviousGtidsEvent "{self._previous_gtids}">'


class MariadbGtidEvent(BinLogEvent):
    """MariaDB's GTID (`domain-server-seq`), which also begins its transaction."""

    def _fill(self, event, ctx):
        self.server_id = event.header.server_id
        self.gtid_seq_no = event.seq_no
        self.domain_id = event.domain_id
        self.flags = event.flags
        self.gtid = f"{self.domain_id}-{self.server_id}-{self.gtid_seq_no}"

    def _dump(self):
        print(f"Flags: {self.flags}")
        print(f"GTID: {self.gtid}")


class MariadbBinLogCheckPointEvent(BinLogEvent):
    def _fill(self, event, ctx):
        self.filename = event.binlog_file

    def _dump(self):
        print(f"Filename: {self.filename}")


class MariadbAnnotateRowsEvent(BinLogEvent):
    """MariaDB: the statement of the rows events that follow (`sql_statement`, bytes)."""

    def _fill(self, event, ctx):
        # upstream gives the statement's bytes as sent
        self.sql_statement = _statement_bytes(event.query, self.packet.raw)

    def _dump(self):
        print(f"SQL statement : {self.sql_statement}")


class _MariadbGtid:
    """One entry of a GTID list."""

    def __init__(self, domain_id, server_id, seq_no):
        self.domain_id, self.server_id, self.gtid_seq_no = domain_id, server_id, seq_no
        self.gtid = f"{domain_id}-{server_id}-{seq_no}"

    def __repr__(self):
        return f"<MariadbGtid {self.gtid}>"


class MariadbGtidListEvent(BinLogEvent):
    """MariaDB: the GTID state at the start of a binlog file (`gtid_list`)."""

    def _fill(self, event, ctx):
        self.gtid_length = len(event.gtids)
        self.gtid_list = [_MariadbGtid(*entry) for entry in event.gtids]


class RotateEvent(BinLogEvent):
    """The next binlog (`next_binlog`) from `position`."""

    def _fill(self, event, ctx):
        self.position = event.position
        self.next_binlog = event.next_file

    def dump(self):
        print(f"=== {self.__class__.__name__} ===")
        print(f"Position: {self.position}")
        print(f"Next binlog file: {self.next_binlog}")
        print()


class XAPrepareEvent(BinLogEvent):
    def _fill(self, event, ctx):
        self.one_phase = event.one_phase
        self.xid_format_id = event.format_id
        self.xid_gtrid = event.gtrid
        self.xid_bqual = event.bqual

    @property
    def xid(self):
        return self.xid_gtrid.decode() + self.xid_bqual.decode()

    def _dump(self):
        print(f"One phase: {self.one_phase}")
        print(f"XID formatID: {self.xid_format_id}")
        print(f"XID: {self.xid}")


class FormatDescriptionEvent(BinLogEvent):
    """The format of the binlog file's events, and the server's version."""

    def _fill(self, event, ctx):
        self.binlog_version = (event.binlog_version,)   # upstream: struct.unpack's tuple
        self.mysql_version_str = event.server_version.rstrip("\0")
        numbers = self.mysql_version_str.split("-")[0]
        self.mysql_version = tuple(int(n) for n in numbers.split(".") if n.isdigit())
        self.created = event.create_timestamp
        self.common_header_len = event.header_length
        self.post_header_len = tuple(event.post_header_lengths)
        self.checksum_algorithm = event.checksum_alg
        self.server_version_split = self.mysql_version[:3]
        self.number_of_event_types = len(self.post_header_len)
        if "mariadb" in self.mysql_version_str.lower():
            self.dbms = "mariadb"

    def _dump(self):
        print(f"Binlog version: {self.binlog_version}")
        print(f"mysql version: {self.mysql_version_str}")
        print(f"Created: {self.created}")
        print(f"Common header length: {self.common_header_len}")
        print(f"Post header length: {self.post_header_len}")
        print(f"Server version split: {self.server_version_split}")
        print(f"Number of event types: {self.number_of_event_types}")


class StopEvent(BinLogEvent):
    pass


class XidEvent(BinLogEvent):
    """The commit of a transaction (`xid`)."""

    def _fill(self, event, ctx):
        self.xid = event.xid

    def _dump(self):
        print(f"Transaction ID: {self.xid}")


class HeartbeatLogEvent(BinLogEvent):
    """The server has nothing newer than `ident` (the binlog's name)."""

    def _fill(self, event, ctx):
        self.ident = event.log_file

    def _dump(self):
        print(f"Current binlog: {self.ident}")


from binlake.compat.pymysqlreplication._query import (  # noqa: E402,F401 - re-exported
    BeginLoadQueryEvent, ExecuteLoadQueryEvent, IntvarEvent, MariadbStartEncryptionEvent,
    NotImplementedEvent, QueryEvent, RandEvent, RowsQueryLogEvent, UserVarEvent)

