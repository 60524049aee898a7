"""gguf_py.py - a GGUF v3 writer for the tests, written from the format's
definition and independent of encore's C writer (src/model/gguf_write.c).

A file is built from a list of (key, type, value) metadata entries and a list
of tensors (name, ggml type id, encore shape, raw bytes); tensors are written
in the order given, each at a multiple of the alignment. Every field can be
overridden (offsets, n_dims, type ids, string lengths) so that the bad-file
tests can lay out precisely the broken byte they need.

It also converts a Hugging Face checkpoint the way llama.cpp's
convert_hf_to_gguf.py does for the qwen3 architecture (keys, tensor names,
no q/k permutation, norms in F32, the tokenizer from tokenizer.json), keeping
each tensor's bytes as stored; a Qwen3-MoE checkpoint as qwen3moe (the expert
keys, the router as ffn_gate_inp and each projection's experts concatenated
in expert order as ffn_{gate,up,down}_exps [E, N, K]).

And it reads a GGUF v3 file back (read): its metadata entries and tensors as
raw bytes, so a test can rebuild a file from the tensors of others (a
qwen3moe file whose expert tensors each have their own block type).
"""

import json
import os
import struct

import numpy as np

# value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
# ggml tensor types
GGML_F32, GGML_F16, GGML_Q4_0, GGML_Q8_0, GGML_Q4_K, GGML_BF16 = 0, 1, 2, 8, 12, 30
GGML_Q5_K, GGML_Q6_K = 13, 14
GGML_Q5_0, GGML_Q3_K, GGML_IQ4_NL, GGML_IQ4_XS, GGML_Q2_K = 6, 11, 20, 23, 10
GGML_Q4_1, GGML_Q5_1 = 3, 7
GGML_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_BF16: "BF16", GGML_Q4_0: "Q4_0",
              GGML_Q8_0: "Q8_0", GGML_Q4_K: "Q4_K", GGML_Q5_K: "Q5_K", GGML_Q6_K: "Q6_K",
              GGML_Q5_0: "Q5_0", GGML_Q3_K: "Q3_K", GGML_IQ4_NL: "IQ4_NL",
              GGML_IQ4_XS: "IQ4_XS", GGML_Q2_K: "Q2_K", GGML_Q4_1: "Q4_1",
              GGML_Q5_1: "Q5_1"}
GGML_IDS = {name: i for i, name in GGML_NAMES.items()}
ST_TO_GGML = {"F32": GGML_F32, "F16": GGML_F16, "BF16": GGML_BF16}


def gstr(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value_bytes(t, v):
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        out = struct.pack("<IQ", et, len(items))
        return out + b"".join(value_bytes(et, x) for x in items)
    return struct.pack(_SCALAR[t], v)


def kv_bytes(key, t, v):
    return gstr(key) + struct.pack("<I", t) + value_bytes(t, v)


class Tensor:
    def __init__(self, name, ggml_type, shape, data, offset=None, n_dims=None):
        self.name, self.ggml_type, self.shape, self.data = name, ggml_type, list(shape), data
        self.offset, self.n_dims = offset, n_dims  # None: computed / len(shape)

    def info_bytes(self, offset):
        ne = list(reversed(self.shape))  # ggml: contiguous dimension first
        n_dims = len(ne) if self.n_dims is None else self.n_dims
        return (gstr(self.name) + struct.pack("<I", n_dims) +
                b"".join(struct.pack("<Q", n) for n in ne) +
                struct.pack("<IQ", self.ggml_type, offset))


def build(kvs, tensors, alignment=32, version=3, magic=b"GGUF", raw_kvs=None):
    """The bytes of a GGUF file. raw_kvs (already encoded) are appended to kvs."""
    body_kv = [kv_bytes(k, t, v) for k, t, v in kvs] + list(raw_kvs or [])
    offsets, off = [], 0
    for t in tensors:
        offsets.append(off if t.offset is None else t.offset)
        off = (off + len(t.data) + alignment - 1) // alignment * alignment
    head = magic + struct.pack("<IQQ", version, len(tensors), len(body_kv))
    head += b"".join(body_kv) + b"".join(t.info_bytes(o) for t, o in zip(tensors, offsets))
    head += b"\0" * (-len(head) % alignment)
    data = bytearray()
    for t, o in zip(tensors, offsets):
        if t.offset is None:
            data += b"\0" * (o - len(data))
            data += t.data
        elif o + len(t.data) > len(data):
            data += b"\0" * max(0, o - len(data))
            data[o:o + len(t.data)] = t.data
    return bytes(head + data)


def write(path, *args, **kw):
    with open(path, "wb") as f:
        f.write(build(*args, **kw))


# --- reading ----------------------------------------------------------------

# (values per block, bytes per block) of each tensor type
GGML_BLOCK = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_BF16: (1, 2), GGML_Q4_0: (32, 18),
              GGML_Q8_0: (32, 34), GGML_Q4_K: (256, 144), GGML_Q5_K: (256, 176),
              GGML_Q6_K: (256, 210), GGML_Q5_0: (32, 22), GGML_Q3_K: (256, 110),
              GGML_IQ4_NL: (32, 18)}


def tensor_bytes(ggml_type, shape):
    qk, nb = GGML_BLOCK[ggml_type]
    rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
    return rows * shape[-1] // qk * nb


class _Reader:
    def __init__(self, blob):
        self.b, self.at = blob, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.at)
        self.at += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("<Q")
        self.at += n
        return self.b[self.at - n:self.at].decode("utf-8")

    def value(self, t):
        if t == STR:
            return self.string()
        if t == ARR:
            et, n = self.take("<IQ")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(_SCALAR[t])


def read(path):
    """(kvs [(key, type, value)], tensors [Tensor with its raw bytes], alignment)
    of a GGUF v3 file whose tensors are of the types of GGML_BLOCK."""
    r = _Reader(open(path, "rb").read())
    if r.take("<4s") != b"GGUF" or r.take("<I") != 3:
        raise ValueError(f"{path}: not a GGUF v3 file")
    n_tensors, n_kv = r.take("<QQ")
    kvs = []
    for _ in range(n_kv):
        key = r.string()
        t = r.take("<I")
        kvs.append((key, t, r.value(t)))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.take("<I")
        ne = [r.take("<Q") for _ in range(n_dims)]
        ggml_type, offset = r.take("<IQ")
        infos.append((name, ggml_type, list(reversed(ne)), offset))
    alignment = next((v for k, _, v in kvs if k == "general.alignment"), 32)
    base = (r.at + alignment - 1) // alignment * alignment
    tensors = [Tensor(name, t, shape, r.b[base + o:base + o + tensor_bytes(t, shape)])
               for name, t, shape, o in infos]
    return kvs, tensors, alignment


# --- a Hugging Face checkpoint as llama.cpp writes it ----------------------

def read_safetensors_raw(model_dir):
    """{name: (dtype, shape, raw bytes)} of a single-file or sharded checkpoint."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    files = (sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index)
             else ["model.safetensors"])
    out = {}
    for fn in files:
        blob = open(os.path.join(model_dir, fn), "rb").read()
        n = int.from_bytes(blob[:8], "little")
        header = json.loads(blob[8:8 + n])
        for name, info in header.items():
            if name != "__metadata__":
                b, e = info["data_offsets"]
                out[name] = (info["dtype"], info["shape"], blob[8 + n + b:8 + n + e])
    return out


LAYER_NAMES = [("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"),
               ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
               ("self_attn.o_proj", "attn_output"), ("self_attn.q_norm", "attn_q_norm"),
               ("self_attn.k_norm", "attn_k_norm"), ("post_attention_layernorm", "ffn_norm"),
               ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")]
EXPERT_NAMES = [("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"),
                ("down_proj", "ffn_down_exps")]


def _norm_f32(dtype, raw):
    return to_f32(dtype, raw).tobytes()


def moe_kvs(cfg):
    """qwen3moe's expert keys of a Qwen3-MoE config."""
    return [("qwen3moe.expert_count", U32, cfg["num_experts"]),
            ("qwen3moe.expert_used_count", U32, cfg["num_experts_per_tok"]),
            ("qwen3moe.expert_feed_forward_length", U32, cfg["moe_intermediate_size"]),
            ("qwen3moe.expert_weights_norm", BOOL, bool(cfg.get("norm_topk_prob", False)))]


def rope_kvs(cfg, arch):
    """rope_scaling's keys as convert_hf_to_gguf.py writes them (linear: type
    and factor; yarn: also original_context_length and the optional knobs)."""
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type"))
    if kind not in ("linear", "yarn"):
        return []
    kvs = [(f"{arch}.rope.scaling.type", STR, kind), (f"{arch}.rope.scaling.factor", F32, rs["factor"])]
    if kind == "yarn":
        kvs.append((f"{arch}.rope.scaling.original_context_length", U32, rs["original_max_position_embeddings"]))
        for key, name in (("attention_factor", "yarn_attn_factor"), ("beta_fast", "yarn_beta_fast"),
                          ("beta_slow", "yarn_beta_slow")):
            if rs.get(key) is not None:
                kvs.append((f"{arch}.rope.scaling.{name}", F32, rs[key]))
    return kvs


def model_kvs(cfg, arch=None):
    """The metadata of a config: qwen3, or qwen3moe with its expert keys."""
    moe = cfg.get("num_experts", 0) > 0
    arch = arch or ("qwen3moe" if moe else "qwen3")
    hd = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    return [("general.architecture", STR, arch), ("general.name", STR, "test"),
            (f"{arch}.context_length", U32, cfg.get("max_position_embeddings", 32768)),
            (f"{arch}.embedding_length", U32, cfg["hidden_size"]),
            (f"{arch}.block_count", U32, cfg["num_hidden_layers"]),
            (f"{arch}.feed_forward_length", U32, cfg["intermediate_size"]),
            (f"{arch}.attention.head_count", U32, cfg["num_attention_heads"]),
            (f"{arch}.attention.head_count_kv", U32, cfg.get("num_key_value_heads", cfg["num_attention_heads"])),
            (f"{arch}.attention.key_length", U32, hd), (f"{arch}.attention.value_length", U32, hd),
            (f"{arch}.rope.freq_base", F32, cfg["rope_theta"]),
            (f"{arch}.attention.layer_norm_rms_epsilon", F32, cfg["rms_norm_eps"])] + \
        rope_kvs(cfg, arch) + (moe_kvs(cfg) if moe and arch == "qwen3moe" else [])


def model_tensors(model_dir, cfg):
    """llama.cpp's tensors of the checkpoint, bytes as stored (norms as F32)."""
    st = read_safetensors_raw(model_dir)

    def put(hf, gg, norm=False):
        dtype, shape, raw = st[hf]
        if norm:
            return Tensor(gg, GGML_F32, shape, _norm_f32(dtype, raw))
        return Tensor(gg, ST_TO_GGML[dtype], shape, raw)

    def stacked(l, hf, gg):
        """every expert's projection, concatenated in expert order: [E, N, K]"""
        parts = [st[f"model.layers.{l}.mlp.experts.{j}.{hf}.weight"]
                 for j in range(cfg["num_experts"])]
        return Tensor(f"blk.{l}.{gg}.weight", ST_TO_GGML[parts[0][0]],
                      [len(parts)] + parts[0][1], b"".join(raw for _, _, raw in parts))

    moe = cfg.get("num_experts", 0) > 0
    out = [put("model.embed_tokens.weight", "token_embd.weight")]
    for l in range(cfg["num_hidden_layers"]):
        for hf, gg in LAYER_NAMES[:8] if moe else LAYER_NAMES:
            out.append(put(f"model.layers.{l}.{hf}.weight", f"blk.{l}.{gg}.weight", "norm" in gg))
        if moe:
            out.append(put(f"model.layers.{l}.mlp.gate.weight", f"blk.{l}.ffn_gate_inp.weight"))
            out += [stacked(l, hf, gg) for hf, gg in EXPERT_NAMES]
    out.append(put("model.norm.weight", "output_norm.weight", True))
    if not cfg.get("tie_word_embeddings", False):
        out.append(put("lm_head.weight", "output.weight"))
    return out


def to_f32(dtype, raw):
    if dtype == "F32":
        return np.frombuffer(raw, "<f4")
    if dtype == "BF16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    return np.frombuffer(raw, "<f2").astype(np.float32)


def quantize_q8_0(x):
    """Q8_0 from its definition: per 32 values an f16 scale d = max|x| / 127
    and int8 q = round(x / d); returns (block bytes, the dequantized f32
    values d * q, exact in f32)."""
    b = x.astype(np.float32).reshape(-1, 32)
    d = (np.abs(b).max(axis=1) / 127.0).astype(np.float16)
    df = d.astype(np.float32)
    q = np.where(df[:, None] > 0, np.round(b / np.where(df > 0, df, 1)[:, None]), 0)
    q = np.clip(q, -127, 127).astype(np.int8)
    blocks = np.concatenate([d.view(np.uint8).reshape(-1, 2), q.view(np.uint8)], axis=1)
    return blocks.tobytes(), (df[:, None] * q.astype(np.float32)).reshape(x.shape)


def tokenizer_kvs(tokenizer_json, tokenizer_config=None, vocab_size=None):
    """tokenizer.ggml.* as convert_hf_to_gguf.py writes a Qwen BPE tokenizer:
    the vocabulary and added tokens by id, padding ids "[PADn]" of type
    unused (5) up to vocab_size, added special tokens control (3), other
    added tokens user-defined (4), merges as "a b"."""
    tj = json.load(open(tokenizer_json, encoding="utf-8"))
    by_id = {i: (t, 1) for t, i in tj["model"]["vocab"].items()}
    for a in tj["added_tokens"]:
        by_id[a["id"]] = (a["content"], 3 if a["special"] else 4)
    n = max(max(by_id) + 1, vocab_size or 0)
    tokens = [by_id.get(i, (f"[PAD{i}]", 5)) for i in range(n)]
    merges = [m if isinstance(m, str) else f"{m[0]} {m[1]}" for m in tj["model"]["merges"]]
    kvs = [("tokenizer.ggml.model", STR, "gpt2"), ("tokenizer.ggml.pre", STR, "qwen2"),
           ("tokenizer.ggml.tokens", ARR, (STR, [t for t, _ in tokens])),
           ("tokenizer.ggml.token_type", ARR, (I32, [k for _, k in tokens])),
           ("tokenizer.ggml.merges", ARR, (STR, merges))]
    if tokenizer_config:
        tc = json.load(open(tokenizer_config, encoding="utf-8"))
        ids = {t: i for i, (t, _) in enumerate(tokens)}
        for key, field in (("eos_token_id", "eos_token"), ("padding_token_id", "pad_token")):
            if isinstance(tc.get(field), str):
                kvs.append((f"tokenizer.ggml.{key}", U32, ids[tc[field]]))
        if isinstance(tc.get("chat_template"), str):
            kvs.append(("tokenizer.chat_template", STR, tc["chat_template"]))
    return kvs
