// Tokens of the IR text form, with their line and column.
#pragma once

#include <string>
#include <string_view>

#include "ir/error.h"

namespace bertc::ir {

enum class Tok {
  End,
  Ident,    // graph, return, op names, dtypes, true, false, inf, nan
  Value,    // %name or %12 (text excludes the %)
  Global,   // @name (text excludes the @)
  Number,   // -12, 3.5, 1e-12
  String,   // "..." (text is the unescaped contents)
  LParen, RParen, LBrace, RBrace, LBracket, RBracket, Comma, Equal, Colon, Minus,
};

std::string_view tok_name(Tok t);

struct Token {
  Tok kind = Tok::End;
  std::string text;
  SourceLoc loc;
};

// Splits IR text into tokens; "//" starts a comment that runs to the end of the line.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}
  // The next token; throws ir::Error at the offending character.
  Token next();

 private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  void advance();
  void skip_space_and_comments();
  Token lex_number(SourceLoc loc);
  Token lex_string(SourceLoc loc);
  std::string lex_word();

  std::string_view text_;
  size_t pos_ = 0;
  uint32_t line_ = 1, column_ = 1;
};

}  // namespace bertc::ir
