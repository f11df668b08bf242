"""CPU prefill and decode tok/s at batch 1: crosspoint vs llama-cpp-python, same machine, same
threads, side by side in one run.

    python benchmarks/cpu_vs_llamacpp.py --crosspoint build/crosspoint --threads 2 [--repeats 3]

Engines (each skipped with a note when its files are missing):
  crosspoint fp16 / w8a8-fp8 / w4a16: the default model's converted directory and the
      quantised directories `crosspoint sweep` / `quantize` leave in CROSSPOINT_CACHE/quantized
      (or --fp8-dir / --w4a16-dir);
  llama.cpp Q4_1: the GGUF the default model comes from; Q8_0 and F16: made from it once by
      llama.cpp's own llama_model_quantize (allow_requantize; F16 = the Q4_1 weights dequantised,
      the same values crosspoint's fp16 directory holds).
Rounds are interleaved (every engine once per round) so that a change in machine load hits
all engines alike; the table gives the median of the rounds. Beside each decode figure: the
weight bytes read per token, the roofline tok/s = measured bandwidth / bytes (numpy copy of
512 MiB counted as read + write), the load average during the runs and the share of a
thread-count's worth of cores the engine got (CPU seconds / wall seconds / threads), which
shows contention. Writes benchmarks/results/cpu_<UTC date>.json. Not a test.
"""
import argparse
import datetime
import glob
import json
import os
import pathlib
import re
import resource
import statistics
import subprocess
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
CACHE = pathlib.Path(os.environ.get("CROSSPOINT_CACHE", pathlib.Path.home() / ".cache" / "crosspoint"))
Q4_GGUF = CACHE / "gguf" / "SmolLM2-135M-Instruct.Q4_1.gguf"
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


def children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_crosspoint(binary, model, threads, max_tokens):
    cmd = [binary, "generate", "--device", "cpu", "--model", str(model), "--prompt", PROMPT, "--max-tokens", str(max_tokens),
           "--threads", str(threads), "--stats"]
    cpu0, wall0 = children_cpu_s(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    cpu_s, wall_s = children_cpu_s() - cpu0, time.perf_counter() - wall0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed: {proc.stderr.strip()[-300:]}")
    m = re.search(r"prefill (\d+) tokens in ([\d.]+) s = ([\d.]+) tok/s \| decode (\d+) tokens in ([\d.]+) s = ([\d.]+) tok/s",
                  proc.stderr)
    bytes_m = re.search(r"([\d.]+) MB read per token", proc.stderr)
    return {"prompt_tokens": int(m.group(1)), "prefill_tok_s": float(m.group(3)), "decode_tokens": int(m.group(4)),
            "decode_tok_s": float(m.group(6)), "weight_mb_per_token": float(bytes_m.group(1)),
            "cpu_share": cpu_s / wall_s / threads}


def run_llamacpp(gguf, threads, max_tokens):
    from llama_cpp import Llama
    llm = Llama(model_path=str(gguf), n_ctx=1024, n_threads=threads, n_threads_batch=threads, n_batch=512, verbose=False)
    prompt_ids = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
    llm.eval(prompt_ids[:8])  # warm up
    llm.reset()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    start = time.perf_counter()
    llm.eval(prompt_ids)
    prefill_s = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(max_tokens - 1):  # the first token comes from the prefill, as in crosspoint's count
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        llm.eval([token])
    decode_s = time.perf_counter() - start
    cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
    del llm
    return {"prompt_tokens": len(prompt_ids), "prefill_tok_s": len(prompt_ids) / prefill_s,
            "decode_tokens": max_tokens - 1, "decode_tok_s": (max_tokens - 1) / decode_s,
            "weight_mb_per_token": os.path.getsize(gguf) / 1e6, "cpu_share": cpu_s / wall_s / threads}


def requantized_gguf(src, ftype_name):
    """src re-quantised by llama.cpp (cached beside it)."""
    import llama_cpp
    dst = src.with_name(src.name.replace("Q4_1", ftype_name))
    if not dst.exists():
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype_name}")
        params.allow_requantize = True
        params.nthread = 2
        rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), params)
        if rc != 0:
            raise RuntimeError(f"llama_model_quantize to {ftype_name} failed ({rc})")
    return dst


def first_dir(pattern):
    found = sorted(glob.glob(str(CACHE / "quantized" / pattern)))
    return found[0] if found else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crosspoint", default=str(ROOT / "build" / "crosspoint"))
    parser.add_argument("--model", default=str(CACHE / "models" / "SmolLM2-135M-Instruct"))
    parser.add_argument("--fp8-dir", default=first_dir("*-w8a8-fp8"))
    parser.add_argument("--w4a16-dir", default=first_dir("*-w4a16"))
    parser.add_argument("--gguf", default=str(Q4_GGUF))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                             f"cpu_{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}.json"))
    args = parser.parse_args()

    q4 = pathlib.Path(args.gguf)
    engines = {}  # name -> callable running one measurement
    for name, d in [("crosspoint fp16", args.model), ("crosspoint w8a8-fp8", args.fp8_dir),
                    ("crosspoint w4a16", args.w4a16_dir)]:
        if d and pathlib.Path(d, "model.safetensors").exists():
            engines[name] = (lambda d=d: run_crosspoint(args.crosspoint, d, args.threads, args.max_tokens), d)
        else:
            print(f"skipping {name}: no directory")
    engines["llama.cpp Q4_1"] = (lambda: run_llamacpp(q4, args.threads, args.max_tokens), str(q4))
    for ftype in ["Q8_0", "F16"]:
        path = requantized_gguf(q4, ftype)
        engines[f"llama.cpp {ftype}"] = (lambda p=path: run_llamacpp(p, args.threads, args.max_tokens), str(path))

    bandwidth = memory_bandwidth_gbs()
    samples = {name: [] for name in engines}
    loads = []
    for round_idx in range(args.repeats):
        for name, (run, _) in engines.items():
            load_before = os.getloadavg()[0]
            r = run()
            r["load_avg_1min"] = round((load_before + os.getloadavg()[0]) / 2, 2)
            loads.append(r["load_avg_1min"])
            samples[name].append(r)
            print(f"round {round_idx + 1} {name}: prefill {r['prefill_tok_s']:.1f} tok/s, decode {r['decode_tok_s']:.1f} "
                  f"tok/s, load {r['load_avg_1min']}, cpu share {r['cpu_share']:.2f}", flush=True)

    rows = {}
    for name, runs in samples.items():
        med = {k: statistics.median(r[k] for r in runs) for k in
               ["prefill_tok_s", "decode_tok_s", "weight_mb_per_token", "cpu_share", "load_avg_1min"]}
        med["roofline_decode_tok_s"] = bandwidth * 1e3 / med["weight_mb_per_token"]
        rows[name] = {"median": med, "runs": runs, "weights": engines[name][1], "prompt_tokens": runs[0]["prompt_tokens"],
                      "decode_tokens": runs[0]["decode_tokens"]}

    print(f"\nthreads {args.threads}, {args.repeats} rounds, load average during runs {min(loads):.1f}-{max(loads):.1f}, "
          f"memory bandwidth {bandwidth:.1f} GB/s (numpy copy, read+write)")
    print(f"{'engine':<22}{'prefill tok/s':>14}{'decode tok/s':>13}{'MB/token':>10}{'roofline':>10}{'% roof':>8}{'cpu share':>10}")
    for name, row in rows.items():
        m = row["median"]
        print(f"{name:<22}{m['prefill_tok_s']:>14.1f}{m['decode_tok_s']:>13.1f}{m['weight_mb_per_token']:>10.1f}"
              f"{m['roofline_decode_tok_s']:>10.1f}{100 * m['decode_tok_s'] / m['roofline_decode_tok_s']:>7.1f}%"
              f"{m['cpu_share']:>10.2f}")
    pairs = [("crosspoint fp16", "llama.cpp F16"), ("crosspoint w8a8-fp8", "llama.cpp Q8_0"),
             ("crosspoint w4a16", "llama.cpp Q4_1"), ("crosspoint fp16", "llama.cpp Q4_1")]
    ratios = {}
    for a, b in pairs:
        if a in rows and b in rows:
            ra, rb = rows[a]["median"], rows[b]["median"]
            ratios[f"{a} / {b}"] = {"prefill": ra["prefill_tok_s"] / rb["prefill_tok_s"],
                                    "decode": ra["decode_tok_s"] / rb["decode_tok_s"]}
            print(f"{a} / {b}: prefill x{ratios[f'{a} / {b}']['prefill']:.2f}, decode x{ratios[f'{a} / {b}']['decode']:.2f}")
    import llama_cpp
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
        "num_cpus": os.cpu_count(), "threads": args.threads, "repeats": args.repeats, "max_tokens": args.max_tokens,
        "load_avg_1min_range": [min(loads), max(loads)], "memory_bandwidth_gbs": bandwidth,
        "llama_cpp_python": llama_cpp.__version__, "engines": rows, "ratios": ratios}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
