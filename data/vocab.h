// A WordPiece vocabulary: vocab.txt, one token a line, the line number its id.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace bertc::data {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Vocab {
 public:
  // Throws DataError naming the file and line for a duplicate token, and for a missing [PAD],
  // [UNK], [CLS], [SEP] or [MASK]; and naming the fix for a path that is a folder or no file.
  static Vocab load(const std::filesystem::path& path);
  static Vocab from_tokens(std::vector<std::string> tokens, const std::string& source);

  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  // Which vocabulary this is, whatever file holds it: the xxh3 of its tokens in order, each
  // followed by a line feed (for a vocab.txt with Unix line ends, the file's own xxh3). Checkpoints,
  // shards, compiled programs and exports record it, and a mismatch is refused (vocab_identity.h).
  const std::string& xxh3() const { return xxh3_; }
  const std::string& source() const { return source_; }
  // "PATH (N tokens, xxh3 H)": what every run prints of the vocabulary it uses.
  std::string describe() const;
  std::optional<int64_t> find(const std::string& token) const;
  const std::string& token(int64_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  int64_t pad() const { return pad_; }
  int64_t unk() const { return unk_; }
  int64_t cls() const { return cls_; }
  int64_t sep() const { return sep_; }
  int64_t mask() const { return mask_; }

 private:
  std::vector<std::string> tokens_;
  std::string source_, xxh3_;
  std::unordered_map<std::string, int64_t> ids_;
  int64_t pad_ = 0, unk_ = 0, cls_ = 0, sep_ = 0, mask_ = 0;
};

}  // namespace bertc::data
