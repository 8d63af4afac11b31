// The compile options as command-line flags: one per option of passes/options.def, declared from
// its spec into driver::CompileFlags. For every program that compiles: bertc compile, train, check,
// estimate and finetune, model programs, the benchmarks.
#pragma once

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "driver/compile_flags.h"
#include "passes/options.h"

namespace bertc::tools {

// A boolean that defaults to false is a flag (--print-ir-after-all); one that defaults to true
// takes a value (--fusion false). Each given flag overrides its [compile] key.
inline void add_compile_flags(CLI::App* command, driver::CompileFlags& flags) {
  for (const auto& spec : passes::compile_option_specs()) {
    std::optional<std::string>& slot = flags.value_of(spec.key);
    std::string help(spec.doc);
    if (!spec.choices.empty()) help += fmt::format(" ({})", fmt::join(spec.choices, ", "));
    if (spec.kind == support::ValueKind::Bool && spec.default_text == "false") {
      command->add_flag(spec.flag(), slot, help);
    } else {
      command->add_option(spec.flag(), slot,
                          help + fmt::format(" [default: {}]", spec.default_text.empty() ? "none" : spec.default_text));
    }
  }
}

}  // namespace bertc::tools
