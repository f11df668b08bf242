#!/usr/bin/env python3
"""Compares the recommendations of two sweep runs (two `scripts/demo.sh` outputs).

usage: compare_demo_runs.py RUN1_DIR RUN2_DIR [--markdown FILE]

Reads each run's report.md ("In short" sentence of the Recommendation) and analysis.json
(per metric and concurrency: a named winner, a tie, or "not separable"). The runs agree when
their "In short" sentences name the same plan (the precisions to serve, in order, and the
levels of any crossover) and no metric names different winners at the same level; a level that
one run decides and the other calls a tie or not separable is reported, not counted against
them. Exits 0 when they agree, 1 when they do not, 2 on unreadable input. With --markdown, also
writes both runs' key lines as a Markdown fragment (for docs)."""
import json
import os
import re
import sys

PRECISIONS = r"(?:fp16|w8a8-fp8|w4a16)"
METRICS = ("median TPOT", "output throughput")


def read_run(out_dir):
    with open(os.path.join(out_dir, "report.md"), encoding="utf-8") as f:
        report = f.read()
    with open(os.path.join(out_dir, "analysis.json"), encoding="utf-8") as f:
        analysis = json.load(f)
    short = re.search(r"^In short[^\n]*", report, re.M)
    if not short:
        raise ValueError(f"{out_dir}/report.md: no 'In short' sentence")
    sentence = short.group(0)
    # The plan: "serve X" / "X gives the lowest" in order, with the levels of a crossover.
    plan = re.findall(rf"(?:up to concurrency ([\d.]+) serve ({PRECISIONS})|from ([\d.]+) up serve ({PRECISIONS})|"
                      rf"serve ({PRECISIONS})|\) ({PRECISIONS}) gives the lowest)", sentence)
    plan = [tuple(x for x in item if x) for item in plan]
    decisions = {}
    for m in analysis.get("metrics", []):
        if m.get("metric") not in METRICS:
            continue
        for w in m.get("winners", []):
            key = (m["metric"], w["concurrency"])
            decisions[key] = w["winner"] or ("not separable" if w.get("not_separable") else "tie")
    return sentence, plan, decisions


def main():
    args = sys.argv[1:]
    markdown = None
    if "--markdown" in args:
        i = args.index("--markdown")
        markdown = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    try:
        runs = [read_run(d) for d in args]
    except (OSError, ValueError, json.JSONDecodeError) as e:
        print(f"compare_demo_runs: {e}", file=sys.stderr)
        return 2
    (s1, p1, d1), (s2, p2, d2) = runs
    contradictions, one_sided = [], []
    for key in sorted(set(d1) | set(d2)):
        a, b = d1.get(key), d2.get(key)
        named = {"tie", "not separable", None}
        if a not in named and b not in named and a != b:
            contradictions.append(f"{key[0]} at {key[1]:g}: {a} vs {b}")
        elif a != b:
            one_sided.append(f"{key[0]} at {key[1]:g}: {a} vs {b}")
    same_plan = p1 == p2
    lines = [f"run 1: {s1}", f"run 2: {s2}",
             f"plan: {p1} vs {p2}: {'the same' if same_plan else 'DIFFERENT'}"]
    lines += [f"contradiction: {c}" for c in contradictions]
    lines += [f"decided in one run only: {c}" for c in one_sided]
    agree = same_plan and not contradictions
    lines.append("the two runs reach the same recommendation" if agree else "the two runs DISAGREE")
    print("\n".join(lines))
    if markdown:
        with open(markdown, "w", encoding="utf-8") as f:
            f.write("\n".join(f"- {line}" for line in lines) + "\n")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
