#!/usr/bin/env python3
"""GPU against CPU on real weights: the same checkpoint served by `crosspoint serve --device cuda`
and `--device cpu`, per precision and KV-cache dtype, compared as a client sees them.

From the default model's GGUF (SmolLM2-135M-Instruct, Q4_1) it writes, with the given crosspoint:
  fp16              crosspoint convert (the GGUF's weights dequantised to fp16)
  w8a8-fp8          crosspoint quantize --scheme w8a8-fp8 (compressed-tensors FP8-dynamic)
  w4a16-rtn-g64     crosspoint quantize --scheme w4a16 --method rtn --group-size 64
  w4a16-gptq-g64-act  crosspoint quantize --scheme w4a16 --method gptq --group-size 64 --desc-act
(group 64: SmolLM2's hidden size 576 is not a multiple of 128). For each one and each KV dtype
(auto, fp8) each server of --devices gets (cuda; cpu, the CPU in f32; cpu:float16, the CPU with
--dtype float16, i.e. in the GPU's dtype flow: every activation rounded to fp16 where the GPU
holds it):
  echo      the prompt logprobs of TEXT (completions, echo + logprobs, max_tokens 0):
            mean and max |logprob_a - logprob_b| over its tokens
  greedy    PROMPTS, 48 greedy tokens each: replies identical, and the mean share of tokens
            before the first difference
The first device is compared with each other one. A cell passes when its mean |delta logprob|
against the last device (the reference: cpu:float16 by default) is at most its tolerance: the
most that one f32 ulp of noise on every activation moves the same flow on the CPU (NOISE_TOLERANCES,
the largest of three seeds in tests/quant/test_activation_noise.cc on the default model; any two
implementations differ at least that much), and for fp16 with an fp16 KV cache --tolerance (0.005).
For scale, each precision is also compared with fp16 on each device alone, and the
text's perplexity is reported per device. Standard library only.

usage: check_gpu_vs_cpu.py --crosspoint BIN --gguf FILE --work DIR --out FILE.json
       [--devices cuda,cpu,cpu:float16] [--kv-cache-dtypes auto,fp8] [--precisions ...] [--calib-dataset FILE]
--devices cpu,cpu runs the same flow on a machine without a GPU (every delta 0).
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "harness"))
from server_process import ServerProcess  # noqa: E402

TEXT = (
    "The lighthouse stood at the edge of the bay for more than a century. Every evening the keeper climbed "
    "the spiral stairs, wound the clockwork that turned the lens, and wrote the weather in a leather book. "
    "Ships passing in the night saw its beam sweep across the water once every twelve seconds.\n\n"
    "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n"
    "In 1969, three astronauts flew to the Moon; two of them walked on its surface while the third orbited "
    "above. The mission lasted eight days, and the samples they brought back are still studied today. "
    "Water boils at 100 degrees Celsius at sea level, but at lower temperatures on high mountains, because "
    "the air pressure there is lower. A kilometre is 1,000 metres; a mile is about 1.609 kilometres."
)
PROMPTS = [
    "Write a short poem about the sea.",
    "Explain what a hash table is in two sentences.",
    "List three fruits that are red.",
    "What is the capital of France? Answer and then describe the city.",
    "Translate 'good morning' into Spanish, French and German.",
    "Give me a recipe for a simple tomato soup.",
]
MAX_TOKENS = 48


# (precision family, KV dtype) -> mean |delta logprob| that 1 f32 ulp of noise on every activation
# gives on the CPU in the GPU's dtype flow (tests/quant/test_activation_noise.cc, the largest of
# seeds 1-3 rounded up, default model, measured 2026-12-06; W4A16 RTN group 64 stands for every
# W4A16, whose activations flow alike). fp16 with an fp16 cache keeps --tolerance.
NOISE_TOLERANCES = {("w4a16", "auto"): 0.0053, ("fp16", "fp8"): 0.071, ("w4a16", "fp8"): 0.089,
                    ("w8a8-fp8", "auto"): 0.165, ("w8a8-fp8", "fp8"): 0.215}


def tolerance_for(precision, kv, default):
    family = "w4a16" if precision.startswith("w4a16") else precision
    return NOISE_TOLERANCES.get((family, kv), default)


def log(msg):
    print(f"[check_gpu_vs_cpu {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def post(port, body, timeout=600):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())["choices"][0]


def run(cmd, log_path):
    with open(log_path, "w") as f:
        subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT)


def make_checkpoints(args, precisions):
    dirs = {}
    fp16 = os.path.join(args.work, "fp16")
    logs = os.path.join(args.work, "logs")
    os.makedirs(logs, exist_ok=True)
    if not os.path.exists(os.path.join(fp16, "config.json")):
        run([args.crosspoint, "convert", "--gguf", args.gguf, "--out", fp16], os.path.join(logs, "convert.log"))
    quant = {
        "w8a8-fp8": ["--scheme", "w8a8-fp8"],
        "w4a16-rtn-g64": ["--scheme", "w4a16", "--method", "rtn", "--group-size", "64"],
        "w4a16-gptq-g64-act": ["--scheme", "w4a16", "--method", "gptq", "--group-size", "64", "--desc-act",
                               "--calib-samples", str(args.calib_samples)]
                              + (["--calib-dataset", args.calib_dataset] if args.calib_dataset else []),
    }
    for p in precisions:
        if p == "fp16":
            dirs[p] = fp16
            continue
        out = os.path.join(args.work, p)
        if not os.path.exists(os.path.join(out, "config.json")):
            start = time.time()
            run([args.crosspoint, "quantize", "--model", fp16, "--out", out, "--force"] + quant[p],
                os.path.join(logs, f"quantize_{p}.log"))
            log(f"quantised {p} in {time.time() - start:.1f} s")
        dirs[p] = out
    return dirs


def serve_and_query(args, model, device_spec, kv_dtype, port, log_path):
    device, _, dtype = device_spec.partition(":")
    cmd = [args.crosspoint, "serve", "--model", model, "--device", device, "--port", str(port),
           "--kv-cache-dtype", kv_dtype, "--max-model-len", "1024", "--dtype", dtype or "auto"]
    if device == "cuda":
        cmd += ["--gpu-memory-utilization", "0.3"]
    with ServerProcess(cmd, port=port, log_path=log_path, timeout=600, poll_s=0.3):
        echo = post(port, {"prompt": TEXT, "echo": True, "logprobs": 0, "max_tokens": 0, "temperature": 0})
        replies = []
        for prompt in PROMPTS:
            c = post(port, {"prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0, "logprobs": 0,
                            "ignore_eos": True})
            replies.append({"text": c["text"], "tokens": c["logprobs"]["tokens"]})
        return {"prompt_tokens": echo["logprobs"]["tokens"],
                "prompt_logprobs": echo["logprobs"]["token_logprobs"], "replies": replies}


def compare(a, b):
    if a["prompt_tokens"] != b["prompt_tokens"]:
        raise RuntimeError("the two servers tokenised the text differently")
    deltas = [abs(x - y) for x, y in zip(a["prompt_logprobs"], b["prompt_logprobs"])
              if x is not None and y is not None]
    shared, identical = [], 0
    for ra, rb in zip(a["replies"], b["replies"]):
        n = 0
        while n < min(len(ra["tokens"]), len(rb["tokens"])) and ra["tokens"][n] == rb["tokens"][n]:
            n += 1
        shared.append(n / max(len(ra["tokens"]), 1))
        identical += ra["tokens"] == rb["tokens"]
    return {"tokens_compared": len(deltas), "mean_abs_delta_logprob": sum(deltas) / len(deltas),
            "max_abs_delta_logprob": max(deltas), "greedy_identical": identical, "greedy_total": len(a["replies"]),
            "greedy_shared_prefix_mean": sum(shared) / len(shared)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--crosspoint", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--work", required=True, help="folder for the checkpoints and server logs")
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", default="cuda,cpu,cpu:float16")
    ap.add_argument("--precisions", default="fp16,w8a8-fp8,w4a16-rtn-g64,w4a16-gptq-g64-act")
    ap.add_argument("--kv-cache-dtypes", default="auto,fp8")
    ap.add_argument("--calib-dataset", default="")
    ap.add_argument("--calib-samples", type=int, default=32)
    ap.add_argument("--tolerance", type=float, default=0.005)
    ap.add_argument("--port", type=int, default=8431)
    ap.add_argument("--commit", default="", help="the commit the binary was built from (recorded)")
    args = ap.parse_args()
    devices = args.devices.split(",")
    precisions = args.precisions.split(",")
    dirs = make_checkpoints(args, precisions)
    cells, answers = [], {}
    for p in precisions:
        for kv in args.kv_cache_dtypes.split(","):
            got = {}
            for i, device in enumerate(devices):
                start = time.time()
                got[i] = serve_and_query(args, dirs[p], device, kv, args.port + i, os.path.join(
                    args.work, "logs", f"serve_{p}_{kv}_{i}_{device.replace(':', '_')}.log"))
                log(f"{p} kv={kv} on {device}: {time.time() - start:.1f} s")
            answers[(p, kv)] = got
            for i in range(1, len(devices)):
                cell = {"precision": p, "kv_cache_dtype": kv, "devices": [devices[0], devices[i]],
                        "judged": i == len(devices) - 1, **compare(got[0], got[i])}
                cell["tolerance"] = tolerance_for(p, kv, args.tolerance)
                cell["passed"] = cell["mean_abs_delta_logprob"] <= cell["tolerance"]
                log(f"{p} kv={kv} {devices[0]} vs {devices[i]}: mean |d logprob| {cell['mean_abs_delta_logprob']:.5f} "
                    f"max {cell['max_abs_delta_logprob']:.4f}, greedy identical {cell['greedy_identical']}/"
                    f"{cell['greedy_total']}" + (f" {'PASS' if cell['passed'] else 'FAIL'}" if cell["judged"] else ""))
                cells.append(cell)
    # The scale of those differences: each precision against fp16 (auto KV) on each device alone, and
    # the text's perplexity per device: what the quality a sweep reports would be on that device.
    versus_fp16, perplexity = [], []
    for (p, kv), got in answers.items():
        for i, device in enumerate(devices):
            lps = [x for x in got[i]["prompt_logprobs"] if x is not None]
            perplexity.append({"precision": p, "kv_cache_dtype": kv, "device": device,
                               "perplexity": math.exp(-sum(lps) / len(lps))})
            if (p, kv) != ("fp16", "auto") and ("fp16", "auto") in answers:
                versus_fp16.append({"precision": p, "kv_cache_dtype": kv, "device": device,
                                    **compare(answers[("fp16", "auto")][i], got[i])})
    result = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "commit": args.commit, "command": " ".join(sys.argv), "gguf": os.path.basename(args.gguf),
              "tolerance": args.tolerance, "versus_fp16_on_one_device": versus_fp16, "perplexity": perplexity,
              "text_tokens": cells[0]["tokens_compared"] + 1 if cells else 0, "cells": cells,
              "passed": all(c["passed"] for c in cells if c["judged"])}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{'precision':<20} {'kv':<5} {'against':<12} {'mean|d|':>9} {'max|d|':>8} {'greedy':>7}")
    for c in cells:
        print(f"{c['precision']:<20} {c['kv_cache_dtype']:<5} {c['devices'][1]:<12} {c['mean_abs_delta_logprob']:>9.5f} "
              f"{c['max_abs_delta_logprob']:>8.4f} {c['greedy_identical']:>3}/{c['greedy_total']}"
              + (" PASS" if c["judged"] and c["passed"] else " FAIL" if c["judged"] else ""))
    print(f"\n{'precision':<20} {'kv':<5} " + " ".join(f"{'ppl ' + d:>16}" for d in devices) + "   |d| vs fp16 per device")
    for (p, kv) in answers:
        ppl = [e["perplexity"] for e in perplexity if (e["precision"], e["kv_cache_dtype"]) == (p, kv)]
        vs = [e["mean_abs_delta_logprob"] for e in versus_fp16 if (e["precision"], e["kv_cache_dtype"]) == (p, kv)]
        print(f"{p:<20} {kv:<5} " + " ".join(f"{x:>16.4f}" for x in ppl) + "   " + " ".join(f"{x:.4f}" for x in vs))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
