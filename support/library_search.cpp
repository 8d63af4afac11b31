// Candidates for a dlopen'ed library, from every place a toolkit, a Python wheel or bertc's own
// build puts one (see library_search.h).
#include "support/library_search.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include <fmt/format.h>

#ifndef BERTC_DEPS_DIR
#define BERTC_DEPS_DIR ""
#endif

namespace bertc::support {
namespace {

namespace fs = std::filesystem;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // (follows links: wheels and toolkits link sonames to files)
}

// A place to look in: the folders of one installation that may hold the library.
struct Place {
  std::string origin;
  std::vector<fs::path> folders;
};

std::vector<fs::path> toolkit_folders(const fs::path& root) {
  return {root / "lib64", root / "lib", root / "targets" / "x86_64-linux" / "lib"};
}

// Every lib/python3.*/{site,dist}-packages/FOLDER under `prefix`, in name order.
std::vector<fs::path> wheel_folders(const fs::path& prefix, const std::vector<std::string>& folders) {
  std::vector<fs::path> pythons, out;
  std::error_code ec;
  for (const fs::path& lib : {prefix / "lib", prefix / "lib64"})
    if (fs::is_directory(lib, ec))
      for (const auto& entry : fs::directory_iterator(lib, ec))
        if (entry.path().filename().string().rfind("python3", 0) == 0) pythons.push_back(entry.path());
  std::sort(pythons.begin(), pythons.end());
  for (const fs::path& python : pythons)
    for (const char* packages : {"site-packages", "dist-packages"})
      for (const std::string& folder : folders) out.push_back(python / packages / folder);
  return out;
}

// The Python environments a user may have put wheels in, each once: the active virtualenv and
// conda environment, the environment of each python3 on $PATH (a venv's bin/ is first there when
// it is activated; its prefix is the folder above bin/), the user's site, the system's.
std::vector<Place> python_places(const LibraryLayout& layout, const SearchPlaces& places) {
  std::vector<std::pair<std::string, fs::path>> prefixes;
  if (const std::string v = places.env("VIRTUAL_ENV"); !v.empty()) prefixes.emplace_back("$VIRTUAL_ENV", v);
  if (const std::string c = places.env("CONDA_PREFIX"); !c.empty()) prefixes.emplace_back("$CONDA_PREFIX", c);
  std::istringstream path(places.env("PATH"));
  for (std::string dir; std::getline(path, dir, ':');)
    if (!dir.empty() && is_file(fs::path(dir) / "python3"))
      prefixes.emplace_back("python3 on $PATH", fs::path(dir).parent_path());
  if (const std::string home = places.env("HOME"); !home.empty())
    prefixes.emplace_back("the user's site (pip install --user)", fs::path(home) / ".local");
  for (const fs::path& p : places.python_prefixes) prefixes.emplace_back("the system's Python", p);
  std::vector<Place> out;
  std::set<fs::path> seen;
  for (const auto& [origin, prefix] : prefixes)
    if (seen.insert(prefix.lexically_normal()).second)
      out.push_back({fmt::format("{} ({})", origin, prefix.string()), wheel_folders(prefix, layout.wheel_folders)});
  return out;
}

// Folders beside the running program: lib/ and ../lib/ next to it (a bundle), and .deps/ in the
// folders above it (a build inside its checkout, wherever the checkout was moved).
std::vector<Place> program_places(const LibraryLayout& layout, const SearchPlaces& places) {
  if (places.executable.empty()) return {};
  const fs::path dir = places.executable.parent_path();
  std::vector<Place> out{
      {fmt::format("beside the running program ({})", dir.string()), {dir / "lib", dir.parent_path() / "lib"}}};
  if (!layout.deps_folder.empty()) {
    Place deps{fmt::format(".deps/ above the running program ({})", dir.string()), {}};
    for (fs::path up = dir; !up.empty() && up != up.root_path(); up = up.parent_path())
      deps.folders.push_back(up / ".deps" / layout.deps_folder);
    out.push_back(std::move(deps));
  }
  return out;
}

}  // namespace

SearchPlaces SearchPlaces::of_this_process() {
  SearchPlaces p;
  p.env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v ? v : "");
  };
  std::error_code ec;
  p.executable = fs::read_symlink("/proc/self/exe", ec);
  p.toolkits = {"/usr/local/cuda"};
  std::vector<fs::path> versioned;
  for (const auto& entry : fs::directory_iterator("/usr/local", ec))
    if (entry.path().filename().string().rfind("cuda-", 0) == 0) versioned.push_back(entry.path());
  std::sort(versioned.rbegin(), versioned.rend());  // (cuda-13.0 before cuda-12.9)
  p.toolkits.insert(p.toolkits.end(), versioned.begin(), versioned.end());
  p.python_prefixes = {"/usr/local", "/usr", "/opt/conda"};
  p.built_deps = BERTC_DEPS_DIR;
  return p;
}

std::vector<LibraryCandidate> library_candidates(const LibraryLayout& layout, const SearchPlaces& places) {
  if (!layout.override_variable.empty())
    if (const std::string forced = places.env(layout.override_variable.c_str()); !forced.empty())
      return {{forced, "$" + layout.override_variable}};
  std::vector<LibraryCandidate> out;
  for (const std::string& soname : layout.sonames)
    out.push_back({soname, "the loader's path (LD_LIBRARY_PATH, ldconfig)"});
  std::vector<Place> places_in_order;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const std::string root = places.env(variable); !root.empty())
      places_in_order.push_back({fmt::format("${} ({})", variable, root), toolkit_folders(root)});
  for (const fs::path& root : places.toolkits)
    places_in_order.push_back({fmt::format("the CUDA toolkit {}", root.string()), toolkit_folders(root)});
  for (Place& p : python_places(layout, places)) places_in_order.push_back(std::move(p));
  for (Place& p : program_places(layout, places)) places_in_order.push_back(std::move(p));
  if (!places.built_deps.empty() && !layout.deps_folder.empty())
    places_in_order.push_back({fmt::format("the build's .deps/ ({})", places.built_deps.string()),
                               {places.built_deps / layout.deps_folder}});
  std::set<fs::path> seen;  // each file once, by what it resolves to
  for (const std::string& soname : layout.sonames)
    for (const Place& place : places_in_order)
      for (const fs::path& folder : place.folders) {
        const fs::path file = folder / soname;
        if (!is_file(file)) continue;
        std::error_code ec;
        const fs::path real = fs::canonical(file, ec);
        if (seen.insert(ec ? file.lexically_normal() : real).second)
          out.push_back({file.lexically_normal().string(), place.origin});
      }
  return out;
}

std::string tried_text(const LibraryCandidate& candidate, const std::string& why) {
  const std::string said = candidate.path + ": ";
  return fmt::format("{} [{}]: {}", candidate.path, candidate.origin,
                     why.rfind(said, 0) == 0 ? why.substr(said.size()) : why);
}

}  // namespace bertc::support
