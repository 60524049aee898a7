#!/usr/bin/python3
"""gen_checkpoint.py - write Qwen3 checkpoints with random weights and fixed seeds.

The test suite and the demo run on these: a directory in Hugging Face layout with
config.json, model.safetensors (or N shards plus model.safetensors.index.json) and,
for models with the real 151936-token vocabulary, the real tokenizer files. The
same preset always gives the same bytes (each tensor has its own seeded stream).

    gen_checkpoint.py --preset tiny-gqa2-hd64-bf16 --out DIR
    gen_checkpoint.py --preset tiny-all --out PARENT --tokenizer-dir TOK   (PARENT/<preset>)
    gen_checkpoint.py --bad truncated --out DIR       (deliberately broken; --bad all: PARENT/bad-<kind>)

A preset directory holds a stamp file (.gen_checkpoint.stamp); when it matches this
generator's version and the preset, the preset is not written again.

safetensors layout, as written here:
    | u64 LE header_len | JSON header, space-padded to a multiple of 8 | tensor data |
    header: {"__metadata__": {"format": "pt"},
             "<name>": {"dtype": "BF16", "shape": [r, c], "data_offsets": [begin, end]}, ...}
    offsets are relative to the first data byte; tensors are packed in model order.

Weight init (why it looks like this): the residual stream starts at the token
embedding and every block adds an output of rms ~GAIN, so the current token does
not dominate the last hidden state (with tied embeddings that would make greedy
decoding repeat the current token forever). q_norm/k_norm weights around 1.6 make
attention scores spread (std ~2.5), so attention over far positions matters; norm
weights carry noise (1 + 0.1 N(0,1) style) so that skipping one changes the result;
the output head is scaled so that logits have a std of about LOGIT_STD.
"""

import argparse
import hashlib
import json
import os
import shutil
import sys
import time

import numpy as np

GENERATOR_VERSION = 1
STAMP = ".gen_checkpoint.stamp"
REAL_VOCAB = 151936

# name: geometry and file options. seed makes each preset's weights distinct.
PRESETS = {
    "tiny-gqa1-hd64-f32": dict(V=512, D=64, L=2, H=2, KVH=2, hd=64, F=128, tied=False,
                               dtype="F32", theta=10000.0, seed=101),
    "tiny-gqa2-hd64-bf16": dict(V=512, D=128, L=2, H=4, KVH=2, hd=64, F=256, tied=True,
                                dtype="BF16", theta=1000000.0, seed=102),
    "tiny-gqa4-hd128-bf16": dict(V=1000, D=128, L=3, H=8, KVH=2, hd=128, F=192, tied=False,
                                 dtype="BF16", theta=10000.0, seed=103),
    "tiny-gqa2-hd128-f16-sharded": dict(V=512, D=128, L=2, H=4, KVH=2, hd=128, F=256, tied=True,
                                        dtype="F16", theta=1000000.0, seed=104, shards=3),
    "tiny-gqa2-hd64-d256-bf16": dict(V=1000, D=256, L=2, H=4, KVH=2, hd=64, F=512, tied=True,
                                     dtype="BF16", theta=1000000.0, seed=108),
    # nine layers (llama-quantize's mixes treat the first and last eighth and
    # every third layer between apart), untied, rows of whole 256-value blocks
    "tiny-l9-d256-untied-bf16": dict(V=1000, D=256, L=9, H=4, KVH=2, hd=64, F=512, tied=False,
                                     dtype="BF16", theta=1000000.0, seed=109),
    # RoPE scaled: YaRN by 4 from 256 positions (theta 1e4 puts the
    # correction range at frequencies 0..13 of 32) and linear by 2; the
    # stated context is the scaled one, so every transformers version agrees
    "tiny-yarn-bf16": dict(V=512, D=128, L=2, H=4, KVH=2, hd=64, F=256, tied=True,
                           dtype="BF16", theta=10000.0, seed=110, max_pos=1024,
                           rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                         "original_max_position_embeddings": 256}),
    "tiny-linear-rope-f32": dict(V=512, D=64, L=2, H=2, KVH=1, hd=64, F=128, tied=False,
                                 dtype="F32", theta=10000.0, seed=111, max_pos=8192,
                                 rope_scaling={"rope_type": "linear", "factor": 2.0}),
    "tiny-qwen3vocab": dict(V=REAL_VOCAB, D=64, L=2, H=2, KVH=1, hd=64, F=128, tied=True,
                            dtype="BF16", theta=1000000.0, seed=105, tokenizer="required"),
    "demo": dict(V=REAL_VOCAB, D=64, L=2, H=2, KVH=1, hd=64, F=128, tied=True, demo=True,
                 dtype="BF16", theta=1000000.0, seed=106, tokenizer="required"),
    "qwen3-0.6b-geometry": dict(V=REAL_VOCAB, D=1024, L=28, H=16, KVH=8, hd=128, F=3072, tied=True,
                                dtype="BF16", theta=1000000.0, seed=107, max_pos=40960,
                                tokenizer="optional"),
}
# Qwen3-MoE: E experts, k per token, Fe each, norm_topk_prob, decoder_sparse_step and
# mlp_only_layers; F stays the dense layers' intermediate size.
MOE_PRESETS = {
    "tiny-moe-e4k1-f32": dict(V=512, D=64, L=2, H=2, KVH=1, hd=64, F=128, tied=False,
                              dtype="F32", theta=10000.0, seed=201,
                              moe=dict(E=4, k=1, Fe=48, norm=False, step=1, mlp_only=[])),
    "tiny-moe-e8k2-bf16": dict(V=1000, D=64, L=2, H=4, KVH=2, hd=32, F=128, tied=True,
                               dtype="BF16", theta=1000000.0, seed=202,
                               moe=dict(E=8, k=2, Fe=32, norm=True, step=1, mlp_only=[])),
    "tiny-moe-e4k4-bf16": dict(V=512, D=64, L=2, H=2, KVH=2, hd=32, F=128, tied=False,
                               dtype="BF16", theta=10000.0, seed=203,
                               moe=dict(E=4, k=4, Fe=32, norm=False, step=1, mlp_only=[])),
    # layers 1 and 3 would be sparse (step 2); mlp_only_layers keeps 3 dense
    "tiny-moe-mixed-f32": dict(V=1000, D=64, L=4, H=2, KVH=1, hd=32, F=96, tied=True,
                               dtype="F32", theta=10000.0, seed=204,
                               moe=dict(E=6, k=2, Fe=40, norm=True, step=2, mlp_only=[3])),
    # rows of whole 256-value blocks everywhere (experts included): the K types
    "tiny-moe-e4k2-d256-bf16": dict(V=1000, D=256, L=2, H=4, KVH=2, hd=64, F=512, tied=True,
                                    dtype="BF16", theta=1000000.0, seed=206,
                                    moe=dict(E=4, k=2, Fe=256, norm=True, step=1, mlp_only=[])),
    # eight experts: llama-quantize's mixes give such a model's attn_v / attn_k more bits
    "tiny-moe-e8k2-d256-bf16": dict(V=1000, D=256, L=2, H=4, KVH=2, hd=64, F=512, tied=True,
                                    dtype="BF16", theta=1000000.0, seed=207,
                                    moe=dict(E=8, k=2, Fe=256, norm=True, step=1, mlp_only=[])),
}
PRESETS.update(MOE_PRESETS)
# An embedding model laid out as Qwen3-Embedding ships: the bare Qwen3Model's
# tensors (no "model." prefix, no lm_head; untied, as the 4B and 8B say),
# sentence-transformers' modules.json and 1_Pooling/config.json (last-token
# pooling, then Normalize), and a tokenizer whose post-processor appends
# <|endoftext|>.
PRESETS["tiny-embedding-qwen3vocab"] = dict(
    V=REAL_VOCAB, D=64, L=2, H=2, KVH=1, hd=64, F=128, tied=False, dtype="BF16",
    theta=1000000.0, seed=112, tokenizer="required", embedding=True)
# Qwen3-30B-A3B's structure scaled to one machine (`make bench-moe-model`, ~2 GB bf16):
# 64 experts of 256, 8 per token, hidden 1024, 16 layers, 16 query / 4 KV heads of 128.
PRESETS["qwen3-moe-bench-geometry"] = dict(
    V=REAL_VOCAB, D=1024, L=16, H=16, KVH=4, hd=128, F=3072, tied=True, dtype="BF16",
    theta=1000000.0, seed=205, max_pos=40960, tokenizer="optional",
    moe=dict(E=64, k=8, Fe=256, norm=True, step=1, mlp_only=[]))
# Router weights: logits of std ~ROUTER_STD, so that the top-k is rarely a near-tie.
ROUTER_STD = 3.0

TINY_ALL = ["tiny-gqa1-hd64-f32", "tiny-gqa2-hd64-bf16", "tiny-gqa4-hd128-bf16",
            "tiny-gqa2-hd128-f16-sharded", "tiny-qwen3vocab", "tiny-gqa2-hd64-d256-bf16",
            "tiny-l9-d256-untied-bf16", "tiny-yarn-bf16", "tiny-linear-rope-f32",
            "tiny-embedding-qwen3vocab"] + list(MOE_PRESETS)

# Init scales (see the top comment). Part of the stamp: changing them regenerates.
INIT = dict(EMBED_STD=1.0, GAIN=2.0, QK_NORM_MEAN=1.6, NORM_NOISE=0.1, LOGIT_STD=3.0)

BAD_KINDS = ["truncated", "header-too-long", "bad-json", "wrong-shape", "missing-tensor",
             "bad-dtype", "overlap", "offset-out-of-range", "config-missing-field",
             "config-rope-scaling", "shard-missing"]
BAD_BASE = "tiny-gqa2-hd64-bf16"
BAD_BASE_SHARDED = "tiny-gqa2-hd128-f16-sharded"

DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I8": 1}
TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
CHUNK_ELEMS = 1 << 22  # big tensors are made and written in row chunks of at most this many


# --- dtype conversion --------------------------------------------------------

def f32_to_bf16_bits(x):
    """float32 array -> uint16 bf16 bit patterns, round to nearest even; NaN stays NaN (quiet)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16))
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    quiet = (u >> np.uint32(16)) | np.uint32(0x0040)
    return np.where(nan, quiet, rounded).astype(np.uint16)


def encode(x, dtype):
    """float32 array -> little-endian bytes of `dtype` (F32, F16, BF16)."""
    if dtype == "F32":
        return np.ascontiguousarray(x, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.ascontiguousarray(x).astype("<f2").tobytes()
    if dtype == "BF16":
        return f32_to_bf16_bits(x).astype("<u2").tobytes()
    raise ValueError(f"unsupported dtype {dtype}")


# --- the tensors of a preset -------------------------------------------------

def layer_is_moe(p, i):
    """Qwen3MoeDecoderLayer's rule: sparse unless in mlp_only_layers, every step-th layer."""
    mo = p.get("moe")
    return bool(mo) and i not in mo["mlp_only"] and (i + 1) % mo["step"] == 0


def tensor_specs(p):
    """[(name, shape, kind)] in file order; kind says how the tensor is initialised."""
    D, F, V, H, KVH, hd = p["D"], p["F"], p["V"], p["H"], p["KVH"], p["hd"]
    specs = [("model.embed_tokens.weight", [V, D], "embed")]
    for i in range(p["L"]):
        a = f"model.layers.{i}."
        specs += [
            (a + "input_layernorm.weight", [D], "norm"),
            (a + "self_attn.q_proj.weight", [H * hd, D], "in"),
            (a + "self_attn.k_proj.weight", [KVH * hd, D], "in"),
            (a + "self_attn.v_proj.weight", [KVH * hd, D], "in"),
            (a + "self_attn.o_proj.weight", [D, H * hd], "out"),
            (a + "self_attn.q_norm.weight", [hd], "qknorm"),
            (a + "self_attn.k_norm.weight", [hd], "qknorm"),
            (a + "post_attention_layernorm.weight", [D], "norm"),
        ]
        if layer_is_moe(p, i):
            mo = p["moe"]
            specs.append((a + "mlp.gate.weight", [mo["E"], D], "router"))
            for j in range(mo["E"]):
                e = f"{a}mlp.experts.{j}."
                specs += [(e + "gate_proj.weight", [mo["Fe"], D], "in"),
                          (e + "up_proj.weight", [mo["Fe"], D], "in"),
                          (e + "down_proj.weight", [D, mo["Fe"]], "out_mlp")]
            continue
        specs += [
            (a + "mlp.gate_proj.weight", [F, D], "in"),
            (a + "mlp.up_proj.weight", [F, D], "in"),
            (a + "mlp.down_proj.weight", [D, F], "out_mlp"),
        ]
    specs.append(("model.norm.weight", [D], "norm"))
    if p.get("embedding"):  # a Qwen3Model alone: bare names, no output head
        return [(n[len("model."):] if n.startswith("model.") else n, s, k) for n, s, k in specs]
    if not p["tied"]:
        specs.append(("lm_head.weight", [V, D], "head"))
    return specs


def _std(p, kind, shape):
    D = p["D"]
    if kind == "embed":  # tied: the embedding is the output head too
        return INIT["LOGIT_STD"] / np.sqrt(D) if p["tied"] else INIT["EMBED_STD"]
    if kind == "head":
        return INIT["LOGIT_STD"] / np.sqrt(D)
    if kind == "in":
        return 1.0 / np.sqrt(shape[1])
    if kind == "out":
        return INIT["GAIN"] / np.sqrt(shape[1])
    if kind == "router":
        return ROUTER_STD / np.sqrt(D)
    if kind == "out_mlp":  # silu(g)*u has rms ~0.6 for unit-normal g, u
        return INIT["GAIN"] / (0.6 * np.sqrt(shape[1]))
    raise ValueError(kind)


def tensor_chunks(p, index, name, shape, kind):
    """Yield the float32 values of tensor number `index` in row chunks. Deterministic:
    each tensor has its own stream seeded by (preset seed, index), chunked the same way always."""
    rng = np.random.default_rng([p["seed"], index])
    if kind in ("norm", "qknorm"):
        mean = INIT["QK_NORM_MEAN"] if kind == "qknorm" else 1.0
        yield (mean + INIT["NORM_NOISE"] * rng.standard_normal(shape, dtype=np.float32)).astype(np.float32)
        return
    std = np.float32(_std(p, kind, shape))
    rows, cols = shape
    step = max(1, CHUNK_ELEMS // cols)
    for r in range(0, rows, step):
        n = min(step, rows - r)
        yield rng.standard_normal((n, cols), dtype=np.float32) * std


def moe_config(p):
    """The Qwen3MoeConfig fields of a MoE preset (empty for a dense one)."""
    mo = p.get("moe")
    if not mo:
        return {}
    return {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
            "num_experts": mo["E"], "num_experts_per_tok": mo["k"],
            "moe_intermediate_size": mo["Fe"], "norm_topk_prob": mo["norm"],
            "decoder_sparse_step": mo["step"], "mlp_only_layers": mo["mlp_only"],
            "output_router_logits": False, "router_aux_loss_coef": 0.001}


def config_json(p):
    real = p["V"] == REAL_VOCAB
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 151643 if real else None,
        "eos_token_id": 151645 if real else 1,
        "head_dim": p["hd"],
        "hidden_act": "silu",
        "hidden_size": p["D"],
        "initializer_range": 0.02,
        "intermediate_size": p["F"],
        "max_position_embeddings": p.get("max_pos", 4096),
        "max_window_layers": p["L"],
        "model_type": "qwen3",
        "num_attention_heads": p["H"],
        "num_hidden_layers": p["L"],
        "num_key_value_heads": p["KVH"],
        "rms_norm_eps": 1e-06,
        "rope_scaling": p.get("rope_scaling"),
        "rope_theta": p["theta"],
        "sliding_window": None,
        "tie_word_embeddings": p["tied"],
        "torch_dtype": TORCH_DTYPE[p["dtype"]],
        "transformers_version": "4.51.0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": p["V"],
        # encore's marker of generated checkpoints: `encore generate` and
        # `encore chat` say plainly that the demo model's text is meaningless
        **({"encore_demo": True} if p.get("demo") else {}),
        **moe_config(p),
    }


# --- writing safetensors -----------------------------------------------------

def safetensors_header(entries):
    """entries: [(name, dtype, shape, n_bytes)] in data order -> (header bytes incl. the
    8-byte length, {name: [begin, end]}). Header JSON is space-padded to a multiple of 8."""
    header = {"__metadata__": {"format": "pt"}}
    offsets, pos = {}, 0
    for name, dtype, shape, n_bytes in entries:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [pos, pos + n_bytes]}
        offsets[name] = [pos, pos + n_bytes]
        pos += n_bytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text, offsets


def write_safetensors(path, p, specs, indices, progress=None):
    """Write the tensors `specs` (with their global indices) to `path`, one chunk at a
    time, so nothing is held in memory twice. Returns the number of data bytes."""
    dt = p["dtype"]
    entries = [(n, dt, s, int(np.prod(s)) * DTYPE_SIZE[dt]) for n, s, _ in specs]
    head, _ = safetensors_header(entries)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        for (name, shape, kind), idx in zip(specs, indices):
            for chunk in tensor_chunks(p, idx, name, shape, kind):
                f.write(encode(chunk, dt))
            if progress:
                progress(name)
    os.replace(tmp, path)
    return sum(e[3] for e in entries)


def split_shards(specs, dtype, n):
    """Cut the tensor list into n consecutive groups of roughly equal bytes."""
    sizes = [int(np.prod(s)) * DTYPE_SIZE[dtype] for _, s, _ in specs]
    total, groups, cur, acc = sum(sizes), [], [], 0
    for i, sz in enumerate(sizes):
        cur.append(i)
        acc += sz
        left_tensors, left_groups = len(sizes) - i - 1, n - len(groups) - 1
        if left_groups > 0 and (acc >= total * (len(groups) + 1) / n or left_tensors == left_groups):
            groups.append(cur)
            cur = []
    groups.append(cur)
    assert len(groups) == n and all(groups), "cannot split into that many shards"
    return groups


def model_files(p):
    n = p.get("shards", 1)
    if n == 1:
        return ["model.safetensors"]
    return [f"model-{i + 1:05d}-of-{n:05d}.safetensors" for i in range(n)] + ["model.safetensors.index.json"]


def write_model(out, p, verbose=False):
    """config.json and the safetensors file(s) of preset p into directory out."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config_json(p), f, indent=2, sort_keys=True)
        f.write("\n")
    specs = tensor_specs(p)
    progress = None
    if verbose:
        t0, done = time.time(), [0]

        def progress(name):
            done[0] += 1
            print(f"gen_checkpoint: [{done[0]}/{len(specs)}] {name} ({time.time() - t0:.1f} s)",
                  file=sys.stderr, flush=True)
    n = p.get("shards", 1)
    if n == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), p, specs, range(len(specs)), progress)
        return
    files = model_files(p)
    weight_map, total = {}, 0
    for g, group in enumerate(split_shards(specs, p["dtype"], n)):
        part = [specs[i] for i in group]
        total += write_safetensors(os.path.join(out, files[g]), p, part, group, progress)
        for name, _, _ in part:
            weight_map[name] = files[g]
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(out, "model.safetensors.index.json"), "w", encoding="utf-8") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


# --- presets, stamps, tokenizer ----------------------------------------------

def stamp_text(name, p, with_tokenizer):
    spec = json.dumps({"preset": p, "init": INIT}, sort_keys=True)
    return json.dumps({"generator_version": GENERATOR_VERSION, "preset": name,
                       "spec_sha256": hashlib.sha256(spec.encode()).hexdigest(),
                       "tokenizer": with_tokenizer}, sort_keys=True) + "\n"


def tokenizer_files(tok_dir):
    files = [os.path.join(tok_dir, n) for n in ("tokenizer.json", "tokenizer_config.json")]
    for f in files:
        if not os.path.isfile(f):
            raise SystemExit(f"gen_checkpoint: {f} not found (--tokenizer-dir must hold "
                             f"tokenizer.json and tokenizer_config.json; scripts/fetch-tokenizer.sh makes it)")
    return files


# Qwen3-Embedding's tokenizer.json post-processor: <|endoftext|> after each sequence.
EMBEDDING_POST_PROCESSOR = {
    "type": "Sequence",
    "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        {"type": "TemplateProcessing",
         "single": [{"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                  {"Sequence": {"id": "B", "type_id": 1}},
                  {"SpecialToken": {"id": "<|endoftext|>", "type_id": 1}}],
         "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [151643],
                                               "tokens": ["<|endoftext|>"]}}},
    ],
}


def write_embedding_files(out):
    """sentence-transformers' files of an embedding model, and the copied tokenizer.json
    with Qwen3-Embedding's post-processor."""
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    pooling = {"word_embedding_dimension": None, "pooling_mode_cls_token": False,
               "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
               "pooling_mode_lasttoken": True, "include_prompt": True}
    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        pooling["word_embedding_dimension"] = json.load(f)["hidden_size"]
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    with open(os.path.join(out, "modules.json"), "w", encoding="utf-8") as f:
        json.dump(modules, f, indent=2)
    with open(os.path.join(out, "1_Pooling", "config.json"), "w", encoding="utf-8") as f:
        json.dump(pooling, f, indent=2)
    tok = os.path.join(out, "tokenizer.json")
    with open(tok, encoding="utf-8") as f:
        t = json.load(f)
    t["post_processor"] = EMBEDDING_POST_PROCESSOR
    with open(tok, "w", encoding="utf-8") as f:
        json.dump(t, f, ensure_ascii=False)


def make_preset(name, out, tok_dir=None, force=False):
    p = PRESETS[name]
    want_tok = p.get("tokenizer")
    if want_tok == "required" and not tok_dir:
        raise SystemExit(f"gen_checkpoint: preset {name} has the real vocabulary and needs "
                         f"--tokenizer-dir (a directory with the Qwen3 tokenizer.json)")
    with_tok = bool(tok_dir) and want_tok is not None
    tok_src = tokenizer_files(tok_dir) if with_tok else []
    stamp_path = os.path.join(out, STAMP)
    expected = ["config.json"] + model_files(p) + [os.path.basename(f) for f in tok_src]
    stamp = stamp_text(name, p, with_tok)
    if not force and os.path.isfile(stamp_path) and all(os.path.isfile(os.path.join(out, f)) for f in expected):
        with open(stamp_path, encoding="utf-8") as f:
            if f.read() == stamp:
                return False
    if os.path.exists(stamp_path):
        os.remove(stamp_path)
    big = p["V"] * p["D"] + p["L"] * p["D"] * p["F"] * 3 > 50_000_000
    if big:
        print(f"gen_checkpoint: writing {name} to {out}", file=sys.stderr, flush=True)
    write_model(out, p, verbose=big)
    for f in tok_src:
        shutil.copyfile(f, os.path.join(out, os.path.basename(f)))
    if p.get("embedding"):
        write_embedding_files(out)
    with open(stamp_path, "w", encoding="utf-8") as f:
        f.write(stamp)
    return True


# --- deliberately broken checkpoints -----------------------------------------

def _read_st(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = int.from_bytes(blob[:8], "little")
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def _write_st(path, header, data):
    """Write a header dict (taken as is, offsets included) and raw data."""
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data)


def make_bad(kind, out):
    """Write the base preset into out, then break it as `kind` says."""
    base = BAD_BASE_SHARDED if kind == "shard-missing" else BAD_BASE
    if os.path.isdir(out) and os.listdir(out):
        if not os.path.isfile(os.path.join(out, "BROKEN.txt")):  # never wipe a directory we did not make
            raise SystemExit(f"gen_checkpoint: {out} exists and is not a broken checkpoint made by --bad; "
                             f"give an empty or new directory")
        shutil.rmtree(out)
    write_model(out, PRESETS[base])
    st = os.path.join(out, "model.safetensors")
    cfg_path = os.path.join(out, "config.json")
    layer0 = "model.layers.0.self_attn."
    if kind in ("truncated", "header-too-long", "bad-json"):
        with open(st, "rb") as f:
            blob = f.read()
        n = int.from_bytes(blob[:8], "little")
        if kind == "truncated":  # cut in the middle of the tensor data
            blob = blob[:8 + n + (len(blob) - 8 - n) // 2 + 3]
        elif kind == "header-too-long":
            blob = (len(blob) + 1000).to_bytes(8, "little") + blob[8:]
        else:
            bad = b'{"model.embed_tokens.weight": {"dtype": "BF16", "shape": [512, 128' + b" " * 8
            bad += b" " * (-len(bad) % 8)
            blob = len(bad).to_bytes(8, "little") + bad + blob[8 + n:]
        with open(st, "wb") as f:
            f.write(blob)
    elif kind in ("wrong-shape", "missing-tensor", "bad-dtype", "overlap", "offset-out-of-range"):
        header, data = _read_st(st)
        if kind == "wrong-shape":  # transposed: same byte count, wrong shape
            header[layer0 + "q_proj.weight"]["shape"].reverse()
        elif kind == "missing-tensor":
            del header["model.layers.1.self_attn.k_norm.weight"]
        elif kind == "bad-dtype":  # [D] BF16 = 2D bytes, relabelled I8 [2D]
            h = header["model.norm.weight"]
            h["dtype"], h["shape"] = "I8", [h["shape"][0] * 2]
        elif kind == "overlap":  # k_proj starts inside q_proj (size unchanged)
            q, k = header[layer0 + "q_proj.weight"], header[layer0 + "k_proj.weight"]
            size = k["data_offsets"][1] - k["data_offsets"][0]
            k["data_offsets"] = [q["data_offsets"][0] + 64, q["data_offsets"][0] + 64 + size]
        else:  # the last tensor ends past the data area (size unchanged)
            last = max((h for n, h in header.items() if n != "__metadata__"),
                       key=lambda h: h["data_offsets"][1])
            b, e = last["data_offsets"]
            last["data_offsets"] = [b + 4096, e + 4096]
        _write_st(st, header, data)
    elif kind in ("config-missing-field", "config-rope-scaling"):
        with open(cfg_path, encoding="utf-8") as f:
            cfg = json.load(f)
        if kind == "config-missing-field":
            del cfg["num_key_value_heads"]
        else:
            cfg["rope_scaling"] = {"type": "dynamic", "rope_type": "dynamic", "factor": 4.0}
        with open(cfg_path, "w", encoding="utf-8") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
    elif kind == "shard-missing":
        os.remove(os.path.join(out, model_files(PRESETS[base])[1]))
    else:
        raise SystemExit(f"gen_checkpoint: unknown --bad kind {kind}")
    with open(os.path.join(out, "BROKEN.txt"), "w", encoding="utf-8") as f:
        f.write(f"deliberately broken checkpoint ({kind}) from preset {base}\n")


# --- command line ------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Write Qwen3 checkpoints (HF layout, random weights, fixed seeds).",
        epilog="presets: " + ", ".join(list(PRESETS) + ["tiny-all"]) + "; bad kinds: " + ", ".join(BAD_KINDS + ["all"]))
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--preset", choices=list(PRESETS) + ["tiny-all"],
                      help="model to write (tiny-all: every tiny preset into OUT/<preset>)")
    what.add_argument("--bad", choices=BAD_KINDS + ["all"],
                      help="write a deliberately broken checkpoint (all: OUT/bad-<kind>)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--tokenizer-dir", help="directory with the real Qwen3 tokenizer.json and "
                    "tokenizer_config.json (copied into real-vocabulary models)")
    ap.add_argument("--force", action="store_true", help="rewrite even when the stamp matches")
    args = ap.parse_args(argv)

    if args.bad:
        kinds = BAD_KINDS if args.bad == "all" else [args.bad]
        for k in kinds:
            make_bad(k, os.path.join(args.out, "bad-" + k) if args.bad == "all" else args.out)
        return 0
    if args.preset == "tiny-all":
        for name in TINY_ALL:
            make_preset(name, os.path.join(args.out, name), args.tokenizer_dir, args.force)
    else:
        make_preset(args.preset, args.out, args.tokenizer_dir, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
