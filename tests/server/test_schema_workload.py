"""The schema history against a server's own DDL: binlogs without column
names (binlog_row_metadata NO_LOG, MINIMAL) replayed with `binlake sql
--schema <mariadb-dump --no-data>` onto the backup rebuild every table.

FULL metadata runs too, as a control: its table maps name every column, and
the history must agree with them (a disagreement would be a warning).

Strategy: one private server per metadata setting runs the schema workload
(testing/workload.py): a backed-up table, a new binlog, then every kind of
column-changing DDL with row changes after each step, a checkpoint (binlog
position and every table) per step. A second server is the replay target:
the backup restored, binlake's SQL piped in, its tables read back and
compared with the server's — columns (names and types) and rows — at the
end and at every checkpoint (`--stop-position`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from binlake.schema.history import Schema
from binlake.testing.mariadb import MariaDBServer
from binlake.testing.workload import (Checkpoint, SchemaBaseline, prepare_schema_workload,
                                      run_schema_workload, tables_state)

from .replay import replay, run_binlake

pytestmark = pytest.mark.server

DATABASE = "schema_wl"


@dataclass
class Recorded:
    baseline: SchemaBaseline
    checkpoints: list[Checkpoint]
    files: list[str]          #: the binlogs from the first after the backup, closed


@pytest.fixture(scope="module", params=["NO_LOG", "MINIMAL", "FULL"])
def recorded(request, mariadbd, tmp_path_factory) -> Recorded:
    workdir = tmp_path_factory.mktemp(f"schema-workload-{request.param}")
    with MariaDBServer(workdir, binlog_format="ROW", binlog_row_image="FULL",
                       binlog_row_metadata=request.param) as server:
        baseline = prepare_schema_workload(server, DATABASE)
        checkpoints = run_schema_workload(server, DATABASE)
        server.flush_logs()
    files = [str(path) for path in server.binlog_files()]
    first = next(i for i, path in enumerate(files) if path.endswith("/" + baseline.first_binlog))
    return Recorded(baseline, checkpoints, files[first:])


@pytest.fixture(scope="module")
def target(mariadbd, tmp_path_factory):
    with MariaDBServer(tmp_path_factory.mktemp("schema-workload-target"), server_id=2) as server:
        yield server


@pytest.fixture
def schema_file(recorded, tmp_path) -> str:
    path = tmp_path / "schema.sql"
    path.write_text(recorded.baseline.schema_sql, encoding="utf-8")
    return str(path)


def _restore(target: MariaDBServer, baseline: SchemaBaseline) -> None:
    for name in baseline.databases:
        target.execute(f"DROP DATABASE IF EXISTS `{name}`")
    replay(target, baseline.backup_sql.encode("utf-8"))


def _replayed(target, recorded: Recorded, schema_file: str, *selection: str,
              files=None) -> dict:
    _restore(target, recorded.baseline)
    status, sql, err = run_binlake("sql", "--schema", schema_file, *selection,
                                   *(files or recorded.files))
    assert status == 0, err
    # every statement of the workload is readable: no positional names, no doubts
    assert "warning" not in err, err
    replay(target, sql)
    return tables_state(target, recorded.baseline.databases)


def test_the_workload_changes_columns_and_rows(recorded):
    """The checkpoints are what the replays below are held to: make sure the
    workload did what it says (tables moved between databases, columns renamed)."""
    final = recorded.checkpoints[-1].tables
    assert recorded.checkpoints[0].label == "start"
    assert sorted(final) == [
        "schema_wl.audit", "schema_wl.computed", "schema_wl.customers", "schema_wl.metrics3",
        "schema_wl.moved", "schema_wl.orders", "schema_wl.pair_a", "schema_wl.pair_b",
        "schema_wl.readings", "schema_wl.top_customers",
        "schema_wl.we`ird name", "schema_wl_other.customers_copy", "schema_wl_scratch.t1"]
    assert final["schema_wl.customers"].columns == (
        "id", "region", "name", "level", "contact", "note", "points", "visits", "vip", "legacy")
    assert final["schema_wl.audit"].columns[:3] == ("seq", "at", "actor")
    positions = [(c.file, c.pos) for c in recorded.checkpoints]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_sql_with_the_dump_as_schema_rebuilds_every_table(recorded, target, schema_file):
    state = _replayed(target, recorded, schema_file)
    expected = recorded.checkpoints[-1].tables
    assert state == expected, _diff(state, expected)


def test_every_checkpoint_is_rebuilt_from_its_position(recorded, target, schema_file):
    """The history by position: replays that stop at each step's position give
    the tables of that step (rows of a table written before its ALTER, its
    RENAME or its DROP use the definition of their own time)."""
    wrong = []
    for checkpoint in recorded.checkpoints[1:-1]:
        files = [f for f in recorded.files if f.rsplit("/", 1)[-1] <= checkpoint.file]
        state = _replayed(target, recorded, schema_file, "--stop-position", str(checkpoint.pos),
                          files=files)
        if state != checkpoint.tables:
            wrong.append(f"{checkpoint.label}:\n{_diff(state, checkpoint.tables)}")
    assert not wrong, "\n".join(wrong)


def test_the_history_has_the_servers_columns_and_keys_at_every_checkpoint(recorded, schema_file):
    """What replays cannot see: a wrong primary key still finds rows, a wrong
    type may still replay. The history at each checkpoint's position must
    have the server's tables, column names, base types, signedness and keys."""
    status, text, err = run_binlake("schema", "--schema", schema_file, "--format", "json",
                                    *recorded.files)
    assert status == 0 and "warning" not in err, err
    history = Schema.from_json(json.loads(text))
    wrong = []
    for checkpoint in recorded.checkpoints:
        at = history.at((checkpoint.file, checkpoint.pos))
        got = {f"{db}.{table}": _facts(definition.names, definition.primary_key,
                                       [(c.type, c.unsigned) for c in definition.columns])
               for (db, table), definition in at.tables.items()}
        expected = {name: _facts(state.columns, state.primary_key, map(_base_type, state.types))
                    for name, state in checkpoint.tables.items()}
        for name in sorted(set(got) | set(expected)):
            if got.get(name) != expected.get(name):
                wrong.append(f"{checkpoint.label}: {name}: history {got.get(name)} "
                             f"!= server {expected.get(name)}")
    assert not wrong, "\n".join(wrong)


def _facts(names, key, types) -> tuple:
    # MariaDB's JSON is LONGTEXT (information_schema says longtext)
    types = tuple(("LONGTEXT" if kind == "JSON" else kind, unsigned) for kind, unsigned in types)
    return tuple(zip(names, types)), tuple(key)


def _base_type(column_type: str) -> tuple[str, bool]:
    """information_schema's COLUMN_TYPE as ColumnSpec's (type, unsigned)."""
    return column_type.split("(")[0].split()[0].upper(), " unsigned" in column_type


def _diff(got: dict, expected: dict) -> str:
    out = []
    for name in sorted(set(got) | set(expected)):
        a, b = got.get(name), expected.get(name)
        if a == b:
            continue
        if a is None or b is None:
            out.append(f"{name}: {'missing' if a is None else 'unexpected'}")
            continue
        if (a.columns, a.types) != (b.columns, b.types):
            out.append(f"{name}: columns {list(zip(a.columns, a.types))} != "
                       f"{list(zip(b.columns, b.types))}")
        if a.rows != b.rows:
            out.append(f"{name}: rows only replayed {[r for r in a.rows if r not in b.rows][:3]}, "
                       f"only on the server {[r for r in b.rows if r not in a.rows][:3]}")
    return "\n".join(out)
