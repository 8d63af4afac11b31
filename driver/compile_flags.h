// The compile options given as command-line flags (passes/options.def), for every program that
// compiles: bertc compile, train and check, model programs, the benchmarks. The values only: the
// command line declares one flag per option (tools/compile_flag_options.h) into value_of().
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "passes/options.h"

namespace bertc::driver {

// One flag per compile option, made from its declaration; each given one overrides its
// [compile] key. A boolean that defaults to false is a flag (--print-ir-after-all); one that
// defaults to true takes a value (--fusion false).
class CompileFlags {
 public:
  CompileFlags();
  // The text given for option `key` (passes::OptionSpec::key), nullopt while it is not given;
  // where the command line writes. Throws std::out_of_range for a key options.def lacks.
  std::optional<std::string>& value_of(std::string_view key);
  // `options` with the given flags applied. Throws std::invalid_argument naming the flag for a
  // value it does not take.
  passes::CompileOptions apply(passes::CompileOptions options) const;
  // The flags given on the command line ("--precision", ...), in declaration order.
  std::vector<std::string> given() const;
  // Those of the given flags whose value is not already `options`'s (a compiled program's: giving
  // its own arch or precision again changes nothing).
  std::vector<std::string> changes(const passes::CompileOptions& options) const;

 private:
  std::map<std::string, std::optional<std::string>> given_;
};

// Arch and precision made concrete for this machine: auto is the GPU the CUDA driver sees, else none.
passes::CompileOptions resolve_here(const passes::CompileOptions& options);
// The arch alone, as resolve_here makes it (none of the options' other checks).
passes::Arch arch_here(const passes::Arch& asked);

}  // namespace bertc::driver
