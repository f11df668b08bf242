#!/usr/bin/env python3
"""A soak of `crosspoint serve`: load from `crosspoint bench serve` in back-to-back rounds,
mixed with misbehaving clients, while the server's RSS, open file descriptors and threads
are sampled. Fails when the server dies, a request hangs, a misbehaving client gets an
answer other than the one expected, RSS grows past the bound after warm-up, or the fds or
threads are not back to their start-up counts once the load stops. Writes a JSON result and
prints a summary. Stdlib only; scripts/soak.sh builds the binary and calls this.

usage: scripts/soak.py --crosspoint BIN --result FILE [--minutes M] [--warmup-minutes W]
           [--sample-seconds S] [--rss-growth-percent P] [--concurrency C] [--model M]
           [--serve-arg ARG ...] [--note TEXT]
"""
import argparse
import datetime
import http.client
import json
import os
import platform
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def log(message):
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- the server's process: RSS, fds, threads -----------------------------------------------

def process_sample(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return {"rss_mib": round(rss_kib / 1024, 1), "fds": fds, "threads": threads}


def load_average():
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def metric_values(port, names, timeout=10):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    connection.close()
    values = {}
    for line in text.splitlines():
        for name in names:
            if line.startswith(name + "{") or line.startswith(name + " "):
                values[name] = float(line.rsplit(" ", 1)[1])
    return values


# ---- misbehaving clients -------------------------------------------------------------------
# Each returns None when the server answered as it should, else what went wrong.

def read_response(sock, deadline):
    """Reads until the server closes; returns the bytes (None on a hang past the deadline)."""
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            return None
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def expect_status(data, status, what):
    if data is None:
        return f"{what}: no answer (hang)"
    first_line = data.split(b"\r\n", 1)[0].decode(errors="replace")
    if not first_line.startswith(f"HTTP/1.1 {status}"):
        return f"{what}: expected {status}, got {first_line!r}"
    body = data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""
    if status >= 400:
        try:
            if "error" not in json.loads(body):
                return f"{what}: the {status} body has no 'error'"
        except ValueError:
            return f"{what}: the {status} body is not JSON: {body[:80]!r}"
    return None


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def disconnect_mid_stream(port, model):
    body = json.dumps({"model": model, "prompt": "Tell me a long story about a lighthouse.", "max_tokens": 64,
                       "ignore_eos": True, "stream": True, "temperature": random.choice([0.0, 0.8])}).encode()
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        deadline = time.monotonic() + 120
        data = b""
        events_to_read = random.randint(1, 4)
        while data.count(b"data: ") < events_to_read and b"[DONE]" not in data:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                chunk = s.recv(4096)
            except socket.timeout:
                return "disconnect mid-stream: no stream events within 120 s (hang)"
            if not chunk:
                return f"disconnect mid-stream: the server closed before streaming: {data[:120]!r}"
            data += chunk
        if not data.startswith(b"HTTP/1.1 200"):
            return f"disconnect mid-stream: {data[:80]!r}"
    return None  # closed mid-stream


def malformed_json(port, model):
    body = random.choice([b'{"model": "x", "prompt": ', b"not json at all", b'{"prompt": [1, 2, {]}',
                          b'{"model": "m", "prompt": "hi", "max_tokens": "many"}', b"\xff\xfe\x00"])
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        return expect_status(read_response(s, time.monotonic() + 30), 400, "malformed JSON")


def oversize_body(port, model):
    length = 64 << 20  # over the default --max-body-bytes (8 MiB)
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % length + b'{"prompt": "' + b"a" * 65536)
        return expect_status(read_response(s, time.monotonic() + 30), 413, "oversize body")


def slow_headers(port, model, header_timeout_s):
    """slowloris: a header byte every second; the server must answer 408 within its header timeout."""
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\n")
        start = time.monotonic()
        deadline = start + header_timeout_s + 15
        s.settimeout(1.0)
        data = b""
        try:
            for c in b"X-Slow: " + b"s" * 10000:
                s.sendall(bytes([c]))
                try:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                    break
                except socket.timeout:
                    pass
                if time.monotonic() > deadline:
                    return f"slow headers: still open after {deadline - start:.0f} s (hang)"
        except (BrokenPipeError, ConnectionResetError):
            pass
        rest = read_response(s, deadline)
        if rest is None:
            return f"slow headers: no close within {deadline - start:.0f} s (hang)"
        return expect_status(data + rest, 408, "slow headers")


class Misbehavers:
    KINDS = ["disconnect_mid_stream", "malformed_json", "oversize_body", "slow_headers"]

    def __init__(self, port, model, header_timeout_s, stop):
        self.port, self.model, self.header_timeout_s, self.stop = port, model, header_timeout_s, stop
        self.counts = {kind: 0 for kind in self.KINDS}
        self.failures = []
        self.lock = threading.Lock()

    def record(self, kind, failure):
        with self.lock:
            self.counts[kind] += 1
            if failure:
                self.failures.append(failure)
                log(f"FAILURE: {failure}")

    def run_quick(self):
        """Disconnects, malformed and oversize requests, one about every half second."""
        rng = random.Random(1)
        while not self.stop.is_set():
            kind = rng.choice(self.KINDS[:3])
            try:
                failure = globals()[kind](self.port, self.model)
            except OSError as e:
                failure = f"{kind}: {e!r}"
            self.record(kind, failure)
            self.stop.wait(rng.uniform(0.2, 0.8))

    def run_slow(self):
        """Slow-header clients, back to back (each lasts about the header timeout)."""
        while not self.stop.is_set():
            try:
                failure = slow_headers(self.port, self.model, self.header_timeout_s)
            except OSError as e:
                failure = f"slow_headers: {e!r}"
            self.record("slow_headers", failure)


# ---- the soak ------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crosspoint", required=True, help="the crosspoint binary")
    parser.add_argument("--result", required=True, help="the JSON result file to write")
    parser.add_argument("--minutes", type=float, default=10, help="minutes of load (default 10)")
    parser.add_argument("--warmup-minutes", type=float, default=2,
                        help="RSS growth is measured from the end of this (default 2)")
    parser.add_argument("--sample-seconds", type=float, default=5, help="sampling period (default 5)")
    parser.add_argument("--rss-growth-percent", type=float, default=5,
                        help="largest RSS after warm-up over the RSS at its end, percent (default 5)")
    parser.add_argument("--concurrency", type=int, default=16, help="bench serve --max-concurrency (default 16)")
    parser.add_argument("--model", default="default", help="serve --model (default: the default model)")
    parser.add_argument("--serve-arg", action="append", default=[], help="extra argument for serve (repeatable)")
    parser.add_argument("--note", default="", help="a note stored in the result (e.g. what else ran on the machine)")
    args = parser.parse_args()

    # The commit of the tree the binary was built from (taken now: edits during the run do not count).
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip() != ""
    header_timeout_s = 10
    port = free_port()
    serve_cmd = [args.crosspoint, "serve", "--model", args.model, "--device", "cpu", "--port", str(port),
                 "--served-model-name", "soak", "--header-timeout", str(header_timeout_s)] + args.serve_arg
    work = Path(tempfile.mkdtemp(prefix="crosspoint-soak-"))
    server_log = open(work / "server.log", "wb")
    log(f"starting: {' '.join(serve_cmd)} (log {work / 'server.log'})")
    server = subprocess.Popen(serve_cmd, stdout=server_log, stderr=subprocess.STDOUT)
    failures = []

    def server_ready():
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", "/health")
            ok = connection.getresponse().status == 200
            connection.close()
            return ok
        except OSError:
            return False

    start = time.monotonic()
    while not server_ready():
        if server.poll() is not None:
            sys.exit(f"soak: the server exited with {server.returncode} during start-up; see {work / 'server.log'}")
        if time.monotonic() - start > 300:
            server.kill()
            sys.exit("soak: the server did not answer /health within 300 s")
        time.sleep(0.5)
    # One request first: what the first request starts (the model's worker threads) is part of
    # the baseline, not a leak.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    connection.request("POST", "/v1/completions", json.dumps({"model": "soak", "prompt": "Hello", "max_tokens": 8}),
                       {"Content-Type": "application/json"})
    first = connection.getresponse()
    first.read()
    connection.close()
    if first.status != 200:
        sys.exit(f"soak: the first request got HTTP {first.status}")
    time.sleep(2)
    baseline = process_sample(server.pid)
    log(f"ready after {time.monotonic() - start:.1f} s: {baseline}")

    samples = []
    stop = threading.Event()
    sampler_stop = threading.Event()
    load_start = time.monotonic()

    def sampler():
        while not sampler_stop.is_set():
            t = round(time.monotonic() - load_start, 1)
            if server.poll() is not None:
                return
            sample = {"t_s": t, **process_sample(server.pid), "loadavg_1m": load_average()[0]}
            health_start = time.monotonic()
            if not server_ready():
                failures.append(f"/health did not answer 200 within 10 s at t = {t} s")
                log(f"FAILURE: {failures[-1]}")
            sample["health_ms"] = round((time.monotonic() - health_start) * 1000, 1)
            samples.append(sample)
            sampler_stop.wait(args.sample_seconds)

    misbehavers = Misbehavers(port, "soak", header_timeout_s, stop)
    threads = [threading.Thread(target=sampler), threading.Thread(target=misbehavers.run_quick),
               threading.Thread(target=misbehavers.run_slow), threading.Thread(target=misbehavers.run_slow)]
    for thread in threads:
        thread.start()

    rounds = []
    end_at = load_start + args.minutes * 60
    round_index = 0
    while time.monotonic() < end_at and server.poll() is None:
        result_file = work / f"bench_{round_index}.json"
        bench_cmd = [args.crosspoint, "bench", "serve", "--base-url", f"http://127.0.0.1:{port}", "--model", "soak",
                     "--dataset-name", "random", "--random-input-len", "96",
                     "--random-output-len", "48", "--random-range-ratio", "0.5", "--num-prompts", "32",
                     "--max-concurrency", str(args.concurrency), "--request-timeout", "300",
                     "--temperature", "0" if round_index % 2 == 0 else "0.8", "--seed", str(round_index),
                     "--metrics-interval", "0", "--disable-progress", "--result-file", str(result_file)]
        round_start = time.monotonic()
        bench = subprocess.run(bench_cmd, capture_output=True, text=True)
        took = time.monotonic() - round_start
        if bench.returncode != 0 or not result_file.exists():
            failures.append(f"bench round {round_index} exited {bench.returncode}: {bench.stderr[-400:]}")
            log(f"FAILURE: {failures[-1]}")
            break
        result = json.loads(result_file.read_text())
        rounds.append({"round": round_index, "seconds": round(took, 1), "completed": result["completed"],
                       "failed": result["failed"], "output_throughput": round(result.get("output_throughput", 0), 1)})
        if result["failed"] > 0:
            failures.append(f"bench round {round_index}: {result['failed']} requests failed: "
                            f"{str(result.get('errors'))[:400]}")
            log(f"FAILURE: {failures[-1]}")
        log(f"round {round_index}: {result['completed']} completed, {result['failed']} failed in {took:.0f} s; "
            f"last sample {samples[-1] if samples else None}")
        round_index += 1
    load_seconds = time.monotonic() - load_start
    stop.set()
    log("load stopped; waiting for the misbehaving clients")
    for thread in threads[1:]:
        thread.join(timeout=header_timeout_s + 60)
        if thread.is_alive():
            failures.append("a misbehaving client did not finish within 70 s of the end (hang)")

    # Quiet: every connection gone, the counts back to the start-up ones.
    server_alive = server.poll() is None
    settle_start = time.monotonic()
    quiet = process_sample(server.pid) if server_alive else None
    while server_alive and time.monotonic() - settle_start < 30:
        quiet = process_sample(server.pid)
        if quiet["fds"] <= baseline["fds"] and quiet["threads"] <= baseline["threads"]:
            break
        time.sleep(1)
    sampler_stop.set()
    threads[0].join()
    engine_gauges = {}
    if server_alive:
        try:
            engine_gauges = metric_values(port, ["vllm:num_requests_running", "vllm:num_requests_waiting",
                                                 "vllm:kv_cache_usage_perc"])
        except OSError as e:
            failures.append(f"/metrics after the load: {e!r}")

    if not server_alive:
        failures.append(f"the server died with exit status {server.returncode}; see {work / 'server.log'}")
    warm = [s for s in samples if s["t_s"] >= args.warmup_minutes * 60]
    rss_warm = warm[0]["rss_mib"] if warm else None
    rss_max_after = max(s["rss_mib"] for s in warm) if warm else None
    rss_bound = round(rss_warm * (1 + args.rss_growth_percent / 100), 1) if warm else None
    if not warm:
        failures.append("no sample after the warm-up: run longer than --warmup-minutes")
    elif rss_max_after > rss_bound:
        failures.append(f"RSS grew from {rss_warm} MiB at the end of warm-up to {rss_max_after} MiB "
                        f"(bound {rss_bound} MiB, +{args.rss_growth_percent}%)")
    if quiet is not None:
        if quiet["fds"] > baseline["fds"]:
            failures.append(f"file descriptors: {quiet['fds']} after the load, {baseline['fds']} at start-up")
        if quiet["threads"] > baseline["threads"]:
            failures.append(f"threads: {quiet['threads']} after the load, {baseline['threads']} at start-up")
    for name in ["vllm:num_requests_running", "vllm:num_requests_waiting"]:
        if engine_gauges.get(name, 0) != 0:
            failures.append(f"{name} is {engine_gauges[name]} after the load")
    failures += misbehavers.failures

    if server_alive:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            failures.append("the server did not exit within 60 s of SIGTERM")
    server_log.close()

    cpu_model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), platform.processor())
    loads = [s["loadavg_1m"] for s in samples]
    result = {
        "kind": "soak",
        "commit": commit + ("-dirty" if dirty else ""),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join([sys.argv[0]] + sys.argv[1:]),
        "serve_command": " ".join(serve_cmd[1:]),
        "machine": {"cpu": cpu_model, "num_cpus": os.cpu_count(), "kernel": platform.release(),
                    "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
        "note": args.note,
        "load_avg_1min_range": [min(loads), max(loads)] if loads else None,
        "minutes": args.minutes,
        "load_seconds": round(load_seconds, 1),
        "warmup_minutes": args.warmup_minutes,
        "bench_rounds": rounds,
        "bench_completed": sum(r["completed"] for r in rounds),
        "bench_failed": sum(r["failed"] for r in rounds),
        "misbehaving_clients": misbehavers.counts,
        "baseline": baseline,
        "after_load": quiet,
        "rss_mib_at_warmup_end": rss_warm,
        "rss_mib_max_after_warmup": rss_max_after,
        "rss_mib_bound": rss_bound,
        "engine_gauges_after_load": engine_gauges,
        "samples": samples,
        "failures": failures,
        "passed": not failures,
    }
    Path(args.result).parent.mkdir(parents=True, exist_ok=True)
    Path(args.result).write_text(json.dumps(result, indent=1) + "\n")

    print(f"soak: {load_seconds / 60:.1f} min of load, {len(rounds)} bench rounds: "
          f"{result['bench_completed']} completed, {result['bench_failed']} failed")
    print("misbehaving clients: " + ", ".join(f"{k} {v}" for k, v in misbehavers.counts.items()))
    print(f"RSS: {baseline['rss_mib']} MiB at start-up, {rss_warm} MiB at the end of warm-up, "
          f"at most {rss_max_after} MiB after it (bound {rss_bound} MiB)")
    if quiet:
        print(f"fds: {baseline['fds']} at start-up, {quiet['fds']} after the load; "
              f"threads: {baseline['threads']} at start-up, {quiet['threads']} after the load")
    print(f"load average (1 min) during the run: {result['load_avg_1min_range']}; "
          f"/health slowest {max((s['health_ms'] for s in samples), default=None)} ms")
    print(f"result: {args.result}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("soak: passed")


if __name__ == "__main__":
    main()
