// The instruction mix of a kernel's main loop, read from its PTX: how many math instructions
// (fma, mma) the innermost loop issues per shared-memory load (ld.shared, ldmatrix). Scalar
// shared loads cap a SIMT GEMM's issue rate well below FP32 peak; this is the figure that says so
// without a GPU (`bertc compile --report`, tests/kernels/program_test.cpp).
#pragma once

#include <string>

namespace bertc::codegen {

struct LoopMix {
  int math = 0;          // fma.* and mma.* instructions in the loop body
  int shared_loads = 0;  // ld.shared* and ldmatrix* instructions in the loop body
  bool found() const { return math > 0; }
  // Math instructions per shared load; the math count when the loop loads nothing from shared.
  double math_per_load() const { return shared_loads ? static_cast<double>(math) / shared_loads : math; }
};

// The mix of the loop (a label and a later branch back to it) with the most math instructions of
// its own (not in a loop nested inside it); an empty mix when no loop does math.
LoopMix main_loop_mix(const std::string& ptx);

}  // namespace bertc::codegen
