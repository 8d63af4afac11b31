#!/usr/bin/env bash
# Run on the build machine: builds what the GPU test machine needs (it has no network and none
# of our Debian packages) with static libstdc++/libgcc into .gpu/ (git-ignored), to be carried
# there with the working tree. fmt and toml++ are header-only in bertc, so nothing else is linked;
# without MPI, Gloo and HDF5 (Debian has no static Open MPI or Gloo, and the GPU machine none of
# them): one rank there, no shards.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$root/build-gpu
"$root/scripts/setup.sh" >/dev/null  # Debian packages for the build
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBERTC_STATIC_RUNTIME=ON \
  -DBERTC_BUILD_TESTS=OFF -DBERTC_MPI=OFF -DBERTC_GLOO=OFF -DBERTC_HDF5=OFF >/dev/null
cmake --build "$build" --target bertc bertc-opt bertc-bench-train -- -j"$(nproc)"
rm -rf "$root/.gpu" && mkdir -p "$root/.gpu/bin"
cp "$build/tools/bertc" "$build/tools/bertc-opt" "$build/bench/bertc-bench-train" "$root/.gpu/bin/"
strip "$root/.gpu/bin/"*
# Nothing beyond glibc may be needed there.
if ldd "$root/.gpu/bin/"* | grep -v ':$' | grep -vE 'linux-vdso|libc\.so|libm\.so|ld-linux|libdl|libpthread'; then
  echo "prepare: unexpected shared-library dependency above" >&2
  exit 1
fi
# Each static program carries OpenBLAS (~25 MB, the reference executor's): compressed, the folder
# stays within the 48 MiB that travel with the tree; tests/gpu/run.sh unpacks them there.
gzip -9 "$root/.gpu/bin/"*
du -sh "$root/.gpu"
size=$(du -sm "$root/.gpu" | cut -f1)
[ "$size" -le 48 ] || { echo "prepare: .gpu is $size MiB, over the 48 MiB that may travel" >&2; exit 1; }
