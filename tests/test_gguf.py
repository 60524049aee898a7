#!/usr/bin/env python3
"""test_gguf.py - GGUF files end to end through the encore program.

  lossless  -m DIR --type T  `encore quantize` writes DIR (Qwen3 or Qwen3-MoE)
                             as GGUF in its own type; greedy ids and top
                             logits from the GGUF equal the safetensors' bit
                             for bit; with a tokenizer, the bos keys are
                             llama.cpp's (config.json's bos_token_id when
                             the tokenizer has none, add_bos_token false)
  pywriter  -m DIR           a GGUF laid out by tests/gguf_py.py (independent
                             of encore's writer; alignment 64, tensors in
                             reverse order) gives the same ids and logits
  bad       -m DIR           each malformed file: exit 1 and a message naming
                             the key or tensor and the byte offset
  bad-moe   -m DIR --mixed M qwen3moe files (from the MoE checkpoint DIR)
                             broken in their expert keys or tensors: exit 1
                             naming them; `encore quantize` of M (dense
                             layers among sparse ones) refused by name
  tokenizer --tokenizer-dir D --strings S --golden G
                             a GGUF carrying the real Qwen3 vocabulary and
                             merges (written by gguf_py from tokenizer.json)
                             tokenizes the corpus to the golden ids
  quantized -m DIR           a GGUF with Q8_0 matrices: the metadata loads,
                             and the model runs or fails naming the tensor
                             and the type the backend lacks
  blocks -m DIR --type T     `encore quantize --type T` writes the blocks
                             --quantize T makes at load (MoE experts too)
  experts-vulkan -m DIR --type T
                             a qwen3moe file in T with Q8_0 experts runs on
                             the CPU and on Vulkan, top logits within 5%
  mixed     -m DIR           Q4_K and Q6_K tensors in one file, as llama.cpp's
                             Q4_K_M mixes them: logits match the dequantized
                             model's
  mix       -m DIR --type T  `encore quantize --type q4_k_m|q5_k_m`: each
                             tensor of the type llama-quantize gives it
                             (written out below from llama.cpp's rule), its
                             bytes those of the one-type file of that type;
                             logits match the dequantized model's
  generation -m DIR         a file's general.sampling.* keys are generate's
                             defaults, <|endoftext|> ends generation (by its
                             text, as llama.cpp), a key out of range is refused
  widened   -m DIR [--device D]
                             Q5_0, IQ4_NL and Q3_K tensors (made by NumPy),
                             which encore widens at load to Q8_0 / Q6_K
                             (Q5_0 and IQ4_NL are read as they are, the
                             same bits): the
                             same ids and logits, bit for bit, as the file
                             of those widened blocks written by NumPy, on the
                             widest ISA, the portable kernels and the row
                             layout (or on D); top logits
                             within 5% of the dequantized model's
  requantize -m DIR --type T `encore quantize -m IN.gguf` (a float GGUF of DIR)
                             writes the bytes of `encore quantize -m DIR`;
                             over its own type a copy; a block type changed
                             only with --allow-requantize (then the blocks of
                             the dequantized values)
  repack    -m DIR --type T  a T file on the CPU with its matrices repacked at
                             load (the default) and without (ENCORE_CPU_REPACK=0):
                             the same greedy ids and logits bit for bit, on the
                             widest ISA and on the portable kernels
"""

import argparse
import json
import os
import re
import stat
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_py as G  # noqa: E402
import gguf_weights as GW  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
import gguf_quants as Q  # noqa: E402

PROMPT = "3 14 15 92 65 35 89 79 32 38"


def run(cmd, stdin=None, check=True, env=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300,
                       env=None if env is None else {**os.environ, **env})
    if check and p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def outputs(engine, model, extra=(), env=None):
    """Greedy ids and the teacher-forced top logits of a model path."""
    ids = run([engine, "generate", "-m", model, "--prompt-ids", PROMPT, "-n", "24",
               "--temperature", "0", "--ignore-eos", "--print-ids", "-t", "2", *extra],
              env=env).stdout
    logits = run([engine, "logits", "-m", model, "--prompt-ids", PROMPT, "--top", "20",
                  "-t", "2", *extra], env=env).stdout
    return ids, logits


def same_as_safetensors(engine, model_dir, gguf, what):
    want, got = outputs(engine, model_dir), outputs(engine, gguf)
    if want[0] != got[0]:
        sys.exit(f"FAIL {what}: greedy ids differ:\n  safetensors {want[0]}  gguf        {got[0]}")
    if want[1] != got[1]:
        sys.exit(f"FAIL {what}: logits differ")
    if not want[0].split():
        sys.exit(f"FAIL {what}: no ids generated")
    print(f"ok {what}: {len(want[0].split())} greedy ids and {len(want[1].splitlines())} "
          "logits rows identical")


def check_bos(model_dir, gguf):
    """The bos keys as llama.cpp's converter writes them for Qwen3: the
    tokenizer's bos token, else config.json's bos_token_id (Qwen3: the id
    of <|endoftext|>), and add_bos_token false."""
    kvs = {k: v for k, _, v in G.read(gguf)[0]}
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    tc_path = os.path.join(model_dir, "tokenizer_config.json")
    tc = json.load(open(tc_path)) if os.path.exists(tc_path) else {}
    added = json.load(open(os.path.join(model_dir, "tokenizer.json"))).get("added_tokens", [])
    bos = tc.get("bos_token")
    bos = bos.get("content") if isinstance(bos, dict) else bos
    want = next((t["id"] for t in added if t["content"] == bos), None) if bos else cfg.get("bos_token_id")
    got = kvs.get("tokenizer.ggml.bos_token_id")
    if want is not None and got != want:
        sys.exit(f"FAIL: tokenizer.ggml.bos_token_id is {got}, llama.cpp's converter writes {want}")
    if kvs.get("tokenizer.ggml.add_bos_token") is not False:
        sys.exit(f"FAIL: tokenizer.ggml.add_bos_token is {kvs.get('tokenizer.ggml.add_bos_token')!r}, not false")
    name = next((t["content"] for t in added if t["id"] == got), None)
    print(f"ok: tokenizer.ggml.bos_token_id {got} ({name}), add_bos_token false")


def cmd_lossless(a, tmp):
    out = os.path.join(tmp, "model.gguf")
    run([a.engine, "quantize", "-m", a.model, "-o", out, "--type", a.type])
    if os.path.exists(out + ".tmp"):
        sys.exit("FAIL: the temporary file was left behind")
    # the file goes in by a rename: a FIFO (or a device) there is refused, not replaced
    fifo = os.path.join(tmp, "fifo.gguf")
    os.mkfifo(fifo)
    p = run([a.engine, "quantize", "-m", a.model, "-o", fifo, "--type", a.type], check=False)
    if p.returncode != 1 or "not a regular file" not in p.stderr or not stat.S_ISFIFO(os.stat(fifo).st_mode):
        sys.exit(f"FAIL: quantize -o FIFO: exit {p.returncode}, {p.stderr.strip()!r}")
    same_as_safetensors(a.engine, a.model, out, f"lossless {a.type}")
    if os.path.exists(os.path.join(a.model, "tokenizer.json")):
        check_bos(a.model, out)
        # the file alone: its own tokenizer turns the text into ids and back
        cmd = ["generate", "-p", "The GGUF file carries its tokenizer: ", "-n", "16",
               "--temperature", "0", "--ignore-eos", "-t", "2", "-m"]
        want = run([a.engine] + cmd + [a.model]).stdout
        got = run([a.engine] + cmd + [out]).stdout
        if want != got or not want.strip():
            sys.exit(f"FAIL: text from the GGUF file {got!r} != {want!r}")
        print(f"ok: text prompt and output through the GGUF's own tokenizer identical: {got.strip()!r}")
        generated = got
        # and its chat template: `encore chat` renders, generates and decodes alike
        chat = ["chat", "-n", "12", "--temperature", "0", "-t", "2", "-m"]
        want = run([a.engine] + chat + [a.model], stdin="Hello there\n/reset\nAgain\n").stdout
        got = run([a.engine] + chat + [out], stdin="Hello there\n/reset\nAgain\n").stdout
        if want != got or not want.strip():
            sys.exit(f"FAIL: encore chat on the GGUF file {got!r} != {want!r}")
        print("ok: encore chat through the GGUF's chat template identical")
        served = serve_completion(a.engine, out, "The GGUF file carries its tokenizer: ")
        if served != generated.rstrip("\n"):
            sys.exit(f"FAIL: encore serve on the GGUF file answered {served!r}, generate "
                     f"{generated!r}")
        print("ok: encore serve on the GGUF file answers what generate prints")


def cmd_blocks(a, tmp):
    """`encore quantize --type T` stores the blocks `--quantize T` makes at load:
    the file runs to the same ids and logits, bit for bit, as the directory
    quantized at load (both through base/quant.c's quantizers, which
    test_quant_numpy checks against NumPy's)."""
    out = os.path.join(tmp, "model.gguf")
    run([a.engine, "quantize", "-m", a.model, "-o", out, "--type", a.type])
    want, got = outputs(a.engine, a.model, ["--quantize", a.type]), outputs(a.engine, out)
    if want[0] != got[0] or not want[0].split():
        sys.exit(f"FAIL blocks {a.type}: greedy ids differ:\n  --quantize {want[0]}  gguf       {got[0]}")
    if want[1] != got[1]:
        sys.exit(f"FAIL blocks {a.type}: logits differ")
    print(f"ok blocks {a.type}: the GGUF file and --quantize {a.type} give identical ids and logits")


def serve_completion(engine, model, prompt):
    """`encore serve -m model` on a free port: one greedy /v1/completions."""
    srv = subprocess.Popen([engine, "serve", "-m", model, "--port", "0", "-t", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        port = None
        deadline = time.time() + 60
        while port is None and time.time() < deadline:
            line = srv.stdout.readline()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            port = m and m.group(1)
            if not line and srv.poll() is not None:
                break
        if not port:
            sys.exit("FAIL: encore serve on the GGUF file did not start")
        body = json.dumps({"prompt": prompt, "max_tokens": 16, "temperature": 0,
                           "ignore_eos": True}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                     {"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
        with opener.open(req, timeout=60) as r:
            return json.load(r)["choices"][0]["text"]
    finally:
        srv.terminate()
        srv.wait(timeout=30)


def checkpoint(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    return cfg, G.model_kvs(cfg), G.model_tensors(model_dir, cfg)


def cmd_pywriter(a, tmp):
    cfg, kvs, tensors = checkpoint(a.model)
    out = os.path.join(tmp, "py.gguf")
    G.write(out, kvs + [("general.alignment", G.U32, 64)], list(reversed(tensors)), alignment=64)
    same_as_safetensors(a.engine, a.model, out, "python-written GGUF")


# --- bad files ------------------------------------------------------------

def bad_cases(cfg, kvs, tensors):
    """(name, bytes, substrings the message must hold)."""
    good = G.build(kvs, tensors)
    t0 = tensors[0]
    n_kv_bytes = sum(len(G.kv_bytes(*kv)) for kv in kvs)
    # byte offset of tensor 0's ggml type: after its name, n_dims and ne[]
    type_at = 24 + n_kv_bytes + len(G.gstr(t0.name)) + 4 + 8 * len(t0.shape)

    def with_tensor(i, **kw):
        ts = list(tensors)
        t = ts[i]
        ts[i] = G.Tensor(kw.get("name", t.name), kw.get("ggml_type", t.ggml_type),
                         kw.get("shape", t.shape), kw.get("data", t.data), kw.get("offset"),
                         kw.get("n_dims"))
        return G.build(kvs, ts)

    def without_kv(key):
        return G.build([kv for kv in kvs if kv[0] != key], tensors)

    huge_str = (G.gstr("general.name") + struct.pack("<I", G.STR) + struct.pack("<Q", 1 << 62) + b"x")
    huge_arr = (G.gstr("x.arr") + struct.pack("<IIQ", G.ARR, G.U32, 1 << 60))
    last_end = len(G.build(kvs, tensors[:-1]))  # where the data of the last tensor would start
    return [
        ("cut_in_half", good[:len(good) // 2], ["past the end", "byte offset"]),
        ("truncated_header", good[:20], ["truncated", "24"]),
        ("bad_magic", b"GGUX" + good[4:], ["bad magic", "byte offset 0"]),
        ("version_2", good[:4] + struct.pack("<I", 2) + good[8:], ["version 2", "byte offset 4"]),
        ("past_end", with_tensor(len(tensors) - 1, offset=(last_end // 32 + 64) * 32)[:len(good)],
         [f"'{tensors[-1].name}'", "past the end", "byte offset"]),
        ("overlap", with_tensor(1, offset=0), ["overlap", f"'{tensors[1].name}'", f"'{t0.name}'"]),
        ("unknown_type", with_tensor(0, ggml_type=16), [f"'{t0.name}'", "ggml type 16 (IQ2_XXS)",
                                                        f"byte offset {type_at}"]),
        # an i-quant of 3 bits, whose lattice grids encore does not carry
        ("iq3_xxs_type", with_tensor(0, ggml_type=18), [f"'{t0.name}'", "ggml type 18 (IQ3_XXS)",
                                                        f"byte offset {type_at}"]),
        ("undefined_type", with_tensor(0, ggml_type=99), [f"'{t0.name}'", "ggml type 99 (unknown)"]),
        ("n_dims_5", with_tensor(0, n_dims=5), [f"'{t0.name}'", "n_dims 5", "byte offset"]),
        ("huge_string", G.build(kvs, tensors, raw_kvs=[huge_str]),
         ["key 'general.name'", "string length", "4611686018427387904", "byte offset"]),
        ("huge_array", G.build(kvs, tensors, raw_kvs=[huge_arr]), ["'x.arr'", "byte offset"]),
        # the offset named is the bad element's: after the key, its type, the array's type and count
        ("bool_array_2", G.build(kvs, tensors, raw_kvs=[G.gstr("x.flags") + struct.pack("<IIQ", G.ARR, G.BOOL, 3)
                                                         + bytes([1, 0, 2])]),
         ["'x.flags'", f"byte offset {24 + n_kv_bytes + len(G.gstr('x.flags')) + 4 + 12 + 2}",
          "bool value 2"]),
        ("duplicate_key", G.build(kvs + [kvs[3]], tensors), [f"'{kvs[3][0]}'", "twice"]),
        ("duplicate_tensor", G.build(kvs, tensors + [tensors[1]]), [f"'{tensors[1].name}'", "twice"]),
        ("misaligned", with_tensor(1, offset=t0.offset or 8), [f"'{tensors[1].name}'", "alignment"]),
        ("bad_alignment", G.build(kvs + [("general.alignment", G.U32, 48)], tensors),
         ["'general.alignment'", "power of two"]),
        ("no_block_count", without_kv("qwen3.block_count"), ["'qwen3.block_count'", "missing"]),
        ("wrong_key_type", G.build([kv if kv[0] != "qwen3.block_count" else (kv[0], G.STR, "two")
                                    for kv in kvs], tensors),
         ["'qwen3.block_count'", "byte offset", "not an integer"]),
        ("unknown_arch", G.build([("general.architecture", G.STR, "llama")] + kvs[1:], tensors),
         ["architecture 'llama'", "not supported"]),
        ("qwen3moe_dense_tensors", G.build(G.model_kvs(cfg, "qwen3moe") + [("qwen3moe.expert_count", G.U32, 8),
                                                                            ("qwen3moe.expert_used_count", G.U32, 2),
                                                                            ("qwen3moe.expert_feed_forward_length", G.U32, 16)],
                                           tensors), ["'blk.0.ffn_gate_inp.weight'", "missing"]),
        ("value_length", G.build([kv if kv[0] != "qwen3.attention.value_length" else (kv[0], G.U32, kv[2] * 2)
                                  for kv in kvs], tensors),
         ["'qwen3.attention.value_length'", "differs"]),
        ("rope_scaling", G.build(kvs + [("qwen3.rope.scaling.type", G.STR, "longrope")], tensors),
         ["'qwen3.rope.scaling.type'", "'longrope'"]),
        ("yarn_no_factor", G.build(kvs + [("qwen3.rope.scaling.type", G.STR, "yarn")], tensors),
         ["'qwen3.rope.scaling.factor'", "missing"]),
        ("yarn_log_multiplier", G.build(kvs + [("qwen3.rope.scaling.type", G.STR, "yarn"),
                                               ("qwen3.rope.scaling.factor", G.F32, 4.0),
                                               ("qwen3.rope.scaling.yarn_log_multiplier", G.F32, 0.1)],
                                        tensors),
         ["'qwen3.rope.scaling.yarn_log_multiplier'", "supports only 0"]),
        ("missing_tensor", G.build(kvs, [t for t in tensors if t.name != "blk.0.attn_q.weight"]),
         ["'blk.0.attn_q.weight'", "missing"]),
        ("wrong_shape", with_tensor(2, shape=[tensors[2].shape[0] * 2] + tensors[2].shape[1:],
                                    data=tensors[2].data * 2),
         [f"'{tensors[2].name}'", "shape", "GGUF metadata"]),
        ("extra_tensor", G.build(kvs, tensors + [G.Tensor("blk.0.attn_q.bias", G.GGML_F32, [4], bytes(16))]),
         ["'blk.0.attn_q.bias'", "not used"]),
    ]


def bad_moe_cases(cfg, kvs, tensors):
    """(name, bytes, substrings) of qwen3moe files broken in their MoE parts."""
    E, Fe, D = cfg["num_experts"], cfg["moe_intermediate_size"], cfg["hidden_size"]
    names = [t.name for t in tensors]

    def with_tensor(name, shape, data):
        return G.build(kvs, [G.Tensor(t.name, t.ggml_type, shape, data) if t.name == name else t
                             for t in tensors])

    def with_kv(key, t, v):
        return G.build([(k, t, v) if k == key else (k, tt, vv) for k, tt, vv in kvs], tensors)

    up = tensors[names.index("blk.0.ffn_up_exps.weight")]
    down = tensors[names.index("blk.1.ffn_down_exps.weight")]
    per_expert = len(up.data) // E
    return [
        ("moe_one_expert_short", with_tensor(up.name, [E - 1, Fe, D], up.data[:-per_expert]),
         [f"'{up.name}'", f"[{E - 1}, {Fe}, {D}]", f"implies [{E}, {Fe}, {D}]"]),
        ("moe_experts_2d", with_tensor(down.name, [E * D, Fe], down.data),
         [f"'{down.name}'", f"[{E * D}, {Fe}]", f"[{E}, {D}, {Fe}]"]),
        ("moe_missing_router", G.build(kvs, [t for t in tensors if t.name != "blk.1.ffn_gate_inp.weight"]),
         ["'blk.1.ffn_gate_inp.weight'", "missing"]),
        ("moe_dense_mlp_too", G.build(kvs, tensors + [G.Tensor("blk.0.ffn_gate.weight", G.GGML_F32,
                                                               [cfg["intermediate_size"], D],
                                                               bytes(4 * cfg["intermediate_size"] * D))]),
         ["'blk.0.ffn_gate.weight'", "not used by a Qwen3-MoE model"]),
        ("moe_layer_past_count", G.build(kvs, tensors + [G.Tensor(f"blk.{cfg['num_hidden_layers']}.attn_norm.weight",
                                                                  G.GGML_F32, [D], bytes(4 * D))]),
         [f"'blk.{cfg['num_hidden_layers']}.attn_norm.weight'",
          f"qwen3moe.block_count = {cfg['num_hidden_layers']}"]),
        ("moe_no_expert_count", G.build([kv for kv in kvs if kv[0] != "qwen3moe.expert_count"], tensors),
         ["'qwen3moe.expert_count'", "missing"]),
        ("moe_used_above_count", with_kv("qwen3moe.expert_used_count", G.U32, E + 1),
         ["'qwen3moe.expert_used_count'", f"({E + 1})"]),
        ("moe_norm_not_bool", with_kv("qwen3moe.expert_weights_norm", G.U32, 1),
         ["'qwen3moe.expert_weights_norm'", "not a bool"]),
    ]


def cmd_bad(a, tmp):
    cfg, kvs, tensors = checkpoint(a.model)
    refuse_all(a, tmp, bad_cases(cfg, kvs, tensors))


def cmd_bad_moe(a, tmp):
    """Broken qwen3moe files, and a checkpoint with dense layers refused by quantize."""
    cfg, kvs, tensors = checkpoint(a.model)
    refuse_all(a, tmp, bad_moe_cases(cfg, kvs, tensors))
    out = os.path.join(tmp, "mixed.gguf")
    p = run([a.engine, "quantize", "-m", a.mixed, "-o", out, "--type", "f32"], check=False)
    if p.returncode != 1 or "is dense" not in p.stderr or a.mixed not in p.stderr or os.path.exists(out):
        sys.exit(f"FAIL: quantize of dense layers into qwen3moe: exit {p.returncode}, {p.stderr.strip()!r}")
    print(f"ok quantize refuses dense layers: {p.stderr.strip()}")


def refuse_all(a, tmp, cases):
    n_ok = 0
    for name, blob, want in cases:
        path = os.path.join(tmp, f"{name}.gguf")
        with open(path, "wb") as f:
            f.write(blob)
        p = run([a.engine, "generate", "-m", path, "--prompt-ids", "1 2", "-n", "1", "--print-ids"],
                check=False)
        err = p.stderr
        missing = [w for w in want if w not in err]
        if p.returncode != 1 or missing or path not in err:
            sys.exit(f"FAIL bad file {name}: exit {p.returncode}, message {err.strip()!r} "
                     f"lacks {missing or [path]}")
        print(f"ok {name}: {err.strip().splitlines()[-1]}")
        n_ok += 1
    print(f"ok: {n_ok} bad files refused")


# --- the tokenizer ----------------------------------------------------------

def cmd_tokenizer(a, tmp):
    tok_json = os.path.join(a.tokenizer_dir, "tokenizer.json")
    tok_cfg = os.path.join(a.tokenizer_dir, "tokenizer_config.json")
    out = os.path.join(tmp, "vocab.gguf")
    G.write(out, [("general.architecture", G.STR, "qwen3")] +
            G.tokenizer_kvs(tok_json, tok_cfg, vocab_size=151936), [])
    lines = open(a.strings, encoding="utf-8").read()
    got = run([a.engine, "tokenize", "-m", out], stdin=lines).stdout.splitlines()
    golden = [json.loads(l)["ids"] for l in open(a.golden, encoding="utf-8")]
    if len(got) != len(golden):
        sys.exit(f"FAIL: {len(got)} lines of ids for {len(golden)} strings")
    for i, (g, w) in enumerate(zip(got, golden)):
        if json.loads(g) != w:
            sys.exit(f"FAIL tokenizer from GGUF: string {i + 1}: {g} != golden {w}")
    print(f"ok: {len(got)} strings tokenized from GGUF metadata identical to the golden ids")
    # ... and decoded back, special tokens included, equal to tokenizer.json's
    ids = "\n".join(got) + "\n"
    dec_gguf = run([a.engine, "detokenize", "-m", out], stdin=ids).stdout
    dec_json = run([a.engine, "detokenize", "-m", a.tokenizer_dir], stdin=ids).stdout
    if dec_gguf != dec_json:
        sys.exit("FAIL: detokenize from GGUF differs from tokenizer.json's")
    print("ok: detokenized identically")
    # tokenizer metadata encore cannot honour: refused naming the key
    base = G.tokenizer_kvs(tok_json, tok_cfg, vocab_size=151936)
    types = next(v for k, _, v in base if k == "tokenizer.ggml.token_type")[1]
    def replaced(key, t, v):
        return [(k, t, v) if k == key else (k, tt, vv) for k, tt, vv in base]
    cases = [("llama-bpe", replaced("tokenizer.ggml.pre", G.STR, "llama-bpe"), "'llama-bpe'"),
             ("llama_model", replaced("tokenizer.ggml.model", G.STR, "llama"), "'tokenizer.ggml.model'"),
             ("bad_merge", replaced("tokenizer.ggml.merges", G.ARR, (G.STR, ["a b", "zz\u0120 q"])),
              "tokenizer.ggml.merges[1]"),
             ("types_short", replaced("tokenizer.ggml.token_type", G.ARR, (G.I32, [1, 1])),
              "'tokenizer.ggml.token_type'"),
             ("type_300", replaced("tokenizer.ggml.token_type", G.ARR,
                                   (G.I32, [300 if i == 7 else k for i, k in enumerate(types)])),
              "entry 7: type 300 is not 1..6"),
             ("pre_nul", replaced("tokenizer.ggml.pre", G.STR, "qwen2\0llama-bpe"),
              "'tokenizer.ggml.pre' holds a NUL byte"),
             ("template_nul", replaced("tokenizer.chat_template", G.STR, "{{ messages }}\0{{ x }}"),
              "a NUL byte at offset 14")]
    for name, kvs, want in cases:
        path = os.path.join(tmp, name + ".gguf")
        G.write(path, [("general.architecture", G.STR, "qwen3")] + kvs, [])
        p = run([a.engine, "tokenize", "-m", path], stdin='"x"\n', check=False)
        if p.returncode != 1 or want not in p.stderr or path not in p.stderr:
            sys.exit(f"FAIL bad tokenizer {name}: exit {p.returncode}, {p.stderr.strip()!r}")
        print(f"ok bad tokenizer {name}: {p.stderr.strip()}")
    # a string read where it lies in the mapping, last in a file that ends at a page's end
    # (nothing mapped after it): the chat template, and a control token's text
    control = [(k, t, (v[0], v[1][:-1] + [3])) if k == "tokenizer.ggml.token_type" else (k, t, v)
               for k, t, v in base]
    for name, kvs, key in (("template_last", base, "tokenizer.chat_template"),
                           ("control_last", control, "tokenizer.ggml.tokens")):
        k, t, v = next(kv for kv in kvs if kv[0] == key)
        head = [("general.architecture", G.STR, "qwen3")] + [kv for kv in kvs if kv[0] != key]
        pad = -len(G.build(head + [(k, t, v)], [], alignment=1)) % 4096
        v = v + " " * pad if t == G.STR else (v[0], v[1][:-1] + [v[1][-1] + "x" * pad])
        path = os.path.join(tmp, name + ".gguf")
        G.write(path, head + [(k, t, v)], [], alignment=1)
        size = os.path.getsize(path)
        p = run([a.engine, "tokenize", "-m", path], stdin='"hello"\n', check=False)
        if size % 4096 or p.returncode != 0 or p.stdout.strip() != "[14990]":
            sys.exit(f"FAIL {name} ({size} bytes): exit {p.returncode}, {p.stdout!r} {p.stderr.strip()!r}")
        print(f"ok {name}: a file of {size} bytes ending in its {key}")


def cmd_generation(a, tmp):
    """What a GGUF file recommends, as llama.cpp reads it: general.sampling.* are the defaults of
    `encore generate` (top_k 1 here: one text whatever the seed, unless --top-k is given), and the
    tokens llama.cpp ends generation at by their text (<|endoftext|> beside the eos key's
    <|im_end|>) end it; a key out of range is refused naming it."""
    cfg, kvs, tensors = checkpoint(a.model)
    tok = G.tokenizer_kvs(os.path.join(a.model, "tokenizer.json"),
                          os.path.join(a.model, "tokenizer_config.json"), cfg["vocab_size"])
    sampling = [("general.sampling.temp", G.F32, 0.6), ("general.sampling.top_k", G.I32, 1),
                ("general.sampling.top_p", G.F32, 0.95)]
    out = os.path.join(tmp, "gen.gguf")
    G.write(out, kvs + tok + sampling, tensors)
    gen = [a.engine, "generate", "-m", out, "--prompt-ids", "9707", "-n", "6", "--ignore-eos", "--print-ids"]
    texts = set()
    for seed in range(4):
        p = run(gen + ["--seed", str(seed)])
        texts.add(p.stdout)
        if "the model's recommended temperature 0.6, top_k 1, top_p 0.95" not in p.stderr:
            sys.exit(f"FAIL: general.sampling.* not said: {p.stderr!r}")
    if len(texts) != 1:
        sys.exit(f"FAIL: general.sampling.top_k 1: {len(texts)} outputs for four seeds {texts}")
    sampled = {run(gen + ["--seed", str(seed), "--top-k", "0"]).stdout for seed in range(4)}
    if len(sampled) < 2:
        sys.exit(f"FAIL: --top-k 0 over the file's top_k 1: one output for four seeds {sampled}")
    print(f"ok: general.sampling.* the defaults (four seeds, one output), --top-k over them")
    ids = run([a.engine, "generate", "-m", out, "--prompt-ids", "9707", "-n", "5", "--temperature", "0",
               "--logit-bias", "151643=100", "--print-ids"]).stdout.split()
    if ids != ["151643"]:
        sys.exit(f"FAIL: <|endoftext|> does not end generation from GGUF: {ids}")
    print("ok: <|endoftext|> ends generation (found by its text, as llama.cpp finds it)")
    # `encore quantize` writes a checkpoint's generation_config.json as those keys
    src = os.path.join(tmp, "with-gen")
    os.makedirs(src)
    for name in os.listdir(a.model):
        os.symlink(os.path.abspath(os.path.join(a.model, name)), os.path.join(src, name))
    with open(os.path.join(src, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": [151645, 151643], "temperature": 0.6, "top_k": 20, "top_p": 0.95,
                   "repetition_penalty": 1.05}, f)
    written = os.path.join(tmp, "written.gguf")
    run([a.engine, "quantize", "-m", src, "-o", written, "--type", "bf16"])
    p = run([a.engine, "generate", "-m", written, "--prompt-ids", "9707", "-n", "2"])
    want = "the model's recommended temperature 0.6, top_k 20, top_p 0.95, repetition_penalty 1.05"
    if want not in p.stderr:
        sys.exit(f"FAIL: encore quantize did not carry generation_config.json: {p.stderr!r}")
    print("ok: encore quantize writes generation_config.json's sampling as general.sampling.*")
    bad = os.path.join(tmp, "bad.gguf")
    G.write(bad, kvs + tok + [("general.sampling.top_p", G.F32, 1.5)], tensors)
    p = run(gen[:3] + [bad] + gen[4:], check=False)
    if p.returncode != 1 or "'general.sampling.top_p'" not in p.stderr or "(0, 1]" not in p.stderr:
        sys.exit(f"FAIL: general.sampling.top_p 1.5: exit {p.returncode}, {p.stderr.strip()!r}")
    print(f"ok: {p.stderr.strip()}")


def top1(logits_text):
    """[(id, logit)] of the largest logit at every position."""
    return [tuple(json.loads(l)["top"][0]) for l in logits_text.splitlines()]


def within_5pct(got, want, what, of):
    """The top logits got (top1) within 5% of want's largest magnitude at
    every position, or exit naming `what` and `of`. Returns (worst
    difference, that scale, positions whose top ids agree)."""
    scale = max(abs(l) for _, l in want)
    worst = max(abs(g[1] - w[1]) for g, w in zip(got, want)) if len(got) == len(want) else 1e9
    if worst > 0.05 * scale:
        sys.exit(f"FAIL: {what}: top logits {got} are not within 5% of {of} {want}")
    return worst, scale, sum(g[0] == w[0] for g, w in zip(got, want))


def cmd_quantized(a, tmp):
    """The matrices quantized to Q8_0 (gguf_py.quantize_q8_0), and beside it the
    same model with those matrices dequantized to F32. The Q8_0 file either
    runs, and then its top logit at every position is within 5% of the
    dequantized model's (activations are quantized too), or is refused at load
    naming a tensor and the type the backend lacks."""
    cfg, kvs, tensors = checkpoint(a.model)
    q8, deq = [], []
    for t in tensors:
        if len(t.shape) == 2 and t.name != "token_embd.weight" and t.shape[1] % 32 == 0:
            x = G.to_f32({G.GGML_F32: "F32", G.GGML_F16: "F16", G.GGML_BF16: "BF16"}[t.ggml_type],
                         t.data).reshape(t.shape)
            blocks, dq = G.quantize_q8_0(x)
            q8.append(G.Tensor(t.name, G.GGML_Q8_0, t.shape, blocks))
            deq.append(G.Tensor(t.name, G.GGML_F32, t.shape, dq.astype("<f4").tobytes()))
        else:
            q8.append(t)
            deq.append(t)
    path, ref = os.path.join(tmp, "q8.gguf"), os.path.join(tmp, "deq.gguf")
    G.write(path, kvs, q8)
    G.write(ref, kvs, deq)
    p = run([a.engine, "logits", "-m", path, "--prompt-ids", PROMPT, "--top", "1", "-t", "2"],
            check=False)
    if p.returncode == 0:
        want = top1(run([a.engine, "logits", "-m", ref, "--prompt-ids", PROMPT, "--top", "1",
                         "-t", "2"]).stdout)
        worst, _, _ = within_5pct(top1(p.stdout), want, "the Q8_0 file runs, but its",
                                  "the dequantized model's")
        print(f"ok: the Q8_0 file runs; top logits within {worst:.4g} of the dequantized model's")
        return
    err = p.stderr
    if p.returncode != 1 or "has type Q8_0" not in err or ".weight'" not in err or "lacks" not in err:
        sys.exit(f"FAIL: Q8_0 file: exit {p.returncode}, {err.strip()!r}")
    print(f"ok: Q8_0 metadata loaded, refused clearly: {err.strip().splitlines()[-1]}")


def cmd_experts_vulkan(a, tmp):
    """A qwen3moe file with only its experts in Q8_0 (tests/gguf_weights.py)
    runs on the CPU and on Vulkan (matmul_id_q.comp): the top logit at every
    position within 5% of the CPU's (the same weights; the CPU rounds the
    activations to 8 bits, the shader does not)."""
    path = os.path.join(tmp, "experts-q8_0.gguf")
    GW.make_mixed(a.engine, a.model, f"{a.type},ffn_gate_exps=Q8_0,ffn_up_exps=Q8_0,"
                  "ffn_down_exps=Q8_0", path)
    cmd = [a.engine, "logits", "-m", path, "--prompt-ids", PROMPT, "--top", "1", "-t", "2"]
    want = top1(run(cmd + ["--device", "cpu"]).stdout)
    got = top1(run(cmd + ["--device", "vulkan"]).stdout)
    worst, scale, _ = within_5pct(got, want, "Q8_0 experts on Vulkan", "the CPU's")
    print(f"ok: Q8_0 experts on the CPU and on Vulkan: top logits within {worst:.4g} (scale {scale:.3g})")


def cmd_repack(a, tmp):
    """The CPU backend's interleaved layout changes no bit: the file's greedy
    ids and top logits with its matrices repacked at load equal those of the
    row layout (ENCORE_CPU_REPACK=0) on the same ISA, the widest and the
    portable kernels (ENCORE_CPU_ISA=scalar; a Q4_K file's logits in the
    row layout already differ between the two)."""
    out = os.path.join(tmp, "model.gguf")
    run([a.engine, "quantize", "-m", a.model, "-o", out, "--type", a.type])
    for isa in (None, "scalar"):
        env = {"ENCORE_CPU_ISA": isa} if isa else {}
        rows = outputs(a.engine, out, env={**env, "ENCORE_CPU_REPACK": "0"})
        got = outputs(a.engine, out, env=env)
        if got[0] != rows[0] or not rows[0].split():
            sys.exit(f"FAIL repack {a.type} ({isa or 'widest ISA'}): greedy ids differ:\n"
                     f"  rows     {rows[0]}  repacked {got[0]}")
        if got[1] != rows[1]:
            sys.exit(f"FAIL repack {a.type} ({isa or 'widest ISA'}): logits differ")
    print(f"ok repack {a.type}: repacked and row-layout weights give identical ids and logits")


def cmd_mixed(a, tmp):
    """A file whose block types differ per tensor, laid out as llama-quantize
    writes a Q4_K_M file: Q4_K matrices, Q6_K for the tied embedding (also the
    LM head) and for layer 0's attn_v and ffn_down (llama.cpp gives some
    layers' attn_v and ffn_down more bits), F32 norms, general.file_type 15,
    the tensors taken from `encore quantize --type q4_k` and `--type q6_k`.
    Beside it the same model with every matrix dequantized to F32 by
    tests/reference/gguf_quants.py (NumPy, from ggml's block layouts): the
    top logit at every position within 5% of the dequantized model's (the
    activations are quantized to 8 bits, the weights are the same)."""
    files = {}
    for t in ("q4_k", "q6_k"):
        files[t] = os.path.join(tmp, f"{t}.gguf")
        run([a.engine, "quantize", "-m", a.model, "-o", files[t], "--type", t])
    kvs, base, _ = G.read(files["q4_k"])
    q6 = {t.name: t for t in G.read(files["q6_k"])[1]}
    more_bits = {"token_embd.weight", "blk.0.attn_v.weight", "blk.0.ffn_down.weight"}
    mixed = [q6[t.name] if t.name in more_bits else t for t in base]
    kvs = [(k, t, 15 if k == "general.file_type" else v) for k, t, v in kvs]
    deq = dequantized(mixed)
    path, ref = os.path.join(tmp, "mixed.gguf"), os.path.join(tmp, "deq.gguf")
    G.write(path, kvs, mixed)
    G.write(ref, kvs, deq)
    types = sorted({G.GGML_NAMES[t.ggml_type] for t in mixed})
    if types != ["F32", "Q4_K", "Q6_K"]:
        sys.exit(f"FAIL: the mixed file holds {types}")
    cmd = ["logits", "--prompt-ids", PROMPT, "--top", "1", "-t", "2", "-m"]
    want = top1(run([a.engine] + cmd + [ref]).stdout)
    got = top1(run([a.engine] + cmd + [path]).stdout)
    worst, scale, same = within_5pct(got, want, "the Q4_K/Q6_K file", "the dequantized model's")
    print(f"ok: a file of {', '.join(types)} tensors runs; top logits within {worst:.4g} "
          f"(scale {scale:.3g}) of the dequantized model's, top ids equal at {same}/{len(want)}")

def llama_mix_type(name, base, n_layers, n_experts, tied):
    """The type llama-quantize's Q4_K_M / Q5_K_M (base Q4_K / Q5_K) gives a
    Qwen3 matrix (llama_tensor_get_type in llama.cpp's src/llama-quant.cpp):
    Q6_K for the output matrix (a tied token_embd is one); for attn_v and
    ffn_down(_exps), Q6_K in the first and last eighth of the layers and in
    every third layer between; an 8-expert model's attn_v and attn_k Q8_0
    and, in Q4_K_M, its attn_output Q5_K."""
    if name == "output.weight" or (name == "token_embd.weight" and tied):
        return "Q6_K"
    if not name.startswith("blk."):
        return base
    layer, role = int(name.split(".")[1]), name.split(".")[2]
    more = (layer < n_layers // 8 or layer >= 7 * n_layers // 8
            or (layer - n_layers // 8) % 3 == 2)
    if role == "attn_v":
        return "Q8_0" if n_experts == 8 else "Q6_K" if more else base
    if role == "attn_k" and n_experts == 8:
        return "Q8_0"
    if role == "attn_output" and n_experts == 8 and base == "Q4_K":
        return "Q5_K"
    if role in ("ffn_down", "ffn_down_exps"):
        return "Q6_K" if more else base
    return base


def dequantized(tensors):
    """The tensors with every block-type one dequantized to F32 (NumPy)."""
    return [t if t.ggml_type == G.GGML_F32 else
            G.Tensor(t.name, G.GGML_F32, t.shape,
                     Q.dequantize(G.GGML_NAMES[t.ggml_type], t.data,
                                  int(np.prod(t.shape))).astype("<f4").tobytes())
            for t in tensors]


def cmd_mix(a, tmp):
    base = {"q4_k_m": "Q4_K", "q5_k_m": "Q5_K"}[a.type]
    cfg = json.load(open(os.path.join(a.model, "config.json")))
    n_layers, n_experts = cfg["num_hidden_layers"], cfg.get("num_experts", 0)
    tied = cfg.get("tie_word_embeddings", False)
    path = os.path.join(tmp, "mix.gguf")
    run([a.engine, "quantize", "-m", a.model, "-o", path, "--type", a.type])
    kvs, tensors, _ = G.read(path)
    one_type = {}
    for t in tensors:
        name = G.GGML_NAMES[t.ggml_type]
        if "_norm" in t.name or "gate_inp" in t.name:  # norms and routers stay F32
            if name != "F32":
                sys.exit(f"FAIL mix {a.type}: {t.name} is {name}")
            continue
        want = llama_mix_type(t.name, base, n_layers, n_experts, tied)
        if name != want:
            sys.exit(f"FAIL mix {a.type}: {t.name} is {name}, llama-quantize makes it {want}")
        if name not in one_type:
            one_path = os.path.join(tmp, f"{name}.gguf")
            run([a.engine, "quantize", "-m", a.model, "-o", one_path, "--type", name.lower()])
            one_type[name] = {u.name: u for u in G.read(one_path)[1]}
        if t.data != one_type[name][t.name].data:
            sys.exit(f"FAIL mix {a.type}: {t.name}'s bytes differ from the --type {name.lower()} file's")
    file_type = next(v for k, _, v in kvs if k == "general.file_type")
    if file_type != {"Q4_K": 15, "Q5_K": 17}[base]:
        sys.exit(f"FAIL mix {a.type}: general.file_type {file_type}")
    ref = os.path.join(tmp, "deq.gguf")
    G.write(ref, kvs, dequantized(tensors))
    cmd = ["logits", "--prompt-ids", PROMPT, "--top", "1", "-t", "2", "-m"]
    want = top1(run([a.engine] + cmd + [ref]).stdout)
    got = top1(run([a.engine] + cmd + [path]).stdout)
    worst, scale, same = within_5pct(got, want, f"the {a.type} file", "the dequantized model's")
    print(f"ok mix {a.type}: types {sorted(one_type)} where llama-quantize puts them, the bytes of "
          f"the one-type files; top logits within {worst:.4g} (scale {scale:.3g}) of the "
          f"dequantized model's, top ids equal at {same}/{len(want)}")


# The stored type of each matrix in the widened check, by name; a row not
# of whole 256-value blocks takes Q5_0 instead of Q3_K.
WIDEN_TYPES = (("token_embd", "IQ4_NL"), ("output.", "Q5_0"), ("attn_q.", "Q5_0"),
               ("attn_k.", "IQ4_NL"), ("attn_v.", "Q3_K"), ("attn_output", "Q5_0"),
               ("ffn_gate", "IQ4_NL"), ("ffn_up", "Q3_K"), ("ffn_down", "Q5_0"))


def cmd_requantize(a, tmp):
    """`encore quantize -m IN.gguf`: a float file of the checkpoint rewritten
    in --type T is byte for byte the file `encore quantize -m DIR --type T`
    writes (the metadata copied in order, the file type in its place, the
    tensors in the same order and blocks); T again over that file copies it
    byte for byte; a block-type tensor that would change type is refused by
    name, and with --allow-requantize its blocks are those of the same
    quantizer run on NumPy's dequantization of the file."""
    def quantize(src, out, typ, *extra, check=True):
        return run([a.engine, "quantize", "-m", src, "-o", os.path.join(tmp, out), "--type", typ,
                    *extra], check=check)

    def same_bytes(x, y, what):
        if open(os.path.join(tmp, x), "rb").read() != open(os.path.join(tmp, y), "rb").read():
            sys.exit(f"FAIL requantize {a.type}: {what}")

    cfg = json.load(open(os.path.join(a.model, "config.json")))
    own = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}[cfg["torch_dtype"]]
    quantize(a.model, "float.gguf", own)
    quantize(os.path.join(tmp, "float.gguf"), "from_gguf.gguf", a.type)
    quantize(a.model, "from_dir.gguf", a.type)
    same_bytes("from_gguf.gguf", "from_dir.gguf", f"the {own} GGUF rewritten differs from the "
               "checkpoint written")
    quantize(os.path.join(tmp, "from_dir.gguf"), "again.gguf", a.type)
    same_bytes("again.gguf", "from_dir.gguf", "the file rewritten in its own type is not a copy")
    src = os.path.join(tmp, "from_dir.gguf")
    p = quantize(src, "q8_0.gguf", "q8_0", check=False)
    if (p.returncode != 1 or "--allow-requantize" not in p.stderr or "tensor '" not in p.stderr
            or os.path.exists(os.path.join(tmp, "q8_0.gguf"))):
        sys.exit(f"FAIL requantize {a.type} -> q8_0 without --allow-requantize: exit "
                 f"{p.returncode}, {p.stderr.strip()!r}")
    quantize(src, "q8_0.gguf", "q8_0", "--allow-requantize")
    kvs, tensors, _ = G.read(src)
    G.write(os.path.join(tmp, "deq.gguf"), kvs, dequantized(tensors))
    quantize(os.path.join(tmp, "deq.gguf"), "deq_q8_0.gguf", "q8_0")
    got, want = G.read(os.path.join(tmp, "q8_0.gguf"))[1], G.read(os.path.join(tmp, "deq_q8_0.gguf"))[1]
    for t, u in zip(got, want):
        if (t.name, t.ggml_type, t.data) != (u.name, u.ggml_type, u.data):
            sys.exit(f"FAIL requantize {a.type} -> q8_0: {t.name} is not the Q8_0 of its "
                     "dequantized values")
    print(f"ok requantize {a.type}: from the {own} GGUF the same {len(tensors)} tensors and "
          f"metadata as from the checkpoint; rewritten in its own type a copy; to q8_0 refused "
          "without --allow-requantize, and with it the blocks of the dequantized values")


def cmd_widened(a, tmp):
    """Q5_0, IQ4_NL and Q3_K matrices (dense and expert), whose blocks
    src/base/quant_widen.c can rewrite exactly as the Q8_0 / Q6_K blocks of
    the same values, and which the CPU's kernels and Vulkan's shaders read
    as they are with the steps of the widened Q8_0 / Q6_K dot (so the load
    widens nothing): the file runs with the ids and logits of
    the file holding those widened blocks, made by NumPy from the layouts
    (tests/reference/gguf_quants.py), bit for bit on the widest ISA, the row layout and
    the portable kernels; and its top logits are within 5% of the model
    dequantized to F32."""
    src = os.path.join(tmp, "f32.gguf")
    run([a.engine, "quantize", "-m", a.model, "-o", src, "--type", "f32"])
    kvs, tensors, _ = G.read(src)
    stored, wide, deq = [], [], []
    for t in tensors:
        name = next((q for key, q in WIDEN_TYPES if key in t.name), None)
        if len(t.shape) < 2 or name is None or "gate_inp" in t.name:
            stored.append(t), wide.append(t), deq.append(t)
            continue
        if name == "Q3_K" and t.shape[-1] % 256:
            name = "Q5_0"
        x = np.frombuffer(t.data, "<f4")
        raw = Q.QUANTIZE_WIDENED[name](x)
        wname, wraw = Q.widen(name, raw, x.size)
        values = Q.dequantize(name, raw, x.size)
        if not np.array_equal(values.view(np.uint32), Q.dequantize(wname, wraw, x.size).view(np.uint32)):
            sys.exit(f"FAIL: NumPy's {wname} blocks of {t.name} hold other values than its {name}")
        stored.append(G.Tensor(t.name, G.GGML_IDS[name], t.shape, raw))
        wide.append(G.Tensor(t.name, G.GGML_IDS[wname], t.shape, wraw))
        deq.append(G.Tensor(t.name, G.GGML_F32, t.shape, values.astype("<f4").tobytes()))
    types = sorted({G.GGML_NAMES[t.ggml_type] for t in stored} - {"F32"})
    if types != ["IQ4_NL", "Q3_K", "Q5_0"]:
        sys.exit(f"FAIL: the file holds {types}, not IQ4_NL, Q3_K and Q5_0")
    paths = {k: os.path.join(tmp, f"{k}.gguf") for k in ("stored", "wide", "deq")}
    for k, ts in (("stored", stored), ("wide", wide), ("deq", deq)):
        G.write(paths[k], kvs, ts)
    device = ("--device", a.device) if a.device else ()
    log = run([a.engine, "logits", "-m", paths["stored"], "--prompt-ids", PROMPT, "--top", "1",
               "-t", "2", *device], env={"ENCORE_LOG": "info"}).stderr
    if "widened" in log:
        sys.exit(f"FAIL: the load widened tensors the backend reads as they are:\n{log}")
    envs = [{}] if a.device == "vulkan" else [{}, {"ENCORE_CPU_ISA": "scalar"},
                                                 {"ENCORE_CPU_REPACK": "0"}]
    for env in envs:
        got = outputs(a.engine, paths["stored"], device, env=env)
        want = outputs(a.engine, paths["wide"], device, env=env)
        if got != want or not got[0].split():
            sys.exit(f"FAIL widened ({a.device or 'cpu'}, {env or 'widest ISA'}): ids or logits "
                     f"differ from the widened file's:\n  stored {got[0]}  widened {want[0]}")
    cmd = ["logits", "--prompt-ids", PROMPT, "--top", "1", "-t", "2", *device, "-m"]
    want = top1(run([a.engine] + cmd + [paths["deq"]]).stdout)
    got = top1(run([a.engine] + cmd + [paths["stored"]]).stdout)
    worst, scale, _ = within_5pct(got, want, "the widened file", "the dequantized model's")
    print(f"ok: {', '.join(types)} tensors read as they are on "
          f"{a.device or 'the cpu'}: ids and logits identical to the Q8_0/Q6_K file's; top logits "
          f"within {worst:.4g} (scale {scale:.3g}) of the dequantized model's")


def cmd_read_as_is(a, tmp):
    """Matrices of --type (IQ4_XS, Q2_K, Q4_1 or Q5_1; dense and expert;
    IQ4_NL where a row is no whole number of the type's blocks, as
    llama-quantize falls back), made by NumPy from ggml's layouts (tests/reference/gguf_quants.py),
    which encore reads as they are (no widening): the file runs on the
    device, its load widens nothing, and its top logits are within 5% of the
    model dequantized to F32 by NumPy (8-bit activations against f32 ones)."""
    src = os.path.join(tmp, "f32.gguf")
    run([a.engine, "quantize", "-m", a.model, "-o", src, "--type", "f32"])
    kvs, tensors, _ = G.read(src)
    stored, deq = [], []
    quantize = {"IQ4_XS": Q.quantize_iq4_xs, "Q2_K": Q.quantize_q2_k,
                "Q4_1": lambda x: Q.quantize_1(x, 4), "Q5_1": lambda x: Q.quantize_1(x, 5),
                "IQ4_NL": Q.quantize_iq4_nl}
    for t in tensors:
        if len(t.shape) < 2 or "gate_inp" in t.name:
            stored.append(t), deq.append(t)
            continue
        name = a.type if t.shape[-1] % Q.BLOCK[a.type][0] == 0 else "IQ4_NL"
        x = np.frombuffer(t.data, "<f4")
        raw = quantize[name](x)
        values = Q.dequantize(name, raw, x.size)
        stored.append(G.Tensor(t.name, G.GGML_IDS[name], t.shape, raw))
        deq.append(G.Tensor(t.name, G.GGML_F32, t.shape, values.astype("<f4").tobytes()))
    if not any(t.ggml_type == G.GGML_IDS[a.type] for t in stored):
        sys.exit(f"FAIL: the file holds no {a.type} tensor")
    paths = {k: os.path.join(tmp, f"{k}.gguf") for k in ("stored", "deq")}
    for k, ts in (("stored", stored), ("deq", deq)):
        G.write(paths[k], kvs, ts)
    device = ("--device", a.device) if a.device else ()
    cmd = ["logits", "--prompt-ids", PROMPT, "--top", "1", "-t", "2", *device, "-m"]
    p = run([a.engine] + cmd + [paths["stored"]], env={"ENCORE_LOG": "info"})
    if "widened" in p.stderr:
        sys.exit(f"FAIL: the {a.type} file was widened at load:\n{p.stderr}")
    got = top1(p.stdout)
    want = top1(run([a.engine] + cmd + [paths["deq"]]).stdout)
    worst, scale, same = within_5pct(got, want, f"the {a.type} file", "the dequantized model's")
    types = sorted({G.GGML_NAMES[t.ggml_type] for t in stored})
    print(f"ok: {', '.join(types)} tensors on {a.device or 'the cpu'}, read as they are: top "
          f"logits within {worst:.4g} (scale {scale:.3g}) of the dequantized model's, top ids "
          f"equal at {same}/{len(want)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["lossless", "pywriter", "bad", "bad-moe", "tokenizer",
                                      "quantized", "blocks", "experts-vulkan", "mixed", "mix", "repack",
                                      "widened", "read-as-is", "requantize", "generation"])
    ap.add_argument("--engine", required=True)
    ap.add_argument("-m", "--model")
    ap.add_argument("--type")
    ap.add_argument("--mixed", help="bad-moe: a MoE checkpoint with dense layers")
    ap.add_argument("--device", help="widened, read-as-is: the device (default: encore's)")
    ap.add_argument("--tokenizer-dir")
    ap.add_argument("--strings")
    ap.add_argument("--golden")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="encore-gguf-") as tmp:
        {"lossless": cmd_lossless, "pywriter": cmd_pywriter, "bad": cmd_bad, "bad-moe": cmd_bad_moe,
         "tokenizer": cmd_tokenizer, "quantized": cmd_quantized, "blocks": cmd_blocks,
         "experts-vulkan": cmd_experts_vulkan, "mixed": cmd_mixed, "mix": cmd_mix, "repack": cmd_repack,
         "widened": cmd_widened, "read-as-is": cmd_read_as_is,
         "requantize": cmd_requantize, "generation": cmd_generation}[a.check](a, tmp)


if __name__ == "__main__":
    main()
