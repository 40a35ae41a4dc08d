"""Drop-in APIs of other projects over binlake.

    import binlake.compat
    binlake.compat.install_as_pymysqlreplication()
    from pymysqlreplication import BinLogStreamReader     # now binlake's

Strategy: as PyMySQL's `install_as_MySQLdb()`, the drop-in is imported
under its own name and every one of its modules is put into `sys.modules`
under the other project's name, so `import pymysqlreplication.row_event`
and `from pymysqlreplication.constants.BINLOG import *` find them.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

_PMR = "binlake.compat.pymysqlreplication"

#: the drop-in's modules, in an order that imports cleanly
_PMR_MODULES = ("constants", "constants.BINLOG", "constants.FIELD_TYPE",
                "constants.STATUS_VAR_KEY", "constants.NONE_SOURCE", "constants.CHARSET",
                "exceptions", "logger", "bitmap", "util", "util.bytes", "json_binary", "gtid",
                "column", "table", "event", "row_event", "packet", "binlogstream")


def install_as_pymysqlreplication() -> None:
    """Make `import pymysqlreplication` (and each of its submodules) binlake's drop-in."""
    package = importlib.import_module(_PMR)
    sys.modules["pymysqlreplication"] = package
    names = set(_PMR_MODULES)
    names.update(info.name[len(_PMR) + 1:] for info in
                 pkgutil.walk_packages(package.__path__, _PMR + "."))
    for name in sorted(names):   # a package before its modules
        module = importlib.import_module(f"{_PMR}.{name}")
        sys.modules[f"pymysqlreplication.{name}"] = module


__all__ = ["install_as_pymysqlreplication"]
