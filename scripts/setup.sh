#!/usr/bin/env bash
# Set up a fresh machine for binlake: a virtual environment with the package and
# its extras, and (with --server) MariaDB from Debian for the server tests.
# Idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${BINLAKE_VENV:-.venv}
EXTRAS=${BINLAKE_EXTRAS:-test,spark}

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
stamp="$VENV/.binlake-installed"
want="$(cat pyproject.toml setup.py | sha1sum | cut -d' ' -f1) $EXTRAS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet -e ".[$EXTRAS]"
  echo "$want" > "$stamp"
fi

# The native core (rust/, release build; the install above built it too):
# rebuilt when its sources change.
# Without cargo the package still works on the pure-Python decoder.
native_stamp="$VENV/.binlake-native"
native_want="$(find rust/src rust/Cargo.toml rust/Cargo.lock setup.py -type f 2>/dev/null \
               | sort | xargs cat | sha1sum | cut -d' ' -f1)"
if command -v cargo >/dev/null 2>&1; then
  if [ ! -f "$native_stamp" ] || [ "$(cat "$native_stamp")" != "$native_want" ] \
      || ! "$VENV/bin/python" -c "import binlake._native" 2>/dev/null; then
    echo "building the native core (cargo, release) ..."
    "$VENV/bin/pip" install --quiet --no-deps -e .
    echo "$native_want" > "$native_stamp"
  fi
else
  echo "setup: cargo not found: the native core is not built (pure-Python decoder only)" >&2
fi

# Bytecode for the package's modules: with PYTHONDONTWRITEBYTECODE set (as in
# some CI and sandbox environments) an editable install is otherwise compiled
# from source by every process, some 50 ms of each `binlake` run. Stale files
# are simply recompiled in memory, so this never changes what runs.
"$VENV/bin/python" -m compileall -q src/binlake >/dev/null || true

# Debian packages: MariaDB for the server tests (--server), Java for Spark.
packages=""
if [ "${1:-}" = "--server" ] && ! command -v mariadbd >/dev/null 2>&1 \
    && [ ! -x /usr/sbin/mariadbd ]; then
  packages="mariadb-server mariadb-client"
fi
command -v java >/dev/null 2>&1 || packages="$packages openjdk-17-jre-headless"
if [ -n "$packages" ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing from Debian packages:$packages ..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $packages >/dev/null
fi
