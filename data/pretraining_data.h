// Pretraining examples as the original BERT makes them (create_pretraining_data.py): sentence
// pairs, the second a random sentence half the time (next-sentence prediction), 15% of tokens
// masked (80% [MASK], 10% random, 10% kept) up to max_predictions_per_seq; and fixed-shape
// batches of them in a deterministic order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "data/stop_check.h"
#include "data/tokenizer.h"

namespace bertc::data {

// Sentences (token ids) of one document.
using Document = std::vector<std::vector<int64_t>>;

// Reads text with one sentence a line and blank lines between documents: one file, or a folder's
// .txt and .txt.gz files in name order (data/text_input.h). `progress` (may be empty) hears about long reads
// and what is worth saying of the input (bytes that are not text, bytes after a gzip stream).
// `stop` is asked at every line: Stopped (data/stop_check.h), saying how far it got, when it
// reports a signal. A text mostly of words the vocabulary lacks is said (unknown_note).
std::vector<Document> load_documents(const std::filesystem::path& path, const Tokenizer& tokenizer,
                                     const std::function<void(const std::string&)>& progress = {},
                                     const StopCheck& stop = {});

struct ExampleOptions {
  int64_t max_seq_length = 128;
  int64_t max_predictions_per_seq = 20;
  double masked_lm_prob = 0.15;
  double short_seq_prob = 0.1;
  int64_t dupe_factor = 5;
  uint64_t seed = 12345;
};

struct Example {
  std::vector<int64_t> tokens;       // [CLS] A [SEP] B [SEP], after masking
  std::vector<int64_t> segment_ids;  // 0 for A (and its [CLS], [SEP]), 1 for B
  bool is_random_next = false;
  std::vector<int64_t> masked_positions, masked_labels;  // ascending positions
};

// What making examples did to the text: the documents' own tokens put into sentence pairs (each
// copy of dupe_factor counted), and how many of those were cut to fit seq_len.
struct ExampleFigures {
  int64_t tokens = 0, tokens_cut = 0;
};

// "N of the M tokens ... (x%) were cut to fit seq_len S", with advice when it is much (raising
// seq_len only below `max_positions`, the model's max_position_embeddings); nullopt when none were cut.
std::optional<std::string> cut_note(const ExampleFigures& figures, int64_t seq_len, int64_t max_positions);

// "N of the M tokens (x%) are [UNK] ...", with the fix, when more than 5% of a text's tokens are
// words the tokenizer's vocabulary does not hold (text in another language or script, the
// vocabulary of another model, or cased text for an uncased vocabulary without do_lower_case):
// trained on, they teach nothing. nullopt below that. `pretraining_text`: the text or folder read
// for pretraining, which the fix makes a vocabulary of; nullopt when fine-tuning, where the
// vocabulary is the pretrained weights', which a new one would not fit.
// `capitals`: whether the text holds a capital (A-Z, has_capital): letter case is the cause only then.
std::optional<std::string> unknown_note(int64_t unknown, int64_t tokens, const Tokenizer& tokenizer, bool capitals,
                                        const std::optional<std::filesystem::path>& pretraining_text);
bool has_capital(std::string_view text);

// Deterministic for a seed on every platform (std::mt19937_64 with our own draws). `figures`, when
// given, is added to.
std::vector<Example> create_examples(const std::vector<Document>& documents, const Vocab& vocab,
                                     const ExampleOptions& options, ExampleFigures* figures = nullptr);

class PackedExamples;

// The same examples in the same order, packed (data/packed_examples.h); made without the
// Example vectors' memory (a shard's examples at once).
PackedExamples create_packed_examples(const std::vector<Document>& documents, const Vocab& vocab,
                                      const ExampleOptions& options);

// How many examples create_examples makes, in the memory of one example.
int64_t count_examples(const std::vector<Document>& documents, const Vocab& vocab, const ExampleOptions& options,
                       ExampleFigures* figures = nullptr);

// The seed of shard s's examples (prepare-data's shards, and text shards in memory) for a seed.
uint64_t shard_seed(uint64_t seed, int64_t shard);

// One batch in the original BERT format, padded: [B,S] ids, types, mask; [B,P] positions, ids,
// weights; [B] next-sentence labels (1 = random next). A batch of rows that each hold up to K whole
// examples side by side (examples_per_row = K > 0; data/row_batch.h) also says what keeps a row's
// examples apart: each token's example (0..K-1, K for padding: rising along a row) and its position
// within it, each example's [CLS] position and next-sentence weight (0 for an empty slot); its
// next-sentence labels are [B,K] and its masked positions are numbered in the row.
struct Batch {
  int64_t batch_size = 0, seq_len = 0, predictions = 0;
  std::vector<int64_t> input_ids, token_type_ids, attention_mask, masked_lm_positions, masked_lm_ids,
      next_sentence_labels;
  std::vector<float> masked_lm_weights;
  int64_t examples_per_row = 0;              // K; 0: one example a row, and the four below empty
  std::vector<int64_t> example_ids;          // [B,S]
  std::vector<int64_t> position_ids;         // [B,S]: 0 for padding
  std::vector<int64_t> cls_positions;        // [B,K]: 0 for an empty slot
  std::vector<float> next_sentence_weights;  // [B,K]: 1 for an example, 0 for an empty slot
};

// Where a BatchStream's examples come from: an endless sequence of epochs of size() rows, each
// epoch a fresh shuffle; row(i) is the i-th of that sequence: one example (example(i)), or the
// examples a source that places several in a row put there (examples_per_row() > 0, at most that
// many each). Called from one thread at a time (the trainer's loader thread).
class ExampleSource {
 public:
  virtual ~ExampleSource() = default;
  virtual int64_t size() const = 0;
  virtual int64_t shards() const = 0;  // the parts it is read in (recorded in checkpoints)
  virtual int64_t examples_per_row() const { return 0; }
  virtual Example example(int64_t index) const = 0;  // (a source of one example a row)
  virtual std::vector<Example> row(int64_t index) const { return {example(index)}; }
  virtual std::string content() const = 0;  // a hash of what the examples are made of (recorded in checkpoints)
};

// Batches of a source: micro-batch k holds its rows k*B .. k*B+B-1 (`predictions` masked positions
// a row; a source of several examples a row gives batches of rows, examples_per_row() each).
// Resuming at micro-batch k continues exactly where an uninterrupted run would be.
class BatchStream {
 public:
  BatchStream(std::shared_ptr<const ExampleSource> source, int64_t batch_size, int64_t seq_len, int64_t predictions,
              int64_t pad_id);
  // Throws DataError past last_micro_batch(), whose examples' numbers would wrap past 2^63.
  Batch batch(int64_t micro_batch) const;
  // The largest micro-batch whose examples' numbers fit an int64 (the stream goes round the data
  // again and again, each pass reshuffled, so a number names one example of one pass).
  int64_t last_micro_batch() const { return (std::numeric_limits<int64_t>::max() - (batch_size_ - 1)) / batch_size_; }
  int64_t examples() const { return source_->size(); }  // (rows, for a source of several examples a row)
  const char* units() const { return source_->examples_per_row() > 0 ? "rows" : "examples"; }  // what examples() counts
  int64_t shards() const { return source_->shards(); }
  std::string content() const { return source_->content(); }
  const ExampleSource& source() const { return *source_; }

 private:
  std::shared_ptr<const ExampleSource> source_;
  int64_t batch_size_, seq_len_, predictions_, pad_id_;
};

// Draws used by example creation and shuffling, defined here (not by std::*_distribution, whose
// results differ between standard libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  int64_t randint(int64_t lo, int64_t hi) {  // inclusive; modulo bias below 2^-40 for our ranges
    return lo + static_cast<int64_t>(engine_() % static_cast<uint64_t>(hi - lo + 1));
  }
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(randint(0, int64_t(i) - 1))]);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace bertc::data
