// A rendered kernel and everything a runtime needs to launch it without re-deriving anything:
// the source, the launch geometry, and per parameter the buffer (a value of the graph) it gets.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "codegen/host_emulation.h"
#include "codegen/library_gemm.h"
#include "ir/graph.h"

namespace bertc::codegen {

enum class ParamKind {
  Buffer,   // the buffer of `value`
  Table,    // a device array of pointers: the buffers of `table`, in order (multi-tensor kernels)
  Scratch,  // `scratch_bytes` of the kernel's own, zeroed once when the plan loads (family.h)
  Workspace,  // `scratch_bytes` the launch's library call (KernelSpec::library) writes and the kernel reads
  Integer,    // `integer`, passed by value (a dropout offset: layers differ by it, not by their source)
};

struct KernelParam {
  ParamKind kind = ParamKind::Buffer;
  std::string name;    // in the source
  std::string c_type;  // "const float*", "bx_f16*", "void* const*", "unsigned int*"
  ir::ValueId value = 0;
  std::vector<ir::ValueId> table;
  std::vector<bool> table_written;  // per table entry: the kernel writes that buffer
  size_t scratch_bytes = 0;
  bool written = false;
  int64_t integer = 0;  // Integer: the value (last: params are also made by aggregate initialization)
};

struct KernelSpec {
  std::string name;     // k_<hash of the source>: kernels with the same source share one
  ir::KernelFamily family = ir::KernelFamily::None;
  std::string label;    // where it comes from: the op's scope
  std::string strategy; // matrix kernels: simt, hmma884, hmma16816 or cublas (matrix_strategy.h); else empty
  size_t op_index = 0;  // the op of the graph it runs
  std::string source;   // the kernel function, named `name` (no #include)
  std::vector<KernelParam> params;
  Dim3 grid, block;
  bool cooperative = false;              // uses barriers or warp shuffles
  // Its blocks' work follows the data, beyond what its family's does (attention over rows of
  // several examples skips the tiles between them): a sample of its blocks does not count the whole.
  bool work_follows_data = false;
  // Blocks an SM should hold at once (the launch bounds' second number): ptxas keeps the kernel
  // within 65536 / (threads x this) registers.
  int min_blocks_per_sm = 1;
  std::vector<ir::ValueId> zero_before;  // buffers the launch expects zeroed (it accumulates into them)
  // A cuBLAS product the launch runs first (strategy "cublas"); `source` is then the epilogue kernel
  // reading its workspace, or empty when cuBLAS writes the result itself.
  std::optional<LibraryGemm> library;
  // Matrix products cuBLAS could run too (either way): their product_key, what --autotune times.
  std::string product;
};

// Where the memory plan (passes/memory_plan.h) puts a graph's per-step values: offsets in one
// arena. What a runtime needs of the plan, without the planner.
struct ArenaLayout {
  int64_t bytes = 0;
  size_t buffers = 0;               // the plan's buffers (each value sharing one with others in place)
  std::vector<int64_t> offset_of;   // per value; -1: not in the arena (sources, in-place next values, views of them)
};

// The kernels of one graph (a training step or the optimizer step), in launch order, and where
// the values they read and write live.
struct GraphKernels {
  std::vector<KernelSpec> kernels;
  ArenaLayout arena;
};

// A one-line description of a library product (what names a cuBLAS-only launch).
std::string library_text(const LibraryGemm& g);
// The translation unit NVRTC compiles for one kernel.
std::string device_source(const KernelSpec& kernel);
// One translation unit with all `kernels` (each distinct name once) and their host entries
// ("<name>__entry", unpacking void** arguments), for the host compiler; kernels without source
// (cuBLAS-only launches) are left out.
std::string host_source(const std::vector<const KernelSpec*>& kernels);

}  // namespace bertc::codegen
