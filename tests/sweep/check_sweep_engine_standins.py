#!/usr/bin/env python3
"""crosspoint sweep --engine vllm and --engine sglang on the default model, against stand-ins that
take each engine's command line, print its start-up lines and serve its /metrics names
(engine_standins/standin_server.py: neither engine installs without a GPU). Each report must
name the engine, hold every cell, and carry what was read from the engine: KV cache usage from
its /metrics and the KV capacity from its start-up log.

    check_sweep_engine_standins.py --crosspoint BIN
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STANDINS = os.path.join(HERE, "engine_standins")


def run_sweep(crosspoint: str, engine: str, work: str) -> list:
    out = os.path.join(work, engine)
    exe = os.path.join(STANDINS, "vllm") if engine == "vllm" else sys.executable
    env = dict(os.environ, PYTHONPATH=STANDINS + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [crosspoint, "sweep", "--engine", engine, "--engine-exe", exe, "--model", "default",
           "--precisions", "fp16,w8a8-fp8", "--concurrency", "1,2", "--num-prompts", "2",
           "--dataset", "random", "--random-input-len", "24", "--output-len", "8", "--max-bisect-runs", "0",
           "--time-budget", "0", "--max-model-len", "512", "--device", "cpu",
           "--quant-cache", os.path.join(work, "quant"), "--out", out]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=280, env=env)
    if run.returncode != 0:
        print(run.stdout[-4000:])
        return [f"{engine}: crosspoint sweep exited with {run.returncode}"]
    with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
        report = f.read()
    failures = []
    name = "vLLM" if engine == "vllm" else "SGLang"
    if name not in report.splitlines()[0]:
        failures.append(f"{engine}: the title does not name {name}: {report.splitlines()[0]}")
    metric = "vllm:kv_cache_usage_perc" if engine == "vllm" else "sglang:token_usage"
    for needle in ("## Engine", metric, "| fp16 | 123456 |", f"the {name} servers' own determinism"):
        if needle not in report:
            failures.append(f"{engine}: report lacks {needle!r}")
    with open(os.path.join(out, "study.json"), encoding="utf-8") as f:
        study = json.load(f)
    text = json.dumps(study)
    if "123456" not in text:
        failures.append(f"{engine}: study.json lacks the KV capacity read from the start-up log")
    for precision in ("fp16", "w8a8-fp8"):
        for level in (1, 2):
            cells = [n for n in os.listdir(os.path.join(out, "cells")) if n.startswith(f"{precision}-c{level}")]
            if not cells:
                failures.append(f"{engine}: no cell of {precision} at concurrency {level}")
                continue
            with open(os.path.join(out, "cells", sorted(cells)[0]), encoding="utf-8") as f:
                cell = json.load(f)
            if cell.get("completed", 0) < 1:
                failures.append(f"{engine}: {precision} at {level}: no completed request")
            if not (cell.get("server_metrics") or {}).get("available"):
                failures.append(f"{engine}: {precision} at {level}: the engine's /metrics were not read")
    if failures:
        print(report)
    return failures


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--crosspoint", required=True)
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="crosspoint_sweep_engines_") as work:
        for engine in ("vllm", "sglang"):
            failures += run_sweep(args.crosspoint, engine, work)
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print("ok: sweep --engine vllm and sglang started each engine with its flags and read its /metrics and log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
