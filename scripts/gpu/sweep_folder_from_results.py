#!/usr/bin/env python3
"""A sweep folder rebuilt from scripts/gpu_study.py's results.json, for
`crosspoint sweep --report-only`, when the call's logs.tar.xz (the sweep folder itself) did not
come back whole. Each cell keeps the headline numbers results.json holds (counts, duration,
throughput, TPOT/ITL/TTFT median and p99, the server's samples and, from results.json files
written since 2026-12-02, the steady-state window); per-request lists are not in results.json,
so the report has no bootstrap intervals for these cells and says so in its source line.

usage: sweep_folder_from_results.py RESULTS.json HWINFO.json OUT_DIR [--prefix sweep_cells]
  HWINFO.json: the sweep's own hwinfo.json (from an earlier call's logs), or crosspoint hwinfo --json
  --prefix: results.json's key for the cells ("sweep_cells" or "sweep_cells_deterministic")
"""
import argparse
import json
import os
import re
import shutil
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("hwinfo")
    ap.add_argument("out_dir")
    ap.add_argument("--prefix", default="sweep_cells")
    args = ap.parse_args()
    results = json.load(open(args.results))
    cells = results.get(args.prefix)
    if not isinstance(cells, list) or not cells:
        sys.exit(f"{args.results}: no '{args.prefix}' list")
    suffix = args.prefix[len("sweep_cells"):]
    os.makedirs(os.path.join(args.out_dir, "cells"), exist_ok=True)
    os.makedirs(os.path.join(args.out_dir, "servers"), exist_ok=True)
    shutil.copyfile(args.hwinfo, os.path.join(args.out_dir, "hwinfo.json"))
    for precision, server in (results.get("sweep_servers" + suffix) or {}).items():
        json.dump(server, open(os.path.join(args.out_dir, "servers", precision + ".json"), "w"), indent=1)
    written = 0
    for row in cells:
        m = re.fullmatch(r"(.+)-c(\d+)(-r\d+)?", row.get("cell", ""))
        if not m:
            sys.exit(f"{args.results}: cell name {row.get('cell')!r} is not PRECISION-cLEVEL")
        cell = {k: v for k, v in row.items() if k != "cell"}
        cell["precision"] = m.group(1)
        cell["max_concurrency"] = int(m.group(2))
        cell["note"] = "rebuilt from results.json: headline numbers only, no per-request lists"
        json.dump(cell, open(os.path.join(args.out_dir, "cells", row["cell"] + ".json"), "w"), indent=1)
        written += 1
    options = results.get("sweep_options" + suffix)
    if isinstance(options, dict):
        json.dump(options, open(os.path.join(args.out_dir, "sweep.json"), "w"), indent=1)
    print(f"{args.out_dir}: {written} cells, {len(results.get('sweep_servers' + suffix) or {})} servers",
          file=sys.stderr)


if __name__ == "__main__":
    main()
