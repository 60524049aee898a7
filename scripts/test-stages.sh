#!/usr/bin/env bash
# test-stages.sh - `make test`: every stage of the suite in turn, each run
# even when an earlier one failed, then one line per stage saying how it
# went; exits non-zero when any stage failed.
#
#   release     the release build's whole suite (build/)
#   isa         the suite again (less the tokenizer tests and the Vulkan
#               validation reruns) with the kernels forced to each
#               narrower instruction set this CPU runs (ENCORE_CPU_ISA=avx2
#               and scalar on an AVX-512 machine, scalar on an AVX2 one), so
#               a machine without AVX-512 is never the first to run a path
#   sanitizers  the whole suite built with ASan + UBSan (build-asan/), less the
#               validation-layer reruns
#   fuzz        the libFuzzer targets, built with clang and without the
#               Vulkan backend (build-fuzz/)
set -uo pipefail
cd "$(dirname "$0")/.."
make=${MAKE:-make}
stages=(release isa sanitizers fuzz)
declare -A target=([release]=test-release [isa]=test-isa [sanitizers]=test-asan [fuzz]=test-fuzz)
declare -A result
failed=0
for s in "${stages[@]}"; do
  printf '\n=== make test: stage %s (make %s) ===\n' "$s" "${target[$s]}"
  start=$(date +%s)
  if "$make" --no-print-directory "${target[$s]}"; then
    result[$s]="passed"
  else
    result[$s]="FAILED"
    failed=1
  fi
  result[$s]+=" in $(( $(date +%s) - start )) s"
done
printf '\n=== make test: summary ===\n'
for s in "${stages[@]}"; do printf '  %-11s %s (make %s)\n' "$s" "${result[$s]}" "${target[$s]}"; done
if [ $failed -ne 0 ]; then
  echo "make test: FAILED; rerun a stage alone with the make target shown, its failed tests with" \
       "ctest --test-dir DIR --rerun-failed --output-on-failure" >&2
fi
exit $failed
