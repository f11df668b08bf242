#!/usr/bin/env bash
# Runs every test: set-up (idempotent), then
#   1. the Release build's tests (ctest),
#   2. the threaded test binaries (engine, scheduler, server, bench, sweep) again in shuffled
#      repeats, to catch order- and timing-dependent failures (CROSSPOINT_TEST_REPEATS, default 3),
#   3. the same tests built with AddressSanitizer and UndefinedBehaviorSanitizer,
#   4. the threaded test binaries built with ThreadSanitizer,
#   5. every libFuzzer target of tests/fuzz for 20 s on its committed corpus (scripts/fuzz.sh):
#      any crash, leak, UB report or timeout fails the run.
# CROSSPOINT_SKIP_SANITIZERS=1 stops after step 2; CROSSPOINT_SKIP_FUZZ=1 skips step 5.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/lib.sh
export PATH="$VENV/bin:$PATH"
# Set-up has just fetched every asset: a test that cannot find one fails and names it.
unset CROSSPOINT_ASSETS_OPTIONAL

log "tests: Release build"
ctest --test-dir build --output-on-failure -j "$JOBS"

repeats="${CROSSPOINT_TEST_REPEATS:-3}"
log "tests: threaded binaries, $repeats shuffled repeats"
run_threaded_tests build "--gtest_repeat=$repeats --gtest_shuffle"

if [ "${CROSSPOINT_SKIP_SANITIZERS:-0}" != "1" ]; then
  configure_and_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSPOINT_SANITIZE=ON -DCROSSPOINT_CUDA=OFF
  log "tests: AddressSanitizer + UBSan build"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" -LE slow

  configure_and_build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSPOINT_TSAN=ON -DCROSSPOINT_CUDA=OFF \
    -- "${THREADED_TEST_BINARIES[@]}" serving_toy_server crosspoint
  log "tests: ThreadSanitizer build of the threaded binaries"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" run_threaded_tests build-tsan ""

  if [ "${CROSSPOINT_SKIP_FUZZ:-0}" != "1" ]; then
    log "tests: fuzz targets, 20 s each"
    scripts/fuzz.sh --seconds 20
  fi
fi
log "tests: all passed"
