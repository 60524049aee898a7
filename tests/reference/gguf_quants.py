"""gguf_quants.py - NumPy dequantizers of the GGUF block formats Q8_0, Q4_0,
Q4_K, Q5_K and Q6_K, written from ggml's block layouts (ggml-common.h) and
independent of encore's C code: the oracle for its block formats, and for
models whose weights are quantized.

    dequantize(type_name, raw_bytes, n_values) -> float32 array [n_values]

Each function takes a uint8 array of whole blocks and returns [n_blocks, QK].
Arithmetic follows ggml's dequantize_row_* in float32 (d * sc first, then
times q, minus dmin * m), so results match a C dequantizer bit for bit.
"""
import numpy as np

BLOCK = {  # name: (values per block, bytes per block)
    "Q8_0": (32, 34),
    "Q4_0": (32, 18),
    "Q4_K": (256, 144),
    "Q5_K": (256, 176),
    "Q6_K": (256, 210),
}


def _f16(b):
    """[n, 2] uint8 -> [n, 1] float32 (little-endian IEEE half)."""
    return np.ascontiguousarray(b).view("<f2").astype(np.float32).reshape(-1, 1)


def deq_q8_0(b):
    d = _f16(b[:, 0:2])
    q = b[:, 2:34].view(np.int8).astype(np.float32)
    return d * q


def deq_q4_0(b):
    d = _f16(b[:, 0:2])
    qs = b[:, 2:18]
    lo = (qs & 0x0F).astype(np.int32) - 8
    hi = (qs >> 4).astype(np.int32) - 8
    return d * np.concatenate([lo, hi], axis=1).astype(np.float32)


def _scale_min_k4(sc):
    """sc [n, 12] -> (scales [n, 8], mins [n, 8]) as ggml's get_scale_min_k4."""
    sc = sc.astype(np.int32)
    d = np.empty((sc.shape[0], 8), np.int32)
    m = np.empty((sc.shape[0], 8), np.int32)
    d[:, :4] = sc[:, 0:4] & 63
    m[:, :4] = sc[:, 4:8] & 63
    d[:, 4:] = (sc[:, 8:12] & 0xF) | ((sc[:, 0:4] >> 6) << 4)
    m[:, 4:] = (sc[:, 8:12] >> 4) | ((sc[:, 4:8] >> 6) << 4)
    return d, m


def _deq_k45(b, qh):
    """Q4_K (qh None) or Q5_K: d, dmin, scales, [qh], qs."""
    d = _f16(b[:, 0:2])
    dmin = _f16(b[:, 2:4])
    sc, mn = _scale_min_k4(b[:, 4:16])
    qs = b[:, -128:].reshape(-1, 4, 32).astype(np.int32)
    q = np.stack([qs & 0x0F, qs >> 4], axis=2)  # [n, chunk 4, half 2, 32]
    if qh is not None:
        qh = qh.astype(np.int32)  # [n, 32]
        for c in range(4):
            for h in range(2):
                q[:, c, h, :] |= ((qh >> (2 * c + h)) & 1) << 4
    q = q.reshape(-1, 8, 32).astype(np.float32)
    ds = (d * sc.astype(np.float32))[:, :, None]
    dm = (dmin * mn.astype(np.float32))[:, :, None]
    return (ds * q - dm).reshape(-1, 256)


def deq_q4_k(b):
    return _deq_k45(b, None)


def deq_q5_k(b):
    return _deq_k45(b, b[:, 16:48])


def deq_q6_k(b):
    ql = b[:, 0:128].astype(np.int32)
    qh = b[:, 128:192].astype(np.int32)
    sc = b[:, 192:208].view(np.int8).astype(np.float32)
    d = _f16(b[:, 208:210])
    out = np.empty((b.shape[0], 256), np.float32)
    for n in range(2):
        l_lo = ql[:, 64 * n: 64 * n + 32]
        l_hi = ql[:, 64 * n + 32: 64 * n + 64]
        h = qh[:, 32 * n: 32 * n + 32]
        q = [
            (l_lo & 0xF) | (((h >> 0) & 3) << 4),
            (l_hi & 0xF) | (((h >> 2) & 3) << 4),
            (l_lo >> 4) | (((h >> 4) & 3) << 4),
            (l_hi >> 4) | (((h >> 6) & 3) << 4),
        ]
        for i in range(4):
            for half in range(2):
                s = sc[:, 8 * n + 2 * i + half][:, None]
                qq = (q[i][:, 16 * half: 16 * half + 16] - 32).astype(np.float32)
                base = 128 * n + 32 * i + 16 * half
                out[:, base: base + 16] = d * s * qq
    return out


DEQUANT = {"Q8_0": deq_q8_0, "Q4_0": deq_q4_0, "Q4_K": deq_q4_k,
           "Q5_K": deq_q5_k, "Q6_K": deq_q6_k}


def dequantize(name, raw, n):
    qk, nbytes = BLOCK[name]
    if n % qk:
        raise ValueError(f"{name}: {n} values is no whole number of {qk}-blocks")
    b = np.frombuffer(raw, np.uint8)[: (n // qk) * nbytes].reshape(-1, nbytes)
    return DEQUANT[name](b).reshape(-1)


# --- quantizers (ggml's reference ones, for Q8_0 and Q4_0) --------------------

def _round_away(v):
    """C's lroundf of float32 values: halves away from zero (exact in float64)."""
    v = v.astype(np.float64)
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def quantize_q8_0(x):
    """float32 [n] (n % 32 == 0) -> raw Q8_0 blocks: d = amax / 127, q = round(x / d)."""
    x = np.asarray(x, np.float32).reshape(-1, 32)
    d = (np.abs(x).max(axis=1) / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = _round_away((x * inv[:, None]).astype(np.float32)).astype(np.int8)
    out = np.empty((x.shape[0], 34), np.uint8)
    out[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def quantize_q4_0(x):
    """float32 [n] -> raw Q4_0 blocks: d = (value of largest |x|) / -8,
    q = min(15, trunc(x / d + 8.5)), as ggml's quantize_row_q4_0_ref."""
    x = np.asarray(x, np.float32).reshape(-1, 32)
    idx = np.abs(x).argmax(axis=1)  # the first of the largest magnitudes
    mx = x[np.arange(x.shape[0]), idx]
    d = (mx / np.float32(-8)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    v = ((x * inv[:, None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(v)).astype(np.uint8)
    out = np.empty((x.shape[0], 18), np.uint8)
    out[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


QUANTIZE = {"Q8_0": quantize_q8_0, "Q4_0": quantize_q4_0}


def round_trip(name, w):
    """The matrix w [rows, cols] as a checkpoint quantized to `name` holds it:
    every row through float32, the quantizer and the dequantizer."""
    w32 = np.asarray(w, np.float32)
    raw = QUANTIZE[name](w32.reshape(-1))
    return dequantize(name, raw, w32.size).reshape(w32.shape)


def q8_k_round_trip(x):
    """float32 [n] (n % 256 == 0) through Q8_K and back, as float64: per 256
    values d = amax / 127 (f32), q = round(x * (127 / amax)) (f32 product,
    halves away from zero) clamped to [-127, 127], value d * q."""
    b = np.asarray(x, np.float32).reshape(-1, 256)
    amax = np.abs(b).max(axis=1)
    pos = amax > 0
    with np.errstate(divide="ignore"):
        inv = np.where(pos, np.float32(127) / np.where(pos, amax, 1), 0).astype(np.float32)
        d = np.where(pos, amax / np.float32(127), 0).astype(np.float32)
    q = np.clip(_round_away((b * inv[:, None]).astype(np.float32)), -127, 127)
    return (d.astype(np.float64)[:, None] * q).reshape(-1)


def act_round_trip(name, x):
    """Activations x [..., K] as an engine's quantized matmul holds them: rows
    in 8-bit blocks (Q8_0 for Q8_0 and Q4_0 weights, Q8_K for the K types)
    and back, as float64."""
    x32 = np.asarray(x, np.float32)
    if name in ("Q4_K", "Q5_K", "Q6_K"):
        return q8_k_round_trip(x32.reshape(-1)).reshape(x32.shape)
    if name not in ("Q8_0", "Q4_0"):
        raise ValueError(f"act_round_trip: no activation format for {name} weights here")
    raw = quantize_q8_0(x32.reshape(-1))
    return dequantize("Q8_0", raw, x32.size).reshape(x32.shape).astype(np.float64)
