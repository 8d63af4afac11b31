// One spelling per file: what every comparison of two user paths compares.
#pragma once

#include <filesystem>

namespace bertc::support {

// `path` made absolute, its links followed and its dots removed as far as it exists (the rest
// appended, normalised). std::filesystem::weakly_canonical alone leaves a relative path whose
// first part does not exist as it is ("out.x" stays "out.x" while "./out.x" becomes
// "/cwd/out.x"), so that two spellings of one new file compared unequal.
std::filesystem::path resolved_path(const std::filesystem::path& path);

// Whether `path` is `folder` or lies inside it, component by component (so "/a/bc" is not inside
// "/a/b"); both as given: resolve them first where spellings may differ. An empty folder holds
// nothing.
bool is_within(const std::filesystem::path& path, const std::filesystem::path& folder);

}  // namespace bertc::support
