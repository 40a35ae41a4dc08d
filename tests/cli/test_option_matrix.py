"""The option matrix: mariadb-binlog's output options and filters, alone and
in the pairs users combine, on corpus files of every server version,
against mariadb-binlog itself: stdout line for line and the exit status.

Strategy: two files per version folder (its two largest of at least five
events), each with positions and names taken from the
file (an event start for --start-position, the middle for --stop-position,
a database and a table its table maps name), so every filter selects
something. Where mariadb-binlog cannot read a file there is no oracle: the
file is left to tests/text/test_mysqlbinlog.py. The one documented difference applied
here: without -v, row counts of GEOMETRY/JSON/VECTOR rows
(docs/mysqlbinlog-differences.md).
"""
from __future__ import annotations

import pytest

from option_matrix import MATRIX, facts as _facts
from peers import (CORPUS, _ids, _without_row_counts, binlake, needs_reference,  # noqa: F401
                       reference, utc)

def _sample():
    """Per version folder: its two largest files of at least 5 events."""
    folders: dict = {}
    for path in CORPUS:
        parts = str(path).split("binlogs/", 1)[-1].split("/")
        folders.setdefault(parts[0], []).append(path)
    chosen = []
    for paths in folders.values():
        by_size = sorted(paths, key=lambda p: p.stat().st_size, reverse=True)
        chosen.extend([p for p in by_size if _facts(p) is not None][:2])
    return sorted(chosen)


SAMPLE = _sample()


@needs_reference
@pytest.mark.parametrize("path", SAMPLE, ids=_ids(SAMPLE))
def test_option_matrix_prints_as_mariadb_binlog(path, tmp_path):
    facts = _facts(path)
    checked = 0
    for options in MATRIX:
        options = [o.format(**facts) for o in options]
        mine, theirs_dir = tmp_path / "binlake", tmp_path / "reference"
        mine.mkdir(exist_ok=True)
        theirs_dir.mkdir(exist_ok=True)
        status_theirs, theirs = reference("--local-load", f"{theirs_dir}/", *options, str(path))
        if status_theirs != 0:
            continue  # no oracle (tests/text/test_mysqlbinlog.py holds binlake to its own errors)
        status, ours, err = binlake("dump", "--no-defaults", "--mysql-events=ignorable",
                                    "--no-verify-checksum", "--local-load", f"{mine}/",
                                    *options, str(path))
        if "-v" not in options and "-vv" not in options:
            ours, theirs = _without_row_counts(ours), _without_row_counts(theirs)
        ours = ours.replace(str(mine).encode(), b"DIR")
        theirs = theirs.replace(str(theirs_dir).encode(), b"DIR")
        assert (status, ours) == (0, theirs), (options, err)
        checked += 1
    if not checked:
        pytest.skip("mariadb-binlog reads none of it: no oracle")
