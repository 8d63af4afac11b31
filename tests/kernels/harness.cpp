// Buffers in storage formats, poisoned outputs with canaries, the launch, the comparison.
#include "harness.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>

#include <fmt/format.h>

#include "codegen/render.h"
#include "ir/float16.h"

namespace bertc::testing {
namespace {

using codegen::KernelParam;
using codegen::KernelSpec;
using codegen::ParamKind;
using ir::HostTensor;

constexpr size_t kCanary = 64;            // bytes before and after every written buffer
constexpr unsigned char kCanaryByte = 0xa5;

// Bytes that end just before an inaccessible page: a kernel reading past a buffer (beyond its
// trailing canary and the alignment's slack, under 320 bytes) faults at once instead of reading
// a neighbour's bytes unseen, as compute-sanitizer's memcheck would refuse it on a GPU. The data
// after the leading canary is 256-byte aligned, as cuMemAlloc's is.
class GuardedBytes {
 public:
  GuardedBytes(size_t n, unsigned char fill) : size_(n) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    mapped_ = (n + 256 + page - 1) / page * page + page;
    void* base = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    base_ = static_cast<unsigned char*>(base);
    unsigned char* guard = base_ + mapped_ - page;
    if (::mprotect(guard, page, PROT_NONE) != 0) throw std::runtime_error("mprotect of a guard page failed");
    const auto end = reinterpret_cast<uintptr_t>(guard) - n;
    data_ = reinterpret_cast<unsigned char*>(((end + kCanary) & ~uintptr_t{255}) - kCanary);
    std::memset(data_, fill, n);
  }
  ~GuardedBytes() { ::munmap(base_, mapped_); }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;
  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }
  unsigned char operator[](size_t i) const { return data_[i]; }
  std::vector<unsigned char> copy() const { return {data_, data_ + size_}; }

 private:
  unsigned char* base_ = nullptr;
  unsigned char* data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;
};

// A buffer of one value in its storage format, between canaries, before a guard page.
struct Buffer {
  ir::TensorType type;
  GuardedBytes bytes;  // canary, data, canary
  unsigned char* data() { return bytes.data() + kCanary; }
  size_t size() const { return bytes.size() - 2 * kCanary; }

  explicit Buffer(const ir::TensorType& t) : type(t), bytes(2 * kCanary + static_cast<size_t>(t.bytes()), kCanaryByte) {}

  void fill(unsigned char byte) { std::memset(data(), byte, size()); }

  void write(const HostTensor<float>& v) {
    const int64_t n = type.numel();
    for (int64_t i = 0; i < n; ++i) {
      unsigned char* p = data() + i * ir::dtype_bytes(type.dtype);
      switch (type.dtype) {
        case ir::DType::F32: std::memcpy(p, &v.real[i], 4); break;
        case ir::DType::F16: { const uint16_t b = ir::f16_bits(v.real[i]); std::memcpy(p, &b, 2); break; }
        case ir::DType::BF16: { const uint16_t b = ir::bf16_bits(v.real[i]); std::memcpy(p, &b, 2); break; }
        case ir::DType::I32: { const int32_t x = static_cast<int32_t>(v.integer[i]); std::memcpy(p, &x, 4); break; }
        case ir::DType::I64: std::memcpy(p, &v.integer[i], 8); break;
        case ir::DType::U8: case ir::DType::Bool: *p = static_cast<unsigned char>(v.integer[i]); break;
        case ir::DType::F64: throw std::runtime_error("f64 buffer");
      }
    }
  }

  double element(int64_t i) const {
    const unsigned char* p = bytes.data() + kCanary + i * ir::dtype_bytes(type.dtype);
    switch (type.dtype) {
      case ir::DType::F32: { float f; std::memcpy(&f, p, 4); return f; }
      case ir::DType::F16: { uint16_t b; std::memcpy(&b, p, 2); return ir::from_f16_bits(b); }
      case ir::DType::BF16: { uint16_t b; std::memcpy(&b, p, 2); return ir::from_bf16_bits(b); }
      case ir::DType::I32: { int32_t x; std::memcpy(&x, p, 4); return x; }
      case ir::DType::I64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
      default: return *p;
    }
  }

  bool canaries_intact() const {
    for (size_t i = 0; i < kCanary; ++i)
      if (bytes[i] != kCanaryByte || bytes[bytes.size() - 1 - i] != kCanaryByte) return false;
    return true;
  }
};

double reference_element(const HostTensor<float>& t, int64_t i) {
  return t.is_real() ? t.real[static_cast<size_t>(i)] : static_cast<double>(t.integer[static_cast<size_t>(i)]);
}

// A matrix kernel sums in another order than the reference, so a product it rounds to 16 bits
// can land on the neighbouring 16-bit value; so can any kernel that rounds a value of its own to
// 16 bits (a sum over rows of f16 gradients, rounded to f16, or a recomputed f16 dropout
// gradient: float against the reference's double). What it computes from that (a cast to f32
// plus an accumulator, say) carries the 16-bit rounding: such results get the 16-bit tolerance.
ir::DType result_dtype(const KernelSpec& kernel, ir::DType dtype) {
  const bool rounds_to_16_bits =
      kernel.source.find("bx_round_f16(") != std::string::npos || kernel.source.find("bx_round_bf16(") != std::string::npos;
  if ((kernel.strategy.empty() && !rounds_to_16_bits) || dtype != ir::DType::F32) return dtype;
  ir::DType coarsest = dtype;
  for (const KernelParam& p : kernel.params)
    if (p.kind == ParamKind::Buffer && !p.written && p.c_type.find("bx_bf16") != std::string::npos) coarsest = ir::DType::BF16;
    else if (p.kind == ParamKind::Buffer && !p.written && p.c_type.find("bx_f16") != std::string::npos && coarsest == dtype)
      coarsest = ir::DType::F16;
  return coarsest;
}

}  // namespace

// f32: the kernels compute in float what the reference computes partly in double (row statistics,
// erf, exp): a few float roundings (6e-8 each) per op plus sums over up to a few hundred terms
// in another order give ~1e-6 of the row's scale; 1e-5 of the tensor's largest value and 1e-4
// relative leave room without hiding a wrong index (errors of order 1).
// f16 / bf16: the result is rounded to 11 / 8 significant bits; a float result that differs from
// the reference's by a few ulps of float can round to the neighbouring 16-bit value: one ulp,
// 2^-10 / 2^-7 relative; twice that is allowed.
// tf32 (a matrix kernel, or cuBLAS, multiplying f32 inputs rounded to TF32): each input is
// within 2^-11 of itself (10 kept mantissa bits, rounded to nearest), so a product is within
// 2^-10 and an output within 2^-10 sum |a_k b_k|; for these tests' inputs of order 1, whose sums
// cancel little, that sum stays under twice the result's largest value: 2e-3 of it (2^-9), and
// 2e-3 relative for the exp and division of attention's softmax on top.
Tolerance tf32_tolerance() { return {2e-3, 2e-3}; }

Tolerance tolerance_for(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::F16: return {2e-3, 2e-3};
    case ir::DType::BF16: return {1.6e-2, 1.6e-2};
    case ir::DType::F32: return {1e-5, 1e-4};
    default: return {0, 0};  // integers: exact
  }
}

KernelHarness::KernelHarness(const ir::Graph& graph, const std::filesystem::path& cache, codegen::RenderTarget target)
    : KernelHarness(graph, codegen::render_graph(graph, target), cache) {}

KernelHarness::KernelHarness(const ir::Graph& graph, codegen::GraphKernels kernels, const std::filesystem::path& cache)
    : graph_(graph), kernels_(std::move(kernels)) {
  std::vector<const KernelSpec*> all;
  for (const KernelSpec& k : kernels_.kernels) all.push_back(&k);
  library_ = std::make_unique<codegen::HostKernelLibrary>(
      codegen::compile_for_host(codegen::host_source(all), cache, emulator_.api()));
}

KernelHarness::KernelHarness(const ir::Graph& graph, codegen::GraphKernels kernels, Launcher launcher)
    : graph_(graph), kernels_(std::move(kernels)), launcher_(std::move(launcher)) {}

std::vector<KernelCheck> KernelHarness::check_all(ir::Environment<float> env, codegen::ThreadOrder order,
                                                  const std::function<bool(const KernelSpec&)>& only) {
  std::vector<HostTensor<float>> values;
  reference::Executor<float>(graph_).run(env, {}, &values);
  std::vector<KernelCheck> out;
  for (const KernelSpec& k : kernels_.kernels)
    if (!only || only(k)) out.push_back(check(k, values, order));
  return out;
}

KernelCheck KernelHarness::check(const KernelSpec& kernel, const std::vector<HostTensor<float>>& values,
                                 codegen::ThreadOrder order) {
  KernelCheck result{kernel.name, std::string(ir::enum_name(kernel.family)), kernel.label};
  auto fail = [&](std::string problem) {
    if (getenv("HARNESS_VERBOSE")) fprintf(stderr, "problem: %s\n", problem.c_str());
    if (result.ok) result.problem = std::move(problem);
    result.ok = false;
  };
  // One buffer per (param, table entry); written ones poisoned (or zeroed if the launch expects).
  struct Slot {
    ir::ValueId value;
    bool written;
    std::unique_ptr<Buffer> buffer;
    std::vector<unsigned char> before;  // inputs: their bytes, to check they are left alone
  };
  std::vector<Slot> slots;
  std::vector<LaunchMemory> memory;
  auto make = [&](ir::ValueId v, bool written) {
    auto b = std::make_unique<Buffer>(graph_.value(v).type);
    const bool zeroed = std::find(kernel.zero_before.begin(), kernel.zero_before.end(), v) != kernel.zero_before.end();
    memory.push_back({b->data(), b->size(), !written || zeroed});
    if (!written) b->write(values.at(v));
    else b->fill(zeroed ? 0x00 : 0xff);
    slots.push_back({v, written, std::move(b), {}});
    if (!written) slots.back().before = slots.back().buffer->bytes.copy();
    return slots.back().buffer->data();
  };
  std::vector<void*> args;
  std::vector<std::vector<void*>> tables;
  std::vector<std::vector<unsigned char>> scratch;
  std::vector<float> workspace;
  tables.reserve(kernel.params.size());
  scratch.reserve(kernel.params.size());
  for (const KernelParam& p : kernel.params) {
    switch (p.kind) {
      case ParamKind::Buffer: args.push_back(make(p.value, p.written)); break;
      case ParamKind::Table: {
        tables.emplace_back();
        for (size_t i = 0; i < p.table.size(); ++i) tables.back().push_back(make(p.table[i], p.table_written[i]));
        args.push_back(tables.back().data());
        memory.push_back({tables.back().data(), tables.back().size() * sizeof(void*), true});
        break;
      }
      case ParamKind::Scratch:
        scratch.emplace_back(p.scratch_bytes, 0);
        args.push_back(scratch.back().data());
        memory.push_back({scratch.back().data(), scratch.back().size(), true});
        break;
      case ParamKind::Workspace:
        workspace.assign(p.scratch_bytes / 4, std::nanf(""));
        args.push_back(workspace.data());
        memory.push_back({workspace.data(), workspace.size() * sizeof(float), false});
        break;
      case ParamKind::Integer: args.push_back(reinterpret_cast<void*>(static_cast<intptr_t>(p.integer))); break;
    }
  }
  if (kernel.library) {  // cuBLAS's part, as library_product_args() would have it run
    const codegen::LibraryGemm& g = *kernel.library;
    auto slot = [&](ir::ValueId v, bool written) -> Buffer& {
      for (Slot& s : slots)
        if (s.value == v && s.written == written) return *s.buffer;
      throw std::runtime_error("the library product's operand or result is not a parameter of its launch");
    };
    if (g.to_workspace && workspace.size() != static_cast<size_t>(g.batch * g.m * g.n)) {
      fail("the workspace does not hold the product");
    } else {
      codegen::run_library_product_on_host(codegen::library_product_args(g), slot(g.b, false).data(), slot(g.a, false).data(),
                                  g.to_workspace ? static_cast<void*>(workspace.data()) : slot(g.c, true).data());
    }
  }
  try {
    if (!kernel.source.empty() && launcher_) launcher_(kernel, args, memory, order);
    else if (!kernel.source.empty())
      emulator_.launch(kernel.name, library_->entry(kernel.name), args.data(),
                       {kernel.grid, kernel.block, kernel.cooperative, order});
  } catch (const std::exception& e) {
    fail(e.what());
    return result;
  }
  for (const auto& s : scratch)
    if (std::any_of(s.begin(), s.end(), [](unsigned char c) { return c != 0; })) fail("scratch memory not left zeroed");
  for (Slot& s : slots) {
    const std::string name = fmt::format("%{}", graph_.value(s.value).name.empty() ? std::to_string(s.value)
                                                                                 : graph_.value(s.value).name);
    if (!s.written) {
      if (s.buffer->bytes.copy() != s.before) fail(name + ": an input buffer was modified");
      continue;
    }
    if (!s.buffer->canaries_intact()) fail(name + ": written outside its buffer");
    const HostTensor<float>& want = values.at(s.value);
    const bool tf32 = kernel.strategy == codegen::strategy_name(codegen::MatrixStrategy::Tf32) ||
                      (kernel.library && kernel.library->tf32);
    const Tolerance tol = tf32 && s.buffer->type.dtype == ir::DType::F32 ? tf32_tolerance()
                                                                         : tolerance_for(result_dtype(kernel, s.buffer->type.dtype));
    double largest = 0;
    for (int64_t i = 0; i < s.buffer->type.numel(); ++i) largest = std::max(largest, std::abs(reference_element(want, i)));
    // A result that is zero everywhere in exact arithmetic (softmax's gradient over one key) comes
    // out of a kernel as rounding noise of its inputs' scale; test inputs are of order 1, so the
    // tolerance takes 1 as the scale then.
    if (largest == 0 && ir::is_float(s.buffer->type.dtype)) largest = 1;
    for (int64_t i = 0; i < s.buffer->type.numel(); ++i) {
      const double w = reference_element(want, i), g = s.buffer->element(i);
      const double allowed = tol.abs_of_max * largest + tol.rel * std::abs(w);
      if (std::isnan(w) && std::isnan(g)) continue;
      const double err = std::abs(g - w);
      if (!(err <= allowed)) {  // also catches NaN (the poison of an unwritten element)
        fail(fmt::format("{}[{}] = {} where the reference has {} (allowed difference {:.3g})", name, i, g, w, allowed));
        result.worst = std::max(result.worst, std::isnan(err) ? INFINITY : (allowed > 0 ? err / allowed : INFINITY));
        break;
      }
      if (allowed > 0) result.worst = std::max(result.worst, err / allowed);
    }
  }
  return result;
}

}  // namespace bertc::testing
