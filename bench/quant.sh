#!/usr/bin/env bash
# bench/quant.sh - prefill and decode over quantized weights on the CPU, one
# block per weight type, the figures BENCHMARKS.md reports (`encore bench`,
# median of RUNS runs, decode mode k4, one sequence). With BEFORE set to an
# older encore binary, both run per type, one after the other, so that their
# ratio is measured in the same minutes; the load average is printed with
# each run, and bench_quant (the kernels alone, in thread CPU time) at the end.
#
#   bench/quant.sh [MODEL] [TYPES]
#     MODEL  a checkpoint directory or a GGUF file
#            (default build/models/qwen3-0.6b-geometry, from `make bench-model`)
#     TYPES  default "stored q8_0 q4_0 q4_k"; "stored" runs the weights as they
#            are in MODEL, the others quantize at load (--quantize)
#   env: ENCORE (default build/encore), BEFORE (optional), THREADS (2),
#        RUNS (3), PROMPT (256), GEN (48)
set -euo pipefail
model=${1:-build/models/qwen3-0.6b-geometry}
types=${2:-stored q8_0 q4_0 q4_k}
encore=${ENCORE:-build/encore}
bins="${BEFORE:-} $encore"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'); threads ${THREADS:-2}; model $model"
for t in $types; do
  q=()
  [ "$t" = stored ] || q=(--quantize "$t")
  for bin in $bins; do
    echo "== $t: $bin (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    "$bin" bench -m "$model" -t "${THREADS:-2}" "${q[@]}" --modes k4 --batches 1 \
      --runs "${RUNS:-3}" --prompt-len "${PROMPT:-256}" --gen-len "${GEN:-48}" |
      grep -E '^prefill|^  k4 |reaches'
  done
done
bq="$(dirname "$encore")/bench_quant"
if [ -x "$bq" ]; then "$bq" "${RUNS:-3}"; fi
