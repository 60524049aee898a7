#!/usr/bin/env bash
# bench/compare.sh - two encore binaries side by side on one model: `encore
# generate --stats` in each decode mode, the binaries and modes interleaved,
# RUNS rounds; prints the median decode tokens/s of each (binary, mode).
# With BUSY=1 a CPU-bound busy loop runs on every core meanwhile.
#
#   bench/compare.sh OLD_BINARY NEW_BINARY MODEL_DIR [RUNS=3] [TOKENS=32]
set -euo pipefail
old=${1:?usage: bench/compare.sh OLD NEW MODEL_DIR [RUNS] [TOKENS]}
new=${2:?}
model=${3:?}
runs=${4:-3}
tokens=${5:-32}
pids=()
stop_hogs() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_hogs EXIT
if [ "${BUSY:-0}" = 1 ]; then
  for _ in $(seq 1 "$(nproc)"); do ( trap 'exit 0' TERM; while :; do :; done ) & pids+=($!); done
  sleep 1
fi
declare -A modes=([eager]="--eager" [captured]="--decode-steps 1" [k4]="--decode-steps 4" [k16]="--decode-steps 16")
for r in $(seq 1 "$runs"); do
  for m in eager captured k4 k16; do
    for b in "$old" "$new"; do
      # shellcheck disable=SC2086
      tps=$("$b" generate -m "$model" --prompt-ids "1 2 3 4" -n "$tokens" --temperature 0 --ignore-eos \
              --stats ${modes[$m]} 2>&1 >/dev/null | grep -o 'generated: [^;]*' | grep -o '([0-9.]*' | tr -d '(')
      echo "$b $m $tps"
    done
  done
done | /usr/bin/python3 -c '
import collections, statistics, sys
v = collections.defaultdict(list)
for line in sys.stdin:
    b, m, t = line.split()
    v[(b, m)].append(float(t))
for (b, m), ts in sorted(v.items()):
    print(f"{b} {m}: median {statistics.median(ts):.2f} tokens/s of {ts}")
'
