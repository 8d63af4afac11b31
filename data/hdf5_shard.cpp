// NVIDIA-layout HDF5 shards through libhdf5's C API (see hdf5_shard.h).
#include "data/hdf5_shard.h"

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include <fstream>

#include "data/vocab.h"

namespace bertc::data {

// The fix for a damaged shard of bertc's: its folder made again (a folder's shards are made
// together, so one cannot be made alone).
constexpr const char* kMakeShardsAgain =
    "make the shards again with bertc prepare-data into a new folder (-o NEW: a folder's shards are made together, "
    "so one cannot be made alone) and train on that";

// (with or without HDF5: a run's content identity reads the checksums of shards it cannot open)
std::string shard_checksum(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("{}: cannot be read", path.string()));
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), XXH3_freeState);
  XXH3_64bits_reset(state.get());
  // Not zeroed: only the pages a read fills are touched (a small shard costs no 1 MiB memset).
  constexpr std::streamsize kBlock = 1 << 20;
  const auto block = std::make_unique_for_overwrite<char[]>(kBlock);
  while (in.read(block.get(), kBlock) || in.gcount() > 0)
    XXH3_64bits_update(state.get(), block.get(), static_cast<size_t>(in.gcount()));
  if (in.bad()) throw DataError(fmt::format("{}: reading it failed", path.string()));
  return fmt::format("{:016x}", XXH3_64bits_digest(state.get()));
}

std::string repeated_position(const std::string& where, int64_t example, int64_t position, bool recorded) {
  return fmt::format("{}: dataset 'masked_lm_positions', example {}: position {} is there twice, and BERT's "
                     "create_pretraining_data and bertc prepare-data never repeat one (its token's loss would count "
                     "twice): the shard is damaged or made wrong; {}",
                     where, example, position,
                     recorded ? "put back a good copy of it (with its .xxh3), or make the set again from its text "
                                "(bertc prepare-data CONFIG --input TEXT -o NEW_DIR) and train on that"
                              : "move it out of the folder, or make it again (bertc prepare-data)");
}

}  // namespace bertc::data

#ifndef BERTC_HAVE_HDF5

namespace bertc::data {

namespace {
[[noreturn]] void no_hdf5(const std::filesystem::path& path) {
  throw DataError(fmt::format("{}: this bertc was built without HDF5 (BERTC_HDF5 off, as the static GPU test build "
                              "is): build it with libhdf5-dev (scripts/setup.sh installs it) to read or write shards",
                              path.string()));
}
}  // namespace

bool hdf5_available() { return false; }
void write_shard(const std::filesystem::path& path, const std::vector<Example>&, int64_t, int64_t, int64_t,
                 std::optional<ShardRecord>, const RowPlan*) {
  no_hdf5(path);
}
ShardShape read_shard_shape(const std::filesystem::path& path) { no_hdf5(path); }
PackedExamples read_shard(const std::filesystem::path& path, RowPlan*) { no_hdf5(path); }
std::optional<ShardValue> first_value_outside(const std::filesystem::path& path, int64_t, int64_t, const StopCheck&) {
  no_hdf5(path);
}

}  // namespace bertc::data

#else

#include <hdf5.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bertc::data {
namespace {

// The checksum file bertc writes beside each shard: the xxh3 of the shard's bytes, checked before
// libhdf5 opens the shard. libhdf5 1.10 crashes on some damaged files (a size read from the file,
// allocated and copied into unchecked: found by tests/fuzz), so damage must be caught first.
// Shards from elsewhere have no checksum file and go to libhdf5 as they are.
std::filesystem::path checksum_path(const std::filesystem::path& shard) { return shard.string() + ".xxh3"; }

}  // namespace

namespace {

void verify_checksum(const std::filesystem::path& shard) {
  std::ifstream sidecar(checksum_path(shard));
  if (!sidecar) return;  // (a shard bertc did not write)
  std::string stored;
  sidecar >> stored;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(shard, ec)) throw DataError(fmt::format("{}: no such shard file", shard.string()));
  // (a checksum file that holds no checksum says nothing of the shard: the damage is its own)
  if (stored.size() != 16 || stored.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw DataError(fmt::format("{}: holds no checksum ({}): it is damaged, not necessarily its shard; if {} came "
                                "whole (a copy you trust), remove the checksum file and the shard is read unchecked; "
                                "else make the shards again with bertc prepare-data",
                                checksum_path(shard).string(),
                                stored.empty() ? "it is empty" : fmt::format("'{}'", stored.substr(0, 40)),
                                shard.filename().string()));
  if (shard_checksum(shard) != stored)
    throw DataError(fmt::format("{}: does not match its checksum ({}): the shard is damaged or was changed, or the "
                                "checksum file is another shard's; put back good copies of both, the shard and {} "
                                "(prepare-data writes them side by side), or {}",
                                shard.string(), checksum_path(shard).filename().string(),
                                checksum_path(shard).filename().string(), kMakeShardsAgain));
}

// An HDF5 identifier closed when it goes (files, datasets, dataspaces, types, property lists).
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its error stack to stderr by default (per thread); the errors here say what went
// wrong instead. Called on every entry: shards are read and written on several threads.
void quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// One HDF5 call at a time in this process: a library built threadsafe (Debian's) locks itself
// anyway, and one that is not would corrupt its state if two threads entered it.
std::mutex& library_lock() {
  static std::mutex m;
  return m;
}

enum class Width { I32, I8 };
struct DatasetSpec {
  const char* name;
  Width width;
  int rank;  // 2: [n, seq] or [n, preds]; 1: [n]
};
constexpr std::array<DatasetSpec, 6> kDatasets = {{{"input_ids", Width::I32, 2},
                                                    {"input_mask", Width::I8, 2},
                                                    {"segment_ids", Width::I8, 2},
                                                    {"masked_lm_positions", Width::I32, 2},
                                                    {"masked_lm_ids", Width::I32, 2},
                                                    {"next_sentence_labels", Width::I8, 1}}};
constexpr const char* kRowsDataset = "example_rows";  // (rows of several examples: hdf5_shard.h)
constexpr const char* kLayout =
    "an NVIDIA BERT shard holds input_ids, input_mask, segment_ids [n, seq], masked_lm_positions, masked_lm_ids "
    "[n, predictions] and next_sentence_labels [n], all integers";

hid_t file_type(Width w) { return w == Width::I32 ? H5T_STD_I32LE : H5T_STD_I8LE; }
hid_t memory_type(Width w) { return w == Width::I32 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT8; }

struct Arrays {
  ShardShape shape;
  std::vector<int32_t> input_ids, positions, labels;
  std::vector<int8_t> input_mask, segment_ids, next_sentence;
  std::vector<int32_t> example_rows;  // [rows, K], where the shard records rows of several examples

  void* data(size_t i) {
    switch (i) {
      case 0: return input_ids.data();
      case 1: return input_mask.data();
      case 2: return segment_ids.data();
      case 3: return positions.data();
      case 4: return labels.data();
      default: return next_sentence.data();
    }
  }
  void resize(const ShardShape& s) {
    shape = s;
    const auto rows = static_cast<size_t>(s.examples);
    input_ids.assign(rows * static_cast<size_t>(s.seq_len), 0);
    input_mask.assign(input_ids.size(), 0);
    segment_ids.assign(input_ids.size(), 0);
    positions.assign(rows * static_cast<size_t>(s.predictions), 0);
    labels.assign(positions.size(), 0);
    next_sentence.assign(rows, 0);
  }
};

std::vector<hsize_t> dims_of(const DatasetSpec& d, const ShardShape& s) {
  if (d.rank == 1) return {static_cast<hsize_t>(s.examples)};
  const bool tokens = d.name == kDatasets[0].name || d.name == kDatasets[1].name || d.name == kDatasets[2].name;
  return {static_cast<hsize_t>(s.examples), static_cast<hsize_t>(tokens ? s.seq_len : s.predictions)};
}

// Examples [begin, end) as padded rows.
Arrays pack(const std::vector<Example>& examples, size_t begin, size_t end, int64_t seq_len, int64_t predictions,
            int64_t pad_id) {
  Arrays a;
  a.resize({static_cast<int64_t>(end - begin), seq_len, predictions});
  for (size_t e = 0; e < end - begin; ++e) {
    const Example& ex = examples[begin + e];
    if (static_cast<int64_t>(ex.tokens.size()) > seq_len || static_cast<int64_t>(ex.masked_positions.size()) > predictions)
      throw DataError(fmt::format("example {} has {} tokens and {} predictions, more than the shard's {} and {}",
                                  begin + e, ex.tokens.size(), ex.masked_positions.size(), seq_len, predictions));
    const size_t row = e * static_cast<size_t>(seq_len);
    for (int64_t i = 0; i < seq_len; ++i) {
      const bool real = i < static_cast<int64_t>(ex.tokens.size());
      a.input_ids[row + static_cast<size_t>(i)] = static_cast<int32_t>(real ? ex.tokens[static_cast<size_t>(i)] : pad_id);
      a.input_mask[row + static_cast<size_t>(i)] = real ? 1 : 0;
      a.segment_ids[row + static_cast<size_t>(i)] = real ? static_cast<int8_t>(ex.segment_ids[static_cast<size_t>(i)]) : 0;
    }
    const size_t prow = e * static_cast<size_t>(predictions);
    for (size_t j = 0; j < ex.masked_positions.size(); ++j) {
      a.positions[prow + j] = static_cast<int32_t>(ex.masked_positions[j]);
      a.labels[prow + j] = static_cast<int32_t>(ex.masked_labels[j]);
    }
    a.next_sentence[e] = ex.is_random_next ? 1 : 0;
  }
  return a;
}

std::optional<ShardRecord> get_record(hid_t file, const std::string& where);
std::optional<RowsPlaced> get_rows(hid_t file, const ShardShape& shape, const std::string& where);

// The first value of a read that its memory type could not hold, as decimal text ("" while none).
struct OutOfRange {
  std::string value;
};

// The integer at `bytes` of HDF5 integer type `type`, as decimal text.
std::string integer_text(hid_t type, const void* bytes) {
  const size_t size = H5Tget_size(type);
  if (size == 0 || size > 8) return fmt::format("a value of {} bytes", size);
  unsigned char b[8] = {};
  std::memcpy(b, bytes, size);
  if (H5Tget_order(type) == H5T_ORDER_BE) std::reverse(b, b + size);
  uint64_t v = 0;
  for (size_t i = size; i-- > 0;) v = v << 8 | b[i];
  if (H5Tget_sign(type) == H5T_SGN_2 && size < 8 && (v >> (8 * size - 1)) & 1) v |= ~uint64_t{0} << (8 * size);
  return H5Tget_sign(type) == H5T_SGN_2 ? std::to_string(static_cast<int64_t>(v)) : std::to_string(v);
}

std::string unreadable(const std::string& where, const char* dataset) {
  return fmt::format("{}: the data of dataset '{}' cannot be read (a truncated or damaged file)", where, dataset);
}

// A value read past its memory type's range.
std::string past_range(const std::string& where, const char* dataset, const std::string& value, int64_t low,
                       int64_t high) {
  return fmt::format("{}: dataset '{}' holds {}, past what bertc reads it as ({} to {}), which no BERT shard needs "
                     "(token ids, positions and labels are small): the shard is damaged or not made for BERT; make it "
                     "again (bertc prepare-data)",
                     where, dataset, value, low, high);
}

std::string past_int32(const std::string& where, const char* dataset, const std::string& value) {
  return past_range(where, dataset, value, INT32_MIN, INT32_MAX);
}

// libhdf5's conversion exception callback: a value out of range ends the read, kept to be said.
H5T_conv_ret_t stop_out_of_range(H5T_conv_except_t kind, hid_t source_type, hid_t, void* source, void*, void* kept) {
  if (kind != H5T_CONV_EXCEPT_RANGE_HI && kind != H5T_CONV_EXCEPT_RANGE_LOW) return H5T_CONV_UNHANDLED;
  auto& out = *static_cast<OutOfRange*>(kept);
  if (out.value.empty()) out.value = integer_text(source_type, source);
  return H5T_CONV_ABORT;
}

// Opens a shard's datasets and checks their kinds and shapes; `read` also reads their data.
ShardShape inspect(const std::filesystem::path& path, Arrays* read) {
  verify_checksum(path);
  std::lock_guard lock(library_lock());
  quiet();
  const std::string where = path.string();
  Handle file(H5Fopen(where.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) throw DataError(fmt::format("{}: no such shard file", where));
    throw DataError(fmt::format("{}: not an HDF5 file, or truncated or damaged (its header cannot be read)", where));
  }
  std::array<std::vector<hsize_t>, kDatasets.size()> dims;
  for (size_t i = 0; i < kDatasets.size(); ++i) {
    const DatasetSpec& d = kDatasets[i];
    if (H5Lexists(file.get(), d.name, H5P_DEFAULT) <= 0)
      throw DataError(fmt::format("{}: has no dataset '{}' ({})", where, d.name, kLayout));
    Handle set(H5Dopen2(file.get(), d.name, H5P_DEFAULT), H5Dclose);
    Handle type(set.ok() ? H5Dget_type(set.get()) : -1, H5Tclose);
    Handle space(set.ok() ? H5Dget_space(set.get()) : -1, H5Sclose);
    if (!type.ok() || !space.ok()) throw DataError(fmt::format("{}: dataset '{}' cannot be opened (a damaged file)", where, d.name));
    if (H5Tget_class(type.get()) != H5T_INTEGER)
      throw DataError(fmt::format("{}: dataset '{}' does not hold integers ({})", where, d.name, kLayout));
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank != d.rank)
      throw DataError(fmt::format("{}: dataset '{}' has {} dimensions, not {} ({})", where, d.name, rank, d.rank, kLayout));
    dims[i].resize(static_cast<size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims[i].data(), nullptr);
  }
  ShardShape shape{static_cast<int64_t>(dims[0][0]), static_cast<int64_t>(dims[0][1]),
                   static_cast<int64_t>(dims[3][1]), get_record(file.get(), where), std::nullopt};
  shape.rows = get_rows(file.get(), shape, where);
  // (HDF5 itself refuses a file shorter than its header says, truncated, when it opens it.)
  if (shape.seq_len > (1 << 20) || shape.predictions > shape.seq_len || shape.examples > (int64_t{1} << 32) ||
      shape.examples * shape.seq_len > (int64_t{1} << 36))
    throw DataError(fmt::format("{}: input_ids is [{}, {}] and masked_lm_positions [{}, {}]: not the shape of a shard "
                                "(sequences of at most 2^20 tokens, no more predictions than tokens)",
                                where, shape.examples, shape.seq_len, shape.examples, shape.predictions));
  for (size_t i = 0; i < kDatasets.size(); ++i)
    if (dims[i] != dims_of(kDatasets[i], shape))
      throw DataError(fmt::format("{}: dataset '{}' is [{}], which does not agree with input_ids [{}, {}] and "
                                  "masked_lm_positions [{}, {}]",
                                  where, kDatasets[i].name, fmt::join(dims[i], ", "), shape.examples, shape.seq_len,
                                  shape.examples, shape.predictions));
  if (!read) return shape;
  read->resize(shape);
  for (size_t i = 0; i < kDatasets.size(); ++i) {
    Handle set(H5Dopen2(file.get(), kDatasets[i].name, H5P_DEFAULT), H5Dclose);
    // A value the memory type cannot hold stops the read (libhdf5 would clamp it: 3e9 read as
    // 2147483647, and a later message would blame that).
    OutOfRange out_of_range;
    Handle transfer(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
    H5Pset_type_conv_cb(transfer.get(), stop_out_of_range, &out_of_range);
    if (shape.examples > 0 &&
        H5Dread(set.get(), memory_type(kDatasets[i].width), H5S_ALL, H5S_ALL, transfer.get(), read->data(i)) < 0) {
      if (out_of_range.value.empty()) throw DataError(unreadable(where, kDatasets[i].name));
      throw DataError(kDatasets[i].width == Width::I32 ? past_int32(where, kDatasets[i].name, out_of_range.value)
                                                       : past_range(where, kDatasets[i].name, out_of_range.value,
                                                                    INT8_MIN, INT8_MAX));
    }
  }
  if (shape.rows && shape.rows->count > 0) {
    read->example_rows.assign(static_cast<size_t>(shape.rows->count * shape.rows->capacity.examples), -1);
    Handle set(H5Dopen2(file.get(), kRowsDataset, H5P_DEFAULT), H5Dclose);
    OutOfRange out_of_range;
    Handle transfer(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
    H5Pset_type_conv_cb(transfer.get(), stop_out_of_range, &out_of_range);
    if (H5Dread(set.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, transfer.get(), read->example_rows.data()) < 0)
      throw DataError(out_of_range.value.empty() ? unreadable(where, kRowsDataset)
                                                 : past_int32(where, kRowsDataset, out_of_range.value));
  }
  return shape;
}

// One row of the arrays as an example; throws DataError for values no shard holds.
Example unpack(const Arrays& a, size_t e, const std::string& where) {
  const ShardShape& s = a.shape;
  const size_t row = e * static_cast<size_t>(s.seq_len), prow = e * static_cast<size_t>(s.predictions);
  Example ex;
  size_t length = 0;
  while (length < static_cast<size_t>(s.seq_len) && a.input_mask[row + length] == 1) ++length;
  for (size_t i = length; i < static_cast<size_t>(s.seq_len); ++i)
    if (a.input_mask[row + i] != 0)
      throw DataError(fmt::format("{}: example {}: input_mask is not 1s then 0s (at position {})", where, e, i));
  if (length == 0)  // (all 0s, or no positions at all)
    throw DataError(fmt::format("{}: example {}: input_mask marks no token (all 0), where an example holds [CLS] A "
                                "[SEP] B [SEP] at least: the shard was made wrong; make it again (bertc prepare-data)",
                                where, e));
  for (size_t i = 0; i < length; ++i) {
    ex.tokens.push_back(a.input_ids[row + i]);
    ex.segment_ids.push_back(a.segment_ids[row + i]);
  }
  // NVIDIA's reader: the positions end at the first 0.
  for (size_t j = 0; j < static_cast<size_t>(s.predictions) && a.positions[prow + j] != 0; ++j) {
    const int32_t p = a.positions[prow + j];
    if (p < 0 || static_cast<size_t>(p) >= length)
      throw DataError(fmt::format("{}: example {}: masked_lm_positions holds {}, outside its {} tokens", where, e, p,
                                  length));
    if (std::find(ex.masked_positions.begin(), ex.masked_positions.end(), p) != ex.masked_positions.end())
      throw DataError(repeated_position(where, static_cast<int64_t>(e), p, s.record.has_value()));
    ex.masked_positions.push_back(p);
    ex.masked_labels.push_back(a.labels[prow + j]);
  }
  if (a.next_sentence[e] != 0 && a.next_sentence[e] != 1)  // (any other value, taken as "random", trains wrong)
    throw DataError(fmt::format("{}: example {}: next_sentence_labels holds {}, and a label is 0 (the sentence that "
                                "followed) or 1 (a random one): the shard was made wrong; make it again (bertc "
                                "prepare-data)",
                                where, e, int{a.next_sentence[e]}));
  ex.is_random_next = a.next_sentence[e] == 1;
  return ex;
}


// The largest token id of the examples' tokens and masked labels (-1 when none).
int64_t largest_token(const std::vector<Example>& examples) {
  int64_t largest = -1;
  for (const Example& e : examples) {
    for (int64_t t : e.tokens) largest = std::max(largest, t);
    for (int64_t t : e.masked_labels) largest = std::max(largest, t);
  }
  return largest;
}

// A scalar attribute of the root group.
void put_attribute(hid_t file, const char* name, hid_t type, const void* value, const std::string& where) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attribute(H5Acreate2(file, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attribute.ok() || H5Awrite(attribute.get(), type, value) < 0)
    throw DataError(fmt::format("{}: attribute '{}' cannot be written", where, name));
}

void put_text(hid_t file, const char* name, const std::string& value, const std::string& where) {
  Handle text(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(text.get(), value.size() + 1);
  put_attribute(file, name, text.get(), value.c_str(), where);
}

void put_record(hid_t file, const ShardRecord& r, const std::string& where) {
  put_text(file, "bertc_vocab_xxh3", r.vocab_xxh3, where);
  if (!r.vocab_path.empty()) put_text(file, "bertc_vocab_path", r.vocab_path, where);
  put_attribute(file, "bertc_vocab_tokens", H5T_NATIVE_INT64, &r.vocab_tokens, where);
  put_attribute(file, "bertc_max_token_id", H5T_NATIVE_INT64, &r.max_token_id, where);
  put_attribute(file, "bertc_masked_lm_prob", H5T_NATIVE_DOUBLE, &r.masked_lm_prob, where);
  const int64_t lower = r.do_lower_case ? 1 : 0;
  put_attribute(file, "bertc_do_lower_case", H5T_NATIVE_INT64, &lower, where);
  if (r.set.empty()) return;
  put_text(file, "bertc_shard_set", r.set, where);
  put_attribute(file, "bertc_shard_index", H5T_NATIVE_INT64, &r.index, where);
  put_attribute(file, "bertc_shard_count", H5T_NATIVE_INT64, &r.count, where);
  if (!r.text.empty()) put_text(file, "bertc_text_xxh3", r.text, where);
}

// A scalar attribute's value; nullopt when the file has no attribute of that name.
template <typename T>
std::optional<T> get_attribute(hid_t file, const char* name, hid_t memory_type, const std::string& where) {
  if (H5Aexists(file, name) <= 0) return std::nullopt;
  Handle attribute(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
  Handle space(attribute.ok() ? H5Aget_space(attribute.get()) : -1, H5Sclose);
  // (stored as bertc writes it, an integer or a float: libhdf5 converts 0.5 to the integer 0, which
  // read a shard's do_lower_case 0.5 as false, silently)
  Handle stored(attribute.ok() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
  if (stored.ok() && H5Tget_class(stored.get()) != H5Tget_class(memory_type))
    throw DataError(fmt::format("{}: attribute '{}' is not stored as {} as bertc writes it (another tool's edit, or a "
                                "damaged shard): {}",
                                where, name, H5Tget_class(memory_type) == H5T_INTEGER ? "an integer" : "a float",
                                kMakeShardsAgain));
  if (!space.ok() || H5Sget_simple_extent_npoints(space.get()) != 1)
    throw DataError(fmt::format("{}: attribute '{}' cannot be read (a damaged shard: make it again with bertc "
                                "prepare-data)",
                                where, name));
  // (An unsigned 64-bit value past int64_t: libhdf5 would clamp it to int64_t's largest, which a
  // refusal then said in its place; read as stored and refused as it is.)
  if constexpr (std::is_same_v<T, int64_t>)
    if (stored.ok() && H5Tget_sign(stored.get()) == H5T_SGN_NONE && H5Tget_size(stored.get()) == 8) {
      uint64_t wide = 0;
      if (H5Aread(attribute.get(), H5T_NATIVE_UINT64, &wide) >= 0 &&
          wide > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw DataError(fmt::format("{}: attribute '{}' holds {}, past what bertc reads it as (a signed 64-bit "
                                    "integer) and past any record bertc writes (another tool's edit, or a damaged "
                                    "shard): {}",
                                    where, name, wide, kMakeShardsAgain));
    }
  T value{};
  if (H5Aread(attribute.get(), memory_type, &value) < 0)
    throw DataError(fmt::format("{}: attribute '{}' cannot be read (a damaged shard: make it again with bertc "
                                "prepare-data)",
                                where, name));
  return value;
}

// A fixed-length text attribute of at most `longest` bytes.
std::string get_text(hid_t file, const char* name, size_t longest, const std::string& where) {
  Handle attribute(H5Aopen(file, name, H5P_DEFAULT), H5Aclose);
  Handle type(attribute.ok() ? H5Aget_type(attribute.get()) : -1, H5Tclose);
  const size_t size = type.ok() && H5Tget_class(type.get()) == H5T_STRING ? H5Tget_size(type.get()) : 0;
  if (size == 0 || size > longest || H5Tis_variable_str(type.get()) > 0)
    throw DataError(fmt::format("{}: attribute '{}' is not the record bertc writes (a damaged shard: make it again "
                                "with bertc prepare-data)",
                                where, name));
  // Read as NUL-terminated text one byte longer than stored: a string stored NUL-padded to its
  // length (h5py's fixed-length strings) keeps its last character (read at its own size, the
  // conversion to NUL-terminated drops it for the terminator).
  std::string text(size + 1, '\0');
  Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(memory.get(), size + 1);
  H5Tset_strpad(memory.get(), H5T_STR_NULLTERM);
  if (H5Aread(attribute.get(), memory.get(), text.data()) < 0)
    throw DataError(fmt::format("{}: attribute '{}' cannot be read (a damaged shard)", where, name));
  return text.c_str();
}

std::optional<ShardRecord> get_record(hid_t file, const std::string& where) {
  if (H5Aexists(file, "bertc_vocab_xxh3") <= 0) return std::nullopt;
  ShardRecord r;
  r.vocab_xxh3 = get_text(file, "bertc_vocab_xxh3", 64, where);
  if (H5Aexists(file, "bertc_vocab_path") > 0) r.vocab_path = get_text(file, "bertc_vocab_path", 1 << 16, where);
  auto needed = [&](const char* name, hid_t memory_type, auto zero) {
    const auto v = get_attribute<decltype(zero)>(file, name, memory_type, where);
    if (!v)
      throw DataError(fmt::format("{}: has bertc_vocab_xxh3 but no '{}' (a damaged shard): {}", where, name,
                                  kMakeShardsAgain));
    return *v;
  };
  r.vocab_tokens = needed("bertc_vocab_tokens", H5T_NATIVE_INT64, int64_t{});
  r.max_token_id = needed("bertc_max_token_id", H5T_NATIVE_INT64, int64_t{});
  r.masked_lm_prob = needed("bertc_masked_lm_prob", H5T_NATIVE_DOUBLE, double{});
  const int64_t lower = needed("bertc_do_lower_case", H5T_NATIVE_INT64, int64_t{});
  // A record that contradicts itself is damaged, and no guide to which vocabulary the shard is of.
  auto damaged = [&](const std::string& what) {
    // (its attributes' removal was advised too, which needs an HDF5 tool, and then its checksum
    // and the folder's other shards refuse it)
    return DataError(fmt::format("{}: its record is damaged ({}): {}", where, what, kMakeShardsAgain));
  };
  if (lower != 0 && lower != 1) throw damaged(fmt::format("bertc_do_lower_case is {}, not 0 or 1", lower));
  if (r.vocab_tokens < 1 || r.max_token_id < 0 || r.max_token_id >= r.vocab_tokens)
    throw damaged(fmt::format("bertc_max_token_id {} in a vocabulary of {} tokens", r.max_token_id, r.vocab_tokens));
  if (!(r.masked_lm_prob >= 0 && r.masked_lm_prob <= 1))
    throw damaged(fmt::format("bertc_masked_lm_prob is {}", r.masked_lm_prob));
  r.do_lower_case = lower == 1;
  if (H5Aexists(file, "bertc_shard_set") > 0) {
    r.set = get_text(file, "bertc_shard_set", 64, where);
    r.index = needed("bertc_shard_index", H5T_NATIVE_INT64, int64_t{});
    r.count = needed("bertc_shard_count", H5T_NATIVE_INT64, int64_t{});
    if (r.count < 1 || r.index < 0 || r.index >= r.count)
      throw damaged(fmt::format("bertc_shard_index {} of bertc_shard_count {}", r.index, r.count));
    if (H5Aexists(file, "bertc_text_xxh3") > 0) r.text = get_text(file, "bertc_text_xxh3", 64, where);
  }
  return r;
}

// A shard's rows of several examples refused as damaged, with what is wrong.
DataError damaged_rows(const std::string& where, const std::string& what) {
  return DataError(fmt::format("{}: its rows of several examples are damaged ({}): {}", where, what, kMakeShardsAgain));
}

// The example_rows a shard records, its [rows, K] as the dataset's dimensions and its capacity as
// the attributes say; nullopt where there is none. Throws DataError for a dataset or attributes
// that are not rows' (a damaged shard).
std::optional<RowsPlaced> get_rows(hid_t file, const ShardShape& shape, const std::string& where) {
  if (H5Lexists(file, kRowsDataset, H5P_DEFAULT) <= 0) return std::nullopt;
  Handle set(H5Dopen2(file, kRowsDataset, H5P_DEFAULT), H5Dclose);
  Handle type(set.ok() ? H5Dget_type(set.get()) : -1, H5Tclose);
  Handle space(set.ok() ? H5Dget_space(set.get()) : -1, H5Sclose);
  auto damaged = [&](const std::string& what) { return damaged_rows(where, what); };
  if (!type.ok() || !space.ok() || H5Tget_class(type.get()) != H5T_INTEGER || H5Sget_simple_extent_ndims(space.get()) != 2)
    throw damaged(fmt::format("'{}' is not a [rows, examples a row] dataset of integers", kRowsDataset));
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  const auto tokens = get_attribute<int64_t>(file, "bertc_row_tokens", H5T_NATIVE_INT64, where);
  const auto predictions = get_attribute<int64_t>(file, "bertc_row_predictions", H5T_NATIVE_INT64, where);
  if (!tokens || !predictions) throw damaged("bertc_row_tokens or bertc_row_predictions missing");
  RowsPlaced rows{static_cast<int64_t>(dims[0]), {*tokens, *predictions, static_cast<int64_t>(dims[1])}};
  if (rows.count > shape.examples || (shape.examples > 0 && rows.count == 0) || rows.capacity.examples < 1 ||
      rows.capacity.examples > shape.seq_len ||
      rows.capacity.tokens != shape.seq_len || rows.capacity.predictions < shape.predictions ||
      rows.capacity.predictions > rows.capacity.examples * shape.predictions)
    throw damaged(fmt::format("{} rows of up to {} examples, {} tokens and {} predictions for {} examples of {} tokens "
                              "and {} predictions",
                              rows.count, rows.capacity.examples, rows.capacity.tokens, rows.capacity.predictions,
                              shape.examples, shape.seq_len, shape.predictions));
  return rows;
}

// The rows recorded in `slots` ([count, K] example numbers, then -1) of a shard's `examples`:
// every example in one row exactly, no row empty or past its capacity; else DataError.
std::vector<std::vector<size_t>> rows_of_slots(const std::vector<int32_t>& slots, const RowsPlaced& recorded,
                                               const PackedExamples& examples, const std::string& where) {
  auto damaged = [&](const std::string& what) { return damaged_rows(where, what); };
  const auto K = static_cast<size_t>(recorded.capacity.examples);
  std::vector<std::vector<size_t>> rows(static_cast<size_t>(recorded.count));
  std::vector<bool> placed(examples.size(), false);
  for (size_t r = 0; r < rows.size(); ++r) {
    int64_t tokens = 0, predictions = 0;
    for (size_t k = 0; k < K; ++k) {
      const int32_t e = slots[r * K + k];
      if (e < 0) {
        if (e != -1 || k == 0 || (k + 1 < K && slots[r * K + k + 1] != -1))
          throw damaged(fmt::format("row {} holds {} in slot {}: a row's examples come first, then -1", r, e, k));
        continue;
      }
      if (static_cast<size_t>(e) >= examples.size() || placed[static_cast<size_t>(e)])
        throw damaged(fmt::format("row {} names example {}, {}", r, e,
                                  static_cast<size_t>(e) >= examples.size() ? "past the shard's" : "which another row holds"));
      placed[static_cast<size_t>(e)] = true;
      const Example ex = examples[static_cast<size_t>(e)];
      tokens += static_cast<int64_t>(ex.tokens.size()), predictions += static_cast<int64_t>(ex.masked_positions.size());
      rows[r].push_back(static_cast<size_t>(e));
    }
    if (tokens > recorded.capacity.tokens || predictions > recorded.capacity.predictions)
      throw damaged(fmt::format("row {} takes {} tokens and {} predictions, past its {} and {}", r, tokens, predictions,
                                recorded.capacity.tokens, recorded.capacity.predictions));
  }
  if (const auto missing = std::find(placed.begin(), placed.end(), false); missing != placed.end())
    throw damaged(fmt::format("example {} is in no row", missing - placed.begin()));
  return rows;
}


// Rows of several examples as example_rows [rows, K] (gzip, as the examples) and their capacity as
// attributes; every one of `examples` examples in one row (else std::invalid_argument: a caller's
// bug).
void put_rows(hid_t file, const RowPlan& plan, size_t examples, const std::string& where) {
  const auto K = static_cast<size_t>(plan.capacity.examples);
  std::vector<int32_t> slots(plan.rows.size() * K, -1);
  size_t placed = 0;
  for (size_t r = 0; r < plan.rows.size(); ++r) {
    if (plan.rows[r].empty() || plan.rows[r].size() > K)
      throw std::invalid_argument(fmt::format("{}: row {} holds {} examples of at most {}", where, r, plan.rows[r].size(), K));
    for (size_t k = 0; k < plan.rows[r].size(); ++k) slots[r * K + k] = static_cast<int32_t>(plan.rows[r][k]);
    placed += plan.rows[r].size();
  }
  if (placed != examples)
    throw std::invalid_argument(fmt::format("{}: its rows hold {} examples of {}", where, placed, examples));
  const hsize_t dims[2] = {static_cast<hsize_t>(plan.rows.size()), static_cast<hsize_t>(K)};
  Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
  Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(properties.get(), false);
  if (dims[0] > 0 && (H5Pset_chunk(properties.get(), 2, dims) < 0 || H5Pset_deflate(properties.get(), 4) < 0))
    throw DataError(fmt::format("{}: HDF5 refused the compression of '{}'", where, kRowsDataset));
  Handle set(H5Dcreate2(file, kRowsDataset, H5T_STD_I32LE, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
             H5Dclose);
  if (!set.ok() || (dims[0] > 0 && H5Dwrite(set.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, slots.data()) < 0))
    throw DataError(fmt::format("{}: writing dataset '{}' failed (out of memory?)", where, kRowsDataset));
  put_attribute(file, "bertc_row_tokens", H5T_NATIVE_INT64, &plan.capacity.tokens, where);
  put_attribute(file, "bertc_row_predictions", H5T_NATIVE_INT64, &plan.capacity.predictions, where);
}

// The shard as an HDF5 file made in memory (libhdf5's core driver, no file behind it): its
// datasets written a block of rows at a time (the chunks' rows: the padded arrays of a whole shard
// would take as much memory again as its examples), its record as attributes.
std::string shard_image(const std::vector<Example>& examples, int64_t seq_len, int64_t predictions, int64_t pad_id,
                        const std::optional<ShardRecord>& record, const RowPlan* rows, const std::string& where) {
  constexpr size_t kRows = 4096;
  const ShardShape shape{static_cast<int64_t>(examples.size()), seq_len, predictions, std::nullopt};
  std::lock_guard lock(library_lock());
  quiet();
  Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!access.ok() || H5Pset_fapl_core(access.get(), size_t{16} << 20, false) < 0)
    throw DataError(fmt::format("{}: libhdf5 cannot make a file in memory", where));
  Handle file(H5Fcreate(where.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose);
  if (!file.ok()) throw DataError(fmt::format("{}: libhdf5 cannot make the shard (out of memory?)", where));
  std::vector<std::unique_ptr<Handle>> sets;  // (closed before the file: declared after it)
  for (const DatasetSpec& d : kDatasets) {
    const std::vector<hsize_t> dims = dims_of(d, shape);
    Handle space(H5Screate_simple(d.rank, dims.data(), nullptr), H5Sclose);
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    // No modification times in the object headers: the same examples make the same bytes.
    H5Pset_obj_track_times(properties.get(), false);
    // gzip as h5py's compression="gzip" (level 4), in chunks of up to kRows examples; a dataset
    // with no elements (no rows, or no predictions) is stored plain.
    if (std::all_of(dims.begin(), dims.end(), [](hsize_t n) { return n > 0; })) {
      std::vector<hsize_t> chunk = dims;
      chunk[0] = std::min<hsize_t>(dims[0], kRows);
      if (H5Pset_chunk(properties.get(), d.rank, chunk.data()) < 0 || H5Pset_deflate(properties.get(), 4) < 0)
        throw DataError(fmt::format("{}: HDF5 refused the compression of '{}'", where, d.name));
    }
    sets.push_back(std::make_unique<Handle>(
        H5Dcreate2(file.get(), d.name, file_type(d.width), space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
        H5Dclose));
    if (!sets.back()->ok()) throw DataError(fmt::format("{}: dataset '{}' cannot be created", where, d.name));
  }
  for (size_t begin = 0; begin < examples.size(); begin += kRows) {
    const size_t end = std::min(examples.size(), begin + kRows);
    Arrays block = pack(examples, begin, end, seq_len, predictions, pad_id);
    for (size_t i = 0; i < kDatasets.size(); ++i) {
      const DatasetSpec& d = kDatasets[i];
      std::vector<hsize_t> count = dims_of(d, block.shape), start(count.size(), 0);
      if (count.back() == 0) continue;  // (no predictions: nothing to write)
      start[0] = begin;
      Handle file_space(H5Dget_space(sets[i]->get()), H5Sclose);
      Handle memory_space(H5Screate_simple(d.rank, count.data(), nullptr), H5Sclose);
      if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0 ||
          H5Dwrite(sets[i]->get(), memory_type(d.width), memory_space.get(), file_space.get(), H5P_DEFAULT,
                   block.data(i)) < 0)
        throw DataError(fmt::format("{}: writing dataset '{}' failed (out of memory?)", where, d.name));
    }
  }
  if (record) put_record(file.get(), *record, where);
  if (rows) put_rows(file.get(), *rows, examples.size(), where);
  sets.clear();  // (their chunks flushed into the image)
  if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) throw DataError(fmt::format("{}: libhdf5 cannot finish the shard", where));
  const ssize_t size = H5Fget_file_image(file.get(), nullptr, 0);
  std::string image(size > 0 ? static_cast<size_t>(size) : 0, '\0');
  if (size <= 0 || H5Fget_file_image(file.get(), image.data(), image.size()) != size)
    throw DataError(fmt::format("{}: libhdf5 cannot give the shard's bytes", where));
  return image;
}

// `bytes` as the whole of a new file; throws ShardWriteFailed naming it and the system's error (a
// full disk: "No space left on device").
void write_whole(const std::filesystem::path& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    throw ShardWriteFailed(fmt::format("{}: cannot be created: {}", path.string(), std::strerror(error)), error,
                           bytes.size());
  }
  size_t done = 0;
  int error = 0;
  while (done < bytes.size() && error == 0) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n > 0) done += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR) error = errno;
  }
  if (error == 0 && ::fsync(fd) != 0 && errno != EINVAL) error = errno;  // (EINVAL: a file system without fsync)
  if (::close(fd) != 0 && error == 0 && errno != EINTR) error = errno;
  if (error != 0)
    throw ShardWriteFailed(fmt::format("{}: writing it failed after {} of {} bytes: {}", path.string(), done,
                                       bytes.size(), std::strerror(error)),
                           error, bytes.size());
}

}  // namespace

bool hdf5_available() { return true; }

void write_shard(const std::filesystem::path& path, const std::vector<Example>& examples, int64_t seq_len,
                 int64_t predictions, int64_t pad_id, std::optional<ShardRecord> record, const RowPlan* rows) {
  const std::filesystem::path temporary = path.parent_path() / ("." + path.filename().string() + ".tmp");
  if (record) record->max_token_id = largest_token(examples);
  const std::string image = shard_image(examples, seq_len, predictions, pad_id, record, rows, temporary.string());
  // A failed write leaves no temporary behind.
  struct Temporary {
    const std::filesystem::path& path;
    bool kept = false;
    ~Temporary() {
      std::error_code ec;
      if (!kept) std::filesystem::remove(path, ec);
    }
  } cleanup{temporary};
  write_whole(temporary, image);
  // The checksum file first: a kill between the two renames leaves a checksum that refuses the
  // shard (made again), never a shard that is trusted unchecked.
  const std::filesystem::path sum_temporary = checksum_path(temporary);
  struct SumTemporary {
    const std::filesystem::path& path;
    ~SumTemporary() {
      std::error_code ec;
      std::filesystem::remove(path, ec);  // (gone by then when renamed)
    }
  } sum_cleanup{sum_temporary};
  write_whole(sum_temporary, fmt::format("{:016x}\n", XXH3_64bits(image.data(), image.size())));
  std::error_code ec;
  std::filesystem::rename(sum_temporary, checksum_path(path), ec);
  if (!ec) std::filesystem::rename(temporary, path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot be renamed to {}: {}", temporary.string(), path.string(), ec.message()));
  cleanup.kept = true;
}

ShardShape read_shard_shape(const std::filesystem::path& path) { return inspect(path, nullptr); }

PackedExamples read_shard(const std::filesystem::path& path, RowPlan* recorded) {
  Arrays a;
  inspect(path, &a);
  // Reserved exactly (the mask's 1s are the tokens; predictions up to a row's first 0 position), so
  // that the packed set needs no growing or copying beside the padded arrays.
  const size_t rows = static_cast<size_t>(a.shape.examples), P = static_cast<size_t>(a.shape.predictions);
  size_t tokens = 0, predictions = 0;
  for (int8_t m : a.input_mask) tokens += m == 1;
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < P && a.positions[r * P + j] != 0; ++j) ++predictions;
  PackedExamples examples;
  examples.reserve(rows, tokens, predictions);
  for (size_t e = 0; e < rows; ++e) examples.push_back(unpack(a, e, path.string()));
  if (recorded) {
    *recorded = {};
    if (a.shape.rows) {
      recorded->capacity = a.shape.rows->capacity;
      recorded->rows = rows_of_slots(a.example_rows, *a.shape.rows, examples, path.string());
    }
  }
  return examples;
}

std::optional<ShardValue> first_value_outside(const std::filesystem::path& path, int64_t vocab_size,
                                              int64_t type_vocab_size, const StopCheck& stop) {
  const ShardShape shape = read_shard_shape(path);  // (its refusals first: shapes, types, checksum)
  const std::string where = path.string();
  std::lock_guard lock(library_lock());
  quiet();
  Handle file(H5Fopen(where.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) throw DataError(fmt::format("{}: cannot be opened again (changed while read?)", where));
  const hsize_t seq = static_cast<hsize_t>(shape.seq_len), preds = static_cast<hsize_t>(shape.predictions);
  // Rows of a block: about 1M values of each [n, seq] dataset (4 MiB as int32).
  const hsize_t block_rows = std::max<hsize_t>(1, (hsize_t{1} << 20) / std::max<hsize_t>(seq, 1));
  auto read_rows = [&](const char* name, hsize_t row, hsize_t rows, hsize_t columns, std::vector<int32_t>& out) {
    out.resize(static_cast<size_t>(rows * columns));
    if (out.empty()) return;
    Handle set(H5Dopen2(file.get(), name, H5P_DEFAULT), H5Dclose);
    Handle space(set.ok() ? H5Dget_space(set.get()) : -1, H5Sclose);
    const hsize_t start[2] = {row, 0}, count[2] = {rows, columns};
    Handle memory(H5Screate_simple(2, count, nullptr), H5Sclose);
    OutOfRange out_of_range;
    Handle transfer(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
    H5Pset_type_conv_cb(transfer.get(), stop_out_of_range, &out_of_range);
    if (!space.ok() || H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0 ||
        H5Dread(set.get(), H5T_NATIVE_INT32, memory.get(), space.get(), transfer.get(), out.data()) < 0)
      throw DataError(out_of_range.value.empty() ? unreadable(where, name) : past_int32(where, name, out_of_range.value));
  };
  std::vector<int32_t> mask, ids, segments, positions, labels;
  for (hsize_t row = 0; row < static_cast<hsize_t>(shape.examples); row += block_rows) {
    if (const int signal = stop_asked(stop))
      throw Stopped(signal, fmt::format("while checking {} (example {} of {})", where, row, shape.examples));
    const hsize_t rows = std::min<hsize_t>(block_rows, static_cast<hsize_t>(shape.examples) - row);
    read_rows("input_mask", row, rows, seq, mask);
    read_rows("input_ids", row, rows, seq, ids);
    read_rows("segment_ids", row, rows, seq, segments);
    read_rows("masked_lm_positions", row, rows, preds, positions);
    read_rows("masked_lm_ids", row, rows, preds, labels);
    // What a reader takes, as read_shard does: an example's tokens where input_mask is 1, its
    // labels up to its first 0 position.
    for (hsize_t r = 0; r < rows; ++r) {
      const auto example = static_cast<int64_t>(row + r);
      for (hsize_t c = 0; c < seq; ++c) {
        const size_t i = static_cast<size_t>(r * seq + c);
        if (mask[i] != 1) continue;
        if (ids[i] < 0 || ids[i] >= vocab_size) return ShardValue{"input_ids", example, ids[i]};
        if (segments[i] < 0 || segments[i] >= type_vocab_size) return ShardValue{"segment_ids", example, segments[i]};
      }
      for (hsize_t j = 0; j < preds && positions[static_cast<size_t>(r * preds + j)] != 0; ++j) {
        if (const int32_t t = labels[static_cast<size_t>(r * preds + j)]; t < 0 || t >= vocab_size)
          return ShardValue{"masked_lm_ids", example, t};
        const auto row_start = positions.begin() + static_cast<ptrdiff_t>(r * preds);
        const int32_t p = positions[static_cast<size_t>(r * preds + j)];
        if (std::find(row_start, row_start + static_cast<ptrdiff_t>(j), p) != row_start + static_cast<ptrdiff_t>(j))
          return ShardValue{"masked_lm_positions", example, p};
      }
    }
  }
  return std::nullopt;
}

}  // namespace bertc::data

#endif
