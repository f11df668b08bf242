#!/usr/bin/env python3
"""A soak of `crosspoint serve`: two identical rounds of --streams concurrent streaming
requests (completions and chat, greedy and sampled, --disconnect-fraction of them closed by the
client mid-stream) for --minutes each, against a KV cache small enough to run out (preemption),
beside misbehaving clients (mid-stream disconnects, malformed JSON, oversize bodies, slow
headers) and greedy control requests sent amid the load. The server's RSS, fds and threads and
its /metrics are sampled throughout.

Fails unless, after each round, every counter reconciles: the client's requests sent equal
completed + aborted + refused (each refusal with its status and message) and none failed; the
server's request_success{length,stop} and {abort} equal what the clients completed and closed,
its crosspoint:http_responses_total per route and status equal what they were answered; the
KV cache was exhausted (preemptions during the round); nothing runs or waits and the KV cache is
empty; fds and threads are back to their start-up counts; and unless the server's RSS after the
second round is within --rss-growth-percent of its RSS after the first, every control request
answered exactly as before the load (--quiet-controls-only: only those sent between rounds, for
servers that are not batch-invariant), and the server exits 0 on SIGTERM. Writes a JSON result
and prints a summary. Stdlib only; scripts/soak.sh builds the binary and calls this.

usage: scripts/soak.py --crosspoint BIN --result FILE [--minutes M] [--streams N]
           [--disconnect-fraction F] [--device cpu|cuda] [--model M] [--serve-arg ARG ...] [--note TEXT]
"""
import argparse
import asyncio
import datetime
import http.client
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "harness"))
import soak_clients  # noqa: E402
from server_process import ServerError, ServerProcess, free_port  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GENERATION_ROUTES = ("/v1/completions", "/v1/chat/completions")


def log(message):
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def process_sample(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kib = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.M).group(1))
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))
    return {"rss_mib": round(rss_kib / 1024, 1), "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": threads}


TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}


def descriptors(pid):
    """fd -> what it is: a path, or for a TCP socket its state, ports and queued bytes."""
    sockets = {}
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            queues = f[4].split(":")
            sockets[f[9]] = (f"TCP {TCP_STATES.get(f[3], f[3])} port {int(f[1].rsplit(':', 1)[1], 16)} -> "
                             f"{int(f[2].rsplit(':', 1)[1], 16)}, {int(queues[0], 16)} bytes to send, "
                             f"{int(queues[1], 16)} unread")
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            target = sockets.get(target[8:-1], target)
        out[int(fd)] = target
    return out


def load_average():
    return float(Path("/proc/loadavg").read_text().split()[0])


def fetch(port, method, path, timeout=10):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    connection.request(method, path)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def metrics(port):
    """/metrics as {name: value} and {name{labels}: value} for the labelled samples."""
    status, data = fetch(port, "GET", "/metrics", timeout=30)
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    values = {}
    for line in data.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        name, _, labels = key.partition("{")
        labels = labels.rstrip("}")
        wanted = [part for part in labels.split(",") if part.startswith(("finished_reason=", "handler=", "status="))]
        values[name + ("{" + ",".join(wanted) + "}" if wanted else "")] = float(value)
    return values


def delta(after, before, key):
    return after.get(key, 0) - before.get(key, 0)


def responses(values, route, status):
    return values.get(f'crosspoint:http_responses_total{{handler="{route}",status="{status}"}}', 0)


def reconcile(tally, misbehavers, controls_sent, before, after):
    """Every count of the round, client against server; returns (table, failures)."""
    failures = []
    completed = sum(tally.completed.values()) + controls_sent
    aborted = sum(tally.aborted.values()) + misbehavers.counts["disconnect_mid_stream"]
    refused = sum(tally.refused.values())
    if tally.sent != sum(tally.completed.values()) + sum(tally.aborted.values()) + refused + len(tally.failed):
        failures.append(f"client: {tally.sent} streams sent but {sum(tally.completed.values())} completed + "
                        f"{sum(tally.aborted.values())} aborted + {refused} refused + {len(tally.failed)} failed")
    if tally.failed:
        failures.append(f"{len(tally.failed)} streams failed, e.g. {tally.failed[:3]}")
    server_completed = sum(delta(after, before, f'vllm:request_success_total{{finished_reason="{r}"}}')
                           for r in ("length", "stop"))
    server_aborted = delta(after, before, 'vllm:request_success_total{finished_reason="abort"}')
    server_errors = delta(after, before, 'vllm:request_success_total{finished_reason="error"}')
    table = {"client_streams_sent": tally.sent, "client_completed_incl_controls": completed,
             "client_aborted_incl_misbehavers": aborted, "client_refused_streams": refused,
             "server_finished_length_or_stop": server_completed, "server_aborted": server_aborted,
             "server_errors": server_errors, "responses": {}}
    # A stream the client closes after the server generated its last token is finished on the
    # server's side (its tokens were still in flight to the client): the totals must agree, and
    # the server may count fewer aborts than the clients closed, never more.
    table["closed_after_the_server_finished"] = server_completed - completed
    if server_completed + server_aborted != completed + aborted:
        failures.append(f"the server finished {server_completed:g} and aborted {server_aborted:g} requests, the "
                        f"clients completed {completed} and closed {aborted}")
    elif server_aborted > aborted:
        failures.append(f"the server aborted {server_aborted:g} requests, the clients closed only {aborted}")
    if server_errors != 0:
        failures.append(f"the server ended {server_errors:g} requests with an error")
    # Every answer on the generation routes, by status: 200 for each stream that started.
    expected = {}
    for route in GENERATION_ROUTES:
        expected[(route, 200)] = tally.completed[route] + tally.aborted[route]
    expected[("/v1/completions", 200)] += controls_sent + misbehavers.counts["disconnect_mid_stream"]
    for (route, status), n in tally.refused.items():
        expected[(route, status)] = expected.get((route, status), 0) + n
    for kind, status in soak_clients.Misbehavers.KINDS.items():
        if status is not None:
            expected[("/v1/completions", status)] = expected.get(("/v1/completions", status), 0) + misbehavers.counts[kind]
    seen = {}
    for key in set(after) | set(before):
        m = re.fullmatch(r'crosspoint:http_responses_total\{handler="([^"]+)",status="(\d+)"\}', key)
        if m and m.group(1) in GENERATION_ROUTES:
            n = delta(after, before, key)
            if n:
                seen[(m.group(1), int(m.group(2)))] = n
    for key in sorted(set(seen) | set(expected)):
        table["responses"][f"{key[0]} {key[1]}"] = {"server": seen.get(key, 0), "clients": expected.get(key, 0)}
        if seen.get(key, 0) != expected.get(key, 0):
            failures.append(f"{key[0]} answered {key[1]} {seen.get(key, 0):g} times by the server's count, "
                            f"{expected.get(key, 0)} by the clients'")
    return table, failures


class Sampler(threading.Thread):
    """RSS, fds, threads, /health latency and the engine's gauges every few seconds."""

    def __init__(self, server, port, period_s, start_s):
        super().__init__(daemon=True)
        self.server, self.port, self.period_s, self.start_s = server, port, period_s, start_s
        self.samples, self.failures = [], []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set() and self.server.poll() is None:
            t = round(time.monotonic() - self.start_s, 1)
            sample = {"t_s": t, **process_sample(self.server.pid), "loadavg_1m": load_average()}
            health_start = time.monotonic()
            try:
                status, _ = fetch(self.port, "GET", "/health")
                if status != 200:
                    self.failures.append(f"/health answered {status} at t = {t} s")
            except OSError as e:
                self.failures.append(f"/health did not answer within 10 s at t = {t} s: {e!r}")
            sample["health_ms"] = round((time.monotonic() - health_start) * 1000, 1)
            try:
                m = metrics(self.port)
                sample.update({"running": m.get("vllm:num_requests_running"),
                               "waiting": m.get("vllm:num_requests_waiting"),
                               "kv_usage": m.get("vllm:kv_cache_usage_perc"),
                               "preemptions": m.get("vllm:num_preemptions_total")})
            except (OSError, RuntimeError) as e:
                self.failures.append(f"/metrics failed at t = {t} s: {e!r}")
            self.samples.append(sample)
            self.stop.wait(self.period_s)


def wait_quiet(server, port, baseline, timeout_s=120):
    """Until nothing runs or waits, the KV cache is empty and fds/threads are back; returns the
    last sample and gauges."""
    deadline = time.monotonic() + timeout_s
    while True:
        # Sampled before the /metrics request: the server may not have seen that connection
        # close yet when the request returns.
        sample = process_sample(server.pid)
        m = metrics(port)
        quiet = (m.get("vllm:num_requests_running") == 0 and m.get("vllm:num_requests_waiting") == 0 and
                 m.get("vllm:kv_cache_usage_perc") == 0 and sample["fds"] <= baseline["fds"] and
                 sample["threads"] <= baseline["threads"])
        if quiet or time.monotonic() > deadline:
            return quiet, sample, m
        time.sleep(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crosspoint", required=True, help="the crosspoint binary")
    parser.add_argument("--result", required=True, help="the JSON result file to write")
    parser.add_argument("--minutes", type=float, default=10, help="minutes of load per round (default 10)")
    parser.add_argument("--streams", type=int, default=1000, help="concurrent streams (default 1000)")
    parser.add_argument("--disconnect-fraction", type=float, default=0.3,
                        help="share of streams the client closes mid-stream (default 0.3)")
    parser.add_argument("--rss-growth-percent", type=float, default=5,
                        help="RSS after round 2 over RSS after round 1, largest growth in percent (default 5)")
    parser.add_argument("--sample-seconds", type=float, default=5, help="sampling period (default 5)")
    parser.add_argument("--device", default="cpu", help="serve --device (default cpu)")
    parser.add_argument("--model", default="default", help="serve --model (default: the default model)")
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="extra argument for serve (repeatable; --serve-arg=--flag for one that starts with a dash); a flag "
                             "given here replaces the soak's default for it")
    parser.add_argument("--quiet-controls-only", action="store_true",
                        help="compare only control requests sent between rounds (servers without batch invariance)")
    parser.add_argument("--stream-timeout", type=float, default=1800,
                        help="seconds any of the soak's requests (streams, control requests, mid-stream misbehaving clients) "
                             "may go without progress before it counts as hung (default 1800: on a slow machine a request "
                             "can wait that long behind the ~1,000 queued streams)")
    parser.add_argument("--note", default="", help="a note stored in the result (e.g. what else ran on the machine)")
    args = parser.parse_args()

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip() != ""
    header_timeout_s = 10
    port = free_port()
    # A KV cache far smaller than the streams need (preemption), a queue that takes them all.
    defaults = {"--max-num-seqs": "128", "--max-waiting": "4096", "--max-model-len": "256"}
    if args.device == "cpu" and "--memory-budget" not in args.serve_arg:  # serve takes one of the two
        defaults["--kv-cache-memory"] = "128MiB"
    kept = [item for flag, value in defaults.items() if flag not in args.serve_arg for item in (flag, value)]
    serve_cmd = [args.crosspoint, "serve", "--model", args.model, "--device", args.device, "--port", str(port),
                 "--served-model-name", "soak", "--header-timeout", str(header_timeout_s)] + kept + args.serve_arg
    work = Path(tempfile.mkdtemp(prefix="crosspoint-soak-"))
    log(f"starting: {' '.join(serve_cmd)} (log {work / 'server.log'})")
    failures = []
    start = time.monotonic()
    try:
        launched = ServerProcess(serve_cmd, port=port, log_path=work / "server.log", timeout=300, poll_s=0.5)
    except ServerError as e:
        sys.exit(f"soak: {e}")
    server = launched.proc  # sampled by pid and polled below
    controls_before, error = soak_clients.control_outputs(port, "soak")  # also starts what a first request starts
    if error:
        launched.kill()
        sys.exit(f"soak: a control request before the load failed: {error}")
    time.sleep(2)
    baseline = process_sample(server.pid)
    baseline_descriptors = descriptors(server.pid)
    log(f"ready after {time.monotonic() - start:.1f} s: {baseline}; control outputs recorded")
    sampler = Sampler(server, port, args.sample_seconds, time.monotonic())
    sampler.start()

    rounds = []
    for round_index in range(2):
        if server.poll() is not None:
            break
        before = metrics(port)
        tally = soak_clients.Tally()
        misbehavers = soak_clients.Misbehavers(port, "soak", header_timeout_s, args.stream_timeout,
                                               seed=7)  # identical rounds
        amid = []
        stop_controls = threading.Event()

        def controls_amid_load():
            while not stop_controls.wait(30):
                amid.append(soak_clients.control_outputs(port, "soak", timeout=args.stream_timeout))

        control_thread = threading.Thread(target=controls_amid_load)
        log(f"round {round_index + 1}: {args.streams} streams for {args.minutes} min")
        round_start = time.monotonic()
        misbehavers.start()
        control_thread.start()
        asyncio.run(soak_clients.run_streams(port, "soak", seed=1, seconds=args.minutes * 60,
                                             num_streams=args.streams, tally=tally,
                                             disconnect_fraction=args.disconnect_fraction,
                                             timeout_s=args.stream_timeout))
        load_s = time.monotonic() - round_start
        stop_controls.set()
        control_thread.join()
        # A mid-stream client started just before the end may still wait behind the whole queue.
        misbehavers.finish(timeout=args.stream_timeout + 60)
        if server.poll() is not None:
            failures.append(f"round {round_index + 1}: the server died with exit status {server.returncode}")
            break
        quiet, after_sample, after = wait_quiet(server, port, baseline)
        controls_after, error_after = soak_clients.control_outputs(port, "soak", timeout=args.stream_timeout)
        after = metrics(port)  # after the controls: they are counted below
        controls_sent = len(controls_after) + sum(len(outputs) for outputs, _ in amid)
        table, round_failures = reconcile(tally, misbehavers, controls_sent, before, after)
        round_failures += [f"control request: {e}" for e in [error_after] + [e for _, e in amid] if e]
        round_failures += misbehavers.failures
        if not quiet:
            round_failures.append(f"not quiet within 120 s of the round's end: {after_sample}, running "
                                  f"{after.get('vllm:num_requests_running')}, waiting "
                                  f"{after.get('vllm:num_requests_waiting')}, KV {after.get('vllm:kv_cache_usage_perc')}")
        if after_sample["fds"] > baseline["fds"]:
            extra = {fd: what for fd, what in descriptors(server.pid).items() if fd not in baseline_descriptors}
            round_failures.append(f"descriptors beyond the start-up ones: {extra}")
        preemptions = delta(after, before, "vllm:num_preemptions_total")
        if preemptions <= 0:
            round_failures.append("no preemption: the KV cache was never exhausted")
        if controls_after != controls_before:
            round_failures.append(f"control outputs after the round differ: {controls_after} vs {controls_before}")
        if not args.quiet_controls_only:
            for outputs, _ in amid:
                if outputs != controls_before[:len(outputs)]:
                    round_failures.append(f"control outputs amid the load differ: {str(outputs)[:300]}")
        window = [s for s in sampler.samples if round_start - sampler.start_s <= s["t_s"]]
        rounds.append({"round": round_index + 1, "load_seconds": round(load_s, 1), "clients": tally.as_json(),
                       "misbehaving_clients": dict(misbehavers.counts), "control_requests_amid_load": sum(len(o) for o, _ in amid),
                       "reconciliation": table, "preemptions": preemptions,
                       "peak_kv_usage": max((s.get("kv_usage") or 0 for s in window), default=None),
                       "peak_running": max((s.get("running") or 0 for s in window), default=None),
                       "peak_waiting": max((s.get("waiting") or 0 for s in window), default=None),
                       "after_round": after_sample, "failures": round_failures})
        failures += [f"round {round_index + 1}: {f}" for f in round_failures]
        log(f"round {round_index + 1}: {tally.sent} streams ({dict(tally.completed)} completed, "
            f"{dict(tally.aborted)} aborted, {sum(tally.refused.values())} refused, {len(tally.failed)} failed), "
            f"{preemptions:g} preemptions, after it {after_sample}; {len(round_failures)} failures")

    sampler.stop.set()
    sampler.join()
    failures += sampler.failures
    rss = [r["after_round"]["rss_mib"] for r in rounds]
    rss_bound = round(rss[0] * (1 + args.rss_growth_percent / 100), 1) if rss else None
    if len(rss) == 2 and rss[1] > rss_bound:
        failures.append(f"RSS after round 2 is {rss[1]} MiB, after round 1 {rss[0]} MiB (bound {rss_bound} MiB)")
    exit_code = None
    if server.poll() is None:
        drain_start = time.monotonic()
        exit_code = launched.stop(timeout=120)  # SIGTERM, killed after 120 s
        if time.monotonic() - drain_start >= 120:
            failures.append("the server did not exit within 120 s of SIGTERM")
        elif exit_code != 0:
            failures.append(f"the server exited {exit_code} on SIGTERM")
    else:
        launched.stop()
        failures.append(f"the server died with exit status {server.returncode}; see {work / 'server.log'}")

    cpu_model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), platform.processor())
    loads = [s["loadavg_1m"] for s in sampler.samples]
    result = {
        "kind": "soak", "commit": commit + ("-dirty" if dirty else ""),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": " ".join([sys.argv[0]] + sys.argv[1:]), "serve_command": " ".join(serve_cmd[1:]),
        "machine": {"cpu": cpu_model, "num_cpus": os.cpu_count(), "kernel": platform.release(),
                    "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
        "note": args.note, "streams": args.streams, "minutes_per_round": args.minutes,
        "disconnect_fraction": args.disconnect_fraction, "load_avg_1min_range": [min(loads), max(loads)] if loads else None,
        "baseline": baseline, "rss_mib_after_rounds": rss, "rss_mib_bound": rss_bound, "server_exit_code": exit_code,
        "controls": controls_before, "rounds": rounds, "samples": sampler.samples, "failures": failures,
        "passed": not failures,
    }
    Path(args.result).parent.mkdir(parents=True, exist_ok=True)
    Path(args.result).write_text(json.dumps(result, indent=1) + "\n")

    for r in rounds:
        c = r["clients"]
        print(f"round {r['round']}: {r['load_seconds'] / 60:.1f} min, {c['sent']} streams sent: "
              f"{sum(c['completed'].values())} completed, {sum(c['aborted'].values())} aborted, "
              f"{sum(int(v) for v in c['refused'].values())} refused, {c['num_failed']} failed; "
              f"{c['greedy']} greedy / {c['sampled']} sampled; misbehaving {r['misbehaving_clients']}; "
              f"{r['preemptions']:g} preemptions, peak KV {r['peak_kv_usage']}, peak running {r['peak_running']}, "
              f"waiting {r['peak_waiting']}")
        print(f"  reconciliation: {json.dumps(r['reconciliation'])}")
        print(f"  after the round: {r['after_round']}")
    print(f"RSS after each round {rss} MiB (bound {rss_bound}); start-up {baseline}; server exit {exit_code}")
    print(f"result: {args.result}")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures[:40]))
        sys.exit(1)
    print("soak: passed")


if __name__ == "__main__":
    main()
