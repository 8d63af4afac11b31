// The compile flags (see compile_flags.h).
#include "driver/compile_flags.h"

#include <stdexcept>

#include <fmt/format.h>

#include "cuda/cuda_driver.h"

namespace bertc::driver {

CompileFlags::CompileFlags() {
  for (const auto& spec : passes::compile_option_specs()) given_[std::string(spec.key)];
}

std::optional<std::string>& CompileFlags::value_of(std::string_view key) { return given_.at(std::string(key)); }

passes::CompileOptions CompileFlags::apply(passes::CompileOptions o) const {
  for (const auto& spec : passes::compile_option_specs()) {
    const std::optional<std::string>& text = given_.at(std::string(spec.key));
    if (!text) continue;
    const auto value = support::value_from_text(spec.kind, *text);
    if (!value)
      throw std::invalid_argument(fmt::format("{} {}", spec.flag(), support::why_no_value(spec.kind, *text)));
    if (auto problem = spec.set(o, *value)) throw std::invalid_argument(fmt::format("{} {}", spec.flag(), *problem));
  }
  return o;
}

std::vector<std::string> CompileFlags::changes(const passes::CompileOptions& options) const {
  std::vector<std::string> changed;
  for (const auto& spec : passes::compile_option_specs()) {
    if (!given_.at(std::string(spec.key))) continue;
    CompileFlags one;  // (this flag alone)
    one.value_of(spec.key) = given_.at(std::string(spec.key));
    if (!(one.apply(options) == options)) changed.push_back(spec.flag());
  }
  return changed;
}

std::vector<std::string> CompileFlags::given() const {
  std::vector<std::string> flags;
  for (const auto& spec : passes::compile_option_specs())
    if (given_.at(std::string(spec.key))) flags.push_back(spec.flag());
  return flags;
}

passes::Arch arch_here(const passes::Arch& asked) {
  if (!asked.is_auto()) return asked;
  const cuda::CudaDriverProbe probe = cuda::probe_cuda_driver();
  return probe.devices.empty() ? passes::Arch::none() : passes::Arch::of_sm(probe.devices[0].arch);
}

passes::CompileOptions resolve_here(const passes::CompileOptions& options) {
  return passes::resolve_options(options, arch_here(options.arch));
}

}  // namespace bertc::driver
