"""Which python-mysql-replication class each event type becomes (upstream's
packet map), and the conversion of one binlake event into it."""

from __future__ import annotations

from binlake.compat.pymysqlreplication import event as ev
from binlake.compat.pymysqlreplication import row_event as rv
from binlake.compat.pymysqlreplication.constants import BINLOG as B

EVENT_MAP = {
    B.QUERY_EVENT: ev.QueryEvent, B.ROTATE_EVENT: ev.RotateEvent,
    B.FORMAT_DESCRIPTION_EVENT: ev.FormatDescriptionEvent, B.XID_EVENT: ev.XidEvent,
    B.INTVAR_EVENT: ev.IntvarEvent, B.GTID_LOG_EVENT: ev.GtidEvent,
    B.PREVIOUS_GTIDS_LOG_EVENT: ev.PreviousGtidsEvent, B.STOP_EVENT: ev.StopEvent,
    B.BEGIN_LOAD_QUERY_EVENT: ev.BeginLoadQueryEvent,
    B.EXECUTE_LOAD_QUERY_EVENT: ev.ExecuteLoadQueryEvent,
    B.HEARTBEAT_LOG_EVENT: ev.HeartbeatLogEvent, B.XA_PREPARE_EVENT: ev.XAPrepareEvent,
    B.ROWS_QUERY_LOG_EVENT: ev.RowsQueryLogEvent, B.RAND_EVENT: ev.RandEvent,
    B.USER_VAR_EVENT: ev.UserVarEvent,
    B.UPDATE_ROWS_EVENT_V1: rv.UpdateRowsEvent, B.WRITE_ROWS_EVENT_V1: rv.WriteRowsEvent,
    B.DELETE_ROWS_EVENT_V1: rv.DeleteRowsEvent, B.UPDATE_ROWS_EVENT_V2: rv.UpdateRowsEvent,
    B.WRITE_ROWS_EVENT_V2: rv.WriteRowsEvent, B.DELETE_ROWS_EVENT_V2: rv.DeleteRowsEvent,
    B.TABLE_MAP_EVENT: rv.TableMapEvent, B.PARTIAL_UPDATE_ROWS_EVENT: rv.PartialUpdateRowsEvent,
    B.ANONYMOUS_GTID_LOG_EVENT: ev.NotImplementedEvent,
    B.MARIADB_ANNOTATE_ROWS_EVENT: ev.MariadbAnnotateRowsEvent,
    B.MARIADB_BINLOG_CHECKPOINT_EVENT: ev.MariadbBinLogCheckPointEvent,
    B.MARIADB_GTID_EVENT: ev.MariadbGtidEvent,
    B.MARIADB_GTID_GTID_LIST_EVENT: ev.MariadbGtidListEvent,
    B.MARIADB_START_ENCRYPTION_EVENT: ev.MariadbStartEncryptionEvent,
    # MariaDB's compressed rows events, which upstream cannot read and
    # binlake does: given as the plain rows events they are
    166: rv.WriteRowsEvent, 167: rv.UpdateRowsEvent, 168: rv.DeleteRowsEvent,
    169: rv.WriteRowsEvent, 170: rv.UpdateRowsEvent, 171: rv.DeleteRowsEvent,
    # and compressed statements
    165: ev.QueryEvent,
}

#: Every class a stream gives by default (upstream's `_allowed_event_list`)
DEFAULT_EVENTS = frozenset((
    ev.QueryEvent, ev.RotateEvent, ev.StopEvent, ev.FormatDescriptionEvent, ev.XAPrepareEvent,
    ev.XidEvent, ev.GtidEvent, ev.BeginLoadQueryEvent, ev.ExecuteLoadQueryEvent,
    rv.UpdateRowsEvent, rv.WriteRowsEvent, rv.DeleteRowsEvent, rv.TableMapEvent,
    ev.HeartbeatLogEvent, ev.NotImplementedEvent, ev.MariadbGtidEvent, ev.RowsQueryLogEvent,
    ev.MariadbAnnotateRowsEvent, ev.RandEvent, ev.MariadbStartEncryptionEvent,
    ev.MariadbGtidListEvent, ev.MariadbBinLogCheckPointEvent, ev.UserVarEvent,
    ev.PreviousGtidsEvent, rv.PartialUpdateRowsEvent,
))

_WANTS_RAW = (ev.QueryEvent, ev.MariadbAnnotateRowsEvent)


def event_class(type_code: int):
    return EVENT_MAP.get(type_code, ev.NotImplementedEvent)


def convert(event, cls, ctx):
    """binlake's `event` as an instance of upstream's `cls`."""
    if cls is ev.NotImplementedEvent or not hasattr(event, "header"):
        return ev.NotImplementedEvent._from_binlake(event, ctx)
    raw_event = ctx.raw_event
    if cls not in _WANTS_RAW:
        ctx.raw_event = None   # the bytes are looked up only where they tell something
    try:
        return cls._from_binlake(event, ctx)
    finally:
        ctx.raw_event = raw_event
