#!/usr/bin/python3
"""test_reference.py - the engine against the independent NumPy reference.

Each ctest test runs one check on one model (tests/reference.cmake registers them):

  logits              teacher-forced logits of a 70-token prompt (5 KV blocks of 16):
                      every engine top-K logit vs the reference's logit for that id.
  greedy              40 greedy tokens from a 20-token prompt: identical ids.
  batch               5 concurrent requests (prompts of 3..60 tokens, different arrival
                      steps) through `encore batch`: each equals the reference's greedy ids.
  invariance-batch    engine vs engine, bit-exact: each of 8 requests alone vs all 8
                      joining at different steps; `generate` vs `batch` alone.
  invariance-threads  engine vs engine: `generate --threads 1` vs `--threads 2`.
  breakage            (no engine) the harness itself: the reference program passes every
                      check against the reference, and a deliberately broken reference
                      (qwen3_ref.py --break KIND) fails them.
  selfcheck           (no engine) the tools: bf16 rounding, safetensors write/read round
                      trip, incremental vs full forward, softmax sums, the f32-vs-f64
                      error that the tolerance is derived from, bad checkpoints refused.

Tolerance (check `logits`). The engine computes in float32 from the same bf16/f16/f32
weights (converted exactly), the reference in float64. Running the reference itself in
float32 (`selfcheck` measures it) moves the logits of the tiny models by at most ~4e-5,
i.e. ~3e-6 of the largest |logit| of a row (logits here have std ~3, max ~15). A bug
that matters moves them by far more: skipping q_norm, a wrong RoPE pairing, a wrong
GQA head mapping or a stale KV block changes logits by 0.1 to several units (`breakage`
shows this). We allow
        tol = TOL_REL * max(1, max_v |ref_logit[v]|)   per position,  TOL_REL = 2e-4,
about 3e-3 absolute: ~70x the float32 rounding we measured (room for other summation
orders, fused multiply-adds and approximate exp), and ~70x below the smallest real
mistake we measured (changing one token 50 positions back moves the last logits by
>= 0.2; the deliberate breaks move them by 1 to 25). Not caught at this tolerance:
rms_norm_eps off by 10x (~1e-3), which the config parser's own tests must cover. Consequences used below: if every engine logit is within tol, the
engine's top-1 can differ from the reference's only when the reference's best two
logits are within 2*tol; and an id missing from the engine's top-K must have a
reference logit <= the engine's K-th logit + tol.

Quantized weights (--quantize Q8_0|Q4_0). The engine loads the checkpoint with
`--quantize`, the reference runs on the same weights quantized and dequantized by NumPy
(tests/reference/gguf_quants.py, ggml's reference quantizers; test_quant_numpy checks
they give quant.c's bytes) with every matmul's activations rounded through Q8_0 blocks,
as the CPU kernels compute. Positions then agree to ~1e-6 until one activation lands
within float32 rounding of a rounding boundary: engine (f32) and reference (f64) round
it to neighbouring 8-bit levels, and these random tiny models amplify one such flip to
~0.1-0.3 in the logits (perturbing the reference's activations by 1e-6 moves them as
much). quant.cmake therefore runs `logits` at --tol-rel 8e-2 (~1.1 absolute; measured
worst 3.4e-2 with the AVX2 and the portable kernels, whose flips differ), still far
below a broken block format (a swapped Q4_0 nibble order moved logits by 1.9 x max|logit|,
23x this tolerance); the bit-exact checks for quantized weights
are the engine-vs-engine ones (invariance-*, capture_matrix.py --quantize).
A MoE checkpoint's experts are quantized the same way (its router stays float, its matmul
on float activations); measured at 8e-2 on tiny-moe-e8k2-bf16: worst 0.82 of the tolerance
(Q8_0; flips through two sparse layers) and 0.19 (Q4_0), the same with both kernel ISAs.

Quantized weights on Vulkan (--f32-activations with --quantize or --gguf). The shaders
multiply float32 activations by the dequantized weights (shaders/matmul_q.comp), so the
reference does the same: the weights as above, no activation rounding. Nothing then flips
between 8-bit levels, and the default tolerance holds (measured in vulkan.cmake's tests).

GGUF weights (--gguf SPEC, tests/gguf_weights.py). The engine runs a qwen3moe file that
`encore quantize` writes with each tensor in the type SPEC names (e.g. Q4_K with Q6_K down
experts, as llama.cpp's Q4_K_M files); the reference takes the file's block-typed tensors
dequantized by NumPy and rounds each matmul's activations through the 8-bit blocks of that
tensor's type (Q8_0, or Q8_K for the K types). Same tolerance and reasoning as above;
measured on tiny-moe-e4k2-d256-bf16: worst 0.08 (Q4_K + Q6_K down), 0.18 (Q5_K with
Q8_0 gate and Q4_0 up experts), 0.52 (Q6_K) of 8e-2; reading the down experts as Q4_K
blocks when they are Q6_K fails it.

Greedy checks must be exact, so the prompts are picked (deterministically, by a seeded
search) such that along the reference's greedy path the best logit leads the second by
more than 2*tol at every step and no stop token appears: there, any engine within the
tolerance must choose the same ids, and a difference is a bug, not rounding.

Mutation check (item e of the plan). Break the forward on purpose and the checks fail:
skip q_norm in the engine (or run `qwen3_ref.py --break qnorm`) and `logits` reports
|dlogit| of order 1 at every position while `greedy` diverges within the first few
tokens; `breakage` runs exactly this against every --break kind of the reference
(qnorm, knorm, norm-after-rope, rope-interleaved, gqa-modulo, no-final-norm-weight) and
fails unless each is caught.

    test_reference.py logits --engine build/encore -m build/models/tiny-gqa2-hd64-bf16
    test_reference.py selfcheck -m build/models/tiny-gqa2-hd64-bf16
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import gguf_quants  # noqa: E402
import qwen3_ref as ref  # noqa: E402

sys.path.insert(0, HERE)
import cpu_features  # noqa: E402
import gguf_weights  # noqa: E402

REF_PROGRAM = os.path.join(HERE, "reference", "qwen3_ref.py")
GEN_PROGRAM = os.path.join(HERE, "..", "scripts", "gen_checkpoint.py")

TOL_REL = 2e-4
TOP_K = 8
CALL_TIMEOUT_S = 120


class CheckFailed(Exception):
    pass


def tol_of(scale, tol_rel):
    return tol_rel * max(1.0, scale)


# --- the things under test: the engine program, or the reference program ---------

def _run(cmd, what):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=CALL_TIMEOUT_S)
    except FileNotFoundError:
        raise CheckFailed(f"{what}: cannot run {cmd[0]}") from None
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"{what}: timed out after {CALL_TIMEOUT_S} s: {' '.join(cmd)}") from None
    if r.returncode != 0:
        raise CheckFailed(f"{what}: exit status {r.returncode}: {' '.join(cmd)}\n{r.stderr.strip()[-2000:]}")
    return r.stdout


def _json_lines(text, what):
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rows.append(json.loads(line))
        except ValueError as e:
            raise CheckFailed(f"{what}: output line is not JSON ({e}): {line[:200]}") from None
    return rows


def _ids_line(text, what):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    try:
        return [int(t) for t in lines[-1].split()]
    except ValueError:
        raise CheckFailed(f"{what}: expected ids on the last stdout line, got: {lines[-1][:200]}") from None


# With --bf16-activations the engine's logits must move from its f32-activation
# ones by more than this (relative to the largest |logit|): seen 1.1e-2 to
# 1.7e-1 on the tiny bf16 checkpoints, where f32 kernels of different orders
# agree within 1e-6. A flag that changed nothing fails here.
BF16_ACT_MIN_MOVE = 1e-3


def check_bf16_rounding_seen(sut_bf16, sut_f32, prompt, top=TOP_K):
    a, b = sut_bf16.logits(prompt, top), sut_f32.logits(prompt, top)
    move = 0.0
    for row_a, row_b in zip(a, b):
        scale = max(abs(v) for _, v in row_b)
        vb = dict(row_b)
        move = max([move] + [abs(v - vb[i]) / scale for i, v in row_a if i in vb])
    if move <= BF16_ACT_MIN_MOVE:
        return [f"--bf16-activations moved the logits by at most {move:.2e} of max |logit| "
                f"(<= {BF16_ACT_MIN_MOVE}): the flag seems to change nothing"], ""
    return [], f"the flag moved the logits by up to {move:.2e} of max |logit|"


def _parse_logits(rows, what):
    """[{"pos":P,"top":[[id,logit],...]}] -> list (by position) of [(id, logit)]."""
    out = []
    for i, row in enumerate(rows):
        if row.get("pos") != i or not isinstance(row.get("top"), list):
            raise CheckFailed(f"{what}: line {i} should be {{\"pos\":{i},\"top\":[...]}}, got {str(row)[:200]}")
        try:
            out.append([(int(a), float(b)) for a, b in row["top"]])
        except (TypeError, ValueError):
            raise CheckFailed(f"{what}: pos {i}: top is not a list of [id, logit]") from None
    return out


def quantize_model(model, name):
    """The reference model as `encore --quantize name` computes: every matrix
    (embedding, lm_head and a sparse layer's experts included) with its rows
    ([out, in]) quantized to `name` and dequantized, and every matmul's
    activations rounded through the 8-bit blocks the CPU kernels use; all in
    NumPy. Norms and a sparse layer's router stay as they are (the router's
    matmul runs on float activations)."""
    def rt(w_out_in):
        return gguf_quants.round_trip(name, w_out_in).astype(model.dtype)
    def rt_in_out(w_in_out):
        return np.ascontiguousarray(rt(w_in_out.T).T)
    tied = model.cfg["tie_word_embeddings"]
    for L in model.layers:
        for key in ("wq", "wk", "wv", "wo", "wg", "wu", "wd"):  # stored [in, out]
            if key in L:
                L[key] = rt_in_out(L[key])
        if "experts" in L:
            L["experts"] = [tuple(rt_in_out(w) for w in ex) for ex in L["experts"]]
    head = None if tied else rt(model.head_t.T)
    model.embed = rt(model.embed)
    model.head_t = np.ascontiguousarray((model.embed if tied else head).T)
    model.act_quant = lambda x, w: gguf_quants.act_round_trip(name, x)


def gguf_file(args, model, tmp_dirs):
    """--gguf: the mixed-type file (tests/gguf_weights.py) for the engine, and
    its dequantized weights in the reference model."""
    tmp = tempfile.mkdtemp(prefix="encore-ref-gguf-")
    tmp_dirs.append(tmp)
    path = os.path.join(tmp, "model.gguf")
    try:
        types = gguf_weights.make_mixed(args.engine, args.model, args.gguf, path)
        n = gguf_weights.use_gguf_weights(model, path)
    except (RuntimeError, ValueError) as e:
        raise CheckFailed(f"--gguf {args.gguf}: {e}") from None
    print(f"  {os.path.basename(path)}: {n} block-typed tensors, types {' '.join(types)}")
    return path


class EngineCLI:
    """The `encore` program: logits, generate, batch."""

    def __init__(self, binary, model_dir, threads=None, kv_cache_dtype="f32", quantize=None,
                 bf16_activations=False):
        self.binary, self.model_dir, self.threads = binary, model_dir, threads
        self.opts = ["--kv-cache-dtype", kv_cache_dtype]
        self.opts += ["--quantize", quantize] if quantize else []
        self.opts += ["--bf16-activations"] if bf16_activations else []
        self.name = "engine"

    def logits(self, ids, top):
        cmd = [self.binary, "logits", "-m", self.model_dir, "--prompt-ids", " ".join(map(str, ids)),
               "--top", str(top)] + self.opts
        return _parse_logits(_json_lines(_run(cmd, "encore logits"), "encore logits"), "encore logits")

    def generate(self, ids, n, threads=None):
        cmd = [self.binary, "generate", "-m", self.model_dir, "--prompt-ids", " ".join(map(str, ids)),
               "-n", str(n), "--temperature", "0", "--print-ids"] + self.opts
        threads = threads if threads is not None else self.threads
        if threads is not None:
            cmd += ["--threads", str(threads)]
        return _ids_line(_run(cmd, "encore generate"), "encore generate")

    def batch(self, requests):
        tmp = tempfile.mkdtemp(prefix="encore-ref-")
        try:
            path = os.path.join(tmp, "requests.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                for r in requests:
                    f.write(json.dumps(r) + "\n")
            cmd = [self.binary, "batch", "-m", self.model_dir, "--requests", path] + self.opts
            rows = _json_lines(_run(cmd, "encore batch"), "encore batch")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return _check_batch_rows(rows, len(requests), "encore batch")


def _check_batch_rows(rows, n, what):
    if len(rows) != n:
        raise CheckFailed(f"{what}: {len(rows)} output lines for {n} requests")
    for i, row in enumerate(rows):
        if row.get("index") != i:
            raise CheckFailed(f"{what}: line {i} has index {row.get('index')!r}, expected {i} (input order)")
        if not isinstance(row.get("ids"), list) or row.get("finish_reason") not in ("length", "stop"):
            raise CheckFailed(f"{what}: line {i} lacks ids or a finish_reason of length|stop: {str(row)[:200]}")
    return rows


class RefCLI:
    """The reference program (qwen3_ref.py), optionally broken on purpose; used to test
    this harness with the same interface as EngineCLI."""

    def __init__(self, model_dir, breaks=()):
        self.model_dir, self.breaks = model_dir, list(breaks)
        self.name = "reference" + "".join(f" --break {b}" for b in self.breaks)
        self.memo = {}  # (prompt, n) -> ids: the reference is deterministic; saves process starts

    def _cmd(self, sub, ids):
        cmd = [sys.executable, REF_PROGRAM, sub, "-m", self.model_dir, "--prompt-ids", " ".join(map(str, ids))]
        for b in self.breaks:
            cmd += ["--break", b]
        return cmd

    def logits(self, ids, top):
        out = _run(self._cmd("logits", ids) + ["--top", str(top)], "qwen3_ref logits")
        return _parse_logits(_json_lines(out, "qwen3_ref logits"), "qwen3_ref logits")

    def generate(self, ids, n, threads=None):
        key = (tuple(ids), n)
        if key not in self.memo:
            out = _run(self._cmd("greedy", ids) + ["-n", str(n), "--stop-at-eos"], "qwen3_ref greedy")
            self.memo[key] = _ids_line(out, "qwen3_ref greedy")
        return list(self.memo[key])

    def batch(self, requests):
        cfg = ref.load_config(self.model_dir)
        stops = set(cfg["eos_token_id"]) if isinstance(cfg.get("eos_token_id"), list) else {cfg.get("eos_token_id")}
        rows = []
        for i, r in enumerate(requests):
            ids = self.generate(r["prompt_ids"], r["max_tokens"])
            rows.append({"index": i, "ids": ids, "finish_reason": "stop" if ids and ids[-1] in stops else "length"})
        return rows


# --- prompts -------------------------------------------------------------------

def id_range(cfg):
    """Prompt ids: ordinary tokens only (below the real vocabulary's special tokens)."""
    return 2, min(cfg["vocab_size"], 151643)


def draw_prompt(rng, cfg, length):
    lo, hi = id_range(cfg)
    return [int(i) for i in rng.integers(lo, hi, length)]


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def safe_path(model, prompt, n, tol_rel):
    """The reference's greedy ids if the path is decisive (every step's lead > 2*tol, no
    stop token), else None. Returns (ids, smallest lead / tol)."""
    ids, margins, scales = ref.greedy_with_margins(model, prompt, n)
    if set(ids) & ref.stop_ids(model):
        return None, 0.0
    ratio = min(m / tol_of(s, tol_rel) for m, s in zip(margins, scales))
    return (ids if ratio > 2.0 else None), ratio


def pick_prompt(model, rng, length, n, tol_rel, tries=60):
    """A seeded search for a prompt whose greedy path is decisive (see the top comment)."""
    for _ in range(tries):
        prompt = draw_prompt(rng, model.cfg, length)
        ids, _ = safe_path(model, prompt, n, tol_rel)
        if ids is not None:
            return prompt, ids
    raise CheckFailed(f"no prompt of length {length} with a decisive {n}-token greedy path in {tries} tries")


def pick_eos_prompt(model, rng, length, n, tries=300):
    """A prompt whose greedy path reaches a stop token within n tokens (decisively), or None."""
    stops = ref.stop_ids(model)
    if not stops or model.cfg["vocab_size"] > 4096:
        return None  # one stop id among 151936: not findable by a short search
    for _ in range(tries):
        prompt = draw_prompt(rng, model.cfg, length)
        ids, margins, scales = ref.greedy_with_margins(model, prompt, n)
        hit = [j for j, t in enumerate(ids) if t in stops]
        if hit and min(m / tol_of(s, TOL_REL) for m, s in zip(margins[:hit[0] + 1], scales)) > 2.0:
            return prompt, ids[:hit[0] + 1]
    return None


# --- the checks (each returns a list of failure messages and a summary line) ----------

def check_logits(model, sut, prompt, top=TOP_K, tol_rel=TOL_REL):
    full = ref.forward_logits(model, prompt)
    got = sut.logits(prompt, top)
    fails, worst, V = [], 0.0, full.shape[1]
    if len(got) != len(prompt):
        return [f"{sut.name} printed {len(got)} positions for a prompt of {len(prompt)}"], ""
    for pos, (row, top_e) in enumerate(zip(full, got)):
        tol = tol_of(float(np.abs(row).max()), tol_rel)
        if len(top_e) != min(top, V):
            fails.append(f"pos {pos}: {len(top_e)} entries, expected {min(top, V)}")
            continue
        ids_e = [i for i, _ in top_e]
        vals_e = [v for _, v in top_e]
        if any(not 0 <= i < V for i in ids_e) or len(set(ids_e)) != len(ids_e):
            fails.append(f"pos {pos}: ids out of range or repeated: {ids_e}")
            continue
        if not all(np.isfinite(vals_e)) or any(a < b for a, b in zip(vals_e, vals_e[1:])):
            fails.append(f"pos {pos}: logits not finite or not in descending order: {vals_e}")
            continue
        for i, v in top_e:
            d = abs(v - row[i])
            worst = max(worst, d / tol)
            if d > tol:
                fails.append(f"pos {pos}: id {i}: engine {v:.6f} reference {row[i]:.6f} |d|={d:.2e} > tol {tol:.2e}")
        ref_top1 = int(np.argmax(row))
        if ids_e[0] != ref_top1 and row[ref_top1] - row[ids_e[0]] > 2 * tol:
            fails.append(f"pos {pos}: top-1 is {ids_e[0]} (ref logit {row[ids_e[0]]:.6f}), reference top-1 "
                         f"is {ref_top1} ({row[ref_top1]:.6f}), lead {row[ref_top1] - row[ids_e[0]]:.2e} > 2*tol")
        floor = vals_e[-1] + tol
        missing = [int(j) for j in np.nonzero(row > floor)[0] if int(j) not in ids_e]
        if missing:
            j = missing[0]
            fails.append(f"pos {pos}: id {j} (ref logit {row[j]:.6f}) is missing from the top-{top}, "
                         f"whose last logit is {vals_e[-1]:.6f}")
    return fails, f"{len(prompt)} positions, top-{top}, worst |d|/tol = {worst:.3f}"


def compare_ids(model, prompt, want, got, what):
    """Exact id comparison, with the reference's lead at the first difference."""
    if got == want:
        return []
    j = next((k for k, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    msg = f"{what}: differs at token {j}: reference {want[j:j + 8]} got {got[j:j + 8]} (lengths {len(want)} vs {len(got)})"
    if j < len(want) and j <= len(got):
        _, margins, scales = ref.greedy_with_margins(model, prompt, j + 1)
        msg += f"; reference lead there {margins[j]:.3e} (tol {tol_of(scales[j], TOL_REL):.1e})"
    return [msg]


def check_greedy(model, sut, tol_rel=TOL_REL):
    prompt, want = pick_prompt(model, rng_for("greedy"), 20, 40, tol_rel)
    got = sut.generate(prompt, 40)
    return compare_ids(model, prompt, want, got, f"{sut.name} generate"), "20-token prompt, 40 tokens"


BATCH_SHAPES = [  # (prompt length, max_tokens, arrive_step)
    (3, 24, 0), (60, 16, 0), (17, 20, 2), (33, 12, 5), (9, 24, 9)]


def check_batch(model, sut, tol_rel=TOL_REL):
    rng = rng_for("batch")
    reqs, wants = [], []
    for k, (n_prompt, n_gen, step) in enumerate(BATCH_SHAPES):
        picked = pick_eos_prompt(model, rng, n_prompt, n_gen) if k == 2 else None
        prompt, want = picked if picked else pick_prompt(model, rng, n_prompt, n_gen, tol_rel)
        reqs.append({"prompt_ids": prompt, "max_tokens": n_gen, "temperature": 0, "arrive_step": step})
        wants.append(want)
    rows = sut.batch(reqs)
    fails, stops = [], ref.stop_ids(model)
    for i, (r, want, row) in enumerate(zip(reqs, wants, rows)):
        got, reason = row["ids"], row["finish_reason"]
        if want and want[-1] in stops and len(want) < r["max_tokens"]:
            # ended by a stop token: accept the ids with or without it
            if got not in (want, want[:-1]) or reason != "stop":
                fails.append(f"request {i}: expected {want} (or without the final stop id) and "
                             f"finish_reason stop, got {got} {reason}")
            continue
        fails += compare_ids(model, r["prompt_ids"], want, got, f"request {i}")
        if reason != "length":
            fails.append(f"request {i}: finish_reason {reason}, expected length")
    n_stop = sum(1 for w in wants if w and w[-1] in stops)
    return fails, f"{len(reqs)} requests ({n_stop} ending with a stop token)"


INVARIANCE_SHAPES = [  # (prompt length, max_tokens, arrive_step); request 3 is the probe
    (5, 30, 0), (64, 10, 0), (2, 40, 1), (25, 30, 4), (40, 6, 2), (13, 24, 7), (31, 18, 12), (48, 12, 20)]


def check_invariance_batch(cfg, sut):
    rng = rng_for("invariance")
    reqs = [{"prompt_ids": draw_prompt(rng, cfg, n), "max_tokens": m, "temperature": 0, "arrive_step": s}
            for n, m, s in INVARIANCE_SHAPES]
    together = sut.batch(reqs)
    fails = []
    for i, r in enumerate(reqs):
        alone = sut.batch([dict(r, arrive_step=0)])[0]
        if alone["ids"] != together[i]["ids"] or alone["finish_reason"] != together[i]["finish_reason"]:
            fails.append(f"request {i}: alone {alone['ids']} {alone['finish_reason']}, among 8 "
                         f"{together[i]['ids']} {together[i]['finish_reason']}")
        if i == 3:
            gen = sut.generate(r["prompt_ids"], r["max_tokens"])
            if gen != alone["ids"]:
                fails.append(f"request 3: generate {gen} differs from batch alone {alone['ids']}")
    return fails, f"{len(reqs)} requests alone vs together; generate vs batch"


def check_invariance_threads(cfg, sut):
    rng = rng_for("threads")
    fails = []
    for n_prompt, n_gen in ((20, 40), (70, 24)):
        prompt = draw_prompt(rng, cfg, n_prompt)
        a, b = sut.generate(prompt, n_gen, threads=1), sut.generate(prompt, n_gen, threads=2)
        if a != b:
            fails.append(f"{n_prompt}-token prompt: --threads 1 {a} vs --threads 2 {b}")
    return fails, "2 prompts, --threads 1 vs 2"


# --- self-tests of the harness and the tools -----------------------------------------

def check_breakage(model, model_dir):
    """The harness passes the reference program and catches every broken variant."""
    fails = []
    good = RefCLI(model_dir)
    for name, (f, _) in (("logits", check_logits(model, good, draw_prompt(rng_for("logits"), model.cfg, 40))),
                         ("greedy", check_greedy(model, good)), ("batch", check_batch(model, good)),
                         ("invariance-batch", check_invariance_batch(model.cfg, good)),
                         ("invariance-threads", check_invariance_threads(model.cfg, good))):
        if f:
            fails.append(f"unbroken reference fails {name}: {f[0]}")
    c = model.cfg
    for brk in sorted(ref.BREAKS):
        if brk == "gqa-modulo" and c["num_key_value_heads"] in (1, c["num_attention_heads"]):
            continue  # h % KVH == h // (H/KVH) there
        if brk.startswith("moe-") and not c["num_experts"]:
            continue  # a dense model has no router
        if brk == "moe-no-renorm" and not c["norm_topk_prob"]:
            continue
        scaling = c.get("rope_scaling") or {}
        if brk == "rope-unscaled" and not scaling:
            continue  # plain RoPE is the unscaled one
        if brk == "yarn-no-attention-factor" and scaling.get("rope_type") != "yarn":
            continue
        bad = RefCLI(model_dir, [brk])
        f, _ = check_logits(model, bad, draw_prompt(rng_for("logits"), model.cfg, 40))
        status = f"{len(f)} mismatches" if f else "NOT DETECTED"
        if not f:
            fails.append(f"logits check does not detect --break {brk}")
        if brk == "qnorm":
            g, _ = check_greedy(model, bad)
            if not g:
                fails.append("greedy check does not detect --break qnorm")
            status += f"; greedy: {g[0] if g else 'NOT DETECTED'}"
        print(f"  --break {brk}: {status}")
    return fails, f"unbroken reference passes, {len(ref.BREAKS)} breakages checked"


def check_selfcheck(model_dir, tmp):
    sys.path.insert(0, os.path.dirname(os.path.abspath(GEN_PROGRAM)))
    import gen_checkpoint as gen
    fails = []
    # bf16: round to nearest even, NaN kept
    vals = np.array([1.0, 1.00390625, 1.01171875, 1.0 + 2 ** -8 + 2 ** -20, -2.0, 3.0e38, np.inf,
                     np.nan, 0.0, -0.0], dtype=np.float32)
    bits = gen.f32_to_bf16_bits(vals)
    want = [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC000, 0x7F62, 0x7F80, None, 0x0000, 0x8000]
    for v, b, w in zip(vals, bits, want):
        if w is None:
            if not (int(b) & 0x7F80) == 0x7F80 or not int(b) & 0x007F:
                fails.append(f"bf16({v}) = {int(b):#06x} is not a NaN")
        elif int(b) != w:
            fails.append(f"bf16({v!r}) = {int(b):#06x}, expected {w:#06x}")
    # safetensors round trip: every tensor read back equals the generator's values
    for preset in ("tiny-gqa1-hd64-f32", "tiny-gqa2-hd64-bf16", "tiny-gqa2-hd128-f16-sharded"):
        p = gen.PRESETS[preset]
        out = os.path.join(tmp, preset)
        gen.make_preset(preset, out)
        got = ref.read_checkpoint(out, np.float64)
        for idx, (name, shape, kind) in enumerate(gen.tensor_specs(p)):
            x = np.concatenate([c.reshape(-1) for c in gen.tensor_chunks(p, idx, name, shape, kind)])
            if p["dtype"] == "F16":
                x = x.astype(np.float16)
            elif p["dtype"] == "BF16":
                x = (gen.f32_to_bf16_bits(x).astype(np.uint32) << 16).view(np.float32)
            if name not in got or list(got[name].shape) != shape or not np.array_equal(got[name].reshape(-1), x):
                fails.append(f"{preset}: tensor {name} does not read back as written")
                break
        if p.get("shards"):
            with open(os.path.join(out, "model.safetensors.index.json"), encoding="utf-8") as f:
                total = json.load(f)["metadata"]["total_size"]
            if total != sum(a.size for a in got.values()) * 2:
                fails.append(f"{preset}: index total_size {total} is wrong")
        if gen.make_preset(preset, out):
            fails.append(f"{preset}: regenerated although the stamp matches")
    # the reference: incremental == full, probabilities sum to 1, float32 error vs tolerance
    model = ref.load_model(model_dir)
    prompt = draw_prompt(rng_for("selfcheck"), model.cfg, 70)
    full = ref.forward_logits(model, prompt)
    cache = ref.KVCache(model, len(prompt))
    parts = [ref.forward_step(model, cache, prompt[a:b]) for a, b in ((0, 17), (17, 18), (18, 50), (50, 70))]
    d_inc = float(np.abs(np.concatenate(parts) - full).max())
    if d_inc > 1e-10:
        fails.append(f"incremental vs full forward differ by {d_inc:.2e}")
    pr = np.exp(full - full.max(axis=1, keepdims=True))
    pr /= pr.sum(axis=1, keepdims=True)
    if np.abs(pr.sum(axis=1) - 1).max() > 1e-12 or not np.isfinite(full).all():
        fails.append("softmax of the logits does not sum to 1")
    if float(full.std(axis=1).mean()) < 1.0:
        fails.append(f"logits are not spread (std {full.std(axis=1).mean():.2f})")
    m32 = ref.load_model(model_dir, np.float32)
    d32 = np.abs(ref.forward_logits(m32, prompt).astype(np.float64) - full).max(axis=1)
    ratio = float((d32 / (TOL_REL * np.maximum(1.0, np.abs(full).max(axis=1)))).max())
    if ratio > 0.1:
        fails.append(f"float32 forward error is {ratio:.2f} of the tolerance (expected < 0.1): TOL_REL too tight")
    greedy_ids = ref.greedy(model, prompt[:20], 40)
    if len(set(greedy_ids)) < 10:
        fails.append(f"greedy continuation is degenerate: {greedy_ids}")
    # every deliberately broken checkpoint is refused by the reference loader
    for kind in gen.BAD_KINDS:
        d = os.path.join(tmp, "bad-" + kind)
        gen.make_bad(kind, d)
        try:
            ref.load_model(d)
            fails.append(f"bad checkpoint {kind} loads without an error")
        except ref.CheckpointError as e:
            print(f"  bad {kind}: {e}")
    return fails, (f"incremental vs full {d_inc:.1e}; float32 error {ratio:.4f} of tol; "
                   f"greedy distinct {len(set(greedy_ids))}/40")


# --- command line ---------------------------------------------------------------------

CHECKS = ["logits", "greedy", "batch", "invariance-batch", "invariance-threads", "breakage", "selfcheck"]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Compare the encore engine with the NumPy reference (see the top comment).")
    ap.add_argument("check", choices=CHECKS)
    ap.add_argument("-m", "--model", required=True, help="checkpoint directory")
    ap.add_argument("--engine", help="path of the encore program (checks that run the engine)")
    ap.add_argument("--threads", type=int, help="pass --threads T to `encore generate`")
    ap.add_argument("--kv-cache-dtype", choices=sorted(ref.KV_ROUND), default="f32",
                    help="the engine's KV cache dtype, whose rounding the reference then applies too (default f32)")
    ap.add_argument("--quantize", choices=sorted(gguf_quants.QUANTIZE) + ["Q4_K"],
                    help="engine: --quantize TYPE; reference: every matrix through NumPy's quantizer "
                         "and dequantizer of TYPE (tests/reference/gguf_quants.py; Q4_K: "
                         "engine-vs-engine checks only)")
    ap.add_argument("--gguf", metavar="SPEC",
                    help="engine: a GGUF file that `encore quantize` writes of the checkpoint, each "
                         "tensor in the type SPEC gives it (\"Q4_K,ffn_down_exps=Q6_K\": Q4_K but "
                         "the down experts; tests/gguf_weights.py); reference: the file's weights "
                         "dequantized by NumPy, activations through the types' 8-bit blocks")
    ap.add_argument("--f32-activations", action="store_true",
                    help="with --quantize or --gguf: the reference multiplies float activations by the "
                         "dequantized weights (as the Vulkan shaders do) instead of rounding them "
                         "through 8-bit blocks; with --bf16-activations, instead of rounding them "
                         "to bf16 (a check that the rounding is seen)")
    ap.add_argument("--bf16-activations", action="store_true",
                    help="engine: --bf16-activations (a checkpoint of bf16 matrices); reference: the "
                         "input of every matmul but the router's rounded to bf16. Exit 77 (skipped) "
                         "where the CPU has no AVX512-BF16 or ENCORE_CPU_ISA narrows the kernels")
    ap.add_argument("--tol-rel", type=float, default=TOL_REL, help=f"logit tolerance relative to max |logit| (default {TOL_REL})")
    args = ap.parse_args(argv)
    needs_engine = args.check not in ("breakage", "selfcheck")
    if needs_engine and not args.engine:
        ap.error(f"{args.check} needs --engine")
    if needs_engine and not os.access(args.engine, os.X_OK):
        print(f"FAIL {args.check}: engine program {args.engine} not found or not executable")
        return 1
    if args.gguf and args.quantize:
        ap.error("--gguf and --quantize exclude each other")
    if args.bf16_activations and not cpu_features.cpu_has_bf16_dot():
        print(f"SKIP {args.check}: --bf16-activations needs AVX512-BF16 and the avx512 kernels "
              f"(ENCORE_CPU_ISA={os.environ.get('ENCORE_CPU_ISA', '')!r})")
        return 77
    tmp_dirs = []
    try:
        if args.check in ("invariance-batch", "invariance-threads"):
            cfg = ref.load_config(args.model)
            sut = EngineCLI(args.engine, args.model, args.threads, args.kv_cache_dtype,
                            args.quantize.lower() if args.quantize else None, args.bf16_activations)
            fn = check_invariance_batch if args.check == "invariance-batch" else check_invariance_threads
            fails, summary = fn(cfg, sut)
        elif args.check == "selfcheck":
            tmp = tempfile.mkdtemp(prefix="encore-selfcheck-")
            try:
                fails, summary = check_selfcheck(args.model, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        else:
            model = ref.load_model(args.model)
            model.kv_cache_dtype = args.kv_cache_dtype
            if args.quantize not in (None, *gguf_quants.QUANTIZE):
                raise CheckFailed(f"--quantize {args.quantize}: only the engine-vs-engine checks "
                                  "(invariance-*) run it; the reference has no quantizer for it")
            if args.quantize:
                quantize_model(model, args.quantize)
            engine_model = args.model
            if args.gguf and args.check != "breakage":
                engine_model = gguf_file(args, model, tmp_dirs)
            if args.bf16_activations:
                model.act_quant = lambda x, w: ref.round_to_bf16(x)
            if args.f32_activations:
                model.act_quant = None
            if args.check == "breakage":
                fails, summary = check_breakage(model, args.model)
            else:
                sut = EngineCLI(args.engine, engine_model, args.threads, args.kv_cache_dtype,
                                args.quantize.lower() if args.quantize else None,
                                args.bf16_activations)
                if args.check == "logits":
                    prompt = draw_prompt(rng_for("logits"), model.cfg, 70)
                    fails, summary = check_logits(model, sut, prompt, TOP_K, args.tol_rel)
                    if args.bf16_activations and not fails:
                        plain = EngineCLI(args.engine, engine_model, args.threads,
                                          args.kv_cache_dtype)
                        fails, seen = check_bf16_rounding_seen(sut, plain, prompt)
                        summary += "; " + seen
                elif args.check == "greedy":
                    fails, summary = check_greedy(model, sut, args.tol_rel)
                else:
                    fails, summary = check_batch(model, sut, args.tol_rel)
    except (CheckFailed, ref.CheckpointError) as e:
        print(f"FAIL {args.check} {args.model}: {e}")
        return 1
    finally:
        for d in tmp_dirs:
            shutil.rmtree(d, ignore_errors=True)
    name = os.path.basename(os.path.normpath(args.model))
    if fails:
        for f in fails[:12]:
            print(f"  {f}")
        if len(fails) > 12:
            print(f"  ... and {len(fails) - 12} more")
        print(f"FAIL {args.check} {name}: {len(fails)} problems ({summary})")
        return 1
    print(f"ok {args.check} {name}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
