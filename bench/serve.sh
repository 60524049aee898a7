#!/usr/bin/env bash
# bench/serve.sh - serving figures: start `encore serve` on a model, run
# `encore bench serve` RUNS times at each client count, print the median of
# each figure (one JSON line per client count).
#
#   bench/serve.sh MODEL_DIR [CLIENTS="1 8 32"] [RUNS=3] [extra bench serve flags...]
#
# Environment: ENCORE (default build/encore), SERVE_FLAGS (extra flags for
# encore serve, e.g. "--max-num-seqs 32").
set -euo pipefail
model=${1:?usage: bench/serve.sh MODEL_DIR [CLIENTS] [RUNS] [bench serve flags...]}
clients=${2:-1 8 32}
runs=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
encore=${ENCORE:-build/encore}
log=$(mktemp)
# shellcheck disable=SC2086
"$encore" serve -m "$model" --port 0 ${SERVE_FLAGS:-} >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 600); do
  grep -q "listening on" "$log" && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.2
done
url=$(grep -o 'http://[^ ]*' "$log" | head -1)
[ -n "$url" ] || { echo "bench/serve.sh: the server did not start" >&2; cat "$log" >&2; exit 1; }
for c in $clients; do
  for r in $(seq 1 "$runs"); do
    # a new seed each run: the prompts of an earlier run would be prefix-cache hits
    "$encore" bench serve --url "$url" --clients "$c" --seed "$r$c" --json "$@"
  done | /usr/bin/python3 -c '
import json, statistics, sys
runs = [json.loads(l) for l in sys.stdin if l.strip()]
med = lambda f: statistics.median(f(r) for r in runs)
print(json.dumps({"clients": runs[0]["clients"], "runs": len(runs), "num_prompts": runs[0]["num_prompts"],
                  "input_len": runs[0]["input_len"], "output_len": runs[0]["output_len"],
                  "request_throughput": round(med(lambda r: r["request_throughput"]), 3),
                  "output_tokens_per_s": round(med(lambda r: r["output_tokens_per_s"]), 2),
                  "ttft_ms_mean": round(med(lambda r: r["ttft_ms"]["mean"]), 2),
                  "ttft_ms_p50": round(med(lambda r: r["ttft_ms"]["p50"]), 2),
                  "ttft_ms_p99": round(med(lambda r: r["ttft_ms"]["p99"]), 2),
                  "itl_ms_mean": round(med(lambda r: r["itl_ms"]["mean"]), 2),
                  "itl_ms_p50": round(med(lambda r: r["itl_ms"]["p50"]), 2),
                  "itl_ms_p99": round(med(lambda r: r["itl_ms"]["p99"]), 2),
                  "failed": max(r["failed"] for r in runs)}))'
done
