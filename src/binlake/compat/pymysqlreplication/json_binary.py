"""JSON values as python-mysql-replication gives them (MySQL's binary JSON).

Strategy: binlake's reader decodes MySQL's binary JSON (binlake.read.mysql_json);
`pmr_json` only reshapes that value the way python-mysql-replication hands it
out: object keys and strings as UTF-8 bytes, numbers, literals, DECIMAL and
temporals as Python values. `JsonDiff` is its partial-update record.
"""

from enum import Enum


class JsonDiffOperation(Enum):
    Replace = 0
    Insert = 1
    Remove = 2

    @staticmethod
    def by_index(index):
        return JsonDiffOperation(index)


class JsonDiff:
    def __init__(self, op: JsonDiffOperation, path: bytes, value=None):
        self.op = op
        self.path = path
        self.value = value

    def __str__(self):
        value = self.value.decode() if isinstance(self.value, bytes) else (self.value or "")
        return f"JsonDiff(op :{self.op} path :{self.path.decode()} value :{value})"

    __repr__ = __str__


def pmr_json(value):
    """binlake's JSON value in python-mysql-replication's shape."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict):
        return {pmr_json(k): pmr_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [pmr_json(v) for v in value]
    return value
