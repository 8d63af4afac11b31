// Which registers an instruction reads and which it writes: what the timing model's dependences
// and the counters' address analysis follow.
#pragma once

#include <vector>

#include "ptx/module.h"

namespace bertc::ptx {

// Whether `in` writes its first operand (a destination register or vector) rather than reading it
// (a store's or a copy's address) or having none.
bool writes_first_operand(const Instruction& in);
// The registers operand `o` names, appended to `out`: itself, an address's base, a vector's elements.
void registers_of(const Operand& o, std::vector<int>& out);
// The registers `in` reads (its guard included) and those it writes.
std::vector<int> registers_read(const Instruction& in);
std::vector<int> registers_written(const Instruction& in);

}  // namespace bertc::ptx
