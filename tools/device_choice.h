// Which device a command runs on (--device): the names it accepts, their help, and auto's choice.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace bertc::tools {

// The registry's device names after `first`, for --device's choices.
std::vector<std::string> device_names(std::vector<std::string> first);

// "host (the compiled plan's kernels under ...), cuda (GPU 0 ...)".
std::string devices_help();

// The device training runs on (nullopt: the CPU reference executor), said on stderr with the
// reason, never silently. auto takes the first device of the registry that its probe finds and
// that may be chosen automatically (run on real hardware), else the CPU reference; its caveat
// (where it has not run yet) is said with it.
std::optional<std::string> choose_device(const std::string& requested);

}  // namespace bertc::tools
