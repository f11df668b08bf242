#!/usr/bin/env python3
"""Checks the main job's output: report.md, report.html and study.json exist, and the
recommendation names what to serve: a precision that wins ("X wins", "X gives the lowest"), a
plan ("serve X"), or, when speed cannot decide, the precision quality picks among those the
sample cannot tell apart ("serve X"). usage: check_demo_report.py SWEEP_OUT_DIR"""
import os
import re
import sys

PRECISIONS = ("fp16", "w8a8-fp8", "w4a16")


def main():
    out = sys.argv[1]
    for name in ("report.md", "report.html", "study.json"):
        path = os.path.join(out, name)
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            sys.exit(f"check_demo_report: {path} is missing or empty")
    with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
        report = f.read()
    match = re.search(r"^## Recommendation\n(.*?)(?=^## )", report, re.S | re.M)
    if not match:
        sys.exit("check_demo_report: report.md has no '## Recommendation' section")
    section = match.group(1)
    names = "|".join(re.escape(p) for p in PRECISIONS)
    winner = re.compile(rf"\b(?:serve ({names})|({names}) (?:wins|gives the lowest))\b")
    lines = [line for line in section.splitlines() if winner.search(line)]
    if not lines:
        sys.exit("check_demo_report: the recommendation names nothing to serve:\n" + section)
    print("check_demo_report: report.md and report.html written; the recommendation names what to serve:")
    for line in lines:
        print("  " + line.strip())


if __name__ == "__main__":
    main()
