"""Numbers of the binlog format, named exactly as in the server source.

Strategy: one IntEnum per numbering the server defines (event types, column
types, optional table-map metadata, query status variables), so a grep for a
name finds both this module and the server's `binlog_event.h`/`log_event.h`
(MySQL) or `log_event.h` (MariaDB). Nothing here does work.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag

BINLOG_MAGIC = b"\xfebin"
#: MySQL 8.0.14+ encrypted binlog files start with this magic instead.
ENCRYPTED_BINLOG_MAGIC = b"\xfdbin"

LOG_EVENT_MINIMAL_HEADER_LEN = 19
OLD_HEADER_LEN = 13  # binlog v1 (MySQL 3.23): no next_position, no flags
EVENT_TYPE_OFFSET = 4
EVENT_LEN_OFFSET = 9
FLAGS_OFFSET = 17
ST_SERVER_VER_LEN = 50
START_V3_HEADER_LEN = 2 + ST_SERVER_VER_LEN + 4
BINLOG_CHECKSUM_LEN = 4
BINLOG_CHECKSUM_ALG_DESC_LEN = 1


class EventType(IntEnum):
    """`Log_event_type` of MySQL (0-42) and MariaDB (160+)."""

    UNKNOWN_EVENT = 0
    START_EVENT_V3 = 1
    QUERY_EVENT = 2
    STOP_EVENT = 3
    ROTATE_EVENT = 4
    INTVAR_EVENT = 5
    LOAD_EVENT = 6
    SLAVE_EVENT = 7
    CREATE_FILE_EVENT = 8
    APPEND_BLOCK_EVENT = 9
    EXEC_LOAD_EVENT = 10
    DELETE_FILE_EVENT = 11
    NEW_LOAD_EVENT = 12
    RAND_EVENT = 13
    USER_VAR_EVENT = 14
    FORMAT_DESCRIPTION_EVENT = 15
    XID_EVENT = 16
    BEGIN_LOAD_QUERY_EVENT = 17
    EXECUTE_LOAD_QUERY_EVENT = 18
    TABLE_MAP_EVENT = 19
    PRE_GA_WRITE_ROWS_EVENT = 20  # MySQL 5.1.0-5.1.15 ("WRITE_ROWS_EVENT_V0")
    PRE_GA_UPDATE_ROWS_EVENT = 21
    PRE_GA_DELETE_ROWS_EVENT = 22
    WRITE_ROWS_EVENT_V1 = 23
    UPDATE_ROWS_EVENT_V1 = 24
    DELETE_ROWS_EVENT_V1 = 25
    INCIDENT_EVENT = 26
    HEARTBEAT_LOG_EVENT = 27
    IGNORABLE_LOG_EVENT = 28
    ROWS_QUERY_LOG_EVENT = 29
    WRITE_ROWS_EVENT = 30
    UPDATE_ROWS_EVENT = 31
    DELETE_ROWS_EVENT = 32
    GTID_LOG_EVENT = 33
    ANONYMOUS_GTID_LOG_EVENT = 34
    PREVIOUS_GTIDS_LOG_EVENT = 35
    TRANSACTION_CONTEXT_EVENT = 36
    VIEW_CHANGE_EVENT = 37
    XA_PREPARE_LOG_EVENT = 38
    PARTIAL_UPDATE_ROWS_EVENT = 39
    TRANSACTION_PAYLOAD_EVENT = 40
    HEARTBEAT_LOG_EVENT_V2 = 41
    GTID_TAGGED_LOG_EVENT = 42
    # MariaDB
    ANNOTATE_ROWS_EVENT = 160
    BINLOG_CHECKPOINT_EVENT = 161
    GTID_EVENT = 162
    GTID_LIST_EVENT = 163
    START_ENCRYPTION_EVENT = 164
    QUERY_COMPRESSED_EVENT = 165
    WRITE_ROWS_COMPRESSED_EVENT_V1 = 166
    UPDATE_ROWS_COMPRESSED_EVENT_V1 = 167
    DELETE_ROWS_COMPRESSED_EVENT_V1 = 168
    WRITE_ROWS_COMPRESSED_EVENT = 169
    UPDATE_ROWS_COMPRESSED_EVENT = 170
    DELETE_ROWS_COMPRESSED_EVENT = 171


_EVENT_TYPE_NAMES = {member.value: member.name for member in EventType}


def event_type_name(code: int) -> str:
    # a dict, not EventType(code): the reader asks for every event's name
    name = _EVENT_TYPE_NAMES.get(code)
    return name if name is not None else f"UNKNOWN_EVENT_{code}"


#: What `SHOW BINLOG EVENTS` prints in Event_type (Log_event::get_type_str).
EVENT_TYPE_STR: dict[int, str] = {
    0: "Unknown", 1: "Start_v3", 2: "Query", 3: "Stop", 4: "Rotate", 5: "Intvar",
    6: "Load", 7: "Slave", 8: "Create_file", 9: "Append_block", 10: "Exec_load",
    11: "Delete_file", 12: "New_load", 13: "RAND", 14: "User var",
    15: "Format_desc", 16: "Xid", 17: "Begin_load_query", 18: "Execute_load_query",
    19: "Table_map", 20: "Write_rows_event_old", 21: "Update_rows_event_old",
    22: "Delete_rows_event_old", 23: "Write_rows_v1", 24: "Update_rows_v1",
    25: "Delete_rows_v1", 26: "Incident", 27: "Heartbeat", 28: "Ignorable",
    29: "Rows_query", 30: "Write_rows", 31: "Update_rows", 32: "Delete_rows",
    33: "Gtid", 34: "Anonymous_Gtid", 35: "Previous_gtids",
    36: "Transaction_context", 37: "View_change", 38: "XA_prepare",
    39: "Update_rows_partial", 40: "Transaction_payload", 41: "Heartbeat_v2",
    42: "Gtid_tagged_log_event",
    160: "Annotate_rows", 161: "Binlog_checkpoint", 162: "Gtid", 163: "Gtid_list",
    164: "Start_encryption", 165: "Query_compressed",
    166: "Write_rows_compressed_v1", 167: "Update_rows_compressed_v1",
    168: "Delete_rows_compressed_v1", 169: "Write_rows_compressed",
    170: "Update_rows_compressed", 171: "Delete_rows_compressed",
}


class LogEventFlag(IntFlag):
    """Flags of the common event header (`LOG_EVENT_*_F`)."""

    LOG_EVENT_BINLOG_IN_USE_F = 0x1
    LOG_EVENT_FORCED_ROTATE_F = 0x2
    LOG_EVENT_THREAD_SPECIFIC_F = 0x4
    LOG_EVENT_SUPPRESS_USE_F = 0x8
    LOG_EVENT_UPDATE_TABLE_MAP_VERSION_F = 0x10
    LOG_EVENT_ARTIFICIAL_F = 0x20
    LOG_EVENT_RELAY_LOG_F = 0x40
    LOG_EVENT_IGNORABLE_F = 0x80
    LOG_EVENT_NO_FILTER_F = 0x100
    LOG_EVENT_MTS_ISOLATE_F = 0x200
    LOG_EVENT_SKIP_REPLICATION_F = 0x8000  # MariaDB


class ChecksumAlg(IntEnum):
    """`enum_binlog_checksum_alg`."""

    BINLOG_CHECKSUM_ALG_OFF = 0
    BINLOG_CHECKSUM_ALG_CRC32 = 1
    BINLOG_CHECKSUM_ALG_UNDEF = 255


class ColumnType(IntEnum):
    """`enum_field_types` (mysql_com.h / field_types.h)."""

    MYSQL_TYPE_DECIMAL = 0
    MYSQL_TYPE_TINY = 1
    MYSQL_TYPE_SHORT = 2
    MYSQL_TYPE_LONG = 3
    MYSQL_TYPE_FLOAT = 4
    MYSQL_TYPE_DOUBLE = 5
    MYSQL_TYPE_NULL = 6
    MYSQL_TYPE_TIMESTAMP = 7
    MYSQL_TYPE_LONGLONG = 8
    MYSQL_TYPE_INT24 = 9
    MYSQL_TYPE_DATE = 10
    MYSQL_TYPE_TIME = 11
    MYSQL_TYPE_DATETIME = 12
    MYSQL_TYPE_YEAR = 13
    MYSQL_TYPE_NEWDATE = 14
    MYSQL_TYPE_VARCHAR = 15
    MYSQL_TYPE_BIT = 16
    MYSQL_TYPE_TIMESTAMP2 = 17
    MYSQL_TYPE_DATETIME2 = 18
    MYSQL_TYPE_TIME2 = 19
    MYSQL_TYPE_TYPED_ARRAY = 20
    # MariaDB 10.3+ (mysql_com.h): a column declared COMPRESSED, in table maps only
    MYSQL_TYPE_BLOB_COMPRESSED = 140
    MYSQL_TYPE_VARCHAR_COMPRESSED = 141
    MYSQL_TYPE_VECTOR = 242
    MYSQL_TYPE_INVALID = 243
    MYSQL_TYPE_BOOL = 244
    MYSQL_TYPE_JSON = 245
    MYSQL_TYPE_NEWDECIMAL = 246
    MYSQL_TYPE_ENUM = 247
    MYSQL_TYPE_SET = 248
    MYSQL_TYPE_TINY_BLOB = 249
    MYSQL_TYPE_MEDIUM_BLOB = 250
    MYSQL_TYPE_LONG_BLOB = 251
    MYSQL_TYPE_BLOB = 252
    MYSQL_TYPE_VAR_STRING = 253
    MYSQL_TYPE_STRING = 254
    MYSQL_TYPE_GEOMETRY = 255


class TableMapOptionalMetadata(IntEnum):
    """`Table_map_log_event::Optional_metadata_field_type`."""

    SIGNEDNESS = 1
    DEFAULT_CHARSET = 2
    COLUMN_CHARSET = 3
    COLUMN_NAME = 4
    SET_STR_VALUE = 5
    ENUM_STR_VALUE = 6
    GEOMETRY_TYPE = 7
    SIMPLE_PRIMARY_KEY = 8
    PRIMARY_KEY_WITH_PREFIX = 9
    ENUM_AND_SET_DEFAULT_CHARSET = 10
    ENUM_AND_SET_COLUMN_CHARSET = 11
    COLUMN_VISIBILITY = 12
    VECTOR_DIMENSIONALITY = 13


class QueryStatusVar(IntEnum):
    """Status variable codes of QUERY_EVENT (`Q_*`)."""

    Q_FLAGS2_CODE = 0
    Q_SQL_MODE_CODE = 1
    Q_CATALOG_CODE = 2
    Q_AUTO_INCREMENT = 3
    Q_CHARSET_CODE = 4
    Q_TIME_ZONE_CODE = 5
    Q_CATALOG_NZ_CODE = 6
    Q_LC_TIME_NAMES_CODE = 7
    Q_CHARSET_DATABASE_CODE = 8
    Q_TABLE_MAP_FOR_UPDATE_CODE = 9
    Q_MASTER_DATA_WRITTEN_CODE = 10
    Q_INVOKER = 11
    Q_UPDATED_DB_NAMES = 12
    Q_MICROSECONDS = 13
    Q_COMMIT_TS = 14
    Q_COMMIT_TS2 = 15
    Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP = 16
    Q_DDL_LOGGED_WITH_XID = 17
    Q_DEFAULT_COLLATION_FOR_UTF8MB4 = 18
    Q_SQL_REQUIRE_PRIMARY_KEY = 19
    Q_DEFAULT_TABLE_ENCRYPTION = 20
    # MariaDB
    Q_HRNOW = 128
    Q_XID = 129
    Q_GTID_FLAGS3 = 130
    Q_CHARACTER_SET_COLLATIONS = 131


#: `Rows_log_event` flags.
STMT_END_F = 0x1
NO_FOREIGN_KEY_CHECKS_F = 0x2
RELAXED_UNIQUE_CHECKS_F = 0x4
COMPLETE_ROWS_F = 0x8

#: MariaDB GTID_EVENT flags2.
FL_STANDALONE = 1
FL_GROUP_COMMIT_ID = 2
FL_TRANSACTIONAL = 4
FL_ALLOW_PARALLEL = 8
FL_WAITED = 16
FL_DDL = 32
FL_PREPARED_XA = 64
FL_COMPLETED_XA = 128
#: MariaDB GTID_EVENT flags_extra.
FL_EXTRA_MULTI_ENGINE_E1 = 1
FL_START_ALTER_E1 = 2
FL_COMMIT_ALTER_E1 = 4
FL_ROLLBACK_ALTER_E1 = 8
FL_EXTRA_THREAD_ID = 16

#: PARTIAL_UPDATE_ROWS_EVENT value options (`enum_binlog_row_value_options`).
PARTIAL_JSON_UPDATES = 1

#: Transaction payload compression (`mysql::binlog::event::compression::type`).
ZSTD = 0
NONE = 255

#: Versions of the early 5.1/5.2 trees that numbered events 16-22 differently
#: (see Format_description_log_event's constructor in the server): the
#: regexes `5\.1\.[1-5]-a_drop5.*`, `5\.1\.4-a_drop6.*`, `5\.2\.[0-2]-a_drop6.*`.
WL2325_EVENT_PERMUTATION = (
    EventType.UNKNOWN_EVENT, EventType.START_EVENT_V3, EventType.QUERY_EVENT,
    EventType.STOP_EVENT, EventType.ROTATE_EVENT, EventType.INTVAR_EVENT,
    EventType.LOAD_EVENT, EventType.SLAVE_EVENT, EventType.CREATE_FILE_EVENT,
    EventType.APPEND_BLOCK_EVENT, EventType.EXEC_LOAD_EVENT,
    EventType.DELETE_FILE_EVENT, EventType.NEW_LOAD_EVENT, EventType.RAND_EVENT,
    EventType.USER_VAR_EVENT, EventType.FORMAT_DESCRIPTION_EVENT,
    EventType.TABLE_MAP_EVENT, EventType.PRE_GA_WRITE_ROWS_EVENT,
    EventType.PRE_GA_UPDATE_ROWS_EVENT, EventType.PRE_GA_DELETE_ROWS_EVENT,
    EventType.XID_EVENT, EventType.BEGIN_LOAD_QUERY_EVENT,
    EventType.EXECUTE_LOAD_QUERY_EVENT,
)
