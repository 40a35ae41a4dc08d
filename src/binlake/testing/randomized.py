"""Seeded random workloads against a private MariaDB, the lake checked against
the server after every few steps (issue 46, item 7).

Strategy: `Workload(seed)` holds its own model of four tables (each column's
name, type family, width, nullability and DEFAULT) and a `random.Random(seed)`;
`step()` picks one action and returns its SQL, drawn from the model alone, so
the statements (and where the checks fall) depend on the seed only, never on
the server's answers. The tables:

- `keyed`: INT PRIMARY KEY;
- `uniq`: no primary key, a UNIQUE key of one NOT NULL INT column (never a
  prefix key: D4 is known);
- `keyless`: no key at all (a multiset);
- `parted`: INT PRIMARY KEY, PARTITION BY HASH on the server, and
  partitioned in the lake by a TINYINT NOT NULL column `g` of values 0..3
  (`--partition-by`, PARTITION_BY, on every run), which no DDL touches;

each with an INT, a VARCHAR, a DECIMAL, a DATETIME and a TEXT or BLOB column
to begin with. The actions: a multi-row INSERT (a random subset of the
columns named, so partial images leave the rest to their DEFAULTs; IGNORE
now and then), REPLACE and INSERT ... ON DUPLICATE KEY UPDATE on the keyed
tables, an UPDATE of values or expressions, an UPDATE moving keys
(`SET id = id + N ... ORDER BY` so no row meets another on the way), a
DELETE (a key range, a predicate, LIMIT), a new session with
`binlog_row_image` FULL, MINIMAL or NOBLOB and, two times in five, the lax
sql_mode '', a short transaction of the DML above, and DDL the schema
history follows: ADD COLUMN (a DEFAULT or none, NOT NULL or not,
FIRST/AFTER now and then), DROP COLUMN (never a key), MODIFY to a wider
type of the same family (TINYINT..BIGINT, a longer VARCHAR, more DECIMAL
digits, more fractional seconds, TEXT to MEDIUMTEXT) and, in a lax
session, to another type (INT, DECIMAL and VARCHAR one into another, a
shorter VARCHAR: the server converts every value, `convert_column`), and
RENAME COLUMN.
Values stay inside the narrowest type a column ever had, and no zero date
or CURRENT_TIMESTAMP default is written (the typed lake refuses zero dates;
a DEFAULT taken at ALTER time is not in the binlog). A statement the server
rejects (a duplicate key, a value out of range under the strict sql_mode)
is kept in the log as rejected: it wrote no binlog event.

`Run` executes the steps on the server and, after every k of them (k drawn
from the same generator, 1..5) and after the last, runs the pipeline once
from the server as the command does (`binlake pipeline -R --out DIR -h ...
binlog.000001`, in this process: the test's Spark session is reused) and
hands the lake and the server to `compare`, the caller's oracle (the tests'
typed rows: tests/spark/randomized_oracle.py), which lists differences.
Which engine computes the tables is drawn per check too, from a generator
of its own (so the statements do not depend on it): the driver (small
increments' usual way) or, a third of the time, Spark's tasks
(driver_way.DRIVER_ROWS = -1, as tests/spark/test_row_images.py holds
them to it); `engine=` fixes it. With
`history`, every run keeps history tables (`--history`; the sessions then
log whole row images only, which history needs), and the oracle holds each
history table's open versions to its table. With `as_of` (the oracle's
capture and compare), each check's server state is kept with its binlog
position, and a third of the checks (a generator of their own) also build
the tables of an earlier check with `--as-of FILE:POS` from the lake's
copies and compare them with what the server held then (a point before a
table was read anew is refused in one line, as it must be, and counted).
Each check also draws, from a generator of lake events (`draw_plan`, so
the statements never depend on them), what comes with its run
(`CheckPlan`): a fifth begin with `binlake pipeline -R` (half of them
`-R --follow`) in a process of its own, SIGKILLed at a random moment of
its first seconds, whose work the check's own run must complete; a tenth
each: the server stopped cleanly or SIGKILLed and started again before
the run (it is durable against its own crash, as production servers
are); a table read anew by the run (`--snapshot-tables`); a table left
out of the run (`--tables` naming the others: the lake's copy of it is
not compared, and the next run selects it again and reads it anew); and
a table built again from changes/ after the run (`--rebuild`, from the
lake's copies), the lake compared again. A
run that fails or refuses, or any difference, ends the run with a
`Finding`: the seed, the step, the statements since the last check and the
differences, and how to repeat it (the seed and step count: the same
statements and checks up to that step).
"""
from __future__ import annotations

import contextlib
import io
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

DATABASE = "binlake_test"
IMAGES = ("FULL", "MINIMAL", "NOBLOB")
#: The share of checks that begin with a run SIGKILLed within KILL_WITHIN
#: seconds (a follower, --follow: FOLLOW_KILL_WITHIN).
KILLED_SHARE, KILL_WITHIN, FOLLOW_KILL_WITHIN = 0.2, 1.5, 6.0
#: Both servers' settings: durable against their own crash as production
#: servers are (the tests' servers are not: their redo log is written once
#: a second), so that a SIGKILLed server holds every transaction its binlog
#: does; MariaDB GTIDs in strict mode, a replica logging what it applies.
SERVER_SETTINGS = {"innodb_flush_log_at_trx_commit": 2, "gtid_strict_mode": 1,
                   "log_slave_updates": 1}
#: The share of checks each other event comes with (a server restart, a
#: table read anew, a table left out, a rebuild: CheckPlan).
EVENT_SHARE = 0.1
INT_TYPES = ("tinyint", "smallint", "int", "bigint")
INT_RANGE = {"tinyint": 127, "smallint": 32767, "int": 2**31 - 1, "bigint": 2**63 - 1}
TEXT_TYPES = ("text", "mediumtext")
#: The type changes a lax session makes (the families a column may become).
CONVERTIBLE = {"int": ("decimal", "varchar"), "decimal": ("int", "varchar"),
               "varchar": ("int", "decimal", "varchar")}
BLOB_TYPES = ("blob", "mediumblob")


@dataclass
class Column:
    name: str
    family: str          #: int, varchar, decimal, datetime, text, blob
    kind: str            #: int: its type; varchar: its length; decimal: (p, s); datetime: fsp
    size: object = None  #: the type's parameter (varchar length, (precision, scale), fsp)
    nullable: bool = True
    default: str | None = None  #: SQL text of the DEFAULT, None for none
    key: bool = False
    floor: object = None  #: the narrowest size it ever had: values stay inside it
    #: the lake's partition column (--partition-by): no DDL touches it, its values few
    pinned: bool = False

    def sql_type(self) -> str:
        if self.family == "int":
            return self.kind.upper()
        if self.family == "varchar":
            return f"VARCHAR({self.size})"
        if self.family == "decimal":
            return f"DECIMAL({self.size[0]},{self.size[1]})"
        if self.family == "datetime":
            return f"DATETIME({self.size})" if self.size else "DATETIME"
        return self.kind.upper()

    def definition(self) -> str:
        text = f"`{self.name}` {self.sql_type()}"
        if not self.nullable:
            text += " NOT NULL"
        if self.default is not None:
            text += f" DEFAULT {self.default}"
        return text


@dataclass
class Table:
    name: str
    layout: str  #: keyed, uniq, keyless
    columns: list[Column]
    partitions: int = 0  #: the server's PARTITION BY HASH of the key into this many

    @property
    def pinned(self) -> Column | None:
        return next((c for c in self.columns if c.pinned), None)

    def alterable(self) -> list[Column]:
        """The columns DDL may drop, rename or convert."""
        return [c for c in self.columns if not c.key and not c.pinned]

    @property
    def key(self) -> Column | None:
        return next((c for c in self.columns if c.key), None)

    def create(self) -> str:
        parts = [c.definition() for c in self.columns]
        if self.layout == "keyed":
            parts.append(f"PRIMARY KEY (`{self.key.name}`)")
        elif self.layout == "uniq":
            parts.append(f"UNIQUE KEY uk (`{self.key.name}`)")
        partitioned = (f" PARTITION BY HASH (`{self.key.name}`) PARTITIONS {self.partitions}"
                       if self.partitions else "")
        return (f"CREATE TABLE `{self.name}` ({', '.join(parts)}) DEFAULT CHARSET=utf8mb4"
                + partitioned)


#: Defects the randomized check found and that are not fixed yet (each
#: written up with its minimal reproduction in the report of issue 46 item 7).
#: A workload made with `avoid=KNOWN` (the tests' and bench's default) leaves
#: out what reproduces them, so that a run finds what is new; `avoid=()`
#: generates them too (bench_randomized.py --known-too). Remove an entry
#: when its defect is fixed.
KNOWN = {
    # Not binlake's to fix from the row images: the server does not log it.
    # Refused since (binlake.spark.commits.replaces): a refusal ends a run.
    "R4": "REPLACE of a row a key holds, under MINIMAL or NOBLOB images: MariaDB logs an "
          "UPDATE of the columns named (NOBLOB: and the other non-BLOBs), not the columns "
          "REPLACE set to their DEFAULTs; the lake kept their old values, silently (now "
          "refused in one line, from the statement's ANNOTATE_ROWS event in events/)",
}
#: What the check found and binlake fixed (tests/spark/test_randomized.py
#: runs each one's reproduction): generated again by every workload.
FIXED = {
    "R1": "ADD COLUMN ... NOT NULL (or with a DEFAULT) on a table with rows, carried by "
          "Spark's jobs: the change data feed was no longer readable from version 0",
    "R2": "a key moved by a partial row image and a column DDL of the same table in one "
          "run: Spark's jobs refused it (a row the table does not hold)",
    "R3": "ADD COLUMN ... BLOB NOT NULL without a DEFAULT on a table with rows: they took "
          "NULL, the server's b''",
    "R5": "a MODIFY of a DATETIME's fractional digits on a table a partial image had moved a "
          "key of: the table rebuilt by Spark's jobs, which refused the move",
    "R6": "a keyless table built from its changes (a first run, --as-of) across an ADD COLUMN "
          "of a DECIMAL NOT NULL or with a DEFAULT: the DEFAULT's text ('0', '1.5') was not "
          "the binlog's ('0.0', '1.50'), so a later before image removed no copy (found by "
          "--as-of)",
}


class Workload:
    """The statements of one seed: `setup()` once, then `step()` as often as
    wanted, `checked()` at each check (a run's end)."""

    def __init__(self, seed: int, avoid=frozenset(KNOWN), images: tuple = IMAGES):
        self.seed = seed
        self.rng = random.Random(seed)
        self.images = images  #: the row images its sessions choose from
        self.counter = 0
        self.avoid = frozenset(avoid)
        self.image = "FULL"
        self.lax = False  #: the session's sql_mode is '' (lax), not the server's strict one
        self.moved: set[str] = set()     #: tables whose keys a partial image moved this run
        self.altered: set[str] = set()   #: tables a column DDL changed this run
        self.tables = [
            Table("keyed", "keyed", [Column("id", "int", "int", key=True, nullable=False),
                                     *self._first_columns(blob=False)]),
            Table("uniq", "uniq", [Column("u", "int", "int", key=True, nullable=False),
                                   *self._first_columns(blob=True)]),
            Table("keyless", "keyless", self._first_columns(blob=self.rng.random() < 0.5)),
            Table("parted", "keyed", [Column("id", "int", "int", key=True, nullable=False),
                                      Column("g", "int", "tinyint", nullable=False,
                                             default="0", pinned=True),
                                      *self._first_columns(blob=False)], partitions=3),
        ]
        for table in self.tables:
            for column in table.columns:
                column.floor = column.size if column.family != "int" else column.kind

    def _first_columns(self, blob: bool) -> list[Column]:
        return [Column("n", "int", self.rng.choice(INT_TYPES[:3]), default="7"),
                Column("s", "varchar", "varchar", self.rng.choice([8, 20])),
                Column("d", "decimal", "decimal", (8, 2), default="'1.50'"),
                Column("t", "datetime", "datetime", self.rng.choice([0, 3])),
                Column("b", "blob" if blob else "text", "blob" if blob else "text")]

    def setup(self) -> list[str]:
        return ["SET SESSION binlog_row_image = 'FULL'"] + [t.create() for t in self.tables]

    # -- one step --------------------------------------------------------------------
    def step(self) -> list[str]:
        """One action's statements (a session switch, a transaction: a few)."""
        actions = [(self.insert, 5), (self.update, 4), (self.move_keys, 2), (self.delete, 2),
                   (self.upsert, 1.5), (self.session, 1.5), (self.transaction, 1),
                   (self.ddl, 1.5)]
        action = self.rng.choices([a for a, _ in actions], [w for _, w in actions])[0]
        return action()

    def check_every(self) -> int:
        return self.rng.randint(1, 5)

    def checked(self) -> None:
        """A check ran: the next run starts."""
        self.moved, self.altered = set(), set()

    def _table(self) -> Table:
        return self.rng.choice(self.tables)

    def _dml(self) -> list[str]:
        return self.rng.choices([self.insert, self.update, self.move_keys, self.delete,
                                 self.upsert], [5, 4, 2, 2, 1.5])[0]()

    def session(self) -> list[str]:
        self.image = self.rng.choice(self.images)
        statements = ["NEW SESSION", f"SET SESSION binlog_row_image = '{self.image}'"]
        self.lax = "lax" not in self.avoid and self.rng.random() < 0.4
        if self.lax:  # type changes the server makes whatever the values
            statements.append("SET SESSION sql_mode = ''")
        return statements

    def transaction(self) -> list[str]:
        body = [s for _ in range(self.rng.randint(2, 4)) for s in self._dml()]
        return ["START TRANSACTION", *body, self.rng.choice(["COMMIT"] * 4 + ["ROLLBACK"])]

    def insert(self) -> list[str]:
        table = self._table()
        named = [c for c in table.columns
                 if c.key or (not c.nullable and c.default is None) or self.rng.random() < 0.7]
        if not named:
            named = [self.rng.choice(table.columns)]
        rows = [f"({', '.join(self.value(c) for c in named)})"
                for _ in range(self.rng.randint(1, 5))]
        ignore = " IGNORE" if table.key and self.rng.random() < 0.3 else ""
        names = ", ".join(f"`{c.name}`" for c in named)
        return [f"INSERT{ignore} INTO `{table.name}` ({names}) VALUES {', '.join(rows)}"]

    def upsert(self) -> list[str]:
        """REPLACE (the row a key meets deleted, or updated in place, the
        columns not named taking their DEFAULTs) or INSERT ... ON DUPLICATE
        KEY UPDATE, on a keyed table; the keys drawn from few, to meet rows."""
        table = self.rng.choice([t for t in self.tables if t.key])
        named = [c for c in table.columns
                 if c.key or (not c.nullable and c.default is None) or self.rng.random() < 0.6]
        rows = [f"({', '.join(self.value(c) for c in named)})"
                for _ in range(self.rng.randint(1, 3))]
        names = ", ".join(f"`{c.name}`" for c in named)
        replace = self.rng.random() < 0.5
        if replace and not ("R4" in self.avoid and self.image != "FULL"):
            return [f"REPLACE INTO `{table.name}` ({names}) VALUES {', '.join(rows)}"]
        values = [c for c in table.columns if not c.key]
        chosen = self.rng.sample(values, self.rng.randint(1, min(2, len(values))))
        sets = ", ".join(f"`{c.name}` = " + (f"VALUES(`{c.name}`)" if c in named and
                                              self.rng.random() < 0.5 else self.expression(c))
                         for c in chosen)
        return [f"INSERT INTO `{table.name}` ({names}) VALUES {', '.join(rows)} "
                f"ON DUPLICATE KEY UPDATE {sets}"]

    def update(self) -> list[str]:
        table = self._table()
        values = [c for c in table.columns if not c.key]
        if not values:
            return self.insert()
        chosen = self.rng.sample(values, self.rng.randint(1, min(3, len(values))))
        sets = ", ".join(f"`{c.name}` = {self.expression(c)}" for c in chosen)
        limit = f" LIMIT {self.rng.randint(1, 3)}" if self.rng.random() < 0.2 else ""
        return [f"UPDATE `{table.name}` SET {sets} WHERE {self.where(table)}{limit}"]

    def move_keys(self) -> list[str]:
        table = self.rng.choice([t for t in self.tables if t.key])
        if self.image != "FULL":
            if "R2" in self.avoid and table.name in self.altered:
                return self.update()
            self.moved.add(table.name)
        key = table.key.name
        shift = self.rng.choice([1, 2, 5, 10, 50, -1, -3, -20])
        order = "DESC" if shift > 0 else "ASC"
        low = self.rng.randint(0, 60)
        high = low + self.rng.randint(0, 15)
        also = ""
        if self.rng.random() < 0.4:
            other = self.rng.choice([c for c in table.columns if not c.key])
            also = f", `{other.name}` = {self.expression(other)}"
        return [f"UPDATE `{table.name}` SET `{key}` = `{key}` + {shift}{also} "
                f"WHERE `{key}` BETWEEN {low} AND {high} ORDER BY `{key}` {order}"]

    def delete(self) -> list[str]:
        table = self._table()
        limit = f" LIMIT {self.rng.randint(1, 2)}" if self.rng.random() < 0.3 else ""
        return [f"DELETE FROM `{table.name}` WHERE {self.where(table, narrow=True)}{limit}"]

    def where(self, table: Table, narrow: bool = False) -> str:
        key = table.key
        ints = [c for c in table.columns if c.family == "int"]
        pick = self.rng.random()
        if key and pick < 0.6:
            low = self.rng.randint(0, 70)
            return f"`{key.name}` BETWEEN {low} AND {low + self.rng.randint(0, 4 if narrow else 12)}"
        if ints and pick < 0.85:
            column = self.rng.choice(ints)
            return f"`{column.name}` % {self.rng.randint(2, 5)} = {self.rng.randint(0, 1)}"
        column = self.rng.choice(table.columns)
        return f"`{column.name}` IS {self.rng.choice(['', 'NOT '])}NULL"

    # -- values ----------------------------------------------------------------------
    def value(self, column: Column, null: bool = True) -> str:
        if column.key:
            return str(self.rng.randint(0, 80))
        if column.pinned:
            return str(self.rng.randint(0, 3))
        if null and column.nullable and self.rng.random() < 0.12:
            return "NULL"
        rng, family = self.rng, column.family
        if family == "int":
            bound = INT_RANGE[column.floor]
            return str(rng.choice([rng.randint(-100, 100), rng.randint(-bound - 1, bound), 0]))
        if family == "varchar":
            return quote(self.text(rng.randint(0, column.floor)))
        if family == "decimal":
            precision, scale = column.floor
            whole = rng.randint(0, 10 ** (precision - scale) - 1)
            fraction = rng.randint(0, 10 ** scale - 1)
            sign = rng.choice(["", "-"])
            return f"'{sign}{whole}.{fraction:0{scale}d}'" if scale else f"'{sign}{whole}'"
        if family == "datetime":
            fsp = column.floor
            text = (f"{rng.randint(1971, 2037):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
                    f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
            if fsp:
                text += "." + "".join(str(rng.randint(0, 9)) for _ in range(fsp))
            return f"'{text}'"
        length = rng.choice([0, 5, 30, 80])
        if family == "blob" and rng.random() < 0.5:
            data = bytes(rng.randrange(256) for _ in range(length))
            return f"X'{data.hex()}'" if data else "''"
        return quote(self.text(length))

    def text(self, length: int) -> str:
        alphabet = "abcxyz XYZ019_é'"
        return "".join(self.rng.choice(alphabet) for _ in range(length))

    def expression(self, column: Column) -> str:
        if self.rng.random() < 0.7:
            return self.value(column)
        if column.family == "int":
            return f"`{column.name}` + {self.rng.randint(-3, 3)}"
        if column.family == "decimal":
            return f"`{column.name}` * -1"
        if column.family == "datetime":
            return f"`{column.name}` + INTERVAL {self.rng.randint(1, 100)} DAY"
        if column.family == "varchar":
            return f"LEFT(CONCAT(`{column.name}`, '+'), {column.floor})"
        return f"CONCAT(`{column.name}`, 'more')"

    # -- DDL -------------------------------------------------------------------------
    def ddl(self) -> list[str]:
        table = self._table()
        if "R2" in self.avoid and table.name in self.moved:
            return self.insert()
        self.altered.add(table.name)
        options = [self.add_column, self.modify_column, self.rename_column]
        if len(table.alterable()) > 2:
            options.append(self.drop_column)
        return options[self.rng.randrange(len(options))](table)

    def _new_name(self) -> str:
        self.counter += 1
        return f"c{self.counter}"

    def add_column(self, table: Table) -> list[str]:
        family = self.rng.choice(["int", "varchar", "decimal", "datetime",
                                  "blob" if self.rng.random() < 0.5 else "text"])
        size = {"varchar": self.rng.choice([4, 16]), "decimal": (6, 1),
                "datetime": self.rng.choice([0, 2])}.get(family)
        kind = self.rng.choice(INT_TYPES) if family == "int" else family
        column = Column(self._new_name(), family, kind, size)
        column.floor = kind if family == "int" else size
        column.nullable = self.rng.random() < 0.6
        if "R1" in self.avoid:
            column.nullable = True
        # (a DATETIME NOT NULL without one would give the rows there a zero date)
        if family not in ("blob", "text") and (self.rng.random() < 0.6 or (
                family == "datetime" and not column.nullable)):
            column.default = self.value(column, null=False)
        if "R1" in self.avoid:
            column.default = None
        if "R3" in self.avoid and family == "blob":
            column.nullable = True
        where = ""
        pick = self.rng.random()
        if pick < 0.15:
            where = " FIRST"
        elif pick < 0.3:
            where = f" AFTER `{self.rng.choice(table.columns).name}`"
        table.columns.append(column)
        return [f"ALTER TABLE `{table.name}` ADD COLUMN {column.definition()}{where}"]

    def drop_column(self, table: Table) -> list[str]:
        column = self.rng.choice(table.alterable())
        table.columns.remove(column)
        return [f"ALTER TABLE `{table.name}` DROP COLUMN `{column.name}`"]

    def rename_column(self, table: Table) -> list[str]:
        column = self.rng.choice(table.alterable() or [table.key])
        old, column.name = column.name, self._new_name()
        return [f"ALTER TABLE `{table.name}` RENAME COLUMN `{old}` TO `{column.name}`"]

    def modify_column(self, table: Table) -> list[str]:
        convertible = [c for c in table.alterable() if c.family in CONVERTIBLE]
        if self.lax and convertible and self.rng.random() < 0.5:
            return self.convert_column(table, self.rng.choice(convertible))
        widenable = [c for c in table.columns if not c.pinned and self._wider(c) is not None]
        if not widenable:
            return self.add_column(table)
        column = self.rng.choice(widenable)
        column.size, column.kind = self._wider(column)
        if column.family in ("text", "blob"):
            column.size = None
        if not column.key and self.rng.random() < 0.3:  # a MODIFY restates the whole column
            column.nullable, column.default = True, None
        return [f"ALTER TABLE `{table.name}` MODIFY {column.definition()}"]

    def convert_column(self, table: Table, column: Column) -> list[str]:
        """A MODIFY to another type (lax sql_mode: the server converts every
        value, cutting or clipping what does not fit: binlake.spark.plans.
        conversions holds its rules), the column restated as NULL, no DEFAULT."""
        family = self.rng.choice(CONVERTIBLE[column.family])
        if family == "int":
            column.kind, column.size = self.rng.choice(INT_TYPES), None
        elif family == "decimal":
            column.kind, column.size = "decimal", self.rng.choice([(6, 1), (12, 3), (4, 0)])
        else:  # a VARCHAR: a shorter one cuts its values
            shorter = column.family == "varchar"
            column.kind = "varchar"
            column.size = self.rng.choice([2, column.size - 1] if shorter and column.size > 2
                                          else [3, 12, 30])
        column.family, column.nullable, column.default = family, True, None
        column.floor = column.kind if family == "int" else column.size
        return [f"ALTER TABLE `{table.name}` MODIFY {column.definition()}"]

    def _wider(self, column: Column):
        if column.family == "int":
            at = INT_TYPES.index(column.kind)
            return (None, INT_TYPES[at + 1]) if at + 1 < len(INT_TYPES) else None
        if column.family == "varchar":
            return (column.size + self.rng.choice([1, 10, 100]), column.kind)
        if column.family == "decimal":
            precision, scale = column.size
            if precision >= 30:
                return None
            return ((precision + 2, scale + self.rng.choice([0, 1])), column.kind)
        if column.family == "datetime":
            return (column.size + 1, column.kind) if column.size < 6 else None
        wider = {"text": "mediumtext", "blob": "mediumblob"}.get(column.kind)
        return (None, wider) if wider else None


def write_script(seed: int, steps: int, avoid=frozenset(KNOWN), history: bool = False) -> str:
    """The seed's statements as a script (read_script), its CREATE TABLEs
    first, `-- check` where the seed's checks fall: to cut down by hand
    (`history`: as a Run with history draws them, whole row images only)."""
    workload, lines = Workload(seed, avoid, ("FULL",) if history else IMAGES), []
    lines += workload.setup()
    next_check = workload.check_every()
    for step in range(1, steps + 1):
        lines += [f"-- step {step}", *workload.step()]
        if step == next_check or step == steps:
            lines.append("-- check")
            workload.checked()
            next_check = step + workload.check_every()
    return "\n".join(lines) + "\n"


def read_script(text: str) -> list[list[str]]:
    """A repro's actions: one statement a line (a trailing `;` optional), a
    line `-- check` ending each action (the last one ends at the end)."""
    actions, action = [], []
    for line in text.splitlines():
        line = line.strip()
        if line.lower() == "-- check":
            actions.append(action)
            action = []
        elif line and not line.startswith("--"):
            action.append(line.rstrip(";"))
    return actions + [action] if action else actions


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"


# -- running it ------------------------------------------------------------------------

@dataclass
class Executed:
    step: int
    statement: str
    error: str | None = None  #: the server's rejection (nothing logged)

    def line(self) -> str:
        return f"  [{self.step}] {self.statement};" + (f"  -- rejected: {self.error}"
                                                       if self.error else "")


@dataclass
class Finding:
    seed: int
    step: int
    since: list[Executed]
    differences: list[str]
    kind: str = "difference"  #: difference, refused, failed
    scripted: bool = False  #: a given script's (each action checked), not the seed's

    def report(self) -> str:
        repeat = ("a script: its statements, each action checked" if self.scripted else
                  f"repeat: BINLAKE_RANDOM_SEED={self.seed} BINLAKE_RANDOM_STEPS={self.step}, or "
                  f"bench/bench_randomized.py --seed {self.seed} --steps {self.step}")
        lines = [f"randomized seed {self.seed}: {self.kind} at step {self.step} ({repeat})",
                 "statements since the last check:", *[e.line() for e in self.since],
                 "differences:", *[f"  {d}" for d in self.differences]]
        return "\n".join(lines)


@dataclass
class Outcome:
    seed: int
    steps: int = 0
    checks: int = 0
    as_of_reads: int = 0
    as_of_refused: int = 0  #: points before a table read anew, refused as they must be
    kills: int = 0
    restarts: int = 0
    failovers: int = 0
    rebuilds: int = 0
    statements: int = 0
    rejected: int = 0
    findings: list[Finding] = field(default_factory=list)
    log: list[Executed] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"{self.steps} steps, {self.checks} checks ({self.as_of_reads} --as-of "
                f"({self.as_of_refused} refused before a table read anew), "
                f"{self.kills} killed runs before, {self.restarts} server restarts, "
                f"{self.failovers} failovers, "
                f"{self.rebuilds} rebuilds), {self.statements} statements "
                f"({self.rejected} rejected by the server)")

    def add(self, other: "Outcome") -> None:
        """`other`'s counts and findings added to these (a bench's totals)."""
        for name in ("steps", "checks", "as_of_reads", "as_of_refused", "kills", "restarts",
                     "failovers", "rebuilds",
                     "statements", "rejected", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.findings += other.findings


#: The lake's partitioning of the partitioned table (--partition-by, on every run).
PARTITION_BY = f"{DATABASE}.parted=g"


@dataclass
class CheckPlan:
    """What a check does besides its run, drawn from the Run's generator of
    lake events (never the workload's: the statements stay the seed's)."""
    failover: bool = False       #: the primary SIGKILLed, its replica promoted (GTIDs)
    restart: str | None = None   #: "clean" or "killed": the server stopped and started again
    killed: str | None = None    #: "run" or "follow": a run SIGKILLed before the check's own
    snapshot: str | None = None  #: a table the run reads anew (--snapshot-tables)
    left_out: str | None = None  #: a table the run does not select (--tables, the others)
    rebuild: str | None = None   #: a table built again from changes/ after (--rebuild)

    def lines(self, step: int) -> list[Executed]:
        """The plan as lines of a finding's report (comments: not statements)."""
        said = {"failover": "the primary SIGKILLed, its replica promoted: the server now",
                "restart": f"the server {'SIGKILLed' if self.restart == 'killed' else 'stopped'}"
                           " and started again",
                "killed": f"binlake pipeline -R{' --follow' if self.killed == 'follow' else ''}"
                          " SIGKILLed in its first seconds",
                "snapshot": f"the run with --snapshot-tables {DATABASE}.{self.snapshot}",
                "left_out": f"the run with --tables leaving {DATABASE}.{self.left_out} out",
                "rebuild": f"then binlake pipeline --rebuild {DATABASE}.{self.rebuild} "
                           "from changes/"}
        return [Executed(step, f"-- {line}") for name, line in said.items()
                if getattr(self, name)]

    def options(self, tables: list[str], partitioned: bool) -> list[str]:
        """The check's run's options (and its killed run's)."""
        options = ["--partition-by", PARTITION_BY] if partitioned else []
        if self.snapshot:
            options += ["--snapshot-tables", f"{DATABASE}.{self.snapshot}"]
        if self.left_out:
            options += ["--tables", ",".join(f"{DATABASE}.{t}" for t in tables
                                             if t != self.left_out)]
        return options


def draw_plan(events: random.Random, tables: list[str]) -> CheckPlan:
    """Each event with its share of the checks (KILLED_SHARE, the others
    EVENT_SHARE), the table it names drawn among the workload's."""
    plan = CheckPlan(failover=events.random() < EVENT_SHARE)
    if events.random() < EVENT_SHARE:
        plan.restart = events.choice(["clean", "killed"])
    if events.random() < KILLED_SHARE:
        plan.killed = events.choice(["run", "follow"])
    for name in ("snapshot", "left_out", "rebuild"):
        if events.random() < EVENT_SHARE:
            setattr(plan, name, events.choice(tables))
    return plan


def pipeline_argv(server, out: Path, history: bool = False, options=()) -> list[str]:
    """`binlake pipeline -R` as tests/spark/test_follow.py runs it, once to the server's end."""
    return ["pipeline", "-R", "--out", str(out), "-h", "127.0.0.1", "-P", str(server.port),
            "-u", "root", *(["--history"] if history else []), *options, "binlog.000001"]


def run_pipeline_once(server, out: Path, history: bool = False, options=()) -> tuple[int, str]:
    return _binlake(pipeline_argv(server, out, history, options))


def copies(lake: Path) -> list[str]:
    """The lake's byte-exact copies of the server's binlogs (after a
    failover, the new server's too: `failoverN~binlog.NNNNNN`)."""
    return sorted(str(path) for path in (lake / "_binlake" / "binlogs").iterdir()
                  if re.fullmatch(r"(failover\d+~)?binlog\.\d+", path.name))


def run_as_of(lake: Path, point: str, then: Path, tables: list[str]) -> tuple[int, str]:
    """`binlake pipeline --as-of POINT --as-of-out THEN --tables TABLES` over
    the lake's copies."""
    return _binlake(["pipeline", "--out", str(lake), "--as-of", point, "--as-of-out", str(then),
                     "--tables", ",".join(f"{DATABASE}.{t}" for t in tables), *copies(lake)])


def run_rebuild(lake: Path, table: str) -> tuple[int, str]:
    """`binlake pipeline --rebuild DB.TABLE` over the lake's copies: from changes/."""
    return _binlake(["pipeline", "--out", str(lake), "--rebuild", f"{DATABASE}.{table}",
                     *copies(lake)])


def _binlake(argv: list[str]) -> tuple[int, str]:
    from binlake.cli.dispatch import main
    stdout, stderr = io.StringIO(), io.StringIO()
    status = main(argv, stdout, stderr)
    lines = stderr.getvalue().strip().splitlines()
    return status, lines[-1] if lines else ""  # its progress lines, then the failure's


def tables_bytes(out: Path) -> dict:
    folder = out / "tables"
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()} if folder.exists() else {}


class Run:
    """One seed on its own fresh server: `run(steps)` executes and checks."""

    def __init__(self, seed: int, workdir: Path,
                 compare: Callable[..., list[str]], server_id: int = 46,
                 log: Callable[[str], None] | None = None, keep_going: bool = False,
                 engine: str = "random", avoid=frozenset(KNOWN), history: bool = False,
                 as_of: tuple | None = None, events: bool = True, failover: bool = False):
        self.seed, self.workdir, self.compare = seed, Path(workdir), compare
        self.server_id, self.log = server_id, log or (lambda message: None)
        self.keep_going = keep_going
        self.engine, self.engines = engine, random.Random(f"{seed} engine")
        self.avoid = avoid
        #: --history on every run (whole row images only: it refuses partial ones)
        self.history = history
        #: (capture(server, tables), compare_captured(tables folder, captured)): each
        #: check's server state kept, and an earlier one read back by --as-of now and then
        self.as_of, self.points = as_of, random.Random(f"{seed} as-of")
        #: what checks do besides their runs (CheckPlan); none unless `events`
        self.events = random.Random(f"{seed} lake") if events else None
        #: a replica beside the server, promoted at a check drawn as the events are
        self.failover = failover
        self.captured: list[tuple[int, str, object]] = []
        self.workload: Workload | None = None
        #: each table's last check that may have read it anew (--snapshot-tables;
        #: selected again after a run left it out, where that run read anything):
        #: --as-of may refuse points before it, and only those
        self.read_anew: dict[str, int] = {}
        self.left_out: str | None = None  #: the table the last run left out

    def _engine(self) -> str:
        drawn = "spark" if self.engines.random() < 1 / 3 else "driver"
        return drawn if self.engine == "random" else self.engine

    def run(self, steps: int, script: list[list[str]] | None = None,
            setup: bool = True) -> Outcome:
        """`steps` of the seed's workload; or `script`: given actions (each a
        statement list, checked after each action: a minimized repro), after
        the workload's CREATE TABLEs unless not `setup`."""
        from binlake.testing.mariadb import MariaDBServer
        started = time.monotonic()
        outcome = Outcome(self.seed)
        workload = Workload(self.seed, self.avoid, ("FULL",) if self.history else IMAGES)
        self.workload, self.tables = workload, [t.name for t in workload.tables]
        if script is not None:  # a repro: its statements and checks alone
            self.events = None
        self.partitioned = setup  # the workload's partitioned table exists
        lake = self.workdir / "lake"
        with contextlib.ExitStack() as servers:
            server = servers.enter_context(MariaDBServer(
                self.workdir / "server", server_id=self.server_id, extra=SERVER_SETTINGS))
            self.server, self.replica = server, None
            if self.failover and script is None:
                self.replica = servers.enter_context(MariaDBServer(
                    self.workdir / "replica", server_id=self.server_id + 1,
                    extra=SERVER_SETTINGS))
                self.replica.execute(
                    f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={server.port}, "
                    "MASTER_USER='root', MASTER_USE_GTID=slave_pos")
                self.replica.execute("START SLAVE")
            server.execute(f"CREATE DATABASE {DATABASE}")
            self.connection = None
            self._session()
            since: list[Executed] = []
            for statement in workload.setup() if setup else []:
                since.append(self._execute(0, statement, outcome))
            total = len(script) if script is not None else steps
            next_check = 1 if script is not None else workload.check_every()
            for step in range(1, total + 1):
                statements = script[step - 1] if script is not None else workload.step()
                for statement in statements:
                    since.append(self._execute(step, statement, outcome))
                outcome.steps = step
                if step == next_check or step == total:
                    lake = self._check(lake, step, since, outcome)
                    workload.checked()
                    for finding in outcome.findings:
                        finding.scripted = script is not None
                    since = []
                    next_check = step + (1 if script is not None else workload.check_every())
                    if outcome.findings and not self.keep_going:
                        break
            if self.connection is not None:
                self.connection.close()
        outcome.seconds = time.monotonic() - started
        return outcome

    def _session(self) -> None:
        """A new connection to the server (the primary), in the workload's
        session settings (a restart's or failover's reconnection keeps the
        row image and sql_mode the workload chose)."""
        if self.connection is not None:
            self.connection.close()
        self.connection = self.server.connect(DATABASE)
        with self.connection.cursor() as cursor:
            cursor.execute("SET SESSION time_zone = '+00:00'")
            if self.workload is not None:
                cursor.execute(f"SET SESSION binlog_row_image = '{self.workload.image}'")
                if self.workload.lax:
                    cursor.execute("SET SESSION sql_mode = ''")

    def _execute(self, step: int, statement: str, outcome: Outcome) -> Executed:
        import pymysql
        done = Executed(step, statement)
        outcome.log.append(done)
        outcome.statements += 1
        if statement == "NEW SESSION":
            self._session()
            return done
        try:
            with self.connection.cursor() as cursor:
                cursor.execute(statement)
        except pymysql.MySQLError as error:
            done.error = f"{error.args[0]} {error.args[1]}" if len(error.args) > 1 else str(error)
            outcome.rejected += 1
        return done

    def _check(self, lake: Path, step: int, since: list[Executed], outcome: Outcome) -> Path:
        outcome.checks += 1
        plan = draw_plan(self.events, self.tables) if self.events else CheckPlan()
        plan.failover = plan.failover and self.replica is not None
        if not (lake / "_binlake" / "manifest.json").exists():
            plan.snapshot = None  # a new lake reads every table: nothing to read anew
        since = since + plan.lines(step)
        if plan.failover:
            self._fail_over(step, outcome)
        if plan.restart:
            self._restart(plan.restart, step, outcome)
        server = self.server
        options = plan.options(self.tables, self.partitioned)
        if plan.killed:
            self._killed_run(server, lake, step, outcome, options, plan.killed == "follow")
        selected = [t for t in self.tables if t != plan.left_out]
        status, error, engine = self._pipeline(server, lake, step, options)
        if status != 0:
            return self._failed(lake, step, since, outcome, engine, status, error)
        for table in {plan.snapshot, self.left_out} - {None, plan.left_out}:
            self.read_anew[table] = step
        self.left_out = plan.left_out
        differences = self.compare(lake, server, selected)
        if not differences and plan.rebuild:
            status, error = run_rebuild(lake, plan.rebuild)
            outcome.rebuilds += 1
            self.log(f"seed {self.seed} step {step}: --rebuild {plan.rebuild} {status}"
                     + (f" {error}" if status else ""))
            if status != 0:
                return self._failed(lake, step, since, outcome, "--rebuild", status, error)
            # the rebuild's run selects every table again (no --tables)
            differences = [f"after --rebuild {plan.rebuild}: {line}"
                           for line in self.compare(lake, server, self.tables)]
            selected = self.tables
        if differences:
            differences.insert(0, f"(the tables computed by the {engine})")
            outcome.findings.append(Finding(self.seed, step, since, differences))
        elif self.as_of is not None:
            differences = self._as_of(server, lake, step, outcome, selected)
            if differences:
                outcome.findings.append(Finding(self.seed, step, since, differences))
        return lake

    def _pipeline(self, server, lake: Path, step: int, options: list) -> tuple[int, str, str]:
        """The check's run, by the engine drawn for it."""
        from binlake.spark.commits import driver_way
        engine = self._engine()
        held, driver_way.DRIVER_ROWS = driver_way.DRIVER_ROWS, (
            -1 if engine == "spark" else driver_way.DRIVER_ROWS)
        try:
            status, error = run_pipeline_once(server, lake, self.history, options)
        finally:
            driver_way.DRIVER_ROWS = held
        self.log(f"seed {self.seed} step {step}: pipeline ({engine}) {status}"
                 + (f" {error}" if status else ""))
        return status, error, engine

    def _failed(self, lake: Path, step: int, since: list, outcome: Outcome, engine: str,
                status: int, error: str) -> Path:
        """A run that failed or refused: a finding; the checks go on from a
        fresh lake (everything from the server's first binlog again)."""
        kind = "refused" if "nothing was applied" in error else "failed"
        differences = [f"binlake pipeline ({engine}) ended {status}: {error}"]
        outcome.findings.append(Finding(self.seed, step, since, differences, kind))
        return self.workdir / f"lake-{outcome.checks}"

    def _restart(self, how: str, step: int, outcome: Outcome) -> None:
        """The server stopped cleanly or SIGKILLed, and started again; the
        workload's session reconnected in its settings."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        self.server.kill() if how == "killed" else self.server.stop()
        self.server.start()
        self._session()
        outcome.restarts += 1
        self.log(f"seed {self.seed} step {step}: the server restarted ({how})")

    def _fail_over(self, step: int, outcome: Outcome) -> None:
        """The primary SIGKILLed once its replica holds every transaction,
        the replica promoted (its binlog holds them under their GTIDs, in
        files of its own): the workload and the lake's runs go on there."""
        position = self.server.query("SELECT @@gtid_binlog_pos")[0][0]
        waited = self.replica.query("SELECT MASTER_GTID_WAIT(%s, 60)", (position,))[0][0]
        if waited != 0:
            raise RuntimeError(f"the replica did not reach {position} in 60 s")
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        self.server.kill()
        self.replica.execute("STOP SLAVE")
        self.replica.execute("RESET SLAVE ALL")
        self.server, self.replica = self.replica, None
        self._session()
        outcome.failovers += 1
        self.log(f"seed {self.seed} step {step}: failed over to the replica")

    def _killed_run(self, server, lake: Path, step: int, outcome: Outcome, options: list,
                    follow: bool) -> None:
        """`binlake pipeline -R` (or `-R --follow`) in a process of its own,
        SIGKILLed (its JVM and Python workers too) within its first
        KILL_WITHIN seconds (a follower: FOLLOW_KILL_WITHIN): the check's run
        that follows must complete what it left."""
        import os
        import signal
        import subprocess
        import sys
        import binlake
        source = str(Path(binlake.__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [source, *filter(None, [os.environ.get("PYTHONPATH")])])}
        argv = pipeline_argv(server, lake, self.history, [*options, *(["--follow"] if follow
                                                                      else [])])
        process = subprocess.Popen([sys.executable, "-m", "binlake", *argv], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        after = self.events.uniform(0, FOLLOW_KILL_WITHIN if follow else KILL_WITHIN)
        try:
            process.wait(timeout=after)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            outcome.kills += 1
            self.log(f"seed {self.seed} step {step}: a {'follower' if follow else 'run'} "
                     f"SIGKILLed after {after:.1f} s")

    def _as_of(self, server, lake: Path, step: int, outcome: Outcome,
               selected: list[str]) -> list[str]:
        """This check's server state kept (its binlog position, the tables
        its run selected); a third of the time the tables of an earlier
        check built by --as-of from the lake's copies, against what the
        server held then. Where a table may have been read anew since that
        check, the point may be before its rows: half of the time every
        table is asked for (refused, if at all, in one line naming such a
        table), else only the others (--tables)."""
        capture, compare_captured = self.as_of
        file, pos = server.query("SHOW MASTER STATUS")[0][:2]
        self.captured.append((step, f"{file}:{pos}", capture(server, selected)))
        if len(self.captured) < 2 or self.points.random() >= 1 / 3:
            return []
        then_step, point, (rows, columns, _) = self.points.choice(self.captured[:-1])
        anew = {table for table, at in self.read_anew.items() if at > then_step}
        asked = [t for t in self.tables if not (anew and self.points.random() < 0.5
                                                  and t in anew)]
        then = self.workdir / f"as-of-{outcome.checks}"
        status, error = run_as_of(lake, point, then, asked)
        self.log(f"seed {self.seed} step {step}: --as-of {point} (step {then_step}) {status}"
                 + (f" {error}" if status else ""))
        outcome.as_of_reads += 1
        if status != 0:
            if any(f"--as-of {point}: {DATABASE}.{table} was read by the lock-free snapshot"
                   in error for table in anew & set(asked)):
                outcome.as_of_refused += 1  # a point before its rows: refused, rightly
                return []
            return [f"binlake pipeline --as-of {point} (the server at step {then_step}) "
                    f"ended {status}: {error}"]
        # (a table that check's run left out too: --as-of reads the copies for it)
        held = (rows, columns, asked)
        return [f"--as-of {point} (the server at step {then_step}): {line}"
                for line in compare_captured(then / "tables", held)]
