"""test_quant_numpy.py - quant.c's dequantizers against the independent NumPy
ones of tests/reference/gguf_quants.py, bit for bit, on the random blocks
(edge cases included) that `test_quant --dump FILE` writes.

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
    pos, seen, failures = 0, [], 0
    while pos < len(data):
        name = data[pos:pos + 8].rstrip(b"\0").decode()
        (nb,) = struct.unpack_from("<I", data, pos + 8)
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
    if failures:
        sys.exit(1)
    print(f"test_quant_numpy: {', '.join(seen)} bit-identical to NumPy")


if __name__ == "__main__":
    main()
