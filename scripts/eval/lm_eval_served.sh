#!/usr/bin/env bash
# Scores `crosspoint serve` with EleutherAI's lm-evaluation-harness through its
# `local-completions` model (the OpenAI completions API: echo + logprobs for loglikelihood,
# greedy generation for generate_until), on two small tasks built from files in this repository
# (scripts/eval/lm_eval_tasks/: 32 multiple-choice questions, 24 short-answer questions), so no
# dataset hub is needed. lm-eval (with transformers, for the tokenizer) goes into its own virtual
# environment, $CROSSPOINT_CACHE/lm-eval-venv, never the test environment.
#
#   scripts/eval/lm_eval_served.sh [--model DIR|default] [--device cpu|cuda|auto] [--limit N]
#                                  [--out FILE] [--tokenizer DIR]
#
# The served model's Hugging Face tokenizer files (tokenizer.json, tokenizer_config.json) tell
# lm-eval where each continuation starts; --tokenizer defaults to the converted default model's
# directory. The result (commit, date, command, lm-eval's numbers) goes to --out, by default
# benchmarks/results/<device>_<date>_lm_eval.json. See docs/evaluation.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh
LM_EVAL_VERSION=0.4.13
model=default
device=cpu
limit=""
out=""
tokenizer="$CACHE/models/SmolLM2-135M-Instruct"
while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tokenizer) tokenizer=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "lm_eval_served.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=${CROSSPOINT_BIN:-build/crosspoint}
[ -x "$bin" ] || { echo "lm_eval_served.sh: $bin is missing: build it first (cmake --build build --target crosspoint)" >&2; exit 1; }
[ -f "$tokenizer/tokenizer.json" ] || { echo "lm_eval_served.sh: no tokenizer.json in $tokenizer (run scripts/setup.sh or pass --tokenizer)" >&2; exit 1; }

venv="$CACHE/lm-eval-venv"
if ! "$venv/bin/python" -c "import lm_eval" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "lm-eval[api]==$LM_EVAL_VERSION" transformers
fi

port=$((20000 + $$ % 10000))
log=$(mktemp /tmp/crosspoint-lm-eval-serve.XXXXXX.log)
work=$(mktemp -d /tmp/crosspoint-lm-eval.XXXXXX)
"$bin" serve --model "$model" --device "$device" --port "$port" --served-model-name crosspoint >"$log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "lm_eval_served.sh: the server exited:" >&2; tail -20 "$log" >&2; exit 1; }
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { echo "lm_eval_served.sh: the server did not come up" >&2; exit 1; }

model_args="model=crosspoint,base_url=http://127.0.0.1:$port/v1/completions,tokenizer_backend=huggingface"
model_args+=",tokenizer=$tokenizer,tokenized_requests=True,num_concurrent=1,max_retries=1,timeout=600"
cmd=("$venv/bin/lm_eval" --model local-completions --model_args "$model_args"
     --tasks crosspoint_mc,crosspoint_gen --include_path scripts/eval/lm_eval_tasks
     --batch_size 1 --output_path "$work" --seed 1234)
[ -n "$limit" ] && cmd+=(--limit "$limit")
start=$(date +%s)
HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "${cmd[@]}"
seconds=$(( $(date +%s) - start ))

date_tag=$(date -u +%Y-%m-%d)
[ -n "$out" ] || out="benchmarks/results/${device}_${date_tag}_lm_eval.json"
results=$(find "$work" -name 'results_*.json' | head -1)
[ -n "$results" ] || { echo "lm_eval_served.sh: lm-eval wrote no results under $work" >&2; exit 1; }
"$venv/bin/python" - "$results" "$out" "$seconds" "$model" "$device" "${cmd[*]}" <<'PY'
import json, subprocess, sys, datetime
results_file, out, seconds, model, device, command = sys.argv[1:]
lm = json.load(open(results_file))
record = {
    "what": "lm-evaluation-harness local-completions against crosspoint serve",
    "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
    "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "model": model,
    "device": device,
    "command": command,
    "lm_eval_version": lm.get("lm_eval_version"),
    "wall_seconds": int(seconds),
    "results": lm["results"],
    "n_samples": lm.get("n-samples"),
    "configs": {k: {f: v.get(f) for f in ("output_type", "doc_to_text", "target_delimiter", "generation_kwargs")}
                for k, v in lm.get("configs", {}).items()},
}
with open(out, "w") as f:
    json.dump(record, f, indent=1)
    f.write("\n")
print(f"wrote {out}")
PY
