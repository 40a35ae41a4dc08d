//! Numbers of the binlog format, named as in the server source
//! (`binlog_event.h` / `field_types.h` of MySQL, `log_event.h` of MariaDB).
//! The Python twin is `binlake/constants.py`; a grep for a name finds both.
#![allow(non_upper_case_globals, dead_code)]

pub const BINLOG_MAGIC: &[u8; 4] = b"\xfebin";
pub const ENCRYPTED_BINLOG_MAGIC: &[u8; 4] = b"\xfdbin";
pub const LOG_EVENT_MINIMAL_HEADER_LEN: usize = 19;
pub const OLD_HEADER_LEN: usize = 13;
pub const ST_SERVER_VER_LEN: usize = 50;
pub const START_V3_HEADER_LEN: usize = 2 + ST_SERVER_VER_LEN + 4;
pub const BINLOG_CHECKSUM_LEN: usize = 4;
pub const BINLOG_CHECKSUM_ALG_DESC_LEN: usize = 1;
pub const BINLOG_CHECKSUM_ALG_OFF: u8 = 0;
pub const BINLOG_CHECKSUM_ALG_CRC32: u8 = 1;
pub const LOG_EVENT_BINLOG_IN_USE_F: u16 = 0x1;
pub const LOG_EVENT_ARTIFICIAL_F: u16 = 0x20;
// the common header's fields (binlog_event.h)
pub const EVENT_TYPE_OFFSET: usize = 4;
pub const EVENT_LEN_OFFSET: usize = 9;
pub const LOG_POS_OFFSET: usize = 13;
pub const FLAGS_OFFSET: usize = 17;

// enum Log_event_type
pub const UNKNOWN_EVENT: u8 = 0;
pub const START_EVENT_V3: u8 = 1;
pub const QUERY_EVENT: u8 = 2;
pub const STOP_EVENT: u8 = 3;
pub const ROTATE_EVENT: u8 = 4;
pub const INTVAR_EVENT: u8 = 5;
pub const LOAD_EVENT: u8 = 6;
pub const CREATE_FILE_EVENT: u8 = 8;
pub const APPEND_BLOCK_EVENT: u8 = 9;
pub const EXEC_LOAD_EVENT: u8 = 10;
pub const DELETE_FILE_EVENT: u8 = 11;
pub const NEW_LOAD_EVENT: u8 = 12;
pub const RAND_EVENT: u8 = 13;
pub const USER_VAR_EVENT: u8 = 14;
pub const FORMAT_DESCRIPTION_EVENT: u8 = 15;
pub const XID_EVENT: u8 = 16;
pub const BEGIN_LOAD_QUERY_EVENT: u8 = 17;
pub const EXECUTE_LOAD_QUERY_EVENT: u8 = 18;
pub const TABLE_MAP_EVENT: u8 = 19;
pub const PRE_GA_WRITE_ROWS_EVENT: u8 = 20;
pub const PRE_GA_UPDATE_ROWS_EVENT: u8 = 21;
pub const PRE_GA_DELETE_ROWS_EVENT: u8 = 22;
pub const WRITE_ROWS_EVENT_V1: u8 = 23;
pub const UPDATE_ROWS_EVENT_V1: u8 = 24;
pub const DELETE_ROWS_EVENT_V1: u8 = 25;
pub const INCIDENT_EVENT: u8 = 26;
pub const HEARTBEAT_LOG_EVENT: u8 = 27;
pub const IGNORABLE_LOG_EVENT: u8 = 28;
pub const ROWS_QUERY_LOG_EVENT: u8 = 29;
pub const WRITE_ROWS_EVENT: u8 = 30;
pub const UPDATE_ROWS_EVENT: u8 = 31;
pub const DELETE_ROWS_EVENT: u8 = 32;
pub const GTID_LOG_EVENT: u8 = 33;
pub const ANONYMOUS_GTID_LOG_EVENT: u8 = 34;
pub const PREVIOUS_GTIDS_LOG_EVENT: u8 = 35;
pub const TRANSACTION_CONTEXT_EVENT: u8 = 36;
pub const VIEW_CHANGE_EVENT: u8 = 37;
pub const XA_PREPARE_LOG_EVENT: u8 = 38;
pub const PARTIAL_UPDATE_ROWS_EVENT: u8 = 39;
pub const TRANSACTION_PAYLOAD_EVENT: u8 = 40;
pub const HEARTBEAT_LOG_EVENT_V2: u8 = 41;
pub const GTID_TAGGED_LOG_EVENT: u8 = 42;
pub const ANNOTATE_ROWS_EVENT: u8 = 160;
pub const BINLOG_CHECKPOINT_EVENT: u8 = 161;
pub const GTID_EVENT: u8 = 162;
pub const GTID_LIST_EVENT: u8 = 163;
pub const START_ENCRYPTION_EVENT: u8 = 164;
pub const QUERY_COMPRESSED_EVENT: u8 = 165;
pub const WRITE_ROWS_COMPRESSED_EVENT_V1: u8 = 166;
pub const UPDATE_ROWS_COMPRESSED_EVENT_V1: u8 = 167;
pub const DELETE_ROWS_COMPRESSED_EVENT_V1: u8 = 168;
pub const WRITE_ROWS_COMPRESSED_EVENT: u8 = 169;
pub const UPDATE_ROWS_COMPRESSED_EVENT: u8 = 170;
pub const DELETE_ROWS_COMPRESSED_EVENT: u8 = 171;

// enum enum_field_types
pub const MYSQL_TYPE_DECIMAL: u8 = 0;
pub const MYSQL_TYPE_TINY: u8 = 1;
pub const MYSQL_TYPE_SHORT: u8 = 2;
pub const MYSQL_TYPE_LONG: u8 = 3;
pub const MYSQL_TYPE_FLOAT: u8 = 4;
pub const MYSQL_TYPE_DOUBLE: u8 = 5;
pub const MYSQL_TYPE_NULL: u8 = 6;
pub const MYSQL_TYPE_TIMESTAMP: u8 = 7;
pub const MYSQL_TYPE_LONGLONG: u8 = 8;
pub const MYSQL_TYPE_INT24: u8 = 9;
pub const MYSQL_TYPE_DATE: u8 = 10;
pub const MYSQL_TYPE_TIME: u8 = 11;
pub const MYSQL_TYPE_DATETIME: u8 = 12;
pub const MYSQL_TYPE_YEAR: u8 = 13;
pub const MYSQL_TYPE_NEWDATE: u8 = 14;
pub const MYSQL_TYPE_VARCHAR: u8 = 15;
pub const MYSQL_TYPE_BIT: u8 = 16;
pub const MYSQL_TYPE_TIMESTAMP2: u8 = 17;
pub const MYSQL_TYPE_DATETIME2: u8 = 18;
pub const MYSQL_TYPE_TIME2: u8 = 19;
// MariaDB 10.3+ (mysql_com.h): a column declared COMPRESSED, in table maps only
pub const MYSQL_TYPE_BLOB_COMPRESSED: u8 = 140;
pub const MYSQL_TYPE_VARCHAR_COMPRESSED: u8 = 141;
pub const MYSQL_TYPE_VECTOR: u8 = 242;
pub const MYSQL_TYPE_JSON: u8 = 245;
pub const MYSQL_TYPE_NEWDECIMAL: u8 = 246;
pub const MYSQL_TYPE_ENUM: u8 = 247;
pub const MYSQL_TYPE_SET: u8 = 248;
pub const MYSQL_TYPE_TINY_BLOB: u8 = 249;
pub const MYSQL_TYPE_MEDIUM_BLOB: u8 = 250;
pub const MYSQL_TYPE_LONG_BLOB: u8 = 251;
pub const MYSQL_TYPE_BLOB: u8 = 252;
pub const MYSQL_TYPE_VAR_STRING: u8 = 253;
pub const MYSQL_TYPE_STRING: u8 = 254;
pub const MYSQL_TYPE_GEOMETRY: u8 = 255;

/// `enum_field_types` names (binlake.constants.ColumnType), None for a code
/// it does not name.
pub fn column_type_name(code: u8) -> Option<&'static str> {
    Some(match code {
        0 => "MYSQL_TYPE_DECIMAL",
        1 => "MYSQL_TYPE_TINY",
        2 => "MYSQL_TYPE_SHORT",
        3 => "MYSQL_TYPE_LONG",
        4 => "MYSQL_TYPE_FLOAT",
        5 => "MYSQL_TYPE_DOUBLE",
        6 => "MYSQL_TYPE_NULL",
        7 => "MYSQL_TYPE_TIMESTAMP",
        8 => "MYSQL_TYPE_LONGLONG",
        9 => "MYSQL_TYPE_INT24",
        10 => "MYSQL_TYPE_DATE",
        11 => "MYSQL_TYPE_TIME",
        12 => "MYSQL_TYPE_DATETIME",
        13 => "MYSQL_TYPE_YEAR",
        14 => "MYSQL_TYPE_NEWDATE",
        15 => "MYSQL_TYPE_VARCHAR",
        16 => "MYSQL_TYPE_BIT",
        17 => "MYSQL_TYPE_TIMESTAMP2",
        18 => "MYSQL_TYPE_DATETIME2",
        19 => "MYSQL_TYPE_TIME2",
        20 => "MYSQL_TYPE_TYPED_ARRAY",
        140 => "MYSQL_TYPE_BLOB_COMPRESSED",
        141 => "MYSQL_TYPE_VARCHAR_COMPRESSED",
        242 => "MYSQL_TYPE_VECTOR",
        243 => "MYSQL_TYPE_INVALID",
        244 => "MYSQL_TYPE_BOOL",
        245 => "MYSQL_TYPE_JSON",
        246 => "MYSQL_TYPE_NEWDECIMAL",
        247 => "MYSQL_TYPE_ENUM",
        248 => "MYSQL_TYPE_SET",
        249 => "MYSQL_TYPE_TINY_BLOB",
        250 => "MYSQL_TYPE_MEDIUM_BLOB",
        251 => "MYSQL_TYPE_LONG_BLOB",
        252 => "MYSQL_TYPE_BLOB",
        253 => "MYSQL_TYPE_VAR_STRING",
        254 => "MYSQL_TYPE_STRING",
        255 => "MYSQL_TYPE_GEOMETRY",
        _ => return None,
    })
}

/// PARTIAL_UPDATE_ROWS_EVENT value options (`enum_binlog_row_value_options`).
pub const PARTIAL_JSON_UPDATES: u64 = 1;

/// Transaction payload compression (`mysql::binlog::event::compression::type`;
/// constants.py `ZSTD`, `NONE`).
pub const PAYLOAD_ZSTD: u64 = 0;
pub const PAYLOAD_NONE: u64 = 255;

// Rows event flags (`enum_flag` of Rows_log_event)
pub const STMT_END_F: u16 = 0x1;
/// Log_event flag: the QUERY's database is not to be printed as `use`.
pub const LOG_EVENT_SUPPRESS_USE_F: u16 = 0x8;

// MariaDB Gtid_log_event flags2 and flags_extra (log_event.h)
pub const FL_STANDALONE: u8 = 1;
pub const FL_GROUP_COMMIT_ID: u8 = 2;
pub const FL_PREPARED_XA: u8 = 64;
pub const FL_COMPLETED_XA: u8 = 128;
pub const FL_EXTRA_MULTI_ENGINE_E1: u8 = 1;
pub const FL_COMMIT_ALTER_E1: u8 = 4;
pub const FL_ROLLBACK_ALTER_E1: u8 = 8;
pub const FL_EXTRA_THREAD_ID: u8 = 16;

// Table_map_log_event::Optional_metadata_field_type
pub const SIGNEDNESS: u8 = 1;
pub const DEFAULT_CHARSET: u8 = 2;
pub const COLUMN_CHARSET: u8 = 3;
pub const COLUMN_NAME: u8 = 4;
pub const SET_STR_VALUE: u8 = 5;
pub const ENUM_STR_VALUE: u8 = 6;
pub const GEOMETRY_TYPE: u8 = 7;
pub const SIMPLE_PRIMARY_KEY: u8 = 8;
pub const PRIMARY_KEY_WITH_PREFIX: u8 = 9;
pub const ENUM_AND_SET_DEFAULT_CHARSET: u8 = 10;
pub const ENUM_AND_SET_COLUMN_CHARSET: u8 = 11;
pub const COLUMN_VISIBILITY: u8 = 12;
pub const VECTOR_DIMENSIONALITY: u8 = 13;

// Extra row info tags (MySQL `enum_extra_row_info_typecode`)
pub const RW_V_EXTRAINFO_TAG: u8 = 0;
pub const RW_V_TAG_PART_INFO: u8 = 1;
