#!/usr/bin/env bash
# Runs every test: set-up (idempotent), then the Release build's tests, then the same tests
# built with AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source scripts/lib.sh
export PATH="$VENV/bin:$PATH"

log "tests: Release build"
ctest --test-dir build --output-on-failure -j "$JOBS"

if [ "${CROSSPOINT_SKIP_SANITIZERS:-0}" != "1" ]; then
  configure_and_build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSPOINT_SANITIZE=ON -DCROSSPOINT_CUDA=OFF
  log "tests: AddressSanitizer + UBSan build"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$JOBS" -LE slow
fi
