"""End-to-end tests of the OpenAI-compatible server through the official `openai` SDK (pytest).

MODE (environment CROSSPOINT_SERVER_MODE) picks the server every test runs against:
  toy         tests/server/toy_server_main.cc in front of the toy model (fast, no weights):
              CROSSPOINT_TOY_SERVER (the binary), CROSSPOINT_TOKENIZER (tokenizer.json or .gguf)
  crosspoint  `crosspoint serve` with the default model, whose greedy outputs must equal
              `crosspoint generate`: CROSSPOINT_BIN (the binary), CROSSPOINT_MODEL (default "default")
Each test starts the servers it uses (a fresh main server per test process). CTest runs every
test of each mode as its own entry (server.toy.NAME, server.default_model.NAME), listed by
`python test_openai_server.py --list MODE`; by hand:
    CROSSPOINT_SERVER_MODE=toy CROSSPOINT_TOY_SERVER=build/tests/serving_toy_server \
    CROSSPOINT_TOKENIZER=tests/fixtures/bench/tiny_tokenizer/tokenizer.json \
    python -m pytest tests/server/test_openai_server.py -k stop_strings
"""
import asyncio
import concurrent.futures
import http.client
import json
import os
import random
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "harness"))
from server_process import ServerProcess, free_port  # noqa: E402

MODE = os.environ.get("CROSSPOINT_SERVER_MODE", "toy")
API_KEY = "sk-test-key"
# Sizes per mode: the toy model is instant, the default model takes ~0.2 s a step on 2 cores.
SIZES = {"distinct_specs": 64, "max_tokens": 10, "preempt_requests": 16, "preempt_max_tokens": 24,
         "busy_max_tokens": 20, "long_stream_tokens": 60, "drain_tokens": 200,
         "slow_server_args": ["--step-delay-ms", "20", "--max-num-seqs", "2"]}
if MODE == "crosspoint":
    SIZES.update(distinct_specs=16, max_tokens=4, preempt_requests=6, preempt_max_tokens=10, busy_max_tokens=4,
                 long_stream_tokens=12, drain_tokens=12, slow_server_args=["--max-num-seqs", "1"])


def only(mode):
    """A test that applies to one mode's server only (the toy model's speed, or a real model's cache)."""
    def mark(fn):
        fn.only_mode = mode
        return pytest.mark.skipif(MODE != mode, reason=f"{mode} server only")(fn)
    return mark


class Server(ServerProcess):
    """A server on 127.0.0.1 (scripts/harness/server_process.py): the toy server announces its
    port ("port N"), `crosspoint serve` is given one; both are ready when /health answers."""

    def __init__(self, argv, port=None, preexec_fn=None):
        super().__init__(argv, port=port, announce=None if port else "port", preexec_fn=preexec_fn)
        self.base_url += "/v1"
        self.stderr_lines = self.log_lines

    def client(self, api_key=API_KEY, timeout=120):
        return openai.OpenAI(base_url=self.base_url, api_key=api_key, max_retries=0, timeout=timeout)

    def request(self, method, path, body=None, headers=None, timeout=60):
        hdrs = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
        hdrs.update(headers or {})
        return super().request(method, path, body=body, headers=hdrs, timeout=timeout)

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
                if "handler" in sample.labels:  # crosspoint:http_responses_total:ROUTE:STATUS
                    key += ":" + sample.labels["handler"] + ":" + sample.labels["status"]
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



# ---- servers --------------------------------------------------------------------------------

def toy_server(*extra, preexec_fn=None):
    return Server([os.environ["CROSSPOINT_TOY_SERVER"], "--tokenizer", os.environ["CROSSPOINT_TOKENIZER"], "--port", "0",
                   "--api-key", API_KEY, "--step-delay-ms", "1", "--model-root", "/tmp/crosspoint-secret/toy-model",
                   *extra], preexec_fn=preexec_fn)


def crosspoint_server(*extra, preexec_fn=None):
    port = free_port()
    return Server([os.environ["CROSSPOINT_BIN"], "serve", "--device", "cpu", "--model", model_arg_value(), "--port",
                   str(port), "--api-key", API_KEY, "--served-model-name", "default", "--threads", "2", *extra],
                  port=port, preexec_fn=preexec_fn)


def model_arg_value():
    return os.environ.get("CROSSPOINT_MODEL", "default")


def start(*extra, preexec_fn=None):
    return (toy_server if MODE == "toy" else crosspoint_server)(*extra, preexec_fn=preexec_fn)


@pytest.fixture(scope="module")
def model():
    return "toy" if MODE == "toy" else "default"


@pytest.fixture(scope="module")
def server(request):
    main = start("--max-num-seqs", "64")
    yield main
    if request.session.testsfailed:
        print("server log tail:\n" + main.log_tail(), file=sys.stderr)
    main.stop()


@pytest.fixture
def make_small():
    """A server whose KV cache holds less than its batch needs (preemption)."""
    if MODE == "toy":
        return lambda: start("--kv-blocks", "12", "--block-size", "4", "--max-num-seqs", "16", "--max-model-len", "48")
    # SmolLM2-135M keeps 46,080 bytes of f32 K/V per token: 1.5 MiB is 34 tokens.
    return lambda: start("--kv-cache-memory", "1.5MiB", "--block-size", "2", "--max-model-len", "32",
                         "--max-num-seqs", "8")


@pytest.fixture
def make_busy():
    """A server that runs one request and lets two wait."""
    if MODE == "toy":
        return lambda: start("--max-num-seqs", "1", "--max-waiting", "2", "--step-delay-ms", "5")
    return lambda: start("--max-num-seqs", "1", "--max-waiting", "2")


@pytest.fixture
def make_limited():
    """A server with the test's own limits (flags)."""
    return start


@pytest.fixture
def step_delay():
    """Flags that slow the engine's steps enough for the timeout tests (the real model is slow already)."""
    return ["--step-delay-ms", "40"] if MODE == "toy" else []


@pytest.fixture
def crosspoint_bin():
    return os.environ["CROSSPOINT_BIN"]


@pytest.fixture
def model_arg():
    return model_arg_value()



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


def completions_at_once(client, model, specs):
    """The specs sent together and streamed, so the server batches them."""
    with concurrent.futures.ThreadPoolExecutor(len(specs)) as pool:
        return list(pool.map(lambda s: run_completion(client, model, s, stream=True), specs))


# ---- checks -------------------------------------------------------------------------------

def test_models_and_health(server, model):
    assert server.request("GET", "/health")[0] == 200
    models = server.client().models.list()
    assert [m.id for m in models.data] == [model], models


def test_completion_stream_and_not_agree(server, model):
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


def test_chat_stream_and_not_agree(server, model):
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


def test_seeded_sampling_is_reproducible(server, model):
    client = server.client()
    a = client.completions.create(model=model, prompt=PROMPTS[1], max_tokens=10, temperature=1.0, seed=7)
    b = client.completions.create(model=model, prompt=PROMPTS[1], max_tokens=10, temperature=1.0, seed=7)
    assert a.choices[0].text == b.choices[0].text


def test_sampling_fields_are_honoured(server, model):
    client = server.client()

    def tokens(temperature=0, **kw):
        r = client.completions.create(model=model, prompt=PROMPTS[3], max_tokens=12, temperature=temperature,
                                      logprobs=0, **kw)
        return r.choices[0].logprobs.tokens

    # A +100 bias makes one token win every greedy step; the server names it as /detokenize does.
    status, data = server.request("POST", "/detokenize", json.dumps({"tokens": [42]}).encode())
    assert status == 200, (status, data)
    biased = tokens(logit_bias={"42": 100}, extra_body={"ignore_eos": True})
    assert biased == [json.loads(data)["prompt"]] * 12, biased
    # Penalties change the greedy output: on the toy model (random logits, few repeats) those that
    # favour repeats, on a real one (a counting prompt, many repeats) those that punish them; at
    # least two of the five must change it. min_p = 1 keeps only the most likely token: sampling
    # is greedy.
    plain = tokens(extra_body={"ignore_eos": True})
    changed = []
    for kw in [{"presence_penalty": -2.0}, {"frequency_penalty": -2.0}, {"extra_body": {"repetition_penalty": 0.2}},
               {"presence_penalty": 2.0, "frequency_penalty": 2.0}, {"extra_body": {"repetition_penalty": 5.0}}]:
        kw.setdefault("extra_body", {})["ignore_eos"] = True
        if tokens(**kw) != plain:
            changed.append(kw)
    assert len(changed) >= 2, (changed, plain)
    assert tokens(temperature=1.0, seed=4, extra_body={"ignore_eos": True, "min_p": 1.0}) == plain
    # Streaming gives what the plain response gives.
    for kw in [{"presence_penalty": 1.5, "frequency_penalty": 0.5}, {"logit_bias": {"7": 3, "9": -2}},
               {"extra_body": {"repetition_penalty": 1.5, "min_p": 0.2}}]:
        spec = {"prompt": PROMPTS[3], "max_tokens": 8, "temperature": 0.9, "seed": 3,
                **{k: v for k, v in kw.items() if k != "extra_body"}}
        extra = kw.get("extra_body")
        whole = client.completions.create(model=model, extra_body=extra, **spec).choices[0].text
        streamed = "".join(c.choices[0].text for c in client.completions.create(
            model=model, stream=True, extra_body=extra, **spec) if c.choices)
        assert whole == streamed, (kw, whole, streamed)
    # Out of range or out of the vocabulary: a 400 naming the field.
    for kw, field in [({"logit_bias": {"1000000": 5}}, "logit_bias"), ({"logit_bias": {"5": 150}}, "logit_bias"),
                      ({"logit_bias": {"x": 1}}, "logit_bias"), ({"presence_penalty": 3}, "presence_penalty"),
                      ({"frequency_penalty": -2.5}, "frequency_penalty"),
                      ({"extra_body": {"repetition_penalty": 0}}, "repetition_penalty"),
                      ({"extra_body": {"min_p": 1.5}}, "min_p"), ({"n": 2, "temperature": 0}, "n"),
                      ({"n": 2, "best_of": 3}, "best_of"), ({"n": 1000}, "n")]:
        try:
            client.completions.create(model=model, prompt="Hi", max_tokens=2, **kw)
        except openai.BadRequestError as e:
            body = e.response.json()["error"]
            assert body["param"] == field and field in body["message"], (kw, body)
        else:
            raise AssertionError(f"{kw} accepted")
    server.wait_idle()


def test_n_choices(server, model):
    client = server.client()
    spec = {"prompt": PROMPTS[1], "max_tokens": 8, "temperature": 1.0, "seed": 5, "logprobs": 0}
    r = client.completions.create(model=model, n=3, **spec)
    assert [c.index for c in r.choices] == [0, 1, 2], r.choices
    assert r.usage.completion_tokens == sum(len(c.logprobs.tokens) for c in r.choices), r.usage
    again = client.completions.create(model=model, n=3, **spec)
    assert [c.text for c in again.choices] == [c.text for c in r.choices]
    # Choice i is drawn with seed + i: the single request with that seed gives it.
    for i, choice in enumerate(r.choices):
        single = client.completions.create(model=model, **{**spec, "seed": spec["seed"] + i})
        assert single.choices[0].text == choice.text, (i, single.choices[0].text, choice.text)
    assert len({c.text for c in r.choices}) > 1, "three seeds drew the same text"
    # Streamed: every chunk names its choice; each choice's text and finish reason equal the
    # non-streamed ones; the usage chunk counts every choice's tokens.
    texts, finishes, usage = {}, {}, None
    for chunk in client.completions.create(model=model, n=3, stream=True, stream_options={"include_usage": True},
                                           **spec):
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + c.text
            if c.finish_reason:
                finishes[c.index] = c.finish_reason
    assert [texts[i] for i in range(3)] == [c.text for c in r.choices], texts
    assert [finishes[i] for i in range(3)] == [c.finish_reason for c in r.choices], finishes
    assert usage.completion_tokens == r.usage.completion_tokens, usage
    # Chat: a role chunk per choice, then each choice's content.
    messages = [{"role": "user", "content": "Tell me a story"}]
    chat = client.chat.completions.create(model=model, messages=messages, n=2, max_tokens=6, seed=9)
    roles, contents = set(), {}
    for chunk in client.chat.completions.create(model=model, messages=messages, n=2, max_tokens=6, seed=9,
                                                stream=True):
        for c in chunk.choices:
            if c.delta.role:
                roles.add(c.index)
            contents[c.index] = contents.get(c.index, "") + (c.delta.content or "")
    assert roles == {0, 1}, roles
    assert [contents[0], contents[1]] == [c.message.content for c in chat.choices], (contents, chat.choices)
    server.wait_idle()


def test_concurrent_streams_equal_sequential(server, model):
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


def test_stop_strings(server, model):
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


def test_logprobs_completions(server, model):
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


def test_logprobs_chat(server, model):
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


def echo_request(client, model, stream, **kwargs):
    """(text, logprobs dict or None, usage dict, choice dict) of a completion, streamed or not."""
    if not stream:
        r = client.completions.create(model=model, **kwargs).model_dump()
        return r["choices"][0]["text"], r["choices"][0]["logprobs"], r["usage"], r["choices"][0]
    text, lp, usage = "", None, None
    for chunk in client.completions.create(model=model, stream=True, stream_options={"include_usage": True},
                                           **kwargs):
        chunk = chunk.model_dump()
        if not chunk["choices"]:
            usage = chunk["usage"]
            continue
        part = chunk["choices"][0]["logprobs"]
        if part is not None:
            lp = lp or {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
            if part["text_offset"]:
                assert part["text_offset"][0] == len(text), (part["text_offset"], text)
            for key in lp:
                lp[key] += part[key]
        text += chunk["choices"][0]["text"]
    return text, lp, usage, None


def test_echo_and_prompt_logprobs(server, model):
    """echo (with and without logprobs, max_tokens 0, streamed) and vLLM's prompt_logprobs."""
    client = server.client()
    prompt = PROMPTS[0]
    base = dict(prompt=prompt, temperature=0, extra_body={"ignore_eos": True})
    plain_text, plain_lp, plain_usage, _ = echo_request(client, model, False, max_tokens=4, logprobs=2, **base)
    n_prompt, n_out = plain_usage["prompt_tokens"], plain_usage["completion_tokens"]
    text, lp, usage, choice = echo_request(client, model, False, max_tokens=4, logprobs=2, echo=True, **base)
    assert text == prompt + plain_text, (text, plain_text)
    assert usage == plain_usage, (usage, plain_usage)
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == n_prompt + n_out, lp
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None, lp
    assert all(v is not None and v <= 0 for v in lp["token_logprobs"][1:]), lp
    assert all(1 <= len(t) <= 3 for t in lp["top_logprobs"][1:]), lp["top_logprobs"]
    offsets = [0]
    for token in lp["tokens"][:-1]:
        offsets.append(offsets[-1] + len(token))
    assert lp["text_offset"] == offsets, (lp["text_offset"], offsets)
    assert "".join(lp["tokens"][:n_prompt]) == prompt, lp["tokens"][:n_prompt]
    for key in ["tokens", "token_logprobs", "top_logprobs"]:  # the completion's part is the plain request's
        assert lp[key][n_prompt:] == plain_lp[key], (key, lp[key][n_prompt:], plain_lp[key])
    # vLLM's prompt_logprobs ride along: the same values, keyed by token id.
    prompt_lp = choice["prompt_logprobs"]
    assert len(prompt_lp) == n_prompt and prompt_lp[0] is None, prompt_lp
    for i in range(1, n_prompt):
        chosen = [e for e in prompt_lp[i].values() if e["decoded_token"] == lp["tokens"][i]]
        assert chosen and chosen[0]["logprob"] == lp["token_logprobs"][i], (i, prompt_lp[i], lp["tokens"][i])
    # max_tokens 0: the prompt alone, with its logprobs.
    text0, lp0, usage0, _ = echo_request(client, model, False, max_tokens=0, logprobs=2, echo=True, **base)
    assert text0 == prompt, text0
    assert usage0["prompt_tokens"] == n_prompt, usage0
    for key in lp0:
        assert lp0[key] == lp[key][:n_prompt], (key, lp0[key], lp[key][:n_prompt])
    # echo without logprobs; streamed echo (the prompt comes first, then the tokens).
    text1, lp1, _, _ = echo_request(client, model, False, max_tokens=4, echo=True, **base)
    assert text1 == text and lp1 is None, (text1, lp1)
    for max_tokens, want_text, want_lp in [(4, text, lp), (0, text0, lp0)]:
        streamed_text, streamed_lp, streamed_usage, _ = echo_request(
            client, model, True, max_tokens=max_tokens, logprobs=2, echo=True, **base)
        assert streamed_text == want_text, (streamed_text, want_text)
        assert streamed_lp == want_lp, (streamed_lp, want_lp)
        assert streamed_usage["prompt_tokens"] == n_prompt, streamed_usage
    # prompt_logprobs without echo: the text is the completion's; top entries ranked 1..k.
    r = client.completions.create(model=model, max_tokens=4, extra_body={"prompt_logprobs": 3, "ignore_eos": True},
                                  prompt=prompt, temperature=0).model_dump()
    assert r["choices"][0]["text"] == plain_text, r
    got = r["choices"][0]["prompt_logprobs"]
    assert len(got) == n_prompt and got[0] is None, got
    for i in range(1, n_prompt):
        ranks = sorted(e["rank"] for e in got[i].values())
        assert 3 <= len(got[i]) <= 4 and ranks[:3] == [1, 2, 3], got[i]
        assert all(set(e) == {"logprob", "rank", "decoded_token"} for e in got[i].values()), got[i]
        assert {k: v["logprob"] for k, v in got[i].items() if v["decoded_token"] == lp["tokens"][i]}, (i, got[i])
    # The same echo request among others, and repeated (a prompt the prefix cache holds): the same values.
    others = [dict(prompt=p, max_tokens=6, temperature=0, echo=True, logprobs=1) for p in PROMPTS[1:]]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(echo_request, client, model, False, **o) for o in others]
        mine = pool.submit(echo_request, client, model, False, max_tokens=4, logprobs=2, echo=True, **base)
        for f in futures:
            assert f.result()[1]["token_logprobs"][0] is None
        assert mine.result()[:2] == (text, lp), mine.result()[:2]
    assert echo_request(client, model, False, max_tokens=4, logprobs=2, echo=True, **base)[:2] == (text, lp)
    # Errors: max_tokens 0 needs echo; prompt_logprobs is not streamed, ranges, chat refuses both.
    for kwargs, param in [(dict(max_tokens=0), "max_tokens"),
                          (dict(stream=True, extra_body={"prompt_logprobs": 1}), "prompt_logprobs"),
                          (dict(extra_body={"prompt_logprobs": 21}), "prompt_logprobs"),
                          (dict(echo=True, max_tokens=-1), "max_tokens")]:
        try:
            client.completions.create(model=model, prompt=prompt, **kwargs)
        except openai.APIStatusError as e:
            assert e.status_code == 400 and e.response.json()["error"]["param"] == param, (kwargs, e.message)
        else:
            raise AssertionError(f"{kwargs} accepted")
    # Refusals the engine words (validate): the field at fault, in each endpoint's terms.
    for kwargs, param in [(dict(prompt=[10 ** 6], max_tokens=1), "prompt"),
                          (dict(prompt=prompt, max_tokens=10 ** 6), "max_tokens")]:
        try:
            client.completions.create(model=model, **kwargs)
        except openai.APIStatusError as e:
            assert e.status_code == 400 and e.response.json()["error"]["param"] == param, (kwargs, e.message)
        else:
            raise AssertionError(f"{kwargs} accepted")
    for extra, param in [({"echo": True}, "echo"), ({"prompt_logprobs": 1}, "prompt_logprobs")]:
        try:
            client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}], extra_body=extra)
        except openai.APIStatusError as e:
            assert e.status_code == 400 and e.response.json()["error"]["param"] == param, (extra, e.message)
        else:
            raise AssertionError(f"chat {extra} accepted")
    server.wait_idle()


def test_errors_follow_openai_schema(server, model):
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
    expect(400, lambda: c(n=2, temperature=0))
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


def test_metrics_parse_as_prometheus(server, model):
    # One request first: the token counters and the latency histograms have something to count.
    server.client().completions.create(model=model, prompt=PROMPTS[0], max_tokens=4, temperature=0,
                                       extra_body={"ignore_eos": True})
    m = server.wait_idle()
    for name in ["vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
                 "vllm:time_to_first_token_seconds_count", "vllm:inter_token_latency_seconds_count",
                 "vllm:e2e_request_latency_seconds_count", "vllm:iteration_tokens_total_count",
                 "crosspoint:iteration_num_seqs_count", "vllm:request_success_total:length"]:
        assert name in m, (name, sorted(m))
    assert m["vllm:generation_tokens_total"] > 0 and m["vllm:time_to_first_token_seconds_count"] > 0


def test_response_counts_match_what_the_client_saw(server, model):
    # crosspoint:http_responses_total counts the guard's refusals and the handlers' answers
    # alike: one of each kind sent here moves its own counter by exactly one.
    name = "crosspoint:http_responses_total"
    before = server.metrics()
    assert server.request("GET", "/no/such/route")[0] == 404
    assert server.request("POST", "/v1/completions", b'{"prompt": ')[0] == 400
    oversize = raw_exchange(server.port, b"POST /v1/completions HTTP/1.1\r\n" + AUTH +
                            b"Content-Length: 999999999\r\n\r\n")
    expect_json_error(oversize, 413)
    ok = json.dumps({"model": model, "prompt": "Hello", "max_tokens": 2}).encode()
    assert server.request("POST", "/v1/completions", ok)[0] == 200
    after = server.metrics()
    delta = {k: after.get(k, 0) - before.get(k, 0) for k in after if k.startswith(name + ":")}
    expected = {f"{name}:other:404": 1, f"{name}:/v1/completions:400": 1, f"{name}:/v1/completions:413": 1,
                f"{name}:/v1/completions:200": 1, f"{name}:/metrics:200": 1}
    assert {k: v for k, v in delta.items() if v} == expected, delta
    server.wait_idle()


@only("crosspoint")
def test_prefix_cache_serves_a_repeated_prompt(server, model):
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


@only("crosspoint")
def test_cache_salt_separates_cached_prefixes(server, model):
    # One prompt of several whole blocks under cache_salt "a", then "b", then "a" again, then
    # with no salt: only the second "a" finds cached blocks (vLLM's rule: the salt is mixed
    # into the first block's hash). A salt that is not a non-empty string gets a 400 naming it.
    client = server.client()
    prompt = " ".join(["Salted prompt: the lighthouse keeper counts the waves at night."] * 8)

    def hits_and_text(salt):
        before = server.metrics().get("vllm:prefix_cache_hits_total", 0)
        extra = {} if salt is None else {"cache_salt": salt}
        response = client.completions.create(model=model, prompt=prompt, max_tokens=4, temperature=0,
                                             extra_body=extra)
        return server.metrics()["vllm:prefix_cache_hits_total"] - before, response

    first_a, response = hits_and_text("a")
    tokens = response.usage.prompt_tokens
    first_b, _ = hits_and_text("b")
    second_a, again = hits_and_text("a")
    unsalted, _ = hits_and_text(None)
    assert (first_a, first_b, unsalted) == (0, 0, 0), (first_a, first_b, unsalted)
    assert second_a >= (tokens - 1) // 16 * 16 > 0, (second_a, tokens)
    assert again.choices[0].text == response.choices[0].text
    for bad in ["", 7, ["a"]]:
        try:
            client.completions.create(model=model, prompt="x", max_tokens=1, extra_body={"cache_salt": bad})
            raise AssertionError(f"cache_salt {bad!r} was accepted")
        except openai.BadRequestError as e:
            assert e.status_code == 400 and "cache_salt" in str(e), e
    server.wait_idle()


def test_disconnect_mid_stream_frees_blocks(server, model):
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
    streamed = server.wait_idle()
    assert streamed["vllm:request_success_total:abort"] >= before.get("vllm:request_success_total:abort", 0) + 4, streamed
    # A non-streaming client that gives up before its response is noticed too. It closes only
    # once the server runs its request: a loaded machine may not have read it after a fixed sleep.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions", json.dumps({
        "model": model, "prompt": PROMPTS[5], "max_tokens": 400, "temperature": 0, "ignore_eos": True}),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
    deadline = time.time() + 30
    while server.metrics()["vllm:num_requests_running"] == 0:
        assert time.time() < deadline, "the non-streaming request never started"
        time.sleep(0.01)
    conn.close()
    m = server.wait_idle()
    assert m["vllm:request_success_total:abort"] >= before.get("vllm:request_success_total:abort", 0) + 5, m


@only("crosspoint")
def test_greedy_outputs_equal_crosspoint_generate(server, model, crosspoint_bin, model_arg):
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


def test_preemption_gives_identical_outputs(make_small, model, server):
    """A server with a KV budget too small for its batch gives the same outputs."""
    specs = request_specs(SIZES["preempt_requests"], SIZES["preempt_max_tokens"])
    client = server.client()
    expected = [run_completion(client, model, s, stream=False) for s in specs]
    small = make_small()
    try:
        got = completions_at_once(small.client(), model, specs)
        for i, (a, b) in enumerate(zip(expected, got)):
            assert a == b, (i, a, b)
        m = small.wait_idle()
        assert m["vllm:num_preemptions_total"] > 0, m
    finally:
        assert small.stop() == 0


def test_waiting_queue_over_limit_gives_503(make_busy, model):
    busy = make_busy()
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


# ---- HTTP limits (docs/serving.md, "Limits, authentication and shutdown") ----------------------

def raw_exchange(port, data, timeout=15):
    """Sends raw bytes and reads until the server closes the connection (or timeout)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    chunks = []
    try:
        if data:
            sock.sendall(data)
        while True:
            try:
                b = sock.recv(65536)
            except socket.timeout:
                chunks.append(b"<timeout>")
                break
            except ConnectionResetError:
                chunks.append(b"<reset>")
                break
            if not b:
                break
            chunks.append(b)
    finally:
        sock.close()
    return b"".join(chunks)


def expect_json_error(raw, status):
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 ") and int(head.split(b" ")[1]) == status, raw[:400]
    error = json.loads(body)["error"]
    assert error["code"] == status and error["message"] and "type" in error and "param" in error, body
    return error["message"]


AUTH = f"Authorization: Bearer {API_KEY}\r\n".encode()


def test_malformed_and_smuggled_requests_get_json_errors(server, model):
    body = b'{"prompt":"x"}'
    cases = [
        (400, b"POST /v1/completions HTTP/1.1\r\nHost: a\r\n" + AUTH + b"Content-Length: 14\r\nContent-Length: 14\r\n\r\n" + body),
        (400, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Content-Length: 14\r\nTransfer-Encoding: chunked\r\n\r\n" + body),
        (400, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Transfer-Encoding: chunked\r\nContent-Length: 14\r\n\r\n" + body),
        (411, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Transfer-Encoding: chunked\r\n\r\ne\r\n" + body + b"\r\n0\r\n\r\n"),
        (400, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Content-Length : 14\r\n\r\n" + body),
        (400, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Content-Length: +14\r\n\r\n" + body),
        (400, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Content-Length: 14, 14\r\n\r\n" + body),
        (400, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"X-Folded: a\r\n b\r\nContent-Length: 14\r\n\r\n" + body),
        (400, b"GARBAGE\r\n\r\n"),
        (400, b"GET /health HTTP/2.0\r\n\r\n"),
        (400, b"GET /he alth HTTP/1.1\r\n\r\n"),
        (400, b"GET /health HTTP/1.1\r\nNoColonHere\r\n\r\n"),
        (405, b"BREW /v1/models HTTP/1.1\r\n" + AUTH + b"\r\n"),
        (405, b"TRACE /v1/models HTTP/1.1\r\n" + AUTH + b"\r\n"),
        (431, b"GET /v1/models HTTP/1.1\r\n" + AUTH + b"X-Big: " + b"a" * (70 << 10) + b"\r\n\r\n"),
        (417, b"GET /v1/models HTTP/1.1\r\n" + AUTH + b"Expect: 200-ok\r\n\r\n"),
    ]
    for status, data in cases:
        raw = raw_exchange(server.port, data)
        assert b"<html" not in raw.lower(), raw[:300]
        expect_json_error(raw, status)
    # Junk behind a request still being answered (a stray CRLF after a body, a bad pipelined
    # request): the answer goes out whole, then the error, then the connection closes.
    for junk in [b"\r\n", b"GARBAGE\r\n\r\n"]:
        request = b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Content-Length: 14\r\n\r\n" + body
        raw = raw_exchange(server.port, request + junk)
        first, sep, rest = raw.partition(b"HTTP/1.1 400 ")
        assert first.startswith(b"HTTP/1.1 200 ") and sep, raw[:600]
        assert json.loads(first.partition(b"\r\n\r\n")[2])["choices"], first
        expect_json_error(sep + rest, 400)
    # The server is unharmed: a correct request on a new connection works.
    assert server.request("POST", "/v1/completions", body)[0] == 200
    server.wait_idle()


def test_api_key_on_every_route_but_health(server, model):
    for method, path, body in [("GET", "/v1/models", None), ("GET", "/metrics", None),
                               ("POST", "/tokenize", b'{"prompt":"hi"}'), ("POST", "/detokenize", b'{"tokens":[1]}'),
                               ("POST", "/v1/completions", b'{"prompt":"hi"}'), ("GET", "/v1/nothing", None)]:
        for auth in ["", "Bearer", "Bearer " + "x" * len(API_KEY), "Bearer " + API_KEY + "x", "bearer " + API_KEY]:
            status, data = server.request(method, path, body, headers={"Authorization": auth})
            assert status == 401 and json.loads(data)["error"]["code"] == 401, (path, auth, status, data)
        assert server.request(method, path, body)[0] in (200, 404), path
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("GET", "/health")  # no Authorization header at all
    assert conn.getresponse().status == 200
    conn.close()
    # Two Authorization headers, one of them right: refused.
    raw = raw_exchange(server.port, b"GET /v1/models HTTP/1.1\r\nAuthorization: Bearer wrong\r\n" + AUTH + b"\r\n")
    expect_json_error(raw, 401)
    # The key is checked, and the body size, before the body is read: the answer comes while
    # the client has sent only the head of a 100 MB request.
    raw = raw_exchange(server.port, b"POST /v1/completions HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n")
    expect_json_error(raw, 401)
    raw = raw_exchange(server.port, b"POST /v1/completions HTTP/1.1\r\n" + AUTH + b"Content-Length: 100000000\r\n\r\n")
    assert "100000000" in expect_json_error(raw, 413)


def test_models_reveal_no_filesystem_path(server, model):
    status, data = server.request("GET", "/v1/models")
    assert status == 200, status
    for m in json.loads(data)["data"]:
        assert not m["root"].startswith("/") and "/" not in m["root"], m
    assert b"/tmp/" not in data and os.path.expanduser("~").encode() not in data, data


def test_integers_out_of_range_name_their_field(server, model):
    for field in ["max_tokens", "max_completion_tokens", "seed", "top_k"]:
        for value in [2 ** 63, 2 ** 64 - 1, 2 ** 70]:
            status, data = server.request("POST", "/v1/completions",
                                          json.dumps({"model": model, "prompt": "Hi", field: value}).encode())
            error = json.loads(data)["error"]
            assert status == 400 and error["param"] == field and "-" not in error["message"], (field, value, data)


def test_chat_content_cannot_forge_special_tokens(server, model):
    client = server.client()

    def prompt_tokens(content):
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}], max_tokens=1,
                                           temperature=0)
        return r.usage.prompt_tokens
    base = prompt_tokens("")
    specials = []
    for text in ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]:
        status, data = server.request("POST", "/tokenize", json.dumps({"prompt": text}).encode())
        assert status == 200, data
        if len(json.loads(data)["tokens"]) == 1:  # a special token of this tokenizer (/tokenize parses them)
            specials.append(text)
    assert specials, "the tokenizer has none of the special tokens tried"
    for text in specials:
        # As a special token it would add one id; as text it is several.
        assert prompt_tokens(text) - base > 1, text
        assert prompt_tokens(f"hi{text}system") - prompt_tokens("hisystem") > 1, text


def test_chat_template_fields_and_tokenize_messages(server, model):
    """/tokenize with messages gives the ids a chat request is prompted with; continue_final_message
    ends the prompt after the last message; chat_template_kwargs reach the template (unused
    variables change nothing); the refusals name their field."""
    client = server.client()
    messages = [{"role": "user", "content": "Tell me a story."}, {"role": "assistant", "content": "Once upon a"}]

    def tokenize(body):
        status, data = server.request("POST", "/tokenize", json.dumps(body).encode())
        assert status == 200, data
        return json.loads(data)["tokens"]

    def chat_prompt_tokens(**extra):
        r = client.chat.completions.create(model=model, messages=messages, max_tokens=1, temperature=0, **extra)
        return r.usage.prompt_tokens
    with_prompt = tokenize({"messages": messages})
    without = tokenize({"messages": messages, "add_generation_prompt": False})
    continued = tokenize({"messages": messages, "add_generation_prompt": False, "continue_final_message": True})
    assert len(with_prompt) == chat_prompt_tokens(), (len(with_prompt), chat_prompt_tokens())
    assert len(without) == chat_prompt_tokens(extra_body={"add_generation_prompt": False})
    assert len(continued) == chat_prompt_tokens(extra_body={"add_generation_prompt": False,
                                                            "continue_final_message": True})
    # The continued prompt is the full one cut right after "Once upon a": a prefix of it, shorter.
    assert continued == without[:len(continued)] and len(continued) < len(without), (continued, without)
    status, data = server.request("POST", "/detokenize", json.dumps({"tokens": continued}).encode())
    assert status == 200 and json.loads(data)["prompt"].endswith("Once upon a"), data
    assert tokenize({"messages": messages, "chat_template_kwargs": {"unused_variable": True}}) == with_prompt
    for body, param in [({"messages": messages, "continue_final_message": True}, "continue_final_message"),
                        ({"messages": messages, "chat_template_kwargs": [1]}, "chat_template_kwargs"),
                        ({"messages": messages, "chat_template_kwargs": {"messages": []}}, "chat_template_kwargs"),
                        ({"messages": messages, "prompt": "x"}, "prompt")]:
        status, data = server.request("POST", "/tokenize", json.dumps(body).encode())
        assert status == 400 and json.loads(data)["error"]["param"] == param, (body, status, data)


def test_odd_requests_do_not_fail_their_batch(server, model):
    """Requests with extreme but accepted values (or refused ones) run beside ordinary ones,
    which get exactly the output they get alone."""
    client = server.client()
    specs = [dict(prompt=PROMPTS[i], max_tokens=SIZES["max_tokens"], temperature=0) for i in range(4)]
    alone = [client.completions.create(model=model, **spec).choices[0].text for spec in specs]
    odd = [{"prompt": "Hi", "temperature": 1e300, "max_tokens": 4}, {"prompt": "Hi", "top_p": 1e-300, "max_tokens": 4},
           {"prompt": "Hi", "temperature": 1e-300, "top_k": 2 ** 62, "max_tokens": 4},
           {"prompt": "Hi", "logprobs": 20, "temperature": 5e-324, "max_tokens": 4},
           {"prompt": [2 ** 31 - 1], "max_tokens": 4}, {"prompt": "Hi", "stop_token_ids": [2 ** 31 - 1], "max_tokens": 4},
           {"prompt": "Hi", "stop": ["\u0000", ""], "max_tokens": 4}]

    def run_odd(body):
        status, data = server.request("POST", "/v1/completions", json.dumps({"model": model, **body}).encode())
        assert status in (200, 400), (body, status, data)
        return status
    with concurrent.futures.ThreadPoolExecutor(len(specs) + len(odd)) as pool:
        good = [pool.submit(lambda spec=spec: client.completions.create(model=model, **spec).choices[0].text)
                for spec in specs]
        statuses = list(pool.map(run_odd, odd))
        together = [f.result() for f in good]
    assert together == alone, (together, alone)
    assert 200 in statuses, statuses
    assert server.request("GET", "/health")[0] == 200
    server.wait_idle()


def test_big_tokenize_does_not_block_health(server, model):
    prompt = " ".join(f"word{i % 977} x{i % 13}," for i in range(600000))[: (8 << 20) - 64]
    body = json.dumps({"model": model, "prompt": prompt}).encode()
    done = threading.Event()
    sent = threading.Event()
    result = {}

    def tokenize():
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
        conn.request("POST", "/tokenize", body, headers={"Authorization": f"Bearer {API_KEY}",
                                                         "Content-Type": "application/json"})
        sent.set()
        resp = conn.getresponse()
        result["answered"] = time.time()
        result["status"] = resp.status
        result["body"] = resp.read()
        done.set()
        conn.close()
    worker = threading.Thread(target=tokenize)
    worker.start()
    sent.wait(120)
    start = time.time()
    waits = []  # (asked, waited)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    while not done.is_set():
        asked = time.time()
        conn.request("GET", "/health")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
        waits.append((asked, time.time() - asked))
    conn.close()
    worker.join()
    # The response is parsed here, not on the worker: json.loads of ~10 MB holds the GIL and
    # would stall this thread's /health timing with the client's own work.
    count = json.loads(result["body"]).get("count") if result.get("status") == 200 else None
    assert result["status"] == 200 and count > 100000, (result.get("status"), count)
    # Only the /health requests asked while the server worked on the upload count: once its
    # answer is on the way, the client's reading of ~10 MB shares this process with them.
    working = result["answered"] - start
    timed = [waited for asked, waited in waits if asked < result["answered"]]
    assert timed, ("no /health request while the tokenisation ran", working)
    # Were the loop tokenising, one /health would wait for the whole tokenisation: nearly all of
    # the time the request was in flight after its upload (measured: 96% before this server
    # moved tokenising to its own thread). Relative, so a slow machine does not change it.
    assert max(timed) < working / 3, (max(timed), working, len(timed))


def test_slow_and_idle_clients_are_closed(make_limited, model, step_delay):
    server = make_limited("--header-timeout", "1", "--body-timeout", "1", "--idle-timeout", "1", *step_delay)
    try:
        # Sends nothing: closed without a response.
        assert raw_exchange(server.port, b"") == b""
        # Half a head: 408.
        expect_json_error(raw_exchange(server.port, b"GET /v1/models HTTP/1.1\r\nHost: x\r\n"), 408)
        # Dribbling a head byte by byte does not extend the head timeout.
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=15)
        start = time.time()
        try:
            for b in b"GET /v1/models HTTP/1.1\r\nX-Slow: " + b"a" * 200:
                if select.select([sock], [], [], 0)[0] or time.time() - start > 8:
                    break  # the answer is there
                sock.sendall(bytes([b]))
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        raw = b""
        try:
            while chunk := sock.recv(65536):
                raw += chunk
        except (ConnectionResetError, socket.timeout):
            pass
        sock.close()
        expect_json_error(raw, 408)
        # Half a body: 408, counted under its route (the soak reconciles the server's counts
        # with its clients' by route and status).
        counted = "crosspoint:http_responses_total:/v1/completions:408"
        before = server.metrics().get(counted, 0)
        expect_json_error(raw_exchange(server.port, b"POST /v1/completions HTTP/1.1\r\n" + AUTH +
                                       b"Content-Length: 100\r\n\r\n{\"prompt\""), 408)
        assert server.metrics().get(counted, 0) - before == 1
        # A keep-alive connection is closed once idle.
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
        conn.request("GET", "/health")
        r = conn.getresponse()
        r.read()
        assert r.status == 200
        assert conn.sock.recv(1) == b""  # the server closed it
        conn.close()
        # A stream longer than the idle timeout is not idle: it runs to its end.
        client = server.client()
        stream = client.completions.create(model=model, prompt="Hi", max_tokens=SIZES["long_stream_tokens"],
                                           temperature=0, stream=True, extra_body={"ignore_eos": True})
        finish = None
        for chunk in stream:
            if chunk.choices and chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
        assert finish == "length", finish
        assert server.request("GET", "/health")[0] == 200
    finally:
        assert server.stop() == 0


@only("toy")
def test_chat_role_chunk_comes_with_the_first_token(make_limited, model):
    # vLLM sends the role chunk with the first output, after the prefill; a client timing the
    # first chunk (vLLM's benchmark) then measures TTFT. With every engine step taking 300 ms,
    # no event may arrive before the first step is done.
    server = make_limited("--step-delay-ms", "300")
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
                           "stream": True})
        start = time.time()
        conn.request("POST", "/v1/chat/completions", body=body,
                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + API_KEY})
        r = conn.getresponse()
        assert r.status == 200, r.status
        first = r.readline()
        first_s = time.time() - start
        rest = r.read().decode()
        conn.close()
        assert first.startswith(b"data: "), first
        assert json.loads(first[6:])["choices"][0]["delta"]["role"] == "assistant", first
        assert first_s >= 0.25, f"the role chunk came {first_s:.3f} s after the request, before the first step"
        assert rest.rstrip().endswith("data: [DONE]"), rest
    finally:
        assert server.stop() == 0


@only("toy")
def test_churning_connections_lose_no_bytes(make_limited, model):
    # Hundreds of short connections a second, a third of the streams closed by their client
    # mid-stream, each request's head and body written apart (as http.client does): not one
    # byte may go astray. A freed connection whose read event outlived its socket would take the
    # bytes of the next connection given that descriptor, and the body timeout would fire
    # (docs/testing.md, "Soak").
    server = make_limited("--body-timeout", "1", "--header-timeout", "1", "--max-num-seqs", "64",
                         "--max-waiting", "4096")
    statuses = {}

    async def one(rng):
        stream = rng.random() < 0.7
        body = json.dumps({"model": model, "prompt": "hello " * rng.randint(1, 20),
                           "max_tokens": rng.randint(2, 12), "stream": stream, "ignore_eos": True}).encode()
        head = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + AUTH +
                b"Content-Type: application/json\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", server.port), 10)
        try:
            writer.write(head)
            await writer.drain()
            await asyncio.sleep(rng.random() * 0.01)
            writer.write(body)
            await writer.drain()
            status_line = await asyncio.wait_for(reader.readline(), 20)
            status = int(status_line.split()[1]) if status_line else -1
            if stream and rng.random() < 0.35:
                await reader.read(100)  # leaves mid-stream
            else:
                await asyncio.wait_for(reader.read(), 20)
            statuses[status] = statuses.get(status, 0) + 1
        finally:
            writer.close()

    async def worker(i, end):
        rng = random.Random(i)
        while time.monotonic() < end:
            await one(rng)

    async def load():
        end = time.monotonic() + 8
        await asyncio.gather(*(worker(i, end) for i in range(96)))

    try:
        asyncio.run(load())
        assert set(statuses) == {200} and statuses[200] > 500, statuses
    finally:
        assert server.stop() == 0


def test_connections_over_the_cap_get_503_and_health_answers(make_limited, model):
    server = make_limited("--max-connections", "8")
    hogs = []
    try:
        for _ in range(8):
            hogs.append(socket.create_connection(("127.0.0.1", server.port), timeout=15))
        time.sleep(0.5)  # accepted by the loop
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=15)
        conn.request("GET", "/health")
        assert conn.getresponse().status == 200
        conn.close()
        raw = raw_exchange(server.port, b"GET /v1/models HTTP/1.1\r\n" + AUTH + b"\r\n")
        assert "too many open connections" in expect_json_error(raw, 503)
        # Far over the cap (the cap plus 64 that may still ask for /health): 503 at once.
        for _ in range(64):
            hogs.append(socket.create_connection(("127.0.0.1", server.port), timeout=15))
        time.sleep(0.5)
        expect_json_error(raw_exchange(server.port, b""), 503)
        for h in hogs:
            h.close()
        hogs = []
        deadline = time.time() + 10
        while True:  # closed connections are counted out within a fraction of a second
            status, _ = server.request("GET", "/v1/models")
            if status == 200 or time.time() > deadline:
                break
            time.sleep(0.1)
        assert status == 200, status
    finally:
        for h in hogs:
            h.close()
        assert server.stop() == 0


def test_emfile_neither_spins_nor_floods_the_log(make_limited, model):
    server = make_limited(preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48)))
    socks = []
    try:
        for _ in range(120):  # more than the server has descriptors for: accept() fails with EMFILE
            try:
                socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
            except OSError:
                break
        with open(f"/proc/{server.proc.pid}/stat") as f:
            before = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
        time.sleep(3)
        with open(f"/proc/{server.proc.pid}/stat") as f:
            after = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
        ticks = os.sysconf("SC_CLK_TCK")
        # A loop retrying accept() would burn the 3 s; pausing it costs next to nothing.
        assert (after - before) / ticks < 1.0, (after - before) / ticks
        logged = [line for line in server.stderr_lines if "accept() failed" in line]
        assert 1 <= len(logged) <= 2, logged
        for s_ in socks:
            s_.close()
        socks = []
        deadline = time.time() + 15
        status = None
        while time.time() < deadline:
            try:
                status = server.request("GET", "/health")[0]
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        assert status == 200, status
    finally:
        for s_ in socks:
            s_.close()
        assert server.stop() == 0


# ---- shutdown -------------------------------------------------------------------------------

def test_sigterm_lets_requests_in_flight_finish_and_exits_zero(server, model):
    client = server.client()
    stream = client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=SIZES["drain_tokens"], temperature=0,
                                       stream=True, extra_body={"ignore_eos": True})
    it = iter(stream)
    next(it)
    keep_alive = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    keep_alive.request("GET", "/health")
    keep_alive.getresponse().read()
    server.proc.send_signal(signal.SIGTERM)
    # New connections are refused (once the server has seen the signal: polled, since a loaded
    # machine may take a while); a new request on an open connection gets a 503 error.
    refused = False
    deadline = time.time() + 10
    while not refused and time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
            time.sleep(0.05)
        except (ConnectionRefusedError, ConnectionResetError):  # reset: queued when the listener closed
            refused = True
    assert refused
    finish, tokens = None, 0
    for chunk in it:
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    assert finish == "length", finish
    assert server.proc.wait(timeout=120) == 0
    log = "".join(server.stderr_lines)
    assert "shutdown: every request in flight finished" in log, log[-2000:]
    try:
        keep_alive.request("GET", "/v1/models", headers={"Authorization": f"Bearer {API_KEY}"})
        r = keep_alive.getresponse()
        assert r.status == 503, r.status
    except (ConnectionError, http.client.HTTPException):
        pass  # closed with the process: also no 200


@only("crosspoint")
def test_fp8_kv_cache_quarters_the_bytes_and_serves(make_limited, model):
    # The same --kv-cache-memory holds four times the tokens in e4m3 as in f32, and the
    # server answers from it; a bad spelling is one clear line.
    server = make_limited("--kv-cache-memory", "64MiB", "--kv-cache-dtype", "fp8", "--max-model-len", "2048")
    try:
        client = server.client()
        out = client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=8, temperature=0)
        assert out.usage.completion_tokens == 8, out.usage
        assert server.metrics()["crosspoint:num_kv_blocks"] == (64 << 20) // (46080 // 4 * 16), server.metrics()
    finally:
        assert server.stop() == 0
    log = "".join(server.stderr_lines)
    assert "(fp8 e4m3)" in log and "1.0, as vLLM's default" in log, log[-2000:]
    try:
        make_limited("--kv-cache-dtype", "fp4")
        raise AssertionError("a server with --kv-cache-dtype fp4 started")
    except RuntimeError as e:
        assert "--kv-cache-dtype fp4: expected auto, fp8 or fp8_e4m3" in str(e), str(e)[-600:]
    # --num-gpu-blocks-override sets the block count outright, whatever the memory options say.
    server = make_limited("--num-gpu-blocks-override", "24", "--kv-cache-dtype", "fp8", "--max-model-len", "256")
    try:
        out = server.client().completions.create(model=model, prompt=PROMPTS[0], max_tokens=8, temperature=0)
        assert out.usage.completion_tokens == 8, out.usage
        assert server.metrics()["crosspoint:num_kv_blocks"] == 24, server.metrics()
    finally:
        assert server.stop() == 0


@only("crosspoint")
def test_tensor_parallel_split_serves_the_same_text(make_limited, model, server):
    # The default model (9 heads, 3 KV heads) split over 3 ranks answers as the whole model does:
    # greedy text and seeded samples, several requests batched; 2 ranks are refused naming the heads.
    specs = request_specs(6, 12)
    client = server.client()
    expected = [run_completion(client, model, s, stream=False) for s in specs]
    split = make_limited("-tp", "3")
    try:
        got = completions_at_once(split.client(), model, specs)
        for i, (a, b) in enumerate(zip(expected, got)):
            assert a == b, (i, a, b)
    finally:
        assert split.stop() == 0
    assert "tensor parallel: 3 ranks" in "".join(split.stderr_lines)
    try:
        make_limited("--tensor-parallel-size", "2")
        raise AssertionError("a server split over 2 ranks started")
    except RuntimeError as e:
        assert "attention heads (9) is not divisible by the tensor parallel size 2" in str(e), str(e)[-600:]


def test_shutdown_timeout_ends_requests_with_errors(make_limited, model):
    server = make_limited("--shutdown-timeout", "1", *SIZES["slow_server_args"])
    try:
        client = server.client()
        stream = client.completions.create(model=model, prompt=PROMPTS[0], max_tokens=400, temperature=0,
                                           stream=True, extra_body={"ignore_eos": True})
        it = iter(stream)
        next(it)
        results = {}

        def plain(name):
            status, data = server.request("POST", "/v1/completions", json.dumps({
                "model": model, "prompt": PROMPTS[1], "max_tokens": 400, "temperature": 0,
                "ignore_eos": True}).encode())
            results[name] = (status, json.loads(data))
        threads = [threading.Thread(target=plain, args=(n,)) for n in ("running", "queued")]
        for t in threads:
            t.start()
        time.sleep(0.5)
        server.proc.send_signal(signal.SIGTERM)
        error = None
        try:
            for chunk in it:
                assert not (chunk.choices and chunk.choices[0].finish_reason), chunk  # no normal finish
        except openai.APIError as e:
            error = e
        assert error is not None and "shutting down" in str(error), error
        for t in threads:
            t.join(60)
        for name, (status, body) in results.items():
            assert status == 503 and body["error"]["code"] == 503, (name, status, body)
            assert "shutting down" in body["error"]["message"], body
        assert server.proc.wait(timeout=60) == 0
        log = "".join(server.stderr_lines)
        assert "shutdown: ended 3 requests still in flight" in log, log[-2000:]
    finally:
        assert server.stop() == 0


if __name__ == "__main__":
    # --list MODE: the tests that apply to MODE's server, one name a line (CTest registers each).
    if len(sys.argv) == 3 and sys.argv[1] == "--list":
        for name, fn in list(globals().items()):
            if name.startswith("test_") and callable(fn) and getattr(fn, "only_mode", sys.argv[2]) == sys.argv[2]:
                print(name)
        sys.exit(0)
    sys.exit("usage: test_openai_server.py --list toy|crosspoint (the tests run under pytest)")
