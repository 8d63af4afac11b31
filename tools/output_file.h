// Writing a tool's output: to stdout, or to a file replaced atomically (never half-written).
#pragma once

#include <string>

namespace bertc::tools {

// path "" or "-" means stdout. Throws std::runtime_error naming the file on failure.
void write_output(const std::string& path, const std::string& text);

}  // namespace bertc::tools
