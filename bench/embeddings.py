#!/usr/bin/python3
"""bench/embeddings.py - /v1/embeddings throughput beside the same engine's prefill.

    bench/embeddings.py MODEL_DIR [--inputs 32] [--len 128] [--runs 3] [--encore build/encore]

Starts `encore serve --runner pooling` on MODEL_DIR (any Qwen3 checkpoint: pooling
needs no lm_head and skips it), sends one request of INPUTS inputs of LEN random
token ids per run (new ids each run, so the prefix cache serves none) and reports
the median of RUNS runs in input tokens per second, then the same engine's
prefill of one 512-token prompt (`encore bench --prompt-len 512`, the median of
RUNS runs) right after, and the ratio of the two. One JSON line.
"""
import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import time
import http.client


def post(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        sys.exit(f"bench/embeddings.py: {path}: {r.status} {data[:300]!r}")
    return json.loads(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--inputs", type=int, default=32)
    ap.add_argument("--len", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--encore", default="build/encore")
    a = ap.parse_args()
    p = subprocess.Popen([a.encore, "serve", "-m", a.model, "--port", "0", "--runner", "pooling"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = p.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        if not m:
            sys.exit(f"bench/embeddings.py: the server did not start: {line!r}")
        port = int(m.group(1))
        rng = random.Random(1)
        post(port, "/v1/embeddings", {"input": [[rng.randrange(1000, 100000) for _ in range(16)]]})  # warm
        rates = []
        for _ in range(a.runs):
            inputs = [[rng.randrange(1000, 100000) for _ in range(a.len)] for _ in range(a.inputs)]
            t0 = time.perf_counter()
            out = post(port, "/v1/embeddings", {"input": inputs})
            dt = time.perf_counter() - t0
            rates.append(out["usage"]["prompt_tokens"] / dt)
    finally:
        p.terminate()
        p.wait()
    bench = subprocess.run([a.encore, "bench", "-m", a.model, "--prompt-len", "512", "--runs", str(a.runs),
                            "--batches", "1", "--gen-len", "8", "--modes", "eager", "--json"],
                           capture_output=True, text=True, check=True)
    prefill = json.loads(bench.stdout)["prefill_tokens_per_s"]
    emb = statistics.median(rates)
    print(json.dumps({"inputs": a.inputs, "len": a.len, "runs": a.runs,
                      "embeddings_tokens_per_s": round(emb, 1), "runs_tokens_per_s": [round(r, 1) for r in rates],
                      "prefill_512_tokens_per_s": round(prefill, 1), "ratio": round(emb / prefill, 3)}))


if __name__ == "__main__":
    main()
