#!/usr/bin/env python3
"""capture_matrix.py - the replay-vs-eager matrix of the captured decode step.

Each scenario runs one `encore batch` five ways: --eager (no capture),
captured single-step (--decode-steps 1), captured with --verify-capture, which
runs every replayed decode step eagerly as well and fails at the first logit
that is not bit-identical (naming the step, the request and the logit), and
captured multi-step decode with K = 4 (the default) and K = 16 steps per
replay. A scenario passes when all five give the same tokens, the verify
run found no difference, the single-step run really replayed (captures > 0,
replays > 0), and, where every request is greedy, the multi-step runs really
ran several steps per replay (every request: both backends sample on the
device, logprobs included; on Vulkan with ENCORE_VK_FLOAT64=0, where the
host samples, the greedy ones).
Stop conditions inside a multi-step round trip
(EOS, max_tokens) are honoured: the "eos_stops" scenario stops requests at
EOS after 15, 29 and 32 tokens. The "prefix_hits" scenario has requests
joining on cached prefix blocks (48 tokens, whole prompts at block
boundaries) while others decode: every run must really hit, and a sixth run
with --no-prefix-caching must give the same tokens.

Mutation check (done by hand when this test was written, and worth redoing
after any change to decode_slots.c): make decode__pad() or the slot's input
write skip the positions input after the first replay (e.g. write
IN_POSITIONS only when slot->state was SLOT_WARM); the scenarios go red with
"verify-capture: step ..., logit ... is ... replayed but ... eager".

With --quantize TYPE every run quantizes the weights at load (the same
matrix over the integer kernels of block-quantized weights); with
--bf16-activations every run multiplies bf16 weights by bf16 activations
(exit 77, skipped, where the CPU cannot: tests/cpu_features.py).

usage: capture_matrix.py --encore BIN --models DIR [--model NAME] [--quantize TYPE]
                         [--bf16-activations] SCENARIO
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_features  # noqa: E402

MODEL = "tiny-gqa4-hd128-bf16"


def prompt(n, seed):
    return [(seed * 31 + i * 17) % 997 + 1 for i in range(n)]


def req(n_prompt, max_tokens, arrive=0, seed=1, **kw):
    r = {"prompt_ids": prompt(n_prompt, seed), "max_tokens": max_tokens, "arrive_step": arrive,
         "ignore_eos": True}
    r.update(kw)
    return r


def shared_req(n_shared, suffix, max_tokens, arrive, **kw):
    """A request whose prompt starts with the first n_shared tokens of one shared prefix."""
    r = req(0, max_tokens, arrive, **kw)
    r["prompt_ids"] = prompt(64, 50)[:n_shared] + prompt(suffix, 60 + arrive)
    return r


SCENARIOS = {
    # one request, 220 tokens: crosses 14 KV blocks on replayed steps
    "long": ([req(5, 220)], []),
    # a request joins after the batch-1 slot was captured and replayed many times
    "join_after_capture": ([req(8, 60), req(3, 30, arrive=25, seed=2)], []),
    # the batch grows 1 -> 3 -> 8 and shrinks back as requests finish
    "grow_shrink": ([req(4, 50)] + [req(6, 20 + 5 * i, arrive=5, seed=3 + i) for i in range(2)]
                    + [req(2 + i, 10 + 4 * i, arrive=12, seed=10 + i) for i in range(5)], []),
    # block boundaries crossed on replayed steps with 32-token blocks
    "block_crossing_32": ([req(30, 70), req(31, 70, seed=5), req(33, 40, seed=6)], ["--block-size", "32"]),
    # identical prompts (same positions), and very different lengths
    "same_and_different": ([req(12, 40, seed=7), req(12, 40, seed=7), req(1, 40, seed=8),
                            req(150, 20, seed=9)], []),
    # the KV pool runs out: requests wait and sequences are preempted
    "pool_exhaustion": ([req(20, 60, seed=11 + i, arrive=i) for i in range(5)],
                        ["--kv-blocks", "10", "--max-num-batched-tokens", "32"]),
    # EOS stops mid-round-trip (greedy continuations that end on EOS after 15,
    # 29 and 32 tokens), beside a request that runs on
    "eos_stops": ([req(6, 60, seed=26, ignore_eos=False), req(6, 60, seed=39, ignore_eos=False),
                   req(6, 60, seed=47, ignore_eos=False), req(10, 70, seed=3)], []),
    # prefix-cache hits: later requests read the first one's cached blocks
    # (48 tokens; whole prompts of 32 and 33 tokens serve 16 and 32) while it
    # and the others decode
    "prefix_hits": ([shared_req(48, 5, 50, 0), shared_req(48, 3, 40, 4), shared_req(32, 0, 30, 6),
                     shared_req(33, 0, 30, 8), shared_req(48, 9, 30, 10, temperature=0.8, seed=3)], []),
    # sampled requests replay the same as eager too
    "sampling": ([req(6, 40, seed=20, temperature=0.9), req(9, 30, seed=21, temperature=1.3),
                  req(4, 35, seed=22)], []),
    # sampled on the device in the multi-step runs: filters, penalties,
    # min_tokens, requests joining
    "sampling_filters": ([req(6, 40, seed=20, temperature=0.9, top_p=0.9),
                          req(9, 30, seed=21, temperature=1.3, top_k=20, repetition_penalty=1.1),
                          req(4, 35, seed=22),
                          req(7, 33, arrive=3, seed=23, temperature=0.7, presence_penalty=0.5,
                              frequency_penalty=0.3, min_p=0.05),
                          req(5, 30, arrive=6, seed=24, temperature=1.0, min_tokens=20, ignore_eos=False)], []),
    # and with logprobs, computed on the device in the multi-step runs
    "sampling_logprobs": ([req(6, 30, seed=30, temperature=0.8, logprobs=3),
                           req(8, 25, arrive=2, seed=31, repetition_penalty=1.2, logprobs=True),
                           req(5, 28, arrive=4, seed=32, temperature=1.1, top_p=0.95, logprobs=5)], []),
    # sampled requests preempted and recomputed in a small KV pool
    "sampling_preemption": ([req(20, 60, arrive=i, seed=11 + i, temperature=0.8, top_p=0.95, repetition_penalty=1.1)
                             for i in range(5)], ["--kv-blocks", "10", "--max-num-batched-tokens", "32"]),
}


def run_batch(a, requests, extra):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in requests:
            f.write(json.dumps(r) + "\n")
    try:
        p = subprocess.run([a.encore, "batch", "-m", os.path.join(a.models, a.model), "--requests", f.name,
                            "--stats"] + extra, capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(f.name)
    if p.returncode != 0:
        sys.exit(f"FAIL: encore batch {' '.join(extra)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout, json.loads(p.stderr.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encore", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--quantize", help="run every engine with --quantize TYPE")
    ap.add_argument("--model", default=MODEL, help=f"checkpoint under --models (default {MODEL})")
    ap.add_argument("--bf16-activations", action="store_true",
                    help="run every engine with --bf16-activations")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    a = ap.parse_args()
    requests, extra = SCENARIOS[a.scenario]
    if a.quantize:
        extra = extra + ["--quantize", a.quantize]
    if a.bf16_activations:
        if not cpu_features.cpu_has_bf16_dot():
            print("SKIP: --bf16-activations needs AVX512-BF16 and the avx512 kernels")
            sys.exit(77)
        extra = extra + ["--bf16-activations"]
    eager, st_eager = run_batch(a, requests, extra + ["--eager"])
    captured, st_cap = run_batch(a, requests, extra + ["--decode-steps", "1"])
    verified, st_ver = run_batch(a, requests, extra + ["--verify-capture"])
    multi = {k: run_batch(a, requests, extra + ["--decode-steps", str(k)]) for k in (4, 16)}
    if st_eager["captures"] or st_eager["replays"]:
        sys.exit(f"FAIL: --eager still captured: {st_eager}")
    # one step per replay: a single-step replay, or (when the device samples)
    # the recorded sampling graph with K = 1
    if st_cap["captures"] == 0 or st_cap["replays"] + st_cap["multi_step_round_trips"] == 0:
        sys.exit(f"FAIL: the captured run never replayed: {st_cap}")
    if st_ver["verified_steps"] != st_ver["replays"] or st_ver["replays"] == 0:
        sys.exit(f"FAIL: verify mode checked {st_ver['verified_steps']} of {st_ver['replays']} replays")
    # both backends sample every request on the device; Vulkan without
    # shaderFloat64 samples on the host, and there only greedy requests run
    # multi-step
    device_samples = not (os.environ.get("ENCORE_DEVICE", "cpu").startswith("vulkan") and
                          os.environ.get("ENCORE_VK_FLOAT64", "").lower() in ("0", "false", "no", "off"))
    greedy = all(r.get("temperature", 0) == 0 and not r.get("logprobs") for r in requests)
    for k, (out, st) in multi.items():
        if (device_samples or greedy) and st["multi_step_round_trips"] == 0:
            sys.exit(f"FAIL: --decode-steps {k} never ran a multi-step replay: {st}")
        if out != eager:
            sys.exit(f"FAIL: tokens differ with --decode-steps {k}\neager:\n{eager}\nmulti:\n{out}")
    if eager != captured or eager != verified:
        sys.exit(f"FAIL: tokens differ\neager:\n{eager}\ncaptured:\n{captured}")
    if a.scenario == "sampling_preemption" and any(st["preemptions"] == 0 for _, st in multi.values()):
        sys.exit(f"FAIL: the small pool never preempted: {[st for _, st in multi.values()]}")
    if a.scenario == "prefix_hits":
        runs = [st_eager, st_cap, st_ver] + [st for _, st in multi.values()]
        if any(st["prefix_cache_hits"] != 48 + 16 + 32 + 48 for st in runs):
            sys.exit(f"FAIL: expected 144 prefix-cache hit tokens in every run: {runs}")
        plain, st_plain = run_batch(a, requests, extra + ["--no-prefix-caching"])
        if plain != eager or st_plain["prefix_cache_hits"] != 0:
            sys.exit(f"FAIL: tokens differ without prefix caching\nwith:\n{eager}\nwithout:\n{plain}")
    print(f"ok {a.scenario}: {len(requests)} requests identical; single-step: {st_cap}; "
          f"K=16: {multi[16][1]}")


if __name__ == "__main__":
    main()
