// The kernel caches' file access, under one rule: a cache is only a cache. Any fault in it — an
// entry missing, unreadable, of the wrong type (a folder), corrupt; a cache folder that is a file
// or on a read-only file system — means "compile again" or "compile without caching", with one
// warning line on stderr per cache folder, never an abort and never an entry that stays stuck.
// And a cache is code: host kernel libraries are loaded into the process and GPU images onto the
// GPU, so a folder or entry someone else could have written is not used (as ssh treats its keys):
// each must be owned by this user, root or the user BERTC_CACHE_OWNER names, and writable by no
// one else (an entry: a regular file, not a link; its folder, the cache's own folder and every
// folder above them too, but for a sticky one, as /tmp). Folders bertc makes are private (0700).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace bertc::codegen {

// The bytes of a cache entry, or nothing when it is absent, unreadable or not trusted (it, or its
// folder; warned). An entry that is not a regular file is removed (so that it can be written anew).
std::optional<std::string> read_cache_entry(const std::filesystem::path& path);

// Makes `folder` and any folder missing above it (each 0700), then throws std::runtime_error
// saying why when the folder is not trusted (the rule above); removes, once a process, the
// temporaries in it of writes that ended an hour ago or more (a process killed mid-write).
void make_cache_folder(const std::filesystem::path& folder);

// Why `path` is not trusted (owner, who may write it; `entry`: a regular file, not a link), or
// nullopt; nullopt too when it does not exist.
std::optional<std::string> untrusted(const std::filesystem::path& path, bool entry);

// Why `folder` (inside the cache folder `cache`) may not be trusted: every folder from it up to /
// checked, the faults said together with the one fix that clears them (removing the outermost at
// fault when it is `cache` or below it; another XDG_CACHE_HOME when it is above), or nullopt.
std::optional<std::string> untrusted_way(const std::filesystem::path& folder, const std::filesystem::path& cache);

// Writes an entry atomically (its folders made, private); false, with the warning, when the cache
// cannot take it or is not trusted. A folder where the entry goes is removed first.
bool write_cache_entry(const std::filesystem::path& path, const std::string& bytes);

// Drops an entry found corrupt (best effort: a cache that cannot be written keeps it, unused).
void remove_cache_entry(const std::filesystem::path& path);

// What a cache fault leaves: an entry not trusted is compiled again and written anew over it (its
// folder is trusted, so the write takes it); anything else, compiling without caching.
enum class CacheFault { entry_replaced, not_cached };

// Prints "bertc: warning: kernel cache FOLDER: WHY: " and what `fault` leaves ("compiling without
// caching"), once per folder and fault (a write that then fails after an entry's warning is said too).
void warn_cache_unusable(const std::filesystem::path& folder, const std::string& why,
                         CacheFault fault = CacheFault::not_cached);

}  // namespace bertc::codegen
