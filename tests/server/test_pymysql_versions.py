"""binlake's replica client on the lowest PyMySQL pyproject allows, beside
the one installed (the highest the range resolves to): the connection
layer uses PyMySQL members that are not its public API
(binlake.live.protocol, binlake.connection.compression), so CI reads a live
server through both ends of the range, compressed (-C) and not.

The lowest is downloaded from PyPI once (`pip download`, cached under
tests/.pymysql/, gitignored) and put first on a child interpreter's path."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pymysql
import pytest

from binlake.testing.mariadb import MariaDBServer

pytestmark = pytest.mark.server

CACHE = Path(__file__).resolve().parent.parent / ".pymysql"
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

READ = r'''
import json, sys
import pymysql, binlake
rows = {}
for compress in (False, True):
    stream = binlake.stream("127.0.0.1", int(sys.argv[1]), "root", "", stop_never=False,
                            file="binlog.000001", compress=compress)
    rows[str(compress)] = [c.after["id"] for c in stream.changes()]
print(json.dumps({"pymysql": ".".join(map(str, pymysql.VERSION[:3])), "rows": rows}))
'''


def lowest() -> str:
    """The lowest PyMySQL pyproject.toml's `server` extra allows."""
    found = re.search(r'server = \["pymysql\[rsa\]>=([0-9.]+),', PYPROJECT.read_text())
    assert found, "pyproject.toml's server extra pins pymysql>=X,<Y"
    return found.group(1)


def unpacked(version: str) -> Path:
    target = CACHE / f"pymysql-{version}"
    if not (target / "pymysql" / "__init__.py").exists():
        CACHE.mkdir(exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary", ":all:", "-d", str(CACHE), f"pymysql=={version}"],
                       check=True)
        wheel, = CACHE.glob(f"[Pp]y[Mm]y[Ss][Qq][Ll]-{version}-*.whl")
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(target)
    return target


@pytest.mark.parametrize("which", ["lowest", "installed"])
def test_a_live_server_is_read_through_both_ends_of_the_pymysql_range(mariadbd, tmp_path,
                                                                      which):
    with MariaDBServer(tmp_path / "server") as server:
        server.execute("CREATE DATABASE d")
        server.execute("CREATE TABLE d.t (id INT PRIMARY KEY)")
        for n in range(1, 6):
            server.execute(f"INSERT INTO d.t VALUES ({n})")
        env = None
        if which == "lowest":
            path = os.pathsep.join([str(unpacked(lowest())), os.environ.get("PYTHONPATH", "")])
            env = {**os.environ, "PYTHONPATH": path}
        done = subprocess.run([sys.executable, "-c", READ, str(server.port)], env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    installed = ".".join(map(str, pymysql.VERSION[:3]))
    assert found["pymysql"] == (lowest() if which == "lowest" else installed)
    assert found["rows"] == {"False": [1, 2, 3, 4, 5], "True": [1, 2, 3, 4, 5]}
