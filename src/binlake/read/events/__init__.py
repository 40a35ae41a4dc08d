"""Event decoders, one dispatch table on one screen.

Rule: a type code missing here is not an error: the reader keeps the event's
bytes as an UnknownEvent and counts it.
"""

from __future__ import annotations

from binlake.constants import EventType as E
from binlake.read.events.base import Event, EventHeader, UnknownEvent
from binlake.read.events.control import (FormatDescription, FormatDescriptionEvent, HeartbeatEvent,
                      IgnorableEvent, IncidentEvent, IntvarEvent, RandEvent, RotateEvent,
                      SlaveEvent, StartEventV3, StopEvent, UserVarEvent, XidEvent,
                      decode_format_description, decode_heartbeat, decode_heartbeat_v2,
                      decode_ignorable, decode_incident, decode_intvar, decode_rand,
                      decode_rotate, decode_slave, decode_start_v3, decode_stop,
                      decode_user_var, decode_xid)
from binlake.read.events.gtid import (BinlogCheckpointEvent, GtidEvent, MariadbGtidEvent, MariadbGtidListEvent,
                   PreviousGtidsEvent, StartEncryptionEvent, TransactionContextEvent,
                   ViewChangeEvent, XaPrepareEvent, decode_binlog_checkpoint, decode_gtid,
                   decode_gtid_tagged, decode_mariadb_gtid, decode_mariadb_gtid_list,
                   decode_previous_gtids, decode_start_encryption,
                   decode_transaction_context, decode_view_change, decode_xa_prepare)
from binlake.read.events.load import FileBlockEvent, LoadEvent, decode_file_block, decode_load
from binlake.read.events.payload import TransactionPayloadEvent, decode_transaction_payload
from binlake.read.events.query import QueryEvent, RowsQueryEvent, decode_annotate_rows, decode_query, decode_rows_query
from binlake.read.events.rows import ROWS_OPERATION, RowsEvent, decode_rows_event
from binlake.read.events.table_map import Column, TableMapEvent, decode_table_map

DECODERS = {
    E.START_EVENT_V3: decode_start_v3,
    E.QUERY_EVENT: decode_query,
    E.STOP_EVENT: decode_stop,
    E.ROTATE_EVENT: decode_rotate,
    E.INTVAR_EVENT: decode_intvar,
    E.LOAD_EVENT: decode_load,
    E.SLAVE_EVENT: decode_slave,
    E.CREATE_FILE_EVENT: decode_load,
    E.APPEND_BLOCK_EVENT: decode_file_block,
    E.EXEC_LOAD_EVENT: decode_file_block,
    E.DELETE_FILE_EVENT: decode_file_block,
    E.NEW_LOAD_EVENT: decode_load,
    E.RAND_EVENT: decode_rand,
    E.USER_VAR_EVENT: decode_user_var,
    E.FORMAT_DESCRIPTION_EVENT: decode_format_description,
    E.XID_EVENT: decode_xid,
    E.BEGIN_LOAD_QUERY_EVENT: decode_file_block,
    E.EXECUTE_LOAD_QUERY_EVENT: decode_query,
    E.TABLE_MAP_EVENT: decode_table_map,
    E.INCIDENT_EVENT: decode_incident,
    E.HEARTBEAT_LOG_EVENT: decode_heartbeat,
    E.IGNORABLE_LOG_EVENT: decode_ignorable,
    E.ROWS_QUERY_LOG_EVENT: decode_rows_query,
    E.GTID_LOG_EVENT: decode_gtid,
    E.ANONYMOUS_GTID_LOG_EVENT: decode_gtid,
    E.PREVIOUS_GTIDS_LOG_EVENT: decode_previous_gtids,
    E.TRANSACTION_CONTEXT_EVENT: decode_transaction_context,
    E.VIEW_CHANGE_EVENT: decode_view_change,
    E.XA_PREPARE_LOG_EVENT: decode_xa_prepare,
    E.TRANSACTION_PAYLOAD_EVENT: decode_transaction_payload,
    E.HEARTBEAT_LOG_EVENT_V2: decode_heartbeat_v2,
    E.GTID_TAGGED_LOG_EVENT: decode_gtid_tagged,
    E.ANNOTATE_ROWS_EVENT: decode_annotate_rows,
    E.BINLOG_CHECKPOINT_EVENT: decode_binlog_checkpoint,
    E.GTID_EVENT: decode_mariadb_gtid,
    E.GTID_LIST_EVENT: decode_mariadb_gtid_list,
    E.START_ENCRYPTION_EVENT: decode_start_encryption,
    E.QUERY_COMPRESSED_EVENT: decode_query,
    **{code: decode_rows_event for code in ROWS_OPERATION},
}

__all__ = [
    "DECODERS", "Event", "EventHeader", "UnknownEvent", "FormatDescription",
    "FormatDescriptionEvent", "StartEventV3", "StopEvent", "RotateEvent", "IntvarEvent",
    "RandEvent", "UserVarEvent", "XidEvent", "IncidentEvent", "HeartbeatEvent",
    "IgnorableEvent", "SlaveEvent", "QueryEvent", "RowsQueryEvent", "LoadEvent",
    "FileBlockEvent", "TableMapEvent", "Column", "RowsEvent", "GtidEvent",
    "PreviousGtidsEvent", "TransactionContextEvent", "ViewChangeEvent", "XaPrepareEvent",
    "MariadbGtidEvent", "MariadbGtidListEvent", "BinlogCheckpointEvent",
    "StartEncryptionEvent", "TransactionPayloadEvent",
]
