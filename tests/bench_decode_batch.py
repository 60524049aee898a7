#!/usr/bin/env python3
"""bench_decode_batch.py - `encore bench`'s batch-B decode figure is made of
steps that decode B tokens each.

The report gives, per batch size, tokens/s (decode tokens over decode
seconds) and the wall time of one decode step (decode seconds over decode
steps); with one run their product is the tokens a decode step decoded, which
must be B. A short prompt (--prompt-len 8) must not shrink the step's token
budget below what the decode runs' prompts need (16 tokens each, or --depth):
then their prefill comes in chunks and the decode steps between the chunks run
a few sequences, not B.

usage: bench_decode_batch.py ENCORE_BINARY MODEL_DIR
"""
import json
import subprocess
import sys

BATCHES = [1, 4]


def run(encore, model, depth):
    """Failures of one bench run whose decode prompts are `depth` tokens."""
    cmd = [encore, "bench", "-m", model, "-t", "2", "--prompt-len", "8", "--gen-len", "6",
           "--runs", "1", "--modes", "captured", "--batches", ",".join(map(str, BATCHES)),
           "--json"] + (["--depth", str(depth)] if depth else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if out.returncode != 0:
        print(out.stderr)
        sys.exit(f"bench_decode_batch: {' '.join(cmd)} exited {out.returncode}")
    r = json.loads(out.stdout)
    bad = int(r["depth"] != (depth or 16))
    if bad:
        print(f"depth {depth}: the report says depth {r['depth']}")
    for mode in ("captured",):
        for b in BATCHES:
            tps = r["modes"][mode][str(b)]
            step_s = r["step_ms"][mode][str(b)]["wall"] / 1e3
            per_step = tps * step_s
            ok = abs(per_step - b) <= 0.02 * b
            bad += not ok
            print(f"depth {depth or 16:3d} {mode:9s} batch {b}: {per_step:.3f} tokens per decode step"
                  f"{'' if ok else '  <- want %d' % b}")
    return bad


def main():
    encore, model = sys.argv[1], sys.argv[2]
    # the default prompts (16 tokens), then prompts of 600 (--depth; the
    # report must say so), whose decode figure must also come from steps
    # decoding all B sequences. (4 x 600 tokens is more than the engine's
    # default step budget, which the bench raises; with it not raised the
    # scheduler still folds the last prompt's chunk into a step that
    # decodes the others, a step the figure leaves out, so this run does
    # not catch that.)
    bad = run(encore, model, 0) + run(encore, model, 600)
    print(f"bench_decode_batch: {bad} failures")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
