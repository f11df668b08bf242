#!/usr/bin/env bash
# Soak of `crosspoint serve` on the CPU with the default model: two identical rounds of 1,000
# concurrent streams (30 % closed mid-stream by the client, greedy and sampled, completions and
# chat) for --minutes each (default 10) against a KV cache small enough to preempt, beside
# misbehaving clients and greedy control requests; every counter reconciled against the
# server's /metrics, RSS / fds / threads checked round over round (scripts/soak.py says what).
#
# usage: scripts/soak.sh [--minutes M] [--streams N] [--result FILE] [other scripts/soak.py options]
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
