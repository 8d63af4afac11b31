// Text's training examples as shards in memory: document d of the text goes to shard d mod N, and a
// shard's examples are made (create_packed_examples, seeded by shard_seed) when its turn comes, so
// that memory holds the documents and two shards' examples, not every example. The same examples
// as `bertc prepare-data --shards N` writes for the same text and options, in the same order when
// trained: text and its shards train alike.
#pragma once

#include <string>
#include <vector>

#include "data/shard_examples.h"
#include "data/vocab.h"

namespace bertc::data {

class TextShards : public ShardSet {
 public:
  // Tokens of text a shard when the config leaves the number of shards to bertc.
  static constexpr int64_t kAutomaticShardTokens = int64_t{1} << 21;
  // One shard per kAutomaticShardTokens of the documents' tokens (at least 1, at most a document each).
  static int64_t automatic_shards(const std::vector<Document>& documents);

  // Makes every shard's examples once, on `threads` cores (0: every core), to count them. Throws
  // DataError when there are fewer documents than shards (naming `shards_key`, the setting to lower),
  // or a shard's text yields no examples.
  TextShards(std::vector<Document> documents, Vocab vocab, ExampleOptions options, int64_t shards, std::string source,
             const std::string& shards_key, int threads = 0);
  size_t shards() const override { return parts_.size(); }
  int64_t examples(size_t shard) const override { return counts_[shard]; }
  PackedExamples load(size_t shard) const override;
  std::string name(size_t shard) const override;

 private:
  ExampleOptions options_of(size_t shard) const;
  std::vector<std::vector<Document>> parts_;
  Vocab vocab_;
  ExampleOptions options_;
  std::string source_;
  std::vector<int64_t> counts_;
};

}  // namespace bertc::data
