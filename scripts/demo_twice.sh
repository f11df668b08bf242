#!/usr/bin/env bash
# Runs the main job (scripts/demo.sh) twice from scratch and checks that both runs reach the same
# recommendation (scripts/compare_demo_runs.py): the study's answer must not flip between two runs
# on the same machine. Each run starts from an empty build/sweep (the sweep is resumable, so a
# second run would otherwise reuse the first one's cells); the runs are kept as
# build/sweep-run1 and build/sweep-run2, and their key lines written to build/demo-twice.md.
# Extra arguments go to both demo.sh calls. Meant for an idle machine: the busy-machine guard
# marks what other work disturbed.
set -euo pipefail
cd "$(dirname "$0")/.."
for run in 1 2; do
  rm -rf build/sweep "build/sweep-run$run"
  echo "[demo-twice] run $run: scripts/demo.sh $*"
  scripts/demo.sh "$@"
  mv build/sweep "build/sweep-run$run"
done
python3 scripts/compare_demo_runs.py build/sweep-run1 build/sweep-run2 --markdown build/demo-twice.md
