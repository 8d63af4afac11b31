// A PTX module as NVRTC emits it, read into entries of decoded instructions (issue 36's emulator
// runs these): the module's variables, each kernel's parameters, registers, shared and local
// variables, labels and instructions, every name resolved and every instruction decoded.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ptx/opcode.h"

namespace bertc::ptx {

// What the reader (and later the emulator) says of PTX it cannot take: "MODULE:LINE: what".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  // A finding at an instruction NVRTC gave a .loc (-lineinfo): the CUDA source's line, and the
  // line it was inlined at (0: not given), for the caller to show the source's own text.
  Error(const std::string& what, int source_line, int caller_line)
      : std::runtime_error(what), source_line(source_line), caller_line(caller_line) {}
  int source_line = 0, caller_line = 0;
};

// Where a variable lives (the PTX ISA's state spaces, less .reg, which registers are). An entry's
// Param variables are a call's parameters, declared in the braces around it (callseq): each
// thread has its own.
enum class Space { Global, Shared, Const, Local, Param };

// A .global / .const / .shared / .local variable: `bytes` of it, aligned to `align`, with its
// initial bytes where it has an initializer (empty: zeros, or none for .shared/.local).
struct Variable {
  std::string name;
  Space space = Space::Global;
  int align = 1;
  Type element = Type::B8;
  uint64_t bytes = 0;
  std::vector<uint8_t> init;
  int line = 0;
};

// A kernel parameter (.param): its offset in the parameter buffer, as the ISA lays them out
// (each at its alignment, in order).
struct Param {
  std::string name;
  Type type = Type::B64;
  uint64_t bytes = 0, offset = 0;
  int align = 1;
};

struct Register {
  std::string name;  // as declared ("%r12"; inline asm's locals get their scope's number: "a#3")
  Type type = Type::B32;
};

// The special registers bertc's kernels read (the ISA's %tid, %ntid, %ctaid, %nctaid, %laneid,
// %warpid...), component by component.
enum class Special { TidX, TidY, TidZ, NtidX, NtidY, NtidZ, CtaidX, CtaidY, CtaidZ, NctaidX, NctaidY, NctaidZ, Laneid,
                     Warpid, Nwarpid, Smid, Nsmid, LanemaskEq, LanemaskLe, LanemaskLt, LanemaskGe, LanemaskGt, DynamicSmemSize, Clock,
                     Clock64 };

struct Operand {
  // (NegatedPredicate: !%p, a predicate register read complemented, as vote.sync's and bar.red's
  // source may be written)
  enum class Kind { Register, NegatedPredicate, Special, Immediate, Float, Address, Vector, Symbol, Label, Sink };
  Kind kind = Kind::Sink;
  int reg = -1;          // Register, NegatedPredicate; Address: its base register (-1: a symbol or an absolute address)
  Special special = Special::TidX;
  int64_t value = 0;     // Immediate; Address: the byte offset; Float: the bits (f32 in the low 32)
  bool f64 = false;      // Float: 0d (64 bits), else 0f
  std::string symbol;    // Symbol (a variable or param name); Address: its base symbol
  int label = -1;        // Label: the index of the instruction it names
  std::vector<Operand> elements;  // Vector: its elements (registers or sinks)
};

// call{.uni} (r...), f, (a...): operands [Vector of the return parameters, Symbol f, Vector of the
// arguments] (empty vectors where none), each parameter a Symbol naming a Param variable.
// parse_module inlines every call (ptx/calls.h): the call stays as an instruction that does
// nothing but skip that body for lanes its guard passes over (a fourth operand, a Label of the
// instruction after it), and each ret of the body has a Label operand, the instruction after it.
struct Instruction {
  Opcode opcode;
  std::optional<int> guard;  // @%p: the predicate register
  bool guard_negated = false;  // @!%p
  std::vector<Operand> operands;
  // shfl.sync d|p, and setp's second destination: the predicate after the '|'
  std::optional<Operand> second_destination;
  int line = 0;
  // NVRTC's .loc before it (-lineinfo): the CUDA source's line, and where an inlined function's
  // line, the line it was inlined at (0: none given).
  int source_line = 0, caller_line = 0;
};

// A kernel (.entry) or a device function (.func).
struct Entry {
  std::string name;
  std::vector<Param> params;
  std::vector<Param> returns;  // a .func's return parameters (func_retval0...)
  bool defined = true;         // false: an .extern .func's declaration (no body)
  std::vector<Register> registers;
  std::vector<Variable> variables;  // its .shared and .local ones
  std::vector<Instruction> body;
  std::map<std::string, int> labels;  // name -> index in body
  int maxntid[3] = {0, 0, 0};         // .maxntid (0: not given): the block's threads at most their product
  int reqntid[3] = {0, 0, 0};         // .reqntid (0: not given): the block's shape, each dimension
  int minnctapersm = 0;
  int maxnreg = 0;                    // .maxnreg (0: not given): registers a thread at most
  int line = 0;
};

struct Module {
  std::string name;  // what errors name it by
  std::string version;
  int sm = 0;        // .target sm_NN
  int address_size = 64;
  std::vector<Variable> variables;  // module scope
  std::vector<Entry> entries;
  std::vector<Entry> functions;  // as read (their calls in entries are inlined)
  const Entry* entry(const std::string& name) const;
};

// Reads NVRTC's PTX. Throws ptx::Error ("NAME:LINE: what") for anything it does not read: a
// directive, an instruction or modifier not in the decoder's table, an undeclared register or
// label, a malformed operand — never skipping one.
Module parse_module(const std::string& text, const std::string& name);

}  // namespace bertc::ptx
