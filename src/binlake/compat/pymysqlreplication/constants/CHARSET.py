"""Collations by id (python-mysql-replication's `CHARSET`), from binlake's one
table of the servers' collations (binlake.collation_names): no second copy."""

from binlake.collation_names import COLLATIONS


class Charset:
    def __init__(self, id, name, collation, is_default=False, dbms="mysql"):  # noqa: A002
        self.id, self.name, self.collation = id, name, collation
        self.is_default = is_default
        self.dbms = dbms

    def __repr__(self):
        return f"Charset(id={self.id}, name={self.name!r}, collation={self.collation!r})"

    @property
    def encoding(self):
        """The name python-mysql-replication gives (a Python codec name, mostly)."""
        name = self.name
        if name in ("utf8mb4", "utf8mb3", "utf8"):
            return "utf8"
        return {"latin1": "cp1252", "koi8r": "koi8_r", "koi8u": "koi8_u"}.get(name, name)

    @property
    def is_binary(self):
        return self.id == 63


def charset_by_id(id, dbms="mysql"):  # noqa: A002
    found = COLLATIONS.get(int(id))
    if found is None:
        return None
    charset, collation = found
    return Charset(int(id), charset, collation, dbms=dbms)


def charset_by_name(name, dbms="mysql"):
    name = "utf8mb4" if name == "utf8" else name.lower()
    for cid, (charset, collation) in sorted(COLLATIONS.items()):
        if charset == name:
            return Charset(cid, charset, collation, True, dbms)
    return None
