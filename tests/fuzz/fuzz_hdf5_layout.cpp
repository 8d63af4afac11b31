// Fuzz harness of the HDF5 shard reader's own checks (data/hdf5_shard.h): each input describes a
// shard, which libhdf5 writes as a well-formed file with its checksum beside it; the reader must
// then refuse it with a message naming the file, or read back exactly the examples it describes.
// (fuzz_hdf5_shard damages the bytes of a shard, which the checksum refuses before libhdf5 reads
// them; this harness reaches the datasets' types, shapes, storage and values behind it.)
//
// The description, byte by byte (missing bytes read as 0):
//   examples % 9, seq_len % 17, predictions % 9
//   per dataset, in the layout's order (input_ids ... next_sentence_labels), one form byte:
//     bit 0     left out
//     bits 1-3  element type: the layout's own, int8, uint8, int16, int64, uint64, float32, float64
//     bits 4-5  shape: the layout's, one row more, one column more (rank 1: a second dimension
//               of 1), a dimension fewer
//     bits 6-7  storage: contiguous, chunked, chunked with gzip, compact
//   then every element of the datasets written, in order: a signed byte, or 0x7f and the next 8
//   bytes as a little-endian int64 (HDF5 converts, clamping, to the element type).
#include "data/hdf5_shard.h"
#include "tests/fuzz/harness.h"

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <xxhash.h>

namespace {

struct Reader {
  const uint8_t* data;
  size_t size, at = 0;
  uint8_t byte() { return at < size ? data[at++] : 0; }
  int64_t value() {
    const uint8_t b = byte();
    if (b != 0x7f) return static_cast<int8_t>(b);
    int64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<int64_t>(byte()) << (8 * i);
    return v;
  }
};

struct Dataset {
  const char* name;
  bool tokens;  // [n, seq]; else [n, predictions] (rank 2) or [n]
  int rank;
  hid_t type;
};
const std::array<Dataset, 6> kLayout = {{{"input_ids", true, 2, H5T_STD_I32LE},
                                         {"input_mask", true, 2, H5T_STD_I8LE},
                                         {"segment_ids", true, 2, H5T_STD_I8LE},
                                         {"masked_lm_positions", false, 2, H5T_STD_I32LE},
                                         {"masked_lm_ids", false, 2, H5T_STD_I32LE},
                                         {"next_sentence_labels", false, 1, H5T_STD_I8LE}}};

struct Written {
  bool standard = true;  // every dataset present in the layout's form
  std::array<std::vector<int64_t>, 6> values;
  // Value k of dataset i as the file holds it in the layout's type (HDF5 clamps what it converts).
  int64_t stored(size_t i, size_t k) const {
    const int64_t limit = kLayout[i].type == H5T_STD_I32LE ? INT32_MAX : INT8_MAX;
    return std::clamp(values[i][k], -limit - 1, limit);
  }
};

hid_t element_type(const Dataset& d, unsigned choice) {
  const hid_t types[] = {d.type,         H5T_STD_I8LE,  H5T_STD_U8LE,   H5T_STD_I16LE,
                         H5T_STD_I64LE,  H5T_STD_U64LE, H5T_IEEE_F32LE, H5T_IEEE_F64LE};
  return types[choice];
}

// Writes the described shard to `path` with libhdf5; nullopt when libhdf5 refuses to make it (a
// compact dataset too large for its object header, say): no input for the reader.
std::optional<Written> write_described(Reader& in, const std::string& path) {
  const hsize_t n = in.byte() % 9, seq = in.byte() % 17, preds = in.byte() % 9;
  std::array<uint8_t, 6> forms{};
  for (uint8_t& f : forms) f = in.byte();
  Written w;
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) bertc::fuzz::fail("hdf5 layout", "libhdf5 cannot create the scratch file " + path);
  bool ok = true;
  for (size_t i = 0; i < kLayout.size() && ok; ++i) {
    const Dataset& d = kLayout[i];
    const unsigned form = forms[i];
    w.standard = w.standard && form == 0;
    if (form & 1) continue;
    std::vector<hsize_t> dims = {n};
    if (d.rank == 2) dims.push_back(d.tokens ? seq : preds);
    switch ((form >> 4) & 3) {
      case 1: ++dims[0]; break;
      case 2:
        if (dims.size() == 2) ++dims[1];
        else dims.push_back(1);
        break;
      case 3: dims.pop_back(); break;
    }
    hsize_t count = 1;
    for (hsize_t x : dims) count *= x;
    std::vector<int64_t>& values = w.values[i];
    for (hsize_t k = 0; k < count; ++k) values.push_back(in.value());
    const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t properties = H5Pcreate(H5P_DATASET_CREATE);
    const unsigned storage = form >> 6;
    const bool chunkable = !dims.empty() && count > 0;
    if ((storage == 1 || storage == 2) && chunkable) {
      std::vector<hsize_t> chunk = dims;
      chunk[0] = std::max<hsize_t>(1, (dims[0] + 1) / 2);
      ok = H5Pset_chunk(properties, static_cast<int>(chunk.size()), chunk.data()) >= 0 &&
           (storage == 1 || H5Pset_deflate(properties, 1) >= 0);
    } else if (storage == 3) {
      ok = H5Pset_layout(properties, H5D_COMPACT) >= 0;
    }
    const hid_t set = ok ? H5Dcreate2(file, d.name, element_type(d, (form >> 1) & 7), space, H5P_DEFAULT, properties, H5P_DEFAULT) : -1;
    ok = set >= 0 && (values.empty() || H5Dwrite(set, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
    if (set >= 0) H5Dclose(set);
    H5Pclose(properties);
    H5Sclose(space);
  }
  if (H5Fclose(file) < 0) ok = false;
  if (!ok) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::ofstream(path + ".xxh3") << fmt::format("{:016x}\n", XXH3_64bits(bytes.data(), bytes.size()));
  return w;
}

// A shard in the layout's own form that the reader accepted: every example must be the rows
// written (its tokens up to its mask's first 0, its predictions up to the first 0 position).
void check_examples(const bertc::data::PackedExamples& read, const Written& w, size_t seq, size_t preds) {
  const size_t n = w.values[5].size();
  if (read.size() != n) bertc::fuzz::fail("hdf5 layout", fmt::format("{} examples read of {} written", read.size(), n));
  for (size_t e = 0; e < n; ++e) {
    const bertc::data::Example ex = read[e];
    size_t length = 0;
    while (length < seq && w.stored(1, e * seq + length) == 1) ++length;
    size_t predictions = 0;
    while (predictions < preds && w.stored(3, e * preds + predictions) != 0) ++predictions;
    bool same = ex.tokens.size() == length && ex.masked_positions.size() == predictions &&
                ex.is_random_next == (w.stored(5, e) != 0);
    for (size_t i = 0; same && i < length; ++i)
      same = ex.tokens[i] == w.stored(0, e * seq + i) && ex.segment_ids[i] == w.stored(2, e * seq + i);
    for (size_t j = 0; same && j < predictions; ++j)
      same = ex.masked_positions[j] == w.stored(3, e * preds + j) && ex.masked_labels[j] == w.stored(4, e * preds + j);
    if (!same) bertc::fuzz::fail("hdf5 layout", fmt::format("example {} is not the one written", e));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr), true);
  (void)quiet;
  const std::string path = bertc::fuzz::scratch_file("", "layout.hdf5").string();
  Reader in{data, size};
  const std::optional<Written> written = write_described(in, path);
  if (!written) return 0;
  bertc::fuzz::accepted("shard shape", path, [&] { bertc::data::read_shard_shape(path); });
  std::optional<bertc::data::PackedExamples> read;
  bertc::fuzz::accepted("shard", path, [&] { read = bertc::data::read_shard(path); });
  if (read && written->standard) check_examples(*read, *written, size > 1 ? data[1] % 17 : 0, size > 2 ? data[2] % 9 : 0);
  return 0;
}
