// Writing the embedded prelude to disk for the host compiler.
#include "codegen/prelude.h"

#include <fstream>
#include <iterator>
#include <string>

#include "support/atomic_file.h"

namespace bertc::codegen {

void write_prelude(const std::filesystem::path& folder) {
  std::filesystem::create_directories(folder);
  for (const EmbeddedFile& f : prelude_files()) {
    const auto path = folder / f.name;
    std::ifstream in(path, std::ios::binary);
    const std::string old{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (old != f.text) support::write_file_atomically(path, f.text);
  }
}

}  // namespace bertc::codegen
