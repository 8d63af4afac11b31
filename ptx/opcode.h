// A PTX instruction's name decoded: its operation, its types in order, and its other modifiers,
// checked against the table of what each operation may carry (opcode.def).
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

namespace bertc::ptx {

// The ISA's fundamental types, and the packed and tensor-core ones bertc's kernels name.
enum class Type { Pred, B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F16, F16x2, Bf16, Bf16x2, Tf32, F32,
                  F64 };

// (inline: the executor asks it of nearly every operand)
constexpr int type_bits(Type t) {
  switch (t) {
    case Type::Pred: return 1;
    case Type::B8: case Type::U8: case Type::S8: return 8;
    case Type::B16: case Type::U16: case Type::S16: case Type::F16: case Type::Bf16: return 16;
    case Type::B64: case Type::U64: case Type::S64: case Type::F64: return 64;
    case Type::B32: case Type::U32: case Type::S32: case Type::F32: case Type::Tf32: case Type::F16x2:
    case Type::Bf16x2: return 32;
  }
  return 0;
}
// f16, bf16, tf32, f32, f64 (and the packed pairs); (inline, as type_bits)
constexpr bool is_float(Type t) {
  return t == Type::F16 || t == Type::F16x2 || t == Type::Bf16 || t == Type::Bf16x2 || t == Type::Tf32 ||
         t == Type::F32 || t == Type::F64;
}
// s8..s64
constexpr bool is_packed(Type t) { return t == Type::F16x2 || t == Type::Bf16x2; }  // (two values a register)
constexpr bool is_signed(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }
std::string type_name(Type t);  // "f32"
// The type a suffix names ("f32" -> F32), or false where it names none.
bool type_named(const std::string& suffix, Type& out);

enum class Op {
#define PTX_OP(e, name, modifiers, fewest, most, one_of) e,
#include "ptx/opcode.def"
#undef PTX_OP
};

// Every modifier a row of opcode.def may list (its spelling, less the dot; NaN as written).
enum class Mod {
  rn, rz, rm, rp, rni, rzi, rmi, rpi, rna, ftz, sat, cc, wide, lo, hi, approx, full, NaN, relu, satfinite,
  eq, ne, lt, le, gt, ge, ls, hs, equ, neu, ltu, leu, gtu, geu, num, nan, And, Or, Xor,
  to, global, shared, local, Const, param, Volatile, relaxed, acquire, release, acq_rel, sc, weak, cta, gpu, sys, gl,
  ca, cg, cs, lu, cv, nc, wb, wt, v2, v4, add, inc, dec, min, max, exch, cas, sync, arrive, red, warp, popc, uni,
  up, down, bfly, idx, all, any, ballot, aligned, m8n8, x1, x2, x4, trans, m8n8k4, m16n8k8, m16n8k16, row, col,
  async, commit_group, wait_group, wait_all, f4e, b4e, rc8, ecl, ecr, rc16, l, r, clamp, wrap,
  Count
};

std::string mod_name(Mod m);

struct Opcode {
  Op op = Op::Mov;
  std::vector<Type> types;  // in the order written
  std::bitset<static_cast<size_t>(Mod::Count)> mods;
  std::string text;  // as written ("ld.global.v4.f32")
  bool has(Mod m) const { return mods.test(static_cast<size_t>(m)); }
  Type type(size_t i = 0) const { return types.at(i); }
};

// Decodes `text`; throws std::invalid_argument saying what is not known (an operation, a modifier
// the operation does not take, a missing comparison or mode, the wrong number of types).
Opcode decode_opcode(const std::string& text);

}  // namespace bertc::ptx
