// Decoding PTX instruction names against opcode.def (see opcode.h).
#include "ptx/opcode.h"

#include <array>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::ptx {
namespace {

struct TypeFacts {
  Type type;
  const char* name;
};
constexpr std::array<TypeFacts, 20> kTypes{{{Type::Pred, "pred"}, {Type::B8, "b8"},       {Type::B16, "b16"},
                                            {Type::B32, "b32"},   {Type::B64, "b64"},     {Type::U8, "u8"},
                                            {Type::U16, "u16"},   {Type::U32, "u32"},     {Type::U64, "u64"},
                                            {Type::S8, "s8"},     {Type::S16, "s16"},     {Type::S32, "s32"},
                                            {Type::S64, "s64"},   {Type::F16, "f16"},     {Type::F16x2, "f16x2"},
                                            {Type::Bf16, "bf16"}, {Type::Bf16x2, "bf16x2"}, {Type::Tf32, "tf32"},
                                            {Type::F32, "f32"},   {Type::F64, "f64"}}};

const TypeFacts& facts(Type t) { return kTypes.at(static_cast<size_t>(t)); }

// Mod's spellings, in its order (C++ keywords are capitalised in the enum, not here).
constexpr std::array<const char*, static_cast<size_t>(Mod::Count)> kModNames{
    "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "ftz", "sat", "cc", "wide", "lo", "hi", "approx", "full",
    "NaN", "relu", "satfinite", "eq", "ne", "lt", "le", "gt", "ge", "ls", "hs", "equ", "neu", "ltu", "leu", "gtu",
    "geu", "num", "nan", "and", "or", "xor", "to", "global", "shared", "local", "const", "param", "volatile",
    "relaxed", "acquire", "release", "acq_rel", "sc", "weak", "cta", "gpu", "sys", "gl", "ca", "cg", "cs", "lu",
    "cv", "nc", "wb", "wt", "v2", "v4", "add", "inc", "dec", "min", "max", "exch", "cas", "sync", "arrive", "red",
    "warp", "popc", "uni", "up", "down", "bfly", "idx", "all", "any", "ballot", "aligned", "m8n8", "x1", "x2", "x4",
    "trans", "m8n8k4", "m16n8k8", "m16n8k16", "row", "col", "async", "commit_group", "wait_group", "wait_all", "f4e",
    "b4e", "rc8", "ecl", "ecr", "rc16", "l", "r", "clamp", "wrap"};

struct OpRow {
  Op op;
  std::string name;
  std::bitset<static_cast<size_t>(Mod::Count)> allowed, one_of;
  size_t fewest, most;
};

const std::map<std::string, Mod>& mods_by_name() {
  static const std::map<std::string, Mod> by_name = [] {
    std::map<std::string, Mod> m;
    for (size_t i = 0; i < kModNames.size(); ++i) m.emplace(kModNames[i], static_cast<Mod>(i));
    return m;
  }();
  return by_name;
}

std::bitset<static_cast<size_t>(Mod::Count)> mod_set(const char* op, const char* modifiers) {
  std::bitset<static_cast<size_t>(Mod::Count)> set;
  std::istringstream words(modifiers);
  for (std::string w; words >> w;) {
    const auto it = mods_by_name().find(w);
    if (it == mods_by_name().end()) throw std::logic_error(fmt::format("opcode.def: '{}' lists unknown modifier {}", op, w));
    set.set(static_cast<size_t>(it->second));
  }
  return set;
}

OpRow row(Op op, const char* name, const char* modifiers, size_t fewest, size_t most, const char* one_of) {
  return {op, name, mod_set(name, modifiers), mod_set(name, one_of), fewest, most};
}

const std::map<std::string, OpRow>& ops_by_name() {
  static const std::map<std::string, OpRow> by_name = [] {
    std::map<std::string, OpRow> m;
#define PTX_OP(e, name, modifiers, fewest, most, one_of) \
  m.emplace(name, row(Op::e, name, modifiers, fewest, most, one_of));
#include "ptx/opcode.def"
#undef PTX_OP
    return m;
  }();
  return by_name;
}

}  // namespace

std::string type_name(Type t) { return facts(t).name; }

bool type_named(const std::string& suffix, Type& out) {
  for (const TypeFacts& f : kTypes)
    if (suffix == f.name) {
      out = f.type;
      return true;
    }
  return false;
}

std::string mod_name(Mod m) { return kModNames.at(static_cast<size_t>(m)); }

Opcode decode_opcode(const std::string& text) {
  Opcode o;
  o.text = text;
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t dot = text.find('.', at);
    parts.push_back(text.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  const auto op = ops_by_name().find(parts[0]);
  if (op == ops_by_name().end()) throw std::invalid_argument(fmt::format("'{}' is no instruction this reader knows", text));
  o.op = op->second.op;
  for (size_t i = 1; i < parts.size(); ++i) {
    Type t{};
    if (type_named(parts[i], t)) {
      o.types.push_back(t);
      continue;
    }
    const auto mod = mods_by_name().find(parts[i]);
    if (mod == mods_by_name().end() || !op->second.allowed.test(static_cast<size_t>(mod->second)))
      throw std::invalid_argument(fmt::format("'{}': {} takes no .{}", text, parts[0], parts[i]));
    o.mods.set(static_cast<size_t>(mod->second));
  }
  if (op->second.one_of.any() && (o.mods & op->second.one_of).count() != 1) {
    std::string names;
    for (size_t i = 0; i < kModNames.size(); ++i)
      if (op->second.one_of.test(i)) names += fmt::format("{}.{}", names.empty() ? "" : " ", kModNames[i]);
    throw std::invalid_argument(fmt::format("'{}': {} needs exactly one of {}", text, parts[0], names));
  }
  if (o.types.size() < op->second.fewest || o.types.size() > op->second.most)
    throw std::invalid_argument(fmt::format("'{}': {} takes {} type{}, not {}", text, parts[0],
                                            op->second.fewest == op->second.most
                                                ? std::to_string(op->second.fewest)
                                                : fmt::format("{} to {}", op->second.fewest, op->second.most),
                                            op->second.most == 1 ? "" : "s", o.types.size()));
  return o;
}

}  // namespace bertc::ptx
