#!/usr/bin/env python3
"""crosspoint sweep --engine llama.cpp on the default model with tiny settings: llama-cpp-python's
real OpenAI server per precision (F16/Q8_0/Q4_0 GGUFs made from the Q4_1 release), benched by
crosspoint bench serve; the report must exist, name the engine and hold every precision's cells.
Then once more from a model directory with --gguf naming the file the formats are made from.

    check_sweep_llama_cpp.py --crosspoint BIN
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--crosspoint", required=True)
    args = parser.parse_args()
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as e:
        print(f"llama_cpp.server not importable in {sys.executable}: {e} (run scripts/setup.sh)")
        return 1
    with tempfile.TemporaryDirectory(prefix="crosspoint_sweep_llama_cpp_") as work:
        out = os.path.join(work, "out")
        cmd = [args.crosspoint, "sweep", "--engine", "llama.cpp", "--python", sys.executable, "--model", "default",
               "--precisions", "fp16,w8a8-fp8,w4a16", "--concurrency", "1,2", "--num-prompts", "2",
               "--dataset", "random", "--random-input-len", "24", "--output-len", "8", "--max-bisect-runs", "0",
               "--time-budget", "0", "--threads", "2", "--max-model-len", "512", "--device", "cpu",
               "--quant-cache", os.path.join(work, "gguf"), "--out", out]
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=380)
        if run.returncode != 0:
            print(run.stdout[-4000:])
            print(f"crosspoint sweep exited with {run.returncode}")
            return 1
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            report = f.read()
        failures = []
        title = report.splitlines()[0]
        if "llama.cpp" not in title:
            failures.append(f"title does not name the engine: {title}")
        for needle in ("## Engine", "fp16 is llama.cpp F16", "w8a8-fp8 is llama.cpp Q8_0", "not FP8",
                       "w4a16 is llama.cpp Q4_0", "Q4_1", "/metrics", "quality"):
            if needle not in report:
                failures.append(f"report lacks {needle!r}")
        for precision in ("fp16", "w8a8-fp8", "w4a16"):
            for level in (1, 2):
                path = os.path.join(out, "cells", f"{precision}-c{level}.json")
                cells = [n for n in os.listdir(os.path.join(out, "cells")) if n.startswith(f"{precision}-c{level}")]
                if not cells:
                    failures.append(f"no cell of {precision} at concurrency {level} in {out}/cells")
                    continue
                with open(os.path.join(out, "cells", sorted(cells)[0]), encoding="utf-8") as f:
                    cell = json.load(f)
                if cell.get("completed", 0) < 1:
                    failures.append(f"{path}: no completed request")
        for failure in failures:
            print("FAIL:", failure)
        if failures:
            print(report)
            return 1
        # Another model directory with --gguf: the formats are made from that file (here the
        # default model's own directory and release, named explicitly).
        cache = os.environ.get("CROSSPOINT_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "crosspoint")
        gguf = os.path.join(cache, "gguf", "SmolLM2-135M-Instruct.Q4_1.gguf")
        model_dir = os.path.join(cache, "models", "SmolLM2-135M-Instruct")
        out2 = os.path.join(work, "out-gguf")
        cmd2 = [args.crosspoint, "sweep", "--engine", "llama.cpp", "--python", sys.executable, "--model", model_dir,
                "--gguf", gguf, "--precisions", "fp16,w4a16", "--concurrency", "1", "--num-prompts", "2",
                "--dataset", "random", "--random-input-len", "24", "--output-len", "8", "--max-bisect-runs", "0",
                "--time-budget", "0", "--threads", "2", "--max-model-len", "512", "--device", "cpu",
                "--quant-cache", os.path.join(work, "gguf2"), "--out", out2]
        run = subprocess.run(cmd2, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        if run.returncode != 0:
            print(run.stdout[-4000:])
            print(f"crosspoint sweep --model DIR --gguf exited with {run.returncode}")
            return 1
        with open(os.path.join(out2, "report.md"), encoding="utf-8") as f:
            report2 = f.read()
        if "from SmolLM2-135M-Instruct.Q4_1.gguf (--gguf" not in report2:
            print(report2)
            print("FAIL: the --gguf report does not name its source GGUF")
            return 1
        made = sorted(n for n in os.listdir(os.path.join(work, "gguf2")) if n.endswith(".gguf"))
        if len(made) != 2 or not all("-from-SmolLM2-135M-Instruct.Q4_1-llama.cpp-" in n for n in made):
            print(f"FAIL: the --gguf formats were not cached under the source's name: {made}")
            return 1
    print("ok: sweep --engine llama.cpp wrote the report with every precision's cells, also from --model DIR --gguf")
    return 0


if __name__ == "__main__":
    sys.exit(main())
