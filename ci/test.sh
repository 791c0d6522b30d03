#!/usr/bin/env bash
# Every test of the project: formatting, lints, the whole workspace test suite (unit, property,
# tshark oracle, real-frame fixtures, fuzz corpus replay, namespace integration tests,
# scenarios). Needs root for network namespaces and raw sockets.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

# The daemon's test hooks (simulated data plane, fault injection) are a cargo feature that no
# release build has; the tests start binaries built with it.
HOOKS="--features pn-device/test-hooks"

echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets $HOOKS -- -D warnings
echo "== the release daemon builds without the test hooks"
cargo check -p pn-device --bins

echo "== build (binaries the integration tests start)"
cargo build --workspace --bins $HOOKS

echo "== cargo test --workspace"
# Most integration tests wait on the network, not the CPU: more test threads than cores.
# `--test-threads` is a libtest flag: criterion's bench harness rejects it, so the benches run
# in their own step (criterion's test mode runs every benchmark once). --no-fail-fast: one
# failing test binary must not hide the results of the others.
cargo test --workspace $HOOKS --no-fail-fast --lib --bins --tests --examples -- --test-threads 4
echo "== benches in test mode (each benchmark runs once)"
cargo test --workspace $HOOKS --no-fail-fast --benches
cargo test --workspace $HOOKS --doc

if [ -x ci/fuzz-smoke.sh ]; then
  echo "== fuzz smoke run"
  # The short run: every decoder target for a few seconds (the long runs are documented in
  # docs/protocol-notes/fuzz-scapy.md).
  FUZZ_DIR=protocol/fuzz ci/fuzz-smoke.sh 3
  # The device's parsers: configuration XML, settings JSON, every HTTP POST body, Connect.
  FUZZ_DIR=device/fuzz ci/fuzz-smoke.sh 3
fi

# Last: it builds the release binaries (minutes) and needs nothing the tests above leave behind.
echo "== the .deb: build, install, check-config and the installed daemon as its unit runs it, purge"
ci/deb.sh
