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
import shlex
import subprocess
import sys
import tempfile
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_result import VLLM_KEYS, CheckFailed, check_keys, expect, recompute  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "harness"))
from server_process import ServerProcess, free_port  # noqa: E402

FIXTURES = os.path.join(HERE, "..", "fixtures", "bench")
TOKENIZER = os.path.join(FIXTURES, "tiny_tokenizer")
SHAREGPT = os.path.join(FIXTURES, "sharegpt_small.json")


class FakeServer(ServerProcess):
    """fake_openai_server.py, which announces its port ("PORT N")."""

    def __init__(self, *args):
        super().__init__([sys.executable, os.path.join(HERE, "fake_openai_server.py"), *args], announce="PORT",
                         ready_path="/stats", timeout=30)
        self.url = self.base_url

    def stats(self):
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as response:
            return json.load(response)


def run_bench(binary, workdir, base_url, *extra, name="result", timeout=240, env=None):
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
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
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
    port = free_port()  # a port nobody listens on
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
            (base + ["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "5",
                     "--request-rate", "5"], "do not give --request-rate"),
            (base + ["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "9", "--ramp-up-end-rps", "5"],
             "--ramp-up-start-rps: must not exceed"),
            (base + ["--backend", "openai-chat", "--endpoint", "/v1/completions"], "--backend openai-chat"),
            (base + ["--backend", "openai-audio"], "--backend openai-audio"),
            (base + ["--header", "no-equals"], "--header: 'no-equals' is not KEY=VALUE"),
            (base + ["--metadata", "x"], "--metadata: 'x' is not KEY=VALUE"),
            (base + ["--extra-body", "{oops"], "--extra-body"),
            (base + ["--lora-modules", "a", "b"], "--lora-modules a b: crosspoint bench serve has no such feature"),
            (base + ["--ready-check-timeout-sec", "600"], "--ready-check-timeout-sec 600"),
            (base + ["--dataset-path", SHAREGPT], "reads no file"),
            (["--dataset-name", "hf", "--dataset-path", "lmarena-ai/VisionArena-Chat"], "--dataset-name hf"),
            (["--dataset-name", "custom", "--num-prompts", "3"], "--dataset-path"),
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


EXAMPLES = os.path.join(FIXTURES, "vllm_bench_serve_examples.txt")
CUSTOM = os.path.join(FIXTURES, "custom_prompts.jsonl")
SONNETS = os.path.join(FIXTURES, "sonnets_small.txt")
BURSTGPT = os.path.join(FIXTURES, "burstgpt_small.csv")
SAMPLING_FLAGS = {"--top-p": ("top_p", float), "--top-k": ("top_k", int), "--min-p": ("min_p", float),
                  "--temperature": ("temperature", float), "--frequency-penalty": ("frequency_penalty", float),
                  "--presence-penalty": ("presence_penalty", float),
                  "--repetition-penalty": ("repetition_penalty", float)}
# vLLM's default result file name: {label}-{rate}qps[-concurrency{N}]-{model basename}-{date}.json
DATE = r"\d{8}-\d{6}"


def load_examples():
    """(expectation words, argv) per block of the fixture of vLLM's documented command lines."""
    blocks, current = [], []
    with open(EXAMPLES) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#"):
                continue
            if not line.strip():
                if current:
                    blocks.append(current)
                current = []
                continue
            current.append(line)
    if current:
        blocks.append(current)
    examples = []
    for block in blocks:
        text = " ".join(l.rstrip().rstrip("\\").strip() for l in block[1:])
        text = text.replace("<your data path>/ShareGPT_V3_unfiltered_cleaned_split.json", SHAREGPT)
        text = text.replace("<path-to-your-data-jsonl>", CUSTOM)
        examples.append((block[0].split(), shlex.split(text)))
    return examples


def flag_values(argv):
    """--flag value / --flag=value pairs of an argv (the last occurrence wins; switches -> True)."""
    values = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a.split("=", 1)
                values[k] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                values[a] = argv[i + 1]
                i += 1
            else:
                values[a] = True
        i += 1
    return values


def check_sampling_in_bodies(bodies, flags, what):
    for body in bodies:
        for flag, (key, cast) in SAMPLING_FLAGS.items():
            if flag in flags:
                expect(key in body and body[key] == cast(flags[flag]) and type(body[key]) is cast,
                       f"{what}: body {key} = {body.get(key)!r}, flag {flag} {flags[flag]}")
            elif key != "repetition_penalty":  # vLLM's completions body always has repetition_penalty 1.0
                expect(key not in body, f"{what}: {key} sent though {flag} was not given")


def files_under(directory):
    return sorted(os.path.relpath(os.path.join(d, f), directory) for d, _, fs in os.walk(directory) for f in fs)


def scenario_vllm_command_lines(binary, workdir):
    """vLLM's documented `vllm bench serve` command lines run unchanged (placeholders filled in,
    --base-url and --tokenizer appended): requests, bodies, the result file's name and keys."""
    examples = load_examples()
    expect(len(examples) >= 4, f"only {len(examples)} examples in {EXAMPLES}")
    for n, (expectation, argv) in enumerate(examples):
        expect(argv[:3] == ["vllm", "bench", "serve"], f"example {n} is not a vllm bench serve line: {argv[:3]}")
        rundir = os.path.join(workdir, f"example{n}")
        os.makedirs(rundir)
        with FakeServer() as server:
            cmd = [binary, "bench", "serve", *argv[3:], "--base-url", server.url, "--tokenizer", TOKENIZER,
                   "--disable-tqdm"]
            proc = subprocess.run(cmd, cwd=rundir, capture_output=True, text=True, timeout=240)
            stats = server.stats()
        what = f"example {n} ({' '.join(argv[3:9])} ...)"
        if expectation[0] == "refused":
            expect(proc.returncode != 0 and expectation[1] in proc.stderr,
                   f"{what}: should be refused naming {expectation[1]}" + show(proc))
            expect(stats["num_requests"] == 0 and not files_under(rundir), f"{what}: refused yet it ran")
            continue
        expect(proc.returncode == 0, f"{what} failed" + show(proc))
        flags = flag_values(argv[3:])
        num_prompts = int(flags.get("--num-prompts", 1000))
        expect(stats["num_requests"] == num_prompts, f"{what}: server saw {stats['num_requests']} requests")
        bodies = [json.loads(b) for b in stats["bodies"]]
        expect(all(p == flags["--endpoint"] for p in stats["paths"]), f"{what}: paths {set(stats['paths'])}")
        expect(all(b["model"] == flags["--model"] and b["stream"] is True for b in bodies), f"{what}: model/stream")
        if flags["--endpoint"] == "/v1/completions":
            expect(all(b["repetition_penalty"] == 1.0 or "--repetition-penalty" in flags for b in bodies),
                   f"{what}: repetition_penalty")
        check_sampling_in_bodies(bodies, flags, what)
        if flags.get("--dataset-name") == "custom":
            expect(all(b["max_tokens"] == 256 for b in bodies), f"{what}: custom-output-len default 256")
            prompts = [json.loads(l)["prompt"] for l in open(CUSTOM)]
            expect(all(b["prompt"] in prompts for b in bodies), f"{what}: --skip-chat-template sends raw prompts")
        if "--max-concurrency" in flags:
            expect(stats["max_in_flight"] <= int(flags["--max-concurrency"]), f"{what}: concurrency")
        expect("Serving Benchmark Result" in proc.stdout, f"{what}: no summary" + show(proc))
        files = files_under(rundir)
        if "--save-result" not in flags:
            expect(files == [], f"{what}: no --save-result, yet files were written: {files}")
            continue
        expect(len(files) == 1, f"{what}: expected one result file, got {files}")
        label = flags.get("--label", flags.get("--backend", "openai"))
        concurrency = f"-concurrency{flags['--max-concurrency']}" if "--max-concurrency" in flags else ""
        model = flags["--model"].split("/")[-1]
        rate = "inf" if "--request-rate" not in flags else str(float(flags["--request-rate"]))
        subdir = os.path.normpath(flags["--result-dir"]) + "/" if "--result-dir" in flags else ""
        pattern = re.escape(f"{subdir}{label}-{rate}qps{concurrency}-{model}-") + DATE + r"\.json"
        expect(re.fullmatch(pattern, files[0]), f"{what}: file {files[0]} does not match {pattern}")
        with open(os.path.join(rundir, files[0])) as f:
            text = f.read()
        expect("\n" not in text.strip(), f"{what}: --save-result writes one line of JSON")
        r = json.loads(text)
        detailed = "--save-detailed" in flags
        keys = [k for k in VLLM_KEYS if detailed or k not in DETAILED_KEYS]
        expect(list(r)[:len(keys)] == keys, f"{what}: keys {list(r)[:len(keys)]} != vLLM's {keys}")
        expect(r["backend"] == label and r["model_id"] == flags["--model"] and r["num_prompts"] == num_prompts,
               f"{what}: backend/model_id/num_prompts")
        if detailed:
            expect(len(r["itls"]) == num_prompts and len(r["generated_texts"]) == num_prompts, f"{what}: lists")
        else:
            expect(not any(k in r for k in DETAILED_KEYS), f"{what}: per-request lists without --save-detailed")
        for p in ("ttft", "tpot", "itl"):
            expect(f"p99_{p}_ms" in r and f"mean_{p}_ms" in r, f"{what}: {p} statistics")
    print(f"vllm command lines ok: {len(examples)} examples")


DETAILED_KEYS = ["input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"]


def scenario_vllm_flags(binary, workdir):
    """--host/--port, --backend openai-chat, --served-model-name, sampling flags and --extra-body
    in every body, --header (overriding the API key's Authorization), --request-id-prefix,
    --metadata in the saved result, --append-result, underscores in flag names."""
    rundir = os.path.join(workdir, "flags")
    os.makedirs(rundir)
    env = dict(os.environ, OPENAI_API_KEY="from-env")
    with FakeServer() as server:
        common = ["--host", "127.0.0.1", "--port", str(server.port), "--backend", "openai-chat",
                  "--model", "org/Model-X", "--served_model_name", "served-x", "--tokenizer", TOKENIZER,
                  "--dataset-name", "random", "--random-input-len", "8", "--random-output-len", "3",
                  "--num-prompts", "6", "--num-warmups", "1", "--temperature", "0", "--top-k", "5",
                  "--min-p=0.1", "--repetition-penalty", "1.2",
                  "--extra-body", '{"top_k": 3, "chat_template_kwargs": {"enable_thinking": false}}',
                  "--header", "x-trace=abc", "Authorization=Bearer from-header", "--request-id-prefix", "myrun-",
                  "--save-result", "--append-result", "--result-filename", "runs.jsonl",
                  "--metadata", "version=0.3.3", "tp=1", "--disable-tqdm"]
        for _ in range(2):
            proc = subprocess.run([binary, "bench", "serve", *common], cwd=rundir, env=env, capture_output=True,
                                  text=True, timeout=240)
            expect(proc.returncode == 0, "bench failed" + show(proc))
        stats = server.stats()
    expect(stats["num_requests"] == 14, f"server saw {stats['num_requests']} requests (2 x (6 + 1 warm-up))")
    expect(set(stats["paths"]) == {"/v1/chat/completions"}, f"openai-chat goes to {set(stats['paths'])}")
    expected_body_keys = ["model", "messages", "max_completion_tokens", "max_tokens", "stream", "stream_options",
                          "ignore_eos", "top_k", "min_p", "temperature", "repetition_penalty", "chat_template_kwargs"]
    for raw, headers in zip(stats["bodies"], stats["headers"]):
        body = json.loads(raw)
        expect(list(body) == expected_body_keys, f"body keys {list(body)} != {expected_body_keys}")
        expect(body["model"] == "served-x", "--served-model-name is the request's model")
        expect(body["top_k"] == 3 and body["min_p"] == 0.1 and body["temperature"] == 0.0 and
               body["repetition_penalty"] == 1.2, f"sampling values {body}")
        expect(body["chat_template_kwargs"] == {"enable_thinking": False}, "extra body merged")
        expect(body["max_completion_tokens"] == 3 and body["ignore_eos"] is True, "lengths / ignore_eos")
        expect(headers.get("x-trace") == "abc", f"--header x-trace missing: {headers}")
        expect(headers.get("authorization") == "Bearer from-header", f"--header replaces the API key: {headers}")
    # Warm-ups carry no id (as vLLM's); the run's requests prefix + index.
    ids = stats["request_ids"]
    expect(ids[:7].count(None) == 1 and sorted(i for i in ids[:7] if i) == [f"myrun-{i}" for i in range(6)],
           f"request ids {ids[:7]}")
    files = files_under(rundir)
    expect(files == ["runs.jsonl"], f"files {files}")
    with open(os.path.join(rundir, "runs.jsonl")) as f:
        lines = f.read().split("\n")
    expect(len(lines) == 2, f"--append-result: {len(lines)} lines, expected 2")
    for line in lines:
        r = json.loads(line)
        keys = list(r)
        expect(keys[:10] == ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
                             "version", "tp", "request_rate"], f"metadata after num_prompts: {keys[:10]}")
        expect(r["version"] == "0.3.3" and r["tp"] == "1" and r["backend"] == "openai-chat", "metadata values")
        expect(r["completed"] == 6 and r["model_id"] == "org/Model-X", "completed / model_id")
    # No --model: the server's first model (as vLLM): its id in the requests, its root in the result.
    with FakeServer() as server:
        proc = subprocess.run([binary, "bench", "serve", "--base-url", server.url, "--tokenizer", TOKENIZER,
                               "--random-input-len", "8", "--random-output-len", "2", "--num-prompts", "3",
                               "--save-result", "--result-filename", "nomodel.json", "--disable-tqdm"],
                              cwd=rundir, capture_output=True, text=True, timeout=240)
        expect(proc.returncode == 0, "bench without --model failed" + show(proc))
        bodies = [json.loads(b) for b in server.stats()["bodies"]]
    expect(len(bodies) == 3 and all(b["model"] == "fake-served" for b in bodies), "requests carry /v1/models' id")
    with open(os.path.join(rundir, "nomodel.json")) as f:
        expect(json.load(f)["model_id"] == "org/fake-root", "model_id is /v1/models' root")
    expect(not any(f.endswith(".pytorch.json") for f in files_under(rundir)),
           "no .pytorch.json without SAVE_TO_PYTORCH_BENCHMARK_FORMAT")
    check_pytorch_benchmark_format(binary, rundir)
    print("vllm flags ok")


def check_pytorch_benchmark_format(binary, rundir):
    """SAVE_TO_PYTORCH_BENCHMARK_FORMAT set: vLLM's second file beside the result, one record per
    headline metric, built as vllm/benchmarks/serve.py's save_to_pytorch_benchmark_format."""
    metrics = ["median_ttft_ms", "mean_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms",
               "std_tpot_ms", "p99_tpot_ms", "median_itl_ms", "mean_itl_ms", "std_itl_ms", "p99_itl_ms"]
    env = dict(os.environ, SAVE_TO_PYTORCH_BENCHMARK_FORMAT="1")
    with FakeServer() as server:
        proc = subprocess.run([binary, "bench", "serve", "--base-url", server.url, "--model", "org/Model-Y",
                               "--tokenizer", TOKENIZER, "--random-input-len", "8", "--random-output-len", "3",
                               "--num-prompts", "4", "--header", "Authorization=Bearer secret", "--save-result",
                               "--result-filename", "pt.run.json", "--metadata", "tensor_parallel_size=2",
                               "--disable-tqdm"], cwd=rundir, env=env, capture_output=True, text=True, timeout=240)
        expect(proc.returncode == 0, "bench with SAVE_TO_PYTORCH_BENCHMARK_FORMAT failed" + show(proc))
    with open(os.path.join(rundir, "pt.run.json")) as f:
        result = json.load(f)
    with open(os.path.join(rundir, "pt.run.pytorch.json")) as f:
        records = json.load(f)
    expect([r["metric"]["name"] for r in records] == metrics, f"records {[r['metric']['name'] for r in records]}")
    extra = {k: v for k, v in result.items() if k not in metrics and k not in ("ttfts", "itls", "generated_texts",
                                                                                "errors")}
    for r in records:
        name = r["metric"]["name"]
        expect(r["metric"]["benchmark_values"] == [result[name]], f"{name}: {r['metric']['benchmark_values']}")
        expect(r["metric"]["extra_info"] == extra, f"{name}: extra_info differs from the result's other keys")
        expect(r["model"] == {"name": "org/Model-Y"} and r["benchmark"]["name"] == "vLLM benchmark", "names")
        args = r["benchmark"]["extra_info"]["args"]
        expect(args["header"] == "<redacted>" and "secret" not in json.dumps(r), "the header's value is redacted")
        expect(args["num_prompts"] == 4 and args["request_rate"] == "inf" and args["model"] == "org/Model-Y",
               f"args {args}")
        expect(args["tensor_parallel_size"] == "2", "tensor_parallel_size from --metadata, as vLLM")


def scenario_ramp_up(binary, workdir):
    """--ramp-up-strategy linear with constant gaps: the schedule is vLLM's sum of 1 / r_i,
    the result carries the ramp-up keys and vLLM's ramp-up file name."""
    rundir = os.path.join(workdir, "ramp")
    os.makedirs(rundir)
    n, start, end = 60, 20, 200
    with FakeServer() as server:
        proc = subprocess.run([binary, "bench", "serve", "--base-url", server.url, "--model", "fake",
                               "--tokenizer", TOKENIZER, "--random-input-len", "8", "--random-output-len", "2",
                               "--num-prompts", str(n), "--ramp-up-strategy", "linear", "--ramp-up-start-rps",
                               str(start), "--ramp-up-end-rps", str(end), "--burstiness", "inf", "--save-result",
                               "--result-file", "full.json", "--disable-progress"],
                              cwd=rundir, capture_output=True, text=True, timeout=240)
        expect(proc.returncode == 0, "bench failed" + show(proc))
        stats = server.stats()
    expect(stats["num_requests"] == n, f"{stats['num_requests']} requests")
    with open(os.path.join(rundir, "full.json")) as f:
        r = json.load(f)
    rates = [start + (end - start) * i / (n - 1) for i in range(n)]
    expected = np.cumsum([1 / x for x in rates])
    got = np.array(r["scheduled_arrival_times"])
    expect(np.allclose(got, expected, rtol=1e-9, atol=1e-9), f"schedule {got[:4]} != {expected[:4]}")
    # Requests left the client on that schedule (a few ms of lag at most on a loaded machine).
    lag = np.array(r["arrival_times"]) - got
    expect(lag.min() >= -1e-6 and np.median(lag) < 0.05, f"release lag {lag.min()}..{np.median(lag)}")
    expect(r["ramp_up_strategy"] == "linear" and r["ramp_up_start_rps"] == start and r["ramp_up_end_rps"] == end,
           "ramp-up keys")
    keys = list(r)
    expect(keys.index("ramp_up_strategy") == keys.index("max_concurrency") + 1, "ramp-up keys follow max_concurrency")
    files = [f for f in files_under(rundir) if f != "full.json"]
    pattern = f"openai-ramp-up-linear-{start}qps-{end}qps-fake-" + DATE + r"\.json"
    expect(len(files) == 1 and re.fullmatch(pattern, files[0]), f"files {files} (expected {pattern})")
    print(f"ramp-up ok: last arrival {got[-1]:.3f} s")


def scenario_vllm_datasets(binary, workdir):
    """custom, sonnet and burstgpt through the binary: what each request asks for."""
    with FakeServer() as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "custom", "--dataset-path", CUSTOM,
                            "--num-prompts", "4", "--custom-output-len", "7", name="custom")
        expect(proc.returncode == 0 and r is not None, "custom failed" + show(proc))
        bodies = [json.loads(b) for b in server.stats()["bodies"]]
        expect(len(bodies) == 4 and all(b["max_tokens"] == 7 for b in bodies), "custom: 4 requests of 7 tokens")
        expect(all(b["prompt"].startswith("<|im_start|>user\n") for b in bodies), "custom: chat template applied")
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "sonnet", "--dataset-path", SONNETS,
                            "--num-prompts", "5", "--sonnet-input-len", "320", "--sonnet-prefix-len", "120",
                            "--sonnet-output-len", "6", "--backend", "openai-chat", name="sonnet")
        expect(proc.returncode == 0 and r is not None, "sonnet failed" + show(proc))
        bodies = [json.loads(b) for b in server.stats()["bodies"]][4:]
        expect(len(bodies) == 5 and all(b["max_completion_tokens"] == 6 for b in bodies), "sonnet: 5 x 6 tokens")
        expect(all(b["messages"][0]["content"].startswith("Pick as many lines as you can from these poem lines:\n"
                                                          "FROM fairest creatures") for b in bodies),
               "sonnet: the chat backend sends the raw prompt")
        expect(all(n <= 320 for n in r["expected_output_lens"] and r["input_lens"] or [0]), "sonnet lengths")
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "burstgpt", "--dataset-path", BURSTGPT,
                            "--num-prompts", "4", name="burstgpt")
        expect(proc.returncode == 0 and r is not None, "burstgpt failed" + show(proc))
        bodies = [json.loads(b) for b in server.stats()["bodies"]][9:]
        # RandomState(0).permutation(6)[:4] -> GPT-4 rows 5, 2, 1, 3 of the fixture.
        expect([b["max_tokens"] for b in bodies] == [64, 512, 9, 41], f"burstgpt max_tokens {bodies}")
        expect(r["dataset"]["name"] == "burstgpt", "dataset name")
    print("vllm datasets ok")


class CrosspointServer(ServerProcess):
    """serving_toy_server (announces "port N") or `crosspoint serve` (given its port)."""

    def __init__(self, argv, port=None):
        super().__init__(argv, port=port, announce=None if port else "port")
        self.url = self.base_url


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
    port = free_port()
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


def scenario_gpu_energy(binary, workdir):
    """--gpu-energy: NVML's counters (the fake library: two GPUs at 250 W) read around the run
    against a local server, the result's and the summary's figures; off and remote say why not."""
    env = dict(os.environ, CROSSPOINT_NVML_LIBRARY=os.environ["CROSSPOINT_FAKE_NVML"])
    with FakeServer("--token-delay-ms", "2") as server:
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "16",
                            "--random-output-len", "20", "--num-prompts", "24", "--max-concurrency", "4", env=env)
        expect(proc.returncode == 0 and r is not None, "bench failed" + show(proc))
        e = r["gpu_energy"]
        expect(e["measured"] and e["devices"] == ["Fake GPU 0", "Fake GPU 1"], f"gpu_energy {e}")
        watts = e["joules"] / r["duration"]
        expect(0.8 * 500 <= watts <= 1.25 * 500, f"{watts:.1f} W over the run, the fake GPUs draw 500 W")
        expect(abs(e["joules_per_output_token"] - e["joules"] / r["total_output_tokens"]) < 1e-9, f"per token {e}")
        expect(abs(e["joules_per_request"] - e["joules"] / r["completed"]) < 1e-9, f"per request {e}")
        expect("Energy per output token (mJ):" in proc.stdout, "summary lacks the energy lines" + show(proc))
        proc, r = run_bench(binary, workdir, server.url, "--dataset-name", "random", "--random-input-len", "16",
                            "--random-output-len", "4", "--num-prompts", "2", "--gpu-energy", "off", env=env)
        expect(r is not None and not r["gpu_energy"]["measured"] and "off" in r["gpu_energy"]["note"],
               f"--gpu-energy off: {r and r['gpu_energy']}")
    print(f"gpu_energy ok: {e['joules']:.2f} J, {watts:.0f} W")


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
