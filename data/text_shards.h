// Text's training examples as shards in memory: document d of the text goes to shard d mod N, and a
// shard's examples are made (create_packed_examples, seeded by shard_seed) when its turn comes, so
// that memory holds the documents and two shards' examples, not every example. The same examples
// as `bertc prepare-data --shards N` writes for the same text and options, in the same order when
// trained: text and its shards train alike.
#pragma once

#include <string>
#include <vector>

#include "data/shard_examples.h"
#include "data/stop_check.h"
#include "data/vocab.h"

namespace bertc::data {

class TextShards : public ShardSet {
 public:
  // Tokens of text a shard when the config leaves the number of shards to bertc.
  static constexpr int64_t kAutomaticShardTokens = int64_t{1} << 21;
  // Documents a shard at least when bertc chooses: a random next sentence is drawn from the other
  // documents of its shard, and with few of them it would often come from a neighbour or itself.
  static constexpr int64_t kAutomaticShardDocuments = 64;
  // Documents a shard at least when the config chooses: with one, every "random" next sentence
  // would come from the same document (and be labelled random).
  static constexpr int64_t kMinimumShardDocuments = 2;
  // One shard per kAutomaticShardTokens of the documents' tokens, no more than leaves each
  // kAutomaticShardDocuments documents; at least 1.
  static int64_t automatic_shards(int64_t documents, int64_t tokens);
  static int64_t automatic_shards(const std::vector<Document>& documents);

  // Counts every shard's examples (making each and dropping it, in the memory of one example), on
  // `threads` cores (0: every core, up to 8). Throws DataError when a shard would get fewer than
  // kMinimumShardDocuments documents (naming `shards_key`, the setting to lower); Stopped
  // (data/stop_check.h) when `stop`, asked between shards, reports a signal.
  TextShards(std::vector<Document> documents, Vocab vocab, ExampleOptions options, int64_t shards, std::string source,
             const std::string& shards_key, int threads = 0, const StopCheck& stop = {});
  // What making the examples did to the text (tokens cut to fit seq_len), over every shard.
  const ExampleFigures& figures() const { return figures_; }
  size_t shards() const override { return parts_.size(); }
  int64_t examples(size_t shard) const override { return counts_[shard]; }
  PackedExamples load(size_t shard) const override;
  std::string name(size_t shard) const override;
  std::string content() const override { return content_; }  // the documents' tokens, in order

 private:
  ExampleOptions options_of(size_t shard) const;
  std::vector<std::vector<Document>> parts_;
  Vocab vocab_;
  ExampleOptions options_;
  std::string source_;
  std::vector<int64_t> counts_;
  std::string content_;
  ExampleFigures figures_;
};

}  // namespace bertc::data
