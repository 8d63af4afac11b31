// Writing a tool's output: to stdout, or to a file replaced atomically (never half-written).
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>

namespace bertc::driver {

// path "" or "-" means stdout. Throws std::runtime_error naming the file on failure.
void write_output(const std::string& path, const std::string& text);

// Throws std::invalid_argument when `output` is "-", which means the console for text outputs
// (write_output) and which `what` (a .bertx, a batch: binary, or a folder) cannot go to: it would
// be written as a file named "-".
void refuse_console(const std::string& output, const std::string& option, const std::string& what);

// Throws std::invalid_argument when `output` is one of `inputs` (the same file, through any path or
// link) or inside one that is a folder: writing it would destroy what the command reads. Each
// input is (path, what it is: "--init", "the config", ...); empty paths are skipped.
void refuse_output_onto_input(const std::string& output, const std::string& option,
                              std::initializer_list<std::pair<std::string, std::string>> inputs);

// Throws std::invalid_argument when `output` is inside the --dump-ir folder `dump` (existing yet or
// not): the dump writes its stages and stages.txt there after the pipeline, and -o written after it
// replaced one of them (a dump whose stages.txt no longer replays it, exit 0).
void refuse_output_in_dump(const std::string& output, const std::string& dump);

// Throws std::invalid_argument when `output` exists and is not a safetensors file whose metadata
// "format" is `format` (what this command writes, and may write again): a slip of -o must not
// replace a checkpoint, a model or anything else. "" and "-" pass.
void refuse_replacing_another_kind(const std::string& output, const std::string& option, const std::string& format);

// What bertc compile writes to -o, for refuse_replacing_other_than_compile_output.
enum class CompileOutput { Program, Executable, Text };

// Throws std::invalid_argument when `output` exists and is not bertc compile's own output of
// `kind` (which compile may write again): a .bertx for a program, a training executable for
// --executable, and for text a file that begins as compile's IR ("graph @"), report ("compile
// report: ") or CUDA source does. Anything else — a checkpoint, training text, notes, a lock, a
// stats or params listing — is refused, so -o never costs a file ("" and "-" pass).
void refuse_replacing_other_than_compile_output(const std::string& output, CompileOutput kind);

// Throws std::invalid_argument when the folder `folder` (given to `option`: --dump-ir) holds
// training text (.txt, .txt.gz) other than `own` (the file the option writes there, stages.txt):
// what it writes would be read as text by a run on that folder.
void refuse_output_among_text(const std::string& folder, const std::string& option, const std::string& own);

// Throws std::invalid_argument when the run folder `run_folder` is the folder `init` (a Hugging
// Face folder the run starts from) or inside it: the run's checkpoints and metrics would go among
// the model's files (it was --metrics that was blamed, an option not given). "" passes.
void refuse_run_folder_in_init(const std::filesystem::path& run_folder, const std::string& init);

// Throws std::invalid_argument when `metrics` goes into another run's folder (one a bertc run has
// locked: its .bertc-lock) than `run_folder`: that run's own metrics.jsonl there would be set aside
// and its history split between files.
void refuse_metrics_in_another_run_folder(const std::filesystem::path& metrics, const std::filesystem::path& run_folder);

// Throws std::invalid_argument when `output` is named as a checkpoint (checkpoint-N.safetensors),
// which `what` (a vocabulary, a compiled program, a folder of IR) is not: --resume would take it for
// a run's newest. "" and "-" pass.
void refuse_checkpoint_name(const std::string& output, const std::string& option, const std::string& what);

// Where `output` is written: when its last component is a symbolic link (to a file or a folder,
// there or not yet), the path it leads to, followed through up to 40 links; else `output`. Every
// command's output goes through a link to where it leads (the link stays a link), as --metrics
// does: replacing the link, or refusing it, left its target as it was. "" and "-" are returned as
// they are.
std::string through_output_link(const std::string& output);

// Throws std::invalid_argument when `output` (or a folder on its way) is a link to something that
// does not exist — a mount point not mounted, a target removed: a command would make a folder or
// file where the link is, or remove the link when it fails. "" and "-" pass.
void refuse_dangling_link(const std::string& output, const std::string& option);

}  // namespace bertc::driver
