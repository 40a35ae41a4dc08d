#!/usr/bin/env bash
# The main job on its embedded defaults: the Spark pipeline on a local Spark over
# the sample binlogs shipped in the package; results land in ./out/. (The sample holds
# zero dates, which no Spark date can: a lake of the sample keeps its DATE/DATETIME/
# TIMESTAMP columns as MySQL's text unless told otherwise.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/binlake pipeline --sample --out out "$@"
