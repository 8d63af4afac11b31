// BERT's tokenizer: basic tokenization (cleanup, CJK characters as words, optional lower-casing
// with accent stripping, punctuation split) then greedy longest-match WordPiece, as in Google's
// tokenization.py and Hugging Face's BertTokenizer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "data/vocab.h"

namespace bertc::data {

class Tokenizer {
 public:
  Tokenizer(const Vocab& vocab, bool do_lower_case) : vocab_(vocab), lower_(do_lower_case) {}
  bool lower_case() const { return lower_; }

  // Words after basic tokenization (UTF-8).
  std::vector<std::string> basic_tokens(const std::string& text) const;
  // The same words, each given to `each` as it is found (its string may be moved from): memory
  // for one word at a time, whatever the text's length.
  void visit_basic_tokens(const std::string& text, const std::function<void(std::string&)>& each) const;
  const Vocab& vocab() const { return vocab_; }
  // WordPiece ids of the whole text; unknown words become [UNK].
  std::vector<int64_t> encode(const std::string& text) const;
  // WordPiece pieces of one basic token ("unaffable" -> "un", "##aff", "##able").
  std::vector<std::string> wordpieces(const std::string& word) const;

 private:
  const Vocab& vocab_;
  bool lower_;
};

}  // namespace bertc::data
