#!/usr/bin/env bash
# Rebuild the native core in place (release) for a quick edit-test loop:
# cargo builds rust/, and the extension is copied next to the Python package.
# `scripts/setup.sh` does the same through pip; this skips pip's overhead.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release --features python --manifest-path rust/Cargo.toml
target="${CARGO_TARGET_DIR:-rust/target}/release/libbinlake_native.so"
suffix="$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
# copy then rename: overwriting a loaded extension in place crashes the processes using it
cp "$target" "src/binlake/_native$suffix.tmp"
mv -f "src/binlake/_native$suffix.tmp" "src/binlake/_native$suffix"
