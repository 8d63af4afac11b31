// What the emulator counts of a launch's instructions: each executed instruction's class (issue
// 36's: float FMAs, tensor-core products, shared and global loads and stores, async copies,
// barriers, shuffles, the rest) and the floating-point operations it performs.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "ptx/module.h"

namespace bertc::ptx {

enum class InstructionClass {
  FloatFma,     // fma/mad of f32, f16x2, bf16x2 (two FLOPs a value)
  FloatOther,   // other float arithmetic (one FLOP a value), conversions, special functions
  Mma,          // mma.sync (the warp's product: 2 M N K FLOPs a computation)
  SharedLoad,   // ld.shared and ldmatrix
  SharedStore,  // st.shared
  GlobalLoad,   // ld of global, const or param memory, or a generic address
  GlobalStore,  // st of global memory, or a generic address
  AsyncCopy,    // cp.async and its commit and wait
  Barrier,      // bar, membar, fence
  Shuffle,      // shfl.sync
  Atomic,       // atom, red
  Other,        // integer arithmetic, addresses, comparisons, moves, control flow
};
inline constexpr size_t kInstructionClasses = 12;
std::string_view class_name(InstructionClass c);  // "float fma", ...

// The class of `in`, and the FLOPs one thread's execution of it performs (an mma: its warp's
// product over the 32 lanes that execute it together).
InstructionClass class_of(const Instruction& in);
double flops_of(const Instruction& in);

}  // namespace bertc::ptx
