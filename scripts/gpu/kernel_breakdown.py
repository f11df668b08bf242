#!/usr/bin/env python3
"""Per-kernel breakdown of one decode step from Nsight Compute's CSV.

scripts/gpu_study.py's `kernels` step runs
  ncu --profile-from-start off --csv --page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,...
      bench_decode_step --model A --model B ... --batches 1 --profile-step
which profiles exactly one eager decode step per (model, batch), in model order. This script
splits the kernel list into those steps (each starts with the embedding gather), groups each
step's kernels by name and grid, and writes JSON: per step the kernels in launch order (µs,
DRAM bytes read, GB/s) and a summary by kernel with its share of the step. ncu serialises
kernels and flushes the caches before each, so a kernel's time here is its time alone, without
the overlap that programmatic launch gives inside a graph.

  kernel_breakdown.py NCU_CSV --labels fp16,w8a8-fp8,w4a16 --out kernels.json
"""
import argparse
import csv
import json
import re
import sys
from collections import OrderedDict


def short_name(name):
    """'void crosspoint::cuda::(anonymous namespace)::gemv_kernel<true, ...>(...)' -> 'gemv_kernel<true, ...>'."""
    name = re.sub(r"\(.*\)$", "", name.strip())  # the argument list
    name = re.sub(r"^void ", "", name)
    # The innermost qualified name, template arguments kept (they say which variant ran).
    depth, cut = 0, 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == ":" and depth == 0 and i + 1 < len(name) and name[i + 1] == ":":
            cut = i + 2
    return name[cut:].replace("(anonymous namespace)::", "")


def number(text):
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return None


def read_rows(path):
    """(kernel rows, {column: unit}) of an ncu --csv --page raw file."""
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own log lines are not quoted
    rows, units = [], {}
    for row in csv.DictReader(lines):
        if row.get("ID", "").strip().isdigit():
            rows.append(row)
        elif not units:
            units = {k: (v or "").strip() for k, v in row.items()}  # the row under the header
    return rows, units


def metric(row, name, scale=1.0):
    value = number(row.get(name))
    return None if value is None else value * scale


TIME_TO_US = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}
BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def duration_us(row, units):
    value = number(row.get("gpu__time_duration.sum"))
    if value is None:
        return None
    return value * TIME_TO_US.get(units.get("gpu__time_duration.sum", "nsecond"), 1e-3)


def split_steps(kernels, step_start):
    steps, current = [], []
    for k in kernels:
        if step_start.search(k["kernel"]) and current:
            steps.append(current)
            current = []
        current.append(k)
    if current:
        steps.append(current)
    return steps


def summarise(step):
    total = sum(k["us"] for k in step)
    groups = OrderedDict()
    for k in step:
        key = (k["kernel"], k["grid"])
        g = groups.setdefault(key, {"kernel": k["kernel"], "grid": k["grid"], "block": k["block"], "calls": 0,
                                    "us": 0.0, "dram_read_bytes": 0.0})
        g["calls"] += 1
        g["us"] += k["us"]
        g["dram_read_bytes"] += k.get("dram_read_bytes") or 0.0
    out = []
    for g in groups.values():
        g["us_per_call"] = g["us"] / g["calls"]
        g["pct_of_step"] = 100.0 * g["us"] / total if total > 0 else 0.0
        g["read_gbps"] = g["dram_read_bytes"] / (g["us"] * 1e3) if g["us"] > 0 else 0.0
        out.append(g)
    out.sort(key=lambda g: -g["us"])
    return total, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="ncu --csv --page raw output")
    ap.add_argument("--labels", default="", help="comma-separated name of each profiled step, in order")
    ap.add_argument("--step-start", default=r"embedding", help="regex of the kernel that starts a step")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    kernels = []
    rows, units = read_rows(args.csv)
    scale = BYTES.get(units.get("dram__bytes_read.sum", "byte"), 1)
    for row in rows:
        us = duration_us(row, units)
        if us is None:
            continue
        kernels.append({
            "kernel": short_name(row.get("Kernel Name", "")),
            "grid": row.get("Grid Size", row.get("launch__grid_size", "")).strip(),
            "block": row.get("Block Size", row.get("launch__block_size", "")).strip(),
            "us": us,
            "dram_read_bytes": metric(row, "dram__bytes_read.sum", scale),
        })
    steps = split_steps(kernels, re.compile(args.step_start))
    labels = [s for s in args.labels.split(",") if s]
    result = {"source": args.csv, "num_kernels": len(kernels), "steps": []}
    for i, step in enumerate(steps):
        total, groups = summarise(step)
        result["steps"].append({"label": labels[i] if i < len(labels) else f"step {i}", "num_kernels": len(step),
                                "kernel_sum_us": total, "by_kernel": groups, "launches": step})
        print(f"\n## {result['steps'][-1]['label']}: {len(step)} kernels, {total:.1f} us summed (each alone)")
        print("| kernel | grid | calls | us | us/call | % | GB/s read |")
        print("|---|---|---|---|---|---|---|")
        for g in groups[:25]:
            print(f"| {g['kernel'][:70]} | {g['grid']} | {g['calls']} | {g['us']:.1f} | {g['us_per_call']:.2f} "
                  f"| {g['pct_of_step']:.1f} | {g['read_gbps']:.0f} |")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    if not kernels:
        print("kernel_breakdown: no kernel rows in " + args.csv, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
