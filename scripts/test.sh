#!/usr/bin/env bash
# Runs every test: set-up (idempotent), then
#   1. the Release build's tests (ctest),
#   2. the threaded test binaries (engine, scheduler, server, bench, sweep) again in shuffled
#      repeats, to catch order- and timing-dependent failures (CROSSPOINT_TEST_REPEATS, default 3),
#   3. the same tests built with AddressSanitizer and UndefinedBehaviorSanitizer (the tests
#      labelled slow, end-to-end runs of the real model, run in the Release pass only),
#   4. the threaded test binaries built with ThreadSanitizer,
#   5. every libFuzzer target of tests/fuzz for 20 s on its committed corpus (scripts/fuzz.sh):
#      any crash, leak, UB report or timeout fails the run.
# Each stage logs its seconds (docs/testing.md, "Where the minutes go").
# CROSSPOINT_SKIP_SANITIZERS=1 stops after step 2; CROSSPOINT_SKIP_FUZZ=1 skips step 5.
#
#   scripts/test.sh --quick   the inner loop: an incremental Release build of the test binaries
#                             whose code changed since their last build, then those binaries
#                             alone (GoogleTest; no sanitizers, no Python checks). The first
#                             run sets up and builds everything.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "scripts/test.sh: unknown option $1 (--quick, --help)" >&2; exit 2 ;;
esac
source scripts/lib.sh
export PATH="$VENV/bin:$PATH"

if [ "$quick" = 1 ]; then
  [ -f build/build.ninja ] || scripts/setup.sh
  # The stale test binaries are those the incremental build relinks: their code or a
  # library's changed. (A dry run cannot tell: with CMake's globs it stops at "Re-running CMake".)
  mapfile -t binaries < <(ninja -C build -t targets all | sed -n 's/^\(tests\/[A-Za-z0-9_/]*test_[A-Za-z0-9_]*\): CXX_EXECUTABLE_LINKER.*/\1/p' | sort -u)
  link_time() { stat -c %y "build/$1" 2>/dev/null || echo missing; }
  declare -A before
  targets=()
  for binary in "${binaries[@]}"; do
    before[$binary]=$(link_time "$binary")
    targets+=("$(basename "$binary")")
  done
  cmake --build build -j "$JOBS" --target crosspoint "${targets[@]}" || die "build failed"
  stale=()
  for binary in "${binaries[@]}"; do
    if [ "$(link_time "$binary")" != "${before[$binary]}" ]; then stale+=("$binary"); fi
  done
  if [ ${#stale[@]} -eq 0 ]; then
    log "quick: every test binary is up to date with the sources; nothing to run (scripts/test.sh runs everything)"
    exit 0
  fi
  log "quick: running the relinked ${stale[*]}"
  for binary in "${stale[@]}"; do
    log "  build/$binary"
    "build/$binary" --gtest_brief=1 || die "build/$binary failed"
  done
  log "quick: ${#stale[@]} test binaries passed"
  exit 0
fi

scripts/setup.sh
# Set-up has just fetched every asset: a test that cannot find one fails and names it.
unset CROSSPOINT_ASSETS_OPTIONAL

stage "tests: Release ctest" ctest --test-dir build --output-on-failure -j "$JOBS"

repeats="${CROSSPOINT_TEST_REPEATS:-3}"
log "tests: threaded binaries, $repeats shuffled repeats"
stage "tests: $repeats shuffled repeats" run_threaded_tests build "--gtest_repeat=$repeats --gtest_shuffle"

if [ "${CROSSPOINT_SKIP_SANITIZERS:-0}" != "1" ]; then
  stage "ASan/UBSan build" configure_and_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSPOINT_SANITIZE=ON \
    -DCROSSPOINT_CUDA=OFF
  log "tests: AddressSanitizer + UBSan build"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    stage "ASan/UBSan ctest" ctest --test-dir build-asan --output-on-failure -j "$JOBS" -LE slow

  stage "TSan build" configure_and_build build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSPOINT_TSAN=ON \
    -DCROSSPOINT_CUDA=OFF -- "${THREADED_TEST_BINARIES[@]}" serving_toy_server crosspoint
  log "tests: ThreadSanitizer build of the threaded binaries"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" stage "TSan tests" run_threaded_tests build-tsan ""

  if [ "${CROSSPOINT_SKIP_FUZZ:-0}" != "1" ]; then
    log "tests: fuzz targets, 20 s each"
    stage "fuzz: build and 20 s per target" scripts/fuzz.sh --seconds 20
  fi
fi
log "tests: all passed"
