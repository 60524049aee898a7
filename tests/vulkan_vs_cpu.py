#!/usr/bin/env python3
"""vulkan_vs_cpu.py - the whole model on Vulkan against the CPU backend.

  logits   `encore logits` teacher-forced over a 48-token prompt on both
           devices: for every position, every id in both top-20 lists has
           |vulkan - cpu| <= TOL_REL * max(1, max |cpu logit|) with
           TOL_REL = 1e-4 (both compute in f32; they differ by summation
           order, f32 vs double in RMSNorm sums, f32 vs double RoPE angles),
           and the top-1 ids agree wherever the CPU's lead is above 2 * tol.
  greedy   `encore generate` greedy, 48 tokens from three prompts, on both
           devices, captured (the default) and --eager on Vulkan: identical
           ids.
  chunks   `encore logits` on Vulkan over a 48-token prompt in one step, in
           steps of 11 tokens (the last of 4) and of one token: the same
           top-20 logits to the last printed digit (9 significant digits,
           an f32's round trip) at every position, whatever the step's
           size (an MoE model's expert matmuls group 8 or more tokens by
           expert, fewer run one workgroup per token and slot).
  bad_device  a device name that is not one, a Vulkan index past the last
           device, a bad ENCORE_VK_DEVICE, and a KV pool (16M blocks, 125 GB
           per layer of a tiny model) that no device holds: a clear error
           naming it (for memory: what did not fit, its size, the heap's),
           never a crash.

The independent NumPy reference is checked on Vulkan by the ref_* tests run
with ENCORE_DEVICE=vulkan (tests/vulkan.cmake).

With --quantize T both devices quantize the weights at load (--tol-rel then
states the tolerance: the CPU rounds activations to 8 bits, the shaders
multiply f32 activations by the dequantized weights).

usage: vulkan_vs_cpu.py --encore BIN -m MODEL [--quantize T --tol-rel X] {logits,greedy,chunks,bad_device}
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import gguf_weights

TOL_REL = 1e-4
SMALL_KV = ["--kv-blocks", "64"]


def run(a, args):
    quant = ["--quantize", a.quantize] if a.quantize else []
    p = subprocess.run([a.encore] + args + ["-m", a.model] + SMALL_KV + quant, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        sys.exit(f"FAIL: encore {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def prompt(n, seed):
    return " ".join(str((seed * 131 + i * 37) % 400 + 3) for i in range(n))


def check_logits(a):
    ids = prompt(48, 1)
    rows = {}
    for dev in ("cpu", "vulkan"):
        out = run(a, ["logits", "--device", dev, "--prompt-ids", ids, "--top", "20"])
        rows[dev] = [json.loads(line)["top"] for line in out.splitlines() if line.strip()]
    if len(rows["cpu"]) != 48 or len(rows["vulkan"]) != 48:
        sys.exit(f"FAIL: expected 48 positions, got {len(rows['cpu'])} and {len(rows['vulkan'])}")
    worst = 0.0
    for pos, (c, v) in enumerate(zip(rows["cpu"], rows["vulkan"])):
        cd, vd = dict((i, x) for i, x in c), dict((i, x) for i, x in v)
        tol = a.tol_rel * max(1.0, max(abs(x) for _, x in c))
        for i in set(cd) & set(vd):
            d = abs(cd[i] - vd[i])
            worst = max(worst, d / tol)
            if d > tol:
                sys.exit(f"FAIL: position {pos}, id {i}: cpu {cd[i]:.6f} vulkan {vd[i]:.6f} |d| {d:.2e} > {tol:.2e}")
        if c[0][0] != v[0][0] and c[0][1] - c[1][1] > 2 * tol:
            sys.exit(f"FAIL: position {pos}: top-1 cpu {c[0]} vulkan {v[0]}, cpu lead {c[0][1] - c[1][1]:.2e}")
        if len(set(cd) & set(vd)) < 15:
            sys.exit(f"FAIL: position {pos}: top-20 lists share {len(set(cd) & set(vd))} ids")
    print(f"ok logits: 48 positions, top-20, worst |d|/tol = {worst:.3f}")


def check_greedy(a):
    for seed in (2, 3, 4):
        ids = prompt(5 + 7 * seed, seed)
        gen = ["generate", "--prompt-ids", ids, "-n", "48", "--temperature", "0", "--ignore-eos", "--print-ids"]
        cpu = run(a, gen + ["--device", "cpu"]).split()
        vk = run(a, gen + ["--device", "vulkan"]).split()
        vk_eager = run(a, gen + ["--device", "vulkan", "--eager"]).split()
        if len(cpu) != 48 or cpu != vk or vk != vk_eager:
            sys.exit(f"FAIL: greedy ids differ (prompt {seed})\ncpu:          {cpu}\nvulkan:       {vk}\n"
                     f"vulkan eager: {vk_eager}")
    print("ok greedy: 3 prompts x 48 tokens identical on cpu, vulkan captured and vulkan eager")


def check_chunks(a):
    ids = prompt(48, 5)
    outs = {}
    for step in (2048, 11, 1):
        outs[step] = run(a, ["logits", "--device", "vulkan", "--max-num-batched-tokens", str(step),
                             "--prompt-ids", ids, "--top", "20"]).splitlines()
    if len(outs[2048]) != 48:
        sys.exit(f"FAIL: expected 48 positions, got {len(outs[2048])}")
    for step in (11, 1):
        for pos, (whole, part) in enumerate(zip(outs[2048], outs[step])):
            if whole != part:
                sys.exit(f"FAIL: position {pos}: one step {whole}\nsteps of {step}: {part}")
    print("ok chunks: 48 positions, top-20 logits identical in one step, steps of 11 and of 1")


def check_bad_device(a):
    cases = [(["--device", "gpu"], {}, 2, "--device: expected cpu, vulkan or vulkan:N, got 'gpu'"),
             (["--device", "vulkan:99"], {}, 2, "device 99 requested but there are"),
             (["--device", "vulkan"], {"ENCORE_VK_DEVICE": "x"}, 2, "ENCORE_VK_DEVICE=x: expected a device index"),
             (["--device", "vulkan", "--kv-blocks", "16000000"], {}, 1,
              "vulkan: out of device memory: 'kv cache K' needs 131072000000 bytes (125000.0 MiB) but device")]
    for args, env, rc, msg in cases:
        p = subprocess.run([a.encore, "generate", "-m", a.model, "--prompt-ids", "1 2", "-n", "2"] + SMALL_KV + args,
                           capture_output=True, text=True, timeout=120, env=dict(os.environ, **env))
        if p.returncode != rc or msg not in p.stderr:
            sys.exit(f"FAIL: {args} {env}: exit {p.returncode} (want {rc}), stderr {p.stderr.strip()!r}")
    print(f"ok bad_device: {len(cases)} bad device choices and sizes refused with their reason")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encore", required=True)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--quantize", help="both devices: --quantize T")
    ap.add_argument("--gguf", metavar="SPEC", help="run on a GGUF file of these block types (gguf_weights.py)")
    ap.add_argument("--tol-rel", type=float, default=TOL_REL, help=f"logit tolerance (default {TOL_REL})")
    ap.add_argument("check", choices=["logits", "greedy", "chunks", "bad_device"])
    a = ap.parse_args()
    if a.gguf and a.quantize:
        ap.error("--gguf and --quantize exclude each other")
    check = {"logits": check_logits, "greedy": check_greedy, "chunks": check_chunks,
             "bad_device": check_bad_device}[a.check]
    if not a.gguf:
        check(a)
        return
    tmp = tempfile.mkdtemp(prefix="encore-vk-gguf-")
    try:
        path = os.path.join(tmp, "model.gguf")
        try:
            types = gguf_weights.make_mixed(a.encore, a.model, a.gguf, path)
        except (RuntimeError, ValueError) as e:
            sys.exit(f"FAIL: --gguf {a.gguf}: {e}")
        print(f"  {a.gguf}: block types {' '.join(types)}")
        a.model = path
        check(a)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
