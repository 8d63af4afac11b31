// A file's bytes, decompressed when it is gzip (RFC 1952) as the gzip tool reads it: members one
// after another as one text, a stream cut short or damaged refused naming the file, bytes after the
// last member ignored and said (gzip: "decompression OK, trailing garbage ignored").
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <zlib.h>

namespace bertc::data {

class DataError;

class GzipReader {
 public:
  using Note = std::function<void(const std::string&)>;
  // Throws DataError when the file cannot be opened, or is named .gz and is not gzip (or empty).
  // Files starting with gzip's magic are decompressed whatever their name. `note` (may be empty)
  // hears of bytes ignored after the last member.
  explicit GzipReader(const std::filesystem::path& path, Note note = {});
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Up to `size` bytes of the text into `out`; 0 only at its end. Throws DataError naming the file
  // for a stream that ends inside a member (cut short: a truncated download or copy) or fails
  // its checks (bad data, CRC or length).
  size_t read(char* out, size_t size);
  // Bytes of the file consumed so far (compressed bytes for gzip).
  uint64_t offset() const { return consumed_; }
  bool compressed() const { return compressed_; }
  int members() const { return members_; }

 private:
  bool refill();                   // more of the file into the input buffer; false at its end
  size_t inflate_some(char* out, size_t size);
  void after_member();             // at a member's end: another member, or the trailing bytes
  DataError cut_short() const;
  // Beside the file, its name without .gz and .txt, plus `suffix`: where advice keeps text.
  std::filesystem::path beside(const std::string& suffix) const;
  std::filesystem::path path_;
  Note note_;
  std::FILE* file_ = nullptr;
  bool compressed_ = false, in_member_ = false, ended_ = false;
  int members_ = 0;
  z_stream z_{};
  std::string input_;
  uint64_t consumed_ = 0, file_read_ = 0;
  uint64_t text_bytes_ = 0;  // text of the members before this one
};

}  // namespace bertc::data
