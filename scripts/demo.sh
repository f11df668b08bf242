#!/usr/bin/env bash
# The main job on the embedded default model: set-up (idempotent), then the study in one
# command: FP16 vs W8A8-FP8 vs W4A16 served, benched at concurrency 1, 4 and 8, quality,
# crossover, and the report in build/sweep/report.html (a few minutes on 2 cores; resumable).
# Extra arguments go to crosspoint sweep (see docs/sweep.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/crosspoint sweep --out build/sweep "$@"
