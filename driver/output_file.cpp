// Tool output: stdout, or a file replaced atomically.
#include "driver/output_file.h"

#include "support/file_errors.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/bertx_file.h"
#include "data/text_input.h"
#include "support/atomic_file.h"
#include "support/safetensors.h"
#include "driver/training_executable.h"
#include "run_folder/checkpoint.h"
#include "support/resolved_path.h"

namespace bertc::driver {

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text << std::flush;
    return;
  }
  // /dev/null is written into, as a stream: the atomic write's rename would put a regular file in
  // its place (as root, /dev/null itself). Any other device or a pipe is refused: a pipe nothing
  // reads would hold the command for ever, and -o - is the console.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec) &&
      !std::filesystem::is_directory(path, ec)) {
    if (support::resolved_path(path) != "/dev/null")
      throw std::invalid_argument(fmt::format("-o {}: a pipe or a device, not a file: name a file (or - for the "
                                              "console, /dev/null for nothing)",
                                              path));
    std::ofstream out(path, std::ios::binary);
    out << text << std::flush;
    return;
  }
  support::write_file_atomically(path, text);
}

void refuse_console(const std::string& output, const std::string& option, const std::string& what) {
  if (output == "-")
    throw std::invalid_argument(fmt::format("{} -: {} does not go to the console ('-' is the console only for text "
                                            "outputs): name a file (./- for a file named '-')",
                                            option, what));
}

void refuse_run_folder_in_init(const std::filesystem::path& run_folder, const std::string& init) {
  std::error_code ec;
  if (init.empty() || !std::filesystem::is_directory(init, ec)) return;
  const std::filesystem::path folder = support::resolved_path(init), run = support::resolved_path(run_folder);
  if (run.empty() || !support::is_within(run, folder)) return;
  throw std::invalid_argument(fmt::format("--checkpoint-dir {}: {} --init {}, the model folder the run starts from: "
                                          "its checkpoints and metrics would go among the model's files; choose "
                                          "another --checkpoint-dir",
                                          run_folder.string(), run == folder ? "is" : "is inside", init));
}

void refuse_output_onto_input(const std::string& output, const std::string& option,
                              std::initializer_list<std::pair<std::string, std::string>> inputs) {
  if (output.empty() || output == "-") return;
  std::error_code ec;
  const std::filesystem::path out = support::resolved_path(output);
  for (const auto& [input, what] : inputs) {
    if (input.empty()) continue;
    const std::filesystem::path in = support::resolved_path(input);
    const bool same = std::filesystem::equivalent(output, input, ec) || (!in.empty() && out == in);
    const bool inside = std::filesystem::is_directory(input, ec) && support::is_within(out, in);
    if (same || inside)
      throw std::invalid_argument(fmt::format("{} {}: {} {} ({}), which this command reads: writing it would destroy "
                                              "it; give another {}",
                                              option, output, same ? "is" : "is inside", what, input,
                                              // (--dump-ir writes a folder of stages)
                                              option == "--dump-ir" || std::filesystem::is_directory(output, ec)
                                                  ? "folder"
                                                  : "file"));
  }
}

void refuse_output_in_dump(const std::string& output, const std::string& dump) {
  if (output.empty() || output == "-" || dump.empty()) return;
  const std::filesystem::path out = support::resolved_path(output), folder = support::resolved_path(dump);
  if (!support::is_within(out, folder)) return;
  throw std::invalid_argument(fmt::format("-o {}: {} the --dump-ir folder {}, whose files are the dump's (each stage's "
                                          "IR and stages.txt, written before -o): write -o outside that folder",
                                          output, out == folder ? "is" : "is inside", dump));
}

void refuse_replacing_other_than_compile_output(const std::string& output, CompileOutput kind) {
  if (output.empty() || output == "-") return;
  std::error_code ec;
  const std::filesystem::file_status own = std::filesystem::symlink_status(output, ec);
  if (ec || own.type() == std::filesystem::file_type::not_found) return;
  // (a device or a pipe, /dev/null say, is written into as a stream: write_output; a program is a
  // file, never a device's replacement)
  if (kind == CompileOutput::Text && support::resolved_path(output) == "/dev/null") return;
  if (const auto type = std::filesystem::status(output, ec).type();
      type == std::filesystem::file_type::character || type == std::filesystem::file_type::fifo ||
      type == std::filesystem::file_type::block || type == std::filesystem::file_type::socket)
    throw std::invalid_argument(fmt::format("-o {}: a pipe or a device, not a file: name a file (or - for the "
                                            "console, /dev/null for nothing)",
                                            output));
  // (a folder said as one: "remove it first" of a working folder is no advice)
  if (std::filesystem::is_directory(output, ec))
    throw std::invalid_argument(fmt::format("-o {}: a folder, and -o names a file (such as {}): give a file's path",
                                            output,
                                            (std::filesystem::path(output) / (kind == CompileOutput::Program
                                                                                   ? "model.bertx"
                                                                                   : kind == CompileOutput::Executable
                                                                                         ? "train-model"
                                                                                         : "out.txt"))
                                                .string()));
  if (std::filesystem::is_regular_file(output, ec)) {
    if (std::filesystem::file_size(output, ec) == 0) return;  // (an empty file: mktemp's, nothing to lose)
    if (kind == CompileOutput::Program && codegen::is_bertx(output)) return;
    if (kind == CompileOutput::Executable && embedded_program(output)) return;
    if (kind == CompileOutput::Text) {
      std::ifstream in(output, std::ios::binary);
      std::string start(64, '\0');
      in.read(start.data(), static_cast<std::streamsize>(start.size()));
      start.resize(static_cast<size_t>(in.gcount()));
      for (const char* signature : {"graph @", "compile report: ", "// Kernels of the training program"})
        if (start.starts_with(signature)) return;
      // --emit stats: "model       NAME (model KIND, CONFIG, ...)"
      if (start.starts_with("model ") && start.find(" (model ") != std::string::npos) return;
    }
  }
  const char* what = kind == CompileOutput::Program ? "a compiled program (.bertx)"
                     : kind == CompileOutput::Executable ? "a training executable"
                                                         : "IR, a report, stats or kernels that bertc compile wrote";
  const std::string found = support::content_kind(output);  // (a .bertx given to a text output: said as that)
  throw std::invalid_argument(fmt::format("-o {}: exists, and is {}not {}: bertc compile replaces only its own output "
                                          "(params and JSON listings are replaced by none: remove the file first); give "
                                          "a new file, or remove this one first if it is yours to lose (-o - writes to "
                                          "the console)",
                                          output, found.empty() ? "" : found + ", ", what));
}

void refuse_output_among_text(const std::string& folder, const std::string& option, const std::string& own) {
  if (folder.empty()) return;
  if (const std::optional<std::filesystem::path> text = data::text_file_in(folder, own))
    throw std::invalid_argument(fmt::format("{} {}: holds training text ({}), and the {} written there would be read "
                                            "as text by a run on that folder: give {} a folder of its own",
                                            option, folder, text->filename().string(), own, option));
}

void refuse_metrics_in_another_run_folder(const std::filesystem::path& metrics, const std::filesystem::path& run_folder) {
  std::error_code ec;
  const std::filesystem::path folder = support::resolved_path(metrics).parent_path();
  if (folder == support::resolved_path(run_folder)) return;
  if (!std::filesystem::exists(folder / ".bertc-lock", ec)) return;
  throw std::invalid_argument(fmt::format("--metrics {}: in the run folder {} of another run (its .bertc-lock), whose "
                                          "own metrics there would be set aside and its history split between "
                                          "files: name a file outside it",
                                          metrics.string(), folder.string()));
}

std::string through_output_link(const std::string& output) {
  if (output.empty() || output == "-") return output;
  std::filesystem::path p = output;
  std::error_code ec;
  for (int links = 0; links < 40; ++links) {
    if (std::filesystem::symlink_status(p, ec).type() != std::filesystem::file_type::symlink) return p.string();
    const std::filesystem::path target = std::filesystem::read_symlink(p, ec);
    if (ec) return output;
    p = (target.is_absolute() ? target : p.parent_path() / target).lexically_normal();
  }
  return output;  // (a loop: refuse_dangling_link says so)
}

void refuse_dangling_link(const std::string& output, const std::string& option) {
  if (output.empty() || output == "-") return;
  std::error_code ec;
  for (std::filesystem::path p = std::filesystem::path(output).lexically_normal(); !p.empty() && p != p.parent_path();
       p = p.parent_path()) {
    if (p.filename().empty()) continue;  // ("dir/": its folder)
    if (std::filesystem::symlink_status(p, ec).type() != std::filesystem::file_type::symlink) continue;
    if (std::filesystem::exists(p, ec)) continue;
    if (ec == std::errc::permission_denied)
      throw std::invalid_argument(fmt::format("{} {}: {} is a link to {}, which this user may not reach (permission "
                                              "denied): give {} a path you may write, or ask for access to it",
                                              option, output, p.string(), std::filesystem::read_symlink(p).string(),
                                              option));
    if (ec == std::errc::too_many_symbolic_link_levels)
      throw std::invalid_argument(fmt::format("{} {}: {} is a link in a loop of links (each leads to the next, and "
                                              "back): point it at a real folder or file, or give {} another path",
                                              option, output, p.string(), option));
    const std::filesystem::path target = std::filesystem::read_symlink(p, ec);
    throw std::invalid_argument(fmt::format("{} {}: {} is a link to {}, which does not exist (a disk not mounted, a "
                                            "target removed?): make {} (or mount it), or give {} a path without that "
                                            "link",
                                            option, output, p.string(), target.string(), target.string(), option));
  }
}

void refuse_checkpoint_name(const std::string& output, const std::string& option, const std::string& what) {
  if (output.empty() || output == "-") return;
  // (A name --resume would take for the run's newest checkpoint, in whatever folder it goes.)
  if (run_folder::checkpoint_step_of(std::filesystem::path(output).lexically_normal().filename().string()))
    throw std::invalid_argument(fmt::format("{} {}: named as a checkpoint (checkpoint-N.safetensors), and {} is none: "
                                            "--resume in that folder would take it for the run's newest: name it "
                                            "otherwise",
                                            option, output, what));
}

void refuse_replacing_another_kind(const std::string& output, const std::string& option, const std::string& format) {
  if (output.empty() || output == "-") return;
  refuse_checkpoint_name(output, option, "a " + format + " file");
  std::error_code ec;
  const std::filesystem::file_status own = std::filesystem::symlink_status(output, ec);
  if (ec || own.type() == std::filesystem::file_type::not_found) return;
  std::string kind = "not a safetensors file";
  if (std::filesystem::is_regular_file(output, ec) && std::filesystem::file_size(output, ec) == 0) return;  // (mktemp's)
  if (std::filesystem::is_regular_file(output, ec)) {
    try {
      const auto metadata = support::read_safetensors_metadata(output);
      const auto it = metadata.find("format");
      if (it != metadata.end() && it->second == format) return;
      kind = it == metadata.end() ? "a safetensors file of no bertc format" : "a " + it->second + " file";
    } catch (const std::exception&) {
    }
  } else if (std::filesystem::is_directory(output, ec)) {
    kind = "a folder";
  } else if (std::filesystem::exists(output, ec)) {
    kind = "a device or a pipe, not a file";
  } else if (own.type() == std::filesystem::file_type::symlink && !std::filesystem::exists(output, ec)) {
    kind = "a link to a file that does not exist";
  }
  throw std::invalid_argument(fmt::format("{} {}: exists, and is {}, not a {} file this command wrote: give a new "
                                          "file (nothing is written over but this command's own output)",
                                          option, output, kind, format));
}

}  // namespace bertc::driver
