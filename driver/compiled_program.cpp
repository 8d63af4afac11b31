// Compiled programs as inputs (see compiled_program.h).
#include "driver/compiled_program.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/bertx_file.h"
#include "driver/training_executable.h"
#include "driver/version.h"
#include "ir/enum_names.h"
#include "support/file_errors.h"

namespace bertc::driver {

run_config::Config compiled_config(const codegen::CompiledProgram& p, const std::string& source, const CompileFlags& flags,
                                 const frontend::ModelDefinition& model) {
  if (p.model_program != model.name)
    throw std::invalid_argument(fmt::format("{}: compiled by the model program of '{}', and this is '{}''s: run it "
                                            "with the program that compiled it (bertc for bert; a bertc_add_model "
                                            "program for its model)",
                                            source, p.model_program, model.name));
  run_config::Config config = run_config::parse_config(p.config_text, source, model.extra_keys);
  config.name = p.model;
  config.compile = p.options;
  // (the debug flags show the compile's stages, which a compiled program has behind it)
  for (const std::string& f : flags.given())
    if (f == "--dump-ir" || f == "--print-ir-after-all")
      throw std::invalid_argument(fmt::format("{}: {} shows the stages of compiling, and {} is compiled already: "
                                              "compile its config with it (bertc compile CONFIG {} ...)",
                                              source, f, source, f == "--dump-ir" ? "--dump-ir DIR" : f));
  // (a flag that gives the program's own setting again changes nothing: taken)
  if (const std::vector<std::string> changed = flags.changes(p.options); !changed.empty()) {
    // (--arch none: no compiled program holds no kernels, so "compile it again" was refused; the
    // program's own kernels run on the host device as they are)
    // (--arch auto where no GPU is: none, as compile resolves it)
    // (the arch alone: resolving every option refused a budget with advice to add --recompute,
    // which a compiled program refuses in turn)
    if (const passes::Arch asked = flags.apply(p.options).arch; arch_here(asked).text() == "none")
      throw std::invalid_argument(fmt::format(
          "{}: --arch {} asks for no GPU's kernels{}, and a compiled program holds kernels built for one arch ({}'s, "
          "which the host and PTX devices run as they are): leave --arch out, or give the config in place of the "
          "file with --arch {}",
          source, asked.text(), asked.is_auto() ? " (auto, and this machine has no GPU)" : "", p.options.arch.text(),
          asked.text()));
    throw std::invalid_argument(fmt::format("{}: {} would change the compiled program ({} for {}, precision {}, recompute "
                                            "{}): compile it again with that setting (bertc compile CONFIG ... -o "
                                            "FILE.bertx, or --executable -o NAME), or use the config; or leave the "
                                            "flag out",
                                            source, fmt::join(changed, ", "), p.model, p.options.arch.text(),
                                            ir::enum_name(p.options.precision), ir::enum_name(p.options.recompute)));
  }
  return config;
}

std::optional<codegen::CompiledProgram> compiled_program_in(const std::string& path) {
  if (codegen::is_bertx(path)) return codegen::read_bertx(path);
  // (A file named .bertx that is none: said as such, not read as a config whose errors would say
  // what a TOML file lacks.)
  if (std::filesystem::path(path).extension() == ".bertx" && support::non_regular_kind(path).empty()) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(path, ec);
    if (!ec)
      throw std::invalid_argument(fmt::format("{}: named .bertx, and not a compiled program ({}): compile it again "
                                              "(bertc compile CONFIG --arch ARCH -o {})",
                                              path,
                                              bytes == 0 ? "it is empty" : fmt::format("{} bytes, without its header",
                                                                                       bytes),
                                              path));
  }
  if (std::optional<std::string> bytes = embedded_program(path))
    return codegen::decode_bertx(*bytes, path, /*in_executable=*/true);
  return std::nullopt;
}

std::string executable_description(const std::string& program, const codegen::CompiledProgram& p) {
  std::string config;
  std::istringstream lines(p.config_text);
  for (std::string line; std::getline(lines, line);) config += "    " + line + "\n";
  return fmt::format("{}: a bertc training executable: {} compiled for {} (precision {}, recompute {}) by bertc {}, "
                     "kernels by NVRTC {}. `{} train` trains it on a GPU of that arch (or --device host, the "
                     "emulation) with no compiler; its config's relative paths are from this executable's folder "
                     "(--data and --vocab name others). Compiled from this config:\n{}",
                     program, p.model, p.options.arch.text(), ir::enum_name(p.options.precision),
                     ir::enum_name(p.options.recompute), bertc_version(), p.nvrtc_version, program, config);
}

}  // namespace bertc::driver
