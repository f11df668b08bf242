"""Output tokens per second of an OpenAI-compatible server at several concurrencies (a
benchmark, not a test). Each level sends `concurrency * waves` completion requests with at
most `concurrency` in flight, greedy, ignore_eos, fixed max_tokens, and reports output tok/s
and mean batch size from /metrics.

    python bench_concurrency.py --base-url http://127.0.0.1:8000/v1 --model default \
        --concurrency 1 8 32 --max-tokens 32
"""
import argparse
import concurrent.futures
import json
import time
import urllib.request

import openai
from prometheus_client.parser import text_string_to_metric_families

PROMPTS = ["Tell me about the history of Paris.", "Write a short poem about the sea.",
           "Explain how a bicycle works.", "What is the best way to learn a language?"]


def batch_stats(base_url):
    text = urllib.request.urlopen(base_url.rsplit("/v1", 1)[0] + "/metrics").read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in ("crosspoint:iteration_num_seqs_sum", "crosspoint:iteration_num_seqs_count"):
                out[s.name] = s.value
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    p.add_argument("--model", default="default")
    p.add_argument("--api-key", default="none")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--waves", type=int, default=1)
    args = p.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=3600)
    results = []
    for c in args.concurrency:
        before = batch_stats(args.base_url)
        n = c * args.waves

        def one(i):
            r = client.completions.create(model=args.model, prompt=PROMPTS[i % len(PROMPTS)], max_tokens=args.max_tokens,
                                          temperature=0, extra_body={"ignore_eos": True})
            return r.usage.completion_tokens
        start = time.time()
        with concurrent.futures.ThreadPoolExecutor(c) as pool:
            tokens = sum(pool.map(one, range(n)))
        elapsed = time.time() - start
        after = batch_stats(args.base_url)
        steps = after["crosspoint:iteration_num_seqs_count"] - before["crosspoint:iteration_num_seqs_count"]
        seqs = after["crosspoint:iteration_num_seqs_sum"] - before["crosspoint:iteration_num_seqs_sum"]
        row = {"concurrency": c, "requests": n, "output_tokens": tokens, "seconds": round(elapsed, 2),
               "output_tok_per_s": round(tokens / elapsed, 2), "mean_batch_seqs": round(seqs / max(steps, 1), 2)}
        results.append(row)
        print(json.dumps(row), flush=True)
    base = results[0]["output_tok_per_s"]
    for row in results:
        print(f"concurrency {row['concurrency']:>3}: {row['output_tok_per_s']:8.2f} output tok/s "
              f"(x{row['output_tok_per_s'] / base:.2f} of concurrency {results[0]['concurrency']}), "
              f"mean batch {row['mean_batch_seqs']}")


if __name__ == "__main__":
    main()
