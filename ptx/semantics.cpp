// The arithmetic of one thread's instructions, from the PTX ISA document (see semantics.h). This
// file is compiled with -frounding-math: the directed roundings (.rz .rm .rp) are the host's own,
// set around each operation.
#include "ptx/semantics.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfenv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace bertc::ptx {
namespace {

// (GCC's and Clang's 128-bit integers: the high half of a 64-bit product, and exact saturation)
__extension__ using Int128 = __int128;
__extension__ using Uint128 = unsigned __int128;

uint64_t mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }
int64_t signed_value(uint64_t v, int bits) {
  if (bits >= 64) return static_cast<int64_t>(v);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>(((v & mask(bits)) ^ sign) - sign);
}
float f32(uint64_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b)); }
uint64_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
double f64(uint64_t b) { return std::bit_cast<double>(b); }
uint64_t bits_of(double d) { return std::bit_cast<uint64_t>(d); }

// .ftz: subnormal inputs and results become zero of the same sign (ISA: "Subnormal numbers").
float flush(float x, bool ftz) { return ftz && std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

int rounding_of(const Opcode& op) {
  if (op.has(Mod::rz) || op.has(Mod::rzi)) return FE_TOWARDZERO;
  if (op.has(Mod::rm) || op.has(Mod::rmi)) return FE_DOWNWARD;
  if (op.has(Mod::rp) || op.has(Mod::rpi)) return FE_UPWARD;
  return FE_TONEAREST;  // .rn, .rni, and the default of every float instruction
}

// `f` evaluated with the host's rounding set to `mode`.
template <typename F>
auto with_rounding(int mode, F f) {
  if (mode == FE_TONEAREST) return f();  // (the mode every caller runs in: nothing to set)
  const int before = std::fegetround();
  std::fesetround(mode);
  const auto r = f();
  std::fesetround(before);
  return r;
}

// .sat on a float result: clamped to [0, 1], NaN to +0 (ISA: "saturation modifier").
float saturate(float x) { return std::isnan(x) ? 0.0f : std::min(1.0f, std::max(0.0f, x)); }

[[noreturn]] void not_modelled(const Opcode& op, const char* what) {
  throw std::invalid_argument(fmt::format("'{}': {} is not modelled", op.text, what));
}

// add, sub, mul, fma (and mad, fma.rn from sm_20 on), div of one float type, evaluated through
// volatiles so that the compiler neither folds nor moves them out of with_rounding's setting.
template <typename T>
T float_op(const Opcode& op, T a, T b, T c) {
  volatile T x = a, y = b, z = c;
  switch (op.op) {
    case Op::Add: return x + y;
    case Op::Sub: return x - y;
    case Op::Mul: return x * y;
    case Op::Fma:
    case Op::Mad: return std::fma(x, y, z);
    case Op::Div: return x / y;  // (.rn: IEEE; .full and .approx: within their 2 ulp by this)
    default: not_modelled(op, "this float form");
  }
}

uint64_t float_arith(const Opcode& op, std::span<const uint64_t> s) {
  const Type t = op.type();
  const int mode = rounding_of(op);
  auto operand = [&](size_t i, auto read) { return s.size() > i ? read(s[i]) : decltype(read(s[0])){0}; };
  if (t == Type::F64) {
    const double a = f64(s[0]), b = operand(1, f64), c = operand(2, f64);
    return bits_of(with_rounding(mode, [&] { return float_op<double>(op, a, b, c); }));
  }
  if (t != Type::F32) not_modelled(op, "arithmetic of this type");
  const bool ftz = op.has(Mod::ftz);
  auto read = [&](uint64_t bits) { return flush(f32(bits), ftz); };
  const float a = read(s[0]), b = operand(1, read), c = operand(2, read);
  // (div.approx is a * (1/b): for |b| in (2^126, 2^128) the ISA defines 0, or NaN where a is infinite)
  if (op.op == Op::Div && op.has(Mod::approx) && std::isfinite(b) && std::fabs(b) > 0x1p126f)
    return std::isinf(a) ? 0x7fffffff : bits_of(std::copysign(0.0f, a) * std::copysign(1.0f, b));  // (the canonical NaN)
  const float r = flush(with_rounding(mode, [&] { return float_op<float>(op, a, b, c); }), ftz);
  return bits_of(op.has(Mod::sat) ? saturate(r) : r);
}

// Integer add, sub, mul, mad, div, rem, min, max of the operation's type.
uint64_t integer_arith(const Opcode& op, std::span<const uint64_t> s) {
  const Type t = op.type();
  const int w = type_bits(t);
  const bool sign = is_signed(t);
  auto value = [&](size_t i) { return sign ? signed_value(s[i], w) : static_cast<int64_t>(s[i] & mask(w)); };
  const uint64_t a = s[0] & mask(w), b = s.size() > 1 ? s[1] & mask(w) : 0;
  switch (op.op) {
    case Op::Add:
    case Op::Sub: {
      if (op.has(Mod::sat)) {  // (add.sat.s32: clamped to the type's range)
        const Int128 r = static_cast<Int128>(value(0)) + (op.op == Op::Add ? 1 : -1) * static_cast<Int128>(value(1));
        const Int128 hi = (static_cast<Int128>(1) << (w - 1)) - 1, lo = -(static_cast<Int128>(1) << (w - 1));
        return static_cast<uint64_t>(static_cast<int64_t>(std::min(hi, std::max(lo, r)))) & mask(w);
      }
      return (op.op == Op::Add ? a + b : a - b) & mask(w);
    }
    case Op::Mul:
    case Op::Mad: {
      const Int128 product = sign ? static_cast<Int128>(value(0)) * value(1)
                                    : static_cast<Int128>(static_cast<Uint128>(a) * b);
      uint64_t r = 0;
      int rw = w;
      if (op.has(Mod::wide)) {
        rw = 2 * w;
        r = static_cast<uint64_t>(product) & mask(rw);
      } else if (op.has(Mod::hi)) {
        r = static_cast<uint64_t>(static_cast<Uint128>(product) >> w) & mask(w);
      } else {
        r = static_cast<uint64_t>(product) & mask(w);  // .lo (and mul of no .lo/.hi: not for ints)
      }
      if (op.op == Op::Mad && op.has(Mod::sat)) {  // (mad.hi.sat.s32: the high half plus c, clamped)
        if (t != Type::S32 || !op.has(Mod::hi)) not_modelled(op, ".sat of a mad other than .hi.s32");
        const int64_t sum = signed_value(r, 32) + signed_value(s[2], 32);
        return static_cast<uint64_t>(std::clamp<int64_t>(sum, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max())) & mask(32);
      }
      if (op.op == Op::Mad) r = (r + s[2]) & mask(rw);
      return r;
    }
    case Op::Div:
    case Op::Rem: {
      if (b == 0) throw std::domain_error(fmt::format("'{}': an integer division by zero (the ISA leaves its result "
                                                      "unspecified)", op.text));
      if (sign) {
        const int64_t x = value(0), y = value(1);
        if (y == -1 && x == signed_value(uint64_t{1} << (w - 1), w))
          throw std::domain_error(fmt::format("'{}': the most negative value divided by -1 overflows", op.text));
        return static_cast<uint64_t>(op.op == Op::Div ? x / y : x % y) & mask(w);
      }
      return (op.op == Op::Div ? a / b : a % b) & mask(w);
    }
    case Op::Min: return static_cast<uint64_t>(sign ? std::min(value(0), value(1)) : std::min(a, b)) & mask(w);
    case Op::Max: return static_cast<uint64_t>(sign ? std::max(value(0), value(1)) : std::max(a, b)) & mask(w);
    case Op::Abs: return static_cast<uint64_t>(value(0) < 0 ? -value(0) : value(0)) & mask(w);
    case Op::Neg: return (~a + 1) & mask(w);
    default: not_modelled(op, "this integer form");
  }
}

// abs and neg of f64, f16, bf16 and their pairs: the sign bit of each value alone (ISA: "abs",
// "neg" of those types; .ftz of the 16-bit ones flushes a subnormal to zero of its sign first).
uint64_t float_sign(const Opcode& op, uint64_t x) {
  const Type t = op.type();
  if (t == Type::F64) {
    if (op.has(Mod::ftz)) not_modelled(op, ".ftz of an f64");
    return op.op == Op::Abs ? x & 0x7fffffffffffffff : x ^ 0x8000000000000000;
  }
  if (t != Type::F16 && t != Type::Bf16 && t != Type::F16x2 && t != Type::Bf16x2) not_modelled(op, "abs/neg of this type");
  const int values = is_packed(t) ? 2 : 1;
  const uint64_t exponent = t == Type::F16 || t == Type::F16x2 ? 0x7c00 : 0x7f80;
  uint64_t out = 0;
  for (int i = 0; i < values; ++i) {
    uint64_t h = (x >> (16 * i)) & 0xffff;
    if (op.has(Mod::ftz) && (h & exponent) == 0) h &= 0x8000;  // (a subnormal: zero of its sign)
    h = op.op == Op::Abs ? h & 0x7fff : h ^ 0x8000;
    out |= h << (16 * i);
  }
  return out;
}

// min and max of floats: a NaN operand gives the other (with .NaN, the canonical NaN); two NaNs the
// canonical NaN; -0 is below +0.
uint64_t float_min_max(const Opcode& op, std::span<const uint64_t> s) {
  if (op.type() != Type::F32) not_modelled(op, "min/max of this type");
  const bool ftz = op.has(Mod::ftz);
  const float a = flush(f32(s[0]), ftz), b = flush(f32(s[1]), ftz);
  // (.NaN: a NaN operand makes the result the canonical NaN; without it the other operand)
  if ((std::isnan(a) && std::isnan(b)) || (op.has(Mod::NaN) && (std::isnan(a) || std::isnan(b)))) return 0x7fffffff;
  if (std::isnan(a)) return bits_of(b);
  if (std::isnan(b)) return bits_of(a);
  const bool max = op.op == Op::Max;
  if (a == b) return bits_of(std::signbit(a) == max ? b : a);  // (±0: -0 is the smaller)
  return bits_of(max ? std::max(a, b) : std::min(a, b));
}

// The approximate functions and square roots, correctly rounded (inside the ISA's bounds).
uint64_t float_function(const Opcode& op, std::span<const uint64_t> s) {
  if (op.type() != Type::F32) not_modelled(op, "this function of this type");
  const bool ftz = op.has(Mod::ftz);
  const double x = flush(f32(s[0]), ftz);
  double r = 0;
  switch (op.op) {
    case Op::Rcp: r = 1.0 / x; break;
    case Op::Sqrt: r = std::sqrt(x); break;
    case Op::Rsqrt: r = 1.0 / std::sqrt(x); break;
    case Op::Ex2: r = std::exp2(x); break;
    case Op::Lg2: r = std::log2(x); break;
    case Op::Sin: r = std::sin(x); break;
    case Op::Cos: r = std::cos(x); break;
    case Op::Tanh: r = std::tanh(x); break;
    default: not_modelled(op, "this function");
  }
  // (rcp.rn and sqrt.rn are IEEE: in double then rounded once to float is the same, as double's
  // 53 bits hold the float quotient and root well past float's rounding point)
  const float rounded = with_rounding(rounding_of(op), [&] {
    volatile double v = r;
    return static_cast<float>(v);
  });
  return bits_of(flush(rounded, ftz));
}

bool compare(const Opcode& op, std::span<const uint64_t> s) {
  const Type t = op.type();
  if (is_float(t)) {
    if (t != Type::F32 && t != Type::F64) not_modelled(op, "a comparison of this type");
    const bool ftz = op.has(Mod::ftz);
    const double a = t == Type::F64 ? f64(s[0]) : flush(f32(s[0]), ftz);
    const double b = t == Type::F64 ? f64(s[1]) : flush(f32(s[1]), ftz);
    const bool unordered = std::isnan(a) || std::isnan(b);
    if (op.has(Mod::num)) return !unordered;
    if (op.has(Mod::nan)) return unordered;
    // (eq..ge are false where either is NaN; equ..geu are true there)
    const bool u = op.has(Mod::equ) || op.has(Mod::neu) || op.has(Mod::ltu) || op.has(Mod::leu) ||
                   op.has(Mod::gtu) || op.has(Mod::geu);
    if (unordered) return u;
    if (op.has(Mod::eq) || op.has(Mod::equ)) return a == b;
    if (op.has(Mod::ne) || op.has(Mod::neu)) return a != b;
    if (op.has(Mod::lt) || op.has(Mod::ltu)) return a < b;
    if (op.has(Mod::le) || op.has(Mod::leu)) return a <= b;
    if (op.has(Mod::gt) || op.has(Mod::gtu)) return a > b;
    if (op.has(Mod::ge) || op.has(Mod::geu)) return a >= b;
    not_modelled(op, "this comparison of floats");
  }
  const int w = type_bits(t);
  const bool sign = is_signed(t);
  const uint64_t ua = s[0] & mask(w), ub = s[1] & mask(w);
  const int64_t sa = signed_value(s[0], w), sb = signed_value(s[1], w);
  if (op.has(Mod::eq)) return ua == ub;
  if (op.has(Mod::ne)) return ua != ub;
  if (op.has(Mod::lo)) return ua < ub;  // (lo ls hi hs: unsigned, whatever the type)
  if (op.has(Mod::ls)) return ua <= ub;
  if (op.has(Mod::hi)) return ua > ub;
  if (op.has(Mod::hs)) return ua >= ub;
  if (op.has(Mod::lt)) return sign ? sa < sb : ua < ub;
  if (op.has(Mod::le)) return sign ? sa <= sb : ua <= ub;
  if (op.has(Mod::gt)) return sign ? sa > sb : ua > ub;
  if (op.has(Mod::ge)) return sign ? sa >= sb : ua >= ub;
  not_modelled(op, "this comparison of integers");
}

// setp.cmp[.bool].type p[|q], a, b[, c]: p = cmp BOOL c, q = !cmp BOOL c.
Computed setp(const Opcode& op, std::span<const uint64_t> s) {
  const bool t = compare(op, s);
  auto combine = [&](bool x) {
    if (s.size() < 3) return x;
    const bool c = s[2] & 1;
    if (op.has(Mod::And)) return x && c;
    if (op.has(Mod::Or)) return x || c;
    if (op.has(Mod::Xor)) return x != c;
    return x;
  };
  return {static_cast<uint64_t>(combine(t)), static_cast<uint64_t>(combine(!t))};
}

uint64_t shift(const Opcode& op, std::span<const uint64_t> s) {
  const int w = type_bits(op.type());
  const uint64_t a = s[0] & mask(w), n = s[1] & 0xffffffff;  // (the amount is .u32; past the width: all out)
  if (op.op == Op::Shl) return n >= static_cast<uint64_t>(w) ? 0 : (a << n) & mask(w);
  if (is_signed(op.type())) {
    const int64_t v = signed_value(a, w);
    return static_cast<uint64_t>(n >= static_cast<uint64_t>(w) ? (v < 0 ? -1 : 0) : v >> n) & mask(w);
  }
  return n >= static_cast<uint64_t>(w) ? 0 : a >> n;
}

// shf.{l,r}.{clamp,wrap}.b32 d, a, b, c: the 64 bits b:a (b the high word) shifted by n, c
// clamped to 32 or taken mod 32; shf.l keeps the high 32 bits, shf.r the low (ISA: "shf").
uint64_t funnel_shift(const Opcode& op, std::span<const uint64_t> s) {
  if (op.has(Mod::clamp) == op.has(Mod::wrap)) not_modelled(op, "shf without exactly one of .clamp and .wrap");
  if (op.type() != Type::B32) not_modelled(op, "shf of this type");
  const uint64_t c = s[2] & 0xffffffff;
  const uint64_t n = op.has(Mod::clamp) ? std::min<uint64_t>(c, 32) : c & 0x1f;
  const uint64_t both = (s[1] & 0xffffffff) << 32 | (s[0] & 0xffffffff);
  return (op.has(Mod::l) ? (both << n) >> 32 : both >> n) & 0xffffffff;
}

// bfe.type d, a, pos, len: the field a[pos .. pos+len-1], sign-extended for .s types from its top
// bit (ISA: bfe's pseudocode, pos and len taken from their low 8 bits).
uint64_t bfe(const Opcode& op, std::span<const uint64_t> s) {
  const int w = type_bits(op.type());
  const int msb = w - 1;
  const uint64_t a = s[0] & mask(w);
  const int pos = static_cast<int>(s[1] & 0xff), len = static_cast<int>(s[2] & 0xff);
  const bool sbit = is_signed(op.type()) && len != 0 ? (a >> std::min(pos + len - 1, msb)) & 1 : false;
  uint64_t d = 0;
  for (int i = 0; i <= msb; ++i) {
    const bool bit = i < len && pos + i <= msb ? (a >> (pos + i)) & 1 : sbit;
    d |= static_cast<uint64_t>(bit) << i;
  }
  return d;
}

// bfi.type d, a, b, pos, len: b with a's low len bits written at pos (ISA: bfi's pseudocode).
uint64_t bfi(const Opcode& op, std::span<const uint64_t> s) {
  const int w = type_bits(op.type());
  const uint64_t a = s[0], b = s[1] & mask(w);
  const int pos = static_cast<int>(s[2] & 0xff), len = static_cast<int>(s[3] & 0xff);
  uint64_t d = b;
  for (int i = 0; i < len && pos + i <= w - 1; ++i)
    d = (d & ~(uint64_t{1} << (pos + i))) | (((a >> i) & 1) << (pos + i));
  return d;
}

// prmt.b32{.mode} d, a, b, c: in the generic form byte i of d is byte c[4i+2:4i] of {b, a} (a the
// low four), or, with c[4i+3] set, that byte's sign replicated; a mode takes its bytes from the
// row c[1:0] of its table (ISA: "prmt").
uint64_t prmt(const Opcode& op, std::span<const uint64_t> s) {
  const uint64_t both = (s[0] & 0xffffffff) | ((s[1] & 0xffffffff) << 32);
  auto byte_of = [&](uint64_t index) { return (both >> (8 * (index & 7))) & 0xff; };
  // The modes: c[1:0] picks a row of the ISA's table, the source byte of d.b0 .. d.b3 each (no sign
  // replication).
  static constexpr std::pair<Mod, std::array<std::array<uint8_t, 4>, 4>> modes[] = {
      {Mod::f4e, {{{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}}}},
      {Mod::b4e, {{{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}}}},
      {Mod::rc8, {{{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}}}},
      {Mod::ecl, {{{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}}}},
      {Mod::ecr, {{{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}}}},
      {Mod::rc16, {{{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}}}}};
  uint64_t d = 0;
  for (const auto& [mode, rows] : modes)
    if (op.has(mode)) {
      const auto& row = rows[s[2] & 3];
      for (int i = 0; i < 4; ++i) d |= byte_of(row[static_cast<size_t>(i)]) << (8 * i);
      return d;
    }
  for (int i = 0; i < 4; ++i) {  // (the generic form: a selector a byte, its bit 3 replicating the byte's sign)
    const uint64_t selector = (s[2] >> (4 * i)) & 0xf;
    uint64_t byte = byte_of(selector & 7);
    if (selector & 8) byte = byte & 0x80 ? 0xff : 0;
    d |= byte << (8 * i);
  }
  return d;
}

uint64_t logic(const Opcode& op, std::span<const uint64_t> s) {
  const int w = op.type() == Type::Pred ? 1 : type_bits(op.type());
  const uint64_t a = s[0] & mask(w);
  switch (op.op) {
    case Op::And: return a & s[1] & mask(w);
    case Op::Or: return (a | s[1]) & mask(w);
    case Op::Xor: return (a ^ s[1]) & mask(w);
    case Op::Not: return ~a & mask(w);
    case Op::Cnot: return a == 0 ? 1 : 0;
    case Op::Popc: return static_cast<uint64_t>(std::popcount(a));
    case Op::Clz: return static_cast<uint64_t>(std::countl_zero(a) - (64 - w));
    case Op::Brev: {
      uint64_t r = 0;
      for (int i = 0; i < w; ++i) r |= ((a >> i) & 1) << (w - 1 - i);
      return r;
    }
    default: not_modelled(op, "this logic form");
  }
}

// Float to integer: rounded as .rni/.rzi/.rmi/.rpi say, clamped to the destination's range, NaN
// to 0 (ISA: cvt, "Saturation": float-to-integer conversions saturate by default).
uint64_t float_to_integer(const Opcode& op, double x, Type to) {
  const int w = type_bits(to);
  if (std::isnan(x)) return 0;
  const double r = with_rounding(rounding_of(op), [&] {
    volatile double v = x;
    return std::nearbyint(v);
  });
  if (is_signed(to)) {
    const double lo = -std::ldexp(1.0, w - 1), hi = std::ldexp(1.0, w - 1);
    if (r <= lo) return static_cast<uint64_t>(signed_value(uint64_t{1} << (w - 1), w)) & mask(w);
    if (r >= hi) return mask(w - 1);
    return static_cast<uint64_t>(static_cast<int64_t>(r)) & mask(w);
  }
  if (r <= 0) return 0;
  if (r >= std::ldexp(1.0, w)) return mask(w);
  return static_cast<uint64_t>(r) & mask(w);
}

Computed convert(const Opcode& op, std::span<const uint64_t> s) {
  const Type to = op.type(0), from = op.type(1);
  const uint64_t a = s[0];
  const bool ftz = op.has(Mod::ftz);
  if (!is_float(to) && !is_float(from)) {  // integer to integer: extended by the source's sign, then cut
    const int fw = type_bits(from), tw = type_bits(to);
    int64_t v = is_signed(from) ? signed_value(a, fw) : static_cast<int64_t>(a & mask(fw));
    if (op.has(Mod::sat)) {
      const int64_t lo = is_signed(to) ? signed_value(uint64_t{1} << (tw - 1), tw) : 0;
      const int64_t hi = is_signed(to) ? static_cast<int64_t>(mask(tw - 1)) : static_cast<int64_t>(mask(std::min(tw, 63)));
      if (!is_signed(from) && (a & mask(fw)) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) v = hi;
      v = std::min(hi, std::max(lo, v));
    }
    return {static_cast<uint64_t>(v) & mask(tw)};
  }
  // The source as a double (exact for every float source and every integer up to 2^53; larger
  // 64-bit integers round once here, and again below only when the destination is narrower).
  double x = 0;
  switch (from) {
    case Type::F32: x = flush(f32(a), ftz); break;
    case Type::F64: x = f64(a); break;
    case Type::F16: x = f16_to_f32(static_cast<uint16_t>(a)); break;
    case Type::Bf16: x = bf16_to_f32(static_cast<uint16_t>(a)); break;
    default:
      if (is_float(from)) not_modelled(op, "a conversion from this type");
      if (type_bits(from) == 64 && (is_signed(from) ? std::abs(signed_value(a, 64)) > (int64_t{1} << 53)
                                                     : a > (uint64_t{1} << 53)))
        not_modelled(op, "a 64-bit integer beyond 2^53 to float");
      x = is_signed(from) ? static_cast<double>(signed_value(a, type_bits(from)))
                          : static_cast<double>(a & mask(type_bits(from)));
  }
  if (!is_float(to)) return {float_to_integer(op, x, to)};
  if (to == Type::F32 || to == Type::F64) {
    // (.rni/.rzi/.rmi/.rpi: to an integral value in the float type; .rn/.rz/.rm/.rp: the rounding)
    const bool integral = op.has(Mod::rni) || op.has(Mod::rzi) || op.has(Mod::rmi) || op.has(Mod::rpi);
    double r = with_rounding(rounding_of(op), [&] {
      volatile double v = x;
      return integral ? std::nearbyint(v) : static_cast<double>(v);
    });
    if (to == Type::F64) return {bits_of(r)};
    float f = with_rounding(rounding_of(op), [&] {
      volatile double v = r;
      return static_cast<float>(v);
    });
    f = flush(f, ftz);
    if (op.has(Mod::sat)) f = saturate(f);
    return {bits_of(f)};
  }
  if (to == Type::F16 || to == Type::Bf16) {
    // (one rounding, f32's bits to 16: a wider source would round twice; the integral roundings,
    // .rna and .sat are other conversions than these)
    if (rounding_of(op) != FE_TONEAREST || op.has(Mod::rni) || op.has(Mod::rna) || op.has(Mod::sat))
      not_modelled(op, "a conversion to 16 bits other than .rn (with .relu)");
    if (from == Type::F64 || (!is_float(from) && std::abs(x) > 16777216.0))
      not_modelled(op, "a conversion to 16 bits from a value f32 does not hold exactly");
    const float f = static_cast<float>(x);  // (exact: checked above)
    const uint16_t bits = to == Type::F16 ? f32_to_f16(f) : f32_to_bf16(f);
    if (op.has(Mod::relu)) {  // (ISA "cvt": .relu clamps negative results to 0, a NaN to the canonical NaN)
      if (std::isnan(f)) return {0x7fff};
      if (bits & 0x8000) return {0};
    }
    return {bits};
  }
  if (to == Type::Tf32) {  // cvt.rna.tf32.f32: 10 mantissa bits, ties away from zero, in a .b32
    if (!op.has(Mod::rna)) not_modelled(op, "tf32 rounding other than .rna");
    uint32_t b = static_cast<uint32_t>(bits_of(static_cast<float>(x)));
    if ((b & 0x7f800000) != 0x7f800000) b = (b + 0x1000) & 0xffffe000;  // (+ half of the 13 dropped bits' unit)
    return {b};
  }
  not_modelled(op, "a conversion to this type");
}

}  // namespace

uint16_t f32_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t magnitude = x & 0x7fffffff;
  if (magnitude > 0x7f800000) return static_cast<uint16_t>(sign | 0x7e00);  // NaN (quiet)
  if (magnitude >= 0x477ff000) {  // rounds past 65504: infinity (65520 and up, ties to even)
    return static_cast<uint16_t>(sign | 0x7c00);
  }
  if (magnitude < 0x33000001) return static_cast<uint16_t>(sign);  // below half the least subnormal: zero
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  uint32_t mantissa = (magnitude & 0x7fffff) | 0x800000;
  // The result's ulp in the source's mantissa: 13 bits for normals, more for subnormals.
  const int drop = exponent < -14 ? 13 + (-14 - exponent) : 13;
  const uint32_t kept = mantissa >> drop, rest = mantissa & ((1u << drop) - 1), half = 1u << (drop - 1);
  uint32_t rounded = kept + (rest > half || (rest == half && (kept & 1)));
  // Normal: exponent bias 15 and the implicit bit; a carry into the next binade is the sum's.
  const uint32_t h = exponent < -14 ? rounded : (static_cast<uint32_t>(exponent + 15) << 10) + (rounded - 0x400);
  return static_cast<uint16_t>(sign | h);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) return std::copysign(std::ldexp(static_cast<float>(mantissa), -24), sign ? -1.0f : 1.0f);
  return std::bit_cast<float>(sign | (static_cast<uint32_t>(exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t f32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN stays NaN (quiet)
  const uint32_t rest = x & 0xffff, kept = x >> 16;
  return static_cast<uint16_t>(kept + (rest > 0x8000 || (rest == 0x8000 && (kept & 1))));
}

float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

namespace {

Computed exact_compute(const Opcode& op, std::span<const uint64_t> s) {
  switch (op.op) {
    case Op::Mov: return {s[0]};
    case Op::Selp: return {(s[2] & 1) ? s[0] : s[1]};
    case Op::Slct: {  // slct.dtype.{s32,f32} d, a, b, c: a where c >= 0, else b (ISA: "slct"; -0 is 0, a NaN c gives b)
      if (op.type(1) == Type::S32) return {signed_value(s[2], 32) >= 0 ? s[0] : s[1]};
      if (op.type(1) != Type::F32) not_modelled(op, "slct of this comparison type");
      return {flush(f32(s[2]), op.has(Mod::ftz)) >= 0.0f ? s[0] : s[1]};
    }
    case Op::Setp: return setp(op, s);
    case Op::Cvt: return convert(op, s);
    case Op::Shl:
    case Op::Shr: return {shift(op, s)};
    case Op::Bfe: return {bfe(op, s)};
    case Op::Shf: return {funnel_shift(op, s)};
    case Op::Bfi: return {bfi(op, s)};
    case Op::Prmt: return {prmt(op, s)};
    case Op::And:
    case Op::Or:
    case Op::Xor:
    case Op::Not:
    case Op::Cnot:
    case Op::Popc:
    case Op::Clz:
    case Op::Brev: return {logic(op, s)};
    case Op::Copysign: {  // copysign d, a, b: b's magnitude with a's sign
      if (op.type() != Type::F32) not_modelled(op, "copysign of this type");
      return {(s[1] & 0x7fffffff) | (s[0] & 0x80000000)};
    }
    case Op::Rcp:
    case Op::Sqrt:
    case Op::Rsqrt:
    case Op::Ex2:
    case Op::Lg2:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh: return {float_function(op, s)};
    case Op::Min:
    case Op::Max:
      if (is_float(op.type())) return {float_min_max(op, s)};
      return {integer_arith(op, s)};
    case Op::Abs:
    case Op::Neg:
      if (op.type() == Type::F32) {  // (the sign bit alone; .ftz flushes first)
        const uint64_t x = bits_of(flush(f32(s[0]), op.has(Mod::ftz)));
        return {op.op == Op::Abs ? x & 0x7fffffff : x ^ 0x80000000};
      }
      if (is_float(op.type())) return {float_sign(op, s[0])};
      return {integer_arith(op, s)};
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Mad:
    case Op::Fma:
    case Op::Div:
    case Op::Rem:
      if (is_float(op.type())) return {float_arith(op, s)};
      return {integer_arith(op, s)};
    default: not_modelled(op, "this instruction outside the executor");
  }
}

}  // namespace

Computed compute(const Opcode& op, std::span<const uint64_t> s, const Approximation& approximation) {
  Computed c = exact_compute(op, s);
  if (approximation.results == ApproxResults::WorstCase && is_approximate(op) && op.type() == Type::F32)
    c.value = bits_of(flush(f32(worst_case_result(op, s, static_cast<uint32_t>(c.value), approximation.seed)),
                            op.has(Mod::ftz)));
  return c;
}

}  // namespace bertc::ptx
