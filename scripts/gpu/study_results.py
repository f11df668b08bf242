#!/usr/bin/env python3
"""scripts/gpu_study.py's results.json: steps, checkpoints, ceilings, decode step, server
determinism, sweep cells (both modes) and peers, gathered from its work folder.

usage: study_results.py OUT WORK STEPS_JSONL ROOT BUNDLE_DIR "ARGS"
"""
import datetime, glob, json, os, subprocess, sys
out, work, steps_path, root, bundle, args = sys.argv[1:7]
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"missing": f"{p}: {e!r}"[:300]}
steps = []
for line in open(steps_path, errors="replace"):
    try:
        steps.append(json.loads(line))
    except ValueError:
        if line.strip():
            steps.append({"unparsed": line.strip()[:300]})
res = {"what": "scripts/gpu_study.py: crosspoint's study on the GPU in one call",
       "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": "scripts/gpu_study.py " + args, "steps": steps,
       "bundle_manifest": load(os.path.join(bundle, "manifest.json"))}
try:
    res["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip()
except Exception as e:
    res["gpu"] = repr(e)
if os.path.exists(os.path.join(work, "ceilings.json")):
    res["ceilings_raw"] = load(os.path.join(work, "ceilings.json"))
ck = []
for p in sorted(glob.glob(os.path.join(work, "logs", "checkpoint-*.log"))):
    for line in open(p, errors="replace"):
        if line.startswith("RESULT "):
            ck.append(json.loads(line[7:]))
res["checkpoints"] = ck
for name in ("hwinfo", "decode_step", "decode_step_baseline", "decode_step_baseline_after", "decode_step_deterministic", "decode_step_variant", "bench_gemm", "bench_attention", "bench_attention_fp8", "server_determinism", "kernels", "tensor_parallel"):
    if os.path.exists(os.path.join(work, name + ".json")):
        res[name] = load(os.path.join(work, name + ".json"))
if os.path.exists(os.path.join(work, "check.json")):
    res["check_vs_transformers"] = load(os.path.join(work, "check.json"))
keys = ["completed", "failed", "duration", "output_throughput", "median_tpot_ms", "p99_tpot_ms", "median_ttft_ms",
        "p99_ttft_ms", "median_itl_ms", "p99_itl_ms", "request_goodput", "total_input_tokens", "total_output_tokens"]
cells = []
for folder, suffix in (("sweep", ""), ("sweep-deterministic", "_deterministic")):
    sweep = os.path.join(work, folder)
    if not os.path.isdir(sweep):
        continue
    folder_cells = []
    for p in sorted(glob.glob(os.path.join(sweep, "cells", "*.json"))):
        c = load(p)
        row = {"cell": os.path.basename(p)[:-5]}
        row.update({k: c.get(k) for k in keys if k in c})
        # Every other number too, and the steady-state window: enough for
        # scripts/gpu/sweep_folder_from_results.py to rebuild the report if logs.tar.xz is lost.
        row.update({k: v for k, v in c.items() if k not in row and isinstance(v, (int, float, str)) and len(str(v)) < 200})
        for group in ("server_metrics", "steady_state"):
            if isinstance(c.get(group), dict):
                row[group] = {k: v for k, v in c[group].items() if not isinstance(v, (list, dict))}
        folder_cells.append(row)
    cells += folder_cells
    res["sweep_cells" + suffix] = folder_cells
    res["sweep_servers" + suffix] = {os.path.basename(p)[:-5]: load(p)
                                     for p in sorted(glob.glob(os.path.join(sweep, "servers", "*.json")))}
    if os.path.exists(os.path.join(sweep, "sweep.json")):
        res["sweep_options" + suffix] = load(os.path.join(sweep, "sweep.json"))
res["torch_peers"] = {os.path.basename(p)[5:-5]: load(p) for p in sorted(glob.glob(os.path.join(work, "peer_*.json")))}
json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=1)
print("results.json: steps " + ", ".join(f"{s['step']}={s['rc']}" for s in steps) +
      f"; {len(cells)} sweep cells; {len(ck)} checkpoints")
