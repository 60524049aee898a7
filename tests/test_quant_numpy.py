"""test_quant_numpy.py - quant.c's dequantizers against the independent NumPy
ones of tests/reference/gguf_quants.py, bit for bit, on the random blocks
(edge cases included) that `test_quant --dump FILE` writes; and its Q8_0 and
Q4_0 quantizers (ggml's reference algorithms) against NumPy's, byte for byte.

    test_quant_numpy.py PATH/TO/test_quant
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference"))
import gguf_quants  # noqa: E402


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "blocks.bin")
        subprocess.run([sys.argv[1], "--dump", path], check=True)
        data = open(path, "rb").read()
    pos, seen, seen_q, failures = 0, [], [], 0
    while pos < len(data):
        name = data[pos:pos + 8].rstrip(b"\0").decode()
        (nb,) = struct.unpack_from("<I", data, pos + 8)
        if name.endswith("+"):  # a quantizer: NumPy's bytes from the same input
            name = name[:-1]
            qk, bb = gguf_quants.BLOCK[name]
            x = np.frombuffer(data, np.float32, nb, pos + 12)
            pos += 12 + 4 * nb
            got = np.frombuffer(data, np.uint8, nb // qk * bb, pos)
            pos += nb // qk * bb
            want = np.frombuffer(gguf_quants.QUANTIZE[name](x), np.uint8)
            bad = np.flatnonzero(got != want)
            if bad.size:
                print(f"FAIL {name} quantizer: {bad.size} bytes differ from NumPy's; first in block {bad[0] // bb}")
                failures += 1
            seen_q.append(name)
            continue
        qk, bb = gguf_quants.BLOCK[name]
        pos += 12
        raw = data[pos:pos + nb * bb]
        pos += nb * bb
        got = np.frombuffer(data, np.float32, nb * qk, pos)
        pos += 4 * nb * qk
        want = gguf_quants.dequantize(name, raw, nb * qk)
        diff = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        if diff.size:
            i = diff[0]
            print(f"FAIL {name}: {diff.size} values differ; first at {i} (block {i // qk}): "
                  f"C {got[i]!r}, NumPy {want[i]!r}")
            failures += 1
        seen.append(name)
    if sorted(seen) != sorted(gguf_quants.BLOCK):
        print(f"FAIL: the dump holds {seen}, expected {sorted(gguf_quants.BLOCK)}")
        failures += 1
    if sorted(seen_q) != sorted(gguf_quants.QUANTIZE):
        print(f"FAIL: the dump holds quantizers {seen_q}, expected {sorted(gguf_quants.QUANTIZE)}")
        failures += 1
    if failures:
        sys.exit(1)
    print(f"test_quant_numpy: {', '.join(seen)} dequantized and {', '.join(seen_q)} quantized "
          "bit-identical to NumPy")


if __name__ == "__main__":
    main()
