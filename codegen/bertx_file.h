// The .bertx file: a compiled program (program.h) in one file, written by bertc compile -o and
// read back by bertc info: magic, header size and checksum, a JSON header (metadata, kernels and
// their launch records, an index of the sections with their checksums), then the sections: both
// graphs' IR text, each distinct kernel's source and each image.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "codegen/program.h"

namespace bertc::codegen {

// The file's bytes for `p`.
std::string encode_bertx(const CompiledProgram& p);
// Parses and checks bytes read from `source`; throws std::runtime_error naming `source` and what
// is wrong (not a .bertx, truncated, another format version, a checksum that does not match, a
// header that is not what bertc writes, IR that does not parse), and how to make it again: as a
// .bertx, or (`in_executable`) as the training executable that carries it.
CompiledProgram decode_bertx(std::string_view bytes, const std::string& source, bool in_executable = false);

// Whether the file is a .bertx (what it is, whatever its name): it starts with the .bertx magic,
// or with a damaged magic before a header its checksum vouches for (then read_bertx says it is
// damaged, rather than the file being read as a config).
bool is_bertx(const std::filesystem::path& path);

// encode_bertx written atomically (support/atomic_file.h); decode_bertx of a file's bytes.
void write_bertx(const std::filesystem::path& path, const CompiledProgram& p);
CompiledProgram read_bertx(const std::filesystem::path& path);

}  // namespace bertc::codegen
