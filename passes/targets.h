// The one table of GPU datasheet figures (../shared/FACTS.md) and the GPU arch an --arch names.
// The cost model, the roofline estimates and MFU read only this.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "support/options.h"

namespace bertc::passes {

// Cycles from an instruction's issue until a dependent one may issue, by kind, as microbenchmarks
// of the arch measured them (sources, and which figures are assumed, in targets.cpp): what the
// PTX emulator's timing model waits (ptx/timing.h), for a latency-aware projection.
struct CycleLatencies {
  int alu, special, shared, global, mma, barrier;
};

struct GpuSpec {
  std::string_view name;     // "p40"
  std::string_view title;    // "Tesla P40"
  int arch;                  // compute capability, 61
  int multiprocessors;
  double fp32_tflops;        // SIMT FP32
  double fp16_simt_tflops;   // FP16 arithmetic without tensor cores (1/64 of FP32 on the P40)
  double fp16_tensor_tflops; // dense tensor-core FP16 (0: none)
  double bf16_tensor_tflops; // dense tensor-core BF16 (0: none)
  double tf32_tensor_tflops; // dense tensor-core TF32 (0: none)
  double bandwidth_gbs;      // memory bandwidth, GB/s
  double memory_gb;
  double shared_kb_per_block;  // largest shared memory one block may use
  // What one multiprocessor holds at once (the CUDA programming guide's table of compute
  // capabilities): shared memory, warps and blocks; 64 K registers on every GPU here.
  double shared_kb_per_sm;
  int max_warps_per_sm, max_blocks_per_sm;
  // The boost clock the FP32 peak is at: the peak over 2 FLOPs an FMA, the FP32 lanes of a
  // multiprocessor (its arch's: 128 on sm_61, sm_86 and sm_90, 64 on sm_60, sm_70, sm_75 and sm_80)
  // and the multiprocessors.
  double clock_ghz() const;
  CycleLatencies latency;
};

std::span<const GpuSpec> gpu_specs();

// "sm_61", "sm_90", a name ("p40", "h200") or "none"/"cpu"; the first GPU of an arch represents
// it. nullopt for none; throws std::invalid_argument naming the choices for anything else.
std::optional<GpuSpec> find_gpu(std::string_view arch_or_name);
// The first GPU of compute capability `sm` (61, 90); nullopt when the table has none.
std::optional<GpuSpec> gpu_of_sm(int sm);

// What --arch names: auto (the GPU present, decided when options are resolved), none (no GPU: the
// host emulation renders sm_61's kernels), or a GPU of the table by arch ("sm_80") or name
// ("a100"). Parsed once; everything downstream asks sm() or gpu().
class Arch {
 public:
  Arch() = default;  // auto
  static Arch automatic() { return Arch(); }
  static Arch none() { return parse("none"); }
  static Arch of_sm(int sm);  // "sm_<sm>"; throws for an arch the table lacks
  // Throws std::invalid_argument naming the choices.
  static Arch parse(std::string_view text);

  bool is_auto() const { return text_ == "auto"; }
  const std::optional<GpuSpec>& gpu() const { return gpu_; }
  // The compute capability kernels are rendered for: the GPU's, 0 for none and auto (sm_61's
  // kernels, which the host emulation runs).
  int sm() const { return gpu_ ? gpu_->arch : 0; }
  const std::string& text() const { return text_; }  // as given: "auto", "none", "sm_80", "a100"
  // The same target: one GPU of the table, named by its name or its arch's ("p40", "sm_61"), or
  // the same non-GPU choice (auto, none).
  bool operator==(const Arch& other) const {
    return gpu_ && other.gpu_ ? gpu_->name == other.gpu_->name : !gpu_ && !other.gpu_ && text_ == other.text_;
  }

 private:
  std::string text_ = "auto";
  std::optional<GpuSpec> gpu_;
};

}  // namespace bertc::passes

template <>
struct bertc::support::OptionType<bertc::passes::Arch> {
  static constexpr ValueKind kind = ValueKind::String;
  static std::vector<std::string> choices() { return {}; }
  static OptionValue to_value(const passes::Arch& a) { return a.text(); }
  static std::optional<std::string> from_value(const OptionValue& v, passes::Arch& out);
};
