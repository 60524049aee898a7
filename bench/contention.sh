#!/usr/bin/env bash
# bench/contention.sh - `encore bench` on an idle machine and on a busy one,
# side by side: the same command runs once with nothing else running and
# once while a CPU-bound busy loop per core competes for every core (what a
# server meets: HTTP threads, tokenization, other processes).
#
#   bench/contention.sh MODEL_DIR [extra encore bench flags...]
#
# Environment: ENCORE (default build/encore), HOGS (busy loops, default one
# per CPU). Prints each run's `encore bench --json` line, labelled.
set -euo pipefail
model=${1:?usage: bench/contention.sh MODEL_DIR [encore bench flags...]}
shift
encore=${ENCORE:-build/encore}
hogs=${HOGS:-$(nproc)}
pids=()
stop_hogs() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pids=(); }
trap stop_hogs EXIT

printf 'idle: '
"$encore" bench -m "$model" --json "$@"
for _ in $(seq 1 "$hogs"); do
  ( trap 'exit 0' TERM; while :; do :; done ) &
  pids+=($!)
done
sleep 1 # let the scheduler settle the busy loops on every core
printf 'busy (%d busy loops): ' "$hogs"
"$encore" bench -m "$model" --json "$@"
stop_hogs
