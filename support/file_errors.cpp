// Advice for failed file operations by errno (see file_errors.h).
#include "support/file_errors.h"

#include <algorithm>
#include <cerrno>

#include <fstream>

#include <fmt/format.h>

namespace bertc::support {
namespace {

constexpr size_t kNameMax = 255, kPathMax = 4096;  // (Linux's NAME_MAX and PATH_MAX, in bytes)

// The folder a write of `path` goes into: where room or permission is wanted.
std::string folder_of(const std::filesystem::path& path) {
  const std::filesystem::path parent = path.parent_path();
  return parent.empty() ? "the current folder" : parent.string();
}

// Which name of `paths` (an operation's one or two) is past the limits, said with its figures.
std::string name_too_long(std::initializer_list<std::filesystem::path> paths) {
  for (const auto& path : paths)
    for (const auto& part : path)
      if (part.string().size() > kNameMax)
        return fmt::format("the name '{}...' has {} bytes, more than the {} a file or folder name may have: choose a "
                           "shorter name",
                           part.string().substr(0, 40), part.string().size(), kNameMax);
  for (const auto& path : paths)
    if (path.string().size() >= kPathMax)
      return fmt::format("the path has {} bytes, more than the {} a path may have: choose a shorter one",
                         path.string().size(), kPathMax - 1);
  return "a name in the path is too long for this file system (some allow fewer than 255 bytes): choose a shorter one";
}

// A full disk or quota, with the figures where the write's size is known: how much to make room for
// (what is free is read after the failed write's temporary is gone).
std::string room_fix(int error, const std::filesystem::path& path, uint64_t bytes) {
  const std::string folder = folder_of(path);
  // (a file system rounds each file up to its blocks, and keeps entries: a sixty-fourth more, and
  // 16 KiB, so that room for this figure is enough without asking much more than the file)
  const uint64_t needed = bytes ? bytes + bytes / 64 + (uint64_t{16} << 10) : 0;
  if (needed == 0 || error == EFBIG)
    return fmt::format("make room in {} (or raise the quota or file size limit){}", folder,
                       needed ? fmt::format(": it needs {}", size_text(needed)) : "");
  std::error_code ec;
  const std::filesystem::path where = path.has_parent_path() ? path.parent_path() : ".";
  const std::filesystem::space_info space = std::filesystem::space(where, ec);
  if (ec) return fmt::format("make room for {} in {} (or raise the quota)", size_text(needed), folder);
  if (space.available >= needed)
    return fmt::format("it needs {} there and {} is free: a quota may be what stops it (raise it), or write it "
                       "elsewhere",
                       size_text(needed), size_text(space.available));
  return fmt::format("it needs {} there and {} is free: make room for {} more in {} (or raise the quota), or write "
                     "it elsewhere",
                     size_text(needed), size_text(space.available), size_text(needed - space.available), folder);
}

std::string fix_for(int error, const std::filesystem::path& path, const std::filesystem::path& other,
                    uint64_t needed = 0);

}  // namespace

std::string size_text(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < (uint64_t{1} << 20)) return fmt::format("{:.0f} KiB", std::max(1.0, b / 1024));
  if (bytes < (uint64_t{1} << 30)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  return fmt::format("{:.2f} GiB", b / double(1 << 30));
}

std::string file_error_fix(int error, const std::filesystem::path& path, uint64_t needed) {
  return fix_for(error, path, {}, needed);
}

namespace {

std::string fix_for(int error, const std::filesystem::path& path, const std::filesystem::path& other,
                    uint64_t needed) {
  switch (error) {
    case ENAMETOOLONG: return name_too_long({path, other});
    case ENOSPC:
    case EDQUOT:
    case EFBIG: return room_fix(error, path, needed);
    case EACCES:
    case EROFS:
      return fmt::format("make {} writable (its permissions, a read-only mount)", folder_of(path));
    // (not the folder's permissions, which root passes and EACCES says: an attribute of the file or
    // the folder, or a sticky folder's file of another user; "make it writable" did not help)
    case EPERM:
      return fmt::format("an immutable or append-only attribute on {0} or on {1} forbids it (lsattr -d {0} {1} shows "
                         "an i or an a; root clears them: sudo chattr -i -a {0}), or {1} is sticky and another user owns the file "
                         "(its owner, or root, can remove it)",
                         path.string(), path.parent_path().empty() ? std::string(".") : path.parent_path().string());
    case ENOENT: return fmt::format("a folder on the way to {} does not exist: make it, or correct the path", path.string());
    case ENOTDIR: return fmt::format("a part of {} is a file, not a folder: correct the path", path.string());
    case EISDIR: return fmt::format("{} is a folder: name a file", path.string());
    case ELOOP: return fmt::format("{} passes through a loop of symbolic links: correct the links or the path", path.string());
    default: return "";
  }
}

}  // namespace

std::string non_regular_kind(const std::filesystem::path& path) {
  std::error_code ec;
  switch (std::filesystem::status(path, ec).type()) {
    case std::filesystem::file_type::fifo: return "a pipe";
    case std::filesystem::file_type::character:
    case std::filesystem::file_type::block: return "a device";
    case std::filesystem::file_type::socket: return "a socket";
    case std::filesystem::file_type::directory: return "a folder";
    default: return "";
  }
}

std::string content_kind(const std::filesystem::path& path) {
  if (!non_regular_kind(path).empty()) return "";  // (a pipe's open would wait)
  std::ifstream in(path, std::ios::binary);
  char start[8] = {};
  if (!in.read(start, sizeof start)) return "";
  return content_kind_of(std::string_view(start, sizeof start));
}

std::string content_kind_of(std::string_view bytes) {
  // (its magic's first 6 bytes: a .bertx of another format version is one too)
  if (bytes.starts_with(std::string_view(kBertxMagic, 6))) return "a compiled program (.bertx)";
  if (bytes.starts_with("\x7f" "ELF")) return "an executable (a training executable of bertc compile --executable?)";
  if (bytes.starts_with(std::string_view("\x89HDF\r\n\x1a\n", 8)))
    return "an HDF5 file (a shard of bertc prepare-data, given as --data FOLDER?)";
  if (bytes.starts_with("\x1f\x8b")) return "gzip-compressed data";
  if (bytes.starts_with("PK\x03\x04")) return "a zip archive (a PyTorch .bin or .pt?)";
  return "";
}

std::string describe_file_error(const std::filesystem::filesystem_error& e) {
  const std::filesystem::path& path = e.path1();
  std::string what = e.what();  // "filesystem error: OPERATION: MESSAGE [PATH1] [PATH2]"
  if (const size_t at = what.find(" ["); at != std::string::npos) what.resize(at);
  if (what.starts_with("filesystem error: ")) what.erase(0, std::string("filesystem error: ").size());
  const std::string fix = fix_for(e.code().value(), path, e.path2());
  const std::string said = path.empty() ? what : fmt::format("{}: {}", path.string(), what);
  return fix.empty() ? said : fmt::format("{}: {}", said, fix);
}

}  // namespace bertc::support
