// WordPiece vocabulary training by byte-pair merges (see vocab_trainer.h). Pair counts are kept up
// to date as merges rewrite the words that hold them (a heap of candidates, stale entries skipped),
// so each merge costs what it touches, not a pass over every word.
#include "data/vocab_trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <queue>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "data/text_input.h"
#include "data/tokenizer.h"
#include "data/vocab.h"

namespace bertc::data {
namespace {

constexpr const char* kSpecials[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

// A word's UTF-8 characters.
std::vector<std::string> characters(const std::string& word) {
  std::vector<std::string> out;
  for (size_t i = 0; i < word.size();) {
    const auto lead = static_cast<unsigned char>(word[i]);
    const size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    out.push_back(word.substr(i, n));
    i += n;
  }
  return out;
}

uint64_t key(int a, int b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

struct Word {
  std::vector<int> symbols;
  int64_t count;
};

class Merger {
 public:
  std::vector<std::string> tokens;  // by symbol id
  std::unordered_map<std::string, int> ids;

  int symbol(const std::string& s) {
    auto [it, added] = ids.emplace(s, static_cast<int>(tokens.size()));
    if (added) tokens.push_back(s);
    return it->second;
  }

  // The token of a and b merged: b loses its ## (a keeps its own).
  std::string merged(int a, int b) const {
    const std::string& right = tokens[static_cast<size_t>(b)];
    return tokens[static_cast<size_t>(a)] + (right.starts_with("##") ? right.substr(2) : right);
  }

  void add_word(std::vector<int> symbols, int64_t count) {
    const int w = static_cast<int>(words_.size());
    for (size_t i = 0; i + 1 < symbols.size(); ++i) change(symbols[i], symbols[i + 1], count, w);
    words_.push_back({std::move(symbols), count});
  }

  // Merges until `limit` tokens or no pair seen min_frequency times; returns the merges made.
  int64_t run(size_t limit, int64_t min_frequency, const StopCheck& stop) {
    for (const auto& [k, c] : counts_) push(k, c);
    int64_t merges = 0;
    while (tokens.size() < limit && !heap_.empty()) {
      if (merges % 64 == 0)
        if (const int signal = stop_asked(stop))
          throw Stopped(signal, fmt::format("while merging ({} of up to {} tokens made)", tokens.size(), limit));
      const Candidate top = heap_.top();
      heap_.pop();
      const auto it = counts_.find(top.key);
      if (it == counts_.end() || it->second != top.count) continue;  // stale
      if (top.count < min_frequency) break;
      apply(static_cast<int>(top.key >> 32), static_cast<int>(top.key & 0xffffffffu));
      ++merges;
    }
    return merges;
  }

 private:
  struct Candidate {
    int64_t count;
    uint64_t key;
    std::string token;  // the merged token, for ties
    bool operator<(const Candidate& o) const { return count != o.count ? count < o.count : token > o.token; }
  };

  void push(uint64_t k, int64_t c) {
    if (c > 0) heap_.push({c, k, merged(static_cast<int>(k >> 32), static_cast<int>(k & 0xffffffffu))});
  }

  void change(int a, int b, int64_t delta, int word) {
    const uint64_t k = key(a, b);
    int64_t& c = counts_[k];
    c += delta;
    if (delta > 0) where_[k].insert(word);
    touched_.insert(k);
  }

  void apply(int a, int b) {
    const int c = symbol(merged(a, b));
    const uint64_t k = key(a, b);
    const std::unordered_set<int> holders = where_[k];
    touched_.clear();
    for (int w : holders) {
      Word& word = words_[static_cast<size_t>(w)];
      std::vector<int>& s = word.symbols;
      std::vector<int> out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          if (!out.empty()) {
            change(out.back(), a, -word.count, w);
            change(out.back(), c, word.count, w);
          }
          if (i + 2 < s.size()) {
            change(b, s[i + 2], -word.count, w);
            change(c, s[i + 2], word.count, w);
          }
          change(a, b, -word.count, w);
          out.push_back(c);
          ++i;
        } else {
          out.push_back(s[i]);
        }
      }
      s = std::move(out);
    }
    counts_.erase(k);
    where_.erase(k);
    for (uint64_t t : touched_)
      if (auto it = counts_.find(t); it != counts_.end()) push(t, it->second);
  }

  std::vector<Word> words_;
  std::unordered_map<uint64_t, int64_t> counts_;
  std::unordered_map<uint64_t, std::unordered_set<int>> where_;
  std::unordered_set<uint64_t> touched_;
  std::priority_queue<Candidate> heap_;
};

}  // namespace

std::map<std::string, int64_t> count_words(const std::filesystem::path& input, const Tokenizer& tokenizer,
                                           int threads,
                                           const std::function<void(uint64_t read, uint64_t total)>& progress,
                                           const std::function<void(const std::string&)>& note,
                                           const StopCheck& stop) {
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const std::vector<std::filesystem::path> files = text_files(input, note, "--input");
  uint64_t total = 0, before = 0;
  for (const auto& f : files) total += std::filesystem::file_size(f);
  std::map<std::string, int64_t> counts;
  std::vector<std::string> round;
  size_t round_bytes = 0;
  uint64_t position = 0;  // bytes read, for a stop's message
  auto stopped_at = [&](int signal) {
    return Stopped(signal, fmt::format("while counting words ({:.0f}% of the text read)",
                                       total ? 100.0 * double(position) / double(total) : 0.0));
  };
  auto count_round = [&] {
    std::vector<std::unordered_map<std::string, int64_t>> partial(static_cast<size_t>(threads));
    std::vector<std::exception_ptr> failed(static_cast<size_t>(threads));
    std::atomic<int> stop_signal{0};  // (a round of 32 MiB takes seconds: its threads ask too)
    std::vector<std::thread> pool;
    const size_t per = (round.size() + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
    for (size_t t = 0; t < static_cast<size_t>(threads); ++t)
      pool.emplace_back([&, t] {
        try {
          for (size_t i = t * per; i < std::min(round.size(), (t + 1) * per) && !stop_signal.load(); ++i) {
            if (i % 1024 == 0)
              if (const int signal = stop_asked(stop)) stop_signal = signal;
            tokenizer.visit_basic_tokens(round[i], [&](std::string& w) { ++partial[t][std::move(w)]; });
          }
        } catch (...) {
          failed[t] = std::current_exception();
        }
      });
    for (std::thread& th : pool) th.join();
    for (const auto& f : failed)
      if (f) std::rethrow_exception(f);
    if (stop_signal.load()) throw stopped_at(stop_signal.load());
    for (const auto& p : partial)
      for (const auto& [w, c] : p) counts[w] += c;
    round.clear();
    round_bytes = 0;
  };
  auto said = std::chrono::steady_clock::now();
  FileTexts texts;  // (a file whose text another held already is refused, as training refuses it)
  for (const auto& file : files) {
    LineReader reader(file, size_t{64} << 20, note);
    for (std::string line; reader.next(line);) {
      texts.line(line);
      position = before + reader.offset();
      if (const int signal = stop_asked(stop)) throw stopped_at(signal);
      round_bytes += line.size();
      round.push_back(std::move(line));
      if (round_bytes >= (32u << 20)) count_round();
      if (progress && std::chrono::steady_clock::now() - said > std::chrono::milliseconds(500)) {
        said = std::chrono::steady_clock::now();
        progress(before + reader.offset(), total);
      }
    }
    texts.end(file, note);
    before += std::filesystem::file_size(file);
  }
  count_round();
  if (progress) progress(total, total);
  if (counts.empty())
    throw DataError(fmt::format("{}: holds no words (empty, or blank lines only): a vocabulary is made from text; give "
                                "the training text with --input or [train] data",
                                input.string()));
  return counts;
}

VocabTrainResult train_wordpiece(const std::map<std::string, int64_t>& word_counts, const VocabTrainOptions& o,
                                 const StopCheck& stop) {
  VocabTrainResult r;
  // The alphabet, as tokenizers' trainer makes it: the limit_alphabet most frequent characters
  // (ties: the one that sorts first), each as itself and, where it is seen inside a word, as
  // ##character too.
  std::map<std::string, int64_t> frequency;
  std::set<std::string> inside;
  int64_t seen = 0;
  auto ask = [&] {  // (counting characters and making the merger's words take seconds on a corpus)
    if (++seen % 65536 == 0)
      if (const int signal = stop_asked(stop)) throw Stopped(signal, "while preparing the merges");
  };
  for (const auto& [word, count] : word_counts) {
    ask();
    r.words += count;
    const std::vector<std::string> chars = characters(word);
    for (size_t i = 0; i < chars.size(); ++i) {
      frequency[chars[i]] += count;
      if (i > 0) inside.insert(chars[i]);
    }
  }
  r.distinct_words = static_cast<int64_t>(word_counts.size());
  r.characters_seen = static_cast<int64_t>(frequency.size());
  std::vector<std::pair<std::string, int64_t>> ranked(frequency.begin(), frequency.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  if (static_cast<int64_t>(ranked.size()) > o.limit_alphabet) ranked.resize(static_cast<size_t>(o.limit_alphabet));
  std::vector<std::string> alphabet;
  for (const auto& entry : ranked) {
    alphabet.push_back(entry.first);
    if (inside.count(entry.first)) alphabet.push_back("##" + entry.first);
  }
  std::sort(alphabet.begin(), alphabet.end());
  const int64_t fixed = static_cast<int64_t>(std::size(kSpecials) + alphabet.size());
  // (a lower --limit-alphabet is advised only where one exists that would fit: at 1 already, or
  // with --size below the specials and one character, it was advised in vain)
  const int64_t least = static_cast<int64_t>(std::size(kSpecials)) + 1 +
                        (!ranked.empty() && inside.count(ranked.front().first) ? 1 : 0);
  if (o.size < fixed)
    throw DataError(fmt::format("a vocabulary of {} tokens cannot hold BERT's 5 special tokens and the text's {} "
                                "alphabet tokens ({} characters, and ## forms of those seen inside words): {} "
                                "{} or more{}",
                                o.size, alphabet.size(), ranked.size(), o.raise_size, fixed,
                                o.limit_alphabet > 1 && o.size >= least ? " (or a lower --limit-alphabet)" : ""));
  Merger m;
  for (const char* s : kSpecials) m.symbol(s);
  for (const std::string& a : alphabet) m.symbol(a);
  for (const auto& [word, count] : word_counts) {
    ask();
    const std::vector<std::string> chars = characters(word);
    std::vector<int> symbols;
    bool known = true;
    for (size_t i = 0; i < chars.size() && known; ++i) {
      const auto it = m.ids.find(i == 0 ? chars[i] : "##" + chars[i]);
      known = it != m.ids.end();
      if (known) symbols.push_back(it->second);
    }
    if (known) m.add_word(std::move(symbols), count);
    else r.words_left_out += count;
  }
  r.merges = m.run(static_cast<size_t>(o.size), o.min_frequency, stop);
  r.tokens = m.tokens;
  r.alphabet = static_cast<int64_t>(alphabet.size());
  r.characters = static_cast<int64_t>(ranked.size());
  r.size_reached = static_cast<int64_t>(r.tokens.size()) >= o.size;
  return r;
}

}  // namespace bertc::data
