#!/usr/bin/env python3
"""Markdown tables from a scripts/gpu_run.sh results JSON: decode-step linears per precision
and batch (best variant and each variant), layer GEMMs at M=1 and 8, and the PyTorch peers.

    python3 benchmarks/gpu/summarize.py benchmarks/results/<file>.json
"""
import json
import sys

r = json.load(open(sys.argv[1]))
b = r["bench"]
c = r["ceilings_measured"]
print(f"GPU {r['gpu']}, commit {r['commit'][:10]}, {r['date_utc']}; measured read {c['read_gbps']:.0f} GB/s, "
      f"fp16 {c['fp16_tflops']:.0f} TFLOP/s, fp8 {c['fp8_tflops']:.0f} TFLOP/s; fp8 scale path: {b.get('fp8_scale_path')}\n")

print("| precision | M | kernel | weights GB | bound ms | time ms | % of bandwidth |")
print("|---|---|---|---|---|---|---|")
best = {}
for d in b["decode_step"]:
    key = (d["precision"], d["m"])
    if key not in best or d["time_ms"] < best[key]["time_ms"]:
        best[key] = d
for d in b["decode_step"]:
    mark = " **best**" if best[(d["precision"], d["m"])] is d else ""
    print(f"| {d['precision']} | {d['m']} | {d['kernel']}{mark} | {d['bytes']/1e9:.2f} | {d['bound_ms']:.3f} | "
          f"{d['time_ms']:.3f} | {d['pct_of_bandwidth']:.1f} |")

print("\n| precision | kernel | shape | M | time us | GB/s | % bw | % tensor |")
print("|---|---|---|---|---|---|---|---|")
for g in b.get("layer_gemms", []):
    if g["m"] in (1, 8, 64, 128):
        print(f"| {g['precision']} | {g['kernel']} | {g['shape']} | {g['m']} | {g['time_us']:.2f} | {g['gbps']:.0f} | "
              f"{g['pct_of_bandwidth']:.1f} | {g['pct_of_tensor_rate']:.1f} |")

print("\n| torch peer (compiled, CUDA graphs, whole decode step incl. attention) | batch | tpot ms | weight GB |")
print("|---|---|---|---|")
for mode, p in r.get("torch_peers", {}).items():
    for k, v in p.items():
        if isinstance(v, dict) and "tpot_ms" in v:
            print(f"| {mode} | {v.get('B')} | {v['tpot_ms']:.3f} | {v['weight_bytes_per_step']/1e9:.2f} |")
        elif isinstance(v, list):
            for e in v:
                if isinstance(e, dict) and "tpot_ms" in e:
                    print(f"| {mode} | {e.get('B')} | {e['tpot_ms']:.3f} | {e['weight_bytes_per_step']/1e9:.2f} |")
