#!/usr/bin/python3
"""qwen3_ref.py - the independent reference forward of Qwen3, in NumPy float64.

The oracle the engine's logits and greedy tokens are compared with. Written from
the Qwen3 definition (Hugging Face's modeling_qwen3), sharing no code with the C
engine: it reads config.json and the safetensors file(s) itself, keeps a plain
contiguous KV cache (no paging, no graph) and computes in double precision.

One decoder layer, for hidden states x [T, D] at positions p:

    h = rmsnorm(x) * w_in                    rmsnorm(x) = x / sqrt(mean(x^2) + eps)
    q = h Wq^T -> [T, H, hd]    k = h Wk^T, v = h Wv^T -> [T, KVH, hd]
    q = rmsnorm(q) * q_norm     k = rmsnorm(k) * k_norm   (per head, BEFORE RoPE)
    q, k = rope(q, p), rope(k, p)            NeoX rotate_half, inv_freq = theta^(-2i/hd)
                                             (scaled as rope_scaling says: rope_parameters)
    a = softmax(q k^T / sqrt(hd) + causal) v  query head h reads kv head h // (H/KVH)
    x = x + a Wo^T
    h = rmsnorm(x) * w_post
    x = x + (silu(h Wg^T) * (h Wu^T)) Wd^T
then logits = (rmsnorm(x) * w_final) W_head^T, W_head = embed_tokens when tied.

Qwen3-MoE (model_type qwen3_moe; Hugging Face's modeling_qwen3_moe): layer l is
sparse when l is not in mlp_only_layers, num_experts > 0 and (l + 1) %
decoder_sparse_step == 0; its MLP line becomes, with k = num_experts_per_tok,

    p = softmax(h Wr^T)                      router mlp.gate.weight [E, D], per token
    e_1..e_k = the k largest p (ties: the lower expert id), w_s = p[e_s]
    w_s /= sum_s w_s                         only when norm_topk_prob
    x = x + sum_s w_s * (silu(h Wg_e^T) * (h Wu_e^T)) Wd_e^T,  e = e_s

As a module: load_model(dir), forward_logits(model, ids) -> [T, V] float64,
greedy(model, ids, n) -> list of n ids, last_hidden(model, ids) -> [D] (the
final norm's hidden state of the last token: what an embedding model such as
Qwen3-Embedding pools; its checkpoint's names lack "model." and it may have no
lm_head). As a program:

    qwen3_ref.py logits -m DIR --prompt-ids "1 2 3" [--top K]
        one JSON line per position: {"pos":P,"top":[[ID,LOGIT],...]} (best first)
    qwen3_ref.py greedy -m DIR --prompt-ids "1 2 3" -n N
        the N greedy ids, space-separated

A hidden option `--break KIND` computes a deliberately wrong forward (see BREAKS)
so the test harness can show that it catches such mistakes.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

# Deliberate mistakes for the harness self-test (mutation check).
BREAKS = {
    "qnorm": "skip q_norm",
    "knorm": "skip k_norm",
    "norm-after-rope": "apply q_norm/k_norm after RoPE instead of before",
    "rope-interleaved": "rotate adjacent pairs (GPT-J style) instead of NeoX halves",
    "gqa-modulo": "query head h reads kv head h % KVH instead of h // (H/KVH)",
    "no-final-norm-weight": "ignore the weight of the final norm",
    "moe-no-renorm": "MoE: keep the top-k weights as they are when norm_topk_prob is set",
    "moe-skip-best": "MoE: route each token to its 2nd..(k+1)th experts instead of the best k",
    "rope-unscaled": "rope_scaling: plain RoPE frequencies, no attention factor",
    "yarn-no-attention-factor": "yarn: the scaled frequencies without the attention factor on cos/sin",
}

REQUIRED_CONFIG = [
    "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "rms_norm_eps", "rope_theta", "vocab_size",
]

ST_DTYPES = {"F32": (np.dtype("<f4"), 4), "F16": (np.dtype("<f2"), 2), "BF16": (np.dtype("<u2"), 2)}


class CheckpointError(Exception):
    """A checkpoint the reference refuses to read; the message says where."""


# --- reading config.json and safetensors ------------------------------------

def load_config(model_dir):
    path = os.path.join(model_dir, "config.json")
    try:
        with open(path, "r", encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: {e}") from None
    for key in REQUIRED_CONFIG:
        if key not in cfg or cfg[key] is None:
            raise CheckpointError(f"{path}: missing field '{key}'")
    scaling = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if scaling is not None and scaling.get("rope_type", scaling.get("type")) not in ("default", "linear", "yarn"):
        raise CheckpointError(f"{path}: rope_scaling {scaling!r} is not supported")
    if cfg.get("attention_bias"):
        raise CheckpointError(f"{path}: attention_bias true is not supported")
    if cfg.get("use_sliding_window"):
        raise CheckpointError(f"{path}: use_sliding_window true is not supported")
    if cfg.get("head_dim") is None:
        cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]
    if cfg["num_attention_heads"] % cfg["num_key_value_heads"] != 0:
        raise CheckpointError(f"{path}: num_key_value_heads does not divide num_attention_heads")
    cfg.setdefault("tie_word_embeddings", False)
    moe = cfg.get("model_type") == "qwen3_moe"
    if moe and cfg.get("shared_expert_intermediate_size"):
        raise CheckpointError(f"{path}: shared experts are not supported")
    cfg["num_experts"] = int(cfg.get("num_experts", 128)) if moe else 0
    cfg.setdefault("num_experts_per_tok", 8)
    cfg.setdefault("moe_intermediate_size", 768)
    cfg.setdefault("decoder_sparse_step", 1)
    cfg["norm_topk_prob"] = bool(cfg.get("norm_topk_prob", False))
    cfg["mlp_only_layers"] = list(cfg.get("mlp_only_layers") or [])
    return cfg


def layer_is_moe(cfg, i):
    """As Qwen3MoeDecoderLayer decides between the sparse block and the dense MLP."""
    return (i not in cfg["mlp_only_layers"] and cfg["num_experts"] > 0
            and (i + 1) % cfg["decoder_sparse_step"] == 0)


def _to_float(raw, st_dtype, dt):
    """Little-endian bytes of one tensor -> numpy array of `dt` (exact for all three dtypes)."""
    if st_dtype == "BF16":
        u = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return u.view(np.float32).astype(dt)
    return np.frombuffer(raw, dtype=ST_DTYPES[st_dtype][0]).astype(dt)


def read_safetensors(path, dt=np.float64):
    """Read one .safetensors file: {name: array}. Validates header and offsets."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise CheckpointError(f"{path}: {e}") from None
    if len(blob) < 8:
        raise CheckpointError(f"{path}: file of {len(blob)} bytes has no header length")
    n_header = int.from_bytes(blob[:8], "little")
    if n_header > len(blob) - 8:
        raise CheckpointError(f"{path}: header length {n_header} exceeds file size {len(blob)}")
    try:
        header = json.loads(blob[8:8 + n_header].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise CheckpointError(f"{path}: header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: header is not a JSON object")
    data = memoryview(blob)[8 + n_header:]
    spans = []
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        st_dtype = info.get("dtype")
        if st_dtype not in ST_DTYPES:
            raise CheckpointError(f"{path}: tensor {name}: unsupported dtype {st_dtype!r}")
        shape = [int(s) for s in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
        n_bytes = int(np.prod(shape, dtype=np.int64)) * ST_DTYPES[st_dtype][1]
        if not 0 <= begin <= end <= len(data):
            raise CheckpointError(f"{path}: tensor {name}: data_offsets [{begin}, {end}] "
                                  f"outside the data area of {len(data)} bytes")
        if end - begin != n_bytes:
            raise CheckpointError(f"{path}: tensor {name}: {end - begin} bytes for shape {shape} {st_dtype}")
        spans.append((begin, end, name))
        out[name] = _to_float(data[begin:end], st_dtype, dt).reshape(shape)
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise CheckpointError(f"{path}: tensors {n0} and {n1} overlap at byte {b1}")
    return out


def read_checkpoint(model_dir, dt=np.float64):
    """All tensors of a single-file or sharded checkpoint directory."""
    single = os.path.join(model_dir, "model.safetensors")
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(single):
        return read_safetensors(single, dt)
    if not os.path.exists(index):
        raise CheckpointError(f"{model_dir}: neither model.safetensors nor model.safetensors.index.json")
    try:
        with open(index, "r", encoding="utf-8") as f:
            weight_map = json.load(f)["weight_map"]
    except (OSError, ValueError, KeyError) as e:
        raise CheckpointError(f"{index}: {e}") from None
    tensors = {}
    for shard in sorted(set(weight_map.values())):
        part = read_safetensors(os.path.join(model_dir, shard), dt)
        for name, arr in part.items():
            if weight_map.get(name) != shard:
                raise CheckpointError(f"{index}: tensor {name} found in {shard}, index says {weight_map.get(name)}")
            tensors[name] = arr
    missing = [n for n in weight_map if n not in tensors]
    if missing:
        raise CheckpointError(f"{index}: tensor {missing[0]} not found in {weight_map[missing[0]]}")
    return tensors


# --- the model ---------------------------------------------------------------

class Model:
    """Config plus weights, matrices stored transposed ([in, out]) for x @ W."""


def load_model(model_dir, dt=np.float64):
    cfg = load_config(model_dir)
    t = read_checkpoint(model_dir, dt)
    D, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    H, KVH, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]

    def take(name, shape):
        if name not in t:
            raise CheckpointError(f"{model_dir}: missing tensor {name}")
        a = t.pop(name)
        if list(a.shape) != list(shape):
            raise CheckpointError(f"{model_dir}: tensor {name} has shape {list(a.shape)}, expected {list(shape)}")
        return a

    m = Model()
    m.cfg, m.dtype = cfg, dt
    # a Qwen3Model saved alone (Qwen3-Embedding): its names lack "model."
    pre = "" if "model.embed_tokens.weight" not in t and "embed_tokens.weight" in t else "model."
    m.embed = take(pre + "embed_tokens.weight", [V, D])
    m.layers = []
    for i in range(cfg["num_hidden_layers"]):
        p = f"{pre}layers.{i}."
        L = {
            "in_norm": take(p + "input_layernorm.weight", [D]),
            "wq": np.ascontiguousarray(take(p + "self_attn.q_proj.weight", [H * hd, D]).T),
            "wk": np.ascontiguousarray(take(p + "self_attn.k_proj.weight", [KVH * hd, D]).T),
            "wv": np.ascontiguousarray(take(p + "self_attn.v_proj.weight", [KVH * hd, D]).T),
            "wo": np.ascontiguousarray(take(p + "self_attn.o_proj.weight", [D, H * hd]).T),
            "q_norm": take(p + "self_attn.q_norm.weight", [hd]),
            "k_norm": take(p + "self_attn.k_norm.weight", [hd]),
            "post_norm": take(p + "post_attention_layernorm.weight", [D]),
        }
        if layer_is_moe(cfg, i):
            E, Fe = cfg["num_experts"], cfg["moe_intermediate_size"]
            L["router"] = np.ascontiguousarray(take(p + "mlp.gate.weight", [E, D]).T)
            ex = p + "mlp.experts."
            L["experts"] = [(take(f"{ex}{j}.gate_proj.weight", [Fe, D]).T,
                             take(f"{ex}{j}.up_proj.weight", [Fe, D]).T,
                             take(f"{ex}{j}.down_proj.weight", [D, Fe]).T) for j in range(E)]
        else:
            L["wg"] = np.ascontiguousarray(take(p + "mlp.gate_proj.weight", [F, D]).T)
            L["wu"] = np.ascontiguousarray(take(p + "mlp.up_proj.weight", [F, D]).T)
            L["wd"] = np.ascontiguousarray(take(p + "mlp.down_proj.weight", [D, F]).T)
        m.layers.append(L)
    m.final_norm = take(pre + "norm.weight", [D])
    # an embedding model may have no output head at all (no lm_head.weight, untied)
    head = m.embed if cfg["tie_word_embeddings"] else (take("lm_head.weight", [V, D]) if "lm_head.weight" in t else None)
    m.head_t = None if head is None else np.ascontiguousarray(head.T)  # [D, V]
    if t:
        raise CheckpointError(f"{model_dir}: unused tensor {sorted(t)[0]}")
    m.inv_freq, m.rope_attention = rope_parameters(cfg, hd)
    m.breaks = set()
    return m


def rope_parameters(cfg, hd, unscaled=False):
    """(inv_freq [hd/2], the factor on cos and sin), written from transformers'
    _compute_linear_scaling_rope_parameters and _compute_yarn_parameters: linear
    divides every frequency by factor; YaRN blends the unscaled frequencies
    (extrapolation) into the scaled ones (interpolation) over the correction
    range of the original context, and scales cos/sin by 0.1 ln(factor) + 1."""
    base = float(cfg["rope_theta"])
    pos_freqs = base ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    extrapolation = 1.0 / pos_freqs
    scaling = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if unscaled or kind == "default":
        return extrapolation, 1.0
    factor = float(scaling["factor"])
    if kind == "linear":
        return extrapolation / factor, 1.0
    attention = scaling.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1 else 0.1 * math.log(factor) + 1.0
    beta_fast, beta_slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1
    ctx = scaling.get("original_max_position_embeddings") or cfg["max_position_embeddings"]

    def correction_dim(rotations):
        return hd * math.log(ctx / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, hd - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(hd // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrapolation_factor = 1 - ramp
    inv_freq = (extrapolation / factor) * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
    return inv_freq, float(attention)


def stop_ids(model):
    """The token ids that end generation: eos_token_id (int or list)."""
    eos = model.cfg.get("eos_token_id")
    if eos is None:
        return set()
    return set(eos) if isinstance(eos, list) else {int(eos)}


# --- the forward pass --------------------------------------------------------

def _rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope(x, cos, sin, interleaved=False):
    """x [T, nh, hd]; cos/sin [T, hd/2]. NeoX: pairs (i, i + hd/2)."""
    c, s = cos[:, None, :], sin[:, None, :]
    if interleaved:  # deliberately wrong variant (break "rope-interleaved")
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x1 * c - x2 * s
        out[..., 1::2] = x2 * c + x1 * s
        return out
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def round_to_bf16(x):
    """x rounded to the nearest bfloat16 (ties to even), via float32 as the engine does."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def round_to_q8_0(x):
    """x [..., hd] (hd a multiple of 32) through float32 and Q8_0 blocks of 32
    consecutive values (so per token and head) and back (gguf_quants.py)."""
    import gguf_quants  # beside this file
    return gguf_quants.round_trip("Q8_0", np.asarray(x).reshape(-1, x.shape[-1])).reshape(x.shape)


# The KV cache's element type: what stored keys and values are rounded to.
KV_ROUND = {
    "f32": lambda x: x,
    "f16": lambda x: np.asarray(x, dtype=np.float32).astype(np.float16),
    "bf16": round_to_bf16,
    "q8_0": round_to_q8_0,
}


class KVCache:
    """Contiguous per-layer K and V: [n_layers][max_len, KVH, hd]; n = tokens stored."""

    def __init__(self, model, max_len):
        c = model.cfg
        shape = (max_len, c["num_key_value_heads"], c["head_dim"])
        self.k = [np.zeros(shape, dtype=model.dtype) for _ in range(c["num_hidden_layers"])]
        self.v = [np.zeros(shape, dtype=model.dtype) for _ in range(c["num_hidden_layers"])]
        self.n = 0


def _mm(model, x, w):
    """x @ w, with x first through model.act_quant(x, w) when set (the 8-bit
    activations an engine's quantized matmul with w computes with; None: exact)."""
    aq = getattr(model, "act_quant", None)
    return (aq(x, w) if aq else x) @ w


def _swiglu_mlp(model, h, wg, wu, wd):
    g = _mm(model, h, wg)
    return _mm(model, (g / (1.0 + np.exp(-g))) * _mm(model, h, wu), wd)


def moe_route(logits, k, norm, br=()):
    """Router logits [T, E] -> (experts [T, k], weights [T, k]): softmax, the k best
    (a stable sort of -p: of equal scores the lower id first), renormalised if norm."""
    z = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    first = 1 if "moe-skip-best" in br else 0
    order = np.argsort(-p, axis=-1, kind="stable")[:, first:first + k]
    w = np.take_along_axis(p, order, axis=-1)
    if norm and "moe-no-renorm" not in br:
        w = w / w.sum(axis=-1, keepdims=True)
    return order, w


def _moe_block(model, h, L, c, br):
    """The sparse block, token by token: sum_s w_s * expert_{e_s}(h)."""
    order, w = moe_route(h @ L["router"], c["num_experts_per_tok"], c["norm_topk_prob"], br)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        for s in range(order.shape[1]):
            wg, wu, wd = L["experts"][order[t, s]]
            out[t] += w[t, s] * _swiglu_mlp(model, h[t:t + 1], wg, wu, wd)[0]
    return out


def forward_step(model, cache, ids, last_only=False, hidden=False):
    """Run tokens `ids` at positions cache.n .. cache.n+T-1, appending their K/V.
    Returns logits [T, V] (or [1, V] for the last token when last_only); with hidden,
    the final norm's hidden states [T, D] instead (what an embedding model pools)."""
    c, br = model.cfg, model.breaks
    eps = float(c["rms_norm_eps"])
    H, KVH, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    rep = H // KVH
    ids = np.asarray(ids, dtype=np.int64)
    T, start = len(ids), cache.n
    if T == 0:
        raise ValueError("empty token list")
    if ids.min() < 0 or ids.max() >= c["vocab_size"]:
        raise ValueError(f"token id out of range [0, {c['vocab_size']})")
    if start + T > cache.k[0].shape[0]:
        raise ValueError("KV cache too small")
    S = start + T
    dt = model.dtype
    inv_freq, attention = model.inv_freq, model.rope_attention
    if "rope-unscaled" in br:
        inv_freq, attention = rope_parameters(c, hd, unscaled=True)
    if "yarn-no-attention-factor" in br:
        attention = 1.0
    ang = np.arange(start, S, dtype=np.float64)[:, None] * inv_freq[None, :]
    cos, sin = (attention * np.cos(ang)).astype(dt), (attention * np.sin(ang)).astype(dt)
    # causal mask: query t (absolute start+t) sees keys 0..start+t
    mask = np.arange(S)[None, :] > (start + np.arange(T))[:, None]  # [T, S]
    scale = 1.0 / math.sqrt(hd)
    interleaved = "rope-interleaved" in br

    x = model.embed[ids]  # [T, D]
    for li, L in enumerate(model.layers):
        h = _rmsnorm(x, L["in_norm"], eps)
        q = (_mm(model, h, L["wq"])).reshape(T, H, hd)
        k = (_mm(model, h, L["wk"])).reshape(T, KVH, hd)
        v = (_mm(model, h, L["wv"])).reshape(T, KVH, hd)
        if "norm-after-rope" in br:
            q, k = _rope(q, cos, sin, interleaved), _rope(k, cos, sin, interleaved)
        if "qnorm" not in br:
            q = _rmsnorm(q, L["q_norm"], eps)
        if "knorm" not in br:
            k = _rmsnorm(k, L["k_norm"], eps)
        if "norm-after-rope" not in br:
            q, k = _rope(q, cos, sin, interleaved), _rope(k, cos, sin, interleaved)
        kv_round = KV_ROUND[getattr(model, "kv_cache_dtype", "f32")]
        cache.k[li][start:S] = kv_round(k)
        cache.v[li][start:S] = kv_round(v)
        K, Vv = cache.k[li][:S], cache.v[li][:S]  # [S, KVH, hd]
        if "gqa-modulo" in br:
            kv_of_head = np.arange(H) % KVH
        else:
            kv_of_head = np.arange(H) // rep
        Kh = K.transpose(1, 2, 0)[kv_of_head]  # [H, hd, S]
        Vh = Vv.transpose(1, 0, 2)[kv_of_head]  # [H, S, hd]
        scores = (q.transpose(1, 0, 2) @ Kh) * scale  # [H, T, S]
        scores = np.where(mask[None], -np.inf, scores)
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        a = (p @ Vh).transpose(1, 0, 2).reshape(T, H * hd)  # [T, H*hd]
        x = x + _mm(model, a, L["wo"])
        h = _rmsnorm(x, L["post_norm"], eps)
        if "router" in L:
            x = x + _moe_block(model, h, L, c, br)
        else:
            x = x + _swiglu_mlp(model, h, L["wg"], L["wu"], L["wd"])
    cache.n = S
    if last_only:
        x = x[-1:]
    fw = np.ones_like(model.final_norm) if "no-final-norm-weight" in br else model.final_norm
    if hidden:
        return _rmsnorm(x, fw, eps)
    return _mm(model, _rmsnorm(x, fw, eps), model.head_t)


def last_hidden(model, ids):
    """The final norm's hidden state of the last of `ids` [D] (one prefill): an
    embedding model's vector before normalisation (last-token pooling)."""
    cache = KVCache(model, len(ids))
    return forward_step(model, cache, ids, last_only=True, hidden=True)[0]


def forward_logits(model, ids):
    """Teacher-forced logits of every position: [T, V] (one full prefill)."""
    cache = KVCache(model, len(ids))
    return forward_step(model, cache, ids)


def greedy(model, ids, n, stop_at_eos=False):
    """n greedy continuation ids (incremental decoding, contiguous KV cache).
    With stop_at_eos, stops after the first eos id (which is included)."""
    cache = KVCache(model, len(ids) + n)
    logits = forward_step(model, cache, ids, last_only=True)
    out, stops = [], stop_ids(model)
    for _ in range(n):
        tok = int(np.argmax(logits[-1]))
        out.append(tok)
        if stop_at_eos and tok in stops:
            break
        if len(out) == n:
            break
        logits = forward_step(model, cache, [tok], last_only=True)
    return out


def greedy_with_margins(model, ids, n):
    """Like greedy (no eos stop), and also, per step, how close the choice was to a
    tie: margins[i] = best - second-best logit, scales[i] = max |logit| of that row."""
    cache = KVCache(model, len(ids) + n)
    logits = forward_step(model, cache, ids, last_only=True)
    out, margins, scales = [], [], []
    for i in range(n):
        row = logits[-1]
        top2 = np.partition(row, -2)[-2:]
        tok = int(np.argmax(row))
        out.append(tok)
        margins.append(float(top2[1] - top2[0]))
        scales.append(float(np.abs(row).max()))
        if i + 1 < n:
            logits = forward_step(model, cache, [tok], last_only=True)
    return out, margins, scales


def top_k(row, k):
    """[(id, logit)] of the k largest entries of row, best first (ties: lower id first)."""
    k = min(k, row.shape[0])
    idx = np.argpartition(-row, k - 1)[:k]
    idx = idx[np.lexsort((idx, -row[idx]))]
    return [(int(i), float(row[i])) for i in idx]


def format_top_line(pos, top):
    return json.dumps({"pos": pos, "top": [[i, l] for i, l in top]}, separators=(",", ":"))


# --- command line ------------------------------------------------------------

def parse_ids(text):
    try:
        return [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad --prompt-ids {text!r}: expected integers") from None


def main(argv=None):
    ap = argparse.ArgumentParser(description="Independent NumPy float64 reference forward for Qwen3 checkpoints.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, hlp in (("logits", "teacher-forced top-K logits per prompt position (JSON lines)"),
                      ("greedy", "greedy continuation ids")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("-m", "--model", required=True, help="checkpoint directory (config.json + safetensors)")
        p.add_argument("--prompt-ids", required=True, type=parse_ids, help='token ids, e.g. "1 2 3"')
        p.add_argument("--break", dest="brk", action="append", default=[], choices=sorted(BREAKS),
                       help=argparse.SUPPRESS)
        p.add_argument("--compute-dtype", choices=["float64", "float32"], default="float64",
                       help=argparse.SUPPRESS)
        p.add_argument("--kv-cache-dtype", choices=sorted(KV_ROUND), default="f32",
                       help="round stored keys and values as a cache of this type does (default f32: exact)")
        if name == "logits":
            p.add_argument("--top", type=int, default=10, help="how many best logits per position (default 10)")
        else:
            p.add_argument("-n", type=int, required=True, help="number of tokens to generate")
            p.add_argument("--stop-at-eos", action="store_true", help="stop after an eos id")
    args = ap.parse_args(argv)
    if not args.prompt_ids:
        ap.error("--prompt-ids is empty")
    try:
        model = load_model(args.model, np.dtype(args.compute_dtype).type)
    except CheckpointError as e:
        print(f"qwen3_ref: {e}", file=sys.stderr)
        return 1
    model.breaks = set(args.brk)
    model.kv_cache_dtype = args.kv_cache_dtype
    try:
        if args.cmd == "logits":
            logits = forward_logits(model, args.prompt_ids)
            lines = [format_top_line(p, top_k(logits[p], args.top)) for p in range(logits.shape[0])]
            print("\n".join(lines))
        else:
            if args.n < 0:
                ap.error("-n must be >= 0")
            ids = greedy(model, args.prompt_ids, args.n, args.stop_at_eos) if args.n else []
            print(" ".join(str(i) for i in ids))
    except ValueError as e:
        print(f"qwen3_ref: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
