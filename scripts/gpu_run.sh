#!/usr/bin/env bash
# One device call: build the CUDA kernels, their tests and the GPU benchmark; run the tests
# (and compute-sanitizer on them); measure the GPU's ceilings and the PyTorch peers with
# ../shared/tools/gpu's scripts (copied into .gpu_tools/); benchmark; and write
# $OUT/results.json (commit, GPU, date, command, ceilings, numbers, peers) plus logs.
#
#   OUT=/tmp/out CROSSPOINT_COMMIT=$(git rev-parse HEAD) scripts/gpu_run.sh [--peers] [--no-sanitizer]
#
# Needs, beside the repo: .gpu_deps/*.deb (Debian googletest and nlohmann-json3-dev, whose
# sources/headers the standalone build uses; `apt-get download googletest nlohmann-json3-dev`)
# and .gpu_tools/{ceilings,torch_peer}.py. Every step has its own time limit, so a slow or
# failing step still leaves results.json behind.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/out-gpu}
mkdir -p "$OUT"
RUN_PEERS=0
RUN_SANITIZER=1
for arg in "$@"; do
  case $arg in
    --peers) RUN_PEERS=1 ;;
    --no-sanitizer) RUN_SANITIZER=0 ;;
    *) echo "unknown option $arg"; exit 2 ;;
  esac
done
LOG=$OUT/run.log
BUILD=/tmp/crosspoint-gpu-build
DEPS=/tmp/crosspoint-gpu-deps
START=$(date +%s)
BUDGET_S=${BUDGET_S:-560}  # whole-script limit, so results.json is written inside a 600 s call
# limit STEP_MAX: the smaller of STEP_MAX and what is left of the budget minus 20 s for the end.
limit() { local left=$(( BUDGET_S - ($(date +%s) - START) - 20 )); [ $left -lt 5 ] && left=5; [ $1 -lt $left ] && echo $1 || echo $left; }
log() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
export PATH=/usr/local/cuda/bin:$PATH

log "== environment"
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv; nvcc --version | tail -2; cmake --version | head -1; } 2>&1 | tee -a "$LOG"

log "== build (standalone: kernels, tests, benchmark)"
mkdir -p "$DEPS"
for deb in "$ROOT"/.gpu_deps/*.deb; do dpkg -x "$deb" "$DEPS"; done
cmake -S "$ROOT/benchmarks/gpu/standalone" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGTEST_SOURCE_DIR="$DEPS/usr/src/googletest" -DJSON_INCLUDE_DIR="$DEPS/usr/include" >"$OUT/build.log" 2>&1 &&
  timeout $(limit 400) cmake --build "$BUILD" -j16 >>"$OUT/build.log" 2>&1
BUILD_RC=$?
log "build rc=$BUILD_RC"
grep -E "error|registers|spill" "$OUT/build.log" | sed -E 's/_ZN10crosspoint4cuda[0-9A-Za-z_]*GLOBAL__N_[0-9A-Za-z_]*cu_[0-9a-f]+//' | head -60 >>"$LOG"

log "== SASS summary (are HMMA / LDGSTS / LOP3 there; no LDL/STL)"
obj=$(find "$BUILD" -name 'w4a16_gemm.cu.o' | head -1)
if [ -n "$obj" ]; then
  cuobjdump -sass "$obj" >"$OUT/sass_w4a16.txt" 2>&1
  for op in HMMA LDGSTS LDS.128 LDG.E.128 LOP3.LUT HFMA2 HADD2 HMUL2 BAR.SYNC LDL STL ATOMG; do
    echo "$op: $(grep -c "$op" "$OUT/sass_w4a16.txt")"
  done | tee -a "$LOG"
fi

TESTS_RC=-1
if [ $BUILD_RC -eq 0 ]; then
  log "== tests"
  timeout $(limit 300) "$BUILD/kernels_cuda/test_kernels_cuda" 2>&1 | tee "$OUT/tests.log" | grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[ +(OK|FAILED) |Failure|error|scale path" | tee -a "$LOG"
  TESTS_RC=${PIPESTATUS[0]}
  log "tests rc=$TESTS_RC"
fi

log "== ceilings (shared/tools/gpu/ceilings.py)"
timeout $(limit 180) python3 "$ROOT/.gpu_tools/ceilings.py" "$OUT/ceilings.json" >>"$LOG" 2>&1
read -r BW FP16 FP8 < <(python3 - "$OUT/ceilings.json" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print(4300, 730, 1300); sys.exit()
bw = max(v["GBps_median"] for k, v in r.items() if isinstance(v, dict) and "(read bytes)" in k)
fp16 = r.get("matmul_float16_8192^3", {}).get("TFLOPs_median", 730)
fp8 = max([v["TFLOPs_median"] for k, v in r.items() if isinstance(v, dict) and k.startswith("scaled_mm_fp8")] or [1300])
print(round(bw, 1), round(fp16, 1), round(fp8, 1))
PY
)
log "ceilings: read ${BW} GB/s, fp16 ${FP16} TF/s, fp8 ${FP8} TF/s"

if [ $BUILD_RC -eq 0 ]; then
  log "== bench_gemm"
  timeout $(limit 300) "$BUILD/gpu/bench_gemm" --bw-gbps "$BW" --fp16-tflops "$FP16" --fp8-tflops "$FP8" \
    --out "$OUT/bench.json" 2>&1 | tee -a "$LOG"
  log "bench rc=${PIPESTATUS[0]}"
fi

SAN_RC=-1
if [ $BUILD_RC -eq 0 ] && [ $RUN_SANITIZER -eq 1 ]; then
  log "== compute-sanitizer memcheck (W4A16, fp8 quant, GEMV)"
  timeout $(limit 200) compute-sanitizer --tool memcheck --error-exitcode 9 "$BUILD/kernels_cuda/test_kernels_cuda" \
    --gtest_filter='W4A16Gemm.SplitK*:W4A16Gemm.ActOrder*:Fp8Quantize.*:Fp8Gemv.*:Fp16Gemv.*' >"$OUT/sanitizer.log" 2>&1
  SAN_RC=$?
  tail -3 "$OUT/sanitizer.log" | tee -a "$LOG"
  log "== compute-sanitizer racecheck (W4A16 split-K reduction)"
  timeout $(limit 120) compute-sanitizer --tool racecheck --error-exitcode 9 "$BUILD/kernels_cuda/test_kernels_cuda" \
    --gtest_filter='W4A16Gemm.SplitK*' >>"$OUT/sanitizer.log" 2>&1
  RACE_RC=$?
  tail -3 "$OUT/sanitizer.log" | tee -a "$LOG"
  log "sanitizer memcheck rc=$SAN_RC racecheck rc=$RACE_RC"
  [ $SAN_RC -eq 0 ] && SAN_RC=$RACE_RC
fi

if [ $RUN_PEERS -eq 1 ]; then
  for mode in fp16 fp8 int4; do
    log "== torch peer: compiled gpt-fast-style decode, $mode, batch 1"
    timeout $(limit 170) python3 "$ROOT/.gpu_tools/torch_peer.py" --part compile --mode $mode --bss 1 \
      --out "$OUT/peer_$mode.json" >>"$OUT/peers.log" 2>&1
    log "peer $mode rc=$?"
    tail -2 "$OUT/peers.log" | tee -a "$LOG"
  done
fi

log "== results.json"
python3 - "$OUT" <<PY
import glob, json, os, sys, datetime
out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"missing": repr(e)[:200]}
res = {
  "commit": os.environ.get("CROSSPOINT_COMMIT", "unknown"),
  "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
  "command": "scripts/gpu_run.sh $*",
  "build_rc": $BUILD_RC, "tests_rc": $TESTS_RC, "sanitizer_rc": $SAN_RC,
  "ceilings_measured": {"read_gbps": $BW, "fp16_tflops": $FP16, "fp8_tflops": $FP8},
  "ceilings_raw": load(os.path.join(out, "ceilings.json")),
  "bench": load(os.path.join(out, "bench.json")),
  "torch_peers": {os.path.basename(p)[5:-5]: load(p) for p in sorted(glob.glob(os.path.join(out, "peer_*.json")))},
}
res["gpu"] = res["bench"].get("gpu", "unknown")
json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=1)
PY
rm -f "$OUT/ceilings.json" "$OUT/bench.json" "$OUT"/peer_*.json
log "done; files: $(ls "$OUT" | tr '\n' ' ')"
