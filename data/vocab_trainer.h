// A WordPiece vocabulary trained from text, as Hugging Face tokenizers' BertWordPieceTokenizer
// trains one: words from BERT's basic tokenization (data/tokenizer.h) counted, then byte-pair
// merges over their characters (a word's first character as itself, the others as ##pieces), the
// most frequent pair first, until the vocabulary has `size` tokens: BERT's special tokens, the
// alphabet, then the merges in their order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "data/stop_check.h"

namespace bertc::data {

struct VocabTrainOptions {
  int64_t size = 30522;
  int64_t min_frequency = 2;     // a pair seen fewer times is not merged
  int64_t limit_alphabet = 1000; // the most frequent characters kept; words with others are left out
  // How the size is raised, as a size too small for the specials and the alphabet says it ("give
  // --size N or more"): where the size came from a config, its key is what to raise.
  std::string raise_size = "give --size";
};

struct VocabTrainResult {
  std::vector<std::string> tokens;  // [PAD] [UNK] [CLS] [SEP] [MASK], the alphabet, the merges
  int64_t words = 0, distinct_words = 0, merges = 0;
  int64_t characters = 0, alphabet = 0;  // characters kept; their tokens (c, and ##c where seen inside a word)
  int64_t characters_seen = 0;           // distinct characters of the text (limit_alphabet keeps `characters`)
  int64_t words_left_out = 0;            // words (counted) holding a character outside the alphabet: not merged
  bool size_reached = false;        // false: the text ran out of pairs to merge first
};

class Tokenizer;

// The words of the text (a file or a folder of .txt / .txt.gz) after `tokenizer`'s basic
// tokenization, counted on `threads` threads (0: every core); `progress` hears the bytes read,
// `note` what is worth saying of the input (data/text_input.h). Throws DataError for input that
// holds no words: a vocabulary is not made from nothing; Stopped when `stop` asks (between lines).
std::map<std::string, int64_t> count_words(const std::filesystem::path& input, const Tokenizer& tokenizer,
                                           int threads = 0,
                                           const std::function<void(uint64_t read, uint64_t total)>& progress = {},
                                           const std::function<void(const std::string&)>& note = {},
                                           const StopCheck& stop = {});

// Deterministic: ties between pairs go to the one whose merged token sorts first.
// Throws DataError when `size` cannot even hold the special tokens and the alphabet; Stopped when
// `stop` asks (between merges).
VocabTrainResult train_wordpiece(const std::map<std::string, int64_t>& word_counts, const VocabTrainOptions& options,
                                 const StopCheck& stop = {});

}  // namespace bertc::data
