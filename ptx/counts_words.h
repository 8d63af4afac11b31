// A launch's counts (LaunchCounts) as a flat array of 64-bit words, to hand them across a C
// boundary: bertc's emulated CUDA driver gives its launches' counts so (library_kernels.h's
// bertcEmulatedTakeLaunchCounts), and the CUDA device reads them back. Both sides are built from
// these headers; the first word names the layout, so words of another layout are refused.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ptx/executor.h"

namespace bertc::ptx {

std::vector<uint64_t> counts_to_words(const LaunchCounts& counts);

// Throws std::invalid_argument for words of another layout (or cut short).
LaunchCounts counts_from_words(std::span<const uint64_t> words);

}  // namespace bertc::ptx
