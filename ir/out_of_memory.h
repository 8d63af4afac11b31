// Running out of memory, said in one place: what was being allocated and its size (every device
// and the CPU reference throw this). What needs less depends on the command that ran (a compiled
// program cannot change its batch, eval has none to lower): the command line says it (tools/command_line.cpp, from driver/memory_advice).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace bertc::ir {

class OutOfMemory : public std::runtime_error {
 public:
  // `memory` is "host" or "GPU"; `what` what was being allocated ("the activation arena of the
  // step graph"); `where` the device ("" for the host).
  OutOfMemory(std::string_view memory, std::string_view what, size_t bytes, std::string_view where = {});
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
};

// 1.5 GiB, 12.0 MiB, 3.0 KiB, 17 bytes: a size as people read it.
std::string readable_bytes(size_t bytes);

}  // namespace bertc::ir
