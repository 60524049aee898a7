#!/usr/bin/env python3
"""vk_profile_check.py - ENCORE_VK_PROFILE=1's table of the nodes inside
replayed recordings (src/backend/vulkan/vk_profile.c) against what the
recording must hold: a sampled `encore generate` with K decode steps per
replay records K forward passes, so the table counts K sample and K
decode_advance nodes and K x num_hidden_layers attention nodes per replay;
each node's time is the difference of consecutive timestamps, so the ops'
times add up to the replays' (first to last timestamp) within the printed
rounding.

usage: vk_profile_check.py --encore BIN -m MODEL_DIR [--steps K]
"""
import argparse
import json
import os
import re
import subprocess
import sys


def replayed_table(stderr):
    """{op: (calls, ms)} and (replays, ms per replay) of the replayed table."""
    lines = stderr.splitlines()
    start = [i for i, l in enumerate(lines) if "nodes inside replayed recordings" in l]
    if not start:
        sys.exit("FAIL: no table of replayed nodes in:\n" + stderr)
    ops, total = {}, None
    for l in lines[start[0] + 1:]:
        m = re.match(r"\s+(\w+)\s+(\d+) calls\s+([\d.]+) ms", l)
        if m:
            ops[m.group(1)] = (int(m.group(2)), float(m.group(3)))
            continue
        m = re.match(r"\s+(\d+) replays, ([\d.]+) ms of device time each", l)
        if m:
            total = (int(m.group(1)), float(m.group(2)))
        break
    if total is None:
        sys.exit("FAIL: no replay count after the table:\n" + stderr)
    return ops, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--encore", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    layers = json.load(open(os.path.join(a.model, "config.json")))["num_hidden_layers"]
    env = dict(os.environ, ENCORE_VK_PROFILE="1")
    cmd = [a.encore, "generate", "-m", a.model, "--device", "vulkan", "--prompt-ids", "1 2 3 4 5",
           "-n", str(1 + 3 * a.steps), "--ignore-eos", "--temperature", "0.8", "--top-p", "0.9",
           "--repetition-penalty", "1.1", "--seed", "3", "--decode-steps", str(a.steps)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit("FAIL: %s exited %d:\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    ops, (replays, per_replay) = replayed_table(r.stderr)
    print("replays %d, %.3f ms each; %s" % (replays, per_replay, ops))
    bad = []
    if replays < 1:
        bad.append("no replay")
    want = {"sample": a.steps * replays, "decode_advance": a.steps * replays,
            "attention": a.steps * replays * layers}
    for op, n in want.items():
        got = ops.get(op, (0, 0.0))[0]
        if got != n:
            bad.append("%s: %d calls, expected %d" % (op, got, n))
    total = sum(ms for _, ms in ops.values())
    if abs(total - replays * per_replay) > 0.001 * len(ops) + 0.001 * replays + 1e-3 * total:
        bad.append("the ops add up to %.3f ms, the replays to %.3f" % (total, replays * per_replay))
    if bad:
        sys.exit("FAIL: " + "; ".join(bad))
    print("ok")


if __name__ == "__main__":
    main()
