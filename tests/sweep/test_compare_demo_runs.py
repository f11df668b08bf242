#!/usr/bin/env python3
"""scripts/compare_demo_runs.py on fabricated runs: the same plan agrees, a different served
precision or a contradicting winner disagrees, a level decided in one run only is reported."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "compare_demo_runs.py")


def make_run(root, name, in_short, winners):
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write("# Report\n\n## Recommendation\n\n- Latency — ...\n\n" + in_short + "\n\n## Next\n")
    metrics = [{"metric": "median TPOT", "winners": [
        {"concurrency": c, "winner": w if w not in ("tie", "not separable") else None,
         "not_separable": w == "not separable"} for c, w in winners]}]
    with open(os.path.join(d, "analysis.json"), "w") as f:
        json.dump({"metrics": metrics}, f)
    return d


def run(a, b):
    p = subprocess.run([sys.executable, SCRIPT, a, b], capture_output=True, text=True)
    return p.returncode, p.stdout


def main():
    with tempfile.TemporaryDirectory() as root:
        tie = "In short: on median TPOT this sample cannot tell fp16 and w8a8-fp8 apart at 1, 2. Speed does not " \
              "decide between them here, so quality does: serve fp16 — the reference."
        plan = "In short, for the lowest median TPOT: up to concurrency 4 serve w4a16; from 8 up serve w8a8-fp8 " \
               "(each flip lies between the two levels named)."
        r1 = make_run(root, "r1", tie, [(1, "not separable"), (2, "not separable")])
        r2 = make_run(root, "r2", tie, [(1, "fp16"), (2, "not separable")])
        code, out = run(r1, r2)
        assert code == 0, out
        assert "decided in one run only: median TPOT at 1: not separable vs fp16" in out, out
        r3 = make_run(root, "r3", tie.replace("serve fp16", "serve w8a8-fp8"), [(1, "not separable")])
        code, out = run(r1, r3)
        assert code == 1 and "DIFFERENT" in out, out
        r4 = make_run(root, "r4", plan, [(4, "w4a16"), (8, "w8a8-fp8")])
        r5 = make_run(root, "r5", plan, [(4, "w4a16"), (8, "fp16")])
        code, out = run(r4, r5)
        assert code == 1 and "contradiction: median TPOT at 8: w8a8-fp8 vs fp16" in out, out
        code, out = run(r4, r4)
        assert code == 0 and "[('4', 'w4a16'), ('8', 'w8a8-fp8')]" in out, out
        code, out = run(r4, os.path.join(root, "missing"))
        assert code == 2, out
    print("compare_demo_runs: 5 cases ok")


if __name__ == "__main__":
    main()
