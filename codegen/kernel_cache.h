// The kernel caches' file access, under one rule: a cache is only a cache. Any fault in it — an
// entry missing, unreadable, of the wrong type (a folder), corrupt; a cache folder that is a file
// or on a read-only file system — means "compile again" or "compile without caching", with one
// warning line on stderr per cache folder, never an abort and never an entry that stays stuck.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace bertc::codegen {

// The bytes of a cache entry, or nothing when it is absent or unreadable. An entry that is not a
// regular file is removed (so that it can be written anew).
std::optional<std::string> read_cache_entry(const std::filesystem::path& path);

// Writes an entry atomically (its folders made); false, with the warning, when the cache cannot
// take it. A folder where the entry goes is removed first.
bool write_cache_entry(const std::filesystem::path& path, const std::string& bytes);

// Drops an entry found corrupt (best effort: a cache that cannot be written keeps it, unused).
void remove_cache_entry(const std::filesystem::path& path);

// Prints "bertc: warning: kernel cache FOLDER: WHY: compiling without caching" once per folder.
void warn_cache_unusable(const std::filesystem::path& folder, const std::string& why);

}  // namespace bertc::codegen
