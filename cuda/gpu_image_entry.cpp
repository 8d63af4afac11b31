// The NVRTC cache's entry format (see gpu_image_entry.h).
#include "cuda/gpu_image_entry.h"

#include <cstring>

#include <xxhash.h>

namespace bertc::cuda {

using codegen::GpuImage;

std::string encode_gpu_image_entry(const GpuImage& g) {
  std::string payload;
  auto put = [&](const void* p, size_t n) { payload.append(static_cast<const char*>(p), n); };
  const int32_t figures[7] = {g.ptxas.registers, g.ptxas.shared_bytes, g.ptxas.stack_bytes, g.ptxas.spill_store_bytes,
                              g.ptxas.spill_load_bytes, g.main_loop.math, g.main_loop.shared_loads};
  put(figures, sizeof figures);
  const uint8_t ptx = g.ptx;
  put(&ptx, 1);
  const uint64_t name_size = g.name.size(), image_size = g.image.size();
  put(&name_size, 8);
  put(g.name.data(), g.name.size());
  put(&image_size, 8);
  put(g.image.data(), g.image.size());
  std::string out(kGpuImageEntryMagic);
  const uint64_t size = payload.size(), sum = XXH3_64bits(payload.data(), payload.size());
  out.append(reinterpret_cast<const char*>(&size), 8);
  out.append(reinterpret_cast<const char*>(&sum), 8);
  return out + payload;
}

std::optional<GpuImage> decode_gpu_image_entry(std::string_view bytes) {
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kGpuImageEntryMagic.data(), 8) != 0) return std::nullopt;
  uint64_t size = 0, sum = 0;
  std::memcpy(&size, bytes.data() + 8, 8);
  std::memcpy(&sum, bytes.data() + 16, 8);
  if (size != bytes.size() - 24 || XXH3_64bits(bytes.data() + 24, size) != sum) return std::nullopt;
  const char* p = bytes.data() + 24;
  const char* end = p + size;
  GpuImage g;
  int32_t figures[7];
  auto take = [&](void* dst, size_t n) {
    if (static_cast<size_t>(end - p) < n) return false;
    std::memcpy(dst, p, n);
    p += n;
    return true;
  };
  uint8_t ptx = 0;
  uint64_t name_size = 0, image_size = 0;
  // (A flag other than 0 or 1 is damage, as is any field that does not fit: an entry decodes only
  // from the bytes encode_gpu_image_entry writes.)
  if (!take(figures, sizeof figures) || !take(&ptx, 1) || ptx > 1 || !take(&name_size, 8) || name_size > size)
    return std::nullopt;
  g.name.resize(name_size);
  if (!take(g.name.data(), name_size) || !take(&image_size, 8) || image_size > size) return std::nullopt;
  g.image.resize(image_size);
  if (!take(g.image.data(), image_size) || p != end) return std::nullopt;
  g.ptxas = {figures[0], figures[1], figures[2], figures[3], figures[4]};
  g.main_loop = {figures[5], figures[6]};
  g.ptx = ptx != 0;
  return g;
}

}  // namespace bertc::cuda
