"""python-mysql-replication's own test suite, pinned, run against a private MariaDB.

Strategy: the suite is the test files of the mysql-replication 1.0.17 wheel from
PyPI (`pip download --no-deps`, cached in tests/compat/.upstream/, gitignored),
extracted unchanged. It imports itself as `pymysqlreplication.tests`: a
conftest.py written beside it puts the extracted folder on the package's
`__path__` (after `binlake.compat.install_as_pymysqlreplication()` for the
drop-in, or over the real package for the baseline), and the suite's
config.json, which the wheel does not ship, is written to name the private
server. The suite runs in a subprocess so that `pymysqlreplication` never
leaks into the caller's interpreter.

    python tests/compat/upstream.py [--real PYTHON] [-k EXPR]   # a run by hand
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

VERSION = "1.0.17"
HERE = Path(__file__).resolve().parent
CACHE = HERE / ".upstream"
#: The suite's options for MariaDB (its config.json key; `--db` picks it)
DB_KEY = "mariadb-10"

#: What the suite's CI gives the server beyond binlake's private-server defaults
SERVER_EXTRA: dict = {}

_CONFTEST = '''\
"""Written by tests/compat/upstream.py: the suite imports itself as
pymysqlreplication.tests; this makes that the extracted copy beside it."""
import os
import sys

_SUITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pymysqlreplication")
if os.environ.get("BINLAKE_PMR_DROPIN") == "1":
    import binlake.compat
    binlake.compat.install_as_pymysqlreplication()
import pymysqlreplication  # noqa: E402

pymysqlreplication.__path__.insert(0, _SUITE)
'''


def wheel() -> Path:
    """The pinned wheel, downloaded once into the cache."""
    CACHE.mkdir(exist_ok=True)
    found = sorted(CACHE.glob(f"mysql_replication-{VERSION}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary", ":all:", "-d", str(CACHE),
                        f"mysql-replication=={VERSION}"], check=True)
        found = sorted(CACHE.glob(f"mysql_replication-{VERSION}-*.whl"))
    return found[0]


def suite_dir() -> Path:
    """The extracted suite: <dir>/pymysqlreplication/tests/*.py, and our conftest."""
    root = CACHE / f"suite-{VERSION}"
    tests = root / "pymysqlreplication" / "tests"
    if not (tests / "test_basic.py").exists():
        with zipfile.ZipFile(wheel()) as zf:
            for name in zf.namelist():
                if name.startswith("pymysqlreplication/tests/"):
                    zf.extract(name, root)
    (root / "conftest.py").write_text(_CONFTEST)
    return root


def write_config(root: Path, port: int, host: str = "127.0.0.1") -> None:
    config = {DB_KEY: {"host": host, "user": "root", "passwd": "", "port": port,
                       "use_unicode": True, "charset": "utf8",
                       "db": "pymysqlreplication_test"}}
    path = root / "pymysqlreplication" / "tests" / "config.json"
    path.write_text(json.dumps(config, indent=2))


def start_server(workdir: Path):
    """A private MariaDB as the suite expects it: row binlogs, FULL metadata."""
    from binlake.testing.mariadb import MariaDBServer
    server = MariaDBServer(workdir, extra=SERVER_EXTRA)
    server.start()
    return server


def run(port: int, python: str | None = None, dropin: bool = True, extra_args=(),
        timeout: float = 900) -> dict:
    """Run the suite; {"passed": [...], "failed": [...], "skipped": [...], "output": str}."""
    root = suite_dir()
    write_config(root, port)
    env = dict(os.environ, BINLAKE_PMR_DROPIN="1" if dropin else "0")
    env.pop("PYTHONPATH", None)
    command = [python or sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
               "-q", "--db", DB_KEY, "-o", "addopts=", "--rootdir", str(root), "--confcutdir", str(root),
               "pymysqlreplication/tests", *extra_args]
    result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                            timeout=timeout)
    return {**outcomes(result.stdout), "output": result.stdout + result.stderr,
            "returncode": result.returncode}


_OUTCOME = re.compile(r"^(PASSED|FAILED|SKIPPED|ERROR) (\S+)", re.M)
_SKIP = re.compile(r"^SKIPPED \[\d+\] (\S+?):(\d+): ", re.M)


def outcomes(text: str) -> dict:
    """Test ids by outcome, from pytest's -rA summary."""
    found: dict = {"passed": [], "failed": [], "skipped": [], "error": []}
    for word, test in _OUTCOME.findall(text):
        if word == "SKIPPED":
            continue
        found[word.lower() if word != "ERROR" else "error"].append(test)
    found["skipped"] = [f"{path}:{line}" for path, line in _SKIP.findall(text)]
    return found


def main(argv=None) -> int:
    import argparse
    import tempfile
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", metavar="PYTHON",
                        help="run on real mysql-replication installed in this interpreter")
    parser.add_argument("--port", type=int, help="an already running server")
    parser.add_argument("rest", nargs="*", help="more pytest arguments")
    args = parser.parse_args(argv)
    server = None
    with tempfile.TemporaryDirectory(prefix="pmr-suite-") as work:
        port = args.port
        if port is None:
            server = start_server(Path(work))
            port = server.port
        try:
            result = run(port, python=args.real, dropin=args.real is None, extra_args=args.rest)
        finally:
            if server is not None:
                server.stop()
    print(result["output"])
    print({k: len(v) for k, v in result.items() if isinstance(v, list)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
