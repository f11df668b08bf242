#!/usr/bin/env bash
# The main job on the embedded default model: set-up (idempotent), then the study in one
# command: FP16 vs W8A8-FP8 vs W4A16 served, benched at concurrency 1, 4 and 8, quality,
# crossover, and the report in build/sweep/report.html (a few minutes on 2 cores; resumable).
# Extra arguments go to crosspoint sweep (see docs/sweep.md). The demo is the CPU study, so
# it passes --device cpu (the sweep's own default, auto, takes a GPU when one is visible)
# unless the arguments name a device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
device_args=(--device cpu)
for arg in "$@"; do
  case $arg in --device | --device=*) device_args=() ;; esac
done
exec build/crosspoint sweep --out build/sweep "${device_args[@]}" "$@"
