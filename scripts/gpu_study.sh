#!/usr/bin/env bash
# The study on the GPU in one device call (issues #6 and #7), from the bundle that
# scripts/gpu_bundle.sh made here:
#   1. unpack .gpu_bundle/crosspoint-gpu.tar.xz, nvidia-smi, the manifest
#   2. tests:  test_kernels_cuda, test_model_cuda and test_determinism (when bundled), a short log
#   3. ceilings.py (--only ceilings or --ceilings FILE: the GPU's read bandwidth, fp16 and fp8
#      matmul rates, measured by shared/tools/gpu; otherwise crosspoint hwinfo measures them)
#   4. check:  (checkpoints are written in the background from the start) a random 2-layer Qwen2 with Qwen2.5-7B widths, greedy crosspoint generate --device cuda
#              vs transformers (benchmarks/gpu/check_generate_vs_transformers.py); meanwhile the
#              7B checkpoints are written (benchmarks/gpu/make_random_checkpoint.py, timed)
#   5. sweep:  crosspoint sweep --device cuda over the precisions with the ready checkpoints,
#              concurrency 1,10,100, ShareGPT sample (bundle), 100,200,200 prompts, replies of the
#              dataset's length with --ignore-eos, --max-model-len 4096, no eval
#   6. peers:  shared/tools/gpu/torch_peer.py compiled decode at batch 1, fp16/fp8/int4, if time is left
# Parts not in the default set (name them in --only):
#   sanitize: compute-sanitizer memcheck over test_kernels_cuda, racecheck over the kernels that
#             reduce through shared memory
#   hwinfo:   crosspoint hwinfo --device cuda --json (the engine's own ceilings), beside ceilings.py
#   decode:   bench_decode_step over the 7B checkpoints (decode step at batch 1..128, context 512,
#             prefill 2,048, per-kernel breakdown, roofline), then bench_gemm (the linears alone) and
#             bench_attention unless DECODE_MICRO=0
#   gemm:     bench_gemm and bench_attention alone (the kernels of decode without the 7B checkpoints)
#   kvattn:   bench_attention --fp8: the default attention kernels on an e4m3 KV cache beside fp16
#             (decode batch 1-256 x context 512-4096, prefill), against the read ceiling (needs ceilings or hwinfo)
#   quantpeer: torch_peer.py --part quant (graph-replayed fp8/int4 decode at batch 1/8/32/64)
#   profile:  ncu over bench_gemm --profile-shapes (PROFILE_KERNELS regex, PROFILE_ROWS list of M, PROFILE_COUNT, PROFILE_S)
#   attnprofile: ncu over bench_attention --shape (ATTN_SHAPES, default 64:512,128:2048): the decode
#             attention kernels' (default and balanced) throughput, memory, occupancy and stall sections
#   kernels:  ncu over one eager decode step per precision (--kernels-batches, 1): every kernel's
#             time alone and DRAM bytes read, grouped by scripts/gpu/kernel_breakdown.py (kernels.json)
#   soak:     scripts/soak.py on the 7B fp16 checkpoint (SOAK_STREAMS, SOAK_MINUTES per round, SOAK_KV_BLOCKS;
#             SOAK_DETACH=1: in its own session, collected by a following call with --only soakwait) into $OUT/soak.json
#   stash:    copy the carried files under .gguf_parts/ (the default model's GGUF in parts, scripts/gpu/split_gguf.sh)
#             into /tmp/crosspoint-gguf-parts, which a warm machine keeps for the next call; needs no bundle
#   gpuvscpu: benchmarks/gpu/check_gpu_vs_cpu.py on the default model's real weights (the stashed parts
#             joined and checked against their sha256): serve --device cuda against --device cpu per
#             precision (fp16, W8A8-FP8, W4A16 RTN and GPTQ act-order, group 64) and KV dtype, into
#             $OUT/gpu_vs_cpu.json
#   servercheck: benchmarks/gpu/check_server_determinism.py over the 7B checkpoints: the same request
#             sequentially, in copies sent together and amid load, default and --deterministic servers
# --deterministic-too: the decode step and the sweep run a second time with --deterministic
#          (decode_step_deterministic.json, the sweep-deterministic folder), for the mode's cost.
# --baseline TAR: another bundle's crosspoint-gpu.tar.xz (carried, e.g. an older commit's); its
#          bench_decode_step runs just before and just after this one's with the same arguments
#          (decode_step_baseline.json, decode_step_baseline_after.json), so old and new binaries
#          are compared in one call.
# Every step has its own time limit inside BUDGET_S (560 s), and $OUT/results.json is written
# on every exit (steps with their exit codes and seconds, ceilings, checkpoint timings, the check,
# every sweep cell's headline numbers, start-up facts, peers).
#
#   run(command="bash scripts/gpu_study.sh", carry=[".gpu_bundle"], timeout_s=600)
#   run(command="bash scripts/gpu_study.sh --only sweep --precisions w4a16", carry=[".gpu_bundle"])
#
# Options: --only tests,check,sweep,peers (default; also sanitize,hwinfo,ceilings,decode,quantpeer; peers only
#          when >= 150 s are left)   --peer-modes fp16,fp8,int4   --decode-batches 1,8,32,64,128
#          --precisions fp16,w8a8-fp8,w4a16   --kv-cache-dtypes auto,fp8   --concurrency 1,10,100   --num-prompts 100,200,200
#          --dataset sharegpt|random|prefix_repetition (random: 218 input / 220 output tokens, the study's means;
#          prefix_repetition: NUM_PREFIXES (8) prefixes of PREFIX_LEN (1024) tokens, SUFFIX_LEN (128) + PREFIX_OUTPUT_LEN (128))
#          --prefix-caching off,on (the sweep's prefix-caching axis)
#          --layers N (7B shape with N layers: a quicker sweep)   --enforce-eager   --bisect N
#          --gpu-memory-utilization F   --ceilings FILE (reuse; skips ceilings.py)
#          --resume-sweep DIR (a sweep folder from an earlier call, e.g. unpacked from its logs.tar.xz into
#          an ignored folder that the call carries: its finished cells and hwinfo.json are kept, so a
#          sweep longer than one call runs over several)
#          --cpu-dry-run (here, without a GPU: tiny checkpoints, CPU servers; tests the flow)
# Environment: BUDGET_S, MEMORY_BUDGET (sweep --memory-budget, e.g. 24GB: a smaller GPU's capacity), MAX_NUM_SEQS
#          (sweep --max-num-seqs), TEST_LIMIT_S, TEST_BINARIES (which test binaries, in order), ATTN_SHAPES, DECODE_VARIANT_ARGS (decode: bench_decode_step again with
#          these flags, e.g. --tight-attention-bound, into decode_step_variant.json), PROFILE_KERNELS, PROFILE_ROWS, PROFILE_COUNT, PROFILE_S, TEST_KERNELS_FILTER (a gtest filter for test_kernels_cuda), SANITIZE_{MEMCHECK,RACECHECK}_{S,FILTER}, DECODE_MICRO=0,
#          ATTENTION_MICRO=0 (gemm/decode: bench_gemm without bench_attention),
#          BENCH_GEMM_ARGS, BENCH_GEMM_S, BENCH_ATTENTION_ARGS, PEER_MIN_LEFT_S, CKPT_DIR.
# $OUT gets: results.json, run.log, report.md, report.html, study.json, logs.tar.xz (every log,
# the sweep's cells, servers and figures, the check's JSON).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$ROOT/out-gpu-study}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET_S=${BUDGET_S:-560}
ONLY="tests,check,sweep,peers"
PRECISIONS="fp16,w8a8-fp8,w4a16"
KV_DTYPES="auto"  # --kv-cache-dtypes auto,fp8: the sweep's KV-cache axis
PREFIX_CACHING="default"  # --prefix-caching off,on: the sweep's prefix-caching axis
CONCURRENCY="1,10,100"
NUM_PROMPTS="100,200,200"
DATASET="sharegpt"
LAYERS=0
EAGER=0
BISECT=0
GPU_MEM=0.9
CEILINGS_GIVEN=""
RESUME_SWEEP=""  # --resume-sweep DIR: a previous call's sweep folder (carried); its finished cells are kept
PEER_MODES="fp16,fp8,int4"
DECODE_BATCHES="1,8,32,64,128"
KERNELS_BATCHES=1
DRY_RUN=0   # --cpu-dry-run: the same flow on a machine without a GPU (tiny model, CPU servers)
DET_TOO=0   # --deterministic-too: decode step and sweep again with --deterministic
BASELINE="" # --baseline TAR: an older bundle whose bench_decode_step runs first, same arguments
while [ $# -gt 0 ]; do
  case $1 in
    --only) ONLY=$2; shift ;;
    --precisions) PRECISIONS=$2; shift ;;
    --kv-cache-dtypes) KV_DTYPES=$2; shift ;;
    --prefix-caching) PREFIX_CACHING=$2; shift ;;
    --concurrency) CONCURRENCY=$2; shift ;;
    --num-prompts) NUM_PROMPTS=$2; shift ;;
    --dataset) DATASET=$2; shift ;;
    --layers) LAYERS=$2; shift ;;
    --enforce-eager) EAGER=1 ;;
    --bisect) BISECT=$2; shift ;;
    --gpu-memory-utilization) GPU_MEM=$2; shift ;;
    --ceilings) CEILINGS_GIVEN=$2; shift ;;
    --resume-sweep) RESUME_SWEEP=$2; shift ;;
    --peer-modes) PEER_MODES=$2; shift ;;
    --decode-batches) DECODE_BATCHES=$2; shift ;;
    --kernels-batches) KERNELS_BATCHES=$2; shift ;;
    --cpu-dry-run) DRY_RUN=1 ;;
    --deterministic-too) DET_TOO=1 ;;
    --baseline) BASELINE=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "gpu_study.sh: unknown option $1 (see --help)"; exit 2 ;;
  esac
  shift
done
want() { [[ ",$ONLY," == *",$1,"* ]]; }

LOG=$OUT/run.log
WORK=/tmp/crosspoint-study          # logs and the sweep; packed into $OUT/logs.tar.xz at the end
CKPT=${CKPT_DIR:-/tmp/crosspoint-ckpt}
BUNDLE_DIR=/tmp/crosspoint-gpu
# Every call starts from an empty $WORK (a warm machine keeps /tmp between calls): no log or
# sweep cell of an earlier call leaks into this one's results; --resume-sweep is the way to continue.
rm -rf "$WORK"
mkdir -p "$WORK/logs" "$CKPT"
STEPS=$WORK/steps.jsonl
: >"$STEPS"
# 60 s kept back for results.json and packing the logs (a big sweep folder takes half a minute).
limit() { local left=$(( BUDGET_S - ($(date +%s) - START) - 60 )); [ $left -lt 5 ] && left=5; [ $1 -lt $left ] && echo $1 || echo $left; }
left_s() { echo $(( BUDGET_S - ($(date +%s) - START) )); }
log() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
# step NAME RC SECONDS [NOTE]: one line of results.json's "steps"
step() {
  local note=${4:-}
  note=${note//\\/}; note=${note//\"/\'}; note=$(tr -d '\000-\037' <<<"$note")  # stays a JSON string
  printf '{"step": "%s", "rc": %s, "seconds": %s, "note": "%s"}\n' "$1" "$2" "$3" "$note" >>"$STEPS"
  log "step $1: rc=$2 in $3 s $note"
}
now() { date +%s; }

finish() {
  log "== results.json"
  python3 "$ROOT/scripts/gpu/study_results.py" "$OUT" "$WORK" "$STEPS" "$ROOT" "$BUNDLE_DIR" "$*" 2>&1 | tee -a "$LOG"
  for f in report.md report.html study.json; do [ -f "$WORK/sweep/$f" ] && cp "$WORK/sweep/$f" "$OUT/"; done
  [ -f "$WORK/sweep-deterministic/report.md" ] && cp "$WORK/sweep-deterministic/report.md" "$OUT/report-deterministic.md"
  tar -C "$WORK" -cJf "$OUT/logs.tar.xz" --exclude='*.partial' logs sweep sweep-deterministic check.json steps.jsonl 2>/dev/null
  # results.json holds decode_step, hwinfo, server_determinism and the rest: $OUT brings back 8 files at most.
  log "done in $(( $(date +%s) - START )) s; \$OUT: $(ls "$OUT" | tr '\n' ' ')"
}
trap 'finish "$ONLY $PRECISIONS"' EXIT

# ---------------------------------------------------------------- 0. stash GGUF parts
GGUF_PARTS=/tmp/crosspoint-gguf-parts
if want stash; then
  mkdir -p "$GGUF_PARTS"
  find "$ROOT/.gguf_parts" -type f -exec cp {} "$GGUF_PARTS"/ \; 2>>"$LOG"
  step stash $? 0 "$(ls "$GGUF_PARTS" | tr '\n' ' ')"
  [ "$ONLY" = stash ] && exit 0
fi

# ---------------------------------------------------------------- 1. unpack and environment
log "== unpack the bundle"
t=$(now)
if ! tar -C /tmp -xJf "$ROOT/.gpu_bundle/crosspoint-gpu.tar.xz" 2>>"$LOG"; then
  step unpack 1 $(( $(now) - t )) "no .gpu_bundle/crosspoint-gpu.tar.xz: run scripts/gpu_bundle.sh and carry .gpu_bundle"
  exit 1
fi
. "$BUNDLE_DIR/env.sh"
# The test binaries were compiled with fixture paths under the build machine's checkout.
BUILD_ROOT=$(python3 -c "import json; print(json.load(open('$BUNDLE_DIR/manifest.json'))['build_root'])" 2>/dev/null)
if [ -n "$BUILD_ROOT" ] && [ ! -e "$BUILD_ROOT" ]; then mkdir -p "$(dirname "$BUILD_ROOT")" && ln -s "$ROOT" "$BUILD_ROOT"; fi
step unpack 0 $(( $(now) - t )) "cublasLt from ${CROSSPOINT_CUBLASLT_DIR:-NOT FOUND}"
{
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version,clocks.sm,clocks.mem --format=csv
  echo "bundle: $(python3 -c "import json; m=json.load(open('$BUNDLE_DIR/manifest.json')); print(m['commit'][:10], m['date_utc'], ' '.join(m['binaries']))")"
  echo "disk: $(df -h /tmp | tail -1)"; echo "memory: $(free -g | awk '/Mem/ {print $2 " GiB total, " $7 " GiB available"}')"
  LD_LIBRARY_PATH=$CROSSPOINT_GPU_LD_PATH ldd "$BUNDLE_DIR/libexec/crosspoint" | grep -E "not found|cublas|cudart"
} 2>&1 | tee -a "$LOG"

# ---------------------------------------------------------------- 1b. checkpoints (background, beside the tests)
TOKENIZER=$BUNDLE_DIR/tokenizers/qwen2.5
SWEEP_DEVICE=cuda
GEN_CONFIG=(--config qwen2.5-7b)
if [ $DRY_RUN -eq 1 ]; then  # tests this script here: tiny checkpoints, CPU servers, the tiny tokenizer
  TOKENIZER=$ROOT/tests/fixtures/bench/tiny_tokenizer; SWEEP_DEVICE=cpu; GEN_CONFIG=(--config tiny --backend numpy)
fi
IFS=, read -r -a PREC_LIST <<<"$PRECISIONS"
GEN_PID=""
if want sweep || want decode || want kernels || want soak; then
  log "== 7B checkpoints (${PRECISIONS}; $([ "$LAYERS" -gt 0 ] && echo "$LAYERS" || echo 28) layers; in the background)"
  (
    layers=(); [ "$LAYERS" -gt 0 ] && layers=(--num-layers "$LAYERS")
    fp16_args=(--format fp16)
    [[ ",$PRECISIONS," == *",fp16,"* ]] || fp16_args+=(--config-only)  # shape + tokenizer for --model
    for p in fp16 "${PREC_LIST[@]}"; do
      [ "$p" = fp16 ] && [ -f "$CKPT/fp16/config.json" ] && continue
      args=("${fp16_args[@]}"); [ "$p" = fp16 ] || args=(--format "$p")
      t=$(now)
      timeout $(limit 200) python3 "$ROOT/benchmarks/gpu/make_random_checkpoint.py" --out "$CKPT/$p" "${args[@]}" "${layers[@]}" "${GEN_CONFIG[@]}" \
        --tokenizer-dir "$TOKENIZER" >"$WORK/logs/checkpoint-$p.log" 2>&1
      rc=$?
      if [ $rc -ne 0 ] && [ $DRY_RUN -eq 0 ]; then  # the torch path failed: numpy on the CPU is slower but sure
        echo "checkpoint $p: torch generator rc=$rc ($(tail -1 "$WORK/logs/checkpoint-$p.log")); again with numpy"
        mv "$WORK/logs/checkpoint-$p.log" "$WORK/logs/checkpoint-$p-torch-failed.log"
        timeout $(limit 300) python3 "$ROOT/benchmarks/gpu/make_random_checkpoint.py" --out "$CKPT/$p" "${args[@]}" "${layers[@]}" \
          "${GEN_CONFIG[@]}" --backend numpy --tokenizer-dir "$TOKENIZER" >"$WORK/logs/checkpoint-$p.log" 2>&1
        rc=$?
      fi
      echo "checkpoint $p rc=$rc $(( $(now) - t )) s: $(tail -2 "$WORK/logs/checkpoint-$p.log" | head -1)"
    done
  ) >>"$LOG" 2>&1 &
  GEN_PID=$!
fi

# ---------------------------------------------------------------- 2. tests
# test_analysis runs only its GPU measurement tests: the rest ran in CI. With a detached soak
# they run after it has started (beside it: they check correctness, not speed).
run_tests() {
  for t_bin in ${TEST_BINARIES:-test_kernels_cuda test_model_cuda test_determinism test_analysis}; do
    [ -x "$BUNDLE_DIR/bin/$t_bin" ] || { log "$t_bin: not in the bundle"; continue; }
    filter=(); [ $t_bin = test_analysis ] && filter=(--gtest_filter='GpuMeasurement*')
    [ $t_bin = test_kernels_cuda ] && [ -n "${TEST_KERNELS_FILTER:-}" ] && filter=(--gtest_filter="$TEST_KERNELS_FILTER")
    log "== $t_bin ${filter[*]}"
    t=$(now)
    timeout $(limit ${TEST_LIMIT_S:-240}) "$BUNDLE_DIR/bin/$t_bin" "${filter[@]}" >"$WORK/logs/$t_bin.log" 2>&1
    rc=$?
    grep -E "^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \] [0-9]+ test|Failure$" "$WORK/logs/$t_bin.log" | head -20 | tee -a "$LOG"
    step "$t_bin" $rc $(( $(now) - t )) "$(grep -c '^\[       OK' "$WORK/logs/$t_bin.log") ok"
  done
}
SOAK_FIRST=0; want soak && [ "${SOAK_DETACH:-0}" = 1 ] && SOAK_FIRST=1
want tests && [ $SOAK_FIRST -eq 0 ] && run_tests

# ---------------------------------------------------------------- 2b. compute-sanitizer
# sanitize TOOL SECONDS FILTER [BINARY]: compute-sanitizer TOOL over the tests in FILTER of
# BINARY (test_kernels_cuda by default).
sanitize() {
  local tool=$1 seconds=$2 filter=$3 binary=${4:-test_kernels_cuda} t
  local name=$tool; [ "$binary" = test_kernels_cuda ] || name=$tool-$binary
  log "== compute-sanitizer $tool: $binary $filter"
  t=$(now)
  LD_LIBRARY_PATH=$CROSSPOINT_GPU_LD_PATH timeout $(limit "$seconds") compute-sanitizer --tool "$tool" \
    --error-exitcode 9 --print-limit 20 "$BUNDLE_DIR/libexec/$binary" --gtest_filter="$filter" \
    >"$WORK/logs/sanitizer-$name.log" 2>&1
  local rc=$?
  tail -4 "$WORK/logs/sanitizer-$name.log" | tee -a "$LOG"
  step "sanitizer_$name" $rc $(( $(now) - t )) "$(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$WORK/logs/sanitizer-$name.log" | tail -1) $(grep -c '^\[       OK' "$WORK/logs/sanitizer-$name.log") ok"
}
# selection FILE TOOL: the gtest filter a tests folder keeps for TOOL (its sanitizer_selection.txt).
selection() { sed -n "s/^$2: //p" "$ROOT/$1" | head -1; }
if want sanitize && [ -x "$BUNDLE_DIR/libexec/test_kernels_cuda" ]; then
  sanitize memcheck "${SANITIZE_MEMCHECK_S:-110}" \
    "${SANITIZE_MEMCHECK_FILTER:-$(selection tests/kernels_cuda/sanitizer_selection.txt memcheck)}"
  sanitize racecheck "${SANITIZE_RACECHECK_S:-60}" \
    "${SANITIZE_RACECHECK_FILTER:-$(selection tests/kernels_cuda/sanitizer_selection.txt racecheck)}"
  [ -x "$BUNDLE_DIR/libexec/test_determinism" ] &&
    sanitize memcheck "${SANITIZE_DETERMINISM_S:-90}" \
      "${SANITIZE_DETERMINISM_FILTER:-$(selection tests/determinism/sanitizer_selection.txt memcheck)}" test_determinism
fi

# ---------------------------------------------------------------- 2c. ncu profile
# Nsight Compute over bench_gemm --profile-shapes (each decode-step linear once per precision at
# each M of PROFILE_ROWS (1,8), engine dispatch): throughput, memory, occupancy, scheduler and
# warp-stall sections of the kernels matching PROFILE_KERNELS, as text in $OUT/ncu_profile.txt.
# Clocks left alone.
if want profile && [ -x "$BUNDLE_DIR/libexec/bench_gemm" ]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
  if [ -z "$NCU" ]; then
    step ncu_profile 1 0 "ncu not found"
  else
    log "== ncu over bench_gemm --profile-shapes (${PROFILE_KERNELS:-gemv|w4a16})"
    t=$(now)
    LD_LIBRARY_PATH=$CROSSPOINT_GPU_LD_PATH timeout $(limit "${PROFILE_S:-150}") "$NCU" --clock-control none \
      --kernel-name "regex:${PROFILE_KERNELS:-gemv|w4a16}" --launch-count "${PROFILE_COUNT:-24}" \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis --section InstructionStats \
      "$BUNDLE_DIR/libexec/bench_gemm" --profile-shapes "${PROFILE_ROWS:-1,8}" >"$WORK/logs/ncu_profile.txt" 2>&1
    rc=$?
    cp "$WORK/logs/ncu_profile.txt" "$OUT/ncu_profile.txt"
    step ncu_profile $rc $(( $(now) - t )) "$(grep -c 'profiled ' "$WORK/logs/ncu_profile.txt") shapes, $(grep -c '==PROF== Profiling' "$WORK/logs/ncu_profile.txt") kernels"
  fi
fi

# ncu over bench_attention --shape (ATTN_SHAPES, SEQS:CTX list, default 64:512,128:2048): the same
# sections for the tensor-core decode attention kernel, as text in $OUT/ncu_attention.txt.
if want attnprofile && [ -x "$BUNDLE_DIR/libexec/bench_attention" ]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
  if [ -z "$NCU" ]; then
    step ncu_attention 1 0 "ncu not found"
  else
    shape_args=()
    shapes=${ATTN_SHAPES:-64:512,128:2048}
    for sh in ${shapes//,/ }; do shape_args+=(--shape "$sh"); done
    [ ${#shape_args[@]} -gt 0 ] || shape_args=(--shape 64:512 --shape 128:2048)
    log "== ncu over bench_attention ${shape_args[*]}"
    t=$(now)
    LD_LIBRARY_PATH=$CROSSPOINT_GPU_LD_PATH timeout $(limit "${PROFILE_S:-150}") "$NCU" --clock-control none \
      --kernel-name "regex:decode_(tensor_core|balanced)" --launch-count "${PROFILE_COUNT:-8}" \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis --section InstructionStats \
      "$BUNDLE_DIR/libexec/bench_attention" --reps 2 "${shape_args[@]}" --out "$WORK/ncu_attention_bench.json" \
      >"$WORK/logs/ncu_attention.txt" 2>&1
    rc=$?
    cp "$WORK/logs/ncu_attention.txt" "$OUT/ncu_attention.txt"
    step ncu_attention $rc $(( $(now) - t )) "$(grep -c '==PROF== Profiling' "$WORK/logs/ncu_attention.txt") kernels"
  fi
fi

# The ceilings want a quiet GPU: the checkpoints must be written first.
if [ -n "$GEN_PID" ]; then
  t=$(now)
  wait $GEN_PID  # each checkpoint has its own timeout inside
  # Present = written now or kept from an earlier call on this machine.
  wanted=$(printf '%s\n' fp16 "${PREC_LIST[@]}" | sort -u | wc -l)
  written=$(for p in $(printf '%s\n' fp16 "${PREC_LIST[@]}" | sort -u); do [ -f "$CKPT/$p/config.json" ] && echo "$p"; done | wc -l)
  step checkpoints $([ "$written" -ge "$wanted" ] && echo 0 || echo 1) $(( $(now) - t )) \
    "$written of $wanted present; waited $(( $(now) - t )) s after the tests"
fi

# ---------------------------------------------------------------- soak (scripts/soak.py on the GPU)
# 1,000 streams per round (SOAK_STREAMS) for SOAK_MINUTES (4) per round, two rounds, on the 7B fp16
# checkpoint with a KV cache of SOAK_KV_BLOCKS (256) blocks: 4,096 tokens, where 256 sequences of up
# to 256 tokens want ~6,000 (two runs on 2026-12-02 sized it by memory budget and peaked at 55 % and
# 94.5 % without a preemption), with --max-num-seqs 256; controls compared between rounds only (the default kernels are not
# batch-invariant). SOAK_DETACH=1 starts it in its own session (it outlives this call, in
# $SOAK_DIR) and returns; a following call with --only soakwait waits for it and brings back
# its result: a soak longer than one call's 10 minutes runs over two.
SOAK_DIR=/tmp/crosspoint-soak-detached
# The soak's server log (its last 3,000 lines: warnings, timeouts, shutdown) into the logs.
soak_server_log() {
  local f
  f=$(ls -t /tmp/crosspoint-soak-*/server.log 2>/dev/null | head -1)
  [ -n "$f" ] && tail -3000 "$f" >"$WORK/logs/soak-server.log"
}
if want soak; then
  log "== soak: ${SOAK_STREAMS:-1000} streams, 2 rounds of ${SOAK_MINUTES:-4} min"
  rm -rf "$SOAK_DIR"; mkdir -p "$SOAK_DIR"
  soak_cmd=(python3 "$ROOT/scripts/soak.py" --crosspoint "$BUNDLE_DIR/bin/crosspoint" --device "$SWEEP_DEVICE" --model "$CKPT/fp16"
            --result "$SOAK_DIR/soak.json" --minutes "${SOAK_MINUTES:-4}" --streams "${SOAK_STREAMS:-1000}"
            --quiet-controls-only --serve-arg=--num-gpu-blocks-override "--serve-arg=${SOAK_KV_BLOCKS:-256}"
            --serve-arg=--max-num-seqs --serve-arg=256 --note "H200 device call")
  if [ "${SOAK_DETACH:-0}" = 1 ]; then
    setsid nohup "${soak_cmd[@]}" >"$SOAK_DIR/soak.log" 2>&1 < /dev/null &
    step soak 0 0 "detached: pid $!, results in $SOAK_DIR (collect with --only soakwait)"
    want tests && run_tests
    sleep $(limit 540)
  else
    t=$(now)
    timeout $(limit 560) "${soak_cmd[@]}" >"$SOAK_DIR/soak.log" 2>&1
    rc=$?
    step soak $rc $(( $(now) - t )) "$(tail -1 "$SOAK_DIR/soak.log")"
  fi
  cp "$SOAK_DIR"/soak.log "$WORK/logs/" 2>/dev/null
  soak_server_log
  [ -f "$SOAK_DIR/soak.json" ] && cp "$SOAK_DIR/soak.json" "$OUT/soak.json"
fi
if want soakwait; then
  t=$(now)
  while [ ! -f "$SOAK_DIR/soak.json" ] && pgrep -f "scripts/soak.py" >/dev/null && [ "$(left_s)" -gt 70 ]; do sleep 5; done
  [ -f "$SOAK_DIR/soak.json" ] && cp "$SOAK_DIR/soak.json" "$OUT/soak.json"
  cp "$SOAK_DIR"/soak.log "$WORK/logs/" 2>/dev/null
  soak_server_log
  tail -30 "$SOAK_DIR/soak.log" | tee -a "$LOG"
  step soakwait $([ -f "$OUT/soak.json" ] && echo 0 || echo 1) $(( $(now) - t )) "$(tail -1 "$SOAK_DIR/soak.log" 2>/dev/null)"
fi

# ---------------------------------------------------------------- 3. ceilings
# ceilings.py (--only ceilings) beside crosspoint hwinfo; the sweep, bench_decode_step and
# bench_gemm use hwinfo's measurement unless --ceilings FILE is given.
CEILINGS=""
if [ -n "$CEILINGS_GIVEN" ] || want ceilings; then
  if [ -n "$CEILINGS_GIVEN" ] && [ -f "$CEILINGS_GIVEN" ]; then
    cp "$CEILINGS_GIVEN" "$WORK/ceilings.json"; CEILINGS=$WORK/ceilings.json
    step ceilings 0 0 "reused $CEILINGS_GIVEN"
  elif [ -f "$BUNDLE_DIR/tools/ceilings.py" ]; then
    log "== ceilings (shared/tools/gpu/ceilings.py)"
    t=$(now)
    timeout $(limit 100) python3 "$BUNDLE_DIR/tools/ceilings.py" "$WORK/ceilings.json" >"$WORK/logs/ceilings.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] && CEILINGS=$WORK/ceilings.json
    step ceilings $rc $(( $(now) - t )) "$(grep -E 'read bytes|matmul_float16' "$WORK/logs/ceilings.log" | tail -2 | tr -d '"' | cut -c1-160 | tr '\n' ';')"
  fi
fi

HWINFO=""
if want hwinfo || want decode; then  # the sweep measures the GPU itself (its own hwinfo child)
  log "== crosspoint hwinfo --device cuda"
  t=$(now)
  timeout $(limit 120) "$BUNDLE_DIR/bin/crosspoint" hwinfo --device cuda --json >"$WORK/hwinfo.json" 2>"$WORK/logs/hwinfo.log"
  rc=$?
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d.get('measured'); print(json.dumps(d['ceilings'])[:300])" "$WORK/hwinfo.json" \
    >>"$WORK/logs/hwinfo.log" 2>&1 && HWINFO=$WORK/hwinfo.json || rc=${rc/#0/3}
  tail -2 "$WORK/logs/hwinfo.log" | tee -a "$LOG"
  step hwinfo $rc $(( $(now) - t )) "$(tail -1 "$WORK/logs/hwinfo.log" | cut -c1-200)"
fi

if want check; then
  log "== check: crosspoint generate --device cuda vs transformers (random 2-layer Qwen2, 7B widths)"
  t=$(now)
  timeout $(limit 150) python3 "$ROOT/benchmarks/gpu/check_generate_vs_transformers.py" --crosspoint "$BUNDLE_DIR/bin/crosspoint" \
    --tokenizer-dir "$TOKENIZER" --out "$WORK/check.json" --num-layers 2 --max-tokens 32 >"$WORK/logs/check.log" 2>&1
  rc=$?
  grep -vE "^\s*$" "$WORK/logs/check.log" | tail -8 | tee -a "$LOG"
  step check $rc $(( $(now) - t )) "$(tail -1 "$WORK/logs/check.log" | cut -c1-150)"
  rm -rf /tmp/crosspoint-check-qwen2
fi

# ---------------------------------------------------------------- 4b. decode-step and GEMM benchmarks
if want decode && [ -x "$BUNDLE_DIR/bin/bench_decode_step" ]; then
  CEIL_FOR_BENCH=${HWINFO:-$CEILINGS}
  models=()
  for p in fp16 "${PREC_LIST[@]}"; do [ -f "$CKPT/$p/config.json" ] && [[ " ${models[*]} " != *" $CKPT/$p "* ]] && models+=(--model "$CKPT/$p"); done
  # baseline_decode NAME: the --baseline bundle's bench_decode_step into $WORK/NAME.json.
  baseline_decode() {
    local base_dir=/tmp/crosspoint-gpu-baseline
    if [ ! -x "$base_dir/bin/bench_decode_step" ]; then
      rm -rf "$base_dir" /tmp/baseline-unpack && mkdir -p /tmp/baseline-unpack
      tar -C /tmp/baseline-unpack -xJf "$ROOT/$BASELINE" 2>>"$LOG" && mv /tmp/baseline-unpack/crosspoint-gpu "$base_dir" \
        || { step "$1" 1 0 "cannot unpack $BASELINE"; return; }
    fi
    local commit; commit=$(python3 -c "import json; print(json.load(open('$base_dir/manifest.json'))['commit'])")
    log "== baseline bench_decode_step ($commit) -> $1.json"
    t=$(now)
    CROSSPOINT_COMMIT=$commit timeout $(limit 240) "$base_dir/bin/bench_decode_step" "${models[@]}" \
      --batches "$DECODE_BATCHES" --context 512 --prefill-tokens 2048 --ceilings "$CEIL_FOR_BENCH" \
      --out "$WORK/$1.json" >"$WORK/logs/$1.log" 2>&1
    rc=$?
    tail -30 "$WORK/logs/$1.log" | tee -a "$LOG"
    step "$1" $rc $(( $(now) - t )) "$(tail -1 "$WORK/logs/$1.log" | cut -c1-150)"
  }
  # Old, new, old again: the new binary is timed between two runs of the old one.
  [ -n "$BASELINE" ] && baseline_decode decode_step_baseline
  log "== bench_decode_step ${models[*]} (batches $DECODE_BATCHES, context 512; ceilings $CEIL_FOR_BENCH)"
  t=$(now)
  CROSSPOINT_COMMIT=$(python3 -c "import json; print(json.load(open('$BUNDLE_DIR/manifest.json'))['commit'])") \
    timeout $(limit 240) "$BUNDLE_DIR/bin/bench_decode_step" "${models[@]}" --batches "$DECODE_BATCHES" --context 512 \
    --prefill-tokens 2048 --ceilings "$CEIL_FOR_BENCH" --out "$WORK/decode_step.json" >"$WORK/logs/bench_decode_step.log" 2>&1
  rc=$?
  tail -60 "$WORK/logs/bench_decode_step.log" | tee -a "$LOG"
  step bench_decode_step $rc $(( $(now) - t )) "$(tail -1 "$WORK/logs/bench_decode_step.log" | cut -c1-150)"
  [ -n "$BASELINE" ] && baseline_decode decode_step_baseline_after
  if [ -n "${DECODE_VARIANT_ARGS:-}" ]; then
    log "== bench_decode_step $DECODE_VARIANT_ARGS (the same binary, a variant beside the default)"
    t=$(now)
    # shellcheck disable=SC2086  # the variant's flags, split on purpose
    CROSSPOINT_COMMIT=$(python3 -c "import json; print(json.load(open('$BUNDLE_DIR/manifest.json'))['commit'])") \
      timeout $(limit 240) "$BUNDLE_DIR/bin/bench_decode_step" "${models[@]}" --batches "$DECODE_BATCHES" --context 512 \
      --prefill-tokens 2048 --ceilings "$CEIL_FOR_BENCH" $DECODE_VARIANT_ARGS --out "$WORK/decode_step_variant.json" \
      >"$WORK/logs/bench_decode_step_variant.log" 2>&1
    rc=$?
    tail -40 "$WORK/logs/bench_decode_step_variant.log" | tee -a "$LOG"
    step bench_decode_step_variant $rc $(( $(now) - t )) "$(tail -1 "$WORK/logs/bench_decode_step_variant.log" | cut -c1-150)"
  fi
  if [ $DET_TOO -eq 1 ]; then
    log "== bench_decode_step --deterministic"
    t=$(now)
    CROSSPOINT_COMMIT=$(python3 -c "import json; print(json.load(open('$BUNDLE_DIR/manifest.json'))['commit'])") \
      timeout $(limit 240) "$BUNDLE_DIR/bin/bench_decode_step" "${models[@]}" --batches "$DECODE_BATCHES" --context 512 \
      --prefill-tokens 2048 --ceilings "$CEIL_FOR_BENCH" --deterministic --out "$WORK/decode_step_deterministic.json" \
      >"$WORK/logs/bench_decode_step_deterministic.log" 2>&1
    rc=$?
    tail -40 "$WORK/logs/bench_decode_step_deterministic.log" | tee -a "$LOG"
    step bench_decode_step_deterministic $rc $(( $(now) - t )) "$(tail -1 "$WORK/logs/bench_decode_step_deterministic.log" | cut -c1-150)"
  fi
fi

# ---------------------------------------------------------------- 4c. per-kernel breakdown of one decode step
# ncu times each kernel of one eager decode step per precision at KERNELS_BATCHES (1), alone
# (serialised, caches flushed), with the DRAM bytes it read; scripts/gpu/kernel_breakdown.py
# groups them (kernels.json, a table per step in the log).
if want kernels && [ -x "$BUNDLE_DIR/bin/bench_decode_step" ]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
  kmodels=() klabels=()
  for p in fp16 "${PREC_LIST[@]}"; do
    [ -f "$CKPT/$p/config.json" ] && [[ " ${kmodels[*]} " != *" $CKPT/$p "* ]] || continue
    kmodels+=(--model "$CKPT/$p")
    for b in ${KERNELS_BATCHES//,/ }; do klabels+=("$p batch $b"); done
  done
  if [ -z "$NCU" ]; then
    step kernels 1 0 "ncu not found"
  else
    log "== ncu: every kernel of one decode step (${kmodels[*]}, batches $KERNELS_BATCHES)"
    t=$(now)
    LD_LIBRARY_PATH=$CROSSPOINT_GPU_LD_PATH timeout $(limit "${KERNELS_S:-200}") "$NCU" --profile-from-start off \
      --clock-control none --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum \
      "$BUNDLE_DIR/libexec/bench_decode_step" "${kmodels[@]}" --batches "$KERNELS_BATCHES" --context 512 \
      --prefill-tokens 64 --replays 3 --eager-reps 1 --prefill-reps 1 --ceilings "${HWINFO:-$CEILINGS}" \
      --profile-step --out "$WORK/kernels_bench.json" >"$WORK/logs/kernels_ncu.csv" 2>"$WORK/logs/kernels_ncu.log"
    rc=$?
    labels=$(IFS=,; echo "${klabels[*]}")
    python3 "$ROOT/scripts/gpu/kernel_breakdown.py" "$WORK/logs/kernels_ncu.csv" --labels "$labels" \
      --out "$WORK/kernels.json" >"$WORK/logs/kernels.log" 2>&1 || rc=${rc/#0/3}
    tee -a "$LOG" <"$WORK/logs/kernels.log"
    step kernels $rc $(( $(now) - t )) "$(grep -c '^## ' "$WORK/logs/kernels.log") steps"
  fi
fi
if want gpuvscpu; then
  log "== GPU against CPU on the default model's real weights"
  t=$(now)
  gguf=/tmp/crosspoint-gguf/SmolLM2-135M-Instruct.Q4_1.gguf
  mkdir -p "$(dirname "$gguf")"
  mkdir -p "$GGUF_PARTS"
  [ -d "$ROOT/.gguf_parts" ] && find "$ROOT/.gguf_parts" -type f -exec cp {} "$GGUF_PARTS"/ \; 2>/dev/null
  cat "$GGUF_PARTS"/part-* >"$gguf" 2>>"$LOG"
  if ! (cd "$GGUF_PARTS" && sed "s|  .*|  $gguf|" sha256 | sha256sum -c --quiet -) >>"$LOG" 2>&1; then
    step gpu_vs_cpu 1 $(( $(now) - t )) "the GGUF parts in $GGUF_PARTS are missing or do not join to the file split here"
  else
    timeout $(limit 420) python3 "$ROOT/benchmarks/gpu/check_gpu_vs_cpu.py" --crosspoint "$BUNDLE_DIR/bin/crosspoint" \
      --gguf "$gguf" --work "$WORK/gpuvscpu" --out "$OUT/gpu_vs_cpu.json" \
      --calib-dataset "$BUNDLE_DIR/datasets/sharegpt_sample.json" \
      --commit "$(python3 -c "import json; print(json.load(open('$BUNDLE_DIR/manifest.json'))['commit'])")" \
      >"$WORK/logs/gpu_vs_cpu.log" 2>&1
    rc=$?
    tee -a "$LOG" <"$WORK/logs/gpu_vs_cpu.log" | tail -12
    cp -r "$WORK/gpuvscpu/logs" "$WORK/logs/gpuvscpu" 2>/dev/null
    step gpu_vs_cpu $rc $(( $(now) - t )) "$(grep -v "^\[" "$WORK/logs/gpu_vs_cpu.log" | grep -c " PASS$") cells passed, $(grep -v "^\[" "$WORK/logs/gpu_vs_cpu.log" | grep -c " FAIL$") failed"
  fi
fi
if want servercheck; then
  models=()
  for p in "${PREC_LIST[@]}"; do [ -f "$CKPT/$p/config.json" ] && models+=(--model "$CKPT/$p"); done
  log "== server determinism: ${models[*]}"
  t=$(now)
  timeout $(limit 300) python3 "$ROOT/benchmarks/gpu/check_server_determinism.py" --crosspoint "$BUNDLE_DIR/bin/crosspoint" \
    "${models[@]}" --out "$WORK/server_determinism.json" --log "$WORK/logs/server_determinism_servers.log" \
    >"$WORK/logs/server_determinism.log" 2>&1
  rc=$?
  tee -a "$LOG" <"$WORK/logs/server_determinism.log"
  step server_determinism $rc $(( $(now) - t )) "$(tail -1 "$WORK/logs/server_determinism.log" | cut -c1-150)"
fi
CEIL_FOR_GEMM=${CEILINGS:-$HWINFO}
if { want decode || want gemm; } && [ "${DECODE_MICRO:-1}" = 1 ] && [ -x "$BUNDLE_DIR/bin/bench_gemm" ] && [ -n "$CEIL_FOR_GEMM" ]; then
  log "== bench_gemm (linears alone; ceilings of $CEIL_FOR_GEMM)"
  t=$(now)
  # Read bandwidth, fp16 and fp8 GEMM rates: crosspoint hwinfo --json's "ceilings", or ceilings.py's
  # best median streaming read, fp16 GEMM and best fp8 GEMM (no defaults).
  read -r BW F16 F8 < <(python3 "$ROOT/scripts/gpu/read_ceilings.py" "$CEIL_FOR_GEMM")
  [ -n "$F8" ] || { step bench_gemm 1 0 "could not read the ceilings from $CEIL_FOR_GEMM"; BW=""; }
  # BENCH_GEMM_ARGS / BENCH_ATTENTION_ARGS: extra arguments (e.g. --gemv16-only, --small-batch).
  [ -n "$BW" ] && timeout $(limit "${BENCH_GEMM_S:-150}") "$BUNDLE_DIR/bin/bench_gemm" --bw-gbps "$BW" --fp16-tflops "$F16" --fp8-tflops "$F8" \
    ${BENCH_GEMM_ARGS:-} --out "$WORK/bench_gemm.json" >"$WORK/logs/bench_gemm.log" 2>&1
  rc=$?
  grep -E "^\|" "$WORK/logs/bench_gemm.log" | tail -40 | tee -a "$LOG"
  step bench_gemm $rc $(( $(now) - t )) "bw $BW GB/s"
  if [ -n "$BW" ] && [ -x "$BUNDLE_DIR/bin/bench_attention" ] && [ "${ATTENTION_MICRO:-1}" = 1 ]; then
    log "== bench_attention (paged attention and decoder ops alone)"
    t=$(now)
    timeout $(limit 120) "$BUNDLE_DIR/bin/bench_attention" --bw-gbps "$BW" --reps 20 ${BENCH_ATTENTION_ARGS:-} --out "$WORK/bench_attention.json" \
      >"$WORK/logs/bench_attention.log" 2>&1
    rc=$?
    grep -E "decode|prefill|FAILED" "$WORK/logs/bench_attention.log" | tail -30 | tee -a "$LOG"
    step bench_attention $rc $(( $(now) - t )) ""
  fi
fi

# The fp8 KV cache's attention beside fp16's (bench_attention --fp8), against the measured read ceiling.
if want kvattn && [ -x "$BUNDLE_DIR/bin/bench_attention" ] && [ -n "$CEIL_FOR_GEMM" ]; then
  read -r BW _ _ < <(python3 "$ROOT/scripts/gpu/read_ceilings.py" "$CEIL_FOR_GEMM")
  log "== bench_attention --fp8 (e4m3 KV cache beside fp16; read ceiling $BW GB/s)"
  t=$(now)
  timeout $(limit 150) "$BUNDLE_DIR/bin/bench_attention" --fp8 --bw-gbps "$BW" --reps 20 --out "$WORK/bench_attention_fp8.json" \
    >"$WORK/logs/bench_attention_fp8.log" 2>&1
  rc=$?
  grep -E "^(decode|prefill) |FAILED|ratio" "$WORK/logs/bench_attention_fp8.log" | tail -24 | tee -a "$LOG"
  step bench_attention_fp8 $rc $(( $(now) - t )) "bw $BW GB/s"
fi

# ---------------------------------------------------------------- 5. torch peers (before the sweep: the issue's side-by-side figures)
if want peers && [ -f "$BUNDLE_DIR/tools/torch_peer.py" ]; then
  IFS=, read -r -a PEER_MODE_LIST <<<"$PEER_MODES"
  for mode in "${PEER_MODE_LIST[@]}"; do
    if [ "$(left_s)" -lt ${PEER_MIN_LEFT_S:-150} ]; then log "peers: $(left_s) s left, $mode skipped"; step "peer_$mode" -1 0 "skipped: no time"; continue; fi
    log "== torch peer: compiled gpt-fast-style decode, $mode, batch 1"
    t=$(now)
    timeout $(limit 170) python3 "$BUNDLE_DIR/tools/torch_peer.py" --part compile --mode $mode --bss 1 \
      --out "$WORK/peer_$mode.json" >>"$WORK/logs/peers.log" 2>&1
    step "peer_$mode" $? $(( $(now) - t )) "$(tail -1 "$WORK/logs/peers.log" | cut -c1-150)"
  done
fi
# ---------------------------------------------------------------- 6. sweep
if want sweep; then
  log "== crosspoint sweep --device $SWEEP_DEVICE ($PRECISIONS x $CONCURRENCY, $NUM_PROMPTS prompts, $DATASET)"
  sweep_args=(--device "$SWEEP_DEVICE" --model "$CKPT/fp16" --precisions "$PRECISIONS" --concurrency "$CONCURRENCY"
              --num-prompts "$NUM_PROMPTS" --eval-samples 0 --max-model-len 4096 --max-bisect-runs "$BISECT"
              --gpu-memory-utilization "$GPU_MEM" --ignore-eos --out "$WORK/sweep" --server-start-timeout 240
              --kv-cache-dtypes "$KV_DTYPES" --prefix-caching "$PREFIX_CACHING")
  for p in "${PREC_LIST[@]}"; do [ "$p" = fp16 ] || sweep_args+=(--precision-model "$p=$CKPT/$p"); done
  if [ "$DATASET" = random ]; then
    sweep_args+=(--dataset random --random-input-len 218 --output-len 220)
  elif [ "$DATASET" = prefix_repetition ]; then  # a shared system prompt or document before each question
    sweep_args+=(--dataset prefix_repetition --prefix-len "${PREFIX_LEN:-1024}" --suffix-len "${SUFFIX_LEN:-128}"
                 --num-prefixes "${NUM_PREFIXES:-8}" --output-len "${PREFIX_OUTPUT_LEN:-128}")
  else
    sweep_args+=(--dataset sharegpt --dataset-path "$BUNDLE_DIR/datasets/sharegpt_sample.json" --output-len 0)
  fi
  # The sweep measures the GPU itself (crosspoint hwinfo, kept in its folder) unless ceilings are given.
  [ -n "$CEILINGS_GIVEN" ] && sweep_args+=(--ceilings "$CEILINGS")
  if [ -n "$RESUME_SWEEP" ]; then
    if [ -f "$RESUME_SWEEP/sweep.json" ]; then
      mkdir -p "$WORK/sweep" && cp -r "$RESUME_SWEEP"/. "$WORK/sweep/"
      log "resuming the sweep of $RESUME_SWEEP: $(ls "$WORK/sweep/cells" 2>/dev/null | grep -c json) cells kept"
    else
      log "--resume-sweep $RESUME_SWEEP holds no sweep.json: starting afresh"
    fi
  fi
  [ $EAGER -eq 1 ] && sweep_args+=(--enforce-eager)
  [ -n "${MEMORY_BUDGET:-}" ] && sweep_args+=(--memory-budget "$MEMORY_BUDGET")
  [ -n "${MAX_NUM_SEQS:-}" ] && sweep_args+=(--max-num-seqs "$MAX_NUM_SEQS")
  echo "crosspoint sweep ${sweep_args[*]}" >>"$LOG"
  t=$(now)
  sweep_limit=540; [ $DET_TOO -eq 1 ] && sweep_limit=$(( ($(left_s) - 40) / 2 ))
  timeout $(limit $sweep_limit) "$BUNDLE_DIR/bin/crosspoint" sweep "${sweep_args[@]}" >"$WORK/logs/sweep.log" 2>&1
  rc=$?
  grep -vE "^\s*$|sweep cells \[" "$WORK/logs/sweep.log" | tail -15 | tee -a "$LOG"
  step sweep $rc $(( $(now) - t )) "$(ls "$WORK/sweep/cells" 2>/dev/null | grep -c json) cells"
  if [ $DET_TOO -eq 1 ]; then
    det_args=("${sweep_args[@]}")
    for i in "${!det_args[@]}"; do [ "${det_args[$i]}" = "$WORK/sweep" ] && det_args[$i]="$WORK/sweep-deterministic"; done
    t=$(now)
    timeout $(limit 540) "$BUNDLE_DIR/bin/crosspoint" sweep "${det_args[@]}" --deterministic \
      >"$WORK/logs/sweep-deterministic.log" 2>&1
    rc=$?
    grep -vE "^\s*$|sweep cells \[" "$WORK/logs/sweep-deterministic.log" | tail -15 | tee -a "$LOG"
    step sweep_deterministic $rc $(( $(now) - t )) "$(ls "$WORK/sweep-deterministic/cells" 2>/dev/null | grep -c json) cells"
  fi
  for f in "$WORK"/sweep/logs/serve-*.log; do
    [ -f "$f" ] && { echo "-- $(basename "$f"):"; grep -E "GPU|weights|KV cache|capacity|graphs|start-up|error|Error" "$f" | head -12; }
  done 2>/dev/null | tee -a "$LOG"
fi

if want quantpeer && [ -f "$BUNDLE_DIR/tools/torch_peer.py" ] && [ "$(left_s)" -gt 120 ]; then
  log "== torch peer: graph-replayed fp8/int4 decode at batch 1/8/32/64 (--part quant)"
  t=$(now)
  timeout $(limit 240) python3 "$BUNDLE_DIR/tools/torch_peer.py" --part quant --out "$WORK/peer_quant.json" >>"$WORK/logs/peers.log" 2>&1
  step peer_quant $? $(( $(now) - t )) "$(tail -1 "$WORK/logs/peers.log" | cut -c1-150)"
fi
