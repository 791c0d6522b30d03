#!/usr/bin/env bash
# Every test of the project: formatting, lints, the whole workspace test suite (unit, property,
# tshark oracle, real-frame fixtures, fuzz corpus replay, namespace integration tests,
# scenarios). Needs root for network namespaces and raw sockets.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check [$(date -u +%T)]"
cargo fmt --all -- --check

# The background lane: the fuzz smoke run and the release build of the .deb need nothing of the
# steps below and those need nothing of theirs, and the steps below leave a core idle much of
# the time (the serial end of each build, the tests waiting on sockets, timers and child
# processes). So the lane starts now and runs beside them at nice 19: it takes the CPU they
# leave, they keep theirs (decisions §31; CI times in docs/benchmarks.md). The .deb is
# installed and run after the tests (ci/deb.sh with PN_DEB), as before. The lane is its own
# session (setsid) so that an early exit of this script stops all of it.
# Both lanes' cargo create directories in the workspace's target directory. In a fresh clone
# it does not exist yet, and cargo creates a missing one through a temporary directory beside
# it and a rename: two cargos doing that at once lost the fuzz build its directory (CI run 31,
# "No such file or directory ... target/fuzzXXXXXX"). Create it before either starts.
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
mkdir -p "$TARGET_DIR"
LANE_DIR="$(mktemp -d -t pn-ci-lane.XXXXXX)"
echo "== background lane started (fuzz smoke, .deb build; log: $LANE_DIR/log) [$(date -u +%T)]"
setsid bash -c '
  set -euo pipefail
  # setsid made this a session of its own, and with the kernel'"'"'s autogroup scheduling
  # (sched_autogroup_enabled) a session is a scheduling group of its own that competes with the
  # main steps as an equal, whatever the nice value of its processes: give the group itself
  # nice 19 (where there is no autogroup, the nice below does the work).
  echo 19 >/proc/self/autogroup 2>/dev/null || true
  if [ -x ci/fuzz-smoke.sh ]; then
    echo "== fuzz smoke run [$(date -u +%T)]"
    # The short run: every decoder target for 2 s (the long runs are documented in
    # docs/protocol-notes/fuzz-scapy.md). Two targets at a time (libFuzzer is single-threaded).
    FUZZ_JOBS=2 FUZZ_DIR=protocol/fuzz nice -n 19 ci/fuzz-smoke.sh 2
    # The device parsers: configuration XML, settings JSON, every HTTP POST body, Connect, the
    # farm plant file.
    FUZZ_JOBS=2 FUZZ_DIR=device/fuzz nice -n 19 ci/fuzz-smoke.sh 2
  fi
  echo "== the .deb: release build [$(date -u +%T)]"
  nice -n 19 ci/deb.sh build "$1/deb-path"
' lane "$LANE_DIR" >"$LANE_DIR/log" 2>&1 &
LANE_PID=$!
trap 'kill -- -$LANE_PID 2>/dev/null || true' EXIT

# The daemon's test hooks (simulated data plane, fault injection) are a cargo feature that no
# release build has; the tests start binaries built with it.
HOOKS="--features pn-device/test-hooks"

echo "== cargo clippy -D warnings [$(date -u +%T)]"
cargo clippy --workspace --all-targets $HOOKS -- -D warnings
# That the release daemon builds without the test hooks is proven by ci/deb.sh at the end (the
# .deb is a release build with default features), so no separate `cargo check` of it here.

echo "== build (binaries the integration tests start) [$(date -u +%T)]"
cargo build --workspace --bins $HOOKS

# The tests that start the daemon take the binary just built instead of running
# `cargo build -p pn-device` themselves (pn_testkit::daemon::device_bin): under nextest every
# test is a process of its own, and in a fresh clone the first of those builds (its own feature
# set) held every other test on cargo's lock for about 35 s.
PN_DEVICE_BIN="$TARGET_DIR/debug/pn-device"
export PN_DEVICE_BIN
[ -x "$PN_DEVICE_BIN" ] || { echo "no daemon binary at $PN_DEVICE_BIN"; exit 1; }

echo "== the workspace's tests (cargo nextest) [$(date -u +%T)]"
# One pool of test processes over all the test binaries (.config/nextest.toml says why and
# which tests are grouped or started first); the benches and doctests run below with cargo test
# (nextest runs neither).
cargo nextest run --workspace $HOOKS --lib --bins --tests --examples
echo "== benches in test mode (each benchmark runs once) [$(date -u +%T)]"
# criterion's harness rejects libtest's flags, so no --test-threads here.
cargo test --workspace $HOOKS --no-fail-fast --benches
cargo test --workspace $HOOKS --doc

echo "== background lane (fuzz smoke, .deb build): waiting for it [$(date -u +%T)]"
lane_status=0
wait "$LANE_PID" || lane_status=$?
trap - EXIT
cat "$LANE_DIR/log"
[ "$lane_status" = 0 ] || { echo "background lane FAILED (exit $lane_status)"; exit 1; }

# Last: the package built in the lane, installed and run as its unit runs it.
echo "== the .deb: install, check-config and the installed daemon as its unit runs it, purge [$(date -u +%T)]"
PN_DEB="$(cat "$LANE_DIR/deb-path")" ci/deb.sh
rm -rf "$LANE_DIR"
