#!/usr/bin/env python3
"""Old vs new decode step from one gpu_study.py call with --baseline: the graph-replay median
of every (precision, batch) in decode_step_baseline.json (old, before), decode_step.json (new)
and decode_step_baseline_after.json (old, after), and new / mean(old); with a
decode_step_variant.json (DECODE_VARIANT_ARGS) also the variant and variant / new. Prints a
Markdown table.

usage: compare_decode.py RESULTS_JSON   (the call's results.json)
"""
import json
import sys


def medians(step):
    out = {}
    for model in (step or {}).get("models", []):
        for cell in model.get("decode", []):
            graph = cell.get("graph") or {}
            if "median_ms" in graph:
                out[(model["precision"], cell["batch"])] = (graph["median_ms"], graph.get("p10_ms"), graph.get("p90_ms"))
    return out


def main():
    r = json.load(open(sys.argv[1]))
    old_before, new, old_after, variant = (medians(r.get(k)) for k in
                                           ("decode_step_baseline", "decode_step", "decode_step_baseline_after",
                                            "decode_step_variant"))
    print(f"old {r.get('decode_step_baseline', {}).get('commit', '?')[:7]}, "
          f"new {r.get('decode_step', {}).get('commit', '?')[:7]}: graph-replay median ms (p10-p90)\n")
    extra = " variant | variant / new |" if variant else ""
    print("| precision | batch | old, before | new | old, after | new / mean(old) |" + extra)
    print("|---|---|---|---|---|---|" + ("---|---|" if variant else ""))
    for key in sorted(new):
        fmt = lambda v: f"{v[0]:.3f} ({v[1]:.3f}-{v[2]:.3f})" if v else "-"
        olds = [v[0] for v in (old_before.get(key), old_after.get(key)) if v]
        ratio = f"{new[key][0] / (sum(olds) / len(olds)):.3f}" if olds else "-"
        line = f"| {key[0]} | {key[1]} | {fmt(old_before.get(key))} | {fmt(new[key])} | {fmt(old_after.get(key))} | {ratio} |"
        if variant:
            v = variant.get(key)
            line += f" {fmt(v)} | {v[0] / new[key][0]:.3f} |" if v else " - | - |"
        print(line)


if __name__ == "__main__":
    main()
