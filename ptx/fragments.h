// Where each element of an mma.sync's A, B, C and D fragments lies in its matrices, per lane: the
// tables of the PTX ISA's "Matrix Fragments for mma.m8n8k4 / m16n8k8 / m16n8k16" sections.
#pragma once

#include <cstdint>
#include <string>

#include "ptx/opcode.h"

namespace bertc::ptx {

enum class Fragment { A, B, C };  // (D's places are C's)

// The shape and types of one mma.sync form the emulator models: M x K times K x N plus M x N, done
// `computations` times per warp (m8n8k4: four, one per quad-pair), with `count(f)` elements per
// lane and `per_register(f)` of them packed in each of the fragment's registers.
struct MmaForm {
  int m = 0, n = 0, k = 0;
  int computations = 1;
  Type input = Type::F16;  // f16, bf16 or tf32; accumulators are f32
  int count(Fragment f) const;
  int per_register(Fragment f) const;
};

// The form `op` names, or a description of what is not modelled in `problem` (false returned).
// Modelled: .row.col with f32 accumulators of m8n8k4 (f16), m16n8k8 (f16, bf16, tf32) and
// m16n8k16 (f16, bf16) — the forms codegen's kernels use.
bool mma_form(const Opcode& op, MmaForm& form, std::string& problem);

// Where element `i` of `lane`'s fragment `f` lies: which of the warp's computations, and its row
// and column in that computation's matrix (A: M x K, B: K x N, C and D: M x N).
struct Place {
  int computation = 0, row = 0, col = 0;
};
Place fragment_place(const MmaForm& form, Fragment f, uint32_t lane, int i);

}  // namespace bertc::ptx
