"""cpu_features.py - what the engine's CPU kernels can run on this machine,
read independently of the engine (from /proc/cpuinfo and ENCORE_CPU_ISA),
so that a test skips only where the engine must refuse."""
import os


def cpu_has_bf16_dot():
    """Whether --bf16-activations runs here: the build has the AVX512-BF16
    kernels (ENCORE_BUILD_AVX512BF16, which the ctest definitions set from
    CMake's compiler check; unset: assumed), the CPU has AVX512-BF16 (and
    AVX-512 BW/VL) and ENCORE_CPU_ISA keeps the avx512 kernels."""
    build = os.environ.get("ENCORE_BUILD_AVX512BF16")
    if build is not None and build.strip().upper() not in ("1", "ON", "TRUE", "YES"):
        return False
    if os.environ.get("ENCORE_CPU_ISA", "") not in ("", "avx512"):
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return all(x in flags for x in ("avx512_bf16", "avx512bw", "avx512vl"))
