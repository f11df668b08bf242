#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, CPU only) into build-fuzz/
# and runs each on a copy of its seed corpus tests/fuzz/corpus/<target>/, then prints per
# target the executions, seconds, coverage and findings (crash, leak, UB, timeout, OOM).
#
# usage: scripts/fuzz.sh [--runs N | --seconds S] [--timeout S] [--rss-limit-mb MB] [TARGET...]
#   --runs N          inputs per target (libFuzzer -runs=N)
#   --seconds S       time per target (-max_total_time=S; the default, 60)
#   --timeout S       one input running longer is a finding (-timeout, default 10)
#   --rss-limit-mb MB memory a target may use, and the largest single allocation (default 2048)
#   TARGET...         fuzz_safetensors, fuzz_gguf, ... (default: every tests/fuzz/fuzz_*.cc)
# Each run works in build-fuzz/fuzz-runs/<target>/ (corpus/, log.txt, and the input of any
# finding as crash-*, leak-*, timeout-* or oom-*); the committed corpus is never changed.
# Exits 1 when any target found something. CROSSPOINT_JOBS limits the build's parallelism and
# how many targets run at once (one core each).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

runs="" seconds=60 timeout=10 rss_limit_mb=2048 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; seconds=""; shift 2 ;;
    --seconds) seconds="$2"; runs=""; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --rss-limit-mb) rss_limit_mb="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option $1" ;;
    *) targets+=("$1"); shift ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  for source in tests/fuzz/fuzz_*.cc; do targets+=("$(basename "$source" .cc)"); done
fi
for target in "${targets[@]}"; do
  [ -f "tests/fuzz/$target.cc" ] || die "no fuzz target '$target' (tests/fuzz/fuzz_*.cc lists them)"
done

install_debian_packages
configure_and_build build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCROSSPOINT_CUDA=OFF -DCROSSPOINT_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -- "${targets[@]}"

# The targets write each input to a temporary file: in memory when /dev/shm is there.
[ -z "${TMPDIR:-}" ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm
limit_args=(-max_total_time="$seconds")
[ -n "$runs" ] && limit_args=(-runs="$runs")
# fuzz_one TARGET: one target's run on a copy of its corpus; writes its summary line, and
# "failed" when it found something, into build-fuzz/fuzz-runs/TARGET/.
fuzz_one() {
  local target="$1" work="build-fuzz/fuzz-runs/$1" start_ms status=0 elapsed_ms execs rate coverage findings
  rm -rf "$work" && mkdir -p "$work/corpus"
  cp tests/fuzz/corpus/"$target"/* "$work/corpus/"
  log "fuzzing $target (${runs:+$runs runs}${seconds:+$seconds s})"
  start_ms=$(($(date +%s%N) / 1000000))
  # detect_leaks: libFuzzer's own leak check after each input that allocated more than it freed.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "build-fuzz/tests/fuzz/$target" "${limit_args[@]}" -timeout="$timeout" -rss_limit_mb="$rss_limit_mb" \
    -artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" > "$work/log.txt" 2>&1 || status=$?
  elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log.txt" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log.txt" | tail -n 1)
  coverage=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$work/log.txt" | tail -n 1 || true)
  findings=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) |
    wc -l)
  if [ "$status" -ne 0 ] || [ "$findings" -ne 0 ]; then
    tail -n 40 "$work/log.txt" >&2
    log "$target: FOUND SOMETHING (exit $status): $(ls "$work" | grep -E '^(crash|leak|timeout|oom)-' | tr '\n' ' ')"
    touch "$work/failed"
  fi
  printf '%-24s %12s %6d.%d %10s  %-22s %s\n' "$target" "${execs:-?}" $((elapsed_ms / 1000)) \
    $((elapsed_ms % 1000 / 100)) "${rate:-?}" "${coverage:-?}" "$findings" >"$work/summary.txt"
}

# Each fuzzer is one process on one core: $JOBS of them at a time.
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  fuzz_one "$target" &
done
wait
summary=() failed=0
for target in "${targets[@]}"; do
  summary+=("$(cat "build-fuzz/fuzz-runs/$target/summary.txt" 2>/dev/null || echo "$target: no summary")")
  [ -e "build-fuzz/fuzz-runs/$target/failed" ] || [ ! -s "build-fuzz/fuzz-runs/$target/summary.txt" ] && failed=1
done

printf '\n%-24s %12s %8s %10s  %-22s %s\n' target executions seconds exec/s coverage findings
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ] || die "fuzzing found crashes, leaks, UB or timeouts: inputs in build-fuzz/fuzz-runs/<target>/"
log "fuzzing: no findings"
