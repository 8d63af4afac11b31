// safetensors encoding and decoding with nlohmann::json for the header.
#include "support/safetensors.h"

#include "support/file_errors.h"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/error.h"
#include "support/atomic_file.h"

namespace bertc::support {
namespace {

// safetensors dtype names; the format has no name for ours that are missing here.
constexpr std::pair<ir::DType, const char*> kNames[] = {
    {ir::DType::F64, "F64"}, {ir::DType::F32, "F32"}, {ir::DType::F16, "F16"}, {ir::DType::BF16, "BF16"},
    {ir::DType::I64, "I64"}, {ir::DType::I32, "I32"}, {ir::DType::U8, "U8"},   {ir::DType::Bool, "BOOL"},
};

const char* dtype_text(ir::DType t) {
  for (const auto& [d, n] : kNames)
    if (d == t) return n;
  return "?";
}

// Header lengths beyond this are not headers but garbage (the format's own limit is 100 MB).
constexpr uint64_t kMaxHeader = 100'000'000;

// A file that does not read as safetensors: what it is where its first bytes say (a .bertx, an
// executable, an HDF5 shard: "truncated?" sent users looking for damage), else `what` is wrong.
SafetensorsError not_safetensors(const std::filesystem::path& path, const std::string& what) {
  if (const std::string kind = content_kind(path); !kind.empty())
    return SafetensorsError(fmt::format("{}: {}, not a safetensors file (bertc's checkpoints and Hugging Face weights "
                                        "are)",
                                        path.string(), kind));
  return SafetensorsError(fmt::format("{}: {} (truncated or not a safetensors file?)", path.string(), what));
}

}  // namespace

std::string encode_safetensors(const Safetensors& file) {
  nlohmann::json header = nlohmann::json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    const auto expected = static_cast<uint64_t>(ir::TensorType{t.dtype, t.shape}.bytes());
    if (t.bytes.size() != expected)
      throw SafetensorsError(fmt::format("tensor '{}' has {} bytes, its type {} needs {}", name, t.bytes.size(),
                                         to_string(ir::TensorType{t.dtype, t.shape}), expected));
    header[name] = {{"dtype", dtype_text(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');  // the format allows space padding; 8-byte alignment helps mmap
  std::string out(8, '\0');
  const uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += json;
  for (const auto& [name, t] : file.tensors) out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

Safetensors decode_safetensors(std::string_view bytes, const std::string& source) {
  auto fail = [&](const std::string& what) -> SafetensorsError {
    return SafetensorsError(fmt::format("{}: {} (truncated or not a safetensors file?)", source, what));
  };
  if (bytes.size() < 8) throw fail(fmt::format("only {} bytes, less than the 8-byte header length", bytes.size()));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  if (n > kMaxHeader || n > bytes.size() - 8)
    throw fail(fmt::format("header length {} does not fit in the file's {} bytes", n, bytes.size()));
  nlohmann::json header;
  std::string duplicate;
  try {
    // JSON keeps the last of two equal keys; a safetensors header naming a tensor twice is damaged.
    std::vector<std::set<std::string>> keys;
    header = nlohmann::json::parse(bytes.substr(8, n), [&](int depth, nlohmann::json::parse_event_t event,
                                                          nlohmann::json& parsed) {
      if (event == nlohmann::json::parse_event_t::object_start) keys.emplace_back();
      if (event == nlohmann::json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
      if (event == nlohmann::json::parse_event_t::key && depth <= 2 && !keys.empty() &&
          !keys.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("header is not valid JSON ({})", e.what()));
  }
  if (!duplicate.empty()) throw fail(fmt::format("the header names '{}' twice", duplicate));
  if (!header.is_object()) throw fail("header is not a JSON object");
  const std::string_view data = bytes.substr(8 + n);
  Safetensors out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw fail("__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) throw fail(fmt::format("__metadata__ value '{}' is not a string", k));
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) { return fail(fmt::format("tensor '{}': {}", name, what)); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      throw bad("entry lacks dtype, shape or data_offsets");
    StoredTensor t;
    bool known = false;
    for (const auto& [d, text] : kNames)
      if (entry["dtype"] == text) t.dtype = d, known = true;
    if (!known) throw bad(fmt::format("dtype {} is not one bertc reads", entry["dtype"].dump()));
    try {
      // (a dimension read as another number, 2^64+8 as a float cut to -2^63, was said wrongly)
      for (const auto& d : entry["shape"].is_array() ? entry["shape"] : nlohmann::json::array())
        if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
          throw bad(fmt::format("shape {} is not a list of whole numbers from 0 to 2^63-1", entry["shape"].dump()));
      t.shape = entry["shape"].get<ir::Shape>();
      const auto offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data.size())
        throw bad(fmt::format("data_offsets {} lie outside the {} data bytes", entry["data_offsets"].dump(), data.size()));
      const auto expected = static_cast<uint64_t>(ir::TensorType{t.dtype, t.shape}.bytes());
      if (offsets[1] - offsets[0] != expected)
        throw bad(fmt::format("{} bytes stored for {}{} which needs {}", offsets[1] - offsets[0], dtype_text(t.dtype),
                              ir::shape_string(t.shape), expected));
      t.bytes.assign(data.begin() + offsets[0], data.begin() + offsets[1]);
      ranges.emplace_back(offsets[0], offsets[1]);
    } catch (const nlohmann::json::exception&) {
      throw bad("shape or data_offsets are not lists of non-negative integers");
    } catch (const ir::Error& e) {
      throw bad(e.what());
    }
    out.tensors.emplace(name, std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t end = 0;
  for (const auto& [b, e] : ranges) {
    if (b != end) throw fail(fmt::format("tensor data overlaps or leaves a hole at byte {}", std::min(b, end)));
    end = e;
  }
  if (end != data.size()) throw fail(fmt::format("{} data bytes after the last tensor", data.size() - end));
  return out;
}

void write_safetensors(const std::filesystem::path& path, const Safetensors& file) {
  support::write_file_atomically(path, encode_safetensors(file));
}

Safetensors read_safetensors(const std::filesystem::path& path) {
  if (const std::string kind = non_regular_kind(path); !kind.empty())
    throw SafetensorsError(fmt::format("{}: {}, not a safetensors file: give the file itself", path.string(), kind));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SafetensorsError(fmt::format("{}: cannot open (does it exist?)", path.string()));
  // Read as far as the header says the file goes, and a block more (whose bytes decode then
  // refuses): a device (/dev/zero) or an endless pipe given as a checkpoint was read without end.
  std::string bytes(8, '\0');
  in.read(bytes.data(), 8);
  bytes.resize(static_cast<size_t>(in.gcount()));
  uint64_t n = 0;
  for (size_t i = bytes.size(); i-- > 0;) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  uint64_t data_end = 0;
  if (bytes.size() == 8 && n <= kMaxHeader) {
    bytes.resize(8 + n);
    in.read(bytes.data() + 8, static_cast<std::streamsize>(n));
    bytes.resize(8 + static_cast<size_t>(in.gcount()));
    const nlohmann::json header = nlohmann::json::parse(bytes.substr(8), nullptr, /*allow_exceptions=*/false);
    if (header.is_object())
      for (const auto& [name, entry] : header.items())
        if (entry.is_object() && entry.contains("data_offsets") && entry["data_offsets"].is_array() &&
            entry["data_offsets"].size() == 2 && entry["data_offsets"][1].is_number_unsigned())
          data_end = std::max(data_end, entry["data_offsets"][1].get<uint64_t>());
  }
  const uint64_t enough = bytes.size() + data_end + (1 << 16);
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec) bytes.reserve(std::min<uint64_t>(size, enough));
  char block[1 << 16];
  while (bytes.size() < enough && (in.read(block, sizeof block) || in.gcount() > 0))
    bytes.append(block, static_cast<size_t>(in.gcount()));
  // (a header longer than the file: said with the file's size, not the bytes read of it)
  if (const auto size = std::filesystem::file_size(path, ec); !ec && bytes.size() >= 8 && n > size - 8 && n <= kMaxHeader)
    throw not_safetensors(path, fmt::format("header length {} does not fit in the file's {} bytes", n, size));
  try {
    return decode_safetensors(bytes, path.string());
  } catch (const SafetensorsError&) {
    if (const std::string kind = content_kind(path); !kind.empty()) throw not_safetensors(path, "");
    throw;
  }
}

namespace {

// A file's header as JSON, read alone (the tensors' bytes are not).
nlohmann::json read_header(const std::filesystem::path& path) {
  if (const std::string kind = non_regular_kind(path); !kind.empty())
    throw SafetensorsError(fmt::format("{}: {}, not a safetensors file: give the file itself", path.string(), kind));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SafetensorsError(fmt::format("{}: cannot open (does it exist?)", path.string()));
  std::string length(8, '\0');
  in.read(length.data(), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(length[i]);
  if (!in || n > kMaxHeader) throw not_safetensors(path, "no valid header length");
  std::string header(n, '\0');
  in.read(header.data(), static_cast<std::streamsize>(n));
  if (!in) throw not_safetensors(path, "header cut short");
  try {
    return nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    throw not_safetensors(path, fmt::format("header is not valid JSON ({})", e.what()));
  }
}

}  // namespace

std::map<std::string, std::string> read_safetensors_metadata(const std::filesystem::path& path) {
  const nlohmann::json j = read_header(path);
  std::map<std::string, std::string> metadata;
  if (j.is_object() && j.contains("__metadata__") && j["__metadata__"].is_object())
    for (const auto& [k, v] : j["__metadata__"].items())
      if (v.is_string()) metadata[k] = v.get<std::string>();
  return metadata;
}

std::optional<std::vector<int64_t>> read_safetensors_shape(const std::filesystem::path& path, const std::string& name) {
  const nlohmann::json j = read_header(path);
  if (!j.is_object() || !j.contains(name) || !j[name].is_object() || !j[name].contains("shape") ||
      !j[name]["shape"].is_array())
    return std::nullopt;
  std::vector<int64_t> shape;
  for (const auto& d : j[name]["shape"]) {
    if (!d.is_number_integer() || (d.is_number_unsigned() && d.get<uint64_t>() > INT64_MAX)) return std::nullopt;
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

bool could_be_cut_safetensors(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_symlink(path, ec) || !std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char head[9] = {};
  in.read(head, sizeof head);
  return in.gcount() < 9 || head[8] == '{';  // (shorter: cut inside the length, bytes no one else's name)
}

std::optional<bool> metadata_flag(const std::map<std::string, std::string>& metadata, const std::string& key,
                                  const std::string& file) {
  const auto it = metadata.find(key);
  if (it == metadata.end()) return std::nullopt;
  if (it->second != "true" && it->second != "false")
    throw SafetensorsError(fmt::format("{}: its metadata says {} = '{}', neither true nor false (bertc writes one of "
                                       "the two): the record was edited or damaged; write true or false, as the file "
                                       "was made",
                                       file, key, it->second));
  return it->second == "true";
}

}  // namespace bertc::support
