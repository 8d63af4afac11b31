// Fuzz harness of the .bertx reader (codegen/bertx_file.h). Each input is tried as it is and with
// its header checksum made to fit, so that the JSON header's records behind the checksum are
// fuzzed too. (The sections after it have checksums of their own: the IR text reader has its own
// fuzz test, kernel sources and images are only handed on.)
#include "codegen/bertx_file.h"
#include "tests/fuzz/harness.h"

#include <algorithm>
#include <cstring>

#include <xxhash.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto decode = [&] { bertc::fuzz::accepted("bertx", "fuzz.bertx", [&] { bertc::codegen::decode_bertx(bytes, "fuzz.bertx"); }); };
  decode();
  if (bytes.size() >= 24) {
    const std::string before = bytes.substr(8, 16);
    uint64_t header = 0;
    std::memcpy(&header, bytes.data() + 8, 8);
    header = std::min<uint64_t>(header, bytes.size() - 24);
    bertc::fuzz::put_u64(bytes, 8, header);
    bertc::fuzz::put_u64(bytes, 16, XXH3_64bits(bytes.data() + 24, header));
    if (bytes.compare(8, 16, before) != 0) decode();  // else the same input again (a mutant of the sections)
  }
  return 0;
}
