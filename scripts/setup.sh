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
