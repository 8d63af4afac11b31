// Which vocabulary a file was made with, as checkpoints, shards, compiled programs and exports
// record it, and the refusal of another: a model's embeddings are rows of one vocabulary, and
// another of the same size trains without an error, on the wrong tokens.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "data/vocab.h"

namespace bertc::data {

struct VocabRecord {
  std::string xxh3;  // Vocab::xxh3
  int64_t tokens = 0;  // 0: not recorded (an older bertc wrote only the hash)
  std::string path;  // where it was read from then ("" when not recorded)
  std::string describe() const;  // "PATH (N tokens, xxh3 H)", with what is known
};

VocabRecord record_of(const Vocab& vocab);

// As metadata: "vocab" (its path), "vocab_xxh3", "vocab_tokens".
std::map<std::string, std::string> vocab_metadata(const VocabRecord& record);
// Read back; nullopt when the metadata holds no vocab_xxh3 (a run without a vocabulary at hand, or
// a bertc from before it was recorded).
std::optional<VocabRecord> vocab_from_metadata(const std::map<std::string, std::string>& metadata);

// Throws DataError when `used` is not `recorded`: "USED is not the vocabulary HOLDER was made with
// (RECORDED): FIX", both named with their tokens and hashes.
void require_same_vocab(const VocabRecord& used, const VocabRecord& recorded, const std::string& holder,
                        const std::string& fix);
inline void require_same_vocab(const Vocab& used, const VocabRecord& recorded, const std::string& holder,
                               const std::string& fix) {
  require_same_vocab(record_of(used), recorded, holder, fix);
}

}  // namespace bertc::data
