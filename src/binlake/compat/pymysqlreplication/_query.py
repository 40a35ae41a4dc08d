"""Statement-side events (QUERY, LOAD, INTVAR, RAND, USER_VAR, ROWS_QUERY,
encryption, unknown) in python-mysql-replication's shape, from binlake's.

Strategy: as in event.py, binlake decoded the event; here its fields are
renamed. A QUERY's status variables come from binlake's dict (keyed by the
server's `Q_*` names) into upstream's attribute names; its statement is
re-read from the bytes the server sent (_base.py `_statement_bytes`) and
decoded as upstream decodes it: UTF-8, undecodable bytes as `\\xNN`.
"""

from __future__ import annotations

from binlake.compat.pymysqlreplication._base import BinLogEvent, _statement_bytes

#: binlake's status variable -> upstream's attribute(s)
_STATUS_ATTRS = {
    "Q_FLAGS2_CODE": "flags2", "Q_SQL_MODE_CODE": "sql_mode",
    "Q_TIME_ZONE_CODE": "time_zone", "Q_LC_TIME_NAMES_CODE": "lc_time_names_number",
    "Q_CHARSET_DATABASE_CODE": "charset_database_number",
    "Q_TABLE_MAP_FOR_UPDATE_CODE": "table_map_for_update", "Q_MICROSECONDS": "microseconds",
    "Q_EXPLICIT_DEFAULTS_FOR_TIMESTAMP": "explicit_defaults_ts", "Q_DDL_LOGGED_WITH_XID": "ddl_xid",
    "Q_DEFAULT_COLLATION_FOR_UTF8MB4": "default_collation_for_utf8mb4_number",
    "Q_SQL_REQUIRE_PRIMARY_KEY": "sql_require_primary_key",
    "Q_DEFAULT_TABLE_ENCRYPTION": "default_table_encryption", "Q_HRNOW": "hrnow",
    "Q_XID": "xid",
}


def _status_vars(self, status: dict) -> None:
    for key, attr in _STATUS_ATTRS.items():
        if key in status:
            setattr(self, attr, status[key])
    if "Q_AUTO_INCREMENT" in status:
        self.auto_increment_increment = status["Q_AUTO_INCREMENT"]["increment"]
        self.auto_increment_offset = status["Q_AUTO_INCREMENT"]["offset"]
    if "Q_CHARSET_CODE" in status:
        for name, value in status["Q_CHARSET_CODE"].items():
            setattr(self, name, value)
    if "Q_CATALOG_NZ_CODE" in status:   # upstream: bytes
        self.catalog_nz_code = status["Q_CATALOG_NZ_CODE"].encode()
    if "Q_INVOKER" in status:
        self.user = status["Q_INVOKER"]["user"].encode()
        self.host = status["Q_INVOKER"]["host"].encode()
    if "Q_UPDATED_DB_NAMES" in status and status["Q_UPDATED_DB_NAMES"] is not None:
        self.mts_accessed_db_names = [n.encode() for n in status["Q_UPDATED_DB_NAMES"]]


def _query_header(self, event) -> None:
    """The post-header QUERY and EXECUTE_LOAD_QUERY share, upstream's names."""
    self.slave_proxy_id = event.thread_id
    self.execution_time = event.exec_time
    self.schema = event.database.encode("utf-8")
    self.schema_length = len(self.schema)
    self.error_code = event.error_code
    self.status_vars_length = None


class QueryEvent(BinLogEvent):
    """A statement (`query`, str) in its default database (`schema`, bytes as upstream)."""

    def _fill(self, event, ctx):
        _query_header(self, event)
        _status_vars(self, event.status_vars)
        raw = _statement_bytes(event.query, self.packet.raw)
        self.query = raw.decode("utf-8", "backslashreplace")

    def _dump(self):
        print(f"Schema: {self.schema}")
        print(f"Execution time: {self.execution_time}")
        print(f"Query: {self.query}")


class BeginLoadQueryEvent(BinLogEvent):
    def _fill(self, event, ctx):
        self.file_id = event.file_id
        self.block_data = event.data

    def _dump(self):
        print(f"File id: {self.file_id}")
        print(f"Block data: {self.block_data}")


class ExecuteLoadQueryEvent(BinLogEvent):
    def _fill(self, event, ctx):
        _query_header(self, event)
        self.file_id = event.file_id
        self.start_pos = event.fn_pos_start
        self.end_pos = event.fn_pos_end
        self.dup_handling_flags = event.dup_handling
        self.query = event.query

    def _dump(self):
        print(f"File id: {self.file_id}")
        print(f"Query: {self.query}")


class IntvarEvent(BinLogEvent):
    def _fill(self, event, ctx):
        self.type = event.kind
        self.value = event.value

    def _dump(self):
        print(f"type: {self.type}")
        print(f"Value: {self.value}")


class RandEvent(BinLogEvent):
    def _fill(self, event, ctx):
        self._seed1 = event.seed1
        self._seed2 = event.seed2

    @property
    def seed1(self):
        return self._seed1

    @property
    def seed2(self):
        return self._seed2

    def _dump(self):
        print(f"seed1: {self.seed1}")
        print(f"seed2: {self.seed2}")


#: Item_result as upstream reads each (STRING_RESULT's bytes as UTF-8 text)
_STRING_RESULT, _INT_RESULT = 0, 2


class UserVarEvent(BinLogEvent):
    """A user variable a statement used: `name`, `value`, `type`, `charset`."""

    def _fill(self, event, ctx):
        self.name = event.name
        self.name_len = len(event.name.encode("utf-8"))
        self.is_null = int(event.is_null)
        if event.is_null:
            self.type = self.charset = self.value_len = self.value = self.flags = None
            return
        self.type = event.value_type
        self.charset = event.charset
        value = event.value
        if self.type == _STRING_RESULT and isinstance(value, bytes):
            value = value.decode()
        self.value = value
        self.value_len = None
        self.flags = 1 if event.is_unsigned else 0
        if hasattr(value, "as_tuple"):   # DECIMAL_RESULT: precision and scale as upstream keeps
            digits = value.as_tuple()
            self.decimals = -digits.exponent if digits.exponent < 0 else 0
            self.precision = len(digits.digits)

    def _dump(self):
        print(f"User variable name: {self.name}")
        print(f'Is NULL: {"Yes" if self.is_null else "No"}')
        if not self.is_null:
            print(f"Type: {self.type}")
            print(f"Charset: {self.charset}")
            print(f"Value: {self.value}")
            print(f"Flags: {self.flags}")


class MariadbStartEncryptionEvent(BinLogEvent):
    def _fill(self, event, ctx):
        self.schema = event.scheme
        self.key_version = event.key_version
        self.nonce = event.nonce

    def _dump(self):
        print(f"Schema: {self.schema}")
        print(f"Key version: {self.key_version}")
        print(f"Nonce: {self.nonce}")


class RowsQueryLogEvent(BinLogEvent):
    """MySQL: the statement of the rows events that follow (`query`)."""

    def _fill(self, event, ctx):
        self.query_length = len(event.query.encode("utf-8"))
        self.query = event.query

    def dump(self):
        print(f"=== {self.__class__.__name__} ===")
        print(f"Query: {self.query}")


class NotImplementedEvent(BinLogEvent):
    """An event type python-mysql-replication has no class for."""
