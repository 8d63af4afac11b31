// One training run per run folder: an flock'ed lock file naming its holder, taken before anything
// is written there, and the temporaries a killed run left behind, swept once it is held.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>

namespace bertc::run_folder {

// When a process holds `file`'s exclusive flock (a run folder's lock, a metrics file being
// written): the first line of what the file holds ("" when nothing); else nullopt.
std::optional<std::string> lock_holder(const std::filesystem::path& file);

// Throws TrainError, as RunFolderLock would, when another run holds `folder`'s lock now; makes
// and takes nothing: asked before the checks that come before the lock (--metrics: the metrics a
// running run writes in its folder are its folder's being in use, said as such).
void refuse_run_folder_in_use(const std::filesystem::path& folder);

class RunFolderLock {
 public:
  // Creates the folder, and locks `folder/.bertc-lock` (holding "pid host"). Throws TrainError
  // naming the holder when another process holds it. A lock file left by a process that ended
  // without releasing it (killed) is taken over, with a line on `log`.
  RunFolderLock(const std::filesystem::path& folder, std::ostream& log);
  // Empties the file (a clean end) and releases the lock; a folder it made that holds nothing but
  // the lock (a run refused before it wrote anything) is removed.
  ~RunFolderLock();
  // The run writes into the folder from now on: a hard stop leaves it (until then, a folder this
  // run made is removed by one: stop_request.h).
  void writing() const;
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  int fd_ = -1;
  std::filesystem::path folder_;
  bool made_ = false;
};

// Removes the folder's ".NAME.tmp.PID" files (atomic writes a killed run did not finish); says
// which on `log`. Only the holder of the folder's lock may call it.
void remove_leftover_temporaries(const std::filesystem::path& folder, std::ostream& log);
// Whether `entry` is a temporary a run writes in its folder (.NAME.tmp.PID of a checkpoint, a
// profile or metrics) cut short by a stop: its bytes checked, as a file of another's under such a
// name is no temporary of a run (it was removed by its name alone).
bool is_run_temporary(const std::filesystem::directory_entry& entry);

}  // namespace bertc::run_folder
