// Text made into examples a shard at a time, in memory (see text_shards.h).
#include "data/text_shards.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace bertc::data {

int64_t TextShards::automatic_shards(const std::vector<Document>& documents) {
  int64_t tokens = 0;
  for (const Document& d : documents)
    for (const auto& sentence : d) tokens += static_cast<int64_t>(sentence.size());
  const int64_t wanted = (tokens + kAutomaticShardTokens - 1) / kAutomaticShardTokens;
  return std::clamp<int64_t>(wanted, 1, std::max<int64_t>(1, static_cast<int64_t>(documents.size())));
}

TextShards::TextShards(std::vector<Document> documents, Vocab vocab, ExampleOptions options, int64_t shards,
                       std::string source, const std::string& shards_key, int threads)
    : vocab_(std::move(vocab)), options_(options), source_(std::move(source)) {
  if (shards < 1 || shards > static_cast<int64_t>(documents.size()))
    throw DataError(fmt::format("{}: {} document(s) for {} = {}: every shard needs one document at least (set {} "
                                "between 1 and {}, or 0 to let bertc choose)",
                                source_, documents.size(), shards_key, shards, shards_key,
                                std::max<size_t>(1, documents.size())));
  parts_.resize(static_cast<size_t>(shards));
  for (size_t d = 0; d < documents.size(); ++d) parts_[d % parts_.size()].push_back(std::move(documents[d]));
  documents.clear();
  // Counted by making them: how many pairs a document gives depends on the draws.
  counts_.assign(parts_.size(), 0);
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::exception_ptr failed;
  std::mutex failure;
  std::vector<std::thread> pool;
  for (int t = 0; t < std::min<int>(threads, static_cast<int>(parts_.size())); ++t)
    pool.emplace_back([&] {
      try {
        for (size_t s; (s = next++) < parts_.size();)
          counts_[s] = static_cast<int64_t>(create_packed_examples(parts_[s], vocab_, options_of(s)).size());
      } catch (...) {
        std::lock_guard lock(failure);
        if (!failed) failed = std::current_exception();
      }
    });
  for (std::thread& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

ExampleOptions TextShards::options_of(size_t shard) const {
  ExampleOptions o = options_;
  o.seed = shard_seed(options_.seed, static_cast<int64_t>(shard));
  return o;
}

PackedExamples TextShards::load(size_t shard) const {
  return create_packed_examples(parts_[shard], vocab_, options_of(shard));
}

std::string TextShards::name(size_t shard) const {
  return fmt::format("{} (text shard {} of {})", source_, shard, parts_.size());
}

}  // namespace bertc::data
