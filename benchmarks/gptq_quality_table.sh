#!/usr/bin/env bash
# GPTQ quality table for the default model (docs/quantization.md, "GPTQ against the reference
# library"): crosspoint quantize at several settings, each scored by crosspoint eval with the
# same samples. Usage:
#   benchmarks/gptq_quality_table.sh BUILD_DIR OUT_DIR [NAME ...]
# NAME picks rows (default: all): g64 g64-static g32 g64-n128 g64-descact g64-static-descact.
# Library-made checkpoints (benchmarks/quant_peer_llmcompressor.py) in OUT_DIR/lib-* are
# scored too. One JSON per checkpoint lands in OUT_DIR/eval-<name>.json. Not a test:
# minutes of CPU per row.
set -euo pipefail
build=${1:?build dir}; out=${2:?output dir}; shift 2
crosspoint="$build/crosspoint"
reference=${CROSSPOINT_CACHE:-$HOME/.cache/crosspoint}/models/SmolLM2-135M-Instruct
# One thread: on a shared 2-core machine two threads spend most of their time waiting for each
# other at every barrier; results do not depend on the thread count.
eval_args=(--reference "$reference" --num-samples 8 --max-tokens 128 --threads 1 --json)
mkdir -p "$out"

declare -A settings=(
  [g64]="--group-size 64 --calib-samples 32 --calib-max-tokens 128"
  [g64-static]="--group-size 64 --calib-samples 32 --calib-max-tokens 128 --static-groups"
  [g32]="--group-size 32 --calib-samples 32 --calib-max-tokens 128"
  [g64-n128]="--group-size 64 --calib-samples 128 --calib-max-tokens 128"
  [g64-descact]="--group-size 64 --calib-samples 32 --calib-max-tokens 128 --desc-act"
  [g64-static-descact]="--group-size 64 --calib-samples 32 --calib-max-tokens 128 --desc-act --static-groups"
)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(g64 g64-static g32 g64-n128 g64-descact g64-static-descact)

for name in "${names[@]}"; do
  dir="$out/ours-$name"
  if [ ! -f "$dir/model.safetensors" ]; then
    # shellcheck disable=SC2086
    /usr/bin/time -f "quantize $name: %e s wall, %U s user" "$crosspoint" quantize --model default --scheme w4a16 \
      --method gptq ${settings[$name]} --threads 1 --out "$dir" --force 2>"$out/quantize-$name.log" >/dev/null
    tail -1 "$out/quantize-$name.log"
  fi
done
for dir in "$out"/ours-* "$out"/lib-*; do
  [ -f "$dir/model.safetensors" ] || continue
  name=$(basename "$dir")
  [ -f "$out/eval-$name.json" ] && continue
  echo "eval $name (load $(cut -d' ' -f1 /proc/loadavg))"
  "$crosspoint" eval --model "$dir" "${eval_args[@]}" 2>/dev/null >"$out/eval-$name.json.tmp"
  mv "$out/eval-$name.json.tmp" "$out/eval-$name.json"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], 'perplexity %.3f agreement %.1f %%' % (j['perplexity'], 100*j['greedy_agreement']))" \
    "$out/eval-$name.json" "$name"
done
