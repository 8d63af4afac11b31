#!/usr/bin/env bash
# Run on the build machine: builds what the GPU test machine needs (it has no network and none
# of our Debian packages) with static libstdc++/libgcc into .gpu/ (git-ignored), to be carried
# there with the working tree. fmt (header-only under BERTC_STATIC_RUNTIME) and toml++ are compiled
# in, so nothing else is linked; without MPI, Gloo and HDF5 (Debian has no static Open MPI or Gloo, and the GPU machine none of
# them): one rank there, no shards.
# Beside it, .gpu/dynamic.tar.xz: the regular build's bertc (Gloo, Open MPI and HDF5 linked as
# shared libraries) with every library it loads, glibc and its loader included, run through that
# loader (run.sh's bertc-dynamic), so that it does not depend on the GPU machine's libraries: the
# data-parallel checks there start 2 ranks the way torchrun does (Gloo; no mpirun there).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build-gpu
"$root/scripts/setup.sh" >/dev/null  # Debian packages for the build
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBERTC_STATIC_RUNTIME=ON \
  -DBERTC_BUILD_TESTS=OFF -DBERTC_MPI=OFF -DBERTC_GLOO=OFF -DBERTC_HDF5=OFF >/dev/null
cmake --build "$build" --target bertc bertc-bench-train -- -j"$(nproc)"
rm -rf "$root/.gpu" && mkdir -p "$root/.gpu/bin"
cp "$build/tools/bertc" "$build/bench/bertc-bench-train" "$root/.gpu/bin/"
strip "$root/.gpu/bin/"*
# Nothing beyond glibc may be needed there.
if ldd "$root/.gpu/bin/"* | grep -v ':$' | grep -vE 'linux-vdso|libc\.so|libm\.so|ld-linux|libdl|libpthread'; then
  echo "prepare: unexpected shared-library dependency above" >&2
  exit 1
fi
# The dynamic bundle: setup.sh above built build/. glibc's libdl, libpthread and librt are stubs
# since 2.34, but a host library bertc dlopens (the driver's libcuda, NVRTC, cuBLAS, NCCL) names
# them, and the host's own must not be mixed into this glibc: they are carried too.
dynamic=$root/.gpu/dynamic
mkdir -p "$dynamic/lib"
cp "$root/build/tools/bertc" "$dynamic/"
strip "$dynamic/bertc"
ldd "$root/build/tools/bertc" | awk '/=> \//{print $3}' | while read -r lib; do cp -L "$lib" "$dynamic/lib/"; done
for lib in /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/{libdl.so.2,libpthread.so.0,librt.so.1,libutil.so.1}; do
  cp -L "$lib" "$dynamic/lib/"
done
# Without a loader path of its own, the bundle must run with none of build/'s libraries about.
ldd "$dynamic/bertc" | awk '/=> \//{print $1}' | while read -r lib; do
  [ -f "$dynamic/lib/$lib" ] || { echo "prepare: $lib is not in the dynamic bundle" >&2; exit 1; }
done
"$dynamic/lib/ld-linux-x86-64.so.2" --library-path "$dynamic/lib" "$dynamic/bertc" info >/dev/null
# xz: 16 MiB where gzip makes 27 (OpenBLAS is most of it).
tar -cJf "$root/.gpu/dynamic.tar.xz" -C "$root/.gpu" dynamic && rm -rf "$dynamic"
# CUDA 13's NVRTC, the one a GPU machine of today has, targets sm_75 and later: the P40's (sm_61)
# and V100's (sm_70) programs are compiled as PTX by CUDA 12's, from the wheel setup.sh installed
# into .deps/. tests/gpu/run.sh unpacks it into lib/ beside bertc, where bertc looks
# (support/library_search.h); its libnvrtc finds the builtins beside itself ($ORIGIN).
nvrtc12=$root/.deps/nvrtc-cu12/nvidia/cuda_nvrtc/lib
builtins=$(cd "$nvrtc12" && ls libnvrtc-builtins.so.12.* | grep -v alt | head -n 1)
[ -f "$nvrtc12/libnvrtc.so.12" ] && [ -n "$builtins" ] ||
  { echo "prepare: no CUDA 12 NVRTC in $nvrtc12: run scripts/setup.sh" >&2; exit 1; }
tar -cf - -C "$nvrtc12" libnvrtc.so.12 "$builtins" | xz -T"$(nproc)" -9 >"$root/.gpu/nvrtc-cu12.tar.xz"
# Each static program carries OpenBLAS (~25 MB, the reference executor's): xz makes 3.5 MiB of
# bertc where gzip -9 made 9.6; tests/gpu/run.sh unpacks them there (with Python: the GPU
# machine need not have xz).
xz -T"$(nproc)" -9 "$root/.gpu/bin/"*
du -sh "$root/.gpu"
# What travels with the tree is 64 MiB in all; the tree is about 5.
size=$(du -sm "$root/.gpu" | cut -f1)
[ "$size" -le 56 ] || { echo "prepare: .gpu is $size MiB, over the 56 MiB that may travel" >&2; exit 1; }
