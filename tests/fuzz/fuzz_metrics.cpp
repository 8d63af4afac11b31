// Fuzz harness of the metrics file as a resume reads it back (run_folder/progress.h): keep_metrics_through
// never throws on content, keeps exactly the intact lines of steps up to the checkpoint's, the
// first of each step, in step order, and drops the rest (a file it changed is kept beside whole).
#include "tests/fuzz/harness.h"
#include "run_folder/progress.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace {

constexpr int64_t kResumeStep = 7;  // the seeds (a 10-step run's metrics) have lines on both sides

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::map<int64_t, std::string> by_step;
  bool all_kept = true;
  for (const std::string& line : lines_of(bytes)) {
    const bertc::run_folder::MetricsLine m = bertc::run_folder::check_metrics_line(line);
    if (!m.intact || m.step > kResumeStep) {
      all_kept = false;
      continue;
    }
    if ((!by_step.empty() && m.step <= by_step.rbegin()->first) || by_step.count(m.step)) all_kept = false;
    by_step.emplace(m.step, line);
  }
  std::vector<std::string> expected;
  for (const auto& [step, line] : by_step) expected.push_back(line);
  const std::filesystem::path path = bertc::fuzz::scratch_file(bytes, "metrics.jsonl");
  std::ostringstream log;
  bertc::run_folder::keep_metrics_through(path, kResumeStep, std::nullopt, log);  // (an exception ends the process: the failure)
  std::ifstream in(path, std::ios::binary);
  const std::string after{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // (a file with damaged lines, or none intact, is kept beside as metrics.earlier-N.jsonl: one
  // input's copies go, or thousands of inputs would fill the 9999 names)
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path()))
    if (entry.path().filename().string().starts_with("metrics.earlier-")) std::filesystem::remove(entry.path());
  if (all_kept) {
    if (after != bytes) bertc::fuzz::fail("metrics", "a file with nothing to drop was rewritten");
  } else if (lines_of(after) != expected) {
    bertc::fuzz::fail("metrics", "the file kept is not the intact lines through the step, a step's first, in step order");
  }
  if (!expected.empty()) ++bertc::fuzz::accepted_inputs;
  return 0;
}
