"""How `binlake` ends: its exit statuses, and an OS error in one line.

What every command returns lives here, below the commands and the entry
point that both use it.
"""

from __future__ import annotations

import re
from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit codes of `binlake` (documented in the README)."""

    OK = 0
    ERROR = 1          #: bad input: the message names file, offset and reason
    USAGE = 2          #: bad command line (argparse's own code)
    UNKNOWN_VARIABLE = 7  #: an option file's option the command does not know (my_getopt's)
    INTERRUPTED = 130
    BROKEN_PIPE = 141  #: the output's reader went away (128 + SIGPIPE, as the C tools end)
    TERMINATED = 143   #: SIGTERM: stopped as by Ctrl-C, everything received written


def os_error_text(exc: OSError) -> str:
    """`reason: file` as the C tools say it (pyarrow's errors carry the
    errno in their text only: "[Errno 28] No space left on device")."""
    reason = exc.strerror or re.sub(r"^\[Errno \d+\] ", "", str(exc))
    return f"{reason}: {exc.filename}" if exc.filename else reason
