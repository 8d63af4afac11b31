// Reading a whole input that a user names: a config, a checkpoint. A device (/dev/zero) or an
// endless pipe has no end; reading one "whole" ate the machine's memory without a word.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace bertc::support {

// The bytes of `path` (a file, or a pipe that ends), read to its end. Throws std::runtime_error
// naming it and `what` it should be when it cannot be opened, or when more than `limit` bytes come
// without an end.
std::string read_bounded(const std::filesystem::path& path, uint64_t limit, std::string_view what);

}  // namespace bertc::support
