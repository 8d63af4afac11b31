// Kernel cache entries read and written without ever failing a compile (see kernel_cache.h).
#include "codegen/kernel_cache.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>
#include <iterator>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "support/atomic_file.h"
#include "support/resolved_path.h"
#include "support/shell_word.h"

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

// What to do with a folder not trusted: not to adopt it (chown would make whatever was planted in
// it yours), but to remove it: it is only a cache.
std::string trust_fix(const std::filesystem::path& folder) {
  std::string fix = fmt::format("a cache is code bertc loads, and what others could write must not be: remove it "
                                "(rm -rf {}: it is only a cache, made again), or set XDG_CACHE_HOME to a folder of "
                                "your own; a cache shared read-only is one trusted user's, named in BERTC_CACHE_OWNER",
                                support::shell_word(folder.string()));
  if (const char* named = std::getenv("BERTC_CACHE_OWNER"); named && *named && !::getpwnam(named)) {
    char* end = nullptr;
    std::strtoul(named, &end, 10);
    if (*end != '\0') fix += fmt::format(" (BERTC_CACHE_OWNER={} names no user here)", named);
  }
  return fix;
}

// Removes, once a process, the temporaries of `folder` last written an hour ago or more: those of
// a write a kill or a second signal ended (.NAME.tmp.PID, STEM.HOST-PID.so.tmp), which would stay
// for good. A write takes well under a second, so the age says it is over, on any machine that
// shares the cache (a pid would say so only on its own).
void sweep_stale_temporaries(const std::filesystem::path& folder) {
  static std::mutex mutex;
  static std::set<std::string> swept;
  {
    std::lock_guard lock(mutex);
    if (!swept.insert(folder.string()).second) return;
  }
  std::error_code ec;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = e.path().filename().string();
    const bool temporary = (name.starts_with(".") && name.find(".tmp.") != std::string::npos) || name.ends_with(".so.tmp");
    std::error_code old;
    if (temporary && e.is_regular_file(old) && now - e.last_write_time(old) > std::chrono::hours(1) && !old)
      std::filesystem::remove(e.path(), old);
  }
}

}  // namespace

std::optional<std::string> untrusted(const std::filesystem::path& path, bool entry) {
  struct stat st {};
  if ((entry ? ::lstat(path.c_str(), &st) : ::stat(path.c_str(), &st)) != 0) return std::nullopt;
  if (entry && S_ISLNK(st.st_mode)) return fmt::format("{} is a symbolic link", path.string());
  if (!trusted_owner(st.st_uid))
    return fmt::format("{} is owned by {}, not by you, root or BERTC_CACHE_OWNER", path.string(), owner_name(st.st_uid));
  // (A sticky folder, as /tmp, lets others add entries but not replace or remove ours; what they
  // add is theirs, which the entry's own check refuses.)
  const bool sticky_folder = !entry && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky_folder)
    return fmt::format("{} is writable by {} (mode {:03o})", path.string(),
                       (st.st_mode & S_IWOTH) ? "every user" : "its group", st.st_mode & 0777);
  return std::nullopt;
}

std::optional<std::string> untrusted_way(const std::filesystem::path& folder, const std::filesystem::path& cache) {
  std::error_code ec;
  auto plain = [&](const std::filesystem::path& p) {
    std::filesystem::path a = std::filesystem::absolute(p, ec).lexically_normal();
    return a.has_filename() || a == a.root_path() ? a : a.parent_path();  // ("/a/b/" is /a/b)
  };
  std::vector<std::string> faults;
  std::vector<std::filesystem::path> at_fault;
  // The path as written and the real one (links resolved: a link to a folder under one that others
  // may write leads there), each folder of either up to /.
  std::set<std::filesystem::path> seen;
  for (const std::filesystem::path& start : {plain(folder), support::resolved_path(folder)})
    for (std::filesystem::path p = start; !p.empty(); p = p.parent_path()) {
      if (seen.insert(p).second)
        if (const auto why = untrusted(p, false)) faults.insert(faults.begin(), *why), at_fault.push_back(p);
      if (p == p.parent_path()) break;
    }
  if (faults.empty()) return std::nullopt;
  // (One fix for all: a folder at fault above the cache means the cache must go elsewhere; else
  // removing the outermost at fault, the cache's own or inside it, takes the rest with it.)
  auto above_of = [](const std::filesystem::path& p, const std::filesystem::path& root) {
    return p != root && support::is_within(root, p);
  };
  const std::filesystem::path root = plain(cache), real_root = support::resolved_path(cache);
  const auto above = std::find_if(at_fault.begin(), at_fault.end(), [&](const std::filesystem::path& p) {
    return above_of(p, root) || above_of(p, real_root);
  });
  const std::filesystem::path outermost = *std::min_element(
      at_fault.begin(), at_fault.end(),
      [](const auto& a, const auto& b) { return std::distance(a.begin(), a.end()) < std::distance(b.begin(), b.end()); });
  const std::string fix =
      above != at_fault.end()
          ? fmt::format("{} is above the cache, and whoever may write it may replace the cache: a cache is code bertc "
                        "loads, so set XDG_CACHE_HOME to a folder of your own, on a path only you and root may write "
                        "(a cache shared read-only is one trusted user's, named in BERTC_CACHE_OWNER)",
                        above->string())
          : trust_fix(outermost);
  return fmt::format("{}: {}", fmt::join(faults, "; "), fix);
}

void make_cache_folder(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> missing;
  std::error_code ec;
  for (std::filesystem::path p = folder; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  // (Before anything is made: a folder made under one others may write would be theirs to move.)
  const std::filesystem::path there = missing.empty() ? folder : missing.back().parent_path();
  if (const auto why = untrusted_way(there.empty() ? "." : there, folder.parent_path()))
    throw std::runtime_error(*why);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it)
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error(fmt::format("{} cannot be made: {}", it->string(), std::strerror(errno)));
  if (const auto why = untrusted_way(folder, folder.parent_path())) throw std::runtime_error(*why);
  sweep_stale_temporaries(folder);
}

std::optional<std::string> read_cache_entry(const std::filesystem::path& path) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return std::nullopt;
  // The entry, then its folder, the cache's own and every folder above (whoever may write one may
  // replace what is below it), all said at once with the one fix that clears them.
  if (const auto way = untrusted_way(path.parent_path(), path.parent_path().parent_path())) {
    warn_cache_unusable(path.parent_path(), *way);
    return std::nullopt;
  }
  // (Only the entry at fault, in a trusted folder: the entry compiled again replaces it where this
  // user may write the folder; in a read-only one, another user's shared cache, it stays, unused.)
  if (const auto entry = untrusted(path, true)) {
    // (Removing it needs the folder's write permission this user lacks there: its owner's to do.)
    const bool writable = ::access(path.parent_path().c_str(), W_OK) == 0;
    warn_cache_unusable(path.parent_path(),
                        writable ? *entry
                                 : fmt::format("{}: a cache is code bertc loads, and what others could write must not "
                                               "be: ask the owner of {} to remove it, or set XDG_CACHE_HOME to a "
                                               "folder of your own",
                                               *entry, path.parent_path().string()),
                        writable ? CacheFault::entry_replaced : CacheFault::not_cached);
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

void warn_cache_unusable(const std::filesystem::path& folder, const std::string& why, CacheFault fault) {
  static std::mutex mutex;
  static std::set<std::pair<std::string, CacheFault>> warned;
  std::lock_guard lock(mutex);
  if (!warned.insert({folder.string(), fault}).second) return;
  std::cerr << fmt::format("bertc: warning: kernel cache {}: {}: {}\n", folder.string(), why,
                           fault == CacheFault::entry_replaced ? "not used: compiling again, and what is compiled "
                                                                 "replaces it"
                                                               : "compiling without caching");
}

}  // namespace bertc::codegen
