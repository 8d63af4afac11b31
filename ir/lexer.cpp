// Tokenizer for IR text.
#include "ir/lexer.h"

#include <cctype>

#include <fmt/format.h>

namespace bertc::ir {
namespace {
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
}  // namespace

std::string_view tok_name(Tok t) {
  switch (t) {
    case Tok::End: return "end of input";
    case Tok::Ident: return "identifier";
    case Tok::Value: return "value (%name)";
    case Tok::Global: return "graph name (@name)";
    case Tok::Number: return "number";
    case Tok::String: return "string";
    case Tok::LParen: return "'('";
    case Tok::RParen: return "')'";
    case Tok::LBrace: return "'{'";
    case Tok::RBrace: return "'}'";
    case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'";
    case Tok::Comma: return "','";
    case Tok::Equal: return "'='";
    case Tok::Colon: return "':'";
    case Tok::Minus: return "'-'";
  }
  return "?";
}

void Lexer::advance() {
  if (peek() == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  ++pos_;
}

void Lexer::skip_space_and_comments() {
  for (;;) {
    if (std::isspace(static_cast<unsigned char>(peek()))) {
      advance();
    } else if (peek() == '/' && peek(1) == '/') {
      while (pos_ < text_.size() && peek() != '\n') advance();
    } else {
      return;
    }
  }
}

std::string Lexer::lex_word() {
  std::string word;
  while (pos_ < text_.size() && is_word_char(peek())) {
    word += peek();
    advance();
  }
  return word;
}

Token Lexer::lex_number(SourceLoc loc) {
  std::string s;
  auto take_digits = [&] {
    while (std::isdigit(static_cast<unsigned char>(peek()))) { s += peek(); advance(); }
  };
  if (peek() == '-' || peek() == '+') { s += peek(); advance(); }
  take_digits();
  if (peek() == '.') { s += '.'; advance(); take_digits(); }
  if (peek() == 'e' || peek() == 'E') {
    s += peek(); advance();
    if (peek() == '-' || peek() == '+') { s += peek(); advance(); }
    take_digits();
  }
  return {Tok::Number, s, loc};
}

Token Lexer::lex_string(SourceLoc loc) {
  std::string s;
  advance();  // opening quote
  for (;;) {
    if (pos_ >= text_.size() || peek() == '\n') throw Error("unterminated string", loc);
    const char c = peek();
    advance();
    if (c == '"') return {Tok::String, s, loc};
    if (c != '\\') {
      s += c;
      continue;
    }
    if (pos_ >= text_.size()) throw Error("unterminated string", loc);
    const char e = peek();
    advance();
    if (e == 'n') s += '\n';
    else if (e == '"' || e == '\\') s += e;
    else throw Error(fmt::format("unknown escape '\\{}' in a string", e), loc);
  }
}

Token Lexer::next() {
  skip_space_and_comments();
  const SourceLoc loc{line_, column_};
  if (pos_ >= text_.size()) return {Tok::End, "", loc};
  const char c = peek();
  auto single = [&](Tok t) {
    advance();
    return Token{t, std::string(1, c), loc};
  };
  switch (c) {
    case '(': return single(Tok::LParen);
    case ')': return single(Tok::RParen);
    case '{': return single(Tok::LBrace);
    case '}': return single(Tok::RBrace);
    case '[': return single(Tok::LBracket);
    case ']': return single(Tok::RBracket);
    case ',': return single(Tok::Comma);
    case '=': return single(Tok::Equal);
    case ':': return single(Tok::Colon);
    case '"': return lex_string(loc);
    default: break;
  }
  if (c == '%' || c == '@') {
    advance();
    std::string word = lex_word();
    if (word.empty()) throw Error(fmt::format("expected a name after '{}'", c), loc);
    return {c == '%' ? Tok::Value : Tok::Global, word, loc};
  }
  if (std::isdigit(static_cast<unsigned char>(c)) ||
      ((c == '-' || c == '+') && std::isdigit(static_cast<unsigned char>(peek(1)))))
    return lex_number(loc);
  if (c == '-') return single(Tok::Minus);
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return {Tok::Ident, lex_word(), loc};
  const auto byte = static_cast<unsigned char>(c);
  throw Error(std::isprint(byte) ? fmt::format("unexpected character '{}'", c)
                                 : fmt::format("unexpected byte 0x{:02x}", byte),
              loc);
}

}  // namespace bertc::ir
