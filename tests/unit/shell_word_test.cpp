// support::shell_word: a suggested command's path pasted into a shell names the same file (a run
// folder "my run" was suggested as --init my run/..., which the shell split in two).
#include <gtest/gtest.h>

#include "support/shell_word.h"

namespace bertc::support {
namespace {

TEST(ShellWord, PlainWordsStayAndOthersAreQuoted) {
  EXPECT_EQ(shell_word("runs/bert-tiny_2/checkpoint-000012.safetensors"), "runs/bert-tiny_2/checkpoint-000012.safetensors");
  EXPECT_EQ(shell_word("my run/checkpoint-000977.safetensors"), "'my run/checkpoint-000977.safetensors'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word("a;rm -rf x"), "'a;rm -rf x'");
  EXPECT_EQ(shell_word("$HOME/*"), "'$HOME/*'");
  EXPECT_EQ(shell_word(""), "''");
  EXPECT_EQ(shell_word("=x"), "'=x'");
}

// What sh makes of each quoted word is the text itself (where a shell is here to ask).
TEST(ShellWord, AShellReadsTheWordBack) {
  for (const std::string text : {"my run", "it's", "a;b", "$HOME", "tab\there", "back\\slash", "new\nline", "é ü"}) {
    const std::string command = "printf '%s' " + shell_word(text);
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buffer[256];
    while (const size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
    ASSERT_EQ(pclose(pipe), 0) << command;
    EXPECT_EQ(out, text) << command;
  }
}

}  // namespace
}  // namespace bertc::support
