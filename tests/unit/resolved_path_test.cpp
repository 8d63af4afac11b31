// support::resolved_path and is_within: two spellings of one path compare equal, and "inside" goes
// by whole components (a folder /a/b does not hold /a/bc, which a prefix of characters said).
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/resolved_path.h"

namespace bertc::support {
namespace {

TEST(IsWithin, GoesByWholeComponents) {
  EXPECT_TRUE(is_within("/a/b", "/a/b"));
  EXPECT_TRUE(is_within("/a/b/c.ir", "/a/b"));
  EXPECT_TRUE(is_within("/a/b/c/d", "/a"));
  EXPECT_FALSE(is_within("/a/bc", "/a/b"));
  EXPECT_FALSE(is_within("/a", "/a/b"));
  EXPECT_FALSE(is_within("/x/b", "/a/b"));
  EXPECT_FALSE(is_within("/a/b", ""));  // (no folder holds nothing, not everything)
}

TEST(ResolvedPath, SpellingsOfOneNewFileAgree) {
  const std::filesystem::path folder = std::filesystem::temp_directory_path() / "bertc-resolved-path-test";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder / "real");
  std::filesystem::create_directory_symlink(folder / "real", folder / "link");
  const std::filesystem::path before = std::filesystem::current_path();
  std::filesystem::current_path(folder / "real");
  // (a file that does not exist yet, spelled bare, with ./, through the link and with ..)
  EXPECT_EQ(resolved_path("out.x"), resolved_path("./out.x"));
  EXPECT_EQ(resolved_path("out.x"), resolved_path(folder / "link" / "out.x"));
  EXPECT_EQ(resolved_path("out.x"), resolved_path("../real/out.x"));
  EXPECT_TRUE(is_within(resolved_path("../link/sub/out.x"), resolved_path(folder / "real")));
  std::filesystem::current_path(before);
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace bertc::support
