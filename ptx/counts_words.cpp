// LaunchCounts to and from words (see counts_words.h).
#include "ptx/counts_words.h"

#include <bit>
#include <stdexcept>

namespace bertc::ptx {
namespace {

// The layout's name: changed whenever LaunchCounts' fields change.
constexpr uint64_t kLayout = 0x636f756e74730001;  // "counts" 1
// A field added to LaunchCounts changes its size: each_field must then visit it (and kLayout change).
static_assert(sizeof(LaunchCounts) == 440 || sizeof(void*) != 8, "LaunchCounts changed: update each_field and kLayout");

// Every field in one order, for both directions: `visit` takes each scalar by reference.
template <typename Counts, typename Visit>
void each_field(Counts& c, Visit visit) {
  visit(c.thread_instructions);
  for (auto& v : c.by_class) visit(v);
  visit(c.flops);
  visit(c.shared_requests), visit(c.shared_wavefronts), visit(c.shared_ideal_wavefronts);
  visit(c.global_requests), visit(c.global_sectors), visit(c.global_ideal_sectors);
  for (auto& row : c.by_width)
    for (auto& v : row) visit(v);
  visit(c.blocks), visit(c.warps), visit(c.mma_flops), visit(c.executed_blocks);
  visit(c.block_threads), visit(c.block_shared_bytes), visit(c.global_racecheck_partial), visit(c.block_cycles);
}

}  // namespace

std::vector<uint64_t> counts_to_words(const LaunchCounts& counts) {
  std::vector<uint64_t> words{kLayout};
  each_field(counts, [&](const auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) words.push_back(std::bit_cast<uint64_t>(v));
    else words.push_back(v);
  });
  words.push_back(counts.by_op.size());
  for (const auto& [op, n] : counts.by_op) words.push_back(static_cast<uint64_t>(op)), words.push_back(n);
  return words;
}

LaunchCounts counts_from_words(std::span<const uint64_t> words) {
  if (words.empty() || words[0] != kLayout)
    throw std::invalid_argument("launch counts of another layout (a driver built from other bertc sources?)");
  LaunchCounts c;
  size_t at = 1;
  auto next = [&]() -> uint64_t {
    if (at >= words.size()) throw std::invalid_argument("launch counts cut short");
    return words[at++];
  };
  each_field(c, [&](auto& v) {
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, double>) v = std::bit_cast<double>(next());
    else v = next();
  });
  for (uint64_t ops = next(); ops > 0; --ops) {
    const auto op = static_cast<Op>(next());
    c.by_op[op] = next();
  }
  return c;
}

}  // namespace bertc::ptx
