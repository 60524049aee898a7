"""gguf_weights.py - quantized GGUF files for the reference checks
(test_reference.py --gguf): making one whose tensors each take their own
block type, and putting a file's dequantized weights into the reference model.

  make_mixed(engine, model_dir, spec, out)
      `encore quantize` writes the checkpoint once per block type of spec
      ("Q4_K" or "Q4_K,ffn_down_exps=Q6_K": the first type for every matrix,
      then per tensor-name part its own), and the file at out takes each
      tensor from the file of its type (as llama.cpp's Q4_K_M files put Q6_K
      on some tensors and Q4_K on the rest).
  use_gguf_weights(model, path)
      every block-typed tensor of the file, dequantized by NumPy
      (reference/gguf_quants.py, written from the formats' definitions),
      replaces its matrix in the reference model, and each matmul with it
      rounds its activations through the 8-bit blocks that type's kernels use
      (Q8_0 for Q8_0 / Q4_0, Q8_K for the K types). Float tensors (norms, a
      MoE router) keep the checkpoint's values, which they hold exactly.
"""

import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))
import gguf_py as G  # noqa: E402
import gguf_quants  # noqa: E402

FLOAT_TYPES = (G.GGML_F32, G.GGML_F16, G.GGML_BF16)
DENSE_KEYS = {"attn_q": "wq", "attn_k": "wk", "attn_v": "wv", "attn_output": "wo",
              "ffn_gate": "wg", "ffn_up": "wu", "ffn_down": "wd"}
EXPERT_SLOTS = {"ffn_gate_exps": 0, "ffn_up_exps": 1, "ffn_down_exps": 2}


def parse_spec(spec):
    """"T[,part=T2...]" -> (base type, {tensor-name part: type})."""
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items or "=" in items[0]:
        raise ValueError(f"--gguf {spec!r}: expected a type first, e.g. Q4_K,ffn_down_exps=Q6_K")
    over = {}
    for it in items[1:]:
        part, _, t = it.partition("=")
        if not t:
            raise ValueError(f"--gguf {spec!r}: {it!r} is not part=TYPE")
        over[part] = t.upper()
    return items[0].upper(), over


def make_mixed(engine, model_dir, spec, out):
    base, over = parse_spec(spec)
    files = {}
    for t in {base, *over.values()}:
        path = f"{out}.{t}.gguf"
        r = subprocess.run([engine, "quantize", "-m", model_dir, "-o", path, "--type", t.lower()],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError(f"encore quantize --type {t.lower()}: {r.stderr.strip()}")
        files[t] = G.read(path)
    kvs, tensors, alignment = files[base]
    donors = {t: {x.name: x for x in f[1]} for t, f in files.items()}
    mixed = []
    for x in tensors:
        t = next((t for part, t in over.items() if f".{part}." in f".{x.name}"), base)
        mixed.append(donors[t][x.name])
    G.write(out, kvs, mixed, alignment=alignment)
    for t in files:
        os.remove(f"{out}.{t}.gguf")
    return sorted({G.GGML_NAMES[x.ggml_type] for x in mixed})


def _dequantized(t, dtype):
    name = G.GGML_NAMES[t.ggml_type]
    n = int(np.prod(t.shape))
    return name, gguf_quants.dequantize(name, t.data, n).reshape(t.shape).astype(dtype)


def use_gguf_weights(model, path):
    """Returns the number of tensors replaced."""
    _, tensors, _ = G.read(path)
    act = {}  # id(weight array) -> block type of the tensor it came from

    def keep(w_in_out, typ):
        w = np.ascontiguousarray(w_in_out)
        act[id(w)] = typ
        return w

    tied = model.cfg["tie_word_embeddings"]
    n = 0
    for t in tensors:
        if t.ggml_type in FLOAT_TYPES:
            continue
        typ, w = _dequantized(t, model.dtype)
        parts = t.name.split(".")
        n += 1
        if t.name == "token_embd.weight":
            model.embed = w
            if tied:
                model.head_t = keep(w.T, typ)
        elif t.name == "output.weight":
            model.head_t = keep(w.T, typ)
        elif parts[0] == "blk" and parts[2] in DENSE_KEYS:
            model.layers[int(parts[1])][DENSE_KEYS[parts[2]]] = keep(w.T, typ)
        elif parts[0] == "blk" and parts[2] in EXPERT_SLOTS:
            L, slot = model.layers[int(parts[1])], EXPERT_SLOTS[parts[2]]
            experts = [list(ex) for ex in L["experts"]]
            for j, ex in enumerate(experts):
                ex[slot] = keep(w[j].T, typ)
            L["experts"] = [tuple(ex) for ex in experts]
        else:
            raise ValueError(f"{path}: block-typed tensor {t.name} has no place in the reference")
    model.act_quant = lambda x, w: gguf_quants.act_round_trip(act[id(w)], x) if id(w) in act else x
    return n
