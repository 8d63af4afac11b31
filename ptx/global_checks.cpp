// Checks of global memory (see global_checks.h).
#include "ptx/global_checks.h"

#include <algorithm>

#include <fmt/format.h>

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

void GlobalShadow::written(uint64_t at, uint64_t bytes) { set(at, bytes, true); }

void GlobalShadow::forget(uint64_t at, uint64_t bytes) { set(at, bytes, false); }

void GlobalShadow::set(uint64_t at, uint64_t bytes, bool written) {
  for (uint64_t a = at; a < at + bytes;) {
    auto* held = holding(allocations_, a);
    if (!held) {
      ++a;
      continue;
    }
    std::vector<bool>& flags = held->second;
    const uint64_t end = std::min<uint64_t>(at + bytes, held->first + flags.size());
    std::fill(flags.begin() + static_cast<std::ptrdiff_t>(a - held->first),
              flags.begin() + static_cast<std::ptrdiff_t>(end - held->first), written);
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
  // (one lookup of the allocation for the bytes it holds: a lookup a byte made every global access
  // of the emulator a third slower)
  for (uint64_t a = at; a < at + bytes;) {
    const auto* held = holding(allocations_, a);
    if (!held) {
      ++a;
      continue;
    }
    const std::vector<bool>& flags = held->second;
    for (const uint64_t end = std::min<uint64_t>(at + bytes, held->first + flags.size()); a < end; ++a)
      if (!flags[a - held->first]) return Unwritten{a, held->first, flags.size()};
  }
  return std::nullopt;
}

BufferBounds::BufferBounds(std::vector<Buffer> buffers) : buffers_(std::move(buffers)) {
  std::sort(buffers_.begin(), buffers_.end(), [](const Buffer& a, const Buffer& b) { return a.base < b.base; });
  for (const Buffer& b : buffers_) {
    if (b.bytes == 0) continue;
    const uint64_t end = b.base + b.bytes;
    if (!spans_.empty() && b.base < std::prev(spans_.end())->second)  // (overlaps the last span: joins it)
      std::prev(spans_.end())->second = std::max(std::prev(spans_.end())->second, end);
    else
      spans_[b.base] = end;
  }
}

std::optional<std::string> BufferBounds::outside(uint64_t at, uint64_t bytes) const {
  auto it = spans_.upper_bound(at);
  if (it != spans_.begin() && at + bytes <= std::prev(it)->second) return std::nullopt;
  // (the nearest: the buffer whose bytes are closest to the access's first byte)
  const Buffer* nearest = nullptr;
  uint64_t distance = UINT64_MAX;
  for (const Buffer& b : buffers_) {
    const uint64_t d = at < b.base ? b.base - at : at >= b.base + b.bytes ? at - (b.base + b.bytes) + 1 : 0;
    if (d < distance) distance = d, nearest = &b;
  }
  std::string where = "no buffer";
  if (nearest) {
    if (at < nearest->base)
      where = fmt::format("{} bytes before the start of {}", nearest->base - at, nearest->what);
    else if (at < nearest->base + nearest->bytes)
      where = fmt::format("byte {} of {}, which has {} bytes: its last {} go past its end", at - nearest->base,
                          nearest->what, nearest->bytes, at + bytes - (nearest->base + nearest->bytes));
    else
      where = fmt::format("{} bytes past the end of {} ({} bytes)", at - (nearest->base + nearest->bytes),
                          nearest->what, nearest->bytes);
  }
  return fmt::format("{} bytes at {:#x}, outside every buffer the kernel's arguments name: {} (its allocation holds "
                     "other buffers there, a memory plan's arena)",
                     bytes, at, where);
}

}  // namespace bertc::ptx
