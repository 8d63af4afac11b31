// The kernel prelude's files (codegen/prelude/*.h and ir/philox_core.h), embedded in the binary
// so that NVRTC (as in-memory headers) and the host compiler (written to a folder) get exactly
// the text this bertc was built with, wherever it is installed.
#pragma once

#include <filesystem>
#include <span>
#include <string_view>

namespace bertc::codegen {

struct EmbeddedFile {
  std::string_view name;  // "bx.h": what kernels #include
  std::string_view text;
};

std::span<const EmbeddedFile> prelude_files();

// Writes the prelude into `folder` (created), rewriting only files that differ.
void write_prelude(const std::filesystem::path& folder);

}  // namespace bertc::codegen
