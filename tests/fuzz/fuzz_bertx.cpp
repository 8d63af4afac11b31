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
  auto decode = [](std::string_view bytes) {
    bertc::fuzz::accepted("bertx", "fuzz.bertx", [&] { bertc::codegen::decode_bertx(bytes, "fuzz.bertx"); });
  };
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  decode(input);
  if (size < 24) return 0;
  uint64_t header = 0, sum = 0;
  std::memcpy(&header, data + 8, 8);
  std::memcpy(&sum, data + 16, 8);
  const uint64_t fitted = std::min<uint64_t>(header, size - 24);
  const uint64_t fitted_sum = XXH3_64bits(data + 24, fitted);
  if (fitted == header && fitted_sum == sum) return 0;  // the same input again (a mutant of the sections)
  std::string bytes(input);
  bertc::fuzz::put_u64(bytes, 8, fitted);
  bertc::fuzz::put_u64(bytes, 16, fitted_sum);
  decode(bytes);
  return 0;
}
