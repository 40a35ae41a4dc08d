"""python-mysql-replication's exceptions, by the same names and messages."""


class TableMetadataUnavailableError(Exception):
    def __init__(self, table):
        Exception.__init__(self, f"Unable to find metadata for table {table}")


class BinLogNotEnabled(Exception):
    def __init__(self):
        Exception.__init__(self, "MySQL binary logging is not enabled.")


class MalformedBinLogEvent(Exception):
    def __init__(self, message):
        Exception.__init__(self, message)


class StatusVariableMismatch(Exception):
    def __init__(self):
        Exception.__init__(self, "Unknown status variable in query event. Possible parse "
                           "failure in preceding fields or outdated constants.STATUS_VAR_KEY")
