"""gguf_quants.py - NumPy dequantizers of the GGUF block formats Q8_0, Q4_0,
Q4_K, Q5_K, Q6_K, Q5_0, IQ4_NL, Q3_K, IQ4_XS, Q2_K, Q4_1 and Q5_1, written from ggml's block layouts
(ggml-common.h) and dequantize_row_* (ggml-quants.c), and
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
    "Q5_0": (32, 22),
    "IQ4_NL": (32, 18),
    "Q3_K": (256, 110),
    "IQ4_XS": (256, 136),
    "Q2_K": (256, 84),
    "Q4_1": (32, 20),
    "Q5_1": (32, 24),
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


def deq_q5_0(b):
    """d f16, qh (u32, bit j the fifth bit of value j), 16 bytes of nibbles
    (value j low, value j + 16 high): d * (q - 16)."""
    d = _f16(b[:, 0:2])
    qh = b[:, 2:6].copy().view("<u4").astype(np.int64)  # [n, 1]
    qs = b[:, 6:22].astype(np.int32)
    j = np.arange(16)
    lo = (qs & 0x0F) | (((qh >> j) & 1) << 4)
    hi = (qs >> 4) | (((qh >> (j + 16)) & 1) << 4)
    return (np.concatenate([lo, hi], axis=1) - 16).astype(np.float32) * d


IQ4_NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10,
                          1, 13, 25, 38, 53, 69, 89, 113], np.float32)


def deq_iq4_nl(b):
    """d f16, 16 bytes of nibbles indexing IQ4_NL_VALUES (as Q4_0's)."""
    d = _f16(b[:, 0:2])
    qs = b[:, 2:18]
    return d * np.concatenate([IQ4_NL_VALUES[qs & 0x0F], IQ4_NL_VALUES[qs >> 4]], axis=1)


def _iq4_xs_scales(b):
    """[n, 136] IQ4_XS blocks -> [n, 8] int32 sub-block scales ls - 32: the
    low 4 bits in nibble s % 2 of scales_l[s / 2] (bytes 4..7), the high 2
    at bits 2s, 2s + 1 of scales_h (bytes 2..3, little-endian)."""
    sh = b[:, 2:4].copy().view("<u2").astype(np.int32)  # [n, 1]
    sl = b[:, 4:8].astype(np.int32)
    s = np.arange(8)
    low = (sl[:, s // 2] >> (4 * (s % 2))) & 0xF
    return (low | (((sh >> (2 * s)) & 3) << 4)) - 32


def deq_iq4_xs(b):
    """d f16, scales_h, scales_l, then per sub-block s of 32 values the 16
    bytes of an IQ4_NL block's nibbles: dl = d * (ls - 32), x = dl * kv[q]."""
    d = _f16(b[:, 0:2])
    ls = _iq4_xs_scales(b)
    out = np.empty((b.shape[0], 256), np.float32)
    for s in range(8):
        dl = d[:, 0] * ls[:, s].astype(np.float32)
        qs = b[:, 8 + 16 * s: 24 + 16 * s]
        kv = np.concatenate([IQ4_NL_VALUES[qs & 0x0F], IQ4_NL_VALUES[qs >> 4]], axis=1)
        out[:, 32 * s: 32 * s + 32] = dl[:, None] * kv
    return out


def quantize_iq4_xs(x):
    """float32 [n] (n a multiple of 256) -> IQ4_XS blocks: d = amax / (127 *
    31) as f16, each sub-block's ls - 32 = round(its amax / (127 d)), at most
    31, and each value the nearest table entry of x / (d (ls - 32))."""
    v = x.astype(np.float32).reshape(-1, 256)
    amax = np.abs(v).max(axis=1)
    d = (amax / (127.0 * 31.0)).astype(np.float16)
    df = d.astype(np.float32)
    sub = np.abs(v.reshape(-1, 8, 32)).max(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ls = np.where(df[:, None] > 0, np.rint(sub / (127.0 * df[:, None])), 0)
    ls = np.clip(ls, -32, 31).astype(np.int32)
    dl = df[:, None] * ls.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(dl[:, :, None] != 0, v.reshape(-1, 8, 32) / dl[:, :, None], 0)
    idx = np.abs(t[..., None] - IQ4_NL_VALUES).argmin(axis=3).astype(np.uint8)  # [n, 8, 32]
    u = ls + 32
    out = np.zeros((v.shape[0], 136), np.uint8)
    out[:, 0:2] = d.view(np.uint8).reshape(-1, 2)
    sh = np.zeros(v.shape[0], np.uint16)
    for s in range(8):
        sh |= ((u[:, s] >> 4) & 3).astype(np.uint16) << (2 * s)
        out[:, 4 + s // 2] |= ((u[:, s] & 15) << (4 * (s % 2))).astype(np.uint8)
        out[:, 8 + 16 * s: 24 + 16 * s] = idx[:, s, :16] | (idx[:, s, 16:] << 4)
    out[:, 2:4] = sh.view(np.uint8).reshape(-1, 2)
    return out.tobytes()


def _levels_1(qs, qh):
    """Q4_1 / Q5_1 levels [n, 32]: value j's nibble (j < 16 low, else high
    of byte j - 16), plus 16 for bit j of qh (Q5_1; qh None for Q4_1)."""
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.int64)
    if qh is not None:
        h = qh.copy().view("<u4").astype(np.int64)  # [n, 1]
        q |= ((h >> np.arange(32)) & 1) << 4
    return q


def deq_q4_1(b):
    """d f16, m f16, 16 bytes of nibbles: x = q d + m."""
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    return _levels_1(b[:, 4:20], None).astype(np.float32) * d + m


def deq_q5_1(b):
    """d f16, m f16, qh (u32, bit j value j's fifth bit), 16 bytes of
    nibbles: x = q d + m."""
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    return _levels_1(b[:, 8:24], b[:, 4:8]).astype(np.float32) * d + m


def quantize_1(x, bits):
    """float32 [n] -> Q4_1 (bits 4) or Q5_1 blocks as ggml's reference
    quantizers: m = min, d = (max - min) / (2^bits - 1), q = trunc((x - m) /
    d + 0.5) clamped to the top level."""
    v = x.astype(np.float32).reshape(-1, 32)
    lo, hi = v.min(axis=1, keepdims=True), v.max(axis=1, keepdims=True)
    top = (1 << bits) - 1
    d = (hi - lo) / np.float32(top)
    with np.errstate(divide="ignore"):
        idv = np.where(d != 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    q = np.minimum(np.trunc((v - lo) * idv + np.float32(0.5)), top).astype(np.uint32)
    n = v.shape[0]
    head = np.concatenate([d.astype(np.float16).view(np.uint8).reshape(n, 2),
                           lo.astype(np.float16).view(np.uint8).reshape(n, 2)], axis=1)
    qs = ((q[:, :16] & 15) | ((q[:, 16:] & 15) << 4)).astype(np.uint8)
    if bits == 4:
        return np.concatenate([head, qs], axis=1).tobytes()
    qh = ((q >> 4) << np.arange(32, dtype=np.uint32)).sum(axis=1).astype("<u4")
    return np.concatenate([head, qh.view(np.uint8).reshape(n, 4), qs], axis=1).tobytes()


def deq_q2_k(b):
    """scales 16 B (low nibble sc, high nibble m, per group of 16), qs 64 B,
    d f16, dmin f16: value 32 j + 16 h + l of each 128 (group 8 n + 2 j + h)
    is q = (qs[32 n + 16 h + l] >> 2 j) & 3, x = (d sc) q - dmin m."""
    sc = b[:, 0:16].astype(np.int32)
    qs = b[:, 16:80].astype(np.int32)
    d, dmin = _f16(b[:, 80:82]), _f16(b[:, 82:84])
    out = np.empty((b.shape[0], 256), np.float32)
    for g in range(16):
        n, j, h = g // 8, (g % 8) // 2, g % 2
        q = ((qs[:, 32 * n + 16 * h: 32 * n + 16 * h + 16] >> (2 * j)) & 3).astype(np.float32)
        dl = d * (sc[:, g: g + 1] & 15).astype(np.float32)
        ml = dmin * (sc[:, g: g + 1] >> 4).astype(np.float32)
        out[:, 16 * g: 16 * g + 16] = dl * q - ml
    return out


def quantize_q2_k(x):
    """float32 [n] (n a multiple of 256) -> Q2_K blocks: each group of 16
    takes the offset m = max(0, -min) and the step (max + m) / 3; d and dmin
    are the largest step and offset over 15 (f16), sc and m those rounded
    in 0..15, q the nearest of 0..3 to (x + dmin m) / (d sc)."""
    v = x.astype(np.float32).reshape(-1, 16, 16)
    off = np.maximum(0.0, -v.min(axis=2))
    step = (v.max(axis=2) + off) / 3.0
    d = (step.max(axis=1) / 15.0).astype(np.float16)
    dmin = (off.max(axis=1) / 15.0).astype(np.float16)
    df, mf = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.clip(np.where(df > 0, np.rint(step / df), 0), 0, 15).astype(np.int32)
        m = np.clip(np.where(mf > 0, np.rint(off / mf), 0), 0, 15).astype(np.int32)
        dl = df * sc.astype(np.float32)
        q = np.where(dl[:, :, None] > 0, np.rint((v + (mf * m)[:, :, None]) / dl[:, :, None]), 0)
    q = np.clip(q, 0, 3).astype(np.uint8)  # [n, 16 groups, 16]
    out = np.zeros((v.shape[0], 84), np.uint8)
    out[:, 0:16] = (sc | (m << 4)).astype(np.uint8)
    for g in range(16):
        nn, j, h = g // 8, (g % 8) // 2, g % 2
        out[:, 16 + 32 * nn + 16 * h: 32 + 32 * nn + 16 * h] |= q[:, g] << (2 * j)
    out[:, 80:82] = d.view(np.uint8).reshape(-1, 2)
    out[:, 82:84] = dmin.view(np.uint8).reshape(-1, 2)
    return out.tobytes()


def deq_q3_k(b):
    """hmask 32 B, qs 64 B, scales 12 B (16 six-bit values), d f16: per 128
    values and shift j of the 2-bit q, 32 values in two groups of 16, each
    dl = d * (scale - 32), x = dl * (q - (hmask bit ? 0 : 4))."""
    hm = b[:, 0:32].astype(np.int32)
    qs = b[:, 32:96].astype(np.int32)
    sc = b[:, 96:108].astype(np.int32)
    d = _f16(b[:, 108:110])
    scale = np.empty((b.shape[0], 16), np.int32)
    for g in range(16):
        low = sc[:, g] & 0xF if g < 8 else sc[:, g - 8] >> 4
        scale[:, g] = low | (((sc[:, 8 + g % 4] >> (2 * (g // 4))) & 3) << 4)
    out = np.empty((b.shape[0], 256), np.float32)
    m = 0
    for n in range(2):
        q = qs[:, 32 * n: 32 * n + 32]
        for j in range(4):
            for half in range(2):
                g = 8 * n + 2 * j + half
                dl = d[:, 0] * (scale[:, g] - 32).astype(np.float32)
                ql = (q[:, 16 * half: 16 * half + 16] >> (2 * j)) & 3
                h = (hm[:, 16 * half: 16 * half + 16] >> m) & 1
                v = (ql - np.where(h != 0, 0, 4)).astype(np.float32)
                base = 128 * n + 32 * j + 16 * half
                out[:, base: base + 16] = dl[:, None] * v
            m += 1
    return out


DEQUANT = {"Q8_0": deq_q8_0, "Q4_0": deq_q4_0, "Q4_K": deq_q4_k,
           "Q5_K": deq_q5_k, "Q6_K": deq_q6_k, "Q5_0": deq_q5_0,
           "IQ4_NL": deq_iq4_nl, "Q3_K": deq_q3_k, "IQ4_XS": deq_iq4_xs, "Q2_K": deq_q2_k,
           "Q4_1": deq_q4_1, "Q5_1": deq_q5_1}


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


# --- the types encore widens at load (Q5_0, IQ4_NL, Q3_K) ----------------------
#
# Simple quantizers to make test files of these types (not ggml's search for
# the best scales: any valid block will do), and their blocks rewritten as the
# Q8_0 / Q6_K blocks of the same values, from the layouts above.

def _f16_bytes(d):
    return np.asarray(d, np.float32).astype("<f2").view(np.uint8).reshape(-1, 2)


def quantize_q5_0(x):
    """float32 [n] -> Q5_0 blocks: d = amax / 15, q = clip(round(x / d), -16, 15) + 16."""
    b = np.asarray(x, np.float32).reshape(-1, 32)
    d = (np.abs(b).max(axis=1) / 15).astype(np.float16).astype(np.float32)
    q = np.clip(np.round(b / np.where(d > 0, d, 1)[:, None]), -16, 15).astype(np.int64) + 16
    qh = ((q >> 4) << np.arange(32)).sum(axis=1).astype("<u4")
    out = np.empty((b.shape[0], 22), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:6] = qh.view(np.uint8).reshape(-1, 4)
    out[:, 6:22] = (q[:, :16] & 15) | ((q[:, 16:] & 15) << 4)
    return out.tobytes()


def quantize_iq4_nl(x):
    """float32 [n] -> IQ4_NL blocks: d = amax / 127, each value the nearest entry."""
    b = np.asarray(x, np.float32).reshape(-1, 32)
    d = (np.abs(b).max(axis=1) / 127).astype(np.float16).astype(np.float32)
    v = b / np.where(d > 0, d, 1)[:, None]
    idx = np.abs(v[:, :, None] - IQ4_NL_VALUES[None, None, :]).argmin(axis=2)
    out = np.empty((b.shape[0], 18), np.uint8)
    out[:, 0:2] = _f16_bytes(d)
    out[:, 2:18] = idx[:, :16] | (idx[:, 16:] << 4)
    return out.tobytes()


def quantize_q3_k(x):
    """float32 [n] -> Q3_K blocks: per group of 16 a scale amax / 4 as
    d * (s - 32), s in 32..63, and levels clip(round(x / (d (s - 32))), -4, 3)."""
    b = np.asarray(x, np.float32).reshape(-1, 16, 16)
    gs = np.abs(b).max(axis=2) / 4  # [n, 16]
    d = (gs.max(axis=1) / 31).astype(np.float16).astype(np.float32)
    s = np.clip(np.round(gs / np.where(d > 0, d, 1)[:, None]), 0, 31).astype(np.int64)
    step = d[:, None] * s
    lv = np.clip(np.round(b / np.where(step > 0, step, 1)[:, :, None]), -4, 3).astype(np.int64)
    lv = np.where(step[:, :, None] > 0, lv, 0).reshape(-1, 256)
    s6 = s + 32
    out = np.zeros((b.shape[0], 110), np.uint8)
    p = np.arange(256)
    h = (lv >= 0).astype(np.int64)
    q2 = lv + 4 * (1 - h)
    for v in range(256):
        out[:, p[v] % 32] |= (h[:, v] << (v // 32)).astype(np.uint8)
        out[:, 32 + 32 * (v // 128) + v % 32] |= (q2[:, v] << (2 * ((v // 32) % 4))).astype(np.uint8)
    for g in range(16):
        low = s6[:, g] & 15
        if g < 8:
            out[:, 96 + g] |= low.astype(np.uint8)
        else:
            out[:, 96 + g - 8] |= (low << 4).astype(np.uint8)
        out[:, 104 + g % 4] |= ((s6[:, g] >> 4) << (2 * (g // 4))).astype(np.uint8)
    out[:, 108:110] = _f16_bytes(d)
    return out.tobytes()


def _q6_k_blocks(d_bytes, scales, q6):
    """Q6_K blocks from d (f16 bytes [n, 2]), int8 scales [n, 16] and levels
    q6 [n, 256] (0..63): value 32 i + l of each 128 in ql[l + 32 (i & 1)]'s
    nibble i >> 1 and qh[l]'s bits 2 i."""
    out = np.zeros((q6.shape[0], 210), np.uint8)
    for v in range(256):
        n, i, l = v // 128, (v % 128) // 32, v % 32
        out[:, 64 * n + l + 32 * (i & 1)] |= ((q6[:, v] & 15) << (4 * (i >> 1))).astype(np.uint8)
        out[:, 128 + 32 * n + l] |= ((q6[:, v] >> 4) << (2 * i)).astype(np.uint8)
    out[:, 192:208] = scales.astype(np.int8).view(np.uint8)
    out[:, 208:210] = d_bytes
    return out


def widen(name, raw, n):
    """(widened type name, its blocks) holding the same values as the n
    values of raw of type name: Q5_0 and IQ4_NL as Q8_0 (d, and each value
    over d as int8), Q3_K as Q6_K (d, scale - 32, level + 32)."""
    qk, nbytes = BLOCK[name]
    b = np.frombuffer(raw, np.uint8)[: (n // qk) * nbytes].reshape(-1, nbytes)
    if name in ("Q5_0", "IQ4_NL"):
        d = b[:, 0:2]
        if name == "Q5_0":
            qh = b[:, 2:6].copy().view("<u4").astype(np.int64)
            qs = b[:, 6:22].astype(np.int64)
            j = np.arange(16)
            q = np.concatenate([(qs & 15) | (((qh >> j) & 1) << 4),
                                (qs >> 4) | (((qh >> (j + 16)) & 1) << 4)], axis=1) - 16
        else:
            qs = b[:, 2:18]
            q = IQ4_NL_VALUES[np.concatenate([qs & 15, qs >> 4], axis=1)].astype(np.int64)
        return "Q8_0", np.concatenate([d, q.astype(np.int8).view(np.uint8)], axis=1).tobytes()
    if name != "Q3_K":
        raise ValueError(f"widen: {name} is not widened")
    hm, qs, sc = b[:, 0:32].astype(np.int64), b[:, 32:96].astype(np.int64), b[:, 96:108].astype(np.int64)
    scale = np.stack([(sc[:, g] & 15 if g < 8 else sc[:, g - 8] >> 4) |
                      (((sc[:, 8 + g % 4] >> (2 * (g // 4))) & 3) << 4) for g in range(16)], axis=1)
    v = np.arange(256)
    q2 = (qs[:, 32 * (v // 128) + v % 32] >> (2 * ((v // 32) % 4))) & 3
    h = (hm[:, v % 32] >> (v // 32)) & 1
    level = q2 - np.where(h != 0, 0, 4)
    return "Q6_K", _q6_k_blocks(b[:, 108:110], scale - 32, level + 32).tobytes()


QUANTIZE_WIDENED = {"Q5_0": quantize_q5_0, "IQ4_NL": quantize_iq4_nl, "Q3_K": quantize_q3_k}
