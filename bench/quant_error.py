#!/usr/bin/env python3
"""quant_error.py - how far a quantized GGUF file's weights are from the
float weights they were made from: the relative RMS error per block type.

    /usr/bin/python3 bench/quant_error.py --ref MODEL-bf16.gguf FILE.gguf... [--rows 256]

For every tensor of FILE in a block type whose name the reference file holds
too (F32, F16 or BF16 there), the first ROWS rows of each are dequantized
(tests/reference/gguf_quants.py, NumPy written from ggml's layouts) and
compared with the reference's: sqrt(sum (w_q - w)^2 / sum w^2), summed per
block type over the tensors of that type. So files made from the same
reference by different quantizers (encore quantize, llama-quantize --pure)
compare type by type on the same values.
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
import gguf_py  # noqa: E402
import gguf_quants  # noqa: E402

FLOAT = {0: "F32", 1: "F16", 30: "BF16"}
BLOCK_NAMES = {2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K", 11: "Q3_K",
               12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 20: "IQ4_NL", 23: "IQ4_XS"}


def rows_of(t, rows):
    """(first `rows` rows' raw bytes, their value count) of tensor t."""
    n_rows = int(np.prod(t.shape[:-1])) if len(t.shape) > 1 else 1
    take = min(rows, n_rows)
    row_bytes = len(t.data) // n_rows
    return t.data[:take * row_bytes], take * t.shape[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="the float GGUF file the others were made from")
    ap.add_argument("--rows", type=int, default=256, help="rows compared per tensor (default 256)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    _, ref_tensors, _ = gguf_py.read(args.ref)
    ref = {t.name: t for t in ref_tensors if t.ggml_type in FLOAT}
    for path in args.files:
        _, tensors, _ = gguf_py.read(path)
        err, norm, count = {}, {}, {}
        for t in tensors:
            name = BLOCK_NAMES.get(t.ggml_type)
            if name is None or t.name not in ref:
                continue
            raw, n = rows_of(t, args.rows)
            r_raw, r_n = rows_of(ref[t.name], args.rows)
            w = gguf_py.to_f32(FLOAT[ref[t.name].ggml_type], r_raw).astype(np.float64)[:r_n]
            wq = gguf_quants.dequantize(name, raw, n).astype(np.float64)
            err[name] = err.get(name, 0.0) + float(np.sum((wq - w) ** 2))
            norm[name] = norm.get(name, 0.0) + float(np.sum(w ** 2))
            count[name] = count.get(name, 0) + 1
        for name in sorted(err):
            print(f"{os.path.basename(path)}\t{name}\t{count[name]} tensors\t"
                  f"relative RMS error {np.sqrt(err[name] / norm[name]):.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
