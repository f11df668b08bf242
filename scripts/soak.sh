#!/usr/bin/env bash
# Soak of `crosspoint serve` on the CPU with the default model: `crosspoint bench serve`
# rounds for --minutes (default 10) mixed with misbehaving clients (mid-stream disconnects,
# malformed JSON, oversize bodies, slow headers), the server's RSS, open fds and threads
# sampled every few seconds. Fails when the server dies, a request hangs, RSS grows past the
# bound after warm-up, or fds/threads leak; writes a JSON result (scripts/soak.py says what).
#
# usage: scripts/soak.sh [--minutes M] [--result FILE] [other scripts/soak.py options]
#   default result: benchmarks/results/cpu_<date>_soak.json
# CROSSPOINT_JOBS limits the build's parallelism.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exec python3 scripts/soak.py --help ;; esac
args=("$@")
has_result=0
for arg in "${args[@]}"; do [ "$arg" = "--result" ] && has_result=1; done
[ "$has_result" -eq 1 ] || args+=(--result "benchmarks/results/cpu_$(date -u +%Y-%m-%d)_soak.json")

configure_and_build build -DCMAKE_BUILD_TYPE=Release -DCROSSPOINT_CUDA=OFF -- crosspoint
[ -d "$CACHE/models" ] || die "no model cache: run scripts/setup.sh first"
exec python3 scripts/soak.py --crosspoint build/crosspoint "${args[@]}"
