#!/usr/bin/env python3
"""Process-level tests of `crosspoint bench serve`: start fake_openai_server.py (or use a
real server), run the crosspoint binary against it, and check the result file with
check_result.py. One scenario per call; exit status 0 = pass, with the reason on failure.

usage: run_bench_scenario.py --binary build/crosspoint --scenario NAME [--workdir DIR]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_result import CheckFailed, check_keys, expect, recompute  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "fixtures", "bench")
TOKENIZER = os.path.join(FIXTURES, "tiny_tokenizer")
SHAREGPT = os.path.join(FIXTURES, "sharegpt_small.json")


class FakeServer:
    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_openai_server.py"), *args],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        expect(line.startswith("PORT "), f"fake server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def stats(self):
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as response:
            return json.load(response)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_bench(binary, workdir, base_url, *extra, name="result", timeout=240):
    """Runs the bench; --model defaults to "fake" and --tokenizer to the tiny fixture
    ("--tokenizer ''" in extra means: let the bench pick its default)."""
    result_file = os.path.join(workdir, name + ".json")
    extra = list(extra)
    defaults = []
    if "--model" not in extra:
        defaults += ["--model", "fake"]
    if "--tokenizer" not in extra:
        defaults += ["--tokenizer", TOKENIZER]
    else:
        at = extra.index("--tokenizer")
        if extra[at + 1] == "":
            del extra[at:at + 2]
    cmd = [binary, "bench", "serve", "--base-url", base_url, *defaults, "--result-file", result_file,
           "--disable-progress", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    result = None
    if os.path.exists(result_file):
        with open(result_file) as f:
            result = json.load(f)
    return proc, result


def show(proc):
    return f"\n--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"


def scenario_aggregates(binary, workdir):
    """Random dataset, concurrency 16: keys, every aggregate recomputed, goodput, concurrency cap."""
    with FakeServer("--token-delay-ms", "1") as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "32",
                            "--random-output-len", "12", "--random-range-ratio", "0.5", "--num-prompts", "120",
                            "--max-concurrency", "16", "--percentile-metrics", "ttft,tpot,itl,e2el",
                            "--metric-percentiles", "50,90,99,99.9", "--goodput", "ttft:10", "tpot:5", "e2el:80",
                            "--metrics-interval", "0.05", "--num-warmups", "2")
        expect(proc.returncode == 0 and r is not None, "bench failed" + show(proc))
        stats = server.stats()
    check_keys(r, ["ttft", "tpot", "itl", "e2el"])
    recompute(r)
    expect(r["completed"] == 120 and r["failed"] == 0, f"completed {r['completed']} failed {r['failed']}")
    expect(stats["num_requests"] == 122, f"server saw {stats['num_requests']} requests (120 + 2 warm-ups)")
    expect(stats["max_in_flight"] <= 16, f"server saw {stats['max_in_flight']} concurrent requests > 16")
    expect(r["concurrency_reached"] <= 16, f"client reached {r['concurrency_reached']} > 16")
    expect(r["max_concurrent_requests"] <= 16, "max_concurrent_requests > 16")
    # Every request carries a distinct UUID as x-request-id (servers such as llama-cpp-python's
    # refuse any other id).
    ids = stats["request_ids"]
    uuid = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    expect(all(i is not None and uuid.match(i) for i in ids), f"request ids that are not UUIDs: {ids[:3]}")
    expect(len(set(ids)) == len(ids), "two requests share an x-request-id")
    expect(all(s == "usage" for s in r["output_len_sources"]), "output lengths should come from usage")
    expect(r["output_lens"] == r["expected_output_lens"], "fake server returns exactly max_tokens tokens")
    good = sum(r["request_is_good"])
    sm = r["server_metrics"]
    expect(sm["available"] and sm["num_samples"] > 0, f"server metrics not sampled: {sm}")
    expect(0 <= sm["max_running"] <= 16, f"server max running {sm['max_running']}")
    expect(sm["num_preemptions"] is not None, "preemption counter missing")
    for label in ("Serving Benchmark Result", "Successful requests:", "Failed requests:", "Mean TTFT (ms):",
                  "P99.9 E2EL (ms):", "Request goodput (req/s):"):
        expect(label in proc.stdout, f"summary lacks {label!r}" + show(proc))
    print(f"aggregates ok: {r['completed']} requests, good {good}, server max in flight {stats['max_in_flight']}, "
          f"mean running {sm['mean_running']:.2f}")


def scenario_sharegpt(binary, workdir):
    """ShareGPT fixture through the chat endpoint; usage missing -> tokenizer fallback."""
    with FakeServer("--mode", "no-usage", "--tokens-per-event", "3") as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "sharegpt", "--dataset-path", SHAREGPT,
                            "--endpoint", "/v1/chat/completions", "--num-prompts", "20", "--request-rate", "100",
                            "--seed", "42", "--temperature", "0")
        expect(proc.returncode == 0 and r is not None, "bench failed" + show(proc))
    check_keys(r, ["ttft", "tpot", "itl"])
    recompute(r)
    expect(r["endpoint_type"] == "openai-chat", "endpoint_type")
    expect(r["completed"] == 20, f"completed {r['completed']}")
    expect(all(s == "tokenizer" for s in r["output_len_sources"]), "no usage chunk: tokenizer must count")
    d = r["dataset"]
    expect(d["name"] == "sharegpt" and d["num_requests"] == 20, f"dataset {d}")
    expect(abs(d["mean_output_tokens"] - np.mean(r["expected_output_lens"])) < 1e-9, "mean output tokens")
    expect("Mean input tokens (sample):" in proc.stdout, "summary lacks the sample's mean input tokens")
    print(f"sharegpt ok: mean input {d['mean_input_tokens']:.1f}, mean output {d['mean_output_tokens']:.1f}")


def exponential_ks_statistic(gaps, mean):
    """Kolmogorov-Smirnov distance between the gaps and Exponential(mean)."""
    x = np.sort(np.asarray(gaps))
    n = len(x)
    cdf = 1.0 - np.exp(-x / mean)
    return max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(0, n) / n))


def scenario_poisson(binary, workdir):
    """Arrivals at 150 req/s: exponential gaps (KS test) with the requested mean rate, as
    drawn and as seen by the client and by the server."""
    n, rate = 600, 150.0
    with FakeServer() as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "8",
                            "--random-output-len", "2", "--num-prompts", str(n), "--request-rate", str(rate),
                            "--seed", "3")
        expect(proc.returncode == 0 and r is not None, "bench failed" + show(proc))
        server_starts = np.sort(np.array(server.stats()["start_times"]))
    recompute(r)
    scheduled = np.array(r["scheduled_arrival_times"])
    gaps = np.diff(np.concatenate([[0.0], scheduled]))
    # vLLM rescales the running sum so the last arrival is at N / rate exactly.
    expect(abs(scheduled[-1] - n / rate) < 1e-6, f"last arrival at {scheduled[-1]}, expected {n / rate}")
    ks = exponential_ks_statistic(gaps, 1.0 / rate)
    expect(ks < 1.95 / np.sqrt(n), f"gaps are not exponential with mean 1/{rate}: KS distance {ks:.4f}")
    # What went on the wire: same mean rate (within 5 %); loop lag and scheduler jitter only
    # move arrivals by milliseconds, so the gap spread stays near Poisson's CV of 1.
    for name, times in (("client", np.sort(np.array(r["start_times"]))), ("server", server_starts)):
        measured = (len(times) - 1) / (times[-1] - times[0])
        cv = np.diff(times).std() / np.diff(times).mean()
        expect(abs(measured - rate) / rate < 0.05, f"{name}: mean rate {measured:.1f} vs {rate}")
        expect(0.8 < cv < 1.4, f"{name}: gap coefficient of variation {cv:.3f}, Poisson gives 1")
    lag = r["client_overhead"]["mean_dispatch_lag_ms"]
    expect(lag < 20, f"mean dispatch lag {lag} ms")
    print(f"poisson ok: KS {ks:.4f}, client rate {(n - 1) / (max(r['start_times']) - min(r['start_times'])):.1f}/s, "
          f"mean lag {lag:.2f} ms")


def scenario_failures(binary, workdir):
    """Every third request fails in each way; failures carry their reason; the rest succeed."""
    cases = {"http500": "HTTP 500 Internal Server Error", "truncate": "", "malformed": "malformed stream chunk",
             "stream-error": "server error in stream"}
    for mode, needle in cases.items():
        with FakeServer("--mode", mode, "--fail-every", "3") as server:
            proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "8",
                                "--random-output-len", "6", "--num-prompts", "15", "--max-concurrency", "1",
                                name="failures-" + mode)
            expect(proc.returncode == 0 and r is not None, f"{mode}: bench failed" + show(proc))
        recompute(r)
        expect(r["failed"] == 5 and r["completed"] == 10, f"{mode}: completed {r['completed']} failed {r['failed']}")
        errors = [e for e in r["errors"] if e]
        expect(all(needle in e for e in errors), f"{mode}: errors {errors[:3]}")
        expect("Failures" in proc.stdout and errors[0][:30] in proc.stdout, f"{mode}: summary lacks failures" + show(proc))
        print(f"failures ok ({mode}): {errors[0][:90]}")


def scenario_timeout_and_unreachable(binary, workdir):
    with FakeServer("--mode", "slow", "--slow-delay-s", "5") as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "8",
                            "--random-output-len", "4", "--num-prompts", "4", "--max-concurrency", "4",
                            "--request-timeout", "0.5", name="timeout")
    expect(proc.returncode == 1 and r is not None, "all-failed run must write its result and exit 1" + show(proc))
    expect(r["failed"] == 4 and all("Timeout" in e for e in r["errors"]), f"timeout errors {r['errors']}")
    recompute(r)
    # A port nobody listens on: bind then close to find one.
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc, r = run_bench(binary, workdir, f"http://127.0.0.1:{port}", "--dataset-name", "random",
                        "--random-input-len", "8", "--random-output-len", "4", "--num-prompts", "5",
                        "--request-rate", "inf", name="unreachable")
    expect(proc.returncode == 1 and r is not None, "unreachable run must write its result and exit 1" + show(proc))
    expect(r["failed"] == 5 and all("connect" in e.lower() for e in r["errors"]), f"errors {r['errors']}")
    expect(r["server_metrics"]["available"] is False, "no server, no metrics")
    recompute(r)
    print(f"timeout ok: {r['errors'][0][:80]}")


def scenario_killed(binary, workdir):
    """The server dies while 20 streams are open: every request is accounted for."""
    with FakeServer("--token-delay-ms", "10", "--die-after", "40", "--die-delay-ms", "100") as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "8",
                            "--random-output-len", "30", "--num-prompts", "100", "--max-concurrency", "20")
        expect(proc.returncode == 0 and r is not None, "bench failed" + show(proc))
    recompute(r)
    expect(r["completed"] + r["failed"] == 100, "every request is completed or failed")
    expect(r["completed"] >= 20 and r["failed"] >= 60, f"completed {r['completed']} failed {r['failed']}")
    reasons = sorted({e.split(":")[0] for e in r["errors"] if e})
    expect(all(e for i, e in enumerate(r["errors"]) if r["output_lens"][i] == 0), "failed without a reason")
    print(f"killed ok: completed {r['completed']}, failed {r['failed']}, reasons {reasons}")


def scenario_thousand_streams(binary, workdir):
    """1,000 concurrent streams from a server that holds them until all 1,000 are open, then
    streams every token instantly: all complete and the client's overhead figures are consistent."""
    with FakeServer("--barrier", "1000") as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "8",
                            "--random-output-len", "20", "--num-prompts", "1000", "--max-concurrency", "1000",
                            "--request-rate", "inf", "--metrics-interval", "0.2")
        expect(proc.returncode == 0 and r is not None, "bench failed" + show(proc))
        stats = server.stats()
    recompute(r)
    expect(r["completed"] == 1000, f"completed {r['completed']}, errors {[e for e in r['errors'] if e][:3]}")
    expect(r["concurrency_reached"] == 1000, f"client reached {r['concurrency_reached']}")
    expect(stats["max_in_flight"] == 1000, f"server saw only {stats['max_in_flight']} concurrent streams")
    expect(r["max_concurrent_requests"] == 1000, f"max_concurrent_requests {r['max_concurrent_requests']}")
    # The client's CPU share is reported, not judged: on a shared machine it measures the
    # neighbours too. What must hold is that the measurement is consistent with itself.
    o = r["client_overhead"]
    expect(0 < o["cpu_fraction"] <= 1.05, f"one thread's CPU fraction {o['cpu_fraction']:.3f} is impossible")
    expect(abs(o["cpu_s"] - o["cpu_fraction"] * r["duration"]) <= 0.01 * max(o["cpu_s"], 1e-3) + 1e-3,
           f"cpu_s {o['cpu_s']} != cpu_fraction x duration")
    expect(o["num_chunks"] >= 1000 * 20, f"only {o['num_chunks']} chunks parsed for 1,000 x 20 tokens")
    expect(o["parse_s"] > 0 and o["mean_parse_us_per_chunk"] > 0, "parse time not measured")
    print(f"thousand ok: server max in flight {stats['max_in_flight']}, client CPU {100 * o['cpu_fraction']:.1f}% "
          f"({o['mean_parse_us_per_chunk']:.1f} us/chunk), duration {r['duration']:.2f}s, "
          f"median ITL {r['median_itl_ms']:.2f} ms")


def scenario_bad_options(binary, workdir):
    """Bad options fail with one clear line before any request is sent."""
    with FakeServer() as server:
        base = ["--dataset-name", "random", "--num-prompts", "3"]
        cases = [
            (base, "--request-rate R and/or --max-concurrency"),
            (base + ["--request-rate", "5", "--goodput", "ttft=5"], "--goodput"),
            (base + ["--request-rate", "5", "--goodput", "latency:5"], "unknown metric"),
            (base + ["--request-rate", "5", "--goodput", "ttft:-1"], ">= 0"),
            (["--dataset-name", "sharegpt", "--dataset-path", "/nonexistent/sharegpt.json", "--request-rate", "1"],
             "/nonexistent/sharegpt.json"),
            (base + ["--request-rate", "5", "--random-range-ratio", "1.5"], "--random-range-ratio"),
            (base + ["--request-rate", "0"], "--request-rate"),
            (base + ["--max-concurrency", "0"], "--max-concurrency"),
            (base + ["--request-rate", "5", "--metric-percentiles", "150"], "--metric-percentiles"),
            (base + ["--request-rate", "5", "--percentile-metrics", "ttft,foo"], "--percentile-metrics"),
            (base + ["--request-rate", "5", "--endpoint", "/v1/embeddings"], "--endpoint"),
        ]
        for args, needle in cases:
            proc, r = run_bench(binary, workdir, server.url, *args, name="bad")
            expect(proc.returncode != 0, f"{args}: should fail" + show(proc))
            expect(needle in proc.stderr, f"{args}: stderr lacks {needle!r}" + show(proc))
            expect(r is None, f"{args}: no result file expected")
        expect(server.stats()["num_requests"] == 0, "a request was sent despite bad options")
    print("bad options ok")


class CrosspointServer:
    """serving_toy_server (prints 'port N') or `crosspoint serve` (polled on /health)."""

    def __init__(self, argv, port=None):
        import threading
        import time
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        if port is None:
            line = self.proc.stdout.readline()
            expect(line.startswith("port "), f"server did not start: {line!r}")
            port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 300
        while True:
            expect(self.proc.poll() is None, "server exited: " + "".join(self.stderr)[-2000:])
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            expect(time.time() < deadline, "server not healthy after 300 s")
            time.sleep(0.2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def check_against_crosspoint(r, max_concurrency, num_prompts):
    check_keys(r, ["ttft", "tpot", "itl", "e2el"])
    recompute(r)
    expect(r["completed"] == num_prompts, f"completed {r['completed']}, errors {[e for e in r['errors'] if e][:3]}")
    expect(all(s == "usage" for s in r["output_len_sources"]), "crosspoint sends usage")
    expect(r["concurrency_reached"] <= max_concurrency, "client concurrency over the limit")
    sm = r["server_metrics"]
    expect(sm["available"], f"crosspoint's /metrics not understood: {sm}")
    expect(sm["max_running"] <= max_concurrency, f"server ran {sm['max_running']} > {max_concurrency}")
    expect(sm["num_preemptions"] is not None and sm["mean_kv_cache_usage"] is not None, f"server metrics {sm}")


def scenario_toy_server(binary, workdir):
    """crosspoint's OpenAI server and engine in front of the toy model (no weights)."""
    toy = os.environ.get("CROSSPOINT_TOY_SERVER")
    expect(toy and os.path.exists(toy), "CROSSPOINT_TOY_SERVER must name the serving_toy_server binary")
    with CrosspointServer([toy, "--tokenizer", os.path.join(TOKENIZER, "tokenizer.json"), "--port", "0",
                           "--step-delay-ms", "2"]) as server:
        for endpoint in ("/v1/completions", "/v1/chat/completions"):
            proc, r = run_bench(binary, workdir, server.url, "--model", "toy", "--dataset-name", "random",
                                "--random-input-len", "16",
                                "--random-output-len", "12", "--random-range-ratio", "0.5", "--num-prompts", "40",
                                "--max-concurrency", "6", "--endpoint", endpoint, "--temperature", "0",
                                "--percentile-metrics", "ttft,tpot,itl,e2el", "--metrics-interval", "0.05",
                                "--goodput", "ttft:50", "tpot:20")
            expect(proc.returncode == 0 and r is not None, "bench failed" + show(proc))
            check_against_crosspoint(r, 6, 40)
            expect(r["output_lens"] == r["expected_output_lens"], "ignore_eos: every request runs max_tokens")
            print(f"toy server ok ({endpoint}): mean running {r['server_metrics']['mean_running']:.2f}, "
                  f"mean TPOT {r['mean_tpot_ms']:.2f} ms")


def scenario_default_model(binary, workdir):
    """`crosspoint serve --model default`: a ShareGPT run and a random run."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with CrosspointServer([binary, "serve", "--device", "cpu", "--model", "default", "--port", str(port)], port=port) as server:
        proc, r = run_bench(binary, workdir, server.url, "--model", "default", "--tokenizer", "",
                            "--dataset-name", "sharegpt", "--num-prompts", "4", "--sharegpt-output-len", "6",
                            "--max-concurrency", "4", "--temperature", "0",
                            "--percentile-metrics", "ttft,tpot,itl,e2el", name="default-sharegpt")
        expect(proc.returncode == 0 and r is not None, "ShareGPT bench failed" + show(proc))
        check_against_crosspoint(r, 4, 4)
        proc, r2 = run_bench(binary, workdir, server.url, "--model", "default", "--tokenizer", "",
                             "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "4",
                             "--num-prompts", "4", "--request-rate", "8", "--max-concurrency", "4",
                             "--percentile-metrics", "ttft,tpot,itl,e2el", name="default-random")
        expect(proc.returncode == 0 and r2 is not None, "random bench failed" + show(proc))
        check_against_crosspoint(r2, 4, 4)
    print(f"default model ok: ShareGPT mean input {r['dataset']['mean_input_tokens']:.1f}, "
          f"mean TPOT {r['mean_tpot_ms']:.1f} ms, mean running {r['server_metrics']['mean_running']:.2f}")


SCENARIOS = {name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--scenario", required=True, choices=sorted(SCENARIOS))
    parser.add_argument("--workdir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-test-") as tmp:
        try:
            SCENARIOS[args.scenario](os.path.abspath(args.binary), args.workdir or tmp)
        except CheckFailed as e:
            print(f"FAILED {args.scenario}: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
