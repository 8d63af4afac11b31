#!/usr/bin/env bash
# Installs what bertc needs on a Debian 12 machine, then configures and builds it (incrementally
# on later runs). Used by scripts/run.sh and scripts/test.sh; safe to run again at any time.
#   BERTC_BUILD_DIR  build folder (default: build/ in the checkout)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BERTC_BUILD_DIR:-$root/build}

log() { printf 'setup: %s\n' "$*" >&2; }

# Debian packages: compiler and build tools, the libraries bertc uses (OpenBLAS for the CPU
# reference executor's matrix products, utf8proc for the tokenizer, Open MPI for data-parallel
# ranks and mpirun), LLVM's lit/FileCheck.
packages=(g++ cmake ninja-build python3 libfmt-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
          libopenblas-dev libutf8proc-dev libxxhash-dev libboost-context-dev libgtest-dev llvm-14-tools
          libopenmpi-dev openmpi-bin)
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

# CUDA 12's NVRTC (PyPI wheel) compiles for sm_61 and sm_70, which CUDA 13's NVRTC no longer
# targets. It goes into .deps/ of the checkout; bertc looks for it there (bertc info shows it).
nvrtc12=$root/.deps/nvrtc-cu12
if [ ! -e "$nvrtc12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ]; then
  log "installing the CUDA 12 NVRTC wheel into $nvrtc12"
  rm -rf "$nvrtc12"
  if ! PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$nvrtc12" \
      'nvidia-cuda-nvrtc-cu12==12.9.*'; then
    log "warning: could not install nvidia-cuda-nvrtc-cu12; bertc will not compile for sm_61/sm_70"
  fi
fi

# NCCL (PyPI wheel) sums a GPU's gradients between data-parallel ranks; bertc dlopens it, so a
# machine without it still builds and trains (bertc info shows what it found).
nccl=$root/.deps/nccl-cu12
if [ ! -e "$nccl/nvidia/nccl/lib/libnccl.so.2" ]; then
  log "installing the NCCL wheel into $nccl"
  rm -rf "$nccl"
  if ! PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$nccl" \
      'nvidia-nccl-cu12==2.*'; then
    log "warning: could not install nvidia-nccl-cu12; data-parallel GPU ranks will sum over MPI on the host"
  fi
fi

if [ ! -f "$build/build.ninja" ]; then
  log "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
log "building (ninja, $(nproc) jobs)"
cmake --build "$build" -- -j"$(nproc)"
