#!/usr/bin/env bash
# Splits the default model's GGUF (from the asset cache of scripts/setup.sh) into .gguf_parts/
# (git-ignored), one folder per part: 1/part-aa, 2/part-ab, ... of at most PART_MIB (44) MiB,
# the sha256 beside the first, so that it reaches the GPU machine over several calls of at most
# 64 MiB each (the working tree, about 18 MiB, travels with each), one right after the other
# while the machine is warm:
#   run(command="python3 scripts/gpu_study.py --only stash", carry=[".gguf_parts/1"])   and so on, then
#   run(command="python3 scripts/gpu_study.py --only gpuvscpu", carry=[".gpu_bundle", ".gguf_parts/N"])
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE="${CROSSPOINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crosspoint}"
GGUF="$CACHE/gguf/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -s "$GGUF" ] || { echo "split_gguf.sh: $GGUF is missing: run scripts/setup.sh" >&2; exit 1; }
EXCLUDE=$(git rev-parse --git-common-dir)/info/exclude
grep -qx '/.gguf_parts/' "$EXCLUDE" 2>/dev/null || echo '/.gguf_parts/' >>"$EXCLUDE"
rm -rf .gguf_parts && mkdir .gguf_parts
split -b "${PART_MIB:-44}M" "$GGUF" .gguf_parts/part-
i=0
for part in .gguf_parts/part-*; do
  i=$((i + 1))
  mkdir .gguf_parts/$i && mv "$part" .gguf_parts/$i/
done
(cd "$(dirname "$GGUF")" && sha256sum "$(basename "$GGUF")") >.gguf_parts/1/sha256
ls -lR .gguf_parts
