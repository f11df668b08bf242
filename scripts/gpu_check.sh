#!/usr/bin/env bash
# A short device call after scripts/gpu_study.sh, from the same bundle: the CUDA model tests
# (a crashing test gets a cuda-gdb backtrace), the generate-vs-transformers check, the paged
# attention benchmark, and the PyTorch quantised-decode peer if time is left.
#   run(command="BW_GBPS=4226 bash scripts/gpu_check.sh", carry=[".gpu_bundle"])
# $OUT gets check.log (everything), check.json, bench_attention.json, peer_quant.json.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/out-gpu-check}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET_S=${BUDGET_S:-300}
BW_GBPS=${BW_GBPS:-4226}
LOG=$OUT/check.log
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
log() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
tar -C /tmp -xJf "$ROOT/.gpu_bundle/crosspoint-gpu.tar.xz" || { log "no bundle"; exit 1; }
B=/tmp/crosspoint-gpu
. "$B/env.sh"
BUILD_ROOT=$(python3 -c "import json; print(json.load(open('$B/manifest.json'))['build_root'])")
[ -e "$BUILD_ROOT" ] || { mkdir -p "$(dirname "$BUILD_ROOT")"; ln -s "$ROOT" "$BUILD_ROOT"; }
log "bundle $(python3 -c "import json; print(json.load(open('$B/manifest.json'))['commit'][:10])")"

log "== test_model_cuda (every test but the graphs-vs-eager one)"
timeout 90 "$B/bin/test_model_cuda" --gtest_filter='-*GraphsGiveTheSameTokensAsEager*' >>"$LOG" 2>&1
log "test_model_cuda rc=$?"
log "== test_model_cuda graphs-vs-eager alone"
timeout 60 "$B/bin/test_model_cuda" --gtest_filter='*GraphsGiveTheSameTokensAsEager*' >>"$LOG" 2>&1
rc=$?
log "graphs test rc=$rc"
if [ $rc -ne 0 ] && command -v cuda-gdb >/dev/null; then
  log "== cuda-gdb backtrace"
  LD_LIBRARY_PATH=$CROSSPOINT_GPU_LD_PATH timeout 90 cuda-gdb -batch -ex run -ex bt -ex 'info threads' \
    --args "$B/libexec/test_model_cuda" --gtest_filter='*GraphsGiveTheSameTokensAsEager*' 2>&1 | tail -60 >>"$LOG"
fi

log "== generate --device cuda vs transformers"
timeout 100 python3 "$ROOT/benchmarks/gpu/check_generate_vs_transformers.py" --crosspoint "$B/bin/crosspoint" \
  --tokenizer-dir "$B/tokenizers/qwen2.5" --out "$OUT/check.json" --num-layers 2 --max-tokens 32 >>"$LOG" 2>&1
log "check rc=$?"

log "== bench_attention (--bw-gbps $BW_GBPS)"
timeout 90 "$B/bin/bench_attention" --bw-gbps "$BW_GBPS" --out "$OUT/bench_attention.json" >>"$LOG" 2>&1
log "bench_attention rc=$?"

if [ "$(left)" -gt 100 ]; then
  log "== torch peer: quant part (int4 tinygemm, fp8 rowwise; CUDA-graph decode bs 1/8/32/64)"
  timeout $(( $(left) - 15 )) python3 "$B/tools/torch_peer.py" --part quant --out "$OUT/peer_quant.json" >>"$LOG" 2>&1
  log "peer rc=$?"
fi
log "done in $(( $(date +%s) - START )) s"
