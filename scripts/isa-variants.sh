#!/usr/bin/env bash
# isa-variants.sh - print the instruction sets narrower than the widest this
# CPU runs, the ones to force with ENCORE_CPU_ISA in the `isa` test stage:
# "avx2 scalar" on an AVX-512 (F, BW, VL) CPU, "scalar" on an AVX2 + FMA +
# F16C one, nothing elsewhere (the scalar path is then the only one).
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
if has avx512f avx512bw avx512vl avx2 fma f16c; then echo "avx2 scalar"
elif has avx2 fma f16c; then echo "scalar"
fi
