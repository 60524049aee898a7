#!/usr/bin/env python3
"""bench_decode_batch.py - `encore bench`'s batch-B decode figure is made of
steps that decode B tokens each.

The report gives, per batch size, tokens/s (decode tokens over decode
seconds) and the wall time of one decode step (decode seconds over decode
steps); with one run their product is the tokens a decode step decoded, which
must be B. A short prompt (--prompt-len 8) must not shrink the step's token
budget below what the decode runs' prompts need: then their prefill comes in
chunks and the decode steps between the chunks run a few sequences, not B.

usage: bench_decode_batch.py ENCORE_BINARY MODEL_DIR
"""
import json
import subprocess
import sys

BATCHES = [1, 4]


def main():
    encore, model = sys.argv[1], sys.argv[2]
    cmd = [encore, "bench", "-m", model, "-t", "2", "--prompt-len", "8", "--gen-len", "6",
           "--runs", "1", "--modes", "captured", "--batches", ",".join(map(str, BATCHES)),
           "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if out.returncode != 0:
        print(out.stderr)
        sys.exit(f"bench_decode_batch: {' '.join(cmd)} exited {out.returncode}")
    r = json.loads(out.stdout)
    bad = 0
    for mode in ("captured",):
        for b in BATCHES:
            tps = r["modes"][mode][str(b)]
            step_s = r["step_ms"][mode][str(b)]["wall"] / 1e3
            per_step = tps * step_s
            ok = abs(per_step - b) <= 0.02 * b
            bad += not ok
            print(f"{mode:9s} batch {b}: {per_step:.3f} tokens per decode step{'' if ok else '  <- want %d' % b}")
    print(f"bench_decode_batch: {bad} failures")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
