// The render target of compile options on an opened device: its arch, and matrix products kept
// off cuBLAS where the device has none it can run (so that no product is planned for a library
// that would fail at its first call).
#pragma once

#include <string>

#include "codegen/matrix_strategy.h"
#include "runtime/device.h"

namespace bertc::runtime {

// codegen::render_target(options, caps.sm), unless caps.no_library says cuBLAS cannot run there:
// then matmul = auto renders every product as a generated kernel and *note says why; matmul =
// library is refused (std::runtime_error naming why and --matmul generated).
codegen::RenderTarget device_render_target(const passes::CompileOptions& options, const DeviceCapabilities& caps,
                                           std::string* note);

}  // namespace bertc::runtime
