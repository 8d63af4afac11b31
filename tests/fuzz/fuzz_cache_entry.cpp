// Fuzz harness of the NVRTC cache's entries (cuda/gpu_image_entry.h, kernel_cache.h): a damaged
// entry is "not cached" (nullopt), never an exception, and an entry that decodes encodes back to
// the same bytes. Each input is tried as it is and re-signed (its size and checksum made to fit),
// so that the fields behind the checksum are fuzzed too.
#include "cuda/gpu_image_entry.h"
#include "codegen/kernel_cache.h"
#include "tests/fuzz/harness.h"

#include <xxhash.h>

namespace {

void decode(const std::string& bytes) {
  // (No try: an exception here ends the process, which is the failure it would be in compile_all.)
  if (const auto image = bertc::cuda::decode_gpu_image_entry(bytes)) {
    ++bertc::fuzz::accepted_inputs;
    if (bertc::cuda::encode_gpu_image_entry(*image) != bytes)
      bertc::fuzz::fail("cache entry", "an entry that decodes does not encode back to its bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  decode(bytes);
  if (bytes.size() >= 24) {
    bertc::fuzz::put_u64(bytes, 8, bytes.size() - 24);
    bertc::fuzz::put_u64(bytes, 16, XXH3_64bits(bytes.data() + 24, bytes.size() - 24));
    decode(bytes);
  }
  // Through the file access as compile_all reads it.
  const auto read = bertc::codegen::read_cache_entry(bertc::fuzz::scratch_file(bytes, "entry.bin"));
  if (!read || *read != bytes) bertc::fuzz::fail("cache entry", "read_cache_entry does not return the file's bytes");
  return 0;
}
