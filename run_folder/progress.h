// What training reports as it goes: a live progress line (or periodic lines when stderr is not
// a terminal) and one JSON line per step in the metrics file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>

namespace bertc::run_folder {

// One optimizer step, as measured.
struct StepStats {
  int64_t step = 0;
  double loss = 0, mlm_loss = 0, nsp_loss = 0, learning_rate = 0, grad_norm = 0;
  int64_t mlm_correct = 0, mlm_counted = 0, tokens = 0;
  double seconds = 0;
  bool skipped = false;    // loss scaling found an overflow: no update
  double loss_scale = 0;   // 0 without loss scaling
  uint64_t allreduce_bytes = 0;  // data parallel: this rank's all-reduce messages (bytes on the wire)
  bool compressed = false;       // ... and whether they were compressed this step
};

// What the progress line says of the device: model FLOPs utilization and memory.
struct DeviceFigures {
  double model_flops_per_step = 0;  // forward and backward of every micro-batch, no recompute
  double peak_flops = 0;            // the GPU's datasheet peak at the precision (0: no MFU)
  uint64_t memory_bytes = 0;        // device memory allocated (0: the reference executor)
  int ranks = 1;                    // data-parallel ranks (the loss and tokens are the global batch's)
  std::string compression = "none"; // of their gradients (gradient_compression), for the progress line
};

// A line of the metrics file as read back: whether it is whole JSON with an integer "step" whose
// "xxh3" matches the rest of the line (a line without one, from an older bertc, counts as intact),
// and the run that wrote it.
struct MetricsLine {
  bool intact = false;
  int64_t step = 0;
  std::string run;  // its "run" (empty in lines of a bertc before runs were named)
};
MetricsLine check_metrics_line(const std::string& line);

// Rewrites the metrics file (atomically) with its lines of steps up to `step` only: what a run
// resumed from step `step`'s checkpoint keeps; says on `log` how many later lines (or damaged
// ones: a line a kill cut short, or one whose checksum fails) it dropped. A missing file is left
// missing; a file without one metrics line in it is no run's metrics, and is kept aside whole as
// start_metrics_afresh keeps one. `run` is the run the checkpoint records (new_run_id), when it
// records one: a file with a line of another run is that run's record (--metrics named another
// run's file), which nothing may lose or mix into: it is kept aside whole, said on `log`, and
// this run writes a new one.
// `unwritten`: the checkpoint's own step's line, which the run could not write (a full disk:
// the checkpoint carries it, kMetricsUnwrittenKey); put back in its place when the file lacks it.
void keep_metrics_through(const std::filesystem::path& metrics, int64_t step, const std::optional<std::string>& run,
                          std::ostream& log, const std::string& unwritten = "");

// The checkpoint metadata key carrying the line of its step that the metrics file could not take.
inline constexpr const char* kMetricsUnwrittenKey = "metrics_unwritten";

// The path a run writes its metrics to: `metrics` with links followed (a link given to --metrics
// leads the metrics to its target; it is never itself set aside or replaced). Throws TrainError
// for a path that is neither absent nor a regular file (a FIFO would block the run, a device be
// read for ever, a folder is no file; /dev/null is welcome), a stream (/dev/stdout, /proc/...:
// the console or this command's own log), a dangling link whose target's folder is missing, a
// name or link target of a kind bertc reads or keeps (.safetensors, .bertx, .toml, .h5, .hdf5,
// .gz, .xxh3, a run folder's lock), an existing file that is not a metrics file (a slip of
// --metrics must cost nothing: such a file is neither written over nor moved), and a file a
// running bertc is writing its metrics to (refuse_metrics_in_use).
std::filesystem::path check_metrics_path(const std::filesystem::path& metrics);

// A new run's name, recorded in its checkpoints and in each of its metrics lines: 16 random hex
// digits.
std::string new_run_id();

// Before a run that starts at step 1 (nothing to continue) writes `metrics`: a file of metrics
// there (check_metrics_path refused any other kind) is another run's record — an earlier run's,
// or one killed here before its first checkpoint — which nothing may lose: it is renamed to the
// first free STEM.earlier-N.EXT beside it (never over a file), said on `log`, and the run writes
// a new one. Throws TrainError when it cannot be set aside.
void start_metrics_afresh(const std::filesystem::path& metrics, std::ostream& log);

// Throws TrainError (naming `given`, the path as the user wrote it) when a running bertc holds
// `path` as its metrics file (MetricsInUse): setting it aside or writing it would take it from
// under that run.
void refuse_metrics_in_use(const std::filesystem::path& path, const std::filesystem::path& given);

// While it lives, `metrics` is this run's (an flock on it): another run told to write the same
// file is refused. /dev/null is nobody's. Throws TrainError when another run holds it already.
class MetricsInUse {
 public:
  explicit MetricsInUse(const std::filesystem::path& metrics);
  ~MetricsInUse();
  MetricsInUse(const MetricsInUse&) = delete;
  MetricsInUse& operator=(const MetricsInUse&) = delete;

 private:
  int fd_ = -1;
};

// Appends step `step`'s metrics line to `out` (the file at `path`), flushed. When the write fails
// (a full disk, a quota) the file is cut back to its whole lines and TrainError thrown naming the
// step, the cause, its fix and `then` (how the run goes on after it): metrics are never lost
// without a word while training goes on.
void append_metrics_line(std::ofstream& out, const std::filesystem::path& path, const std::string& text, int64_t step,
                         const std::string& then);

class Progress {
 public:
  // Steps first..last of a run; lines every `every` steps (each step when `live`); the metrics
  // file is appended to. Throws TrainError when it cannot be opened.
  // Each metrics line names `run` (new_run_id), so that a resumed run knows its own lines.
  Progress(std::ostream& log, const std::filesystem::path& metrics, int64_t first, int64_t last, int64_t every, bool live,
           DeviceFigures device, std::string run);
  // Removes the metrics file it created when no step was recorded.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Prints the step's line (as often as asked) and appends its metrics. A line that cannot be
  // written (a full disk) is kept as metrics_failure(), and no later one is tried.
  void record(const StepStats& s);
  // "" while every line was written; else what failed and its fix: the run stops after this step's
  // checkpoint (train/trainer.cpp), rather than train on without its metrics.
  const std::string& metrics_failure() const { return metrics_failure_; }
  const std::string& unwritten_line() const { return unwritten_line_; }  // the line that failed (its checkpoint keeps it)
  void note(const std::string& message);  // a message between progress lines

 private:
  struct Window {  // sums since the last printed line
    double loss = 0, mlm = 0, nsp = 0, grad_norm = 0;
    int64_t steps = 0, correct = 0, counted = 0;
    void add(const StepStats& s);
  };
  std::string line(const StepStats& s, double tokens_per_s, double mfu) const;

  std::ostream& log_;
  std::filesystem::path metrics_path_;
  bool created_;  // the file did not exist before this run
  std::ofstream metrics_;
  Window window_;
  int64_t first_, last_, every_;
  bool live_;
  DeviceFigures device_;
  std::string run_;
  std::optional<MetricsInUse> in_use_;
  int64_t steps_ = 0;
  double total_seconds_ = 0;
  int64_t total_tokens_ = 0, skipped_ = 0;
  std::string metrics_failure_, unwritten_line_;
};

}  // namespace bertc::run_folder
