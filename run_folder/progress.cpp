// The progress line and the metrics file (see progress.h).
#include "run_folder/progress.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "data/text_input.h"
#include "support/atomic_file.h"
#include "support/file_errors.h"
#include "run_folder/run_lock.h"
#include "run_folder/train_error.h"
#include "support/resolved_path.h"
#include "support/ascii_lower.h"

namespace bertc::run_folder {
namespace {

std::string memory(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1 << 20);
  if (mib < 1) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024);  // not "0.0 MiB"
  return mib >= 1024 ? fmt::format("{:.2f} GiB", mib / 1024) : fmt::format("{:.1f} MiB", mib);
}

std::string duration(double seconds) {
  const auto s = static_cast<int64_t>(seconds + 0.5);
  return s >= 3600 ? fmt::format("{}h{:02d}m", s / 3600, s % 3600 / 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
}

// Each metrics line ends in "xxh3": the checksum of the line's JSON without it, so that a line a
// crash cut short or a disk damaged is found and dropped on resume instead of trusted.
constexpr std::string_view kChecksumKey = R"(,"xxh3":")";

std::string checksum(std::string_view text) { return fmt::format("{:016x}", XXH3_64bits(text.data(), text.size())); }

std::string checksummed_line(const nlohmann::json& record) {
  const std::string body = record.dump();  // {...}
  return body.substr(0, body.size() - 1) + std::string(kChecksumKey) + checksum(body) + "\"}";
}

// Links `metrics` to the first free STEM.earlier-N.EXT beside it (link: never over a file already
// there) and returns that name: the file as it is, kept.
std::filesystem::path link_aside(const std::filesystem::path& metrics) {
  const std::string stem = metrics.stem().string(), ext = metrics.has_extension() ? metrics.extension().string() : "";
  for (int n = 1; n < 10000; ++n) {
    const std::filesystem::path aside = metrics.parent_path() / fmt::format("{}.earlier-{}{}", stem, n, ext);
    if (::link(metrics.c_str(), aside.c_str()) == 0) return aside;
    if (errno == EEXIST) continue;
    throw TrainError(fmt::format("{}: this run would write its metrics over it, and it cannot be set aside as {} "
                                 "({}): move the file away, or name another file with --metrics",
                                 metrics.string(), aside.string(), std::strerror(errno)));
  }
  throw TrainError(fmt::format("{}: 9999 earlier metrics files beside it already: move them away, or name another "
                               "file with --metrics", metrics.string()));
}

// Renames `metrics` to the first free STEM.earlier-N.EXT beside it, saying why with `what` (what
// the file holds, and why this run does not continue it).
void keep_aside(const std::filesystem::path& metrics, const std::string& what, std::ostream& log) {
  refuse_metrics_in_use(metrics, metrics);  // (again: a run may have started writing it since the check)
  const std::filesystem::path aside = link_aside(metrics);
  if (::unlink(metrics.c_str()) != 0)
    throw TrainError(fmt::format("{}: cannot be removed after keeping it as {} ({}): remove it, or name another file "
                                 "with --metrics", metrics.string(), aside.string(), std::strerror(errno)));
  log << fmt::format("metrics: {} {}: kept as {}; this run writes a new {}\n", metrics.string(), what, aside.string(),
                     metrics.filename().string());
}

// What a file named as the metrics file holds: its intact metrics lines, their steps and runs, and
// whether every line at least starts as one (a file whose lines a crash cut short is still a
// run's record; one with other lines is not a metrics file at all).
struct Survey {
  int64_t lines = 0, first = 0, last = 0;
  std::set<std::string> runs;
  bool metrics_like = true;
  uintmax_t bytes = 0;
};

Survey survey(const std::filesystem::path& metrics) {
  Survey s;
  std::ifstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const MetricsLine checked = check_metrics_line(line);
    if (!checked.intact) {
      // (a line a kill cut short, anywhere: bertc's lines are one-line JSON objects, keys sorted,
      // "step" late among them; notes, programs and pretty-printed JSON start otherwise, and a
      // whole JSON object without a step is someone else's record, not a cut or damaged line)
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (!line.starts_with("{\"") || (!j.is_discarded() && !(j.is_object() && j.contains("step"))))
        s.metrics_like = false;
      continue;
    }
    s.first = s.lines++ == 0 ? checked.step : std::min(s.first, checked.step);
    s.last = std::max(s.last, checked.step);
    if (!checked.run.empty()) s.runs.insert(checked.run);
  }
  std::error_code ec;
  s.bytes = std::filesystem::file_size(metrics, ec);
  return s;
}

// "holds the metrics of steps A to B (N lines[, of K runs])" followed by `and_why`, or "holds N
// bytes and not one whole metrics line" (lines a crash cut short).
std::string what_it_holds(const std::filesystem::path& metrics, const std::string& and_why) {
  const Survey s = survey(metrics);
  if (s.lines == 0) return fmt::format("holds {} bytes and not one whole metrics line", s.bytes);
  return fmt::format("holds the metrics of {} ({} line{}{}){}",
                     s.first == s.last ? fmt::format("step {}", s.first) : fmt::format("steps {} to {}", s.first, s.last),
                     s.lines, s.lines == 1 ? "" : "s", s.runs.size() > 1 ? fmt::format(", of {} runs", s.runs.size()) : "",
                     and_why);
}

}  // namespace

MetricsLine check_metrics_line(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  // (a step is a whole number from 0: a negative one, or one of 2^63 or more read wrapped to a
  // negative one, was kept as a step before the checkpoint on --resume, silently)
  if (j.is_discarded() || !j.is_object() || !j.contains("step") || !j["step"].is_number_unsigned() ||
      j["step"].get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return {};
  const size_t at = line.rfind(kChecksumKey);
  if (at == std::string::npos) {
    if (j.contains("xxh3")) return {};
    return {true, j["step"].get<int64_t>(), {}};  // a line from a bertc before checksums
  }
  const std::string body = line.substr(0, at) + "}";
  const std::string stored = line.substr(at + kChecksumKey.size());
  if (stored != checksum(body) + "\"}") return {};
  const auto run = j.find("run");
  return {true, j["step"].get<int64_t>(), run != j.end() && run->is_string() ? run->get<std::string>() : ""};
}

void Progress::Window::add(const StepStats& s) {
  loss += s.loss, mlm += s.mlm_loss, nsp += s.nsp_loss, grad_norm += s.grad_norm;
  ++steps, correct += s.mlm_correct, counted += s.mlm_counted;
}

void keep_metrics_through(const std::filesystem::path& metrics, int64_t step, const std::optional<std::string>& run,
                          std::ostream& log, const std::string& unwritten) {
  std::ifstream in(metrics);
  if (!in) {
    // (a removed file: the checkpoint's steps have no lines, said as a shortened file's are; the
    // line a stopped run could not write comes back from its checkpoint)
    if (std::error_code ec; step > 0 && !std::filesystem::exists(metrics, ec)) {
      const MetricsLine carried = check_metrics_line(unwritten);
      const bool restore = carried.intact && carried.step == step;
      if (restore) support::write_file_atomically(metrics, unwritten + "\n");
      const int64_t lost = restore ? step - 1 : step;
      log << fmt::format("metrics: {} is not there: {} gone (removed, or written to another --metrics file){}; this "
                         "run's lines start at step {}\n",
                         metrics.string(),
                         lost == 1 ? std::string("step 1's line is") : fmt::format("the lines of steps 1 to {} are", lost),
                         restore ? fmt::format(", and step {}'s is put back from the checkpoint", step) : "", step + 1);
    }
    return;
  }
  const MetricsLine carried = check_metrics_line(unwritten);
  std::string line, other_run;
  int64_t later = 0, damaged = 0, intact = 0, repeated = 0;
  bool reordered = false;
  // (by step, each step's first line: a step's line twice, or lines out of order, an edit's or a
  // join's, would be read as two measurements of it, or a curve that runs backwards)
  std::map<int64_t, std::string> kept_lines;
  while (std::getline(in, line)) {
    const MetricsLine checked = check_metrics_line(line);
    if (!checked.intact) {
      ++damaged;
      continue;
    }
    ++intact;
    if (run && !checked.run.empty() && checked.run != *run && other_run.empty()) other_run = checked.run;
    if (checked.step > step) {
      ++later;
      continue;
    }
    if (!kept_lines.empty() && checked.step < kept_lines.rbegin()->first) reordered = true;
    if (!kept_lines.emplace(checked.step, line).second) ++repeated;
  }
  in.close();
  const bool restore = carried.intact && carried.step == step && !kept_lines.count(step);
  if (restore) kept_lines.emplace(step, unwritten);
  std::string kept;
  std::set<int64_t> kept_steps;
  for (const auto& [kept_step, text] : kept_lines) kept += text + "\n", kept_steps.insert(kept_step);
  if (!other_run.empty()) {  // (--metrics named another run's file: adding to it would mix two runs)
    keep_aside(metrics,
               what_it_holds(metrics, fmt::format(" written by run {}, and this run is run {} (resumed from its step "
                                                  "{}): another run's metrics are not this run's to continue",
                                                  other_run, *run, step)),
               log);
    // (Its own earlier lines, set aside when another run took the file: said where they are, so
    // that its history is found whole.)
    for (int n = 1; n < 10000; ++n) {
      const std::filesystem::path earlier =
          metrics.parent_path() / fmt::format("{}.earlier-{}{}", metrics.stem().string(), n,
                                              metrics.has_extension() ? metrics.extension().string() : "");
      std::ifstream lines(earlier);
      if (!lines) break;
      int64_t first = -1, last = -1;
      for (std::string l; std::getline(lines, l);)
        if (const MetricsLine m = check_metrics_line(l); m.intact && m.run == *run && m.step <= step)
          first = first < 0 ? m.step : std::min(first, m.step), last = std::max(last, m.step);
      if (first >= 0)
        log << fmt::format("metrics: this run's own earlier lines, of steps {} to {}, are in {}\n", first, last,
                           earlier.string());
    }
    return;
  }
  // Steps the checkpoint trained whose lines are not in the file (a run that could not write them,
  // a file cut short): said, never passed off as kept.
  const int64_t missing = step - static_cast<int64_t>(kept_steps.size());
  const std::string lost =
      missing <= 0 ? ""
                   : fmt::format("; it has lines for {} of the checkpoint's {} steps (the others went to another "
                                 "--metrics file, or were lost){}",
                                 step - missing, step,
                                 kept_steps.empty() ? "" : fmt::format(", its last is step {}", *kept_steps.rbegin()));
  if (later == 0 && damaged == 0 && repeated == 0 && !reordered && !restore) {
    if (!lost.empty()) log << fmt::format("metrics: {} is kept{}\n", metrics.string(), lost);
    return;
  }
  if (intact == 0) {  // (not one metrics line: no run's metrics, whatever it is)
    keep_aside(metrics, what_it_holds(metrics, ""), log);
    return;
  }
  // A damaged line is not this run's to delete (an edit, a disk's fault): the file as it was is
  // kept beside, and the run goes on from its intact lines.
  refuse_metrics_in_use(metrics, metrics);  // (again: a run may have started writing it since the check)
  const bool edited = damaged > 0 || repeated > 0 || reordered;
  const std::filesystem::path whole = edited ? link_aside(metrics) : std::filesystem::path();
  std::string edits;
  if (damaged) edits += fmt::format(" and {} damaged line(s)", damaged);
  if (repeated) edits += fmt::format(" and {} line(s) of a step it already had (its first kept)", repeated);
  if (reordered) edits += ", its lines put back in step order";
  if (edited) edits += fmt::format(" (the file as it was is kept as {})", whole.string());
  support::write_file_atomically(metrics, kept);
  log << fmt::format("metrics: {} kept through step {}; dropped {} line(s) of later steps (trained again now){}{}{}\n",
                     metrics.string(), step, later, edits,
                     restore ? fmt::format("; step {}'s line, which the stopped run could not write, put back from "
                                           "its checkpoint",
                                           step)
                             : std::string(),
                     lost);
}

std::filesystem::path check_metrics_path(const std::filesystem::path& metrics) {
  // Links followed by hand: the path written is the link's target (a link set aside, or replaced
  // by a new file, would no longer lead where its owner pointed it), and a dangling link's
  // missing folder is named as the target's.
  if (metrics == "-")
    throw TrainError("--metrics -: the metrics go to a file (the progress lines are the console's): name a file");
  std::filesystem::path path = metrics;
  std::error_code ec;
  auto refuse_stream = [&](const std::filesystem::path& p) {
    // (/dev/stdout and the like lead through /proc to this command's own output; /dev/shm's
    // files are files, and a device is refused by its type below)
    const std::string text = std::filesystem::absolute(p, ec).lexically_normal().string();
    if (text.starts_with("/proc/") || text.starts_with("/dev/fd/") || text == "/dev/stdout" || text == "/dev/stderr" ||
        text == "/dev/stdin")
      throw TrainError(fmt::format("{}: names a stream ({}), not a file: what it leads to (the console, a log this "
                                   "command's output goes to) is no place for metrics: name a file with --metrics",
                                   metrics.string(), text));
  };
  refuse_stream(path);
  for (int hops = 0; std::filesystem::is_symlink(path, ec); ++hops) {
    if (hops == 40)
      throw TrainError(fmt::format("{}: a link that leads through 40 links (a loop?): name a file with --metrics",
                                   metrics.string()));
    const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
    // (relative to the link's folder as the kernel sees it: "..", through a linked folder, is its
    // real parent's)
    const std::filesystem::path folder = support::resolved_path(
        path.has_parent_path() ? path.parent_path() : std::filesystem::path("."));
    path = (target.is_absolute() ? target : folder / target).lexically_normal();
    refuse_stream(path);
  }
  const auto status = std::filesystem::status(path, ec);
  const bool absent = ec || status.type() == std::filesystem::file_type::not_found;
  if (status.type() == std::filesystem::file_type::directory)
    throw TrainError(fmt::format("{}: a folder: --metrics names a file (such as {})", metrics.string(),
                                 (metrics / "metrics.jsonl").string()));
  if (!absent && status.type() != std::filesystem::file_type::regular &&
      support::resolved_path(path) != "/dev/null")
    throw TrainError(fmt::format("{}: the metrics file must be a regular file (or /dev/null): a pipe would hold the "
                                 "run until something reads it, a device could be read for ever: name a file with "
                                 "--metrics",
                                 metrics.string()));
  if (path != metrics && absent && path.has_parent_path() && !std::filesystem::is_directory(path.parent_path(), ec))
    throw TrainError(fmt::format("{}: a link to {}, whose folder {} does not exist: make that folder, or name another "
                                 "file with --metrics",
                                 metrics.string(), path.string(), path.parent_path().string()));
  for (const std::filesystem::path& name : {metrics, path}) {
    const std::string ext = support::ascii_lower(name.extension().string());
    for (const char* other : {".safetensors", ".bertx", ".toml", ".h5", ".hdf5", ".gz", ".xxh3"})
      if (ext == other)
        throw TrainError(fmt::format("{}: a {} file is never a metrics file, and writing metrics there would destroy "
                                     "it: name a .jsonl file with --metrics",
                                     name.string(), other));
    if (name.filename() == ".bertc-lock" || name.filename() == ".prepare-lock")
      throw TrainError(fmt::format("{}: a run folder's lock, which writing metrics there would break: name a .jsonl "
                                   "file with --metrics",
                                   name.string()));
  }
  // A metrics file named as text among training text would be read as a document by a run on that
  // folder.
  const std::string name = support::ascii_lower(path.filename().string());
  if (name.ends_with(".txt"))
    if (const auto text = data::text_file_in(path.has_parent_path() ? path.parent_path() : ".", name))
      throw TrainError(fmt::format("{}: named as text (.txt) in a folder of text files ({}), which a run given that "
                                   "folder as --data reads as training text, the metrics with them: name a .jsonl "
                                   "file with --metrics",
                                   metrics.string(), text->filename().string()));
  if (absent || status.type() != std::filesystem::file_type::regular) return path;
  // A file its owner made read-only is not to be continued, nor replaced by a writable one (a
  // resume's rewrite made it 0644, silently; a root run is let through any mode).
  if ((status.permissions() & std::filesystem::perms::owner_write) == std::filesystem::perms::none)
    throw TrainError(fmt::format("{}: read-only (mode {:04o}): a run appends its metrics there; make it writable "
                                 "(chmod u+w {}) for this run to continue it, or name another file with --metrics",
                                 metrics.string(), static_cast<unsigned>(status.permissions()) & 07777,
                                 path.string()));
  const Survey held = survey(path);
  if (held.bytes > 0 && held.lines == 0 && !held.metrics_like)
    throw TrainError(fmt::format("{}: holds {} bytes and not one metrics line: it is not a metrics file, and a run "
                                 "neither writes over nor moves a file it did not write: name another file with "
                                 "--metrics (or move this one away yourself)",
                                 metrics.string(), held.bytes));
  refuse_metrics_in_use(path, metrics);
  return path;
}

std::string new_run_id() {
  std::random_device entropy;
  return fmt::format("{:08x}{:08x}", entropy(), entropy());
}

void start_metrics_afresh(const std::filesystem::path& metrics, std::ostream& log) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(metrics, ec)) return;  // (none; /dev/null: nothing to keep)
  const auto bytes = std::filesystem::file_size(metrics, ec);
  if (ec || bytes == 0) return;  // (an empty one: nothing to keep)
  keep_aside(metrics, what_it_holds(metrics, ", and this run starts from step 1"), log);
}

void refuse_metrics_in_use(const std::filesystem::path& path, const std::filesystem::path& given) {
  if (lock_holder(path))
    throw TrainError(fmt::format("{}: a running bertc is writing its metrics there now: name another file with "
                                 "--metrics, or wait for that run to end",
                                 given.string()));
}

MetricsInUse::MetricsInUse(const std::filesystem::path& metrics) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(metrics, ec)) return;  // (/dev/null: every run may write it)
  // Opened for writing: NFS emulates flock with byte-range locks, whose exclusive kind needs it.
  fd_ = ::open(metrics.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const bool held = errno == EWOULDBLOCK;
    ::close(fd_);
    fd_ = -1;
    if (!held) return;  // (a file system without flock: the run goes on without the guard)
    throw TrainError(fmt::format("{}: another bertc began writing its metrics there as this run started: name "
                                 "another file with --metrics",
                                 metrics.string()));
  }
}

MetricsInUse::~MetricsInUse() {
  if (fd_ >= 0) ::close(fd_);  // (releases the flock)
}

Progress::Progress(std::ostream& log, const std::filesystem::path& metrics, int64_t first, int64_t last, int64_t every,
                   bool live, DeviceFigures device, std::string run)
    : log_(log), metrics_path_(metrics), created_(!std::filesystem::exists(metrics)), first_(first), last_(last),
      every_(every), live_(live), device_(device), run_(std::move(run)) {
  metrics_.open(metrics, std::ios::app);
  if (!metrics_) {
    const int error = errno;
    // (The file is there and refuses writes: its own permissions, not its folder's or --metrics',
    // are what to change: a resumed run adds its lines to the file it has.)
    if (!created_ && (error == EACCES || error == EPERM))
      throw TrainError(fmt::format("{}: the metrics file cannot be appended to ({}): make it writable (chmod u+w {}; "
                                   "chattr -i if it is immutable), or name another file with --metrics",
                                   metrics.string(), std::strerror(error), metrics.string()));
    const std::string fix = support::file_error_fix(error, metrics);
    throw TrainError(fmt::format("{}: cannot open the metrics file for appending ({}): {}", metrics.string(),
                                 std::strerror(error), fix.empty() ? "name another file with --metrics" : fix));
  }
  in_use_.emplace(metrics);
}

void append_metrics_line(std::ofstream& out, const std::filesystem::path& path, const std::string& text, int64_t step,
                         const std::string& then) {
  // (Its size, not tellp: an append stream's position is not the file's end until it writes. Every
  // line is flushed, so the size is the whole lines'.)
  std::error_code ec;
  // (A file removed under the run, alone or with its run folder: every later line would go into
  // the unlinked file, lost at exit while the run says where its metrics are. /dev/null and the
  // like are no files to lose.)
  if (out.is_open() && std::filesystem::status(path, ec).type() == std::filesystem::file_type::not_found) {
    out.close();
    throw TrainError(fmt::format("{}: removed while this run was writing it (its run folder too?): the lines of the "
                                 "steps before step {} went with it, and the run stops rather than go on writing "
                                 "into nothing; {}",
                                 path.string(), step, then));
  }
  const uintmax_t before = std::filesystem::file_size(path, ec);
  const bool sized = !ec;
  out << text << "\n" << std::flush;
  if (out) return;
  // (A full disk, a quota: the line is cut off or missing. The file goes back to its whole lines,
  // and the run stops: training on would lose every later step's line without a word.)
  const int error = errno;
  out.close();  // (first: its buffer, written at close, would add the line's rest after the cut)
  if (sized) std::filesystem::resize_file(path, before, ec);
  const std::string fix = support::file_error_fix(error, path);
  throw TrainError(fmt::format("{}: writing step {}'s metrics failed ({}), and the run stops rather than go on without "
                               "them: the file keeps its whole lines{}; {}, then {}",
                               path.string(), step, std::strerror(error),
                               step > 1 ? fmt::format(", up to step {}", step - 1) : "",
                               fix.empty() ? "free the file's disk" : fix, then));
}

Progress::~Progress() {
  if (!created_ || steps_ > 0) return;
  // A run that ended before its first step (out of memory, a bad batch) leaves no empty file.
  metrics_.close();
  std::error_code ec;
  std::filesystem::remove(metrics_path_, ec);
}

void Progress::record(const StepStats& s) {
  total_seconds_ += s.seconds;
  total_tokens_ += s.tokens;
  skipped_ += s.skipped;
  window_.add(s);
  const double accuracy = s.mlm_counted ? double(s.mlm_correct) / double(s.mlm_counted) : 0.0;
  const double tokens_per_s = total_seconds_ > 0 ? double(total_tokens_) / total_seconds_ : 0.0;
  // Over the whole call, as tokens/s: the first step's graph recording and compiles included.
  ++steps_;
  const double mfu = device_.peak_flops > 0 && total_seconds_ > 0
                         ? device_.model_flops_per_step * double(steps_) / total_seconds_ / device_.peak_flops
                         : 0.0;
  nlohmann::json json{{"step", s.step},           {"loss", s.loss},
                      {"mlm_loss", s.mlm_loss},   {"nsp_loss", s.nsp_loss},
                      {"learning_rate", s.learning_rate},
                      {"grad_norm", s.grad_norm}, {"tokens_per_second", tokens_per_s},
                      {"step_seconds", s.seconds}, {"step_skipped", s.skipped},
                      {"loss_scale", s.loss_scale}, {"run", run_}};
  if (s.mlm_counted > 0) json["mlm_accuracy"] = accuracy;
  if (device_.peak_flops > 0) json["mfu"] = mfu;
  if (device_.memory_bytes > 0) json["device_memory_bytes"] = device_.memory_bytes;
  if (device_.ranks > 1) {
    json["ranks"] = device_.ranks;
    json["allreduce_bytes"] = s.allreduce_bytes;
    json["allreduce_compressed"] = s.compressed;
  }
  // (After a failed write the run is stopping: no later line is tried, and the failure is kept for
  // the trainer to stop on, after this step's checkpoint.)
  if (metrics_failure_.empty()) {
    const std::string text = checksummed_line(json);
    try {
      append_metrics_line(metrics_, metrics_path_, text, s.step,
                          "continue with the same command and --resume (the stop's checkpoint carries this step's "
                          "line, which the resumed run puts in its place)");
    } catch (const TrainError& e) {
      metrics_failure_ = e.what();
      unwritten_line_ = text;
    }
  }
  const bool print = live_ || s.step == first_ || s.step == last_ || s.step % every_ == 0;
  if (!print) return;
  if (live_) log_ << "\r\033[K" << line(s, tokens_per_s, mfu) << (s.step == last_ ? "\n" : "") << std::flush;
  else log_ << line(s, tokens_per_s, mfu) << "\n" << std::flush;
  if (!live_ || s.step % every_ == 0) window_ = {};
}

// Means over the steps since the last printed line: one step of a small batch is noisy.
std::string Progress::line(const StepStats& s, double tokens_per_s, double mfu) const {
  const double eta = total_seconds_ / double(s.step - first_ + 1) * double(last_ - s.step);
  const Window& w = window_;
  std::string line = fmt::format(
      "step {}/{}  loss {:.4f} (mlm {:.4f}, nsp {:.4f})  mlm acc {:.1f}%  lr {:.2e}  |g| {:.3f}  {:.0f} tok/s  ETA {}",
      s.step, last_, w.loss / w.steps, w.mlm / w.steps, w.nsp / w.steps,
      w.counted ? 100.0 * double(w.correct) / double(w.counted) : 0.0, s.learning_rate, w.grad_norm / w.steps,
      tokens_per_s, duration(eta));
  if (s.loss_scale > 0) line += fmt::format("  scale {:g}, {} skipped", s.loss_scale, skipped_);
  if (device_.peak_flops > 0) line += fmt::format("  MFU {:.1f}%", 100 * mfu);
  if (device_.memory_bytes > 0) line += "  mem " + memory(device_.memory_bytes);
  if (device_.ranks > 1)
    line += fmt::format("  {} ranks, all-reduce {} ({})", device_.ranks, memory(s.allreduce_bytes),
                        s.compressed ? device_.compression : "fp32");
  return line;
}

void Progress::note(const std::string& message) {
  log_ << (live_ ? "\r\033[K" : "") << message << "\n" << std::flush;
}

}  // namespace bertc::run_folder
