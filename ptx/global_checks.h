// compute-sanitizer's initcheck for global memory: which bytes of the caller's allocations
// something wrote — the host (an upload, a fill, a copy of written bytes) or a kernel's store or
// atomic — so that a kernel reading a byte nothing wrote is a finding (a GPU's fresh allocation
// holds whatever was there before: a result that depends on it is wrong on some runs).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace bertc::ptx {

class GlobalShadow {
 public:
  // An allocation at `base`, none of its bytes written. Memory no tracked allocation holds is not
  // checked (memcheck's business).
  void track(uint64_t base, uint64_t bytes);
  // Bytes written: the part of [at, at + bytes) in tracked allocations.
  void written(uint64_t at, uint64_t bytes);
  // Bytes [to, to + bytes) take the written state of [from, from + bytes) (a device-to-device copy).
  void copied(uint64_t to, uint64_t from, uint64_t bytes);
  // The first byte of [at, at + bytes) in a tracked allocation that nothing wrote, with its
  // allocation's base and size; none when every byte was written.
  struct Unwritten {
    uint64_t address = 0, base = 0, bytes = 0;
  };
  std::optional<Unwritten> first_unwritten(uint64_t at, uint64_t bytes) const;

 private:
  std::map<uint64_t, std::vector<bool>> allocations_;  // base -> a written flag per byte
};

}  // namespace bertc::ptx
