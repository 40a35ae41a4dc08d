"""binlake: read MySQL and MariaDB binary logs of every format.

    import binlake
    for event in binlake.open("mysql-bin.000001"):
        print(event.header.pos, event.type_name)
    for change in binlake.changes(["bin.000001", "bin.000002"]):
        print(change.op, change.table, change.before, change.after)
    for txn in binlake.transactions("bin.000001"):               # whole, with end_pos
        print(txn.gtid, len(txn.changes))
    for txn in binlake.stream(host="db1", user="repl", resume=token).transactions():
        handle(txn.changes); token = str(txn.resume_token)       # a live server
    table = binlake.arrow_changes(["bin.000001"]).read_all()   # pyarrow
"""

from __future__ import annotations

from binlake.arrow import arrow_changes
from binlake.errors import (BinlogError, ChecksumMismatch, CorruptEvent, EncryptedBinlog, NotABinlog,
                     PartialEvent, TruncatedEvent, UnsupportedFeature)
from binlake.live.source import LiveStream, ResumeToken, stream
from binlake.read.reader import BinlogReader, FileInfo, read_events
from binlake.live.protocol import ReplicationError
from binlake.records import Change, Transaction, changes, changes_from_events, transactions
from binlake.read.values import MysqlTemporal

__version__ = "0.1.0"


def open(paths, **options) -> BinlogReader:  # noqa: A001 - mirrors io.open's role
    """A reader over one binlog file or several, in order (`-` is standard input)."""
    return BinlogReader(paths, **options)


__all__ = [
    "open", "read_events", "changes", "transactions", "Transaction", "stream", "LiveStream", "ResumeToken", "ReplicationError", "arrow_changes", "changes_from_events", "BinlogReader", "FileInfo",
    "Change", "MysqlTemporal", "BinlogError", "ChecksumMismatch", "CorruptEvent",
    "EncryptedBinlog", "NotABinlog", "PartialEvent", "TruncatedEvent", "UnsupportedFeature",
]
