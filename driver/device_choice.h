// Which device a command runs on (--device): the names it accepts, their help, and auto's choice.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/options.h"

namespace bertc::driver {

// The registry's device names after `first`, for --device's choices.
std::vector<std::string> device_names(std::vector<std::string> first);

// "host (the compiled plan's kernels under ...), cuda (GPU 0 ...)".
std::string devices_help();

// The device training runs on (nullopt: the CPU reference executor), said on stderr with the
// reason, never silently. auto takes the first device of the registry that its probe finds and
// that may be chosen automatically (run on real hardware), else the CPU reference; its caveat
// (where it has not run yet) is said with it.
std::optional<std::string> choose_device(const std::string& requested);

// The device a compiled program runs on: auto is the first device of the registry that may be
// chosen automatically and that its probe finds (a GPU: the program was compiled for one, and
// there is no reference to fall back to), else an error naming `source` and what each probe found.
std::string choose_device_for_compiled(const std::string& requested, const std::string& source);

// Refuses a precision the chosen device would not compute (nullopt: the CPU reference, which runs
// the IR: tf32 is its products' inputs rounded in the compiled kernels, so its numbers would be
// fp32's, said as tf32's), naming the devices that do. `command`: "train", "finetune".
void require_precision_computed(passes::Precision precision, const std::optional<std::string>& device,
                                const std::string& command);

}  // namespace bertc::driver
