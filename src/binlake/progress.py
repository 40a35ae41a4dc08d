"""Progress bars for a person at a terminal: long batch work (`dump`, `sql`
and `events` over files, `pipeline` over files, a snapshot's rows) shows
what is done of a total, the rows per second and the time left.

Rule: nothing at all unless the stream is a terminal and tqdm is installed
(binlake[progress]): `bar()` then gives `NO_BAR`, whose methods do nothing,
so a caller never asks. Counting stays cheap: callers hand over positions
and row counts they have anyway; tqdm redraws at most four times a second
and the rows/s figure is worked out only when it does. (At the root: the
CLI's commands and the Spark runs both show one, and neither imports the other.)
"""

from __future__ import annotations

import time

#: Seconds between two redraws (and rows/s figures).
REDRAW = 0.25


def on_terminal(stream) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class NoBar:
    """What a bar does where there is none: nothing."""

    def advance_to(self, done: int) -> None:
        pass

    def add(self, amount: int) -> None:
        pass

    def count_rows(self, rows: int) -> None:
        pass

    def clear(self) -> None:
        """The bar's line emptied for a line of text (drawn again at its next update)."""

    def close(self) -> None:
        pass


NO_BAR = NoBar()


class Bar(NoBar):
    """A tqdm bar of `total` (bytes with unit "B"; rows with unit "rows",
    `estimate`: the total is the server's guess, shown as ~N), with the rows
    so far per second as its postfix (a bytes bar: those `count_rows` was
    given, once it was) and tqdm's own time left."""

    def __init__(self, total: int, stream, desc: str, *, unit: str = "B",
                 estimate: bool = False, rows_unit: str = "rows"):
        from tqdm import tqdm
        fmt = None
        if estimate:
            fmt = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/~{total_fmt} {unit} "
                   "[{elapsed}<{remaining}{postfix}]")
        elif unit != "B":
            fmt = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} {unit} "
                   "[{elapsed}<{remaining}{postfix}]")
        self._bytes = unit == "B"
        self._rows_unit = rows_unit
        # (a terminal that says it has 0 columns and rows: tqdm would draw nothing)
        size = {} if _sized(stream) else {"ncols": 80, "nrows": 24}
        self._bar = tqdm(total=max(total, 1), unit=unit, unit_scale=True, file=stream,
                         leave=False, desc=desc, mininterval=REDRAW, bar_format=fmt,
                         dynamic_ncols=not size, **size)
        self._done = 0
        self._rows = None
        self._started = time.monotonic()
        self._shown = self._started

    def advance_to(self, done: int) -> None:
        """`done` (bytes or rows so far, not an increment)."""
        if done > self._done:
            self.add(done - self._done)

    def add(self, amount: int) -> None:
        self._done += amount
        bar = self._bar
        if self._done > bar.total:  # an estimate passed: the total is at least what is done
            bar.total = self._done
        now = time.monotonic()
        if now - self._shown >= REDRAW:
            self._shown = now
            self._postfix()
        bar.update(amount)

    def count_rows(self, rows: int) -> None:
        self._rows = (self._rows or 0) + rows

    def clear(self) -> None:
        self._bar.clear()

    def _postfix(self) -> None:
        rows = self._rows if self._bytes else self._done
        if rows is not None:
            elapsed = max(time.monotonic() - self._started, 1e-3)
            self._bar.set_postfix_str(f"{rows / elapsed:,.0f} {self._rows_unit}/s", refresh=False)

    def close(self) -> None:
        """The last figures drawn once (a short run's only frame), then the
        line cleared."""
        self._postfix()
        self._bar.refresh()
        self._bar.close()


def _sized(stream) -> bool:
    """Whether the terminal says how large it is."""
    import os
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return size.columns > 0 and size.lines > 0


def bar(total: int, stream, desc: str = "binlake", **options) -> NoBar:
    """A Bar on `stream` when it is a terminal and tqdm is installed, else NO_BAR."""
    if not on_terminal(stream):
        return NO_BAR
    try:
        return Bar(total, stream, desc, **options)
    except ImportError:
        return NO_BAR
