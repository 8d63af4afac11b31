// Tokenizer implementation on Unicode code points (utf8proc for categories, case and NFD).
#include "data/tokenizer.h"

#include <utf8proc.h>

#include <functional>

namespace bertc::data {
namespace {

using CodePoints = std::u32string;

// Each code point of UTF-8 `s` given to `each`, invalid bytes dropped (BERT reads text with
// errors="ignore").
template <typename Each>
void for_each_code_point(const std::string& s, Each each) {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {
      ++p;
      --left;
      continue;
    }
    each(static_cast<char32_t>(cp));
    p += n;
    left -= n;
  }
}

CodePoints to_code_points(const std::string& s) {
  CodePoints out;
  for_each_code_point(s, [&](char32_t c) { out.push_back(c); });
  return out;
}

std::string to_utf8(const CodePoints& cps) {
  std::string out;
  for (char32_t cp : cps) {
    utf8proc_uint8_t buf[4];
    const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
  return out;
}

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

bool is_whitespace(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || category(c) == UTF8PROC_CATEGORY_ZS;
}

bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CO ||
         cat == UTF8PROC_CATEGORY_CS || cat == UTF8PROC_CATEGORY_CN;
}

// ASCII non-alphanumerics count as punctuation even where Unicode says symbol ("$", "^", "`").
bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  const auto cat = category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

// The CJK Unified Ideographs blocks BERT splits into single-character words.
bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// Lower-cases, decomposes (NFD) and drops non-spacing marks: "Café" -> "cafe".
CodePoints lower_and_strip_accents(const CodePoints& word) {
  CodePoints out;
  for (char32_t c : word) {
    utf8proc_int32_t parts[8];
    int boundclass = 0;
    const auto lowered = utf8proc_tolower(static_cast<utf8proc_int32_t>(c));
    const utf8proc_ssize_t n = utf8proc_decompose_char(lowered, parts, 8, UTF8PROC_DECOMPOSE, &boundclass);
    if (n <= 0 || n > 8) {
      out.push_back(static_cast<char32_t>(lowered));
      continue;
    }
    for (utf8proc_ssize_t i = 0; i < n; ++i)
      if (category(static_cast<char32_t>(parts[i])) != UTF8PROC_CATEGORY_MN) out.push_back(static_cast<char32_t>(parts[i]));
  }
  return out;
}

// One word (text between whitespace, or a CJK character): lower-cased and stripped of accents
// when asked, then split at punctuation, each part given to `each`.
void visit_word_parts(CodePoints& word, bool lower, const std::function<void(std::string&)>& each) {
  if (word.empty()) return;
  if (lower) word = lower_and_strip_accents(word);
  CodePoints piece;
  auto give = [&](const CodePoints& cps) {
    std::string text = to_utf8(cps);
    each(text);
  };
  for (char32_t c : word) {
    if (is_punctuation(c)) {
      if (!piece.empty()) give(piece);
      piece.clear();
      give(CodePoints{c});
    } else {
      piece.push_back(c);
    }
  }
  if (!piece.empty()) give(piece);
  word.clear();
}

}  // namespace

// Word by word as the text is decoded, never the whole text as code points or words: a corpus's
// line may be a document of tens of MiB, and prepare-data's memory bound counts on its text and its
// ids alone (whole-text vectors peaked at 241 MiB for a 7.5 MiB line under a bound of 140).
void Tokenizer::visit_basic_tokens(const std::string& text, const std::function<void(std::string&)>& each) const {
  CodePoints word;
  for_each_code_point(text, [&](char32_t c) {
    if (c == 0 || c == 0xFFFD || is_control(c)) return;
    if (is_whitespace(c)) {
      visit_word_parts(word, lower_, each);
    } else if (is_cjk(c)) {  // (a word of its own)
      visit_word_parts(word, lower_, each);
      word.push_back(c);
      visit_word_parts(word, lower_, each);
    } else {
      word.push_back(c);
    }
  });
  visit_word_parts(word, lower_, each);
}

std::vector<std::string> Tokenizer::basic_tokens(const std::string& text) const {
  std::vector<std::string> out;
  visit_basic_tokens(text, [&](std::string& word) { out.push_back(std::move(word)); });
  return out;
}

std::vector<std::string> Tokenizer::wordpieces(const std::string& word) const {
  constexpr size_t kMaxWordChars = 100;  // longer words are [UNK], as in BERT
  const CodePoints cps = to_code_points(word);
  if (cps.size() > kMaxWordChars) return {vocab_.token(vocab_.unk())};
  std::vector<std::string> pieces;
  size_t start = 0;
  while (start < cps.size()) {
    size_t end = cps.size();
    std::string match;
    for (; end > start; --end) {
      const std::string candidate = (start > 0 ? "##" : "") + to_utf8(cps.substr(start, end - start));
      if (vocab_.find(candidate)) {
        match = candidate;
        break;
      }
    }
    if (match.empty()) return {vocab_.token(vocab_.unk())};
    pieces.push_back(match);
    start = end;
  }
  return pieces;
}

std::vector<int64_t> Tokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  visit_basic_tokens(text, [&](std::string& word) {
    for (const std::string& piece : wordpieces(word)) ids.push_back(*vocab_.find(piece));
  });
  return ids;
}

}  // namespace bertc::data
