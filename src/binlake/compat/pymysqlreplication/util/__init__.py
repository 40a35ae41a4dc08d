"""python-mysql-replication's byte helpers (`pymysqlreplication.util`)."""
from .bytes import *  # noqa: F401,F403
