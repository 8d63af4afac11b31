// Kernel cache entries read and written without ever failing a compile (see kernel_cache.h).
#include "codegen/kernel_cache.h"

#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "support/atomic_file.h"

namespace bertc::codegen {

std::optional<std::string> read_cache_entry(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return std::nullopt;
  if (status.type() != std::filesystem::file_type::regular) {
    remove_cache_entry(path);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return std::nullopt;
  return bytes;
}

bool write_cache_entry(const std::filesystem::path& path, const std::string& bytes) {
  try {
    std::error_code ec;
    if (std::filesystem::is_directory(std::filesystem::symlink_status(path, ec))) std::filesystem::remove_all(path);
    std::filesystem::create_directories(path.parent_path());
    support::write_file_atomically(path, bytes);
    return true;
  } catch (const std::exception& e) {
    warn_cache_unusable(path.parent_path(), e.what());
    return false;
  }
}

void remove_cache_entry(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void warn_cache_unusable(const std::filesystem::path& folder, const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert(folder.string()).second) return;
  std::cerr << fmt::format("bertc: warning: kernel cache {}: {}: compiling without caching\n", folder.string(), why);
}

}  // namespace bertc::codegen
