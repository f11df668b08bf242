"""A server process for a harness: started, waited for, asked, stopped, one way everywhere.

Used by the server checks, the bench scenarios, the soak, the llama.cpp comparison and the GPU
checks (whatever serves HTTP on 127.0.0.1: `crosspoint serve`, the toy server, a fake OpenAI
server, llama-cpp-python's server). Standard library only.

    with ServerProcess([binary, "serve", "--port", str(port), ...], port=port) as server:
        status, body = server.request("GET", "/v1/models")

The port is given, or read from the process's first stdout line (`announce="port"`: a line
"port 43120"). Ready means GET `ready_path` answered 200; a process that exits or is not ready
within `timeout` seconds raises ServerError with the end of its log. Its stderr (and stdout
unless announced) is appended to `log_path` when given, else kept in memory (`log_tail()`).
"""
import http.client
import signal
import socket
import subprocess
import threading
import time

HOST = "127.0.0.1"


class ServerError(RuntimeError):
    pass


def free_port():
    """A TCP port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class ServerProcess:
    def __init__(self, argv, *, port=None, announce=None, log_path=None, ready_path="/health", timeout=300,
                 poll_s=0.1, preexec_fn=None, env=None):
        if port is None and announce is None:
            raise ValueError("give the port, or the word the server announces it with")
        self.argv = list(argv)
        self.log_path = log_path
        self.log_lines = []
        self._log_file = open(log_path, "a") if log_path else None
        stdout = subprocess.PIPE if announce else (self._log_file or subprocess.DEVNULL)
        stderr = self._log_file or subprocess.PIPE
        self.proc = subprocess.Popen(self.argv, stdout=stdout, stderr=stderr, text=True, preexec_fn=preexec_fn,
                                     env=env)
        if self._log_file is None:
            threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()
        try:
            if announce:
                line = self.proc.stdout.readline()
                words = line.split()
                if len(words) != 2 or words[0] != announce or not words[1].isdigit():
                    raise ServerError(f"{self.argv[0]} did not announce its port: {line!r}\n{self.log_tail()}")
                port = int(words[1])
                threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
            self.port = port
            self.base_url = f"http://{HOST}:{port}"
            self._wait_ready(ready_path, timeout, poll_s)
        except BaseException:
            self.kill()
            raise

    def _drain(self, stream):
        for line in stream:
            self.log_lines.append(line)

    def _wait_ready(self, path, timeout, poll_s):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise ServerError(f"{self.argv[0]} exited with {self.proc.returncode} while starting\n{self.log_tail()}")
            try:
                if self.request("GET", path, timeout=5)[0] == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ServerError(f"{self.argv[0]}: GET {path} did not answer 200 within {timeout} s\n{self.log_tail()}")
            time.sleep(poll_s)

    def request(self, method, path, body=None, headers=None, timeout=60):
        """(status, body bytes) of one request on a fresh connection."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def log_tail(self, lines=20):
        if self.log_path:
            if self._log_file:
                self._log_file.flush()
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        return "".join(self.log_lines[-lines:])

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Signals the process (SIGTERM: a graceful drain) and waits; kills it after timeout s."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return self.kill()
        finally:
            self._close_log()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        self._close_log()
        return code

    def _close_log(self):
        if self._log_file:
            self._log_file.close()
            self._log_file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
