"""python-mysql-replication's public API (PyPI `mysql-replication` 1.0.17,
import name `pymysqlreplication`) over binlake's reader.

Strategy: the same module names and classes, each a thin layer over
binlake: `binlogstream` reads with binlake's replica client and decoder,
`event`/`row_event` convert binlake's events and values into upstream's
classes and Python types. Nothing here decodes binlog bytes.
`binlake.compat.install_as_pymysqlreplication()` makes existing code that
imports `pymysqlreplication` use this package.
"""

from binlake.compat.pymysqlreplication.binlogstream import BinLogStreamReader  # noqa: F401

__version__ = "1.0.17"
