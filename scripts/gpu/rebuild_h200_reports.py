#!/usr/bin/env python3
"""Rewrites the H200 reports under benchmarks/results/study-h200 with the current `crosspoint sweep
--report-only`, from the cells committed in benchmarks/results (scripts/gpu_study.py's
results.json: headline numbers and server samples, no per-request lists, so no intervals).

Each report's ceilings are its sweep's own: the folder's hwinfo.json where it was kept; else
one rebuilt once from the figures the committed report printed (GPU, bandwidth to the GB/s,
fp16 and fp8 rates from its roofline's ceiling labels, the measurement's time) and saved beside
it, so a rerun reads the same numbers.

usage: rebuild_h200_reports.py [--crosspoint build/crosspoint] [--only DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STUDY = os.path.join(ROOT, "benchmarks", "results", "study-h200")
RESULTS = os.path.join(ROOT, "benchmarks", "results")

# report folder -> (results file, the key path to the call's object within it, or [] for the top)
REPORTS = {
    ".": ("h200_2026-11-30_sweep3.json", []),
    "2026-12-02/whole-gpu-c1-c100": ("h200_2026-12-02_study.json", ["call_c1_to_c100"]),
    "2026-12-02/whole-gpu-c32-c256": ("h200_2026-12-02_study.json", ["call_c32_c256"]),
    "2026-12-02/budget-24gb-c32-c256": ("h200_2026-12-02_study_24gb.json", ["results"]),
    "2026-12-02b/whole-gpu": ("h200_2026-12-02_study2.json", ["call_c1", "call_c3_to_c256"]),
    "2026-12-02b/capped-21.6gb": ("h200_2026-12-02_study2_capped.json", ["results"]),
    "2026-12-02c/kv-fp8-21.6gb": ("h200_2026-12-02_kv_prefix.json", ["call_kv_sweep"]),
    "2026-12-02c/prefix-caching": ("h200_2026-12-02_kv_prefix.json", ["call_prefix_and_attention"]),
    "2026-12-03-kv-grid": ("h200_2026-12-03_kv_grid.json", ["results"]),
    "2026-12-04": ("h200_2026-12-04_study.json", []),
    "2026-12-04b": ("h200_2026-12-04_study_w4a16_ring.json", []),
}


def calls_of(results, keys):
    """The call objects (several keys: one sweep resumed over calls; later cells replace earlier)."""
    if not keys:
        return [results]
    return [results[k] for k in keys]


def merged_call(calls):
    cells = {}
    servers = {}
    options = None
    for call in calls:
        for row in call.get("sweep_cells", []):
            cells[row["cell"]] = row
        servers.update(call.get("sweep_servers") or {})
        options = call.get("sweep_options") or options
    return {"sweep_cells": list(cells.values()), "sweep_servers": servers, "sweep_options": options}


def hwinfo_from_report(folder):
    """Ceilings from the committed report's printed figures (see the module's docstring)."""
    md = open(os.path.join(folder, "report.md")).read()
    html = open(os.path.join(folder, "report.html")).read()
    m = re.search(r"on (NVIDIA [^(,\n]+?)(?:, memory budget [^(\n]*)? \((\d+) GB/s", md)
    fp16 = re.search(r"fp16 ([0-9.]+) TFLOP/s", html)
    fp8 = re.search(r"fp8 ([0-9.]+) TFLOP/s", html)
    when = re.search(r"ceilings measured by crosspoint hwinfo on NVIDIA H200 at ([0-9-]+ [0-9:]+ UTC)", md)
    if not (m and fp16 and fp8):
        sys.exit(f"{folder}: the report does not print its ceilings; give the sweep's hwinfo.json")
    source = (f"measured by crosspoint hwinfo on {m.group(1)} at {when.group(1)}" if when else
              f"measured by crosspoint hwinfo on {m.group(1)}") + \
        ": figures as the committed report printed them (bandwidth to the GB/s)"
    return {"ceilings": {"name": m.group(1), "bandwidth_gb_s": float(m.group(2)),
                         "fp16_tflops": float(fp16.group(1)), "fp8_tflops": float(fp8.group(1)),
                         "source": source}}


def sweep_arguments(options, out, model):
    precisions = []
    for label in options["precisions"]:
        base = label.split("+")[0]
        if base not in precisions:
            precisions.append(base)
    by_level = options.get("num_prompts_by_level") or {}
    levels = sorted(int(level) for level in options["concurrency"])
    prompts = ",".join(str(by_level.get(str(level), options["num_prompts"])) for level in levels)
    args = ["sweep", "--report-only", "--device", "cuda", "--model", model, "--out", out,
            "--precisions", ",".join(precisions), "--concurrency", ",".join(map(str, levels)),
            "--num-prompts", prompts, "--dataset", options["dataset"],
            "--output-len", str(options.get("output_len", 0)), "--max-model-len", str(options["max_model_len"])]
    if options["dataset"] == "sharegpt":
        args += ["--dataset-path", os.path.join(os.environ.get("CROSSPOINT_CACHE", os.path.expanduser(
            "~/.cache/crosspoint")), "datasets", "ShareGPT_V3_complete_subset.json")]
    if options.get("kv_cache_dtypes") and options["kv_cache_dtypes"] != ["auto"]:
        args += ["--kv-cache-dtypes", ",".join(options["kv_cache_dtypes"])]
    if options.get("prefix_caching") and options["prefix_caching"] != ["default"]:
        args += ["--prefix-caching", ",".join(options["prefix_caching"])]
    for key, flag in (("memory_budget", "--memory-budget"), ("max_num_seqs", "--max-num-seqs")):
        if options.get(key):
            args += [flag, str(options[key])]
    if options.get("ignore_eos"):
        args.append("--ignore-eos")
    if options.get("slo_ttft_ms") or options.get("slo_tpot_ms"):
        slo = [f"ttft:{options['slo_ttft_ms']:g}"] if options.get("slo_ttft_ms") else []
        slo += [f"tpot:{options['slo_tpot_ms']:g}"] if options.get("slo_tpot_ms") else []
        args += ["--slo", ",".join(slo)]
    for key, flag in (("num_prefixes", "--num-prefixes"), ("prefix_len", "--prefix-len"),
                      ("suffix_len", "--suffix-len")):
        if options["dataset"] == "prefix_repetition" and options.get(key):
            args += [flag, str(options[key])]
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--crosspoint", default=os.path.join(ROOT, "build", "crosspoint"))
    ap.add_argument("--only")
    args = ap.parse_args()
    for name, (results_file, keys) in REPORTS.items():
        if args.only and name != args.only:
            continue
        folder = os.path.normpath(os.path.join(STUDY, name))
        results = json.load(open(os.path.join(RESULTS, results_file)))
        call = merged_call(calls_of(results, keys))
        hwinfo_path = os.path.join(folder, "hwinfo.json")
        if not os.path.exists(hwinfo_path):
            json.dump(hwinfo_from_report(folder), open(hwinfo_path, "w"), indent=1)
        with tempfile.TemporaryDirectory() as tmp:
            call_path = os.path.join(tmp, "results.json")
            json.dump(call, open(call_path, "w"))
            out = os.path.join(tmp, "sweep")
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gpu", "sweep_folder_from_results.py"),
                            call_path, hwinfo_path, out], check=True)
            model = os.path.join(tmp, "model")
            os.makedirs(model)
            config = json.load(open(os.path.join(ROOT, "tests", "fixtures", "analysis", "qwen2_5_7b_config.json")))
            config["_name_or_path"] = "Qwen2.5-7B-Instruct shape, random weights"
            json.dump(config, open(os.path.join(model, "config.json"), "w"))
            run = subprocess.run([args.crosspoint] + sweep_arguments(call["sweep_options"], out, model),
                                 capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"{name}: crosspoint sweep --report-only failed:\n{run.stdout}{run.stderr}")
            for file in os.listdir(out):
                if file in ("report.md", "report.html") or file.endswith(".svg"):
                    shutil.copyfile(os.path.join(out, file), os.path.join(folder, file))
        print(f"{name}: rewritten from {results_file} ({len(call['sweep_cells'])} cells)", file=sys.stderr)


if __name__ == "__main__":
    main()
