#!/usr/bin/env python3
"""The first N conversations with at least two turns of a ShareGPT JSON file (the set-up's
complete subset), for the GPU bundle (the whole file is ~120 MB).

usage: sharegpt_sample.py SOURCE.json OUT.json N
"""
import json
import sys

source, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(source, encoding="utf-8") as f:
    conversations = [c for c in json.load(f) if len(c.get("conversations", [])) >= 2][:n]
with open(out, "w", encoding="utf-8") as f:
    json.dump(conversations, f, ensure_ascii=False)
print(f"[gpu_bundle] ShareGPT sample: {len(conversations)} conversations", file=sys.stderr)
