// Registers read and written by an instruction (see operands.h).
#include "ptx/operands.h"

namespace bertc::ptx {

bool writes_first_operand(const Instruction& in) {
  switch (in.opcode.op) {
    case Op::St:
    case Op::Red:
    case Op::Cp:
    case Op::Membar:
    case Op::Fence:
    case Op::Bra:
    case Op::Ret:
    case Op::Exit:
    case Op::Call: return false;
    case Op::Bar: return in.opcode.has(Mod::red);  // (bar.red's first operand is its result)
    default: return !in.operands.empty();
  }
}

void registers_of(const Operand& o, std::vector<int>& out) {
  using Kind = Operand::Kind;
  if ((o.kind == Kind::Register || o.kind == Kind::NegatedPredicate || o.kind == Kind::Address) && o.reg >= 0)
    out.push_back(o.reg);
  if (o.kind == Kind::Vector)
    for (const Operand& e : o.elements) registers_of(e, out);
}

std::vector<int> registers_read(const Instruction& in) {
  std::vector<int> out;
  if (in.guard) out.push_back(*in.guard);
  for (size_t i = writes_first_operand(in) ? 1 : 0; i < in.operands.size(); ++i) registers_of(in.operands[i], out);
  return out;
}

std::vector<int> registers_written(const Instruction& in) {
  std::vector<int> out;
  if (writes_first_operand(in)) registers_of(in.operands[0], out);
  if (in.second_destination) registers_of(*in.second_destination, out);
  return out;
}

}  // namespace bertc::ptx
