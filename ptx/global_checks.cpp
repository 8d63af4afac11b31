// initcheck of global memory (see global_checks.h).
#include "ptx/global_checks.h"

#include <algorithm>

namespace bertc::ptx {
namespace {

// The allocation of `allocations` holding byte `at`, or null.
template <typename Map>
auto holding(Map& allocations, uint64_t at) -> decltype(&*allocations.begin()) {
  auto it = allocations.upper_bound(at);
  if (it == allocations.begin()) return nullptr;
  --it;
  return at - it->first < it->second.size() ? &*it : nullptr;
}

}  // namespace

void GlobalShadow::track(uint64_t base, uint64_t bytes) { allocations_[base].assign(bytes, false); }

void GlobalShadow::written(uint64_t at, uint64_t bytes) {
  for (uint64_t a = at; a < at + bytes;) {
    auto* held = holding(allocations_, a);
    if (!held) {
      ++a;
      continue;
    }
    std::vector<bool>& flags = held->second;
    const uint64_t end = std::min<uint64_t>(at + bytes, held->first + flags.size());
    std::fill(flags.begin() + static_cast<std::ptrdiff_t>(a - held->first),
              flags.begin() + static_cast<std::ptrdiff_t>(end - held->first), true);
    a = end;
  }
}

void GlobalShadow::copied(uint64_t to, uint64_t from, uint64_t bytes) {
  // (the source's states first, then the destination's: a copy onto an overlap moves them as
  // memmove moves the bytes)
  std::vector<bool> state(bytes, true);
  for (uint64_t i = 0; i < bytes; ++i)
    if (const auto* held = holding(allocations_, from + i)) state[i] = held->second[from + i - held->first];
  for (uint64_t i = 0; i < bytes; ++i)
    if (auto* held = holding(allocations_, to + i)) held->second[to + i - held->first] = state[i];
}

std::optional<GlobalShadow::Unwritten> GlobalShadow::first_unwritten(uint64_t at, uint64_t bytes) const {
  for (uint64_t a = at; a < at + bytes; ++a)
    if (const auto* held = holding(allocations_, a); held && !held->second[a - held->first])
      return Unwritten{a, held->first, held->second.size()};
  return std::nullopt;
}

}  // namespace bertc::ptx
