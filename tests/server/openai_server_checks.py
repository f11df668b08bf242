"""End-to-end checks of the OpenAI-compatible server through the official `openai` SDK.

Run against the toy-model server (tests/server/toy_server_main.cc; fast, no weights):
    python openai_server_checks.py toy --server BIN --tokenizer TOKENIZER
or against `crosspoint serve` with the default model, whose greedy outputs must equal
`crosspoint generate`:
    python openai_server_checks.py crosspoint --crosspoint BIN

Each check prints one line; the exit code is the number of failed checks.
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

import openai
from prometheus_client.parser import text_string_to_metric_families

API_KEY = "sk-test-key"
FAILURES = []
# Sizes per mode: the toy model is instant, the default model takes ~0.2 s a step on 2 cores.
SIZES = {"distinct_specs": 64, "max_tokens": 10, "preempt_requests": 16, "preempt_max_tokens": 24,
         "busy_max_tokens": 20}


def check(fn):
    def run(*args):
        start = time.time()
        try:
            fn(*args)
            print(f"ok   {fn.__name__} ({time.time() - start:.2f} s)", flush=True)
        except Exception:  # noqa: BLE001 - report every failure and go on
            FAILURES.append(fn.__name__)
            print(f"FAIL {fn.__name__}", flush=True)
            traceback.print_exc()
    run.__name__ = fn.__name__
    return run


class Server:
    """A server process on 127.0.0.1 that prints 'port N' (toy) or is polled on /health."""

    def __init__(self, argv, port=None):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr_lines = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        if port is None:
            line = self.proc.stdout.readline()
            if not line.startswith("port "):
                raise RuntimeError(f"server did not start: {line!r} {''.join(self.stderr_lines)}")
            port = int(line.split()[1])
        self.port = port
        deadline = time.time() + 300
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {''.join(self.stderr_lines)}")
            try:
                if self.request("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def client(self, api_key=API_KEY, timeout=120):
        return openai.OpenAI(base_url=self.base_url, api_key=api_key, max_retries=0, timeout=timeout)

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        hdrs = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
        hdrs.update(headers or {})
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        return resp.status, data

    def metrics(self):
        status, data = self.request("GET", "/metrics")
        assert status == 200, status
        values = {}
        for family in text_string_to_metric_families(data.decode()):
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    continue
                key = sample.name
                if "finished_reason" in sample.labels:
                    key += ":" + sample.labels["finished_reason"]
                values[key] = sample.value
        return values

    def wait_idle(self, timeout=30):
        """Until nothing runs or waits and every KV block is free again."""
        deadline = time.time() + timeout
        while True:
            m = self.metrics()
            if (m["vllm:num_requests_running"] == 0 and m["vllm:num_requests_waiting"] == 0
                    and m["crosspoint:num_free_kv_blocks"] == m["crosspoint:num_kv_blocks"]):
                return m
            if time.time() > deadline:
                raise AssertionError(f"server not idle: {m}")
            time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


PROMPTS = ["The capital of France is", "Once upon a time", "def fibonacci(n):", "1, 2, 3, 4,",
           "The quick brown fox", "In the beginning", "Water boils at", "My favourite colour is"]


def request_specs(n, max_tokens):
    """n completion requests: greedy and seeded sampling, several prompts and lengths."""
    specs = []
    for i in range(n):
        spec = {"prompt": PROMPTS[i % len(PROMPTS)] + " " * (i // len(PROMPTS)),
                "max_tokens": max_tokens - (i % 4), "temperature": 0.0}
        if i % 2 == 1:
            spec.update(temperature=0.8, top_p=0.9, seed=100 + i)
        if i % 5 == 3:
            spec.update(top_k=20)
        specs.append(spec)
    return specs


def run_completion(client, model, spec, stream):
    extra = {"top_k": spec["top_k"]} if "top_k" in spec else None
    kwargs = {k: v for k, v in spec.items() if k != "top_k"}
    if not stream:
        r = client.completions.create(model=model, extra_body=extra, **kwargs)
        return r.choices[0].text, r.choices[0].finish_reason
    text, finish = "", None
    for chunk in client.completions.create(model=model, stream=True, extra_body=extra, **kwargs):
        if chunk.choices:
            text += chunk.choices[0].text
            finish = chunk.choices[0].finish_reason or finish
    return text, finish


# ---- checks -------------------------------------------------------------------------------

@check
def models_and_health(server, model):
    assert server.request("GET", "/health")[0] == 200
    models = server.client().models.list()
    assert [m.id for m in models.data] == [model], models


@check
def completion_stream_and_not_agree(server, model):
    client = server.client()
    r = client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=12, temperature=0)
    choice = r.choices[0]
    assert r.object == "text_completion" and r.id.startswith("cmpl-")
    assert choice.finish_reason in ("length", "stop"), choice
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens <= 12
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    chunks = list(client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=12, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == choice.text, (text, choice.text)
    assert len({c.id for c in chunks}) == 1
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == r.usage.completion_tokens
    assert chunks[-2].choices[0].finish_reason == choice.finish_reason


@check
def chat_stream_and_not_agree(server, model):
    client = server.client()
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=10, temperature=0)
    assert r.object == "chat.completion" and r.choices[0].message.role == "assistant"
    chunks = list(client.chat.completions.create(model=model, messages=messages, max_tokens=10, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == r.choices[0].message.content, (text, r.choices[0].message.content)
    assert chunks[-1].usage.prompt_tokens == r.usage.prompt_tokens
    # No max_tokens: the rest of the context is allowed (finishes by length or stop).
    r2 = client.chat.completions.create(model=model, messages=messages, temperature=0, max_completion_tokens=3)
    assert r2.usage.completion_tokens <= 3


@check
def seeded_sampling_is_reproducible(server, model):
    client = server.client()
    a = client.completions.create(model=model, prompt=PROMPTS[1], max_tokens=10, temperature=1.0, seed=7)
    b = client.completions.create(model=model, prompt=PROMPTS[1], max_tokens=10, temperature=1.0, seed=7)
    assert a.choices[0].text == b.choices[0].text


@check
def concurrent_streams_equal_sequential(server, model):
    client = server.client()
    distinct = request_specs(SIZES["distinct_specs"], SIZES["max_tokens"])
    sequential = [run_completion(client, model, s, stream=False) for s in distinct]
    specs = [distinct[i % len(distinct)] for i in range(64)]
    with concurrent.futures.ThreadPoolExecutor(64) as pool:
        concurrent_results = list(pool.map(lambda s: run_completion(client, model, s, stream=True), specs))
    for i, got in enumerate(concurrent_results):
        assert got == sequential[i % len(distinct)], (i, got, sequential[i % len(distinct)])
    m = server.wait_idle()
    assert m["crosspoint:iteration_num_seqs_sum"] / m["crosspoint:iteration_num_seqs_count"] > 1.0


@check
def stop_strings(server, model):
    client = server.client()
    full = client.completions.create(model=model, prompt=PROMPTS[2], max_tokens=16, temperature=0,
                                     extra_body={"ignore_eos": True})
    text = full.choices[0].text
    assert len(text) >= 6, text
    stop = text[3:6]
    cut = text[:text.index(stop)]
    r = client.completions.create(model=model, prompt=PROMPTS[2], max_tokens=16, temperature=0, stop=[stop],
                                  extra_body={"ignore_eos": True})
    assert r.choices[0].text == cut, (r.choices[0].text, cut)
    assert r.choices[0].finish_reason == "stop"
    assert r.model_extra is not None
    assert r.choices[0].model_extra.get("stop_reason") == stop
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=model, prompt=PROMPTS[2], max_tokens=16, temperature=0, stop=stop, stream=True,
        extra_body={"ignore_eos": True}) if c.choices)
    assert streamed == cut, (streamed, cut)


def completion_logprobs(client, model, stream, **kwargs):
    """(text, tokens, token_logprobs, top_logprobs, completion_tokens) streamed or not; streamed
    chunks are checked to carry text_offsets that start at the text sent before them."""
    if not stream:
        r = client.completions.create(model=model, **kwargs)
        lp = r.choices[0].logprobs
        n = r.usage.completion_tokens
        assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n, (lp, n)
        offsets = [0]
        for token in lp.tokens[:-1]:
            offsets.append(offsets[-1] + len(token))
        assert lp.text_offset == offsets[:n], (lp.text_offset, offsets)
        return r.choices[0].text, lp.tokens, lp.token_logprobs, lp.top_logprobs, n
    text, tokens, values, tops, n = "", [], [], [], None
    for chunk in client.completions.create(model=model, stream=True, stream_options={"include_usage": True}, **kwargs):
        if not chunk.choices:
            n = chunk.usage.completion_tokens
            continue
        lp = chunk.choices[0].logprobs
        assert lp is not None, chunk
        if not chunk.choices[0].finish_reason:
            # Logprobs travel with the text that completes their token's text (a chunk may carry
            # only the start of a token's text, held back in part by the stop-string check).
            assert chunk.choices[0].text or not lp.tokens, chunk
        if lp.text_offset:
            assert lp.text_offset[0] == len(text), (lp.text_offset, text)
        text += chunk.choices[0].text
        tokens += lp.tokens
        values += lp.token_logprobs
        tops += lp.top_logprobs
    return text, tokens, values, tops, n


@check
def logprobs_completions(server, model):
    client = server.client()
    for kwargs in [dict(prompt=PROMPTS[0], max_tokens=8, temperature=0, logprobs=3, extra_body={"ignore_eos": True}),
                   dict(prompt=PROMPTS[1], max_tokens=8, temperature=1.0, seed=3, logprobs=0),
                   dict(prompt=PROMPTS[2], max_tokens=5, temperature=0.7, seed=9, logprobs=20, top_p=0.5)]:
        full = completion_logprobs(client, model, False, **kwargs)
        streamed = completion_logprobs(client, model, True, **kwargs)
        assert full == streamed, (full, streamed)
        text, tokens, values, tops, n = full
        for token, value, top in zip(tokens, values, tops):
            assert value <= 0 and 1 <= len(top) <= kwargs["logprobs"] + 1, (value, top)
            if token == "\ufffd":  # partial characters share one key (as in vLLM): its value may be another's
                continue
            assert top[token] == value, (token, value, top)
            if kwargs["temperature"] == 0:
                assert value == max(top.values()), (value, top)
    # A stop string cuts the text, not the logprobs of the tokens generated up to it.
    full = client.completions.create(model=model, prompt=PROMPTS[2], max_tokens=16, temperature=0,
                                     extra_body={"ignore_eos": True}).choices[0].text
    stop = full[3:6]
    kwargs = dict(prompt=PROMPTS[2], max_tokens=16, temperature=0, stop=[stop], logprobs=1,
                  extra_body={"ignore_eos": True})
    cut = completion_logprobs(client, model, False, **kwargs)
    assert cut == completion_logprobs(client, model, True, **kwargs)
    assert cut[0] == full[:full.index(stop)] and len(cut[1]) == cut[4], cut
    r = client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=3, temperature=0)
    assert r.choices[0].logprobs is None
    for chunk in client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=3, temperature=0, stream=True):
        assert chunk.choices[0].logprobs is None, chunk


@check
def logprobs_chat(server, model):
    client = server.client()
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    kwargs = dict(model=model, messages=messages, max_tokens=8, temperature=0, logprobs=True, top_logprobs=2)
    r = client.chat.completions.create(**kwargs)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens, (len(content), r.usage)
    for entry in content:
        assert isinstance(entry.bytes, list) and all(0 <= b < 256 for b in entry.bytes), entry
        assert len(entry.top_logprobs) == 2 and entry.top_logprobs[0].logprob >= entry.top_logprobs[1].logprob
        assert entry.top_logprobs[0].logprob == entry.logprob, entry  # greedy: the chosen one is the best
    streamed = []
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        if chunk.choices and chunk.choices[0].logprobs is not None:
            streamed += chunk.choices[0].logprobs.content
    assert [e.model_dump() for e in streamed] == [e.model_dump() for e in content]
    only_chosen = client.chat.completions.create(model=model, messages=messages, max_tokens=3, temperature=0,
                                                 logprobs=True).choices[0].logprobs.content
    assert only_chosen and all(e.top_logprobs == [] for e in only_chosen), only_chosen
    assert client.chat.completions.create(model=model, messages=messages, max_tokens=3,
                                          temperature=0).choices[0].logprobs is None


@check
def errors_follow_openai_schema(server, model):
    client = server.client()

    def expect(status, fn):
        try:
            fn()
        except openai.APIStatusError as e:
            assert e.status_code == status, (e.status_code, e.message)
            body = e.response.json()
            assert body["error"]["code"] == status and body["error"]["message"], body
            return body["error"]["message"]
        raise AssertionError(f"expected HTTP {status}")

    c = lambda **kw: client.completions.create(model=model, prompt="Hi", **kw)  # noqa: E731
    expect(400, lambda: c(temperature=-0.5))
    expect(400, lambda: c(top_p=1.5))
    expect(400, lambda: c(max_tokens=-3))
    expect(400, lambda: c(n=2))
    expect(400, lambda: c(extra_body={"temperature": "hot"}))
    expect(400, lambda: c(extra_body={"top_k": -7}))
    expect(400, lambda: c(extra_body={"stream_options": {"include_usage": True}}))
    expect(400, lambda: c(logprobs=21))
    expect(400, lambda: c(logprobs=-1))
    chat = lambda **kw: client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}], **kw)  # noqa: E731
    expect(400, lambda: chat(top_logprobs=2))
    expect(400, lambda: chat(logprobs=True, top_logprobs=21))
    message = expect(400, lambda: c(max_tokens=10 ** 6))
    assert "maximum context length" in message and "1000000" in message, message
    expect(400, lambda: client.completions.create(model=model, prompt=""))
    expect(400, lambda: client.chat.completions.create(model=model, messages=[]))
    expect(404, lambda: client.completions.create(model="no-such-model", prompt="Hi"))
    expect(401, lambda: server.client(api_key="wrong").completions.create(model=model, prompt="Hi"))
    # Raw HTTP: bad JSON, wrong body types, unknown route, oversized body, non-finite numbers.
    for body in [b"{not json", b"[1,2]", b'{"prompt": 5}', b'{"prompt":"x","temperature":NaN}',
                 b'{"prompt":"x","max_tokens":"ten"}', b'{"prompt":"x","stop":[1]}']:
        status, data = server.request("POST", "/v1/completions", body)
        assert status == 400 and json.loads(data)["error"]["code"] == 400, (body, status, data)
    status, data = server.request("GET", "/v1/nothing")
    assert status == 404 and json.loads(data)["error"]["code"] == 404
    status, data = server.request("POST", "/v1/completions", b'{"prompt":"' + b"a" * (9 << 20) + b'"}')
    assert status == 413 and json.loads(data)["error"]["code"] == 413, status
    status, _ = server.request("POST", "/v1/completions", b'{"prompt":"x"}', headers={"Authorization": ""})
    assert status == 401
    server.wait_idle()


@check
def metrics_parse_as_prometheus(server, model):
    m = server.metrics()
    for name in ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                 "vllm:time_to_first_token_seconds_count", "vllm:inter_token_latency_seconds_count",
                 "vllm:e2e_request_latency_seconds_count", "vllm:iteration_tokens_total_count",
                 "crosspoint:iteration_num_seqs_count", "vllm:request_success_total:length"]:
        assert name in m, (name, sorted(m))
    assert m["vllm:generation_tokens_total"] > 0 and m["vllm:time_to_first_token_seconds_count"] > 0


@check
def prefix_cache_serves_a_repeated_prompt(server, model):
    # The same 80-token-plus prompt twice, one after the other: the second finds the first's
    # whole blocks (the server runs with prefix caching on, its default) and answers the same.
    client = server.client()
    prompt = " ".join(["The quick brown fox jumps over the lazy dog."] * 12)
    before = server.metrics()
    first = client.completions.create(model=model, prompt=prompt, max_tokens=8, temperature=0)
    second = client.completions.create(model=model, prompt=prompt, max_tokens=8, temperature=0)
    after = server.metrics()
    assert second.choices[0].text == first.choices[0].text, (first.choices[0].text, second.choices[0].text)
    hits = after["vllm:prefix_cache_hits_total"] - before.get("vllm:prefix_cache_hits_total", 0)
    queries = after["vllm:prefix_cache_queries_total"] - before.get("vllm:prefix_cache_queries_total", 0)
    tokens = first.usage.prompt_tokens
    assert queries >= 2 * tokens, (queries, tokens)
    assert hits >= (tokens - 1) // 16 * 16 > 0, (hits, tokens)  # every whole block short of the last token
    server.wait_idle()


@check
def disconnect_mid_stream_frees_blocks(server, model):
    before = server.wait_idle()
    client = server.client()
    streams = []
    for i in range(4):
        stream = client.completions.create(model=model, prompt=PROMPTS[i], max_tokens=400, temperature=0,
                                           stream=True, extra_body={"ignore_eos": True})
        it = iter(stream)
        for _ in range(3):
            next(it)
        streams.append(stream)
    assert server.metrics()["vllm:num_requests_running"] >= 1
    for stream in streams:
        stream.response.close()
    # A non-streaming client that gives up before its response is noticed too.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions", json.dumps({
        "model": model, "prompt": PROMPTS[5], "max_tokens": 400, "temperature": 0, "ignore_eos": True}),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
    time.sleep(0.2)
    conn.close()
    m = server.wait_idle()
    assert m["vllm:request_success_total:abort"] >= before.get("vllm:request_success_total:abort", 0) + 5, m


def greedy_equals_generate(crosspoint_bin, model_arg):
    @check
    def greedy_outputs_equal_crosspoint_generate(server, model):
        client = server.client()
        for prompt in PROMPTS[:2]:
            r = client.completions.create(model=model, prompt=prompt, max_tokens=8, temperature=0)
            out = subprocess.run([crosspoint_bin, "generate", "--device", "cpu", "--model", model_arg, "--prompt", prompt,
                                  "--max-tokens", "8", "--temperature", "0", "--threads", "2"],
                                 capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr
            assert out.stdout.rstrip("\n") == r.choices[0].text.rstrip("\n"), (out.stdout, r.choices[0].text)
        question = "What is the capital of France?"
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}],
                                           max_tokens=8, temperature=0)
        out = subprocess.run([crosspoint_bin, "generate", "--device", "cpu", "--model", model_arg, "--chat", "--prompt", question,
                              "--max-tokens", "8", "--temperature", "0", "--threads", "2"],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.rstrip("\n") == r.choices[0].message.content.rstrip("\n"), (out.stdout, r.choices[0])
    return greedy_outputs_equal_crosspoint_generate


def forced_preemption(make_server, model, reference_server):
    """A server with a KV budget too small for its batch gives the same outputs."""
    @check
    def preemption_gives_identical_outputs(unused_server, unused_model):
        specs = request_specs(SIZES["preempt_requests"], SIZES["preempt_max_tokens"])
        client = reference_server.client()
        expected = [run_completion(client, model, s, stream=False) for s in specs]
        small = make_server()
        try:
            small_client = small.client()
            with concurrent.futures.ThreadPoolExecutor(len(specs)) as pool:
                got = list(pool.map(lambda s: run_completion(small_client, model, s, stream=True), specs))
            for i, (a, b) in enumerate(zip(expected, got)):
                assert a == b, (i, a, b)
            m = small.wait_idle()
            assert m["vllm:num_preemptions_total"] > 0, m
        finally:
            assert small.stop() == 0
    return preemption_gives_identical_outputs


def overload_503(make_server, model):
    @check
    def waiting_queue_over_limit_gives_503(unused_server, unused_model):
        busy = make_server()
        try:
            client = busy.client()

            def one(i):
                try:
                    client.completions.create(model=model, prompt=PROMPTS[i % 8], max_tokens=SIZES["busy_max_tokens"],
                                              temperature=0,
                                              extra_body={"ignore_eos": True})
                    return 200
                except openai.APIStatusError as e:
                    return e.status_code
            with concurrent.futures.ThreadPoolExecutor(12) as pool:
                statuses = list(pool.map(one, range(12)))
            assert 503 in statuses and 200 in statuses, statuses
            busy.wait_idle()
        finally:
            assert busy.stop() == 0
    return waiting_queue_over_limit_gives_503


@check
def sigterm_finishes_streams_and_exits_zero(server, model):
    client = server.client()
    stream = client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=400, temperature=0,
                                       stream=True, extra_body={"ignore_eos": True})
    it = iter(stream)
    next(it)
    server.proc.send_signal(signal.SIGTERM)
    finish = None
    for chunk in it:
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    assert finish in ("abort", "length"), finish
    assert server.proc.wait(timeout=60) == 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["toy", "crosspoint"])
    parser.add_argument("--server", help="serving_toy_server binary")
    parser.add_argument("--tokenizer", help="tokenizer.json or .gguf for the toy server")
    parser.add_argument("--crosspoint", help="crosspoint binary")
    parser.add_argument("--model", default="default")
    args = parser.parse_args()

    if args.mode == "toy":
        model = "toy"

        def make(*extra):
            return Server([args.server, "--tokenizer", args.tokenizer, "--port", "0", "--api-key", API_KEY,
                           "--step-delay-ms", "1", *extra])
        main_server = make("--max-num-seqs", "64")
        make_small = lambda: make("--kv-blocks", "12", "--block-size", "4", "--max-num-seqs", "16",  # noqa: E731
                                  "--max-model-len", "48")
        make_busy = lambda: make("--max-num-seqs", "1", "--max-waiting", "2", "--step-delay-ms", "5")  # noqa: E731
    else:
        model = "default"
        port = 18000 + os.getpid() % 1000
        SIZES.update(distinct_specs=16, max_tokens=4, preempt_requests=6, preempt_max_tokens=10, busy_max_tokens=4)

        def make_cp(port, *extra):
            return Server([args.crosspoint, "serve", "--device", "cpu", "--model", args.model, "--port", str(port), "--api-key",
                           API_KEY, "--served-model-name", model, "--threads", "2", *extra], port=port)
        main_server = make_cp(port, "--max-num-seqs", "64")
        # SmolLM2-135M keeps 46,080 bytes of f32 K/V per token: 1.5 MiB is 34 tokens.
        make_small = lambda: make_cp(port + 1, "--kv-cache-memory", "1.5MiB", "--block-size", "2",  # noqa: E731
                                     "--max-model-len", "32", "--max-num-seqs", "8")
        make_busy = lambda: make_cp(port + 2, "--max-num-seqs", "1", "--max-waiting", "2")  # noqa: E731

    checks = [models_and_health, completion_stream_and_not_agree, chat_stream_and_not_agree,
              seeded_sampling_is_reproducible, concurrent_streams_equal_sequential, stop_strings,
              logprobs_completions, logprobs_chat, errors_follow_openai_schema, disconnect_mid_stream_frees_blocks,
              forced_preemption(make_small, model, main_server), overload_503(make_busy, model),
              metrics_parse_as_prometheus, sigterm_finishes_streams_and_exits_zero]
    if args.mode == "crosspoint":
        checks.insert(1, greedy_equals_generate(args.crosspoint, args.model))
        checks.insert(-2, prefix_cache_serves_a_repeated_prompt)
    try:
        for fn in checks:
            fn(main_server, model)
    finally:
        main_server.stop()
    if FAILURES:
        print("server log tail:\n" + "".join(main_server.stderr_lines[-20:]))
    print(f"{len(checks) - len(FAILURES)} of {len(checks)} checks passed")
    return len(FAILURES)


if __name__ == "__main__":
    sys.exit(main())
