// Document loading, example creation (a port of the original algorithm) and batching.
#include "data/pretraining_data.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "data/packed_examples.h"
#include "data/row_batch.h"
#include "data/text_input.h"
#include "support/shell_word.h"

namespace bertc::data {
namespace {

// Removes tokens from the longer of a and b, from its front or back at random, until they fit;
// returns how many went from each. The ends move as indices, each removal one draw as the original
// does, so that a sentence of a million tokens (a text of one line) takes linear time, not
// quadratic (erasing at a vector's front).
std::pair<size_t, size_t> truncate_pair(std::vector<int64_t>& a, std::vector<int64_t>& b, size_t max_tokens, Rng& rng) {
  size_t a_front = 0, a_back = a.size(), b_front = 0, b_back = b.size();
  while ((a_back - a_front) + (b_back - b_front) > max_tokens) {
    const bool a_longer = a_back - a_front > b_back - b_front;
    if (rng.uniform() < 0.5) ++(a_longer ? a_front : b_front);
    else --(a_longer ? a_back : b_back);
  }
  const std::pair<size_t, size_t> cut = {a.size() - (a_back - a_front), b.size() - (b_back - b_front)};
  a = std::vector<int64_t>(a.begin() + static_cast<std::ptrdiff_t>(a_front), a.begin() + static_cast<std::ptrdiff_t>(a_back));
  b = std::vector<int64_t>(b.begin() + static_cast<std::ptrdiff_t>(b_front), b.begin() + static_cast<std::ptrdiff_t>(b_back));
  return cut;
}

void mask_tokens(Example& ex, const Vocab& vocab, const ExampleOptions& o, Rng& rng) {
  std::vector<size_t> candidates;
  for (size_t i = 0; i < ex.tokens.size(); ++i)
    if (ex.tokens[i] != vocab.cls() && ex.tokens[i] != vocab.sep()) candidates.push_back(i);
  rng.shuffle(candidates);
  const auto rounded = static_cast<int64_t>(std::nearbyint(static_cast<double>(ex.tokens.size()) * o.masked_lm_prob));
  const size_t to_predict = static_cast<size_t>(std::min(o.max_predictions_per_seq, std::max<int64_t>(1, rounded)));
  std::vector<std::pair<size_t, int64_t>> masked;  // (position, original token)
  for (size_t i : candidates) {
    if (masked.size() >= to_predict) break;
    int64_t replacement = vocab.mask();
    if (rng.uniform() >= 0.8) replacement = rng.uniform() < 0.5 ? ex.tokens[i] : rng.randint(0, vocab.size() - 1);
    masked.emplace_back(i, ex.tokens[i]);
    ex.tokens[i] = replacement;
  }
  std::sort(masked.begin(), masked.end());
  for (const auto& [pos, label] : masked) {
    ex.masked_positions.push_back(static_cast<int64_t>(pos));
    ex.masked_labels.push_back(label);
  }
}

// Pairs from one document: fill a chunk of sentences up to a target length, split it into A and
// B (or a random B from another document), as create_instances_from_document does.
template <typename Sink>
void examples_from_document(const std::vector<Document>& docs, size_t doc_index, const Vocab& vocab,
                            const ExampleOptions& o, Rng& rng, Sink& out, ExampleFigures& figures) {
  const Document& doc = docs[doc_index];
  const int64_t max_tokens = o.max_seq_length - 3;  // [CLS], [SEP], [SEP]
  int64_t target = max_tokens;
  if (rng.uniform() < o.short_seq_prob) target = rng.randint(2, max_tokens);
  std::vector<const std::vector<int64_t>*> chunk;
  int64_t length = 0;
  for (size_t i = 0; i < doc.size(); ++i) {
    chunk.push_back(&doc[i]);
    length += static_cast<int64_t>(doc[i].size());
    if (i + 1 != doc.size() && length < target) continue;
    const size_t a_end = chunk.size() >= 2 ? static_cast<size_t>(rng.randint(1, int64_t(chunk.size()) - 1)) : 1;
    std::vector<int64_t> a, b;
    for (size_t j = 0; j < a_end; ++j) a.insert(a.end(), chunk[j]->begin(), chunk[j]->end());
    bool random_next = false;
    if (chunk.size() == 1 || rng.uniform() < 0.5) {
      random_next = true;
      const int64_t b_target = target - static_cast<int64_t>(a.size());
      size_t other = doc_index;
      for (int tries = 0; tries < 10 && other == doc_index; ++tries)
        other = static_cast<size_t>(rng.randint(0, int64_t(docs.size()) - 1));
      const Document& rdoc = docs[other];
      for (size_t j = static_cast<size_t>(rng.randint(0, int64_t(rdoc.size()) - 1)); j < rdoc.size(); ++j) {
        b.insert(b.end(), rdoc[j].begin(), rdoc[j].end());
        if (static_cast<int64_t>(b.size()) >= b_target) break;
      }
      i -= chunk.size() - a_end;  // the unused sentences start the next chunk
    } else {
      for (size_t j = a_end; j < chunk.size(); ++j) b.insert(b.end(), chunk[j]->begin(), chunk[j]->end());
    }
    // (the document's own tokens: a random B is another document's, which has its own turn)
    figures.tokens += static_cast<int64_t>(a.size() + (random_next ? 0 : b.size()));
    const auto [cut_a, cut_b] = truncate_pair(a, b, static_cast<size_t>(max_tokens), rng);
    figures.tokens_cut += static_cast<int64_t>(cut_a + (random_next ? 0 : cut_b));
    chunk.clear();
    length = 0;
    if (a.empty() || b.empty()) continue;
    Example ex;
    ex.is_random_next = random_next;
    ex.tokens.push_back(vocab.cls());
    ex.tokens.insert(ex.tokens.end(), a.begin(), a.end());
    ex.tokens.push_back(vocab.sep());
    ex.segment_ids.assign(a.size() + 2, 0);
    ex.tokens.insert(ex.tokens.end(), b.begin(), b.end());
    ex.tokens.push_back(vocab.sep());
    ex.segment_ids.resize(ex.tokens.size(), 1);
    mask_tokens(ex, vocab, o, rng);
    out.push_back(std::move(ex));
  }
}

}  // namespace

std::vector<Document> load_documents(const std::filesystem::path& path, const Tokenizer& tokenizer,
                                     const std::function<void(const std::string&)>& progress, const StopCheck& stop) {
  std::vector<Document> docs(1);
  int64_t lines = 0;
  auto last_report = std::chrono::steady_clock::now();
  FileTexts texts;
  int64_t tokens = 0, unknown = 0;
  bool capitals = false;
  for (const auto& file : text_files(path, progress)) {
    LineReader in(file, size_t{64} << 20, progress);
    std::string line;
    while (in.next(line)) {
      texts.line(line);
      if (const int signal = stop_asked(stop))
        throw Stopped(signal, fmt::format("while tokenizing {} (line {})", file.string(), lines + 1));
      ++lines;
      if (progress && std::chrono::steady_clock::now() - last_report > std::chrono::seconds(2)) {
        last_report = std::chrono::steady_clock::now();
        progress(fmt::format("tokenized {} lines of {}", lines, file.filename().string()));
      }
      const std::string text = trim_line(line);
      if (text.empty()) {
        if (!docs.back().empty()) docs.emplace_back();
        continue;
      }
      capitals = capitals || has_capital(text);
      std::vector<int64_t> ids = tokenizer.encode(text);
      tokens += static_cast<int64_t>(ids.size());
      unknown += std::count(ids.begin(), ids.end(), tokenizer.vocab().unk());
      if (!ids.empty()) docs.back().push_back(std::move(ids));
    }
    if (!docs.back().empty()) docs.emplace_back();  // a file ends its last document
    texts.end(file, progress);
  }
  docs.pop_back();
  if (docs.empty()) throw DataError(fmt::format("{}: no text found", path.string()));
  if (const auto said = unknown_note(unknown, tokens, tokenizer, capitals, path); said && progress) progress(*said);
  return docs;
}

namespace {

// Every copy's examples of every document, in the order they are made; `rng` then shuffles them.
template <typename Sink>
void make_examples(const std::vector<Document>& documents, const Vocab& vocab, const ExampleOptions& o, Rng& rng,
                   Sink& out, ExampleFigures* figures) {
  if (o.max_seq_length < 5) throw DataError("max_seq_length must leave room for [CLS] A [SEP] B [SEP]");
  ExampleFigures made;
  for (int64_t dupe = 0; dupe < o.dupe_factor; ++dupe)
    for (size_t d = 0; d < documents.size(); ++d) examples_from_document(documents, d, vocab, o, rng, out, made);
  if (figures) figures->tokens += made.tokens, figures->tokens_cut += made.tokens_cut;
  if (out.size() == 0) throw DataError("the training text yields no sentence pairs (need at least two sentences)");
}

}  // namespace

std::vector<Example> create_examples(const std::vector<Document>& documents, const Vocab& vocab,
                                     const ExampleOptions& o, ExampleFigures* figures) {
  Rng rng(o.seed);
  std::vector<Example> out;
  make_examples(documents, vocab, o, rng, out, figures);
  rng.shuffle(out);
  return out;
}

PackedExamples create_packed_examples(const std::vector<Document>& documents, const Vocab& vocab,
                                      const ExampleOptions& o) {
  Rng rng(o.seed);
  PackedExamples made;
  make_examples(documents, vocab, o, rng, made, nullptr);
  // The same draws as create_examples' shuffle, applied to indices: the same order.
  std::vector<size_t> order(made.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  rng.shuffle(order);
  return made.reordered(order);
}

int64_t count_examples(const std::vector<Document>& documents, const Vocab& vocab, const ExampleOptions& o,
                       ExampleFigures* figures) {
  // Each example is made (the draws decide how many there are) and dropped at once.
  struct Counter {
    size_t n = 0;
    void push_back(const Example&) { ++n; }
    size_t size() const { return n; }
  } counter;
  Rng rng(o.seed);
  make_examples(documents, vocab, o, rng, counter, figures);
  return static_cast<int64_t>(counter.n);
}

namespace {

// Which letter cases the vocabulary's words hold (special tokens like [CLS] and [unused0] aside):
// an uncased BERT's none upper-case (its text is lower-cased before WordPiece); a vocabulary made
// from upper-case text none lower-case.
struct VocabularyCases {
  bool upper = false, lower = false;
};
VocabularyCases cases_of(const Vocab& vocab) {
  VocabularyCases c;
  for (int64_t id = 0; id < vocab.size(); ++id) {
    const std::string& t = vocab.token(id);
    if (t.starts_with('[') && t.ends_with(']')) continue;
    for (const char ch : t) c.upper |= ch >= 'A' && ch <= 'Z', c.lower |= ch >= 'a' && ch <= 'z';
  }
  return c;
}

}  // namespace

bool has_capital(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

std::optional<std::string> unknown_note(int64_t unknown, int64_t tokens, const Tokenizer& tokenizer, bool capitals,
                                        const std::optional<std::filesystem::path>& pretraining_text) {
  if (tokens == 0 || unknown * 20 <= tokens) return std::nullopt;
  const Vocab& vocab = tokenizer.vocab();
  const VocabularyCases cases = cases_of(vocab);
  const double share = static_cast<double>(unknown) / static_cast<double>(tokens);
  // (the letter case first: the fix then is one setting; a language or another vocabulary only
  // where most words are unknown; below that, symbols and rare words, which no fix needs)
  const std::string fix =
      capitals && !tokenizer.lower_case() && !cases.upper
          ? "the vocabulary holds no upper-case word and [train] do_lower_case is false, so every word with a capital "
            "is [UNK]: set do_lower_case = true (an uncased vocabulary's text is lower-cased)"
      : capitals && tokenizer.lower_case() && cases.upper
          ? fmt::format("the vocabulary holds upper-case words{} and [train] do_lower_case is true, so the text is "
                        "lower-cased before it is looked up: if it is a cased vocabulary, set do_lower_case = false",
                        cases.lower ? "" : " (and no lower-case one)")
      : share < 0.3
          ? "symbols, emoji or rare words the vocabulary lacks? the model reads each as [UNK], which is usual in small "
            "amounts"
      : !pretraining_text
          ? "text in another language or script than the pretrained model's, or a vocabulary of another model? a "
            "fine-tuned model reads only the words of the vocabulary its weights were pretrained with: fine-tune a "
            "model pretrained on text like this"
          // (--input: without it bertc vocab reads the config's [train] data, which --data may not be;
          // its size is the config's vocab_size, which the vocabulary then fits)
          : fmt::format("text in another language or script, or a vocabulary made for other text? they teach the "
                        "model nothing: make a vocabulary of this text (bertc vocab CONFIG --input {} -o "
                        "NEW_VOCAB.txt) and train with it (--vocab NEW_VOCAB.txt)",
                        support::shell_word(pretraining_text->string()));
  return fmt::format("{} of the {} tokens ({:.1f}%) are [UNK]: words the vocabulary {} does not hold; {}", unknown,
                     tokens, 100.0 * share, vocab.source(), fix);
}

std::optional<std::string> cut_note(const ExampleFigures& f, int64_t seq_len, int64_t max_positions) {
  if (f.tokens_cut == 0 || f.tokens == 0) return std::nullopt;
  const double share = 100.0 * static_cast<double>(f.tokens_cut) / static_cast<double>(f.tokens);
  return fmt::format("{} of the {} tokens put into sentence pairs ({:.1f}%) were cut to fit seq_len {} (pairs are "
                     "cut as BERT's create_pretraining_data cuts them){}",
                     f.tokens_cut, f.tokens, share, seq_len,
                     // (a vocabulary of a few dozen tokens splits every word into pieces: the lines are
                     // sentences, and only its size or seq_len helps; both causes are said)
                     share > 10 ? ": that much means sentences longer than seq_len in tokens: lines that hold more "
                                  "than a sentence (put one sentence a line, a blank line between documents), or a "
                                  "vocabulary too small for the text, which splits words into many pieces (make a "
                                  "larger one: bertc vocab --size)" +
                                      // (at the model's positions, a longer seq_len is refused: not advised)
                                      (seq_len < max_positions
                                           ? fmt::format("; or raise seq_len (up to max_position_embeddings = {})",
                                                         max_positions)
                                           : fmt::format(" (seq_len is already the model's max_position_embeddings, "
                                                         "{}: no longer one is possible)",
                                                         max_positions))
                                : "");
}

uint64_t shard_seed(uint64_t seed, int64_t shard) {
  return seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(shard + 1));
}

BatchStream::BatchStream(std::shared_ptr<const ExampleSource> source, int64_t batch_size, int64_t seq_len,
                         int64_t predictions, int64_t pad_id)
    : source_(std::move(source)), batch_size_(batch_size), seq_len_(seq_len), predictions_(predictions), pad_id_(pad_id) {
  if (source_->size() == 0) throw DataError("no training examples");
}

Batch BatchStream::batch(int64_t micro_batch) const {
  const int64_t B = batch_size_, S = seq_len_, P = predictions_;
  // (micro_batch * B wrapped: micro-batch 2^58 of 64 examples was micro-batch 0's, exit 0)
  if (micro_batch < 0 || micro_batch > last_micro_batch())
    throw DataError(fmt::format("micro-batch {} of {} examples: its examples' numbers (micro-batch x {}) are past "
                                "2^63, which a stream of batches does not number; the last micro-batch is {}",
                                micro_batch, B, B, last_micro_batch()));
  if (source_->examples_per_row() > 0) {  // rows of several examples each
    std::vector<Example> examples;
    std::vector<std::vector<size_t>> rows(static_cast<size_t>(B));
    for (int64_t r = 0; r < B; ++r)
      for (Example& ex : source_->row(micro_batch * B + r)) {
        rows[static_cast<size_t>(r)].push_back(examples.size());
        examples.push_back(std::move(ex));
      }
    return row_batch(examples, rows, S, P, source_->examples_per_row(), pad_id_);
  }
  Batch b{B, S, P, std::vector<int64_t>(B * S, pad_id_), std::vector<int64_t>(B * S, 0), std::vector<int64_t>(B * S, 0),
          std::vector<int64_t>(B * P, 0), std::vector<int64_t>(B * P, 0), std::vector<int64_t>(B, 0),
          std::vector<float>(B * P, 0.0f)};
  for (int64_t r = 0; r < B; ++r) {
    const Example ex = source_->example(micro_batch * B + r);
    if (static_cast<int64_t>(ex.tokens.size()) > S || static_cast<int64_t>(ex.masked_positions.size()) > P)
      throw DataError(fmt::format("an example of {} tokens and {} predictions does not fit seq_len {} and {} predictions",
                                  ex.tokens.size(), ex.masked_positions.size(), S, P));
    for (size_t i = 0; i < ex.tokens.size(); ++i) {
      b.input_ids[r * S + i] = ex.tokens[i];
      b.token_type_ids[r * S + i] = ex.segment_ids[i];
      b.attention_mask[r * S + i] = 1;
    }
    for (size_t i = 0; i < ex.masked_positions.size(); ++i) {
      b.masked_lm_positions[r * P + i] = ex.masked_positions[i];
      b.masked_lm_ids[r * P + i] = ex.masked_labels[i];
      b.masked_lm_weights[r * P + i] = 1.0f;
    }
    b.next_sentence_labels[r] = ex.is_random_next ? 1 : 0;
  }
  return b;
}

}  // namespace bertc::data
