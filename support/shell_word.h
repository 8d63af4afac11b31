// A path or value as one word of a shell command bertc suggests: what a user pastes must mean the
// file bertc named, spaces, quotes and all.
#pragma once

#include <string>

namespace bertc::support {

// `text` as it is where every character is one a shell takes literally in a word (letters, digits
// and _ . / + - : @ % , =), else in single quotes, each ' inside written '\'' ("my run" ->
// 'my run'; "it's" -> 'it'\''s'; "" -> '').
std::string shell_word(const std::string& text);

}  // namespace bertc::support
