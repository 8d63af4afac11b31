// Reading NVRTC's PTX into a Module (see module.h): a lexer, then one pass over the statements
// that resolves every name (registers by scope, labels after their entry) and decodes every
// instruction. The grammar is the PTX ISA's ("Syntax", "State Spaces, Types, and Variables",
// "Directives"), restricted to what NVRTC emits for bertc's kernels; the rest is refused.
#include "ptx/module.h"

#include "ptx/calls.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace bertc::ptx {
namespace {

struct Token {
  enum class Kind { Word, Directive, Number, Float, String, Punct, End };
  Kind kind = Kind::End;
  std::string text;
  int line = 0;
};

bool word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%'; }
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

std::vector<Token> lex(const std::string& text, const std::string& name) {
  std::vector<Token> out;
  int line = 1;
  size_t i = 0;
  auto fail = [&](const std::string& what) { throw Error(fmt::format("{}:{}: {}", name, line, what)); };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line, ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.compare(i, 2, "/*") == 0) {
      const size_t end = text.find("*/", i + 2);
      if (end == std::string::npos) fail("a /* comment never ends");
      for (; i < end + 2; ++i) line += text[i] == '\n';
    } else if (word_start(c)) {
      // A name with its dot-suffixes: an instruction (ld.global.v4.f32), a special register (%tid.x).
      size_t j = i + 1;
      while (j < text.size() && (word_char(text[j]) || (text[j] == '.' && j + 1 < text.size() && word_char(text[j + 1]))))
        ++j;
      out.push_back({Token::Kind::Word, text.substr(i, j - i), line});
      i = j;
    } else if (c == '.' && i + 1 < text.size() && (std::isalpha(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '_')) {
      size_t j = i + 1;
      while (j < text.size() && word_char(text[j])) ++j;
      out.push_back({Token::Kind::Directive, text.substr(i, j - i), line});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      Token::Kind kind = Token::Kind::Number;
      if ((text[i + 1] == 'f' || text[i + 1] == 'd') && c == '0' && i + 2 < text.size() &&
          std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
        kind = Token::Kind::Float;  // 0fXXXXXXXX (f32 bits), 0dXXXXXXXXXXXXXXXX (f64 bits)
        j = i + 2;
        while (j < text.size() && std::isxdigit(static_cast<unsigned char>(text[j]))) ++j;
      } else {
        while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
      }
      out.push_back({kind, text.substr(i, j - i), line});
      i = j;
    } else if (c == '"') {
      const size_t end = text.find('"', i + 1);
      if (end == std::string::npos) fail("a string never ends");
      out.push_back({Token::Kind::String, text.substr(i + 1, end - i - 1), line});
      i = end + 1;
    } else if (c == '\0' && text.find_first_not_of('\0', i) == std::string::npos) {
      break;  // (NVRTC's PTX string ends in its terminator)
    } else if (c != '\0' && std::strchr(",;:{}[]()<>+-|=!@", c)) {
      out.push_back({Token::Kind::Punct, std::string(1, c), line});
      ++i;
    } else {
      fail(fmt::format("unexpected character '{}'", c));
    }
  }
  out.push_back({Token::Kind::End, "", line});
  return out;
}

const std::map<std::string, Special>& specials() {
  static const std::map<std::string, Special> m{
      {"%tid.x", Special::TidX},       {"%tid.y", Special::TidY},       {"%tid.z", Special::TidZ},
      {"%ntid.x", Special::NtidX},     {"%ntid.y", Special::NtidY},     {"%ntid.z", Special::NtidZ},
      {"%ctaid.x", Special::CtaidX},   {"%ctaid.y", Special::CtaidY},   {"%ctaid.z", Special::CtaidZ},
      {"%nctaid.x", Special::NctaidX}, {"%nctaid.y", Special::NctaidY}, {"%nctaid.z", Special::NctaidZ},
      {"%laneid", Special::Laneid},    {"%warpid", Special::Warpid},    {"%lanemask_lt", Special::LanemaskLt},
      {"%nwarpid", Special::Nwarpid},  {"%smid", Special::Smid},        {"%nsmid", Special::Nsmid},
      {"%lanemask_eq", Special::LanemaskEq}, {"%lanemask_le", Special::LanemaskLe},
      {"%lanemask_ge", Special::LanemaskGe}, {"%lanemask_gt", Special::LanemaskGt},
      {"%dynamic_smem_size", Special::DynamicSmemSize},
      {"%clock", Special::Clock},      {"%clock64", Special::Clock64}};
  return m;
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& name) : tokens_(lex(text, name)) { module_.name = name; }

  Module run() {
    while (peek().kind != Token::Kind::End) module_statement();
    if (module_.sm == 0) fail(peek(), "no .target directive");
    inline_calls(module_);
    return std::move(module_);
  }

 private:
  std::vector<Token> tokens_;
  size_t at_ = 0;
  Module module_;
  Entry* entry_ = nullptr;
  int source_line_ = 0, caller_line_ = 0;  // the last .loc's (location())
  // Names declared in braces: registers (their ids) and call parameters (their scoped names).
  struct Scope {
    std::map<std::string, int> registers;
    std::map<std::string, std::string> symbols;
  };
  std::vector<Scope> scopes_;  // innermost last
  int scope_count_ = 0;

  const Token& peek(size_t k = 0) const { return tokens_[std::min(at_ + k, tokens_.size() - 1)]; }
  Token next() { return tokens_[at_ < tokens_.size() - 1 ? at_++ : at_]; }
  [[noreturn]] void fail(const Token& t, const std::string& what) const {
    throw Error(fmt::format("{}:{}: {}", module_.name, t.line, what));
  }
  bool is(const Token& t, const char* punct) const { return t.kind == Token::Kind::Punct && t.text == punct; }
  bool accept(const char* punct) {
    if (!is(peek(), punct)) return false;
    ++at_;
    return true;
  }
  void expect(const char* punct) {
    if (!accept(punct)) fail(peek(), fmt::format("expected '{}', found '{}'", punct, peek().text));
  }
  std::string word() {
    if (peek().kind != Token::Kind::Word) fail(peek(), fmt::format("expected a name, found '{}'", peek().text));
    return next().text;
  }
  int64_t integer() {
    const bool negative = accept("-");
    const Token t = next();
    if (t.kind != Token::Kind::Number) fail(t, fmt::format("expected a number, found '{}'", t.text));
    std::string digits = t.text;
    if (!digits.empty() && digits.back() == 'U') digits.pop_back();
    try {
      size_t used = 0;
      const uint64_t v = std::stoull(digits, &used, 0);  // (0x for hex)
      if (used != digits.size()) throw std::invalid_argument(digits);
      return negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    } catch (const std::exception&) {
      fail(t, fmt::format("'{}' is not a whole number", t.text));
    }
  }
  Type type_directive() {
    const Token t = next();
    Type type{};
    if (t.kind != Token::Kind::Directive || !type_named(t.text.substr(1), type))
      fail(t, fmt::format("expected a type (.u32, .f32...), found '{}'", t.text));
    return type;
  }

  void module_statement() {
    const Token t = next();
    if (t.kind != Token::Kind::Directive) fail(t, fmt::format("expected a directive, found '{}'", t.text));
    if (t.text == ".version") {
      module_.version = next().text;
    } else if (t.text == ".target") {
      const std::string target = word();
      if (!target.starts_with("sm_")) fail(t, fmt::format("target '{}' is not sm_NN", target));
      module_.sm = std::stoi(target.substr(3));
      while (accept(",")) word();  // (texmode_unified, debug: nothing bertc's kernels change)
    } else if (t.text == ".address_size") {
      module_.address_size = static_cast<int>(integer());
      if (module_.address_size != 64) fail(t, "only 64-bit addresses are read");
    } else if (t.text == ".visible" || t.text == ".extern" || t.text == ".weak") {
      module_statement();  // (linkage: the next statement is what it qualifies)
    } else if (t.text == ".global" || t.text == ".const" || t.text == ".shared") {
      module_.variables.push_back(variable(t));
    } else if (t.text == ".entry" || t.text == ".func") {
      routine(t, t.text == ".func");
    } else if (t.text == ".file") {  // (-lineinfo: the source's name; the lines are the .loc's)
      integer();
      if (next().kind != Token::Kind::String) fail(t, ".file without its file's name");
      while (accept(",")) integer();  // (a timestamp and size, where given)
    } else if (t.text == ".section") {  // (-lineinfo's .debug_str: inlined functions' names, unused)
      next();
      expect("{");
      for (int depth = 1; depth > 0;) {
        const Token s = next();
        if (s.kind == Token::Kind::End) fail(t, "a .section that never ends");
        depth += is(s, "{") ? 1 : is(s, "}") ? -1 : 0;
      }
    } else {
      fail(t, fmt::format("the directive {} is not read at module scope", t.text));
    }
  }

  // What a variable and a parameter declare alike: [.align N] .type name[N][M]... ([]: sized at
  // launch, extern dynamic shared memory).
  struct Declared {
    int align = 1;
    Type type = Type::B8;
    std::string name;
    uint64_t count = 1;
  };
  Declared declared() {
    Declared d;
    if (peek().text == ".align") {
      next();
      d.align = static_cast<int>(integer());
    }
    d.type = type_directive();
    d.align = std::max(d.align, type_bits(d.type) / 8);
    d.name = word();
    while (accept("[")) {
      if (accept("]")) {
        d.count = 0;
        continue;
      }
      d.count *= static_cast<uint64_t>(integer());
      expect("]");
    }
    return d;
  }

  Variable variable(const Token& space) {
    Variable v;
    v.line = space.line;
    v.space = space.text == ".global"   ? Space::Global
              : space.text == ".const"  ? Space::Const
              : space.text == ".shared" ? Space::Shared
              : space.text == ".param"  ? Space::Param
                                        : Space::Local;
    const Declared d = declared();
    v.align = d.align, v.element = d.type, v.name = d.name;
    const uint64_t count = d.count;
    const uint64_t element_bytes = static_cast<uint64_t>(std::max(1, type_bits(v.element) / 8));
    v.bytes = count * element_bytes;
    if (accept("=")) {
      v.init.assign(v.bytes, 0);
      uint64_t index = 0;
      auto value = [&] {
        if (index >= count) fail(peek(), fmt::format("{} has more initial values than its {} elements", v.name, count));
        uint64_t bits = 0;
        if (peek().kind == Token::Kind::Float) {
          bits = std::stoull(next().text.substr(2), nullptr, 16);
        } else {
          bits = static_cast<uint64_t>(integer());
        }
        for (uint64_t b = 0; b < element_bytes; ++b) v.init[index * element_bytes + b] = static_cast<uint8_t>(bits >> (8 * b));
        ++index;
      };
      if (accept("{")) {
        do value();
        while (accept(","));
        expect("}");
      } else {
        value();
      }
    }
    expect(";");
    return v;
  }

  // A parameter list's declarations, after its '(' up to its ')', laid out as the ISA lays out a
  // kernel's parameter buffer (each at its alignment, in order).
  std::vector<Param> parameters() {
    std::vector<Param> out;
    uint64_t offset = 0;
    if (accept(")")) return out;
    do {
      const Token p = next();
      if (p.text != ".param") fail(p, fmt::format("expected .param, found '{}'", p.text));
      Param param;
      const Declared d = declared();
      if (d.count == 0) fail(p, fmt::format("parameter {} has no size ([])", d.name));
      param.align = d.align, param.type = d.type, param.name = d.name;
      param.bytes = d.count * static_cast<uint64_t>(std::max(1, type_bits(param.type) / 8));
      offset = (offset + static_cast<uint64_t>(param.align) - 1) / static_cast<uint64_t>(param.align) *
               static_cast<uint64_t>(param.align);
      param.offset = offset;
      offset += param.bytes;
      out.push_back(param);
    } while (accept(","));
    expect(")");
    return out;
  }

  // .entry NAME(PARAMS) [directives] { BODY }, or .func [(RETURNS)] NAME[(PARAMS)] followed by
  // { BODY } or, declared only (.extern), ';'.
  void routine(const Token& at, bool function) {
    std::vector<Entry>& list = function ? module_.functions : module_.entries;
    list.emplace_back();
    entry_ = &list.back();
    entry_->line = at.line;
    if (function && accept("(")) entry_->returns = parameters();
    entry_->name = word();
    if (accept("(")) entry_->params = parameters();
    else if (!function) fail(peek(), fmt::format("expected '(' after .entry {}", entry_->name));
    for (;;) {  // performance directives
      const Token d = peek();
      if (d.text == ".maxntid" || d.text == ".reqntid") {
        next();
        int* dims = d.text == ".maxntid" ? entry_->maxntid : entry_->reqntid;
        for (int i = 0; i < 3; ++i) {
          dims[i] = static_cast<int>(integer());
          if (!accept(",")) {
            for (int j = i + 1; j < 3; ++j) dims[j] = 1;
            break;
          }
        }
        // (ISA, "Performance-Tuning Directives": .reqntid cannot be used with .maxntid)
        if (entry_->maxntid[0] > 0 && entry_->reqntid[0] > 0)
          fail(d, fmt::format("{} {} has both .maxntid and .reqntid, which the ISA does not allow together",
                              function ? ".func" : ".entry", entry_->name));
      } else if (d.text == ".minnctapersm") {
        next();
        entry_->minnctapersm = static_cast<int>(integer());
      } else if (d.text == ".maxnreg") {
        next();
        entry_->maxnreg = static_cast<int>(integer());
      } else {
        break;
      }
    }
    if (function && accept(";")) {
      entry_->defined = false;
      entry_ = nullptr;
      return;
    }
    expect("{");
    scopes_.assign(1, {});
    body();
    resolve_labels();
    entry_ = nullptr;
  }

  int declare_register(const Token& at, const std::string& name, Type type) {
    if (scopes_.back().registers.count(name)) fail(at, fmt::format("register {} is declared twice", name));
    const int id = static_cast<int>(entry_->registers.size());
    entry_->registers.push_back({scopes_.size() > 1 ? fmt::format("{}#{}", name, scope_count_) : name, type});
    scopes_.back().registers[name] = id;
    return id;
  }

  void registers(const Token& at) {
    const Type type = type_directive();
    do {
      const std::string name = word();
      if (accept("<")) {  // %r<12>: %r0 .. %r11
        const int64_t n = integer();
        expect(">");
        for (int64_t i = 0; i < n; ++i) declare_register(at, name + std::to_string(i), type);
      } else {
        declare_register(at, name, type);
      }
    } while (accept(","));
    expect(";");
  }

  // Statements up to the '}' that closes the scope opened before the call.
  void body() {
    for (;;) {
      const Token t = peek();
      if (t.kind == Token::Kind::End) fail(t, fmt::format("the body of {} never ends", entry_->name));
      if (accept("}")) return;
      if (accept("{")) {
        scopes_.emplace_back();
        ++scope_count_;
        body();
        scopes_.pop_back();
        continue;
      }
      if (t.kind == Token::Kind::Directive) {
        next();
        if (t.text == ".reg") {
          registers(t);
        } else if (t.text == ".shared" || t.text == ".local" || t.text == ".param") {
          Variable v = variable(t);
          if (t.text == ".shared" && !module_.functions.empty() && entry_ == &module_.functions.back())
            fail(t, fmt::format("a .shared variable declared in .func {}: the ISA declares them in kernels or the module",
                                entry_->name));
          if (t.text == ".param" && scopes_.size() > 1) {  // (a call's: param0 is declared around each call)
            const std::string scoped = fmt::format("{}#{}", v.name, scope_count_);
            scopes_.back().symbols[v.name] = scoped;
            v.name = scoped;
          }
          entry_->variables.push_back(std::move(v));
        } else if (t.text == ".pragma") {
          next();
          expect(";");
        } else if (t.text == ".loc") {
          location();
        } else {
          fail(t, fmt::format("the directive {} is not read inside a kernel", t.text));
        }
        continue;
      }
      if (t.kind == Token::Kind::Word && is(peek(1), ":")) {
        if (!entry_->labels.emplace(t.text, static_cast<int>(entry_->body.size())).second)
          fail(t, fmt::format("label {} is defined twice", t.text));
        at_ += 2;
        continue;
      }
      instruction();
    }
  }

  int register_named(const Token& t) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
      if (const auto it = scope->registers.find(t.text); it != scope->registers.end()) return it->second;
    fail(t, fmt::format("register {} is not declared", t.text));
  }

  Operand operand() {
    Operand o;
    const Token t = peek();
    if (accept("{")) {
      o.kind = Operand::Kind::Vector;
      do o.elements.push_back(operand());
      while (accept(","));
      expect("}");
      return o;
    }
    if (accept("!")) {  // ({!}a of vote.sync and bar.red: a predicate complemented)
      o = operand();
      if (o.kind != Operand::Kind::Register) fail(t, "'!' before something other than a predicate register");
      o.kind = Operand::Kind::NegatedPredicate;
      return o;
    }
    if (accept("[")) {
      o.kind = Operand::Kind::Address;
      if (peek().kind == Token::Kind::Number) {
        o.value = integer();
      } else {
        const Token base = next();
        if (base.kind != Token::Kind::Word) fail(base, fmt::format("expected an address, found '{}'", base.text));
        if (base.text.starts_with("%")) o.reg = register_named(base);
        else if (find_register(base.text) >= 0) o.reg = find_register(base.text);
        else o.symbol = scoped_symbol(base.text);
        if (is(peek(), "+") || is(peek(), "-")) {
          const bool minus = next().text == "-";
          const int64_t v = integer();
          o.value = minus ? -v : v;
        }
      }
      expect("]");
      return o;
    }
    if (t.kind == Token::Kind::Float) {
      next();
      o.kind = Operand::Kind::Float;
      o.f64 = t.text[1] == 'd';
      o.value = static_cast<int64_t>(std::stoull(t.text.substr(2), nullptr, 16));
      return o;
    }
    if (t.kind == Token::Kind::Number || is(t, "-")) {
      o.kind = Operand::Kind::Immediate;
      o.value = integer();
      return o;
    }
    if (t.kind != Token::Kind::Word) fail(t, fmt::format("expected an operand, found '{}'", t.text));
    next();
    if (t.text == "_") return o;  // (a sink)
    if (const auto s = specials().find(t.text); s != specials().end()) {
      o.kind = Operand::Kind::Special;
      o.special = s->second;
      return o;
    }
    if (t.text.starts_with("%") || find_register(t.text) >= 0) {
      o.kind = Operand::Kind::Register;
      o.reg = register_named(t);
      return o;
    }
    o.kind = Operand::Kind::Symbol;  // a variable, a parameter, or a label (resolved after the body)
    o.symbol = scoped_symbol(t.text);
    return o;
  }

  int find_register(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
      if (const auto it = scope->registers.find(name); it != scope->registers.end()) return it->second;
    return -1;
  }

  // A symbol's name as declared in the innermost scope holding it (a call parameter's scoped name).
  std::string scoped_symbol(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope)
      if (const auto it = scope->symbols.find(name); it != scope->symbols.end()) return it->second;
    return name;
  }

  // .loc file line column [, function_name label] [, inlined_at file line column]: the source line
  // of the instructions after it (NVRTC's -lineinfo).
  void location() {
    integer();
    source_line_ = static_cast<int>(integer());
    integer();
    caller_line_ = 0;
    while (accept(",")) {
      const Token key = next();
      if (key.text == "function_name") {
        word();
      } else if (key.text == "inlined_at") {
        integer();
        caller_line_ = static_cast<int>(integer());
        integer();
      } else {
        fail(key, fmt::format("a .loc with '{}' (function_name and inlined_at are read)", key.text));
      }
    }
  }

  void instruction() {
    Instruction in;
    in.line = peek().line;
    in.source_line = source_line_, in.caller_line = caller_line_;
    if (accept("@")) {
      in.guard_negated = accept("!");
      const Token p = next();
      in.guard = register_named(p);
    }
    const Token op = next();
    if (op.kind != Token::Kind::Word) fail(op, fmt::format("expected an instruction, found '{}'", op.text));
    try {
      in.opcode = decode_opcode(op.text);
    } catch (const std::invalid_argument& e) {
      fail(op, e.what());
    }
    if (in.opcode.op == Op::Call) {
      call_operands(in);
    } else if (!accept(";")) {
      do {
        in.operands.push_back(operand());
        if (accept("|")) in.second_destination = operand();
      } while (accept(","));
      expect(";");
    }
    entry_->body.push_back(std::move(in));
  }

  // call{.uni} [(r...),] f[, (a...)]; as module.h lays out its operands.
  void call_operands(Instruction& in) {
    Operand returns, arguments;
    returns.kind = arguments.kind = Operand::Kind::Vector;
    auto list = [&](Operand& into) {
      expect("(");
      if (accept(")")) return;
      do into.elements.push_back(operand());
      while (accept(","));
      expect(")");
    };
    if (is(peek(), "(")) {
      list(returns);
      expect(",");
    }
    const Token f = peek();
    const Operand callee = operand();
    if (callee.kind != Operand::Kind::Symbol)
      fail(f, fmt::format("a call through {} (an indirect call): only calls of a .func by its name are run", f.text));
    if (accept(",")) list(arguments);
    expect(";");
    in.operands = {returns, callee, arguments};
  }

  // Branch targets become instruction indices; every other symbol must name a variable or a
  // parameter of the module or the entry.
  void resolve_labels() {
    for (Instruction& in : entry_->body) {
      if (in.opcode.op == Op::Call) {
        check_call_parameters(in);
        continue;
      }
      for (Operand& o : in.operands) {
        if (o.kind != Operand::Kind::Symbol && !(o.kind == Operand::Kind::Address && !o.symbol.empty())) continue;
        const int line = in.line;
        if (in.opcode.op == Op::Bra && o.kind == Operand::Kind::Symbol) {
          const auto it = entry_->labels.find(o.symbol);
          if (it == entry_->labels.end())
            throw Error(fmt::format("{}:{}: label {} is not defined in {}", module_.name, line, o.symbol, entry_->name));
          o.kind = Operand::Kind::Label;
          o.label = it->second;
          continue;
        }
        if (!known_symbol(o.symbol))
          throw Error(fmt::format("{}:{}: {} names no variable or parameter", module_.name, line, o.symbol));
      }
    }
  }

  // A call's return parameters and arguments: each a .param declared around the call.
  void check_call_parameters(const Instruction& in) const {
    for (const size_t list : {size_t{0}, size_t{2}})
      for (const Operand& o : in.operands[list].elements) {
        const bool declared = o.kind == Operand::Kind::Symbol &&
                              std::any_of(entry_->variables.begin(), entry_->variables.end(), [&](const Variable& v) {
                                return v.space == Space::Param && v.name == o.symbol;
                              });
        if (!declared)
          throw Error(fmt::format("{}:{}: a call's {} must each be a .param declared around the call, and {} is not",
                                  module_.name, in.line, list == 0 ? "return parameters" : "arguments",
                                  o.kind == Operand::Kind::Symbol ? o.symbol : std::string("one")));
      }
  }

  bool known_symbol(const std::string& name) const {
    for (const std::vector<Param>* list : {&entry_->params, &entry_->returns})
      for (const Param& p : *list)
        if (p.name == name) return true;
    for (const Variable& v : entry_->variables)
      if (v.name == name) return true;
    for (const Variable& v : module_.variables)
      if (v.name == name) return true;
    return false;
  }
};

}  // namespace

const Entry* Module::entry(const std::string& wanted) const {
  for (const Entry& e : entries)
    if (e.name == wanted) return &e;
  return nullptr;
}

Module parse_module(const std::string& text, const std::string& name) { return Parser(text, name).run(); }

}  // namespace bertc::ptx
