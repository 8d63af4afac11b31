// Calls of device functions, inlined (see calls.h).
#include "ptx/calls.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace bertc::ptx {
namespace {

class Inliner {
 public:
  explicit Inliner(Module& module) : module_(module) {}

  void run() {
    for (Entry& e : module_.entries) expand(e);
  }

 private:
  Module& module_;
  std::map<std::string, Entry> expanded_;  // functions with their own calls inlined
  std::vector<std::string> calling_;       // the functions being expanded, outermost first

  [[noreturn]] void fail(const Instruction& at, const std::string& what) const {
    throw Error(fmt::format("{}:{}: {}", module_.name, at.line, what));
  }

  // Function `name` with its calls inlined, for a call at `at`.
  const Entry& function(const std::string& name, const Instruction& at) {
    if (const auto it = expanded_.find(name); it != expanded_.end()) return it->second;
    // (its definition where the module has one: a prototype comes first where a caller does, as
    // LLVM's PTX printer writes it, without .extern)
    auto f = std::find_if(module_.functions.begin(), module_.functions.end(),
                          [&](const Entry& e) { return e.name == name && e.defined; });
    if (f == module_.functions.end())
      f = std::find_if(module_.functions.begin(), module_.functions.end(), [&](const Entry& e) { return e.name == name; });
    if (f == module_.functions.end()) fail(at, fmt::format("calls {}, which the module does not declare", name));
    if (!f->defined)
      fail(at, fmt::format("calls {}, an .extern function the module does not define (a device library's, as "
                           "printf's vprintf or malloc): the emulator runs only functions whose body it reads",
                           name));
    if (std::find(calling_.begin(), calling_.end(), name) != calling_.end())
      fail(at, fmt::format("calls {} recursively ({} -> {}): the emulator runs calls by inlining them, which "
                           "recursion never ends",
                           name, fmt::join(calling_, " -> "), name));
    calling_.push_back(name);
    Entry e = *f;
    expand(e);
    calling_.pop_back();
    return expanded_.emplace(name, std::move(e)).first->second;
  }

  // Replaces each call of `e` by itself followed by its function's body.
  void expand(Entry& e) {
    std::vector<Instruction> body;
    std::vector<int> moved(e.body.size() + 1);  // old index -> new
    std::vector<size_t> own;                    // where e's own instructions went
    std::map<std::string, int> inlined_labels;  // the inlined bodies' labels, at their new places
    int site = 0;
    for (size_t i = 0; i < e.body.size(); ++i) {
      moved[i] = static_cast<int>(body.size());
      own.push_back(body.size());
      body.push_back(e.body[i]);
      if (e.body[i].opcode.op == Op::Call) {
        append_call(e, e.body[i], site++, body, inlined_labels);
        Operand after;  // (where lanes its guard passes over go: calls.h)
        after.kind = Operand::Kind::Label;
        after.label = static_cast<int>(body.size());
        body[own.back()].operands.push_back(after);
      }
    }
    moved[e.body.size()] = static_cast<int>(body.size());
    for (const size_t at : own)
      if (body[at].opcode.op != Op::Call)  // (a call's label is already where its body ends)
        for (Operand& o : body[at].operands)
          if (o.kind == Operand::Kind::Label) o.label = moved[static_cast<size_t>(o.label)];
    for (auto& [name, index] : e.labels) index = moved[static_cast<size_t>(index)];
    for (auto& [name, index] : inlined_labels) e.labels[name] = index;  // (already new positions)
    e.body = std::move(body);
  }

  // The body of the function `call` names, made part of `e` and appended to `body`; its labels, at
  // their places there, into `inlined_labels`.
  void append_call(Entry& e, const Instruction& call, int site, std::vector<Instruction>& body,
                   std::map<std::string, int>& inlined_labels) {
    const Entry& f = function(call.operands.at(1).symbol, call);
    const std::vector<Operand>& returns = call.operands.at(0).elements;
    const std::vector<Operand>& arguments = call.operands.at(2).elements;
    std::map<std::string, std::string> renamed;  // the function's symbols -> e's
    pass(e, call, f.params, arguments, "arguments", renamed);
    pass(e, call, f.returns, returns, "return parameters", renamed);
    const std::string suffix = fmt::format("@{}#{}", f.name, site);
    const int register_base = static_cast<int>(e.registers.size());
    for (const Register& r : f.registers) e.registers.push_back({r.name + suffix, r.type});
    for (const Variable& v : f.variables) {
      Variable mine = v;
      mine.name += suffix;
      renamed[v.name] = mine.name;
      e.variables.push_back(std::move(mine));
    }
    const int start = static_cast<int>(body.size());
    const int after = start + static_cast<int>(f.body.size());
    for (auto [name, index] : f.labels) inlined_labels.emplace(name + suffix, start + index);
    for (Instruction in : f.body) {
      if (in.guard) *in.guard += register_base;
      for (Operand& o : in.operands) relocate(o, register_base, start, renamed);
      if (in.second_destination) relocate(*in.second_destination, register_base, start, renamed);
      if (in.opcode.op == Op::Ret && in.operands.empty()) {  // (back to the instruction after the body)
        Operand back;
        back.kind = Operand::Kind::Label;
        back.label = after;
        in.operands.push_back(back);
      }
      body.push_back(std::move(in));
    }
  }

  // Maps each of `formal` to the call's `actual` (.param variables of e), checking their number and sizes.
  void pass(const Entry& e, const Instruction& call, const std::vector<Param>& formal, const std::vector<Operand>& actual,
            const char* what, std::map<std::string, std::string>& renamed) const {
    const std::string& callee = call.operands.at(1).symbol;
    if (formal.size() != actual.size())
      fail(call, fmt::format("calls {} with {} {}, and it takes {}", callee, actual.size(), what, formal.size()));
    for (size_t i = 0; i < formal.size(); ++i) {
      const auto v = std::find_if(e.variables.begin(), e.variables.end(),
                                  [&](const Variable& v) { return v.name == actual[i].symbol; });
      if (v->bytes != formal[i].bytes)
        fail(call, fmt::format("calls {} with {} of {} bytes for its {} of {}", callee, actual[i].symbol, v->bytes,
                               formal[i].name, formal[i].bytes));
      renamed[formal[i].name] = actual[i].symbol;
    }
  }

  static void relocate(Operand& o, int register_base, int start, const std::map<std::string, std::string>& renamed) {
    if (o.reg >= 0) o.reg += register_base;
    if (o.kind == Operand::Kind::Label) o.label += start;
    if (const auto it = renamed.find(o.symbol); !o.symbol.empty() && it != renamed.end()) o.symbol = it->second;
    for (Operand& element : o.elements) relocate(element, register_base, start, renamed);
  }
};

}  // namespace

void inline_calls(Module& module) { Inliner(module).run(); }

}  // namespace bertc::ptx
