#!/usr/bin/env python3
"""Reproducibility of `crosspoint serve` as a client sees it, per checkpoint and mode.

For each checkpoint, a server is started (default mode, then --deterministic) and sent:
  sequential  the same greedy request N times, one after another on the idle server;
  together    K copies of it at once;
  amid_load   the same request K times while 64 other requests of other prompts run;
and, for a seeded sampled request, the same three. A mode is reproducible run to run when every
sequential repeat gives one text; it is batch-invariant when the copies sent together and the
ones amid load give that same text too. Standard library only.

usage: check_server_determinism.py --crosspoint BIN --model DIR [--model DIR ...] --out FILE.json
       [--repeats 6] [--copies 4] [--max-tokens 48] [--port 8123] [--device cuda|cpu]
"""
import argparse
import json
import os
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "harness"))
from server_process import ServerError, ServerProcess  # noqa: E402

PROMPT = "Explain in detail how a paged KV cache lets a server batch requests of different lengths."
OTHER = "Write a story about a lighthouse keeper number {} who collects clocks."


def post(port, body, timeout=300):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())["choices"][0]["text"]


def concurrently(fn, args_list):
    out = [None] * len(args_list)

    def run(i, a):
        try:
            out[i] = fn(*a)
        except Exception as e:  # recorded, not raised: a failed request is a finding
            out[i] = f"<error {e!r}>"

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(args_list)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def check_mode(args, model, deterministic):
    cmd = [args.crosspoint, "serve", "--model", model, "--device", args.device, "--port", str(args.port),
           "--served-model-name", "m", "--max-model-len", "4096"]
    if deterministic:
        cmd.append("--deterministic")
    result = {"model": model, "deterministic": deterministic}
    try:
        server = ServerProcess(cmd, port=args.port, log_path=args.log, timeout=300, poll_s=0.5)
    except ServerError as e:
        result["error"] = f"server did not become ready: {e}"
        return result
    with server:
        for name, sampling in (("greedy", {"temperature": 0}), ("seeded", {"temperature": 0.8, "top_p": 0.9, "seed": 7})):
            body = {"model": "m", "prompt": PROMPT, "max_tokens": args.max_tokens, "ignore_eos": True, **sampling}
            seq = [post(args.port, body) for _ in range(args.repeats)]
            together = concurrently(post, [(args.port, body)] * args.copies)
            load = [(args.port, {"model": "m", "prompt": OTHER.format(i), "max_tokens": 2 * args.max_tokens,
                                 "ignore_eos": True, "temperature": 0}) for i in range(64)]
            mixed = concurrently(post, load[:32] + [(args.port, body)] * args.copies + load[32:])
            amid = mixed[32:32 + args.copies]
            reference = seq[0]
            result[name] = {
                "distinct_sequential": len(set(seq)),
                "distinct_together": len(set(together)),
                "together_equal_sequential": sum(t == reference for t in together),
                "amid_load_equal_sequential": sum(t == reference for t in amid),
                "copies": args.copies, "repeats": args.repeats,
                "errors": sum(t.startswith("<error") for t in seq + together + mixed),
            }
            print(f"{os.path.basename(model)} {'deterministic' if deterministic else 'default'} {name}: "
                  f"{result[name]}", flush=True)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--crosspoint", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--port", type=int, default=8123)
    ap.add_argument("--device", default="cuda", help="cuda, or cpu (to try the script without a GPU)")
    ap.add_argument("--log", default="/dev/null")
    args = ap.parse_args()
    results = []
    for model in args.model:
        for deterministic in (False, True):
            results.append(check_mode(args, model, deterministic))
            with open(args.out, "w") as f:
                json.dump({"prompt": PROMPT, "max_tokens": args.max_tokens, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
