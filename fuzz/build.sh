#!/usr/bin/env bash
# Builds the fuzz targets with libFuzzer's coverage instrumentation on the STABLE
# toolchain (no cargo-fuzz, no nightly): the sancov pass and its options are stable -C
# flags; only AddressSanitizer would need nightly, and vtwin-net forbids unsafe code.
# The flags apply to the target only (--target), not to build scripts. RUSTFLAGS replaces
# the repository's .cargo/config.toml, so the IFMA cfg of curve25519-dalek is repeated here.
# Binaries: ${CARGO_TARGET_DIR:-fuzz/target}/<host>/release/{frame_decode,unseal,sealed_inputs,mpc_message,psi_message}
set -euo pipefail
cd "$(dirname "$0")"
host="$(rustc -vV | sed -n 's/^host: //p')"
ifma=""
case "$host" in x86_64-*) ifma='--cfg curve25519_dalek_backend="avx512"' ;; esac
RUSTFLAGS="-Cpasses=sancov-module \
 -Cllvm-args=-sanitizer-coverage-level=4 \
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
 -Cllvm-args=-sanitizer-coverage-pc-table \
 -Cllvm-args=-sanitizer-coverage-trace-compares \
 --cfg fuzzing -Cdebug-assertions -Coverflow-checks $ifma" \
  cargo build --release --bins --target "$host"
