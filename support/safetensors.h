// The safetensors format (Hugging Face): an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}, "__metadata__": {string: string}}, then the raw
// little-endian tensor bytes, contiguous and without holes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/tensor_type.h"

namespace bertc::support {

struct StoredTensor {
  ir::DType dtype = ir::DType::F32;
  ir::Shape shape;
  std::vector<uint8_t> bytes;  // little-endian, row-major
};

struct Safetensors {
  std::map<std::string, StoredTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Any problem with a file: the message names the file, the tensor when there is one, and what to do.
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Serialises to the format's bytes (tensors in name order, header padded to 8 bytes).
std::string encode_safetensors(const Safetensors& file);
// Parses and checks every structural rule; `source` names the file in messages.
Safetensors decode_safetensors(std::string_view bytes, const std::string& source);

// Atomic write (codegen/atomic_file.h) and checked read.
void write_safetensors(const std::filesystem::path& path, const Safetensors& file);
Safetensors read_safetensors(const std::filesystem::path& path);
// The __metadata__ of a file, reading its header only (the tensors are not checked).
std::map<std::string, std::string> read_safetensors_metadata(const std::filesystem::path& path);
// A yes-or-no fact a file of bertc's records in its metadata (do_lower_case: "true" or "false", as
// bertc writes it); nullopt where the key is absent. Throws SafetensorsError naming `file` for any
// other value (an edited record: "True" and "1" were read as false, silently).
std::optional<bool> metadata_flag(const std::map<std::string, std::string>& metadata, const std::string& key,
                                  const std::string& file);
// The shape of tensor `name` as the file's header gives it (its bytes not read or checked); none
// where the header has no such tensor.
std::optional<std::vector<int64_t>> read_safetensors_shape(const std::filesystem::path& path, const std::string& name);
// Whether `path` is a regular file that could be a safetensors file cut short (under 9 bytes, or its
// header's length then '{'): what a write a stop interrupted leaves. A file of other bytes named
// as such a temporary is someone else's.
bool could_be_cut_safetensors(const std::filesystem::path& path);

}  // namespace bertc::support
