// codegen/kernel_cache: a kernel cache is only a cache. A host kernel library that is truncated,
// flipped or a folder is compiled again (never handed to the loader, where it would crash); an
// NVRTC entry that is a folder is replaced; a cache folder that cannot be written (here: a file
// where the folder should be) compiles without caching, with one warning, never an abort. And a
// cache others could have written is not used at all (a planted library is never loaded), while
// the folders bertc makes are private.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <xxhash.h>

#include "codegen/kernel_cache.h"

#include "codegen/host_compile.h"
#include "cuda/nvrtc_compiler.h"
#include "prelude_kernels.h"

namespace bertc::codegen {
namespace {

std::filesystem::path fresh(const std::string& name) {
  const auto dir = std::filesystem::path(BERTC_TEST_CACHE) / ("kernel-cache-test-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

std::filesystem::path only_library(const std::filesystem::path& cache) {
  for (const auto& e : std::filesystem::directory_iterator(cache / "host"))
    if (e.path().extension() == ".so") return e.path();
  return {};
}

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A launchable library: its block_sums kernel is there and installs.
void expect_usable(const HostKernelLibrary& library) { EXPECT_NE(library.entry("block_sums"), nullptr); }

TEST(KernelCache, DamagedHostLibrariesAreCompiledAgain) {
  HostEmulator emulator;
  const auto good = fresh("host-good");
  expect_usable(compile_for_host(testing::kPreludeKernels, good, emulator.api()));
  const std::filesystem::path built = only_library(good);
  ASSERT_FALSE(built.empty());
  ASSERT_TRUE(std::filesystem::exists(built.string() + ".xxh3"));
  const auto size = std::filesystem::file_size(built);
  // Each damage in a copy of the cache (the process has the original mapped, under its own path).
  const std::vector<std::pair<std::string, std::function<void(const std::filesystem::path&)>>> damages = {
      {"truncated", [&](const std::filesystem::path& so) { std::filesystem::resize_file(so, size / 2); }},
      {"flipped",
       [&](const std::filesystem::path& so) {
         std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
         f.seekg(static_cast<std::streamoff>(size / 2));
         const char c = static_cast<char>(f.get());
         f.seekp(static_cast<std::streamoff>(size / 2));
         f.put(static_cast<char>(c ^ 0x01));  // (a change whatever the byte was)
       }},
      {"a-folder",
       [](const std::filesystem::path& so) {
         std::filesystem::remove(so);
         std::filesystem::create_directories(so / "inside");
       }},
  };
  for (const auto& [name, damage] : damages) {
    const auto copy = fresh("host-" + name);
    std::filesystem::copy(good, copy, std::filesystem::copy_options::recursive);
    const std::filesystem::path so = copy / "host" / built.filename();
    damage(so);
    const std::string damaged = std::filesystem::is_regular_file(so) ? read(so) : std::string();
    expect_usable(compile_for_host(testing::kPreludeKernels, copy, emulator.api()));
    EXPECT_TRUE(std::filesystem::is_regular_file(so)) << name;
    EXPECT_EQ(std::filesystem::file_size(so), size) << name << ": rebuilt whole";
    EXPECT_NE(read(so), damaged) << name << ": the damaged library was kept (a flipped one would even load)";
  }
  // A file where the cache folder should be: compiled in a private folder, with a warning.
  const auto blocked = fresh("host-blocked");
  std::filesystem::create_directories(blocked);
  std::ofstream(blocked / "host") << "not a folder";
  auto private_folders = [] {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
      n += e.path().filename().string().starts_with("bertc-host-");
    return n;
  };
  const size_t before = private_folders();
  ::testing::internal::CaptureStderr();
  const HostKernelLibrary elsewhere = compile_for_host(testing::kPreludeKernels, blocked, emulator.api());
  const std::string said = ::testing::internal::GetCapturedStderr();
  expect_usable(elsewhere);  // (loaded, though its private folder is gone)
  EXPECT_EQ(private_folders(), before) << "the private build folder was left behind";
  EXPECT_NE(said.find("warning: kernel cache " + (blocked / "host").string()), std::string::npos) << said;
  EXPECT_NE(said.find("compiling without caching"), std::string::npos) << said;
}

// A build ended at once (a second signal, a kill) leaves its part-made library STEM.HOST-PID.so.tmp:
// the next build into the folder removes this host's whose process is gone, and no other.
TEST(KernelCache, PartMadeLibrariesOfEndedBuildsAreSwept) {
  HostEmulator emulator;
  const auto cache = fresh("host-sweep");
  expect_usable(compile_for_host(testing::kPreludeKernels, cache, emulator.api()));  // (makes the folders)
  const std::filesystem::path built = only_library(cache);
  ASSERT_FALSE(built.empty());
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  const std::string stem = "00000000feedbeef";  // (another library's: this build's own temporary is renamed away)
  // (pids past the kernel's pid_max, 2^22: never running)
  const auto dead = cache / "host" / fmt::format("{}.{}-99999999.so.tmp", stem, host);
  const auto living = cache / "host" / fmt::format("{}.{}-{}.so.tmp", stem, host, ::getpid());
  const auto elsewhere = cache / "host" / fmt::format("{}.another-host-99999999.so.tmp", stem);
  for (const auto& p : {dead, living, elsewhere}) std::ofstream(p) << "half a library";
  std::filesystem::remove(built.string() + ".xxh3");  // (so that it is built again)
  expect_usable(compile_for_host(testing::kPreludeKernels, cache, emulator.api()));
  EXPECT_FALSE(std::filesystem::exists(dead)) << "a dead build's part-made library was left in the cache";
  EXPECT_TRUE(std::filesystem::exists(living)) << "a running build's part-made library was removed";
  EXPECT_TRUE(std::filesystem::exists(elsewhere)) << "another machine's build (shared cache) was removed";
}

// A write a kill or a second signal ended leaves .NAME.tmp.PID (bertc compile has no graceful
// stop): a later write into the folder removes those an hour old, and leaves a fresh one (a write
// under way, maybe on another machine sharing the cache).
TEST(KernelCache, TemporariesOfEndedWritesAreSweptOnceOld) {
  const auto cache = fresh("stale");
  std::filesystem::create_directories(cache / "nvrtc");
  std::filesystem::permissions(cache, std::filesystem::perms::owner_all);
  std::filesystem::permissions(cache / "nvrtc", std::filesystem::perms::owner_all);
  const auto stale = cache / "nvrtc" / ".k_0123.bin.tmp.4242", fresh_one = cache / "nvrtc" / ".k_4567.bin.tmp.4343";
  std::ofstream(stale) << "half";
  std::ofstream(fresh_one) << "half";
  std::filesystem::last_write_time(stale, std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  ASSERT_TRUE(write_cache_entry(cache / "nvrtc" / "k_89ab.bin", "entry"));
  EXPECT_FALSE(std::filesystem::exists(stale)) << "an hour-old temporary stayed in the cache";
  EXPECT_TRUE(std::filesystem::exists(fresh_one)) << "a temporary being written was removed";
  EXPECT_EQ(read(cache / "nvrtc" / "k_89ab.bin"), "entry");
}

TEST(KernelCache, NvrtcEntriesThatAreFoldersAreReplacedAndABlockedCacheIsSkipped) {
  const cuda::NvrtcCompiler compiler = cuda::NvrtcCompiler::for_arch(80);
  std::vector<KernelSource> kernels;
  for (const char* name : testing::kPreludeKernelNames) kernels.push_back({name, testing::kPreludeKernels});
  const auto cache = fresh("nvrtc");
  const auto first = cuda::compile_all(compiler, kernels, cache);
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(cache / "nvrtc")) entries.push_back(e.path());
  ASSERT_FALSE(entries.empty());
  std::filesystem::remove(entries[0]);
  std::filesystem::create_directories(entries[0] / "inside");  // a folder where an entry was
  CompileStats repaired, after;
  cuda::compile_all(compiler, kernels, cache, &repaired);
  EXPECT_EQ(repaired.cache_hits, first.size() - 1);
  EXPECT_TRUE(std::filesystem::is_regular_file(entries[0]));  // not stuck: written anew
  cuda::compile_all(compiler, kernels, cache, &after);
  EXPECT_EQ(after.cache_hits, first.size());
  // The cache folder is a file: every kernel compiles, none is cached, one warning.
  const auto blocked = fresh("nvrtc-blocked");
  std::filesystem::create_directories(blocked);
  std::ofstream(blocked / "nvrtc") << "not a folder";
  CompileStats uncached;
  ::testing::internal::CaptureStderr();
  const auto images = cuda::compile_all(compiler, kernels, blocked, &uncached);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(images.size(), kernels.size());
  EXPECT_EQ(uncached.unwritten_entries, kernels.size());
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_NE(said.find("compiling without caching"), std::string::npos) << said;
}

unsigned mode_of(const std::filesystem::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 0777;
}

// A planted library: bytes that are no library, under a checksum that matches them, so that only
// trust stops compile_for_host from loading it (which would fail: "cannot load").
std::string plant(const std::filesystem::path& so) {
  const std::string garbage = "not a library, but its checksum matches";
  std::ofstream(so, std::ios::binary | std::ios::trunc) << garbage;
  std::ofstream(so.string() + ".xxh3", std::ios::trunc) << fmt::format("{:016x}\n", XXH3_64bits(garbage.data(), garbage.size()));
  return garbage;
}

TEST(KernelCache, ACacheOthersCouldWriteIsNotUsedAndBertcsFoldersArePrivate) {
  HostEmulator emulator;
  const auto own = fresh("private");
  expect_usable(compile_for_host(testing::kPreludeKernels, own / "bertc", emulator.api()));
  EXPECT_EQ(mode_of(own / "bertc"), 0700u);
  EXPECT_EQ(mode_of(own / "bertc" / "host"), 0700u);
  const std::filesystem::path built = only_library(own / "bertc");
  // A library planted in a folder every user may write: never loaded; built privately, warned.
  const std::vector<std::pair<std::string, std::function<void(const std::filesystem::path&)>>> ways = {
      {"writable by every user", [](const std::filesystem::path& so) { chmod(so.parent_path().c_str(), 0777); }},
      {"writable by its group", [](const std::filesystem::path& so) { chmod(so.parent_path().c_str(), 0770); }},
      // (whoever may write the cache's own folder may replace its host/ folder)
      {"@ is writable by every user", [](const std::filesystem::path& so) {  // (@: the cache's own folder)
         chmod(so.parent_path().parent_path().c_str(), 0777);
       }},
      {"is owned by", [](const std::filesystem::path& so) {
         if (::geteuid() == 0) (void)!::chown(so.c_str(), 65534, 65534);
       }},
      {"is a symbolic link", [](const std::filesystem::path& so) {
         std::filesystem::rename(so, so.string() + ".elsewhere");
         std::filesystem::create_symlink(so.string() + ".elsewhere", so);
       }}};
  int n = 0;
  for (const auto& [why, make_untrusted] : ways) {
    if (why == "is owned by" && ::geteuid() != 0) continue;  // (only root gives files away)
    const auto copy = fresh(fmt::format("planted-{}", n++));  // (a folder is warned of once a process)
    std::filesystem::copy(own / "bertc", copy, std::filesystem::copy_options::recursive);
    const std::filesystem::path so = copy / "host" / built.filename();
    const size_t plant_size = plant(so).size();
    make_untrusted(so);
    ::testing::internal::CaptureStderr();
    std::optional<HostKernelLibrary> library;
    EXPECT_NO_THROW(library.emplace(compile_for_host(testing::kPreludeKernels, copy, emulator.api()))) << why;
    const std::string said = ::testing::internal::GetCapturedStderr();
    if (library) expect_usable(*library);
    EXPECT_NE(said.find(why.starts_with("@") ? copy.string() + why.substr(1) : why), std::string::npos) << said;
    EXPECT_EQ(said.find("chown"), std::string::npos) << said;
    const bool entry_only = why == "is owned by" || why == "is a symbolic link";
    if (entry_only) {
      // Only the entry at fault, in a folder of the user's: the library compiled again replaces
      // it, as said, and the next compile loads it unwarned with nothing removed.
      EXPECT_NE(said.find("not used: compiling again, and what is compiled replaces it"), std::string::npos) << said;
      EXPECT_EQ(said.find("without caching"), std::string::npos) << said;
      // (looked at, not only unwarned: a folder is warned of once a process)
      struct stat st {};
      ASSERT_EQ(::lstat(so.c_str(), &st), 0);
      EXPECT_TRUE(S_ISREG(st.st_mode)) << so;
      EXPECT_EQ(st.st_uid, ::geteuid()) << so;
      EXPECT_NE(std::filesystem::file_size(so), plant_size) << so;
    } else {
      EXPECT_NE(said.find("compiling without caching"), std::string::npos) << said;
      // The fix it names is removing the folder (adopting it would adopt the planted library), and
      // it works: the next compile builds a library of its own there and loads it, unwarned.
      const size_t at = said.find("remove it (rm -rf ");
      ASSERT_NE(at, std::string::npos) << said;
      // (the fix exactly as said: what it names is what is at fault, the cache's own folder
      // included; the test's folders need no quotes, which shell_word_test covers)
      const size_t from = at + std::string("remove it (rm -rf ").size();
      std::filesystem::remove_all(said.substr(from, said.find(": it is only a cache", from) - from));
    }
    ::testing::internal::CaptureStderr();
    expect_usable(compile_for_host(testing::kPreludeKernels, copy, emulator.api()));
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << why;
  }
  // A shared cache owned by the user BERTC_CACHE_OWNER names is used (read-only for the others).
  if (::geteuid() == 0) {
    const auto shared = fresh("shared");
    std::filesystem::copy(own / "bertc", shared, std::filesystem::copy_options::recursive);
    for (const auto& e : std::filesystem::recursive_directory_iterator(shared)) (void)!::chown(e.path().c_str(), 65534, 65534);
    (void)!::chown(shared.c_str(), 65534, 65534);
    const std::filesystem::path so = shared / "host" / built.filename();
    const std::string before = read(so);
    ::setenv("BERTC_CACHE_OWNER", "65534", 1);
    ::testing::internal::CaptureStderr();
    expect_usable(compile_for_host(testing::kPreludeKernels, shared, emulator.api()));
    const std::string said = ::testing::internal::GetCapturedStderr();
    ::unsetenv("BERTC_CACHE_OWNER");
    EXPECT_EQ(said, "");
    EXPECT_EQ(read(so), before);  // (loaded from the cache, not built again)
  }
}

// The folders above the cache are checked too (XDG_CACHE_HOME, and everything above it): one that
// others may write (or own) lets them replace the cache folder, or a link for it leading where
// they choose. Refused before anything is made there, with the fix that works: another
// XDG_CACHE_HOME. A sticky folder (as /tmp) is fine.
TEST(KernelCache, FoldersAboveTheCacheAreCheckedBeforeAnythingIsMade) {
  HostEmulator emulator;
  std::vector<std::pair<std::string, std::function<void(const std::filesystem::path&)>>> ways = {
      {"is writable by every user (mode 777)", [](const std::filesystem::path& above) { chmod(above.c_str(), 0777); }}};
  if (::geteuid() == 0)
    ways.push_back({"is owned by", [](const std::filesystem::path& above) { (void)!::chown(above.c_str(), 65534, 65534); }});
  int n = 0;
  for (const auto& [why, make_untrusted] : ways) {
    const auto above = fresh(fmt::format("above-{}", n++));
    std::filesystem::create_directories(above);
    make_untrusted(above);
    ::testing::internal::CaptureStderr();
    expect_usable(compile_for_host(testing::kPreludeKernels, above / "bertc", emulator.api()));
    const std::string said = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(said.find(above.string() + " " + why), std::string::npos) << said;
    EXPECT_NE(said.find("set XDG_CACHE_HOME to a folder of your own"), std::string::npos) << said;
    EXPECT_FALSE(std::filesystem::exists(above / "bertc")) << "made under a folder others may write: " << said;
  }
  // A link to a folder under one every user may write: the real path is checked too.
  const auto linked = fresh("above-linked");
  std::filesystem::create_directories(linked / "open" / "inner");
  chmod((linked / "open").c_str(), 0777);
  std::filesystem::create_directory_symlink(linked / "open" / "inner", linked / "cache-home");
  ::testing::internal::CaptureStderr();
  expect_usable(compile_for_host(testing::kPreludeKernels, linked / "cache-home" / "bertc", emulator.api()));
  const std::string linked_said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(linked_said.find((linked / "open").string() + " is writable by every user"), std::string::npos)
      << linked_said;
  EXPECT_FALSE(std::filesystem::exists(linked / "open" / "inner" / "bertc")) << linked_said;
  EXPECT_NE(linked_said.find("set XDG_CACHE_HOME to a folder of your own"), std::string::npos) << linked_said;
  EXPECT_EQ(linked_said.find("rm -rf"), std::string::npos) << linked_said;  // (never the user's own folder)
  const auto sticky = fresh("above-sticky");
  std::filesystem::create_directories(sticky);
  chmod(sticky.c_str(), 01777);
  ::testing::internal::CaptureStderr();
  expect_usable(compile_for_host(testing::kPreludeKernels, sticky / "bertc", emulator.api()));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(mode_of(sticky / "bertc"), 0700u);
}

// Several folders at fault are said in one warning, with the fix that clears them all (removing
// the outermost): it worked one folder a run, each run compiling uncached again.
TEST(KernelCache, EveryFolderAtFaultIsSaidAtOnce) {
  HostEmulator emulator;
  const auto cache = fresh("two-faults");
  expect_usable(compile_for_host(testing::kPreludeKernels, cache, emulator.api()));
  chmod(cache.c_str(), 0777);
  chmod((cache / "host").c_str(), 0777);
  ::testing::internal::CaptureStderr();
  expect_usable(compile_for_host(testing::kPreludeKernels, cache, emulator.api()));
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find(cache.string() + " is writable by every user"), std::string::npos) << said;
  EXPECT_NE(said.find((cache / "host").string() + " is writable by every user"), std::string::npos) << said;
  EXPECT_NE(said.find("rm -rf " + cache.string() + ":"), std::string::npos) << said;
  std::filesystem::remove_all(cache);  // (the fix as said)
  ::testing::internal::CaptureStderr();
  expect_usable(compile_for_host(testing::kPreludeKernels, cache, emulator.api()));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(KernelCache, NvrtcEntriesOthersCouldWriteAreNotUsed) {
  const cuda::NvrtcCompiler compiler = cuda::NvrtcCompiler::for_arch(80);
  std::vector<KernelSource> kernels;
  for (const char* name : testing::kPreludeKernelNames) kernels.push_back({name, testing::kPreludeKernels});
  const auto cache = fresh("nvrtc-untrusted");
  cuda::compile_all(compiler, kernels, cache);
  EXPECT_EQ(mode_of(cache / "nvrtc"), 0700u);
  chmod((cache / "nvrtc").c_str(), 0777);
  CompileStats stats;
  ::testing::internal::CaptureStderr();
  cuda::compile_all(compiler, kernels, cache, &stats);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(stats.cache_hits, 0u);
  EXPECT_NE(said.find("is writable by every user (mode 777)"), std::string::npos) << said;
}

}  // namespace
}  // namespace bertc::codegen
