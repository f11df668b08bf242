#!/usr/bin/env python3
"""A minimal OpenAI-compatible streaming server for testing `crosspoint bench serve`.

Python standard library only (asyncio). Streams /v1/completions and /v1/chat/completions
as vLLM does (SSE, a final usage chunk, then `data: [DONE]`), instantly or with set delays,
and can be told to fail: HTTP 500, a truncated stream, a malformed chunk, an error message
inside the stream, no usage chunk, or the whole process dying after N requests. It counts
requests in flight (exact, server-side) and serves that count on /metrics (vLLM names) and
/stats (JSON).

Prints "PORT <n>" on stdout once listening.
"""
import argparse
import asyncio
import json
import logging
import os
import sys
import time

STATE = {"in_flight": 0, "max_in_flight": 0, "num_requests": 0, "num_completed": 0, "preemptions": 0,
         "start_times": [], "request_ids": [], "bodies": [], "headers": [], "paths": []}
MAX_RECORDED = 200  # request bodies and headers kept for /stats (the first ones)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--mode", default="ok",
                   choices=["ok", "http500", "truncate", "malformed", "stream-error", "no-usage", "slow"])
    p.add_argument("--fail-every", type=int, default=1,
                   help="apply --mode to every K-th request (1 = all); the others are ok")
    p.add_argument("--token-delay-ms", type=float, default=0.0, help="gap between token events")
    p.add_argument("--first-token-delay-ms", type=float, default=0.0)
    p.add_argument("--slow-delay-s", type=float, default=30.0, help="mode slow: wait this long first")
    p.add_argument("--tokens-per-event", type=int, default=1, help="tokens packed into one SSE event")
    p.add_argument("--max-tokens-cap", type=int, default=1 << 30)
    p.add_argument("--die-after", type=int, default=0,
                   help="exit abruptly (os._exit) when this many requests have arrived; 0 = never")
    p.add_argument("--die-delay-ms", type=float, default=50.0)
    p.add_argument("--no-metrics", action="store_true", help="answer /metrics with 404")
    p.add_argument("--barrier", type=int, default=0,
                   help="hold every stream until this many requests are in flight (at most 60 s), then "
                        "stream them all at once; 0 = no barrier")
    return p.parse_args()


ARGS = None
BARRIER = None  # asyncio.Event, set once --barrier requests are in flight


def sse(obj):
    data = obj if isinstance(obj, str) else json.dumps(obj)
    return f"data: {data}\n\n".encode()


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


async def write_response(writer, status, reason, body: bytes, content_type="application/json"):
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n").encode()
    writer.write(head + body)
    await writer.drain()


def metrics_text():
    running = STATE["in_flight"]
    return (
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        "# TYPE vllm:num_requests_running gauge\n"
        f'vllm:num_requests_running{{engine="0",model_name="fake"}} {float(running)}\n'
        "# TYPE vllm:num_requests_waiting gauge\n"
        f'vllm:num_requests_waiting{{engine="0",model_name="fake"}} 0.0\n'
        "# TYPE vllm:kv_cache_usage_perc gauge\n"
        f'vllm:kv_cache_usage_perc{{engine="0",model_name="fake"}} {min(1.0, running / 100.0)}\n'
        "# TYPE vllm:num_preemptions_total counter\n"
        f'vllm:num_preemptions_total{{engine="0",model_name="fake"}} {float(STATE["preemptions"])}\n'
    ).encode()


async def stream_completion(writer, path, body, request_number):
    mode = ARGS.mode if request_number % ARGS.fail_every == 0 else "ok"
    chat = path.endswith("/chat/completions")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens", 16)) if isinstance(body, dict) else 16
    num_tokens = max(1, min(int(max_tokens), ARGS.max_tokens_cap))
    # Chat: every message's words count (a multi-turn request resends its history).
    prompt = body.get("prompt") if not chat else " ".join(str(m["content"]) for m in body["messages"])
    prompt_tokens = max(1, len(str(prompt).split()))
    if mode == "http500":
        await write_response(writer, 500, "Internal Server Error", json.dumps(
            {"error": {"message": "fake failure", "type": "InternalServerError", "param": None, "code": 500}}).encode())
        return
    if mode == "slow":
        await asyncio.sleep(ARGS.slow_delay_s)
    if ARGS.barrier:
        if STATE["in_flight"] >= ARGS.barrier:
            BARRIER.set()
        try:
            await asyncio.wait_for(BARRIER.wait(), timeout=60)
        except asyncio.TimeoutError:
            pass
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                 b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n")
    if ARGS.first_token_delay_ms > 0:
        await asyncio.sleep(ARGS.first_token_delay_ms / 1000)
    event_id = f"cmpl-{request_number}"
    sent = 0
    while sent < num_tokens:
        if writer.transport.is_closing():  # the client hung up (e.g. it rejected a chunk)
            raise ConnectionResetError("client closed the connection")
        n = min(ARGS.tokens_per_event, num_tokens - sent)
        text = "".join(f" t{sent + k}" for k in range(n))
        sent += n
        finish = "length" if sent == num_tokens else None
        if chat:
            event = {"id": event_id, "object": "chat.completion.chunk", "created": 1, "model": "fake",
                     "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}
        else:
            event = {"id": event_id, "object": "text_completion", "created": 1, "model": "fake",
                     "choices": [{"index": 0, "text": text, "finish_reason": finish}]}
        writer.write(chunk(sse(event)))
        if mode == "truncate" and sent >= max(1, num_tokens // 2):
            await writer.drain()
            writer.transport.abort()  # connection reset mid-stream, no terminating chunk
            raise ConnectionResetError("truncated on purpose")
        if mode == "malformed" and sent >= 1:
            writer.write(chunk(b'data: {"choices": [ this is not json\n\n'))
        if mode == "stream-error" and sent >= 1:
            writer.write(chunk(sse({"error": {"message": "fake error mid-stream", "code": 500}})))
            writer.write(chunk(sse("[DONE]")) + b"0\r\n\r\n")
            await writer.drain()
            return
        if ARGS.token_delay_ms > 0:
            await writer.drain()
            await asyncio.sleep(ARGS.token_delay_ms / 1000)
    if mode != "no-usage":
        writer.write(chunk(sse({"id": event_id, "object": "text_completion", "created": 1, "model": "fake",
                                "choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": num_tokens,
                                                         "total_tokens": prompt_tokens + num_tokens}})))
    writer.write(chunk(sse("[DONE]")) + b"0\r\n\r\n")
    await writer.drain()


async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", "0"))
            raw = await reader.readexactly(length) if length else b""
            if method == "GET" and path == "/metrics":
                if ARGS.no_metrics:
                    await write_response(writer, 404, "Not Found", b'{"detail":"Not Found"}')
                else:
                    await write_response(writer, 200, "OK", metrics_text(), "text/plain; version=0.0.4")
                continue
            if method == "GET" and path == "/v1/models":
                models = {"object": "list", "data": [{"id": "fake-served", "object": "model", "root": "org/fake-root"}]}
                await write_response(writer, 200, "OK", json.dumps(models).encode())
                continue
            if method == "GET" and path == "/stats":
                await write_response(writer, 200, "OK", json.dumps(STATE).encode())
                continue
            if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
                await write_response(writer, 404, "Not Found", b'{"detail":"Not Found"}')
                continue
            STATE["num_requests"] += 1
            request_number = STATE["num_requests"]
            STATE["request_ids"].append(headers.get("x-request-id"))
            if len(STATE["bodies"]) < MAX_RECORDED:
                STATE["bodies"].append(raw.decode("utf-8", "replace"))
                STATE["headers"].append(headers)
                STATE["paths"].append(path)
            STATE["start_times"].append(time.monotonic())
            if ARGS.die_after and request_number >= ARGS.die_after:
                asyncio.get_running_loop().call_later(ARGS.die_delay_ms / 1000, os._exit, 3)
            STATE["in_flight"] += 1
            STATE["max_in_flight"] = max(STATE["max_in_flight"], STATE["in_flight"])
            if request_number % 10 == 0:
                STATE["preemptions"] += 1
            try:
                body = json.loads(raw)
                await stream_completion(writer, path, body, request_number)
                STATE["num_completed"] += 1
            finally:
                STATE["in_flight"] -= 1
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main():
    global ARGS
    ARGS = parse_args()
    global BARRIER
    BARRIER = asyncio.Event()
    # Writes to a connection the client dropped on purpose are expected here.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    server = await asyncio.start_server(handle, "127.0.0.1", ARGS.port, backlog=4096, limit=1 << 22)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
