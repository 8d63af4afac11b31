// Kernel cache entries read and written without ever failing a compile (see kernel_cache.h).
#include "codegen/kernel_cache.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>
#include <iterator>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "support/atomic_file.h"

namespace bertc::codegen {
namespace {

// Who may own what bertc loads from a cache: this user, root, and BERTC_CACHE_OWNER's user (a
// name or a number: the owner of a shared, read-only cache).
bool trusted_owner(uid_t owner) {
  if (owner == ::geteuid() || owner == 0) return true;
  const char* named = std::getenv("BERTC_CACHE_OWNER");
  if (!named || !*named) return false;
  if (const passwd* user = ::getpwnam(named)) return owner == user->pw_uid;
  char* end = nullptr;
  const unsigned long number = std::strtoul(named, &end, 10);
  return *end == '\0' && owner == static_cast<uid_t>(number);
}

std::string owner_name(uid_t owner) {
  const passwd* user = ::getpwuid(owner);
  return user ? fmt::format("{} (uid {})", user->pw_name, owner) : fmt::format("uid {}", owner);
}

const char* kTrustFix = "a cache is code bertc loads: make it yours and private (chown -R $USER FOLDER; chmod -R "
                        "go-w FOLDER), set XDG_CACHE_HOME to a folder of your own, or, for a cache shared read-only, "
                        "have one trusted user own it and name that user in BERTC_CACHE_OWNER";

}  // namespace

std::optional<std::string> untrusted(const std::filesystem::path& path, bool entry) {
  struct stat st {};
  if ((entry ? ::lstat(path.c_str(), &st) : ::stat(path.c_str(), &st)) != 0) return std::nullopt;
  if (entry && S_ISLNK(st.st_mode)) return fmt::format("{} is a symbolic link", path.string());
  if (!trusted_owner(st.st_uid))
    return fmt::format("{} is owned by {}, not by you, root or BERTC_CACHE_OWNER", path.string(), owner_name(st.st_uid));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fmt::format("{} is writable by {} (mode {:03o})", path.string(),
                       (st.st_mode & S_IWOTH) ? "every user" : "its group", st.st_mode & 0777);
  return std::nullopt;
}

void make_cache_folder(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (std::filesystem::path p = folder; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error(fmt::format("{} cannot be made: {}", it->string(), std::strerror(errno)));
  if (const auto why = untrusted(folder, false)) throw std::runtime_error(fmt::format("{}: {}", *why, kTrustFix));
}

std::optional<std::string> read_cache_entry(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return std::nullopt;
  for (const auto& [checked, entry] : {std::pair{path.parent_path(), false}, std::pair{path, true}})
    if (const auto why = untrusted(checked, entry)) {
      warn_cache_unusable(path.parent_path(), fmt::format("{}: {}", *why, kTrustFix));
      return std::nullopt;
    }
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
    make_cache_folder(path.parent_path());
    if (std::filesystem::is_directory(std::filesystem::symlink_status(path, ec))) std::filesystem::remove_all(path);
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
