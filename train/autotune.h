// --autotune: for every matrix product cuBLAS could run, times the generated kernel against
// cuBLAS (with its epilogue kernel) on the device, keeps the faster, and caches the choice on disk
// per device and kernel source, so that later runs reuse it without timing again.
#pragma once

#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "codegen/matrix_strategy.h"
#include "ir/graph.h"
#include "runtime/device.h"

namespace bertc::train {

// The choices for RenderTarget::tuned (product_key -> Generated or Library) for the products
// of `graphs` rendered for `target`. Each distinct product is timed once on `device` (in buffers
// of its own, which the device keeps: give it a device used for nothing else) with `repeats`
// launches of each form after one untimed; `cache_file` (JSON) holds earlier measurements, keyed
// by the device's name and both forms' kernel names (the hashes of their sources), and gains the
// new ones, written atomically. Logs one line per product measured and a summary.
std::map<std::string, passes::MatmulPolicy> autotune_products(const std::vector<const ir::Graph*>& graphs,
                                                     const codegen::RenderTarget& target, runtime::Device& device,
                                                     const std::filesystem::path& cache_file, int repeats,
                                                     std::ostream& log);

}  // namespace bertc::train
