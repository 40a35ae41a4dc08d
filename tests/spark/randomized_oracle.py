"""The randomized check's oracle (binlake.testing.randomized): each Delta
table of the lake against the server's `SELECT *`, through the same typed
rows as every other lake test (truth.typed_rows, truth.canonical_rows), as
a multiset (a keyless table's copies count); and each table's change data
feed, replayed from version 0 (or from its last type change, which Delta
cannot read across), against the table. Returns the differences,
each a line: none when the lake is right."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from binlake.spark.commits.delta import read_table
from binlake.testing.randomized import DATABASE
from binlake.testing.workload import expected_final_state

from .truth import _columns, canonical_rows, typed_rows

SHOWN = 6  #: rows shown of each side of a difference


def capture(server, selected=None) -> tuple[dict, dict, list]:
    """The server's tables now: their rows and their columns; and the names
    of those the run selected (--tables; None: all), which the lake must
    hold. A table left out may be held, as the lake last held it."""
    rows = expected_final_state(server, DATABASE)
    return rows, _columns(server), sorted(rows if selected is None else selected)


def compare(lake: Path, server, selected=None) -> list[str]:
    """The lake's tables against the server's now (those the run selected);
    each table's change data feed replayed against it; where the lake keeps
    history (--history), each history table's open versions against the
    table."""
    return compare_captured(Path(lake) / "tables", capture(server, selected),
                            history=Path(lake) / "history")


def compare_captured(folder: Path, captured: tuple, history: Path | None = None) -> list[str]:
    """The Delta tables in `folder` against `captured` (`capture`'s)."""
    every, columns, selected = captured
    expected = {table: rows for table, rows in every.items() if table in selected}
    held = sorted(p.name for p in folder.iterdir()) if folder.exists() else []
    wanted = sorted(f"{DATABASE}.{table}" for table in expected)
    differences = []
    if not set(wanted) <= set(held) <= {f"{DATABASE}.{table}" for table in every}:
        differences.append(f"tables/ holds {held}, the server {wanted}")
    for table, rows in sorted(expected.items()):
        name = f"{DATABASE}.{table}"
        if name not in held:
            continue
        lake_rows = read_table(str(folder / name)).to_pylist()
        got = Counter(canonical_rows(lake_rows))
        want = Counter(canonical_rows(typed_rows(rows, columns[table])))
        differences += diff(f"{table}: the lake", got, "the server", want)
        try:
            feed = replayed_feed(folder / name)
        except Exception as error:  # noqa: BLE001 - a feed that cannot be read is a finding
            differences.append(f"{table}: its change data feed cannot be read: "
                               f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")
            continue
        differences += diff(f"{table}: the change data feed replayed", feed, "the table", got)
        if history is not None and (history / name).exists():
            differences += diff(f"{table}: the history's open versions",
                                open_versions(history / name), "the table", got)
    return differences


def open_versions(uri: Path) -> Counter:
    """A history table's versions still current (no VALID_TO), its columns alone."""
    from binlake.spark.rules.columns import VALID_FROM, VALID_TO
    rows = read_table(str(uri)).to_pylist()
    kept = [{k: v for k, v in row.items() if k not in VALID_FROM + VALID_TO}
            for row in rows if row[VALID_TO[0]] is None]
    return Counter(canonical_rows(kept))


def replayed_feed(uri: Path) -> Counter:
    """The rows the table's change data feed adds and removes, summed (a
    count below zero is kept: a row removed more than added): from version
    0, or, where a type change rewrote the table (a column's values of two
    types cannot be read as one feed, in Delta Lake as in delta-rs), the
    table as of that version plus the feed after it."""
    import deltalake
    import pyarrow as pa
    start = _last_type_change(uri)
    rows = Counter()
    table = deltalake.DeltaTable(str(uri))
    if start:  # its rows in the table's columns now, as the feed gives every change
        names = [field.name for field in table.schema().fields]
        held = deltalake.DeltaTable(str(uri), version=start).to_pyarrow_table().to_pylist()
        rows.update(canonical_rows([{name: row.get(name) for name in names} for row in held]))
    if start == table.version():
        return Counter({row: count for row, count in rows.items() if count})
    feed = pa.table(table.load_cdf(starting_version=start + 1 if start else 0).read_all())
    for change in feed.to_pylist():
        kind = change.pop("_change_type")
        for name in ("_commit_version", "_commit_timestamp"):
            change.pop(name, None)
        (row,) = canonical_rows([change])
        rows[row] += 1 if kind in ("insert", "update_postimage") else -1
    return Counter({row: count for row, count in rows.items() if count})


def _last_type_change(uri: Path) -> int:
    """The last version whose schema gives a column another type than the
    version before it did (0: none)."""
    import deltalake
    latest = deltalake.DeltaTable(str(uri)).version()
    types = [{field.name: str(field.type) for field in deltalake.DeltaTable(
        str(uri), version=version).schema().fields} for version in range(latest + 1)]
    return max((version for version in range(1, latest + 1)
                if any(name in types[version - 1] and types[version - 1][name] != kind
                       for name, kind in types[version].items())), default=0)


def diff(left_name: str, left: Counter, right_name: str, right: Counter) -> list[str]:
    if left == right:
        return []
    only_left, only_right = left - right, right - left
    negative = {row: n for row, n in left.items() if n < 0}
    lines = [f"{left_name} differs from {right_name}: {sum(only_left.values())} row(s) only in "
             f"{left_name.split(': ')[-1]}, {sum(only_right.values())} only in {right_name}"]
    lines += [f"    only in {left_name.split(': ')[-1]}: {show(row)}"
              for row in list(only_left.elements())[:SHOWN]]
    lines += [f"    only in {right_name}: {show(row)}" for row in list(only_right.elements())[:SHOWN]]
    lines += [f"    removed more often than added ({n}): {show(row)}"
              for row, n in list(negative.items())[:SHOWN]]
    return lines


def show(row: tuple) -> str:
    return "{" + ", ".join(f"{name}: {value[1]!r}" for name, value in row) + "}"
