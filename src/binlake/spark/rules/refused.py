"""Why the table rules refuse a change, in one line each, whichever engine
runs them (the driver, Spark's tasks, a Catalyst job): the words, and how
a failure is read back as them.
"""

from __future__ import annotations

import re

from binlake.spark.plans.refusals import (FULL_IMAGES_THEN_READ_ANEW, NEW_LAKE_WITH_FULL_IMAGES,
                                          READ_ANEW, forward, named)
from binlake.spark.plans.typed import REFUSED


def refusal(words: str) -> ValueError:
    """A change the rules cannot apply exactly: one line, REFUSED first, so
    that a Spark task's failure says it as the driver's does (`refused`)."""
    return ValueError(REFUSED + words)


def refused_at(at: str, table: str, reason: str) -> ValueError:
    """`refusal` of a change at `at` ("FILE at POS") of `table`, for `reason`
    (its way forward naming the table)."""
    return refusal(f"{at}: {table}: {named(reason, table)}")


def refused(exc: BaseException) -> str | None:
    """The reason a job failed on a change it refused (REFUSED), if it did."""
    text = str(exc)
    at = text.find(REFUSED)
    if at < 0:
        return None
    reason = text[at + len(REFUSED):].splitlines()[0]
    # Spark 4 ends an error's first line with its SQL state: not binlake's words.
    return re.sub(r"\s*SQLSTATE: \w+\s*$", "", reason).strip()


#: Why a partial row image of a row the table does not hold is refused
#: (its way forward names the table where it says {table}: binlake.spark.plans.refusals).
NOT_HELD = ("a partial row image (binlog_row_image=MINIMAL or NOBLOB) of a row the table "
            "does not hold: the columns it leaves out are not in the binlog"
            + forward(READ_ANEW))
#: Why a keyed table's row left partial by every change of it is refused.
NEVER_WHOLE = ("a partial row image (binlog_row_image=MINIMAL or NOBLOB) of a row no change "
               "before it wrote whole (an UPDATE that moved it to a new key, an INSERT leaving "
               "out a column whose DEFAULT is not known): the columns it leaves out are not in "
               "the binlog" + forward(READ_ANEW))
#: Why a keyless table's partial after image is refused.
KEYLESS_PARTIAL = ("a partial row image of a table without a primary key: the columns it "
                   "leaves out are not in the binlog" + forward(FULL_IMAGES_THEN_READ_ANEW))
#: Why a keyless table's partial before image is refused.
UNKNOWN_KEY = ("the row is identified by a key binlake does not know (a UNIQUE key: binlake "
               "keys tables by their PRIMARY KEY): a partial before image cannot name the row"
               + forward(FULL_IMAGES_THEN_READ_ANEW))
#: Why --history refuses a partial row image.
HISTORY_PARTIAL = ("--history keeps whole rows: a partial row image (binlog_row_image=MINIMAL "
                   "or NOBLOB) leaves columns out" + forward(NEW_LAKE_WITH_FULL_IMAGES))
