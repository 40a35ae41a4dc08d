"""The way forward each refusal of the tables names, written once.

Strategy: every refusal of a change to the tables ends its one line with
what to run (`refusal_line`): the words of each way forward are written
here once (`READ_ANEW`, `FULL_IMAGES_THEN_READ_ANEW`, `TEMPORALS_AS_TEXT`,
`NEW_LAKE_WITH_FULL_IMAGES`); a refusal's reason
carries one after GO_ON (`forward`), its table's name put in where it says
{table} (`named`), and the lake's folder where it says DIR (`refusal_line`).
"""
from __future__ import annotations

#: Where a refusal's reason ends and its way forward begins.
GO_ON = "; to go on, "
#: The lake's folder in a way forward, until `refusal_line` names it.
LAKE = "DIR"
#: What a server's connection options look like in a way forward.
SERVER = "-R -h HOST -u USER"

#: A row the binlog does not hold whole: the server's rows are the way on.
READ_ANEW = ("read {table} anew from the server: binlake pipeline --out DIR " + SERVER
             + " --rebuild {table}")
#: A table the server keeps logging partial images of: full images first.
FULL_IMAGES_THEN_READ_ANEW = ("set binlog_row_image=FULL on the server, then read {table} "
                              "anew from it: binlake pipeline --out DIR " + SERVER
                              + " --rebuild {table}")
#: A value no typed column holds: the lake's temporals as text.
TEMPORALS_AS_TEXT = ("run again with --temporals text: DATE, DATETIME and TIMESTAMP columns "
                     "are then kept as MySQL's exact text (every table rebuilt once)")
#: A history needs every version whole: one that starts where images are whole.
NEW_LAKE_WITH_FULL_IMAGES = ("set binlog_row_image=FULL on the server and start a lake of "
                             "its history from a snapshot of it: binlake pipeline --out NEWDIR "
                             + SERVER + " --snapshot-from --history")


def forward(template: str) -> str:
    """A refusal's reason ends with this: GO_ON, then what to run (its
    {table}: the table's name, put in by `named` or `named_column`)."""
    return GO_ON + template


def named(reason: str, table: str) -> str:
    """`reason` with `table` where it says {table}."""
    return reason.replace("{table}", table)


def named_column(reason: str, table):
    """`named` as a Spark column, `table` a column of the table's name."""
    from pyspark.sql import functions as F
    pieces = reason.split("{table}")
    parts = [F.lit(pieces[0])]
    for piece in pieces[1:]:
        parts += [table, F.lit(piece)]
    return F.concat(*parts)


def refusal_line(reason: str, out: str) -> str:
    """A refused change's one line: why, that nothing was applied, and the
    way forward its reason carries (with the lake's folder in it)."""
    why, _, forward = reason.partition(GO_ON)
    line = f"{why}: nothing was applied to the tables"
    if forward:
        line += GO_ON + forward.replace(f"--out {LAKE} ", f"--out {out} ")
    return line
