#!/usr/bin/env python3
"""bench_serve.py - `encore bench serve` against a scripted OpenAI-style server.

The server here is independent of encore's: Python's http.server answering
/v1/models and streaming /v1/completions, every request's token chunks
spaced by a known delay, alternating chunked transfer coding and a body that
ends with the connection. It records what the benchmark sent (prompt lengths,
max_tokens, peak concurrency), and the test checks the report against it:
the token counts, the client concurrency, and latencies no shorter than the
delays the server slept.

usage: bench_serve.py ENCORE_BINARY
"""
import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK_DELAY_S = 0.004
FIRST_DELAY_S = 0.02
CLIENTS = 4
FIRST_WAVE = threading.Barrier(CLIENTS)  # the first CLIENTS requests answer together


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.prompt_tokens = 0
        self.max_tokens = 0
        self.min_max_tokens = 1 << 30
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self.bad = []


TALLY = Tally()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/v1/models":
            self.send_error(404)
            return
        body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _write(self, chunked, data):
        if chunked:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()

    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with TALLY.lock:
            index = TALLY.requests
            TALLY.requests += 1
            TALLY.in_flight += 1
            TALLY.peak = max(TALLY.peak, TALLY.in_flight)
            TALLY.prompt_tokens += len(req["prompt"])
            TALLY.max_tokens += req["max_tokens"]
            TALLY.min_max_tokens = min(TALLY.min_max_tokens, req["max_tokens"])
            if self.path != "/v1/completions" or req.get("model") != "scripted" or not req.get("stream") \
                    or not req.get("ignore_eos") or not req["stream_options"]["include_usage"]:
                TALLY.bad.append((self.path, req))
        if index < CLIENTS:  # so that all clients are in flight at once, however slow the machine
            FIRST_WAVE.wait(timeout=60)
        chunked = index % 2 == 0
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        time.sleep(FIRST_DELAY_S)
        for t in range(req["max_tokens"]):
            if t:
                time.sleep(CHUNK_DELAY_S)
            event = {"id": "c", "object": "text_completion", "choices": [{"index": 0, "text": "tok"}]}
            self._write(chunked, b"data: " + json.dumps(event).encode() + b"\r\n\r\n")
        with TALLY.lock:  # before the client can see the end and send its next request
            TALLY.in_flight -= 1
        usage = {"choices": [], "usage": {"prompt_tokens": len(req["prompt"]),
                                          "completion_tokens": req["max_tokens"]}}
        self._write(chunked, b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True


def main():
    encore = sys.argv[1]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % server.server_address[1]
    clients, prompts = CLIENTS, 12
    out = subprocess.run([encore, "bench", "serve", "--url", url, "--clients", str(clients),
                          "--num-prompts", str(prompts), "--input-len", "20", "--output-len", "6",
                          "--range-ratio", "0.5", "--seed", "3", "--json"],
                         capture_output=True, text=True, timeout=120)
    server.shutdown()
    server.server_close()
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    check(not TALLY.bad, "malformed requests: %r" % TALLY.bad[:2])
    check(TALLY.requests == prompts, "server saw %d requests" % TALLY.requests)
    check(rep["model"] == "scripted", "model from /v1/models: %r" % rep["model"])
    check(rep["completed"] == prompts and rep["failed"] == 0, "completed %d failed %d" % (rep["completed"], rep["failed"]))
    check(rep["output_tokens"] == TALLY.max_tokens, "output tokens %d, server sent %d" % (rep["output_tokens"], TALLY.max_tokens))
    check(rep["prompt_tokens"] == TALLY.prompt_tokens, "prompt tokens %d, server got %d" % (rep["prompt_tokens"], TALLY.prompt_tokens))
    check(TALLY.prompt_tokens != 20 * prompts, "--range-ratio varied no prompt length")
    check(TALLY.peak == clients, "peak concurrency %d, want %d" % (TALLY.peak, clients))
    check(rep["ttft_ms"]["p50"] >= FIRST_DELAY_S * 1e3, "ttft p50 %.2f ms below the server's delay" % rep["ttft_ms"]["p50"])
    # Lower bounds that hold however late the client reads: every request's
    # last chunk left the server after all of its sleeps. (Gaps between chunks
    # have no such bound: a client that reads late sees chunks bunched.)
    least_e2e = (FIRST_DELAY_S + (TALLY.min_max_tokens - 1) * CHUNK_DELAY_S) * 1e3
    check(rep["e2e_ms"]["p50"] >= least_e2e, "e2e p50 %.2f ms below %.2f" % (rep["e2e_ms"]["p50"], least_e2e))
    check(rep["e2e_ms"]["p99"] >= rep["ttft_ms"]["p99"], "e2e below ttft")
    check(0 < rep["itl_ms"]["mean"] <= rep["e2e_ms"]["p99"], "itl mean %.2f ms" % rep["itl_ms"]["mean"])
    check(0 < rep["tpot_ms"]["mean"] <= rep["e2e_ms"]["p99"], "tpot mean %.2f ms" % rep["tpot_ms"]["mean"])
    rate = rep["completed"] / rep["duration_s"]
    check(abs(rep["request_throughput"] - rate) < 1e-3 * rate, "throughput %.3f != completed/duration" % rep["request_throughput"])

    # A server that is not there: a clear failure, non-zero exit.
    bad = subprocess.run([encore, "bench", "serve", "--url", url, "--model", "m", "--num-prompts", "1"],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode == 1 and "cannot connect" in bad.stderr, "no server: rc %d %r" % (bad.returncode, bad.stderr))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        print(out.stdout)
        sys.exit(1)
    print("bench serve: %d requests, report matches the scripted server" % prompts)


if __name__ == "__main__":
    main()
