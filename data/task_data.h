// Fine-tuning examples: GLUE-style .tsv or .jsonl task files read into tokenized examples
// ([CLS] a [SEP] (b [SEP])), and the padded batches an epoch is made of, grouped by length into
// the compiled sequence lengths (buckets).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace bertc::data {

// The largest regression target the loss can take: the squared error is summed over a batch in
// float32, so a target must keep its square, times a batch, inside float32 (3.4e38). The data
// readers and eval's batch check hold targets to it.
inline constexpr double kLargestRegressionTarget = 1e15;

// What a label is: a class, a real number (regression) or a class per word (token tags).
enum class LabelKind { Class, Real, Tags };

// How to read a task file.
struct TaskFormat {
  LabelKind kind = LabelKind::Class;
  std::string text_a = "sentence", text_b, label = "label";  // column names (or numbers), or JSON keys
  bool tsv_header = true;
  std::vector<std::string> label_names;  // class order; empty: labels are class numbers
  int64_t num_labels = 2;
  bool num_labels_default = false;       // num_labels is the default (the config sets none): said so
  int64_t max_len = 128;                 // tokens with [CLS] and [SEP]s; longer examples are cut
};

struct TaskExample {
  int64_t line = 0;                     // in its file, for messages
  std::vector<int32_t> ids, types;      // [CLS] a [SEP] (b [SEP]), unpadded
  int32_t label = 0;                    // Class
  float target = 0;                     // Real
  std::vector<int32_t> tags;            // Tags: per token (0 where not counted)
  std::vector<float> tag_weights;       // Tags: 1 on a word's first piece, else 0
};

struct TaskData {
  std::filesystem::path path;
  std::vector<TaskExample> examples;
  int64_t truncated = 0;  // examples cut to max_len
  std::vector<std::string> notes;  // what is worth saying of the file (bytes that are not text)
  int64_t words = 0, words_cut = 0;  // token tags: words (tags) read, and those cut off with their tags
  int64_t words_in_cut = 0;          // token tags: the words of the examples cut (all of theirs)
};

// Reads a .tsv (columns by header name, or by 0-based number when tsv_header is false; fields
// split at tabs, no quoting, as GLUE writes them) or .jsonl (an object a line; token tags need
// .jsonl: a list of words and a list of tags). Pairs are cut longest-first to max_len, as BERT's
// run_classifier does. Throws DataError naming the file, line and fix for a missing column or key,
// an unknown label, a label out of range, a tag count that differs from the word count, an empty
// file.
TaskData read_task_file(const std::filesystem::path& path, const TaskFormat& format, const Tokenizer& tokenizer,
                        const Vocab& vocab);

// Which examples these are, whatever file held them: the xxh3 of every example's tokens, segments,
// label or target and tags, in order (data-parallel ranks compare it: each reads its own copy).
std::string task_examples_xxh3(const std::vector<TaskExample>& examples);

// One padded batch at sequence length `seq_len`: rows past the examples are padding (all zero,
// weight 0). Row-major [batch, seq_len] (labels/weights [batch] unless Tags).
struct TaskBatch {
  int64_t batch = 0, seq_len = 0, examples = 0;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask;
  std::vector<int32_t> labels;   // Class: [batch]; Tags: [batch, seq_len]
  std::vector<float> targets;    // Real: [batch]
  std::vector<float> weights;    // [batch], or [batch, seq_len] for Tags
};
TaskBatch make_task_batch(const std::vector<const TaskExample*>& examples, LabelKind kind, int64_t batch,
                          int64_t seq_len);

// Whether `a` and `b` are the same text but for the letter case of A-Z (labels and column names
// are matched as written: one that differs in case alone is said so, not taken).
bool equal_ignoring_case(const std::string& a, const std::string& b);

// The shortest bucket that holds `length` tokens (the last holds every example: they are cut to it).
size_t bucket_of(int64_t length, const std::vector<int64_t>& buckets);

// The batches of one pass over `examples`: each example in the bucket of its length, each bucket cut
// into batches of `batch` (its last one short), in an order drawn from `seed` and `epoch` (examples
// shuffled, then batch order shuffled) or, with `shuffle` false, in file order bucket by bucket.
struct PlannedBatch {
  size_t bucket = 0;
  std::vector<size_t> examples;  // indices into the examples
};
std::vector<PlannedBatch> plan_batches(const std::vector<TaskExample>& examples, const std::vector<int64_t>& buckets,
                                       int64_t batch, uint64_t seed, int64_t epoch, bool shuffle);

// An epoch's tokens against the positions its batches compute (every batch `batch` rows of its
// bucket's length, the last of a bucket padded with empty rows): with the buckets, and with the
// longest length alone. (Issue 39: how much padding fine-tuning computes.)
struct BatchFill {
  int64_t tokens = 0, positions = 0, positions_longest_only = 0;
};
BatchFill batch_fill(const std::vector<TaskExample>& examples, const std::vector<int64_t>& buckets, int64_t batch);

}  // namespace bertc::data
