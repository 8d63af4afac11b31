// Checks of global memory beyond the allocation's bounds: compute-sanitizer's initcheck (which
// bytes of the caller's allocations something wrote — the host (an upload, a fill, a copy of
// written bytes) or a kernel's store or atomic — so that a kernel reading a byte nothing wrote is a
// finding: a GPU's fresh allocation holds whatever was there before, and a result that depends on
// it is wrong on some runs), and memcheck by buffer within one allocation (BufferBounds).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bertc::ptx {

class GlobalShadow {
 public:
  // An allocation at `base`, none of its bytes written. Memory no tracked allocation holds is not
  // checked (memcheck's business).
  void track(uint64_t base, uint64_t bytes);
  // Bytes written: the part of [at, at + bytes) in tracked allocations.
  void written(uint64_t at, uint64_t bytes);
  // Bytes whose contents are dead from now on (a memory plan gives them to another value, which
  // must write them before it reads them): the part of [at, at + bytes) in tracked allocations.
  void forget(uint64_t at, uint64_t bytes);
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
  void set(uint64_t at, uint64_t bytes, bool written);
};

// One buffer a launch's arguments name: a value's bytes, which may be part of an allocation.
struct Buffer {
  uint64_t base = 0, bytes = 0;
  std::string what;  // how a finding names it ("'x' (f32[2,8])")
};

// memcheck by buffer: an allocation may hold many buffers (a memory plan's arena holds every
// per-step value), so an access inside the allocation can still be past the end of the buffer the
// kernel meant, into another value's bytes: a finding, where the launch's buffers are known.
class BufferBounds {
 public:
  // Buffers may overlap (a value in place on another, a view); two that only touch stay apart.
  explicit BufferBounds(std::vector<Buffer> buffers);
  // What is wrong with an access of [at, at + bytes), naming the nearest buffer; none when one
  // buffer (or several overlapping ones) holds all of it.
  std::optional<std::string> outside(uint64_t at, uint64_t bytes) const;

 private:
  std::vector<Buffer> buffers_;                      // by base
  std::map<uint64_t, uint64_t> spans_;               // overlapping buffers merged: begin -> end
};

}  // namespace bertc::ptx
