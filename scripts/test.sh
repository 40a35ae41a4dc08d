#!/usr/bin/env bash
# The test command: set up what the tests need, then run the whole suite.
#   scripts/test.sh [pytest args...]
# The corpus is read from ../shared/binlogs, or from $BINLAKE_CORPUS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --server
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/python -m pytest -q "$@"
