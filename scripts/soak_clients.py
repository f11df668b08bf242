"""The clients of scripts/soak.py: many concurrent streams on asyncio (each request's outcome
tallied: completed, aborted by the client, refused with its status and message, or failed),
greedy control requests, and misbehaving clients on threads (mid-stream disconnects, malformed
JSON, oversize bodies, slow headers). Stdlib only."""
import asyncio
import collections
import json
import random
import socket
import threading
import time

WORDS = ("the lighthouse keeper wrote a long letter about storms ships and the quiet harbour town where "
         "children learned to sail before they could read and every winter the sea came closer").split()


class Tally:
    """What the clients saw in one round; every request lands in exactly one bucket."""

    def __init__(self):
        self.sent = 0
        self.completed = collections.Counter()   # route -> streams that ended with [DONE]
        self.aborted = collections.Counter()     # route -> streams the client closed on purpose
        self.refused = collections.Counter()     # (route, status) -> answers >= 400
        self.refusal_reasons = collections.Counter()  # "status: message" (first 80 characters)
        self.failed = []                         # anything else: the soak fails
        self.greedy = 0
        self.sampled = 0
        self.lock = threading.Lock()

    def as_json(self):
        return {"sent": self.sent, "completed": dict(self.completed), "aborted": dict(self.aborted),
                "refused": {f"{route} {status}": n for (route, status), n in sorted(self.refused.items())},
                "refusal_reasons": dict(self.refusal_reasons.most_common(20)), "failed": self.failed[:50],
                "num_failed": len(self.failed), "greedy": self.greedy, "sampled": self.sampled}


# ---- one streamed request over asyncio (HTTP/1.1, chunked SSE) -----------------------------

async def read_chunked_events(reader, on_event):
    """Reads a chunked body, calling on_event(payload) for each SSE 'data:' line; returns when
    the last chunk arrives or on_event returns False (the caller then closes the connection)."""
    pending = b""
    while True:
        size_line = await reader.readline()
        if not size_line:
            raise ConnectionError("the stream ended without its last chunk")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            await reader.readline()
            return True
        data = await reader.readexactly(size + 2)
        pending += data[:-2]
        while b"\n\n" in pending:
            event, pending = pending.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data: ") and on_event(line[6:]) is False:
                    return False


async def one_stream(port, route, body, disconnect_after, timeout_s):
    """Returns ("completed" | "aborted" | "refused" | "failed", detail)."""
    payload = json.dumps(body).encode()
    head = (f"POST {route} HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nConnection: close\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n").encode()
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
        writer.write(head + payload)
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), timeout_s)
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.1"):
            return "failed", f"no status line: {status_line[:80]!r}"
        status = int(parts[1])
        headers = {}
        while True:
            line = await asyncio.wait_for(reader.readline(), timeout_s)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if status != 200:
            length = int(headers.get("content-length", "0"))
            raw = await asyncio.wait_for(reader.readexactly(length), timeout_s) if length else b""
            try:
                message = json.loads(raw)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                return "failed", f"HTTP {status} without an OpenAI error body: {raw[:120]!r}"
            return "refused", (status, message)
        state = {"events": 0, "done": False, "finish": None, "error": None}

        def on_event(data):
            if data == b"[DONE]":
                state["done"] = True
                return True
            state["events"] += 1
            event = json.loads(data)
            if "error" in event:
                state["error"] = event["error"]
            for choice in event.get("choices", []):
                if choice.get("finish_reason"):
                    state["finish"] = choice["finish_reason"]
            if disconnect_after is not None and state["events"] >= disconnect_after:
                return False
            return True

        finished = await asyncio.wait_for(read_chunked_events(reader, on_event), timeout_s)
        if not finished:
            writer.transport.abort()
            writer = None
            return "aborted", state["events"]
        if state["error"] is not None:
            return "failed", f"error event: {state['error']}"
        if not state["done"] or state["finish"] not in ("length", "stop"):
            return "failed", f"stream ended without [DONE] or finish_reason (finish {state['finish']})"
        return "completed", state["events"]
    except asyncio.TimeoutError:
        return "failed", f"no progress within {timeout_s} s (hang)"
    except (ConnectionError, OSError, asyncio.IncompleteReadError, ValueError) as e:
        return "failed", repr(e)[:200]
    finally:
        if writer is not None:
            writer.close()


def stream_body(rng, route, model, disconnect):
    prompt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
    # A client that disconnects leaves at least 48 tokens ungenerated, so its close reaches the
    # server before the request can finish: the server counts it as an abort, as the client did.
    max_tokens = rng.randint(64, 96) if disconnect else rng.randint(16, 64)
    body = {"model": model, "max_tokens": max_tokens, "ignore_eos": True, "stream": True}
    if rng.random() < 0.5:
        body["temperature"] = 0.0
    else:
        body.update({"temperature": 0.8, "top_p": 0.95, "seed": rng.randint(0, 2**31 - 1)})
    if route == "/v1/chat/completions":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return body


async def stream_worker(index, port, model, seed, end_at, tally, disconnect_fraction, timeout_s):
    rng = random.Random(seed * 100003 + index)
    while time.monotonic() < end_at:
        route = "/v1/chat/completions" if rng.random() < 0.3 else "/v1/completions"
        disconnect = rng.random() < disconnect_fraction
        body = stream_body(rng, route, model, disconnect)
        with tally.lock:
            tally.sent += 1
            if body["temperature"] == 0.0:
                tally.greedy += 1
            else:
                tally.sampled += 1
        outcome, detail = await one_stream(port, route, body, rng.randint(1, 8) if disconnect else None, timeout_s)
        with tally.lock:
            if outcome == "completed":
                tally.completed[route] += 1
            elif outcome == "aborted":
                tally.aborted[route] += 1
            elif outcome == "refused":
                status, message = detail
                tally.refused[(route, status)] += 1
                tally.refusal_reasons[f"{status}: {message[:80]}"] += 1
            else:
                tally.failed.append(f"{route}: {detail}")
        if outcome == "refused":
            await asyncio.sleep(rng.uniform(2, 5))  # a refused client backs off, as a real one would


async def run_streams(port, model, seed, seconds, num_streams, tally, disconnect_fraction, timeout_s):
    end_at = time.monotonic() + seconds
    await asyncio.gather(*(stream_worker(i, port, model, seed, end_at, tally, disconnect_fraction, timeout_s)
                           for i in range(num_streams)))


# ---- greedy control requests ------------------------------------------------------------------

CONTROL_PROMPTS = ["The history of the lighthouse begins", "Three things every sailor knows:",
                   "In the quiet harbour town,", "Dear keeper, the storm last night"]


def control_outputs(port, model, timeout=1800):
    """The greedy completion of each control prompt, one request at a time (non-streaming):
    (the texts of those answered, in order; the first error or None). Stops at the first error."""
    import http.client
    out = []
    for prompt in CONTROL_PROMPTS:
        start = time.monotonic()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            connection.request("POST", "/v1/completions",
                               json.dumps({"model": model, "prompt": prompt, "max_tokens": 24, "temperature": 0,
                                           "ignore_eos": True}), {"Content-Type": "application/json"})
            response = connection.getresponse()
            data = response.read()
            connection.close()
        except OSError as e:
            return out, f"{prompt!r}: {e!r} after {time.monotonic() - start:.1f} s"
        if response.status != 200:
            return out, f"{prompt!r}: HTTP {response.status} after {time.monotonic() - start:.1f} s: {data[:200]!r}"
        out.append(json.loads(data)["choices"][0]["text"])
    return out, None


# ---- misbehaving clients (threads; plain sockets) --------------------------------------------
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


def disconnect_mid_stream(port, model, timeout_s):
    body = json.dumps({"model": model, "prompt": "Tell me a long story about a lighthouse.", "max_tokens": 96,
                       "ignore_eos": True, "stream": True, "temperature": random.choice([0.0, 0.8])}).encode()
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        deadline = time.monotonic() + timeout_s
        data = b""
        events_to_read = random.randint(1, 4)
        while data.count(b"data: ") < events_to_read and b"[DONE]" not in data:
            s.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                chunk = s.recv(4096)
            except socket.timeout:
                return f"disconnect mid-stream: no stream events within {timeout_s:g} s (hang)"
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
        return expect_status(read_response(s, time.monotonic() + 60), 400, "malformed JSON")


def oversize_body(port, model):
    length = 64 << 20  # over the default --max-body-bytes (8 MiB)
    with connect(port) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % length + b'{"prompt": "' + b"a" * 65536)
        return expect_status(read_response(s, time.monotonic() + 60), 413, "oversize body")


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
    """Misbehaving clients on threads for one round; statuses holds what each kind should have
    made the server answer, for the reconciliation with its counters."""
    KINDS = {"disconnect_mid_stream": None, "malformed_json": 400, "oversize_body": 413, "slow_headers": 408}

    def __init__(self, port, model, header_timeout_s, stream_timeout_s, seed):
        self.port, self.model, self.header_timeout_s = port, model, header_timeout_s
        self.stream_timeout_s = stream_timeout_s  # a mid-stream client may wait that long in the queue
        self.rng = random.Random(seed)
        self.counts = {kind: 0 for kind in self.KINDS}
        self.failures = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.run_quick), threading.Thread(target=self.run_slow)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def finish(self, timeout):
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=timeout)
            if thread.is_alive():
                self.failures.append(f"a misbehaving client did not finish within {timeout} s of the round's end (hang)")

    def record(self, kind, failure):
        with self.lock:
            self.counts[kind] += 1
            if failure:
                self.failures.append(failure)

    def run_quick(self):
        while not self.stop.is_set():
            kind = self.rng.choice(["disconnect_mid_stream", "malformed_json", "oversize_body"])
            try:
                if kind == "disconnect_mid_stream":
                    failure = disconnect_mid_stream(self.port, self.model, self.stream_timeout_s)
                else:
                    failure = globals()[kind](self.port, self.model)
            except OSError as e:
                failure = f"{kind}: {e!r}"
            self.record(kind, failure)
            self.stop.wait(self.rng.uniform(0.5, 1.5))

    def run_slow(self):
        while not self.stop.is_set():
            try:
                failure = slow_headers(self.port, self.model, self.header_timeout_s)
            except OSError as e:
                failure = f"slow_headers: {e!r}"
            self.record("slow_headers", failure)
