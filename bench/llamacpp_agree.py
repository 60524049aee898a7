#!/usr/bin/env python3
"""llamacpp_agree.py - encore and llama.cpp on the same GGUF file and the same
prompt token ids: do they pick the same greedy tokens, and how far apart are
their logits?

    bench/llamacpp_agree.py --encore build/encore --llama BIN/llamacpp_logits \
        [--prompt-ids "I I ..."]... [--gen 32] [--threads 2] FILE.gguf...

For each file and prompt (no BOS, no chat template: the ids go in as given):
  greedy    how many of the first GEN greedy tokens agree, counted up to the
            first difference (a near-tie decides the rest after it);
  forced    teacher-forced on prompt + llama.cpp's continuation: at how many
            of those GEN positions encore's argmax is llama.cpp's token;
  top-1     positions of the prompt whose top token is the same;
  max |d|   the largest logit difference over the ids both engines list in
            their top 10, and the logits' spread (top-1 minus top-10) beside it.
Both engines run with an f32 KV cache. --show prints the top 5 of both at the
prompt's last position. Exit status 1 when an engine fails on a file.
"""

import argparse
import json
import subprocess
import sys

# "Hello, my name is", "The quick brown fox jumps over the lazy dog." and a chat
# turn in Qwen3's template ("What is 2+2?"), in the Qwen3 vocabulary.
DEFAULT_PROMPTS = ["9707 11 847 829 374", "785 3974 13876 38835 34208 916 279 15678 5562 13",
                   "151644 872 198 3838 374 220 17 10 17 30 151645 198 151644 77091 198"]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (cmd[0], p.returncode, p.stderr.strip()[-600:]))
    return p.stdout


def parse_tops(text):
    """{pos: [(id, logit), ...]} from `encore logits` / llamacpp_logits lines."""
    tops, greedy = {}, None
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        if "greedy" in j:
            greedy = j["greedy"]
        else:
            tops[j["pos"]] = [(int(i), float(v)) for i, v in j["top"]]
    return tops, greedy


def encore_logits(a, model, ids):
    out = run([a.encore, "logits", "-m", model, "--prompt-ids", " ".join(map(str, ids)),
               "--top", "10", "-t", str(a.threads), "--kv-cache-dtype", "f32"])
    return parse_tops(out)[0]


def encore_greedy(a, model, ids):
    out = run([a.encore, "generate", "-m", model, "--prompt-ids", " ".join(map(str, ids)),
               "-n", str(a.gen), "--temperature", "0", "--ignore-eos", "--print-ids",
               "-t", str(a.threads), "--kv-cache-dtype", "f32"])
    return [int(x) for x in out.strip().splitlines()[-1].split()]


def llama_run(a, model, ids):
    out = run([a.llama, model, " ".join(map(str, ids)), str(a.gen), "10", str(a.threads), "f32"])
    return parse_tops(out)


def leading_agreement(x, y):
    n = 0
    while n < min(len(x), len(y)) and x[n] == y[n]:
        n += 1
    return n


def logit_gap(te, tl):
    """Max |difference| over ids in both top lists, and llama.cpp's spread."""
    worst, spread = 0.0, 0.0
    for p in tl:
        de, dl = dict(te[p]), dict(tl[p])
        for i in set(de) & set(dl):
            worst = max(worst, abs(de[i] - dl[i]))
        spread = max(spread, tl[p][0][1] - tl[p][-1][1])
    return worst, spread


def compare(a, model, ids):
    tl, gl = llama_run(a, model, ids)
    te = encore_logits(a, model, ids)
    ge = encore_greedy(a, model, ids)
    forced = encore_logits(a, model, ids + gl[:-1])
    n = len(ids)
    forced_ok = sum(forced[n - 1 + g][0][0] == gl[g] for g in range(len(gl)))
    top1 = sum(te[p][0][0] == tl[p][0][0] for p in range(n))
    worst, spread = logit_gap(te, tl)
    row = "%-28s %-22s %3d/%-3d %3d/%-3d %3d/%-3d %8.4f %8.3f" % (
        model.rsplit("/", 1)[-1][:28], (" ".join(map(str, ids)))[:22],
        leading_agreement(ge, gl), len(gl), forced_ok, len(gl), top1, n, worst, spread)
    print(row, flush=True)
    if a.show:
        for name, t in (("encore", te), ("llama.cpp", tl)):
            print("    %-9s pos %d: %s" % (name, n - 1, " ".join(
                "%d:%.4f" % (i, v) for i, v in t[n - 1][:5])))
    return forced_ok == len(gl)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--encore", required=True)
    ap.add_argument("--llama", required=True, help="the llamacpp_logits program")
    ap.add_argument("--prompt-ids", action="append", dest="prompts")
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--show", action="store_true")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    prompts = [[int(x) for x in p.replace(",", " ").split()] for p in (a.prompts or DEFAULT_PROMPTS)]
    print("%-28s %-22s %-7s %-7s %-7s %8s %8s" % ("file", "prompt", "greedy", "forced", "top-1",
                                                  "max |d|", "spread"))
    failed = 0
    for f in a.files:
        for ids in prompts:
            try:
                compare(a, f, ids)
            except RuntimeError as e:
                print("%-28s %s" % (f.rsplit("/", 1)[-1][:28], e), flush=True)
                failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main())
