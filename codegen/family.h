// What the kernel families share: the op being rendered with its body (the fused region, or a
// one-op region around a plain op), its parameters, and the assembly of the kernel text.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/emitter.h"
#include "codegen/kernel.h"
#include "codegen/matrix_strategy.h"

namespace bertc::codegen {

struct KernelInput {
  const ir::Graph& graph;  // the graph the op belongs to
  size_t op_index;
  const ir::Op& op;
  const ir::Graph& body;   // what the kernel computes: inputs stand for op's operands, outputs its results
  RenderTarget target{};   // the GPU arch the matrix kernels' strategy follows
};

// Buffer parameters in0.. (operands, read) and out0.. (results, written), in order.
std::vector<KernelParam> buffer_params(const KernelInput& in);
std::vector<std::string> input_names(const KernelInput& in);
std::string output_name(size_t result);

// The kernel text: `BX_KERNEL void BX_NAME(<params>) {` + body + `}` (BX_NAME becomes the name).
std::string kernel_text(const std::vector<KernelParam>& params, const std::string& body);

// What render_graph does to each kernel once its text is made, for kernels rendered outside a
// graph (gradient_casts.h): its block size declared as launch bounds, its name the hash of its
// source (BX_NAME replaced).
void seal_kernel(KernelSpec& k);

// Stores value `v` of the body at `at` into output `k` (as the output's dtype).
void store_output(Emitter& e, size_t k, const Coords& at);

// Cross-block sums, deterministic: blocks store partial sums in slots of their own in a workspace
// (`workspace_param`, uninitialized, shared by the plan's launches), and the last block to finish
// adds them up in a fixed order. The Scratch parameter "scratch" holds `floats` zeroed floats
// (exact integer counts, which any order adds alike) and the counter after them; the last block
// (counted by `emit_last_block`) runs `finish`, which leaves the floats zeroed again, and zeroes
// the counter.
KernelParam scratch_param(size_t floats);
KernelParam workspace_param(const std::string& name, size_t bytes);
void emit_last_block(Emitter& e, size_t floats, const std::function<void()>& finish);

// Block size for a 1-D loop over `n` items, and a grid that covers them (grid-stride beyond).
int threads_for(long long n);
int blocks_for(long long n, int threads);

}  // namespace bertc::codegen
