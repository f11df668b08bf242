#!/usr/bin/env python3
"""Prints "bandwidth_GBps fp16_TFLOPs fp8_TFLOPs" from crosspoint hwinfo --json (its "ceilings") or
ceilings.py's output (best median streaming read, fp16 GEMM, best fp8 GEMM); no defaults.

usage: read_ceilings.py FILE.json
"""
import json, sys
r = json.load(open(sys.argv[1]))
if isinstance(r.get("ceilings"), dict):
    c = r["ceilings"]
    bw, fp16, fp8 = c["bandwidth_gb_s"], c["fp16_tflops"], c["fp8_tflops"]
else:
    bw = max(v["GBps_median"] for k, v in r.items() if isinstance(v, dict) and "(read bytes)" in k)
    fp16 = r["matmul_float16_8192^3"]["TFLOPs_median"]
    fp8 = max(v["TFLOPs_median"] for k, v in r.items() if isinstance(v, dict) and k.startswith("scaled_mm_fp8"))
print(round(bw, 1), round(fp16, 1), round(fp8, 1))
