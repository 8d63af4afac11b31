#!/usr/bin/env bash
# Installs what bertc needs on a Debian 12 machine, then configures and builds it (incrementally
# on later runs). Used by scripts/run.sh and scripts/test.sh; safe to run again at any time.
#   BERTC_BUILD_DIR  build folder (default: build/ in the checkout)
#   BERTC_CCACHE     0: compile without the compiler cache (ccache, used by default)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BERTC_BUILD_DIR:-$root/build}

log() { printf 'setup: %s\n' "$*" >&2; }

# Debian packages: compiler and build tools, the libraries bertc uses (OpenBLAS for the CPU
# reference executor's matrix products, utf8proc for the tokenizer, Open MPI for data-parallel
# ranks and mpirun, Gloo for ranks that torchrun starts, HDF5 for pretraining shards), LLVM's
# lit/FileCheck; h5py, with which tests edit shards as other tools write them; ccache, so that a
# second build of the same sources (another clone at the same path, a CI rerun) compiles nothing
# it compiled before; iproute2 (ip, tc) for the slow-link test's namespace and rate limit.
packages=(g++ cmake ninja-build ccache python3 libfmt-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
          libopenblas-dev libutf8proc-dev libxxhash-dev libboost-context-dev libgtest-dev llvm-14-tools
          libopenmpi-dev openmpi-bin libgloo-dev libhdf5-dev zlib1g-dev python3-h5py iproute2)
python3 -m pip --version >/dev/null 2>&1 || packages+=(python3-pip)
missing=()
for p in "${packages[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p"); done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { log "need root to install: ${missing[*]} (run: apt-get install ${missing[*]})"; exit 1; }
    sudo=sudo
  fi
  log "installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A PyPI wheel into .deps/FOLDER of the checkout, unless FILE is there already; bertc dlopens
# what it holds from there (bertc info shows what it found), so a failure only warns.
wheel() {  # wheel FOLDER FILE SPEC WHAT-IS-LOST
  local target=$root/.deps/$1
  [ -e "$target/$2" ] && return
  log "installing the $3 wheel into $target"
  rm -rf "$target"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$target" "$3" ||
    log "warning: could not install $3; $4"
}
# CUDA 12's NVRTC compiles for sm_61 and sm_70, which CUDA 13's NVRTC no longer targets.
wheel nvrtc-cu12 nvidia/cuda_nvrtc/lib/libnvrtc.so.12 'nvidia-cuda-nvrtc-cu12==12.9.*' \
  "bertc will not compile for sm_61/sm_70"
# Hugging Face tokenizers: what bertc's tokenizer is compared with (tests/data, bench/).
wheel python tokenizers/__init__.py 'tokenizers==0.23.*' \
  "the tokenizer parity test is skipped"
# NCCL sums a GPU's gradients between data-parallel ranks.
wheel nccl-cu12 nvidia/nccl/lib/libnccl.so.2 'nvidia-nccl-cu12==2.*' \
  "data-parallel GPU ranks will sum over MPI on the host"

launcher=()
if [ "${BERTC_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build/build.ninja" ]; then
  log "configuring $build${launcher:+ (compiler cache: ccache, $(ccache --get-config cache_dir))}"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
fi
log "building (ninja, $(nproc) jobs)"
began=$SECONDS
((${#launcher[@]})) && ccache --zero-stats >/dev/null
cmake --build "$build" -- -j"$(nproc)"
log "built in $((SECONDS - began)) s${launcher:+; compiler cache: $(ccache --print-stats 2>/dev/null | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {h += $2} $1 == "cache_miss" {m = $2} END {printf "%d hits, %d misses", h, m}')}"
