// Tool output: stdout, or a file replaced atomically.
#include "tools/output_file.h"

#include <iostream>

#include "support/atomic_file.h"

namespace bertc::tools {

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  support::write_file_atomically(path, text);
}

}  // namespace bertc::tools
