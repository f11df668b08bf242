"""CPU prefill and decode tok/s: crosspoint vs llama-cpp-python, same machine, same threads.

    python benchmarks/cpu_vs_llamacpp.py --crosspoint build/crosspoint --threads 2 \
        [--model DIR (converted fp16 SmolLM2)] [--gguf Q4_1.gguf] [--f16-gguf F16.gguf]

Prints a table with, beside each decode figure, the roofline floor: weight bytes read per
token / measured memory bandwidth (a numpy copy of 512 MiB, counted as read + write).
Writes benchmarks/results/cpu_vs_llamacpp.json. Not a test: numbers depend on the machine
and on what else runs on it.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = pathlib.Path(os.environ.get("CROSSPOINT_CACHE", pathlib.Path.home() / ".cache" / "crosspoint"))
PROMPT = ("Write a short story about a robot who learns to paint. The robot lives in a small town by the sea, "
          "and every morning it watches the fishermen leave the harbour. ") * 4


def memory_bandwidth_gbs(repeats=5):
    src = np.ones(64 * 1024 * 1024, dtype=np.float64)  # 512 MiB
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * src.nbytes / best / 1e9


def run_crosspoint(binary, model, threads, max_tokens):
    cmd = [binary, "generate", "--model", model, "--prompt", PROMPT, "--max-tokens", str(max_tokens),
           "--threads", str(threads), "--stats"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    m = re.search(r"prefill (\d+) tokens in ([\d.]+) s = ([\d.]+) tok/s \| decode (\d+) tokens in ([\d.]+) s = ([\d.]+) tok/s",
                  proc.stderr)
    bytes_m = re.search(r"([\d.]+) MB read per token", proc.stderr)
    return {"prompt_tokens": int(m.group(1)), "prefill_tok_s": float(m.group(3)), "decode_tokens": int(m.group(4)),
            "decode_tok_s": float(m.group(6)), "weight_mb_per_token": float(bytes_m.group(1)), "command": " ".join(cmd)}


def run_llamacpp(gguf, threads, max_tokens):
    from llama_cpp import Llama
    llm = Llama(model_path=str(gguf), n_ctx=1024, n_threads=threads, n_threads_batch=threads, n_batch=512, verbose=False)
    prompt_ids = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
    llm.eval(prompt_ids[:8])  # warm up
    llm.reset()
    start = time.perf_counter()
    llm.eval(prompt_ids)
    prefill_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(max_tokens - 1):
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        llm.eval([token])
    decode_s = time.perf_counter() - start
    return {"prompt_tokens": len(prompt_ids), "prefill_tok_s": len(prompt_ids) / prefill_s,
            "decode_tokens": max_tokens - 1, "decode_tok_s": (max_tokens - 1) / decode_s,
            "weight_mb_per_token": os.path.getsize(gguf) / 1e6}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crosspoint", default=str(ROOT / "build" / "crosspoint"))
    parser.add_argument("--model", default=str(CACHE / "models" / "SmolLM2-135M-Instruct"))
    parser.add_argument("--gguf", default=str(CACHE / "gguf" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--f16-gguf", help="an F16 GGUF of the same weights (tests/fixtures/model/make_llamacpp_greedy.py makes one)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()

    bandwidth = memory_bandwidth_gbs()
    rows = {"crosspoint fp16": run_crosspoint(args.crosspoint, args.model, args.threads, args.max_tokens),
            "llama.cpp Q4_1": run_llamacpp(args.gguf, args.threads, args.max_tokens)}
    if args.f16_gguf:
        rows["llama.cpp F16"] = run_llamacpp(args.f16_gguf, args.threads, args.max_tokens)
    print(f"threads {args.threads}, measured memory bandwidth {bandwidth:.1f} GB/s (numpy copy, read+write)")
    print(f"{'engine':<18}{'prompt':>7}{'prefill tok/s':>15}{'decode tok/s':>14}{'MB/token':>10}{'roofline tok/s':>16}{'% of roofline':>15}")
    for name, r in rows.items():
        roofline = bandwidth * 1e3 / r["weight_mb_per_token"]
        r["roofline_decode_tok_s"] = roofline
        print(f"{name:<18}{r['prompt_tokens']:>7}{r['prefill_tok_s']:>15.1f}{r['decode_tok_s']:>14.1f}"
              f"{r['weight_mb_per_token']:>10.1f}{roofline:>16.1f}{100 * r['decode_tok_s'] / roofline:>14.1f}%")
    base = rows["crosspoint fp16"]
    for name, r in rows.items():
        if name != "crosspoint fp16":
            print(f"crosspoint / {name}: prefill x{base['prefill_tok_s'] / r['prefill_tok_s']:.2f}, "
                  f"decode x{base['decode_tok_s'] / r['decode_tok_s']:.2f}")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu_vs_llamacpp.json").write_text(json.dumps(
        {"threads": args.threads, "memory_bandwidth_gbs": bandwidth, "engines": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
