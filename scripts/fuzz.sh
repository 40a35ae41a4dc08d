#!/usr/bin/env bash
# Every fuzzer of fuzz/README.md, one after the other, each for a time budget:
#   scripts/fuzz.sh [SECONDS_EACH]         (default 600)
# 1. libFuzzer over the native core (needs a nightly toolchain and cargo-fuzz),
# 2. atheris over the pure-Python reference, 3. atheris over the native core
# through Python (the values and Arrow sinks), 4. the whole-file fuzzer (every
# entry point, both cores, a clock and a meter). Each input is held to the
# budget of 1 s per MB + 50 ms of CPU per entry point; findings stop a fuzzer
# and are left where it says (crash-* files, fuzz/found/). New corpus entries go
# to fuzz/work/ (ignored by git); `-merge=1` into rust/fuzz/corpus/binlog keeps them.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
work=fuzz/work
mkdir -p "$work/native" "$work/pure" "$work/values" "$work/seeds"
status=0
export PYTHONPATH=src
# the seeds: the heads of the corpus files (what the whole-file fuzzer mutates)
.venv/bin/python scripts/fuzz_files.py --write-seeds "$work/seeds"
limits=(-max_len=16384 -timeout=1 -print_final_stats=1 "-max_total_time=$seconds")
if cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "--- libFuzzer, native core"
  (cd rust && cargo +nightly fuzz run binlog "../$work/native" fuzz/corpus/binlog -- \
     "${limits[@]}" -malloc_limit_mb=100) || status=1
else
  echo "--- libFuzzer skipped: needs 'rustup toolchain install nightly' and 'cargo install cargo-fuzz'"
fi
if .venv/bin/python -c "import atheris" 2>/dev/null; then
  echo "--- atheris, pure-Python reference"
  .venv/bin/python fuzz/atheris_reader.py "$work/pure" "$work/seeds" "${limits[@]}" \
    -rss_limit_mb=400 || status=1
  echo "--- atheris, native core through Python"
  .venv/bin/python fuzz/atheris_reader.py --native "$work/values" "$work/seeds" "${limits[@]}" \
    -rss_limit_mb=400 || status=1
else
  echo "--- atheris skipped: needs .venv/bin/pip install -e '.[fuzz]'"
fi
echo "--- whole-file fuzzer, every entry point on both cores"
cases=$(( seconds * 60 ))  # about 70 cases a second
.venv/bin/python scripts/fuzz_files.py -n "$cases" --seed "$RANDOM" || status=1
exit $status
