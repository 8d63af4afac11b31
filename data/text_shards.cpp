// Text made into examples a shard at a time, in memory (see text_shards.h).
#include "data/text_shards.h"

#include <algorithm>
#include <memory>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <xxhash.h>

namespace bertc::data {

int64_t TextShards::automatic_shards(int64_t documents, int64_t tokens) {
  const int64_t by_tokens = (tokens + kAutomaticShardTokens - 1) / kAutomaticShardTokens;
  return std::max<int64_t>(1, std::min(by_tokens, documents / kAutomaticShardDocuments));
}

int64_t TextShards::automatic_shards(const std::vector<Document>& documents) {
  int64_t tokens = 0;
  for (const Document& d : documents)
    for (const auto& sentence : d) tokens += static_cast<int64_t>(sentence.size());
  return automatic_shards(static_cast<int64_t>(documents.size()), tokens);
}

TextShards::TextShards(std::vector<Document> documents, Vocab vocab, ExampleOptions options, int64_t shards,
                       std::string source, const std::string& shards_key, int threads, const StopCheck& stop)
    : vocab_(std::move(vocab)), options_(options), source_(std::move(source)) {
  const auto documents_count = static_cast<int64_t>(documents.size());
  if (documents_count < kMinimumShardDocuments)  // (one shard or many: the random B needs another document)
    throw DataError(fmt::format("{}: {} document: next-sentence prediction takes its random sentences from another "
                                "document, and there is none: give text of {} documents at least (a blank line "
                                "between documents)",
                                source_, documents_count, kMinimumShardDocuments));
  if (shards < 1 || documents_count < shards * kMinimumShardDocuments)
    throw DataError(fmt::format("{}: {} document(s) for {} = {}: a shard needs {} documents at least, for its random "
                                "next sentences to come from another document (set {} between 1 and {}, or 0 to let "
                                "bertc choose)",
                                source_, documents_count, shards_key, shards, kMinimumShardDocuments, shards_key,
                                std::max<int64_t>(1, documents_count / kMinimumShardDocuments)));
  {
    std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> hash(XXH3_createState(), XXH3_freeState);
    XXH3_64bits_reset(hash.get());
    for (const Document& d : documents) {
      for (const auto& sentence : d)
        XXH3_64bits_update(hash.get(), sentence.data(), sentence.size() * sizeof(sentence[0]));
      XXH3_64bits_update(hash.get(), "|", 1);  // (a document's end)
    }
    content_ = fmt::format("{:016x}", XXH3_64bits_digest(hash.get()));
  }
  parts_.resize(static_cast<size_t>(shards));
  for (size_t d = 0; d < documents.size(); ++d) parts_[d % parts_.size()].push_back(std::move(documents[d]));
  documents.clear();
  // Counted by making them: how many pairs a document gives depends on the draws.
  counts_.assign(parts_.size(), 0);
  if (threads <= 0) threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  std::atomic<size_t> next{0}, counted{0};
  std::atomic<bool> stopping{false};
  std::exception_ptr failed;
  std::mutex failure;
  auto work = [&] {
    try {
      for (size_t s; !stopping && !stop_asked(stop) && (s = next++) < parts_.size();) {
        try {
          ExampleFigures figures;
          counts_[s] = count_examples(parts_[s], vocab_, options_of(s), &figures);
          {
            std::lock_guard lock(failure);
            figures_.tokens += figures.tokens, figures_.tokens_cut += figures.tokens_cut;
          }
          ++counted;
        } catch (const DataError& e) {
          throw DataError(fmt::format("{}: {}", name(s), e.what()));
        }
      }
    } catch (...) {
      std::lock_guard lock(failure);
      if (!failed) failed = std::current_exception();
      stopping = true;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(parts_.size())); ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // (no more threads to be had: the ones started, and this one, do the rest)
    }
  }
  work();
  for (std::thread& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
  if (counted < parts_.size())
    if (const int signal = stop_asked(stop))
      throw Stopped(signal, fmt::format("while counting the examples of {} ({} of {} shards counted)", source_,
                                        counted.load(), parts_.size()));
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
