// What the emulator counts of a launch's instructions: each executed instruction's class (issue
// 36's: float FMAs, tensor-core products, shared and global loads and stores, async copies,
// barriers, warp exchanges (shuffles, votes, matches), the rest) and the floating-point
// operations it performs.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

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
  Barrier,      // bar (sync, arrive, red), membar, fence
  WarpExchange, // shfl.sync, vote.sync, match.sync: a warp's lanes exchanging values
  Atomic,       // atom, red
  Address,      // integer work whose results feed a memory address (classes_of's analysis)
  Other,        // other integer arithmetic, comparisons, moves, control flow
};
inline constexpr size_t kInstructionClasses = 13;
std::string_view class_name(InstructionClass c);  // "float fma", ...

// One lane's part of a warp's shared-memory request (one ld.shared/st.shared the warp's lanes
// execute together): its lane, the byte offset and the bytes it accesses.
struct LaneAccess {
  uint32_t lane = 0;
  uint64_t offset = 0;
  uint32_t bytes = 0;
};

// The wavefronts a request takes on the 32 banks of 4 bytes that every arch from sm_61 to sm_90
// has: accesses of 8 bytes are served a half-warp at a time and of 16 bytes a quarter-warp at a
// time; in each such phase, the most distinct 4-byte words that fall in one bank (lanes reading
// one word share it). One wavefront a phase is conflict-free; 32 is a 32-way conflict.
uint64_t shared_wavefronts(const std::vector<LaneAccess>& request);
// The wavefronts the same request would take without conflicts: its phases.
uint64_t shared_phases(const std::vector<LaneAccess>& request);

// The 32-byte sectors a warp's global request touches (a global ld/st, or a cp.async's read, that
// the warp's lanes execute together): the unit global memory moves in on every arch from sm_61 to
// sm_90, so 32 lanes loading consecutive 4-byte words take 4 sectors and lanes 128 bytes apart 32.
uint64_t global_sectors(const std::vector<LaneAccess>& request);
// The fewest sectors the request's distinct bytes could take, laid out side by side: what a
// coalesced access would move (lanes reading one word share it).
uint64_t global_ideal_sectors(const std::vector<LaneAccess>& request);

// The widths a lane's access takes (issue 36's "loads and stores by width"): 1, 2, 4, 8 and 16
// bytes, by index.
inline constexpr size_t kAccessWidths = 5;
inline constexpr uint32_t kAccessWidthBytes[kAccessWidths] = {1, 2, 4, 8, 16};
// The bytes one lane of `in` loads or stores, for a shared or global load or store (ld, st,
// ldmatrix: its matrices' 4 bytes each a lane; generic addresses counted as global); 0 for every
// other instruction, and for loads of parameters and constants.
uint32_t access_bytes(const Instruction& in);
// The index in kAccessWidthBytes of `bytes` (a power of two from 1 to 16).
size_t access_width_index(uint32_t bytes);

// The class of `in`, and the FLOPs one thread's execution of it performs (an mma: its warp's
// product over the 32 lanes that execute it together). Address work is told by classes_of only.
InstructionClass class_of(const Instruction& in);
// Every instruction's class in `entry`, address work told from the rest of the integer work: an
// instruction of class Other that writes a register an address is computed from — a memory
// access's address base (ld, st, atom, red, cp.async, ldmatrix), or a source of another such
// instruction, transitively (its guard aside). A register that feeds both an address and other work
// (a loop counter that also indexes) counts as address work: what an index costs is the point.
double flops_of(const Instruction& in);
std::vector<InstructionClass> classes_of(const Entry& entry);

}  // namespace bertc::ptx
