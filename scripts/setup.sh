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
want="$(cat pyproject.toml | sha1sum | cut -d' ' -f1) $EXTRAS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet -e ".[$EXTRAS]"
  echo "$want" > "$stamp"
fi

if [ "${1:-}" = "--server" ] && ! command -v mariadbd >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing MariaDB from Debian packages (for the server tests)..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mariadb-server mariadb-client >/dev/null
fi

# Spark's Python workers must run this same interpreter.
if ! command -v java >/dev/null 2>&1; then
  echo "note: no Java found; the Spark pipeline and its tests need Java 17" >&2
fi
