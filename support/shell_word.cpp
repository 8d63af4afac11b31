// Words of suggested shell commands (see shell_word.h).
#include "support/shell_word.h"

#include <algorithm>
#include <cctype>

namespace bertc::support {

std::string shell_word(const std::string& text) {
  const auto plain = [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '/' || c == '+' || c == '-' || c == ':' || c == '@' ||
           c == '%' || c == ',' || c == '=';
  };
  // (an '=' at the start expands in zsh: quoted)
  if (!text.empty() && text[0] != '=' && std::all_of(text.begin(), text.end(), plain)) return text;
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace bertc::support
