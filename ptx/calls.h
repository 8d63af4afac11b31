// Calls of device functions (.func), run by inlining: each call in a kernel is followed by the
// body of the function it calls, with its own registers, locals and labels, so the executor's
// warps, reconvergence and checkers see one instruction stream.
#pragma once

#include "ptx/module.h"

namespace bertc::ptx {

// Expands every call in `module`'s entries, functions' own calls first.
// Pre: the module as the reader made it (labels resolved, call operands as module.h lays them out).
// Post: each call instruction is followed by its function's body, and given a fourth operand, a
// Label of the instruction after that body (where lanes its guard passes over go): the function's registers and
// .local variables appended to the entry's under names "NAME@FUNCTION#SITE", its parameters
// replaced by the call's arguments and its return parameters by the call's, and each of its ret
// given the instruction after the body as a Label operand (the executor branches there); every
// label of the entry moved with the instructions it names. `module.functions` stay as read.
// Throws ptx::Error naming the call's line for a function the module does not define (an
// .extern one: printf's vprintf, malloc), a recursive call (inlining cannot unroll it), and a call
// whose arguments or return parameters differ from the function's in number or size.
void inline_calls(Module& module);

}  // namespace bertc::ptx
