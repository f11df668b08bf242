"""An OpenAI-compatible stand-in for vLLM and SGLang, for testing `crosspoint sweep --engine
vllm|sglang` where neither installs (no GPU, no CUDA wheels). Standard library only.

It takes the engine's own command line (argparse with the engine's flag names, so a flag the
sweep passes that the engine does not have fails as it would there), checks the model directory
holds a config.json, prints the start-up lines the engine prints about its weights and KV cache,
and answers GET /health, /v1/models and /metrics (the engine's metric names) and POST
/v1/completions and /v1/chat/completions (streamed or not) with `max_tokens` pieces of text.

Sources of the names and lines (the engines' own code and docs):
- vLLM: `vllm serve MODEL` flags (--host, --port, --served-model-name, --max-model-len,
  --gpu-memory-utilization, --seed, --max-num-seqs, --enforce-eager); log lines from
  vllm/v1/core/kv_cache_utils.py ("GPU KV cache size: %s tokens", "Maximum concurrency for %s
  tokens per request: %.2fx"), vllm/v1/worker/gpu_model_runner.py ("Model loading took %.4f GiB
  memory and %.6f seconds") and gpu_worker.py ("Available KV cache memory: %.2f GiB"); metrics
  from vLLM's production-metrics docs (vllm:num_requests_running, vllm:num_requests_waiting,
  vllm:kv_cache_usage_perc, vllm:num_preemptions_total).
- SGLang: `python -m sglang.launch_server` flags (--model-path, --host, --port,
  --served-model-name, --context-length, --mem-fraction-static, --random-seed, --enable-metrics,
  --max-running-requests, --disable-cuda-graph); log lines from sglang's model_runner.py and
  memory_pool.py ("Load weight end. ... mem usage=%.2f GB.", "KV Cache is allocated. #tokens:
  %d, K size: %.2f GB, V size: %.2f GB", "max_total_num_tokens=%d, ... context_len=%d");
  metrics from its docs (sglang:num_running_reqs, sglang:num_queue_reqs, sglang:token_usage).
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KV_TOKENS = 123456


class State:
    def __init__(self, engine: str, served_name: str, max_model_len: int, metrics: bool):
        self.engine = engine
        self.metrics = metrics
        self.served_name = served_name
        self.max_model_len = max_model_len
        self.running = 0
        self.served = 0
        self.lock = threading.Lock()

    def metrics_text(self) -> str:
        with self.lock:
            running = self.running
        if self.engine == "vllm":
            label = f'{{engine="0",model_name="{self.served_name}"}}'
            lines = [
                "# HELP vllm:num_requests_running Number of requests in model execution batches.",
                "# TYPE vllm:num_requests_running gauge",
                f"vllm:num_requests_running{label} {running}",
                f"vllm:num_requests_waiting{label} 0",
                f"vllm:kv_cache_usage_perc{label} {running * 0.01}",
                f"vllm:num_preemptions_total{label} 0",
            ]
        else:
            label = f'{{model_name="{self.served_name}"}}'
            lines = [
                "# HELP sglang:num_running_reqs The number of running requests.",
                "# TYPE sglang:num_running_reqs gauge",
                f"sglang:num_running_reqs{label} {running}",
                f"sglang:num_queue_reqs{label} 0",
                f"sglang:token_usage{label} {running * 0.01}",
            ]
        return "\n".join(lines) + "\n"


def make_handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet: the sweep keeps the server log small
            pass

        def send_json(self, code: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path == "/v1/models":
                self.send_json(200, {"object": "list", "data": [
                    {"id": state.served_name, "object": "model", "max_model_len": state.max_model_len}]})
            elif self.path == "/metrics" and state.metrics:
                data = state.metrics_text().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            else:
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self.send_json(400, {"error": {"message": "body is not JSON"}})
                return
            chat = self.path == "/v1/chat/completions"
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            if body.get("model") != state.served_name:
                self.send_json(404, {"error": {"message": f"model {body.get('model')!r} does not exist"}})
                return
            n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
            with state.lock:
                state.running += 1
            try:
                self.generate(body, chat, n)
            finally:
                with state.lock:
                    state.running -= 1
                    state.served += 1

        def generate(self, body, chat: bool, n: int) -> None:
            prompt = body.get("prompt") if not chat else " ".join(
                m.get("content", "") for m in body.get("messages", []) if isinstance(m.get("content"), str))
            prompt_tokens = max(1, len(str(prompt).split()))
            created = int(time.time())
            kind = "chat.completion" if chat else "text_completion"
            if not body.get("stream"):
                text = " hello" * n
                choice = {"index": 0, "finish_reason": "length"}
                choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
                self.send_json(200, {"id": "cmpl-standin", "object": kind, "created": created,
                                     "model": state.served_name, "choices": [choice],
                                     "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                                               "total_tokens": prompt_tokens + n}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def send_event(obj) -> None:
                data = f"data: {json.dumps(obj) if not isinstance(obj, str) else obj}\n\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            kind_chunk = "chat.completion.chunk" if chat else "text_completion"
            for i in range(n):
                time.sleep(0.002)
                finish = "length" if i == n - 1 else None
                choice = {"index": 0, "finish_reason": finish}
                choice.update({"delta": {"content": " hello"}} if chat else {"text": " hello"})
                send_event({"id": "cmpl-standin", "object": kind_chunk, "created": created,
                            "model": state.served_name, "choices": [choice]})
            if (body.get("stream_options") or {}).get("include_usage"):
                send_event({"id": "cmpl-standin", "object": kind_chunk, "created": created,
                            "model": state.served_name, "choices": [],
                            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                                      "total_tokens": prompt_tokens + n}})
            send_event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def check_model_dir(path: str) -> None:
    config = os.path.join(path, "config.json")
    if not os.path.isfile(config):
        print(f"ValueError: {path} is not a model directory (no config.json)", flush=True)
        sys.exit(1)
    with open(config, encoding="utf-8") as f:
        quant = json.load(f).get("quantization_config") or {}
    method = quant.get("quant_method", "none")
    print(f"INFO standin: model {path}, quantization {method}", flush=True)


def serve(engine: str, host: str, port: int, served_name: str, max_model_len: int, metrics: bool = True) -> None:
    state = State(engine, served_name, max_model_len, metrics)
    server = ThreadingHTTPServer((host, port), make_handler(state))
    if engine == "vllm":
        print("INFO [gpu_model_runner.py] Model loading took 0.2510 GiB memory and 1.234567 seconds", flush=True)
        print("INFO [gpu_worker.py] Available KV cache memory: 3.50 GiB", flush=True)
        print(f"INFO [kv_cache_utils.py] GPU KV cache size: {KV_TOKENS:,} tokens", flush=True)
        print(f"INFO [kv_cache_utils.py] Maximum concurrency for {max_model_len:,} tokens per request: "
              f"{KV_TOKENS / max_model_len:.2f}x", flush=True)
        print(f"INFO [api_server.py] Starting vLLM API server 0 on http://{host}:{port}", flush=True)
    else:
        print("[2026-12-05 00:00:00 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, "
              "avail mem=70.00 GB, mem usage=0.25 GB.", flush=True)
        print(f"[2026-12-05 00:00:01 TP0] KV Cache is allocated. #tokens: {KV_TOKENS}, K size: 1.75 GB, "
              "V size: 1.75 GB", flush=True)
        print(f"[2026-12-05 00:00:02 TP0] max_total_num_tokens={KV_TOKENS}, chunked_prefill_size=8192, "
              f"max_prefill_tokens=16384, max_running_requests=256, context_len={max_model_len}", flush=True)
        print("[2026-12-05 00:00:03] The server is fired up and ready to roll!", flush=True)
    server.serve_forever()
