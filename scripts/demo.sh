#!/usr/bin/env bash
# The main job on the embedded default model: set-up (idempotent), then generation.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec build/crosspoint generate --model default --chat --stats \
  --prompt "${1:-Explain in two sentences why int4 weights make decoding faster.}" --max-tokens 96
