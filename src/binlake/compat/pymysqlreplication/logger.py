"""The logger python-mysql-replication logs to (named `pymysqlreplication`)."""
import logging

logger = logging.getLogger("pymysqlreplication")
