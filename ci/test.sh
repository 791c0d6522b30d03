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
# That the release daemon builds without the test hooks is proven by ci/deb.sh at the end (the
# .deb is a release build with default features), so no separate `cargo check` of it here.

echo "== build (binaries the integration tests start)"
cargo build --workspace --bins $HOOKS

# The tests that start the daemon take the binary just built instead of running
# `cargo build -p pn-device` themselves (pn_testkit::daemon::device_bin): under nextest every
# test is a process of its own, and in a fresh clone the first of those builds (its own feature
# set) held every other test on cargo's lock for about 35 s.
PN_DEVICE_BIN="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug/pn-device"
export PN_DEVICE_BIN
[ -x "$PN_DEVICE_BIN" ] || { echo "no daemon binary at $PN_DEVICE_BIN"; exit 1; }

echo "== the workspace's tests (cargo nextest)"
# One pool of test processes over all the test binaries (.config/nextest.toml says why and
# which tests are grouped or started first); the benches and doctests run below with cargo test
# (nextest runs neither).
cargo nextest run --workspace $HOOKS --lib --bins --tests --examples
echo "== benches in test mode (each benchmark runs once)"
# criterion's harness rejects libtest's flags, so no --test-threads here.
cargo test --workspace $HOOKS --no-fail-fast --benches
cargo test --workspace $HOOKS --doc

if [ -x ci/fuzz-smoke.sh ]; then
  echo "== fuzz smoke run"
  # The short run: every decoder target for a few seconds (the long runs are documented in
  # docs/protocol-notes/fuzz-scapy.md).
  # Two targets at a time: one per core (each libFuzzer run is single-threaded).
  FUZZ_JOBS=2 FUZZ_DIR=protocol/fuzz ci/fuzz-smoke.sh 3
  # The device's parsers: configuration XML, settings JSON, every HTTP POST body, Connect.
  FUZZ_JOBS=2 FUZZ_DIR=device/fuzz ci/fuzz-smoke.sh 3
fi

# Last: it builds the release binaries (minutes) and needs nothing the tests above leave behind.
echo "== the .deb: build, install, check-config and the installed daemon as its unit runs it, purge"
ci/deb.sh
