// Instruction classes and FLOPs (counters.h), decided by the decoded opcode.
#include "ptx/counters.h"

#include <algorithm>
#include <set>

#include "ptx/fragments.h"
#include "ptx/operands.h"

namespace bertc::ptx {
namespace {

bool shared_space(const Opcode& op) { return op.has(Mod::shared); }

}  // namespace

std::string_view class_name(InstructionClass c) {
  static constexpr std::array<std::string_view, kInstructionClasses> names = {
      "float fma", "float other", "mma", "shared load", "shared store", "global load",
      "global store", "async copy", "barrier", "warp exchange", "atomic", "address", "other"};
  return names.at(static_cast<size_t>(c));
}

uint32_t access_bytes(const Instruction& in) {
  const Opcode& op = in.opcode;
  const InstructionClass c = class_of(in);
  if (c != InstructionClass::SharedLoad && c != InstructionClass::SharedStore && c != InstructionClass::GlobalLoad &&
      c != InstructionClass::GlobalStore)
    return 0;
  if (op.has(Mod::param) || op.has(Mod::Const)) return 0;  // (kernel parameters and constants: no memory traffic of the data's)
  if (op.op == Op::Ldmatrix) return 4u * (op.has(Mod::x4) ? 4 : op.has(Mod::x2) ? 2 : 1);
  if (op.types.empty()) return 0;
  const uint32_t elements = op.has(Mod::v4) ? 4 : op.has(Mod::v2) ? 2 : 1;
  return elements * std::max(1, type_bits(op.type(op.types.size() - 1)) / 8);
}

size_t access_width_index(uint32_t bytes) {
  size_t i = 0;
  while (i + 1 < kAccessWidths && kAccessWidthBytes[i] < bytes) ++i;
  return i;
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
    case Op::Shfl:
    case Op::Vote:
    case Op::Match: return InstructionClass::WarpExchange;
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

namespace {

// The lanes one phase serves: a warp for accesses of 4 bytes or fewer, a half-warp for 8, a
// quarter-warp for 16.
uint32_t lanes_a_phase(const std::vector<LaneAccess>& request) {
  uint32_t widest = 4;
  for (const LaneAccess& a : request) widest = std::max(widest, a.bytes);
  return widest >= 16 ? 8 : widest >= 8 ? 16 : 32;
}

}  // namespace

uint64_t shared_wavefronts(const std::vector<LaneAccess>& request) {
  const uint32_t per_phase = lanes_a_phase(request);
  // (phase, bank, word) of every word touched, packed in one integer (a phase below 32, a bank
  // below 32, a word of shared memory below 2^32), sorted and made unique: then the longest run of
  // one (phase, bank) is that phase's wavefronts. No map or set, and integers rather than tuples
  // to sort: this runs for every request.
  std::vector<uint64_t> touched;
  touched.reserve(request.size() * 4);
  for (const LaneAccess& a : request)
    for (uint64_t word = a.offset / 4; word <= (a.offset + std::max<uint32_t>(a.bytes, 1) - 1) / 4; ++word)
      touched.push_back((uint64_t{a.lane / per_phase} << 37) | ((word % 32) << 32) | (word & 0xffffffffu));
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  std::array<uint64_t, 32> most{};  // per phase (at most 4; 32 for safety)
  for (size_t i = 0; i < touched.size();) {
    size_t j = i;
    while (j < touched.size() && touched[j] >> 32 == touched[i] >> 32) ++j;  // (one phase and bank)
    uint64_t& phase = most.at(touched[i] >> 37);
    phase = std::max<uint64_t>(phase, j - i);
    i = j;
  }
  uint64_t wavefronts = 0;
  for (uint64_t m : most) wavefronts += m;
  return wavefronts;
}

uint64_t global_sectors(const std::vector<LaneAccess>& request) {
  std::vector<uint64_t> sectors;
  sectors.reserve(request.size() * 2);
  for (const LaneAccess& a : request)
    for (uint64_t s = a.offset / 32; s <= (a.offset + std::max<uint32_t>(a.bytes, 1) - 1) / 32; ++s) sectors.push_back(s);
  std::sort(sectors.begin(), sectors.end());
  return static_cast<uint64_t>(std::unique(sectors.begin(), sectors.end()) - sectors.begin());
}

uint64_t global_ideal_sectors(const std::vector<LaneAccess>& request) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) of each lane's bytes
  ranges.reserve(request.size());
  for (const LaneAccess& a : request) ranges.emplace_back(a.offset, a.offset + std::max<uint32_t>(a.bytes, 1));
  std::sort(ranges.begin(), ranges.end());
  uint64_t distinct = 0, covered_to = 0;
  for (const auto& [begin, end] : ranges) {
    const uint64_t from = std::max(begin, covered_to);
    if (end > from) distinct += end - from;
    covered_to = std::max(covered_to, end);
  }
  return (distinct + 31) / 32;
}

uint64_t shared_phases(const std::vector<LaneAccess>& request) {
  const uint32_t per_phase = lanes_a_phase(request);
  std::set<uint32_t> phases;
  for (const LaneAccess& a : request) phases.insert(a.lane / per_phase);
  return phases.size();
}

std::vector<InstructionClass> classes_of(const Entry& entry) {
  std::vector<InstructionClass> classes;
  for (const Instruction& in : entry.body) classes.push_back(class_of(in));
  std::vector<char> feeds(entry.registers.size(), 0);  // per register: an address is computed from it
  for (const Instruction& in : entry.body)
    for (const Operand& o : in.operands)
      if (o.kind == Operand::Kind::Address && o.reg >= 0 && static_cast<size_t>(o.reg) < feeds.size()) feeds[o.reg] = 1;
  // (backwards to a fixed point, last instruction first, as an address is computed before its
  // access: each pass marks the writers of marked registers and their sources; registers are many
  // writers' in loops, so every writer of one is marked)
  std::vector<std::vector<int>> written(entry.body.size()), read(entry.body.size());
  for (size_t i = 0; i < entry.body.size(); ++i) {
    if (classes[i] != InstructionClass::Other) continue;
    written[i] = registers_written(entry.body[i]);
    read[i] = registers_read(entry.body[i]);
    if (entry.body[i].guard) read[i].erase(read[i].begin());  // (whether it runs, not what it computes)
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = entry.body.size(); i-- > 0;) {
      if (classes[i] != InstructionClass::Other ||
          std::none_of(written[i].begin(), written[i].end(), [&](int r) { return feeds[static_cast<size_t>(r)] != 0; }))
        continue;
      classes[i] = InstructionClass::Address;
      changed = true;
      for (int r : read[i]) feeds[static_cast<size_t>(r)] = 1;
    }
  }
  return classes;
}

}  // namespace bertc::ptx
