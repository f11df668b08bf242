"""Independent checks of a `crosspoint bench serve` result JSON: every aggregate is
recomputed from the per-request lists with numpy, following vLLM's calculate_metrics
(vllm/benchmarks/serve.py), and compared with what the C++ wrote."""
import math

import numpy as np

# Keys of vLLM's result file (current serve.py with --save-detailed).
VLLM_KEYS = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
             "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
             "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
             "output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts", "itls",
             "latencies", "start_times", "queue_times", "generated_texts", "errors", "max_output_tokens_per_s",
             "max_concurrent_requests", "rtfx"]
CROSSPOINT_KEYS = ["concurrency_reached", "mean_concurrency", "client_overhead", "server_metrics", "dataset",
                   "request_is_good", "tpots", "http_statuses", "output_len_sources", "arrival_times",
                   "scheduled_arrival_times", "expected_output_lens", "good_requests", "goodput_slos_ms"]


class CheckFailed(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise CheckFailed(message)


def close(a, b, what):
    expect(a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9),
           f"{what}: JSON has {a}, recomputed {b}")


def pkey(p):
    return str(int(p)) if float(p).is_integer() else str(p)


def check_keys(r, percentile_metrics):
    for key in VLLM_KEYS + CROSSPOINT_KEYS:
        expect(key in r, f"missing key {key}")
    for m in percentile_metrics:
        for stat in ("mean", "median", "std"):
            expect(f"{stat}_{m}_ms" in r, f"missing key {stat}_{m}_ms")
        for p in r["percentiles"]:
            expect(f"p{pkey(p)}_{m}_ms" in r, f"missing key p{pkey(p)}_{m}_ms")
    n = r["num_prompts"]
    for key in ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors"):
        expect(len(r[key]) == n, f"{key} has {len(r[key])} entries for {n} prompts")


def recompute(r):
    ok = [i for i, e in enumerate(r["errors"]) if e == ""]
    failed = [i for i, e in enumerate(r["errors"]) if e != ""]
    dur = r["duration"]
    expect(dur > 0, "duration must be > 0")
    expect(r["completed"] == len(ok), f"completed {r['completed']} != {len(ok)} records without error")
    expect(r["failed"] == len(failed), f"failed {r['failed']} != {len(failed)} records with an error")
    for i in failed:
        expect(r["output_lens"][i] == 0, f"failed request {i} has output_len {r['output_lens'][i]}")
    total_in = sum(r["input_lens"][i] for i in ok)
    total_out = sum(r["output_lens"][i] for i in ok)
    expect(r["total_input_tokens"] == total_in, "total_input_tokens")
    expect(r["total_output_tokens"] == total_out, "total_output_tokens")
    close(r["request_throughput"], len(ok) / dur, "request_throughput")
    close(r["output_throughput"], total_out / dur, "output_throughput")
    close(r["total_token_throughput"], (total_in + total_out) / dur, "total_token_throughput")

    ttfts = [r["ttfts"][i] for i in ok]
    e2els = [r["latencies"][i] for i in ok]
    itls = [x for i in ok for x in r["itls"][i]]
    tpots, all_tpots = [], []
    for i in ok:
        out = r["output_lens"][i]
        tpot = 0.0
        if out > 1:
            tpot = (r["latencies"][i] - r["ttfts"][i]) / (out - 1)
            tpots.append(tpot)
        all_tpots.append(tpot)
    values = {"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": e2els}
    for m, v in values.items():
        if f"mean_{m}_ms" not in r:
            continue
        x = v or 0
        close(r[f"mean_{m}_ms"], float(np.mean(x)) * 1000, f"mean_{m}_ms")
        close(r[f"median_{m}_ms"], float(np.median(x)) * 1000, f"median_{m}_ms")
        close(r[f"std_{m}_ms"], float(np.std(x)) * 1000, f"std_{m}_ms")
        for p in r["percentiles"]:
            close(r[f"p{pkey(p)}_{m}_ms"], float(np.percentile(x, p)) * 1000, f"p{pkey(p)}_{m}_ms")

    # Goodput from the SLOs, request by request.
    slos = {k: v for k, v in r["goodput_slos_ms"].items() if v is not None}
    if slos:
        good = 0
        flags = {}
        for k, i in enumerate(ok):
            per = {"ttft": r["ttfts"][i], "tpot": all_tpots[k], "e2el": r["latencies"][i]}
            flags[i] = all(slos[name] / 1000 >= per[name] for name in slos)
            good += flags[i]
        close(r["request_goodput"], good / dur, "request_goodput")
        expect(r["good_requests"] == good, f"good_requests {r['good_requests']} != {good}")
        for i, flag in enumerate(r["request_is_good"]):
            expect(flag == flags.get(i, False), f"request_is_good[{i}] is {flag}")
    else:
        expect(r["request_goodput"] is None, "request_goodput must be null without --goodput")

    # Peak output tokens per 1 s bucket and peak concurrency (sweep over [start, end)).
    if ok:
        t0 = min(r["start_times"][i] for i in ok)
        t1 = max(r["start_times"][i] + r["latencies"][i] for i in ok)
        buckets = np.zeros(int(np.ceil(t1 - t0)) + 1)
        events = []
        for i in ok:
            t = r["start_times"][i] + r["ttfts"][i]
            times = [t]
            for gap in r["itls"][i]:
                t += gap
                times.append(t)
            for t in times:
                b = int(t - t0)
                if 0 <= b < len(buckets):
                    buckets[b] += 1
            events.append((r["start_times"][i], 1))
            events.append((r["start_times"][i] + r["latencies"][i], -1))
        events.sort()
        cur = peak = 0
        for _, d in events:
            cur += d
            peak = max(peak, cur)
        close(r["max_output_tokens_per_s"], float(buckets.max()), "max_output_tokens_per_s")
        expect(r["max_concurrent_requests"] == peak, f"max_concurrent_requests {r['max_concurrent_requests']} != {peak}")
    return {"ok": ok, "failed": failed}
