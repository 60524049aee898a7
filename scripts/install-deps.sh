#!/usr/bin/env bash
# install-deps.sh - make sure the Debian packages encore builds and tests
# with are installed; install the missing ones with apt-get when we can
# (root, or passwordless sudo), else say which to install and fail.
set -euo pipefail
packages=(
  build-essential cmake pkg-config          # the build
  libcjson-dev libpcre2-dev libutf8proc-dev # JSON, tokenizer regex, Unicode NFC
  libmicrohttpd-dev curl                    # the HTTP server (encore serve) and its tests
  python3 python3-numpy python3-jinja2      # checkpoint generator, reference forward, chat template
  python3-jsonschema                        # the structured-output tests' independent validator
  clang libclang-rt-14-dev                  # fuzz targets (libFuzzer)
  libvulkan-dev glslc                       # the Vulkan backend: loader and shader compiler
  mesa-vulkan-drivers vulkan-validationlayers # lavapipe (Vulkan on the CPU) for its tests; validation
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# node and npm (the JavaScript tokenizer reference, the openai client the
# server is tested with): any install will do; a
# Node.js from elsewhere often bundles npm and conflicts with Debian's npm.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -eq 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
