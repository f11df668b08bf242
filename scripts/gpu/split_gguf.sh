#!/usr/bin/env bash
# Splits the default model's GGUF (from the asset cache of scripts/setup.sh) into .gguf_parts/
# (git-ignored): part-aa, part-ab, ... of at most PART_MIB (44) MiB and their sha256, so that
# it reaches the GPU machine over several calls of at most 64 MiB each (the working tree, about
# 19 MiB, travels with each):
#   run(command="bash scripts/gpu_study.sh --only stash", carry=[".gguf_parts"])   once per part
# (remove the parts already sent from .gguf_parts/ between calls), then
#   run(command="bash scripts/gpu_study.sh --only gpuvscpu", carry=[".gpu_bundle"])
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE="${CROSSPOINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crosspoint}"
GGUF="$CACHE/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -s "$GGUF" ] || { echo "split_gguf.sh: $GGUF is missing: run scripts/setup.sh" >&2; exit 1; }
EXCLUDE=$(git rev-parse --git-common-dir)/info/exclude
grep -qx '/.gguf_parts/' "$EXCLUDE" 2>/dev/null || echo '/.gguf_parts/' >>"$EXCLUDE"
rm -rf .gguf_parts && mkdir .gguf_parts
split -b "${PART_MIB:-44}M" "$GGUF" .gguf_parts/part-
(cd "$(dirname "$GGUF")" && sha256sum "$(basename "$GGUF")") >.gguf_parts/sha256
ls -l .gguf_parts
