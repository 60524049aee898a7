#!/usr/bin/env python3
"""sampler_cli.py - the sampling options end to end through the `encore` CLI.

Each check is one ctest test: `sampler_cli.py --encore BIN --models DIR CHECK`.

  modes      greedy requests with penalties, logprobs or unmet min_tokens, and
             then those beside top-k/top-p/min-p sampling and plain greedy, give
             the same lines (tokens and logprobs) with --eager, --decode-steps 1,
             the default K and K = 16; penalised, sampled, logprobs and
             min_tokens requests run multi-step replays (the CPU samples on the
             device)
  seed       a seeded request gives the same tokens alone, among others and
             arriving later; another seed gives other tokens; generate
             without --seed draws a new seed each run
  logprobs   generate --logprobs N against a NumPy log-softmax (double) of the
             full logits `encore logits` prints for the same tokens
  logit_bias --logit-bias: -100 turns greedy's first token away, two entries
             adding up to +100 force an id every time, whose logprob stays the
             raw log-softmax of `encore logits`; batch's logit_bias field gives
             the same tokens (a repeated id in its JSON: the last bias)
  bad_args   every option and batch field out of range: exit 2 (generate) or 1
             (batch) with a message naming it; --help documents every option
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

MODEL = "tiny-gqa2-hd64-bf16"


def run(args, check=True, stdin=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, input=stdin)
    if check and p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def prompt(n, seed):
    return [(seed * 37 + i * 13) % 480 + 3 for i in range(n)]


def batch(a, requests, extra=()):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in requests:
            f.write(json.dumps(r) + "\n")
    try:
        p = run([a.encore, "batch", "-m", a.model, "--requests", f.name, "--stats"] + list(extra))
    finally:
        os.unlink(f.name)
    return [json.loads(line) for line in p.stdout.splitlines()], json.loads(p.stderr.strip().splitlines()[-1])


def req(n, seed, max_tokens=30, **kw):
    r = {"prompt_ids": prompt(n, seed), "max_tokens": max_tokens, "ignore_eos": True, "seed": seed}
    r.update(kw)
    return r


def same_in_all_modes(a, requests):
    runs = {name: batch(a, requests, extra) for name, extra in
            [("eager", ["--eager"]), ("single", ["--decode-steps", "1"]), ("default", []),
             ("k16", ["--decode-steps", "16"])]}
    base = runs["eager"][0]
    for name, (out, st) in runs.items():
        if out != base:
            for x, y in zip(base, out):
                if x != y:
                    sys.exit(f"FAIL: {name} differs from eager on request {x['index']}:\n{x}\n{y}")
    single = runs["single"][1]
    if single["replays"] + single["multi_step_round_trips"] == 0:
        sys.exit(f"FAIL: the single-step run never replayed: {runs['single'][1]}")
    return base


def check_modes(a):
    reqs = [req(6, 1, repetition_penalty=1.4),
            req(9, 2, presence_penalty=0.8, frequency_penalty=0.5, logprobs=3),
            req(5, 3, min_tokens=20, ignore_eos=False),
            req(7, 4, temperature=0.9, top_k=20, top_p=0.9, min_p=0.05, logprobs=True, top_logprobs=2),
            req(4, 5, temperature=1.2, repetition_penalty=0.8, top_p=0.7),
            req(8, 6),
            req(3, 7, logprobs=0)]
    # greedy only: what the device's argmax would get wrong if it ran these
    greedy = [req(6, 1, repetition_penalty=1.4), req(9, 2, presence_penalty=0.8, frequency_penalty=0.5),
              req(5, 8, logprobs=4), req(7, 9, min_tokens=25, ignore_eos=False)]
    for group in (greedy, reqs):
        base = same_in_all_modes(a, group)
    if any("logprobs" in base[i] for i in (0, 2, 4, 5)) or any(len(base[i]["logprobs"]) != 30 for i in (1, 3, 6)):
        sys.exit("FAIL: logprobs where not asked for, or missing")
    if [len(base[i]["logprobs"][0]["top"]) for i in (1, 3, 6)] != [3, 2, 0]:
        sys.exit("FAIL: wrong number of alternatives")
    print(f"ok: {len(greedy)} greedy and {len(reqs)} mixed requests identical in 4 decode modes")

    # the CPU samples on the device: penalised, sampled, logprobs and min_tokens
    # requests run multi-step like plain greedy ones
    pen = [req(6 + i, 10 + i, repetition_penalty=1.2) for i in range(3)]
    sampled = [req(6 + i, 10 + i, temperature=0.8, top_p=0.95, frequency_penalty=0.3) for i in range(3)]
    plain = [req(6 + i, 10 + i) for i in range(3)]
    lp = [req(6 + i, 10 + i, logprobs=2) for i in range(3)]
    trips = {name: batch(a, group)[1]["multi_step_round_trips"]
             for name, group in (("penalised", pen), ("sampled", sampled), ("plain", plain), ("logprobs", lp))}
    if min(trips.values()) == 0:
        sys.exit(f"FAIL: every kind of request should run multi-step replays: {trips}")
    out_min, st_min = batch(a, [req(6, 10, min_tokens=12, max_tokens=40, ignore_eos=False)])
    if st_min["multi_step_round_trips"] <= (40 - 12) // 4 + 1:
        sys.exit(f"FAIL: min_tokens 12 of 40: expected multi-step from the first decode step: {st_min}")
    if len(out_min[0]["ids"]) < 12:
        sys.exit(f"FAIL: min_tokens 12: only {len(out_min[0]['ids'])} tokens")
    print(f"ok: multi-step round trips {trips}; min_tokens multi-step from the start: {st_min}")

    # min_tokens holds off an EOS under ignore_eos too (vLLM masks all_stop_token_ids), here one
    # the logit bias makes certain: not before token 5, then every token
    cfg = json.load(open(os.path.join(a.model, "config.json")))
    eos = cfg["eos_token_id"] if isinstance(cfg["eos_token_id"], int) else cfg["eos_token_id"][0]
    forced, _ = batch(a, [req(6, 11, max_tokens=8, min_tokens=5, logit_bias={str(eos): 100})])
    if forced[0]["ids"] != [x for x in forced[0]["ids"][:5] if x != eos] + [eos] * 3:
        sys.exit(f"FAIL: min_tokens 5 with ignore_eos and EOS {eos} forced: {forced[0]['ids']}")
    print(f"ok: min_tokens 5 under ignore_eos: no EOS {eos} before token 5, then {forced[0]['ids'][5:]}")


def check_seed(a):
    target = req(6, 42, temperature=1.0, top_p=0.95, max_tokens=40)
    alone, _ = batch(a, [target])
    others = [req(5 + i, 100 + i, temperature=0.7, max_tokens=25 + i) for i in range(5)]
    crowd, _ = batch(a, others[:2] + [target] + others[2:])
    late, _ = batch(a, others + [dict(target, arrive_step=7)])
    other_seed, _ = batch(a, [dict(target, seed=43)])
    ids = alone[0]["ids"]
    if crowd[2]["ids"] != ids or late[5]["ids"] != ids:
        sys.exit(f"FAIL: a seeded request changed with its neighbours:\n{ids}\n{crowd[2]['ids']}\n{late[5]['ids']}")
    if other_seed[0]["ids"] == ids:
        sys.exit("FAIL: seeds 42 and 43 gave the same 40 tokens")
    unseeded = [run([a.encore, "generate", "-m", a.model, "--prompt-ids", "5 6 7", "-n", "16", "--temperature", "1",
                     "--ignore-eos", "--print-ids", "-t", "1"]).stdout for _ in range(3)]
    if len(set(unseeded)) != 3:
        sys.exit(f"FAIL: generate without --seed repeated its tokens in back-to-back runs:\n{unseeded}")
    print("ok: seed 42 gives the same 40 tokens alone, among 5 others and arriving at step 7; seed 43 others; "
          "three runs without --seed three different continuations")


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def check_logprobs(a):
    p = prompt(7, 9)
    out = run([a.encore, "generate", "-m", a.model, "--prompt-ids", " ".join(map(str, p)), "-n", "12",
               "--temperature", "0.8", "--top-k", "50", "--repetition-penalty", "1.3", "--seed", "4",
               "--print-ids", "--logprobs", "5", "--ignore-eos"]).stdout.splitlines()
    ids = [int(x) for x in out[0].split()]
    lps = [json.loads(line) for line in out[1:]]
    if len(ids) != 12 or len(lps) != 12 or [lp["id"] for lp in lps] != ids:
        sys.exit(f"FAIL: generate --logprobs printed {out}")
    rows = run([a.encore, "logits", "-m", a.model, "--prompt-ids", " ".join(map(str, p + ids[:-1])),
                "--top", "100000"]).stdout.splitlines()
    worst = 0.0
    for j, lp in enumerate(lps):
        row = json.loads(rows[len(p) - 1 + j])
        v = max(i for i, _ in row["top"]) + 1
        logits = np.full(v, -np.inf)
        for i, x in row["top"]:
            logits[i] = x
        ref = log_softmax(logits)
        order = sorted(range(v), key=lambda i: (-logits[i], i))[:5]
        if [t[0] for t in lp["top"]] != order:
            sys.exit(f"FAIL: token {j}: alternatives {lp['top']} but the logits rank {order}")
        errs = [abs(lp["logprob"] - ref[lp["id"]])] + [abs(x - ref[i]) for i, x in lp["top"]]
        worst = max(worst, max(errs))
    if worst > 1e-5:
        sys.exit(f"FAIL: logprobs differ from the log-softmax of the logits by {worst}")
    print(f"ok: 12 tokens' logprobs and 5 alternatives within {worst:.2g} of NumPy's log-softmax")


def check_logit_bias(a):
    p = " ".join(map(str, prompt(6, 3)))
    g = [a.encore, "generate", "-m", a.model, "--prompt-ids", p, "-n", "8", "--temperature", "0", "--print-ids",
         "--ignore-eos"]
    plain = [int(x) for x in run(g).stdout.split()]
    banned = [int(x) for x in run(g + ["--logit-bias", f"{plain[0]}=-100"]).stdout.split()]
    if len(banned) != 8 or banned[0] == plain[0]:
        sys.exit(f"FAIL: --logit-bias {plain[0]}=-100 still begins with it: {banned}")
    out = run(g + ["--logit-bias", "7=60", "--logit-bias", "7=40", "--logprobs", "0"]).stdout.splitlines()
    forced = [int(x) for x in out[0].split()]
    if forced != [7] * 8:
        sys.exit(f"FAIL: --logit-bias 7=60 and 7=40 (adding up to 100) gave {forced}, not id 7 every time")
    rows = run([a.encore, "logits", "-m", a.model, "--prompt-ids", p, "--top", "100000"]).stdout.splitlines()
    row = json.loads(rows[-1])
    logits = np.full(max(i for i, _ in row["top"]) + 1, -np.inf)
    for i, x in row["top"]:
        logits[i] = x
    raw = log_softmax(logits)[7]
    got = json.loads(out[1])["logprob"]
    if abs(got - raw) > 1e-5:
        sys.exit(f"FAIL: the forced token's logprob {got} is not its raw log-softmax {raw}")
    print(f"ok: a -100 bias turns the first token from {plain[0]} to {banned[0]}; +60 +40 on id 7 gives it "
          f"8 times, its logprob the raw model's ({got:.4f})")
    line = {"prompt_ids": prompt(6, 3), "max_tokens": 8, "ignore_eos": True}
    repeated = json.dumps(line)[:-1] + ', "logit_bias": {"7": -100, "7": 100}}'  # the last of an id wins
    lines = [json.dumps(dict(line, logit_bias={str(plain[0]): -100})), repeated, json.dumps(line)]
    out = run([a.encore, "batch", "-m", a.model, "--requests", "-"],
              stdin="".join(x + "\n" for x in lines)).stdout.splitlines()
    got = [json.loads(x)["ids"] for x in out]
    if got != [banned, [7] * 8, plain]:
        sys.exit(f"FAIL: batch with logit_bias gave {got}, generate gave {[banned, [7] * 8, plain]}")
    print("ok: batch's logit_bias gives generate's tokens (a repeated id: the last bias)")


def expect_fail(args, code, *needles, stdin=None):
    p = run(args, check=False, stdin=stdin)
    err = p.stderr.strip()
    if p.returncode != code or any(n not in err for n in needles):
        sys.exit(f"FAIL: {' '.join(args)}: exit {p.returncode} (expected {code}), stderr {err!r} lacks {needles}")
    print(f"ok exit {code}: {err.splitlines()[-1][:140]}")


def check_bad_args(a):
    g = [a.encore, "generate", "-m", a.model, "--prompt-ids", "1 2 3"]
    for opt, val in [("--top-k", "-2"), ("--top-p", "1.5"), ("--top-p", "-0.1"), ("--top-p", "0"), ("--min-p", "2"),
                     ("--repetition-penalty", "-1"), ("--repetition-penalty", "0"), ("--presence-penalty", "3"), ("--frequency-penalty", "-2.5"),
                     ("--min-tokens", "-1"), ("--logprobs", "21"), ("--top-k", "x"), ("--logit-bias", "5=101"),
                     ("--logit-bias", "x=1"), ("--logit-bias", "5")]:
        expect_fail(g + [opt, val], 2, opt)
    expect_fail(g + ["--top-p", "1.5"], 2, "(0, 1]")  # the range as it is: 0 is not in it
    expect_fail(g + ["-n", "4", "--min-tokens", "5"], 2, "min_tokens")
    expect_fail(g + ["--logit-bias", "99999999=1"], 2, "logit_bias", "outside the vocabulary")
    expect_fail([a.encore, "chat", "-m", a.model, "--logprobs", "2"], 2, "--logprobs", stdin="")
    expect_fail([a.encore, "chat", "-m", a.model, "-n", "8", "--min-tokens", "9"], 2, "--min-tokens", stdin="")
    for field, val, needle in [("top_p", 0, None), ("top_p", 1.2, "top_p"), ("top_k", -3, "top_k"),
                               ("min_p", -0.5, "min_p"), ("repetition_penalty", -2, "repetition_penalty"),
                               ("presence_penalty", 2.1, "presence_penalty"),
                               ("frequency_penalty", -9, "frequency_penalty"), ("min_tokens", 99, "min_tokens"),
                               ("top_logprobs", 4, "needs logprobs"), ("logprobs", 30, "logprobs"),
                               ("logprobs", "yes", "logprobs"), ("max_tokens", 2.7, "whole number"),
                               ("seed", 1.5, "whole number"), ("top_k", 2.5, "whole number"),
                               ("ignore_eos", "yes", "ignore_eos"), ("prompt", "hi", "not both")]:
        line = json.dumps({"prompt_ids": [1, 2, 3], "max_tokens": 8, field: val}) + "\n"
        if needle is None:  # 0 reads as "off": accepted
            run([a.encore, "batch", "-m", a.model, "--requests", "-"], stdin=line)
            continue
        expect_fail([a.encore, "batch", "-m", a.model, "--requests", "-"], 1, needle, stdin=line)
    for bias, needle in [({"x": 1}, "logit_bias"), ({"5": "1"}, "logit_bias"), ([5], "logit_bias"),
                         ({"5": 101}, "[-100, 100]"), ({"99999999": 1}, "outside the vocabulary")]:
        line = json.dumps({"prompt_ids": [1, 2, 3], "max_tokens": 8, "logit_bias": bias}) + "\n"
        expect_fail([a.encore, "batch", "-m", a.model, "--requests", "-"], 1, needle, stdin=line)
    opts = ["--top-k", "--top-p", "--min-p", "--repetition-penalty", "--presence-penalty", "--frequency-penalty",
            "--min-tokens", "--logit-bias"]
    for cmd, extra in [("generate", ["--logprobs"]), ("chat", [])]:
        h = run([a.encore, cmd, "--help"]).stdout
        missing = [o for o in opts + extra if o not in h]
        if missing:
            sys.exit(f"FAIL: {cmd} --help lacks {missing}")
    h = run([a.encore, "batch", "--help"]).stdout
    fields = ["top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty",
              "min_tokens", "logprobs", "top_logprobs", "logit_bias"]
    if any(f not in h for f in fields):
        sys.exit(f"FAIL: batch --help lacks {[f for f in fields if f not in h]}")
    print("ok: --help documents every sampling option")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encore", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("check", choices=[n[len("check_"):] for n in globals() if n.startswith("check_")])
    a = ap.parse_args()
    a.model = os.path.join(a.models, MODEL)
    globals()["check_" + a.check](a)


if __name__ == "__main__":
    main()
