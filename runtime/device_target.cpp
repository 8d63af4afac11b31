// Render targets on an opened device (see device_target.h).
#include "runtime/device_target.h"

#include <stdexcept>

#include <fmt/format.h>

namespace bertc::runtime {

codegen::RenderTarget device_render_target(const passes::CompileOptions& options, const DeviceCapabilities& caps,
                                           std::string* note) {
  codegen::RenderTarget target = codegen::render_target(options, caps.sm);
  if (caps.no_library.empty() || target.matmul == codegen::MatmulPolicy::Generated) return target;
  if (target.matmul == codegen::MatmulPolicy::Library)
    throw std::runtime_error(fmt::format("matmul library (--matmul, or [compile] matmul) runs products in cuBLAS, "
                                         "and {}: give --matmul generated (every product a generated kernel)",
                                         caps.no_library));
  target.matmul = codegen::MatmulPolicy::Generated;
  if (note)
    *note = fmt::format("matmul: every product is a generated kernel: {} (--matmul generated says so and silences "
                        "this)",
                        caps.no_library);
  return target;
}

}  // namespace bertc::runtime
