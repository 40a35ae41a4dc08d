"""install_as_pymysqlreplication and the pieces of the drop-in that need no server."""

from __future__ import annotations

import io
import subprocess
import sys

from binlake.compat.pymysqlreplication.bitmap import BitCount, BitGet
from binlake.compat.pymysqlreplication.gtid import Gtid, GtidSet


def test_install_puts_every_module_under_the_upstream_name():
    code = ("import binlake.compat, sys; binlake.compat.install_as_pymysqlreplication();"
            "import pymysqlreplication.row_event as r, pymysqlreplication.constants.BINLOG as b;"
            "from pymysqlreplication import BinLogStreamReader;"
            "from pymysqlreplication.event import QueryEvent;"
            "assert r.__name__ == 'binlake.compat.pymysqlreplication.row_event';"
            "assert b.WRITE_ROWS_EVENT_V2 == 30;"
            "assert BinLogStreamReader.__module__.startswith('binlake.compat');"
            "print(sorted(k for k in sys.modules if k.startswith('pymysqlreplication')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    for name in ("pymysqlreplication", "pymysqlreplication.event", "pymysqlreplication.gtid",
                 "pymysqlreplication.constants.FIELD_TYPE", "pymysqlreplication.packet"):
        assert f"'{name}'" in out


def test_allowed_event_list_counts_as_upstream():
    from binlake.compat.pymysqlreplication import BinLogStreamReader
    from binlake.compat.pymysqlreplication.event import RotateEvent
    reader = BinLogStreamReader({}, server_id=1)
    assert len(reader._allowed_event_list(None, None, False)) == 25
    assert len(reader._allowed_event_list(None, None, True)) == 24
    assert len(reader._allowed_event_list([RotateEvent], None, False)) == 1


def test_gtid_intervals_and_encoding():
    sid = "57b70f4e-20d3-11e5-a393-4a63946f7eac"
    gtid = Gtid(f"{sid}:1-56") + Gtid(f"{sid}:58-59")
    assert str(gtid) == f"{sid}:1-56:58-59"
    assert (Gtid(f"{sid}:1-56") - Gtid(f"{sid}:25-26")).intervals == [(1, 25), (27, 57)]
    gset = GtidSet(f"{sid}:1-56,\n4350f323-7565-4e59-8763-4b1b83a0ce0e:1-20")
    assert str(GtidSet.decode(io.BytesIO(gset.encoded()))) == str(gset)
    assert len(gset.encoded()) == gset.encoded_length


def test_bitmap_helpers():
    assert BitCount(b"\x03\x80") == 3
    assert BitGet(b"\x00\x02", 9) and not BitGet(b"\x00\x02", 8)
