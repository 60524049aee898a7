#!/usr/bin/env bash
# isa-variants.sh - print the instruction sets narrower than the widest this
# CPU runs, the ones to force with ENCORE_CPU_ISA in the `isa` test stage:
# "avx2 scalar" on an AVX-512 (F, BW, VL) CPU or an AVX2 + FMA + F16C one
# with AVX-VNNI, "scalar" on a plain AVX2 + FMA + F16C one, nothing elsewhere
# (the scalar path is then the only one). (The kernel tests run the avxvnni
# tables in-process wherever the CPU has AVX-VNNI.)
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
if has avx512f avx512bw avx512vl avx2 fma f16c; then echo "avx2 scalar"
elif has avx2 fma f16c avx_vnni; then echo "avx2 scalar"
elif has avx2 fma f16c; then echo "scalar"
fi
