#!/usr/bin/env bash
# bench/vs_llamacpp.sh - encore and llama.cpp side by side on the same GGUF
# files: prefill (pp512) and decode (tg128) tokens/s, the engines interleaved
# in one run, RUNS rounds; prints the medians and encore/llama.cpp per file.
#
#   bench/vs_llamacpp.sh [--build] [--runs N] [--threads T] [--types "bf16 f16 q8_0 q4_0 q4_k_m"]
#                        [--models "dense moe"] [--check]
#   (types: bf16, f16, and llama-quantize's q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl
#   iq4_xs q2_k q3_k_m q4_k_m q5_k_m q6_k)
#
# The files: the bf16 and f16 GGUF of each checkpoint written by `encore
# quantize`, every other type made from the bf16 one by llama.cpp's own
# llama-quantize, so both engines read identical weights (kept in OUT and
# reused). Per round and
# file, llama-bench -p 512 -n 128 -r 1 and encore bench --prompt-len 512
# --gen-len 128 --runs 1 (decode: 4 steps per replay, one sequence); the
# order of the two engines alternates from round to round. A file encore
# refuses (a tensor type it lacks) is reported with encore's message.
# --check also runs bench/llamacpp_agree.py on each file first.
#
# Environment:
#   LLAMA_SRC   llama.cpp's source (needed by --build; $LLAMA_SRC/build/bin
#               is then the default LLAMA_BIN). --build configures and builds
#               it as pinned below; it is never part of `make test`.
#   LLAMA_BIN   the directory of llama-bench and llama-quantize
#   ENCORE      the encore program (default build/encore)
#   BEFORE      (optional) an older encore program, run in each round beside
#               ENCORE (the order of the three rotating), its figures and
#               ratios as the table's "before" columns
#   DENSE, MOE  the checkpoints (default build/models/qwen3-0.6b-geometry,
#               build/models/qwen3-moe-bench-geometry: make bench-model,
#               make bench-moe-model)
#   OUT         where the GGUF files and results go (default build/vs_llamacpp)
set -euo pipefail

LLAMA_PIN=3f545becc # llama.cpp commit the figures in BENCHMARKS.md were measured with

runs=3 threads=2 build=0 check=0
types="bf16 q8_0 q4_0 q4_k_m"
models="dense moe"
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=1 ;;
    --check) check=1 ;;
    --runs) runs=${2:?}; shift ;;
    --threads) threads=${2:?}; shift ;;
    --types) types=${2:?}; shift ;;
    --models) models=${2:?}; shift ;;
    -h|--help) sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "vs_llamacpp.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

here=$(cd "$(dirname "$0")/.." && pwd)
ENCORE=${ENCORE:-$here/build/encore}
DENSE=${DENSE:-$here/build/models/qwen3-0.6b-geometry}
MOE=${MOE:-$here/build/models/qwen3-moe-bench-geometry}
OUT=${OUT:-$here/build/vs_llamacpp}
LLAMA_BIN=${LLAMA_BIN:-${LLAMA_SRC:+$LLAMA_SRC/build/bin}}
mkdir -p "$OUT"

die() { echo "vs_llamacpp.sh: $*" >&2; exit 1; }

# --- llama.cpp, built from the pinned source when asked -----------------------
# llama.cpp's ISA options: -DGGML_NATIVE=ON, except on a CPU that lists AMX,
# where its native build's AMX kernel has crashed (SIGSEGV in
# ggml_backend_amx_mul_mat on a KVM Xeon): there every other ISA the CPU
# lists is named and AMX is left out.
llama_isa_flags() {
  local f=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  case "$f" in *" amx_int8 "*) ;; *) echo -DGGML_NATIVE=ON; return ;; esac
  echo -DGGML_NATIVE=OFF
  local pair
  for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
              avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
    case "$f" in *" ${pair%%:*} "*) echo "-DGGML_${pair#*:}=ON" ;; esac
  done
}
build_llama() {
  [ -n "${LLAMA_SRC:-}" ] && [ -f "$LLAMA_SRC/CMakeLists.txt" ] ||
    die "--build needs LLAMA_SRC, llama.cpp's source at commit $LLAMA_PIN (LLAMA_SRC='${LLAMA_SRC:-}')"
  if git -C "$LLAMA_SRC" rev-parse HEAD >/dev/null 2>&1; then
    case "$(git -C "$LLAMA_SRC" rev-parse HEAD)" in
      "$LLAMA_PIN"*) ;;
      *) die "$LLAMA_SRC is at $(git -C "$LLAMA_SRC" rev-parse --short HEAD), not $LLAMA_PIN" ;;
    esac
  fi
  cmake -S "$LLAMA_SRC" -B "$LLAMA_SRC/build" $(llama_isa_flags) -DGGML_OPENMP=ON \
    -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF
  cmake --build "$LLAMA_SRC/build" -j "$(nproc)" --target llama-bench llama-quantize llama
}
[ "$build" = 1 ] && build_llama
[ -n "$LLAMA_BIN" ] && [ -x "$LLAMA_BIN/llama-bench" ] && [ -x "$LLAMA_BIN/llama-quantize" ] ||
  die "no llama-bench and llama-quantize in LLAMA_BIN='$LLAMA_BIN' (set LLAMA_BIN, or LLAMA_SRC with --build)"
[ -x "$ENCORE" ] || die "no encore program at $ENCORE (build it, or set ENCORE)"
[ -z "${BEFORE:-}" ] || [ -x "$BEFORE" ] || die "no encore program at BEFORE='$BEFORE'"

# --- the files ----------------------------------------------------------------
# llama-quantize's name of a type
llama_type() { case "$1" in q8_0) echo Q8_0 ;; q4_0) echo Q4_0 ;; q4_k_m) echo Q4_K_M ;;
  q5_k_m) echo Q5_K_M ;; q6_k) echo Q6_K ;; q5_0) echo Q5_0 ;; iq4_nl) echo IQ4_NL ;;
  q3_k_m) echo Q3_K_M ;; iq4_xs) echo IQ4_XS ;; q2_k) echo Q2_K ;; q4_1) echo Q4_1 ;;
  q5_1) echo Q5_1 ;; *) die "unknown type '$1'" ;; esac; }

# make_file NAME CHECKPOINT TYPE -> prints the path of OUT/NAME-TYPE.gguf
make_file() {
  local dir=$2 type=$3 bf16="$OUT/$1-bf16.gguf" f="$OUT/$1-$3.gguf"
  [ -d "$dir" ] || die "no checkpoint $dir (make bench-model / make bench-moe-model, or set DENSE / MOE)"
  if [ ! -s "$bf16" ]; then
    "$ENCORE" quantize -m "$dir" -o "$bf16" --type bf16 >&2 || die "encore quantize failed on $dir"
  fi
  if [ "$type" = f16 ] && [ ! -s "$f" ]; then # a plain conversion: encore writes it too
    "$ENCORE" quantize -m "$dir" -o "$f" --type f16 >&2 || die "encore quantize f16 failed on $dir"
  fi
  if [ "$type" != bf16 ] && [ "$type" != f16 ] && [ ! -s "$f" ]; then
    "$LLAMA_BIN/llama-quantize" "$bf16" "$f.tmp" "$(llama_type "$type")" > "$f.log" 2>&1 ||
      die "llama-quantize $type failed (see $f.log)"
    mv "$f.tmp" "$f"
  fi
  echo "$f"
}

declare -A ckpt=([dense]="$DENSE" [moe]="$MOE")
files=()
for m in $models; do
  [ -n "${ckpt[$m]:-}" ] || die "unknown model '$m' (dense, moe)"
  for t in $types; do files+=("$m:$t:$(make_file "qwen3-$m" "${ckpt[$m]}" "$t")"); done
done

if [ "$check" = 1 ]; then
  agree="$OUT/llamacpp_logits"
  lroot=$(cd "$LLAMA_BIN/../.." && pwd)
  cc -O2 -std=c11 "$here/bench/llamacpp_logits.c" -I"$lroot/include" -I"$lroot/ggml/include" \
    -L"$LLAMA_BIN" -Wl,-rpath,"$LLAMA_BIN" -lllama -lggml -lggml-base -o "$agree" ||
    die "cannot build bench/llamacpp_logits.c against $lroot"
  for e in "${files[@]}"; do
    /usr/bin/python3 "$here/bench/llamacpp_agree.py" --encore "$ENCORE" --llama "$agree" \
      --threads "$threads" "${e##*:}" || true
  done
fi

# --- the runs -----------------------------------------------------------------
# one_llama FILE -> "pp tg" (tokens/s)
one_llama() {
  "$LLAMA_BIN/llama-bench" -m "$1" -t "$threads" -p 512 -n 128 -r 1 -o jsonl 2>/dev/null |
    /usr/bin/python3 -c '
import json, sys
r = {}
for line in sys.stdin:
    j = json.loads(line)
    r["pp" if j["n_prompt"] else "tg"] = j["avg_ts"]
print(r.get("pp", "nan"), r.get("tg", "nan"))'
}

# one_encore FILE [PROGRAM] -> "pp tg", or "refused MESSAGE"
one_encore() {
  local out
  if ! out=$("${2:-$ENCORE}" bench -m "$1" -t "$threads" --prompt-len 512 --gen-len 128 --runs 1 \
               --modes k4 --batches 1 --json 2>"$OUT/encore.err"); then
    echo "refused $(grep -v '^\s*$' "$OUT/encore.err" | tail -1)"
    return
  fi
  echo "$out" | /usr/bin/python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
print(j["prefill_tokens_per_s"], j["decode_tokens_per_s_batch1"])'
}
one_before() { one_encore "$1" "$BEFORE"; }

results="$OUT/results.tsv"
: > "$results"
echo "vs_llamacpp.sh: $runs rounds, $threads threads, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$runs"); do
  for e in "${files[@]}"; do
    key=${e%:*} f=${e##*:}
    order="llama encore"
    [ $((r % 2)) = 0 ] && order="encore llama"
    if [ -n "${BEFORE:-}" ]; then
      case $((r % 3)) in 1) order="llama before encore" ;; 2) order="before encore llama" ;;
        0) order="encore llama before" ;; esac
    fi
    for engine in $order; do
      line=$("one_$engine" "$f")
      printf '%s\t%s\t%s\t%s\n' "$key" "$engine" "$r" "$line" >> "$results"
      printf 'round %s %-12s %-7s %s\n' "$r" "$key" "$engine" "$line" >&2
    done
  done
done
echo "vs_llamacpp.sh: done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

/usr/bin/python3 - "$results" <<'EOF'
import collections, statistics, sys
v, refused = collections.defaultdict(list), {}
for line in open(sys.argv[1]):
    key, engine, _, rest = line.rstrip("\n").split("\t")
    if rest.startswith("refused"):
        refused[key] = rest[len("refused "):]
        continue
    pp, tg = map(float, rest.split())
    v[(key, engine)].append((pp, tg))
def med(key, engine, i):
    xs = [x[i] for x in v.get((key, engine), [])]
    return statistics.median(xs) if xs else float("nan")
before = any(e == "before" for _, e in v)
hb = " before pp512 | ratio |" if before else ""
hb2 = " before tg128 | ratio |" if before else ""
print("| model | weights | llama.cpp pp512 |" + hb + " encore pp512 | ratio | llama.cpp tg128 |" + hb2 + " encore tg128 | ratio |")
print("| --- | --- | ---: |" + " ---: | ---: |" * (1 + before) + " ---: |" + " ---: | ---: |" * (1 + before))
def cols(key, engine, i, ref):
    x = med(key, engine, i)
    return f" {x:.1f} | {x / ref:.2f}x |"
for key in dict.fromkeys(k for k, _ in v):
    m, t = key.split(":")
    lp, lt = med(key, "llama", 0), med(key, "llama", 1)
    if key in refused:
        print(f"| {m} | {t} | {lp:.1f} | refused | | {lt:.1f} | refused | |  ({refused[key]})")
        continue
    bp = cols(key, "before", 0, lp) if before else ""
    bt = cols(key, "before", 1, lt) if before else ""
    print(f"| {m} | {t} | {lp:.1f} |{bp}{cols(key, 'encore', 0, lp)} {lt:.1f} |{bt}{cols(key, 'encore', 1, lt)}")
EOF
