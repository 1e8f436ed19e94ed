#!/usr/bin/env bash
# Runs one fuzz target for a given time: fuzz/run.sh frame_decode|unseal|sealed_inputs|mpc_message|psi_message SECONDS
# Corpus in fuzz/corpus/<target> (git-ignored), crashes in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
target="$1"; seconds="${2:-120}"
./build.sh
host="$(rustc -vV | sed -n 's/^host: //p')"
bin="${CARGO_TARGET_DIR:-target}/$host/release/$target"
mkdir -p "corpus/$target" "artifacts/$target"
"$bin" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="artifacts/$target/" "corpus/$target"
