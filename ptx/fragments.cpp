// The mma.sync fragment tables (fragments.h), written from the PTX ISA's sections 9.7.14.5.1
// (m8n8k4, .f16), 9.7.14.5.7 (m16n8k8) and 9.7.14.5.8 (m16n8k16, floating point).
#include "ptx/fragments.h"

namespace bertc::ptx {

int MmaForm::count(Fragment f) const {
  const int lanes_per_computation = 32 / computations;
  switch (f) {
    case Fragment::A: return m * k / lanes_per_computation;
    case Fragment::B: return k * n / lanes_per_computation;
    case Fragment::C: return m * n / lanes_per_computation;
  }
  return 0;
}

// f16 and bf16 multiplicands come two to a .b32 register (.f16x2); tf32 ones and f32 accumulators
// one each.
int MmaForm::per_register(Fragment f) const {
  return f != Fragment::C && (input == Type::F16 || input == Type::Bf16) ? 2 : 1;
}

bool mma_form(const Opcode& op, MmaForm& form, std::string& problem) {
  if (op.types.size() != 4 || op.type(0) != Type::F32 || op.type(3) != Type::F32 || op.type(1) != op.type(2)) {
    problem = "only f32 accumulators, with A and B of one type, are modelled";
    return false;
  }
  // (the layouts' order matters — A's first — and the modifier set does not keep it)
  if (op.text.find(".row.col.") == std::string::npos) {
    problem = "only .row.col (A row-major, B column-major) is modelled";
    return false;
  }
  form.input = op.type(1);
  if (op.has(Mod::m8n8k4) && form.input == Type::F16) {
    form = {8, 8, 4, 4, Type::F16};
  } else if (op.has(Mod::m16n8k8) && (form.input == Type::F16 || form.input == Type::Bf16 || form.input == Type::Tf32)) {
    form = {16, 8, 8, 1, form.input};
  } else if (op.has(Mod::m16n8k16) && (form.input == Type::F16 || form.input == Type::Bf16)) {
    form = {16, 8, 16, 1, form.input};
  } else {
    problem = "only m8n8k4 (f16), m16n8k8 (f16, bf16, tf32) and m16n8k16 (f16, bf16) are modelled";
    return false;
  }
  return true;
}

namespace {

// m8n8k4: lanes 0-3 and 16-19 make computation 1, 4-7 and 20-23 computation 2, and so on; the
// high group (lanes 16 and up) holds rows (of A, C) or columns (of B) 4 to 7.
Place place_884(Fragment f, uint32_t lane, int i) {
  const int computation = static_cast<int>(lane % 16 / 4);
  const int high = lane >= 16 ? 4 : 0;
  const int l = static_cast<int>(lane);
  switch (f) {
    case Fragment::A: return {computation, l % 4 + high, i};                             // row-major A
    case Fragment::B: return {computation, i, l % 4 + high};                             // column-major B
    case Fragment::C: return {computation, (l & 1) + (i & 2) + high, (i & 4) + (l & 2) + (i & 1)};  // f32
  }
  return {};
}

// m16n8k8 and m16n8k16: groupID = lane / 4 and threadID_in_group = lane % 4, one computation.
Place place_168k(const MmaForm& form, Fragment f, uint32_t lane, int i) {
  const int group = static_cast<int>(lane / 4), tig = static_cast<int>(lane % 4);
  if (f == Fragment::C) return {0, group + (i >= 2 ? 8 : 0), 2 * tig + (i & 1)};
  if (form.input == Type::Tf32) {  // (m16n8k8 only)
    if (f == Fragment::A) return {0, group + (i & 1 ? 8 : 0), tig + (i >= 2 ? 4 : 0)};
    return {0, tig + (i == 1 ? 4 : 0), group};
  }
  if (form.k == 8) {
    if (f == Fragment::A) return {0, group + (i >= 2 ? 8 : 0), 2 * tig + (i & 1)};
    return {0, 2 * tig + i, group};
  }
  if (f == Fragment::A) return {0, group + (i % 4 >= 2 ? 8 : 0), 2 * tig + (i & 1) + (i >= 4 ? 8 : 0)};
  return {0, 2 * tig + (i & 1) + (i >= 2 ? 8 : 0), group};
}

}  // namespace

Place fragment_place(const MmaForm& form, Fragment f, uint32_t lane, int i) {
  return form.computations == 4 ? place_884(f, lane, i) : place_168k(form, f, lane, i);
}

}  // namespace bertc::ptx
