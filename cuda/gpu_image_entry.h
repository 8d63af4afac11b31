// The NVRTC cache's entry format: a compiled kernel (GpuImage) as bytes. Magic, payload size,
// XXH3 of the payload, then the payload (ptxas figures, kind, name, image); anything else is
// corrupt. A new layout gets a new magic, which is also part of the entry's key, so entries of an
// older layout are never read (nor counted as corrupt).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "cuda/nvrtc_compiler.h"

namespace bertc::cuda {

inline constexpr std::string_view kGpuImageEntryMagic{"BXNVRTC2", 8};

std::string encode_gpu_image_entry(const GpuImage& image);
// The image, or nothing when `bytes` is not a whole entry of this layout.
std::optional<GpuImage> decode_gpu_image_entry(std::string_view bytes);

}  // namespace bertc::cuda
