#!/usr/bin/env python3
"""`crosspoint bench serve` against a server it did not write: llama-cpp-python's OpenAI server
(PyPI llama-cpp-python[server], installed by scripts/setup.sh) on the default model's GGUF.

    bench_vs_llama_cpp_server.py --crosspoint BIN

Checks, on the completions and the chat endpoints, that every request succeeds (the bench's
headers and bodies are ones this server accepts: a UUID x-request-id, max_tokens beside
max_completion_tokens) and that the output is counted (random prompts often end at once with
EOS on this chat model, so only some requests have tokens); and that requests this server
cannot serve are failed records saying what came back: a streamed prompt longer than its
context gets HTTP 200 and an empty stream from it (unstreamed, the same request gets a 400
with a message), which the bench must not count as a success. Exits 77 (skipped) only when CROSSPOINT_ASSETS_OPTIONAL=1 and the server
or the model is missing; otherwise a missing piece fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "harness"))
from server_process import ServerProcess, free_port  # noqa: E402

CACHE = os.environ.get("CROSSPOINT_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "crosspoint"))
GGUF = os.path.join(CACHE, "gguf", "SmolLM2-135M-Instruct.Q4_1.gguf")
TOKENIZER = os.path.join(CACHE, "models", "SmolLM2-135M-Instruct")
CONTEXT = 512
FAILURES = []


def expect(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL " + what, flush=True)


def missing(what):
    if os.environ.get("CROSSPOINT_ASSETS_OPTIONAL") == "1":
        print(f"skipped: {what}")
        sys.exit(77)
    print(f"FAIL {what} (scripts/setup.sh installs and fetches it)")
    sys.exit(1)


def start_server(port, log_path):
    """llama-cpp-python's OpenAI server on the default model's GGUF, ready when /v1/models answers."""
    return ServerProcess([sys.executable, "-m", "llama_cpp.server", "--model", GGUF, "--model_alias", "smollm2",
                          "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(CONTEXT), "--n_threads", "2",
                          "--chat_format", "chatml"], port=port, log_path=log_path, ready_path="/v1/models",
                         timeout=120, poll_s=0.5)


def bench(binary, port, workdir, name, *extra):
    result_file = os.path.join(workdir, name + ".json")
    cmd = [binary, "bench", "serve", "--base-url", f"http://127.0.0.1:{port}", "--model", "smollm2",
           "--tokenizer", TOKENIZER, "--result-file", result_file, "--disable-progress", "--seed", "1",
           "--temperature", "0", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    result = json.load(open(result_file)) if os.path.exists(result_file) else None
    if result is None:
        print(proc.stdout[-2000:] + proc.stderr[-2000:])
    return proc, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crosspoint", required=True)
    args = parser.parse_args()
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as e:
        missing(f"llama-cpp-python[server] is not installed ({e})")
    for path in (GGUF, os.path.join(TOKENIZER, "tokenizer.json")):
        if not os.path.exists(path):
            missing(f"{path} is missing")
    port = free_port()
    with tempfile.TemporaryDirectory() as workdir:
        server = start_server(port, os.path.join(workdir, "server.log"))
        try:
            for endpoint in ("/v1/completions", "/v1/chat/completions"):
                name = endpoint.strip("/").replace("/", "_")
                proc, r = bench(args.crosspoint, port, workdir, name, "--endpoint", endpoint, "--dataset-name",
                                "random", "--random-input-len", "24", "--random-output-len", "8", "--num-prompts", "6",
                                "--max-concurrency", "2")
                expect(proc.returncode == 0 and r is not None, f"{endpoint}: bench exited {proc.returncode}")
                if r is None:
                    continue
                expect(r["completed"] == 6 and r["failed"] == 0,
                       f"{endpoint}: completed {r['completed']} failed {r['failed']}: {r['errors']}")
                expect(sum(r["output_lens"]) > 0 and all(n >= 0 for n in r["output_lens"]),
                       f"{endpoint}: output lengths {r['output_lens']}")
                expect(all(s in ("usage", "tokenizer") for s in r["output_len_sources"]),
                       f"{endpoint}: output lengths from {r['output_len_sources']}")
                expect(all(status == 200 for status in r["http_statuses"]), f"{endpoint}: {r['http_statuses']}")
                print(f"ok   {endpoint}: 6 requests, output tokens {r['output_lens']} "
                      f"({r['output_len_sources'][0]}), median TPOT {r['median_tpot_ms']:.1f} ms", flush=True)
            # Prompts longer than the server's context: an empty 200 stream there, failed records
            # here that say so.
            proc, r = bench(args.crosspoint, port, workdir, "too_long", "--dataset-name", "random",
                            "--random-input-len", str(2 * CONTEXT), "--random-output-len", "4", "--num-prompts", "2",
                            "--max-concurrency", "1")
            expect(r is not None, "too-long prompts: no result file")
            if r is not None:
                expect(r["completed"] == 0 and r["failed"] == 2, f"too-long prompts: {r['completed']} completed")
                expect(all(s == 200 for s in r["http_statuses"]), f"too-long prompts: statuses {r['http_statuses']}")
                expect(all("truncated" in e for e in r["errors"]),
                       f"too-long prompts: errors that do not name the broken stream: {r['errors']}")
                print(f"ok   requests the server could not serve are failed records: {r['errors'][0][:120]}",
                      flush=True)
        finally:
            server.stop(timeout=20)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
