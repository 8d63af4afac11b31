// Fuzz harness of the HDF5 shard reader (data/hdf5_shard.h): its shape, then every example, of
// mutants of a shard bertc wrote. The first input (the seed: the shard as written) gives the
// checksum kept beside every later input, so each mutant is a damaged bertc shard: refused by its
// checksum before libhdf5 reads it. BERTC_FUZZ_HDF5_UNCHECKED=1 leaves the checksum file out, as
// for a shard from elsewhere: libhdf5 1.10 then crashes on some mutants (see docs/data.md), which
// bertc cannot prevent for files it did not write.
#include "data/hdf5_shard.h"
#include "tests/fuzz/harness.h"

#include <cstdlib>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <xxhash.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool unchecked = std::getenv("BERTC_FUZZ_HDF5_UNCHECKED") != nullptr;
  static std::optional<std::string> seed_checksum;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!seed_checksum) seed_checksum = fmt::format("{:016x}\n", XXH3_64bits(data, size));
  const std::filesystem::path path = bertc::fuzz::scratch_file(bytes, "fuzz.hdf5");
  if (!unchecked) bertc::fuzz::scratch_file(*seed_checksum, "fuzz.hdf5.xxh3");
  bertc::fuzz::accepted("shard shape", path.string(), [&] { bertc::data::read_shard_shape(path); });
  bertc::fuzz::accepted("shard", path.string(), [&] { bertc::data::read_shard(path); });
  return 0;
}
