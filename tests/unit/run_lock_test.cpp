// run_folder/run_lock: one holder of a run folder at a time, naming the holder to the refused one; a
// lock left by a process that ended without releasing it is taken over with a message; the sweep
// removes unfinished temporaries and nothing else.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "run_folder/run_lock.h"
#include "run_folder/train_error.h"

namespace bertc::run_folder {
namespace {

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("bertc-run-lock-test-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(RunFolderLock, OneHolderAtATimeAndStaleLocksTakenOver) {
  const auto dir = scratch("lock");
  std::ostringstream log;
  {
    const RunFolderLock first(dir, log);  // (makes the folder)
    try {
      const RunFolderLock second(dir, log);
      ADD_FAILURE() << "a second lock of one folder was granted";
    } catch (const TrainError& e) {
      const std::string why = e.what();
      EXPECT_NE(why.find("is in use by another bertc train (pid " + std::to_string(::getpid()) + " on "),
                std::string::npos)
          << why;
    }
  }
  EXPECT_EQ(log.str(), "");
  // A folder the lock made that holds nothing else (a run refused before it wrote) goes with it.
  EXPECT_FALSE(std::filesystem::exists(dir));
  std::filesystem::create_directories(dir);
  { const RunFolderLock again(dir, log); }  // released cleanly: no message
  EXPECT_EQ(log.str(), "");
  EXPECT_TRUE(std::filesystem::exists(dir / ".bertc-lock"));  // (a folder it did not make keeps its lock file)
  std::ofstream(dir / ".bertc-lock") << "4242 on elsewhere\n";  // as a killed holder leaves it
  { const RunFolderLock after_kill(dir, log); }
  EXPECT_NE(log.str().find("left locked by pid 4242 on elsewhere, which ended without unlocking it"), std::string::npos)
      << log.str();
  std::ofstream(dir / "a-file") << "x";
  EXPECT_THROW(RunFolderLock(dir / "a-file", log), TrainError);  // not a folder
}

// A run's temporaries cut short go (a checkpoint's header begun, a metrics file's first object);
// files of other bytes under the same names are someone else's and stay, as do other names.
TEST(RunFolderLock, SweepsUnfinishedTemporariesOnly) {
  const auto dir = scratch("sweep");
  std::filesystem::create_directories(dir);
  const std::string cut_checkpoint = std::string("\x40\0\0\0\0\0\0\0", 8) + "{\"__metadata__\":";
  const std::pair<const char*, std::string> files[] = {
      {".checkpoint-000006.safetensors.tmp.1234", cut_checkpoint},
      {".metrics.jsonl.tmp.77", "{\"step\": 1"},
      {".checkpoint-000009.safetensors.tmp.99", "my notes, not a checkpoint\n"},
      {".metrics.jsonl.tmp.88", "notes\n"},
      {"checkpoint-000003.safetensors", "x"},
      {".bertc-lock", "x"},
      {"notes.tmp.5", "x"},
      {".half.tmp.x", "x"}};
  for (const auto& [name, bytes] : files) std::ofstream(dir / name, std::ios::binary) << bytes;
  std::ostringstream log;
  remove_leftover_temporaries(dir, log);
  EXPECT_FALSE(std::filesystem::exists(dir / ".checkpoint-000006.safetensors.tmp.1234"));
  EXPECT_FALSE(std::filesystem::exists(dir / ".metrics.jsonl.tmp.77"));
  for (const char* kept : {".checkpoint-000009.safetensors.tmp.99", ".metrics.jsonl.tmp.88", "checkpoint-000003.safetensors",
                           ".bertc-lock", "notes.tmp.5", ".half.tmp.x"})
    EXPECT_TRUE(std::filesystem::exists(dir / kept)) << kept;
  EXPECT_NE(log.str().find("removed 2 unfinished temporary file(s)"), std::string::npos) << log.str();
}

}  // namespace
}  // namespace bertc::run_folder
