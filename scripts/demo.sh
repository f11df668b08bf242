#!/usr/bin/env bash
# The main job on the embedded default model: set-up (idempotent), then the study in one
# command: FP16 vs W8A8-FP8 vs W4A16 served, benched at concurrency 1, 4 and 8, quality,
# crossover, and the report in build/sweep/report.html (a few minutes on 2 cores; resumable).
# Extra arguments go to crosspoint sweep (see docs/sweep.md). The demo is the CPU study, so
# it passes --device cpu (the sweep's own default, auto, takes a GPU when one is visible)
# unless the arguments name a device.
# Sample size: the 9 cells start with 8 prompts each; while the two best precisions' intervals
# overlap at a level (median TPOT or output throughput), both cells get another run of 8 fresh
# prompts, within a 360 s budget for measuring (about what the grid alone took on the busy
# 2-core machine, so an idle machine spends the time the grid saves on deciding). The report's
# Recommendation and the final summary say which comparisons the budget could not decide.
# A --time-budget among the arguments replaces it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
device_args=(--device cpu)
budget_args=(--time-budget 360)
for arg in "$@"; do
  case $arg in
    --device | --device=*) device_args=() ;;
    --time-budget | --time-budget=*) budget_args=() ;;
  esac
done
exec build/crosspoint sweep --out build/sweep "${device_args[@]}" "${budget_args[@]}" "$@"
