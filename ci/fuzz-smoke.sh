#!/usr/bin/env bash
# Short fuzzing run of every cargo-fuzz target (the "short run in CI"): first the pn-protocol
# decoders (protocol/fuzz), then the pn-device parsers (device/fuzz).
#
# Usage: ci/fuzz-smoke.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET defaults to 20. TARGETs default to every target of every project;
#   named TARGETs are looked up in FUZZ_DIR (default protocol/fuzz).
# Env:  FUZZ_DIR        one cargo-fuzz project to run (default: protocol/fuzz and device/fuzz)
#       FUZZ_KEEP_GOING=1 run the remaining targets after a failing one
#       FUZZ_JOBS       targets run at a time (default 1; more than 1 always runs every target)
#       FUZZ_LOG_DIR    where per-target libFuzzer logs go (default: a temp dir, printed)
#       FUZZ_WORK_DIR   where new corpus entries go (default: a temp dir); the committed seed
#                       corpus <project>/corpus/<target> is only read, never written.
# Needs a stable toolchain only: RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its nightly flags.
# Exits non-zero when a target crashes, leaks or times out (the artifact path is printed).
set -euo pipefail

secs="${1:-20}"
jobs="${FUZZ_JOBS:-1}"
shift || true
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz missing: installing it"
    cargo install cargo-fuzz --locked || cargo install cargo-fuzz
fi

if [ -n "${FUZZ_DIR:-}" ] || [ "$#" -gt 0 ]; then
    projects=("${FUZZ_DIR:-$root/protocol/fuzz}")
else
    projects=("$root/protocol/fuzz" "$root/device/fuzz")
fi
# -a: debug assertions and overflow checks on (the decoders must not overflow either).
# -s none: no AddressSanitizer. pn-protocol is `#![forbid(unsafe_code)]` and the device-side
# parsers under test (api::body, the configuration and settings, the plant file) have no unsafe
# code, so ASan has nothing of ours to watch; without it the builds take about a third less
# time (device/fuzz cold: 94 s against 132 s) and each second of fuzzing runs more inputs.
# Panics, overflows, timeouts and the RSS limit are still caught. FUZZ_SANITIZER=address
# brings it back (the long runs of docs/protocol-notes/fuzz-scapy.md use it).
# One target directory for both projects, so libFuzzer and the shared dependencies build once.
build_flags="-a -s ${FUZZ_SANITIZER:-none} --target-dir ${FUZZ_TARGET_DIR:-$root/target/fuzz}"
log_dir="${FUZZ_LOG_DIR:-$(mktemp -d -t pn-fuzz-logs.XXXXXX)}"
work_dir="${FUZZ_WORK_DIR:-$(mktemp -d -t pn-fuzz-work.XXXXXX)}"
mkdir -p "$log_dir" "$work_dir"
echo "logs: $log_dir"

# One target for $secs seconds in the current project; prints one line, and on a failure the
# lines of its log that say why.
run_one() {
    local t="$1" start end res runs cov
    mkdir -p "$work_dir/$t" "corpus/$t"
    start=$(date +%s)
    if cargo fuzz run $build_flags "$t" "$work_dir/$t" "corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$log_dir/$t.log" 2>&1; then
        res=ok
    else
        res=FAILED
    fi
    end=$(date +%s)
    runs=$(grep -Eo '^Done [0-9]+ runs in [0-9]+ second' "$log_dir/$t.log" | tail -1 || true)
    cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log_dir/$t.log" | tail -1 || true)
    echo "$t: $res, $((end - start)) s wall; $runs; $cov"
    if [ "$res" = FAILED ]; then
        grep -E 'panicked at|ERROR: libFuzzer|Test unit written to|SUMMARY' "$log_dir/$t.log" \
            | head -20 || true
        return 1
    fi
}
export -f run_one

status=0
for project in "${projects[@]}"; do
    cd "$project"
    if [ "$#" -gt 0 ]; then
        targets=("$@")
    else
        mapfile -t targets < <(cargo fuzz list)
    fi
    cargo fuzz build $build_flags
    export secs log_dir work_dir build_flags
    if [ "$jobs" -gt 1 ]; then
        # Several targets at a time (one libFuzzer process each, single-threaded): every target
        # runs, and the exit status says whether any failed.
        printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$1"' _ {} \
            || status=1
    else
        for t in "${targets[@]}"; do
            if ! run_one "$t"; then
                status=1
                if [ -z "${FUZZ_KEEP_GOING:-}" ]; then
                    exit "$status"
                fi
            fi
        done
    fi
done
exit "$status"
