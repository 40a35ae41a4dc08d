#!/usr/bin/env bash
# The test command: set up what the tests need, then run the whole suite.
#   scripts/test.sh [pytest args...]
# The corpus is read from ../shared/binlogs, or from $BINLAKE_CORPUS.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --server
# A silently missing native core must not pass: it is what users run.
if ! .venv/bin/python -c "import binlake._native" 2>/dev/null \
    && [ "${BINLAKE_ALLOW_PURE:-0}" != 1 ]; then
  .venv/bin/python -c "import binlake._native" || true
  echo "test: the native core (binlake._native) did not build; see the cargo output above" \
       "(BINLAKE_ALLOW_PURE=1 runs the tests on the pure-Python decoder alone)" >&2
  exit 1
fi
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
export PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest -q "$@"
fi
# One pytest worker per core (pytest-xdist); tests/conftest.py sends the Spark
# tests to one worker, and each other module whole to one. The slow sweeps run
# a rotating share (tests/sweeps.py; BINLAKE_SWEEPS=full for all; the seed is
# printed at the end).
workers=(-n "${BINLAKE_TEST_WORKERS:-auto}")
# The whole suite on the native core, then the reading tests again on the
# pure-Python reference (the differential tests compare the two everywhere else).
.venv/bin/python -m pytest -q "${workers[@]}"
echo "--- the pure-Python reference (BINLAKE_PURE=1): reading tests"
BINLAKE_PURE=1 .venv/bin/python -m pytest -q "${workers[@]}" tests/corpus tests/read/test_values.py \
  tests/test_errors.py tests/read/test_versions.py tests/read/test_large_events.py tests/read/test_scan.py
echo "--- the native core's own tests (cargo test)"
( cd rust && cargo test --quiet )
# 1 500 cases a run, their seed the day's (as the sweeps rotate): more of
# the space over a week than one fixed 4 000, in 2 minutes fewer a run.
fuzz_seed="${BINLAKE_FUZZ_SEED:-$(date -u +%Y%m%d)}"
echo "--- fuzz smoke: 1 500 mutated binlogs through every entry point on both cores" \
     "(seed $fuzz_seed; BINLAKE_FUZZ_SEED repeats it)"
PYTHONPATH=src .venv/bin/python scripts/fuzz_files.py -n 1500 --seed "$fuzz_seed" --out fuzz/found
