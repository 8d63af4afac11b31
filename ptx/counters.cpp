// Instruction classes and FLOPs (counters.h), decided by the decoded opcode.
#include "ptx/counters.h"

#include <algorithm>

#include "ptx/fragments.h"

namespace bertc::ptx {
namespace {

bool is_packed(Type t) { return t == Type::F16x2 || t == Type::Bf16x2; }

bool shared_space(const Opcode& op) { return op.has(Mod::shared); }

}  // namespace

std::string_view class_name(InstructionClass c) {
  static constexpr std::array<std::string_view, kInstructionClasses> names = {
      "float fma", "float other", "mma", "shared load", "shared store", "global load",
      "global store", "async copy", "barrier", "shuffle", "atomic", "other"};
  return names.at(static_cast<size_t>(c));
}

InstructionClass class_of(const Instruction& in) {
  const Opcode& op = in.opcode;
  switch (op.op) {
    case Op::Mma: return InstructionClass::Mma;
    case Op::Ldmatrix: return InstructionClass::SharedLoad;
    case Op::Ld: return shared_space(op) ? InstructionClass::SharedLoad : InstructionClass::GlobalLoad;
    case Op::St: return shared_space(op) ? InstructionClass::SharedStore : InstructionClass::GlobalStore;
    case Op::Cp: return InstructionClass::AsyncCopy;
    case Op::Bar:
    case Op::Membar:
    case Op::Fence: return InstructionClass::Barrier;
    case Op::Shfl: return InstructionClass::Shuffle;
    case Op::Atom:
    case Op::Red: return InstructionClass::Atomic;
    case Op::Fma:
    case Op::Mad:
      return !op.types.empty() && is_float(op.type(0)) ? InstructionClass::FloatFma : InstructionClass::Other;
    default: break;
  }
  if (op.op != Op::Setp && op.op != Op::Mov && !op.types.empty() && is_float(op.type(0)))
    return InstructionClass::FloatOther;
  return InstructionClass::Other;
}

double flops_of(const Instruction& in) {
  const InstructionClass c = class_of(in);
  if (c == InstructionClass::Mma) {
    MmaForm form;
    std::string problem;
    if (!mma_form(in.opcode, form, problem)) return 0;
    return 2.0 * form.m * form.n * form.k * form.computations / 32;
  }
  // (arithmetic only: a move, a comparison, a conversion, min, max, abs or neg is no FLOP; a
  // special function one; a packed pair two values)
  static constexpr std::array<Op, 11> arithmetic = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rcp, Op::Sqrt,
                                                    Op::Rsqrt, Op::Ex2, Op::Lg2, Op::Sin, Op::Cos};
  if (c != InstructionClass::FloatFma && c != InstructionClass::FloatOther) return 0;
  const double values = is_packed(in.opcode.type(0)) ? 2 : 1;  // (float classes have a type)
  if (c == InstructionClass::FloatFma) return 2 * values;
  if (c == InstructionClass::FloatOther &&
      (in.opcode.op == Op::Tanh || std::find(arithmetic.begin(), arithmetic.end(), in.opcode.op) != arithmetic.end()))
    return values;
  return 0;
}

}  // namespace bertc::ptx
